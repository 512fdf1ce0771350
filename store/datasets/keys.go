package datasets

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"dataplatform/store"
	"dataplatform/store/ingest"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
)

// keyCandidate is a column that may key a dataset's records, and why.
type keyCandidate struct {
	index  int
	reason string
}

// keyable reports whether a column's type can key records: integers, text and uuids.
func keyType(t ingest.Type) bool {
	return t == ingest.Integer || t == ingest.BigInt || t == ingest.Text || t == ingest.UUID
}

// keyCandidates are the file's columns that may key its records, judged on the file alone
// (what else the project holds never changes a file's key), in the order they are tried:
//
//  1. the file's id column;
//  2. an identifier named after the dataset (patients: patient_id, patientid, patient_no;
//     stations: station_code), exactly before by one of its words (allergy_types:
//     allergy_id) before by an abbreviation (students: stu_id), then a short name of its
//     first letters run together with id, no or number (aircraft: aid; flights: flno);
//  3. the file's first column when it is shaped as an identifier (member_no, emp_ref);
//  4. a column that identifies by itself (sku, isbn, code, ref, number, key, uuid, serial, ssn);
//  5. a column named as the dataset is (allergy in allergy_types).
//
// Only columns of a key type (integer, text, uuid) without empty values in what inference
// read qualify; uniqueness is the database's to check (chooseKey), and the first unique one
// wins; the candidates after it that are unique get a UNIQUE constraint. Other columns
// become unique when a relationship is found to point at them (promote).
func keyCandidates(datasetName string, cols []ingest.Column) []keyCandidate {
	var out []keyCandidate
	add := func(i int, reason string) {
		for _, k := range out {
			if k.index == i {
				return
			}
		}
		if c := cols[i]; keyType(c.Type) && c.NullCount == 0 {
			out = append(out, keyCandidate{i, reason})
		}
	}
	for i, c := range cols {
		if strings.EqualFold(c.Original, "id") || c.Name == "id" {
			add(i, "the file's id column")
		}
	}
	for _, strength := range []int{namesExact, namesWord, namesAbbrev} {
		for i, c := range cols {
			if stem, ok := idStem(c.Name); ok && stem != "" && names(datasetName, stem) == strength {
				add(i, "the identifier named after the dataset")
			}
		}
	}
	for i, c := range cols {
		if initialed(datasetName, c.Name) {
			add(i, "the identifier named by the dataset's initials")
		}
	}
	if len(cols) > 0 {
		if _, ok := idStem(cols[0].Name); ok {
			add(0, "the file's first column, shaped as an identifier")
		}
	}
	for i, c := range cols {
		if stem, ok := idStem(c.Name); ok && stem == "" {
			add(i, "the column that identifies by its name")
		}
	}
	for i, c := range cols {
		if names(datasetName, c.Name) == namesExact || names(datasetName, c.Name) == namesWord {
			add(i, "the column named as the dataset")
		}
	}
	return out
}

// KeyError is a declared primary_key the file's values cannot be.
type KeyError struct{ Column, Reason string }

func (e *KeyError) Error() string { return "primary_key " + e.Column + ": " + e.Reason }

// pkName is the name of a dataset table's primary key constraint.
func pkName(datasetID string) string { return constraintName(datasetID + "_pkey") }

// chooseKey makes the first candidate whose values are unique and present in every row the
// table's PRIMARY KEY, on a table loaded with a provisional generated id (which is dropped
// once a key is found, or becomes the primary key when none is). Candidates after the chosen
// one that are unique as well get a UNIQUE constraint, so that relationships may point at
// them. declared is true when the one candidate was named by the caller: its failure fails
// the load. It returns the columns with the key marked.
func chooseKey(ctx context.Context, tx *sqlx.Tx, schema, id string, cols []ingest.Column, cands []keyCandidate, declared bool) ([]ingest.Column, error) {
	table := Table(schema, id)
	chosen := -1
	var also []string
	for _, k := range cands {
		c := cols[k.index]
		if _, err := tx.ExecContext(ctx, `SAVEPOINT key_try`); err != nil {
			return nil, err
		}
		var stmt string
		if chosen < 0 {
			stmt = `ALTER TABLE ` + table + ` ADD CONSTRAINT ` + pq.QuoteIdentifier(pkName(id)) + ` PRIMARY KEY (` + pq.QuoteIdentifier(c.Name) + `)`
		} else {
			u := c
			u.Constraints = &ingest.Constraints{Unique: true}
			uk := Constraints(id, u)[0]
			stmt = `ALTER TABLE ` + table + ` ADD CONSTRAINT ` + pq.QuoteIdentifier(uk.Name) + ` ` + uk.SQL
		}
		_, err := tx.ExecContext(ctx, stmt)
		var pe *pq.Error
		if errors.As(err, &pe) && (pe.Code == "23505" || pe.Code == "23502") {
			if _, err := tx.ExecContext(ctx, `ROLLBACK TO SAVEPOINT key_try`); err != nil {
				return nil, err
			}
			if declared {
				reason := "some records have no value"
				if pe.Code == "23505" {
					reason = "its values are not unique"
					if pe.Detail != "" {
						reason += " (" + strings.TrimSuffix(pe.Detail, ".") + ")"
					}
				}
				return nil, &KeyError{c.Original, reason}
			}
			if cols[k.index].Description == "" && chosen < 0 {
				cols[k.index].Description = "Not the records' key (" + k.reason + "): its values repeat or are missing in the file."
			}
			continue
		} else if err != nil {
			return nil, err
		}
		if chosen < 0 {
			chosen = k.index
			continue
		}
		cols[k.index].Constraints = mergeUnique(cols[k.index].Constraints)
		also = append(also, c.Name)
	}
	if chosen < 0 {
		_, err := tx.ExecContext(ctx, `ALTER TABLE `+table+` ADD CONSTRAINT `+pq.QuoteIdentifier(pkName(id))+` PRIMARY KEY (id)`)
		return cols, err
	}
	k := &cols[chosen]
	k.Key, k.Nullable = true, false
	qs := []string{`ALTER TABLE ` + table + ` DROP COLUMN id`}
	if k.Name == "src_id" && strings.EqualFold(k.Original, "id") && !declared { // the file's id column keeps its name once the generated id is gone
		qs = append(qs, `ALTER TABLE `+table+` RENAME COLUMN src_id TO id`)
		k.Name = "id"
	}
	if k.Type == ingest.Integer || k.Type == ingest.BigInt {
		// Records created without a key get the next one after the file's largest.
		q := pq.QuoteIdentifier(k.Name)
		qs = append(qs, `ALTER TABLE `+table+` ALTER COLUMN `+q+` ADD GENERATED BY DEFAULT AS IDENTITY`,
			`SELECT setval(pg_get_serial_sequence('`+strings.ReplaceAll(table, "'", "''")+`', '`+k.Name+`'), greatest(max(`+q+`), 1)) FROM `+table)
	}
	for _, q := range qs {
		if _, err := tx.ExecContext(ctx, q); err != nil {
			return nil, err
		}
	}
	if k.Description == "" {
		reason := cands[0].reason
		for _, c := range cands {
			if c.index == chosen {
				reason = c.reason
			}
		}
		if declared {
			reason = "named at creation"
		}
		k.Description = "The records' key (" + reason + ")."
		if len(also) > 0 {
			k.Description += fmt.Sprintf(" Also unique: %s.", strings.Join(also, ", "))
		}
	}
	return cols, nil
}

func mergeUnique(k *ingest.Constraints) *ingest.Constraints {
	if k == nil {
		return &ingest.Constraints{Unique: true}
	}
	c := *k
	c.Unique = true
	return &c
}

// keyTrigger points the table's change trigger at its key column key.
func (a *alterer) keyTrigger(ctx context.Context, key string) error {
	for _, q := range []string{`DROP TRIGGER IF EXISTS dp_changes ON ` + a.table, ChangeTrigger(a.table, key)} {
		if _, err := a.tx.ExecContext(ctx, q); err != nil {
			return err
		}
	}
	return nil
}

// setKey makes column ch.Column the records' key: its values are checked (unique, present),
// the primary key moves to it, the generated id of data that had no key goes, an integer key
// is generated for records created without one, and relationships to the old key go.
func (a *alterer) setKey(ctx context.Context, cs *columnSet, i int, ch Change) ([]step, error) {
	j, err := cs.find(i, ch.Column)
	if err != nil {
		return nil, err
	}
	c := cs.cols[j]
	if c.Name == a.key {
		return nil, &ChangeError{i, "column", "primary_key", c.Name + " already keys the records"}
	}
	if !keyType(c.Type) {
		return nil, &ChangeError{i, "column", "type", "a key is an integer, text or uuid column; " + c.Name + " is " + string(c.Type)}
	}
	var pk string
	if err := a.tx.GetContext(ctx, &pk, `SELECT conname FROM pg_constraint WHERE conrelid = $1::regclass AND contype = 'p'`, a.table); err != nil {
		return nil, err
	}
	q := pq.QuoteIdentifier(c.Name)
	steps := []step{{sql: `DROP CONSTRAINT ` + pq.QuoteIdentifier(pk) + `, ADD CONSTRAINT ` + pq.QuoteIdentifier(pkName(a.id)) + ` PRIMARY KEY (` + q + `)`,
		offending:  q + ` IS NULL OR ` + q + ` IN (SELECT ` + q + ` FROM ` + a.table + ` GROUP BY 1 HAVING count(*) > 1)`,
		constraint: "primary_key", message: "values repeat or are missing: a key names one record"}}
	old := slices.IndexFunc(cs.cols, func(x ingest.Column) bool { return x.Name == a.key })
	if old < 0 { // the generated id
		steps = append(steps, step{sql: `DROP COLUMN id`})
	} else {
		cs.cols[old].Key = false
	}
	if (c.Type == ingest.Integer || c.Type == ingest.BigInt) && c.DefaultValue() == nil {
		var next int64
		if err := a.tx.GetContext(ctx, &next, `SELECT coalesce(max(`+q+`), 0) + 1 FROM `+a.table); err != nil {
			return nil, err
		}
		steps = append(steps, step{sql: fmt.Sprintf(`ALTER COLUMN %s ADD GENERATED BY DEFAULT AS IDENTITY (START WITH %d)`, q, max(next, 1))})
	}
	if _, err := a.tx.ExecContext(ctx, `DELETE FROM platform.dataset_relationships WHERE to_dataset = $1 AND to_column = $2`, a.id, a.key); err != nil {
		return nil, err
	}
	if err := a.keyTrigger(ctx, c.Name); err != nil {
		return nil, err
	}
	c.Key, c.Nullable = true, false
	cs.cols[j] = c
	a.key = c.Name
	return steps, nil
}

// addRelationship declares a relationship from column ch.Column to a key or unique column of
// a dataset of the project, checked against the rows: every value must be present there.
func (a *alterer) addRelationship(ctx context.Context, cs *columnSet, i int, ch Change) ([]step, error) {
	j, err := cs.find(i, ch.Column)
	if err != nil {
		return nil, err
	}
	c := cs.cols[j]
	ref := ch.References
	if ref == nil {
		return nil, &ChangeError{i, "references", "required", "add_relationship takes references (dataset_id, column)"}
	}
	to := store.Dataset{ID: a.id, TableSchema: a.d.TableSchema}
	tcols := slices.Clone(cs.cols)
	if ref.DatasetID != a.id {
		tcols = nil
		var o store.Dataset
		err := a.tx.GetContext(ctx, &o, `SELECT id, table_schema, columns FROM platform.datasets WHERE id = $1 AND project_id = $2 AND status = 'active' AND type = 'file'`,
			ref.DatasetID, a.d.ProjectID)
		if errors.Is(err, sql.ErrNoRows) {
			return nil, &ChangeError{i, "references.dataset_id", "not_found", "no active uploaded dataset " + ref.DatasetID + " in this project"}
		} else if err != nil {
			return nil, err
		}
		to = o
		if err := json.Unmarshal([]byte(o.Columns), &tcols); err != nil {
			return nil, err
		}
	}
	name := ref.Column
	if name == "" {
		name = KeyOf(tcols)
	}
	k := slices.IndexFunc(targets(tcols), func(x ingest.Column) bool { return x.Name == name })
	if k < 0 {
		return nil, &ChangeError{i, "references.column", "not_a_key", "a relationship points at the other dataset's key or a unique column of its own values (" +
			name + " is neither; the generated id never is)"}
	}
	target := targets(tcols)[k]
	if !comparable(c.Type, target.Type) {
		return nil, &ChangeError{i, "references.column", "type", fmt.Sprintf("%s is %s and %s is %s: their values cannot match", c.Name, c.Type, target.Name, target.Type)}
	}
	if _, err := a.tx.ExecContext(ctx, `DELETE FROM platform.dataset_relationships WHERE from_dataset = $1 AND from_column = $2`, a.id, c.Name); err != nil {
		return nil, err
	}
	if _, err := a.tx.ExecContext(ctx, `INSERT INTO platform.dataset_relationships (from_dataset, from_table, from_column, to_dataset, to_table,
		to_column, origin, created_at) VALUES ($1, $1, $2, $3, $3, $4, 'declared', now())`, a.id, c.Name, to.ID, target.Name); err != nil {
		return nil, err
	}
	q := pq.QuoteIdentifier(c.Name)
	return []step{{offending: q + ` IS NOT NULL AND deleted_at IS NULL AND NOT EXISTS (SELECT 1 FROM ` + Table(to.TableSchema, to.ID) + ` b WHERE b.` +
		pq.QuoteIdentifier(target.Name) + ` = ` + a.table + `.` + q + ` AND b.deleted_at IS NULL)`,
		constraint: "relationship", message: "values are not present in " + to.ID + "." + target.Name}}, nil
}

// dropRelationship removes the relationships from column ch.Column (to ch.References'
// dataset only, when given); inference does not bring them back.
func (a *alterer) dropRelationship(ctx context.Context, i int, ch Change) error {
	to := ""
	if ch.References != nil {
		to = ch.References.DatasetID
	}
	res, err := a.tx.ExecContext(ctx, `UPDATE platform.dataset_relationships SET origin = 'removed'
		WHERE from_dataset = $1 AND from_column = $2 AND ($3 = '' OR to_dataset = $3) AND origin IN ('declared', 'inferred')`, a.id, ch.Column, to)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return &ChangeError{i, "column", "not_found", "no relationship from " + ch.Column}
	}
	return nil
}
