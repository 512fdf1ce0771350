package datasets

import (
	"context"
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

// Change is one schema change of a dataset.
type Change struct {
	Op      string         // add_column, rename_column, drop_column, alter_column
	Column  string         // the existing column (rename, drop, alter)
	Define  *ingest.Column // the new column (add)
	NewName string         // rename
	// Alter applies alter_column's settings to a copy of the column.
	Alter func(c *ingest.Column)
	// References is the other side of add_relationship (and optionally drop_relationship).
	References *Reference
	// Measure is add_measure's definition (drop_measure: its name).
	Measure *ingest.Measure
}

// Reference is a column of another dataset that a relationship points at.
type Reference struct {
	DatasetID string
	Column    string // "" in drop_relationship: any
}

// ChangeError is a change that cannot apply to this schema (an unknown column, a taken
// name, a type the old one has no cast to): the request is wrong, whatever the rows hold.
type ChangeError struct {
	Index   int
	Field   string // below changes[Index]
	Code    string
	Message string
}

func (e *ChangeError) Error() string {
	return fmt.Sprintf("changes[%d].%s: %s", e.Index, e.Field, e.Message)
}

// Violation is a change that existing rows break.
type Violation struct {
	Change     int              `json:"change"`
	Op         string           `json:"op"`
	Column     string           `json:"column"`
	Constraint string           `json:"constraint"` // type, required, unique, enum, format, pattern, minimum, maximum, min_length, max_length
	Message    string           `json:"message"`
	RowCount   int64            `json:"row_count"`
	Rows       []ViolatingValue `json:"rows"`
}

// ViolatingValue is one offending row: its key and the value.
type ViolatingValue struct {
	ID    json.RawMessage `json:"id"`
	Value any             `json:"value"`
}

// Violations is the error of a change set that existing rows break.
type Violations []Violation

func (v Violations) Error() string {
	return fmt.Sprintf("%d schema changes are violated by existing rows", len(v))
}

// maxReported bounds the offending rows reported per change.
const maxReported = 10

// step is one ALTER TABLE statement, with the condition that finds the rows it would fail on.
type step struct {
	sql        string
	offending  string // WHERE condition; "" when the statement cannot fail on rows
	constraint string
	message    string
}

// Alter applies changes to the dataset's table in tx, in order, and returns the new columns.
// Every change is checked against the rows before it runs: the rows that would break it are
// counted and the first ones reported, and the whole set fails with Violations (the caller
// rolls back). A change that is wrong whatever the rows hold fails with *ChangeError.
// check validates each column a change adds or alters, before anything runs for it.
func Alter(ctx context.Context, tx *sqlx.Tx, d *store.Dataset, cols []ingest.Column, changes []Change, check func(i int, c ingest.Column) error) ([]ingest.Column, error) {
	a := &alterer{tx: tx, table: Table(d.TableSchema, d.ID), id: d.ID, key: KeyOf(cols), d: d}
	if err := a.prepare(ctx, d); err != nil {
		return nil, err
	}
	cs := &columnSet{cols: slices.Clone(cols)}
	for i, ch := range changes {
		steps, err := a.steps(ctx, cs, i, ch, check)
		if err != nil {
			return nil, err
		}
		for _, s := range steps {
			if err := a.run(ctx, i, ch, s); err == errStop {
				return nil, a.violations
			} else if err != nil {
				var ce *ChangeError
				if errors.As(err, &ce) {
					ce.Index = i
				}
				return nil, err
			}
		}
	}
	if len(a.violations) > 0 {
		return nil, a.violations
	}
	return cs.cols, nil
}

// prepare drops the search index, which is built on the columns' current types (the analysis
// that follows the change builds the next one), and makes the castability check the steps use.
func (a *alterer) prepare(ctx context.Context, d *store.Dataset) error {
	var search []string
	if err := a.tx.SelectContext(ctx, &search, `SELECT indexname FROM pg_indexes WHERE schemaname = $1 AND tablename = $2 AND indexname LIKE $3`,
		d.TableSchema, d.ID, strings.ReplaceAll(d.ID, "_", `\_`)+`\_search\_%`); err != nil {
		return err
	}
	for _, ix := range search {
		// IF EXISTS: the search indexer may have dropped it since (DROP INDEX CONCURRENTLY of
		// an index it replaces); without it that race was a 500 (seen under load after a crash).
		if _, err := a.tx.ExecContext(ctx, `DROP INDEX IF EXISTS `+Table(d.TableSchema, ix)); err != nil {
			return err
		}
	}
	_, err := a.tx.ExecContext(ctx, `CREATE OR REPLACE FUNCTION pg_temp.dp_castable(v text, t text) RETURNS boolean LANGUAGE plpgsql AS $$
		BEGIN EXECUTE format('SELECT %L::%s', v, t); RETURN true; EXCEPTION WHEN others THEN RETURN false; END $$`)
	return err
}

// columnSet is the columns as the changes so far leave them.
type columnSet struct{ cols []ingest.Column }

// find is the index of the column name, or change i's not_found error.
func (cs *columnSet) find(i int, name string) (int, error) {
	j := slices.IndexFunc(cs.cols, func(c ingest.Column) bool { return c.Name == name })
	if j < 0 {
		return -1, &ChangeError{i, "column", "not_found", "the dataset has no column " + name}
	}
	return j, nil
}

// taken is change i's duplicate error on field when a column is already called name.
func (cs *columnSet) taken(i int, field, name string) error {
	if slices.ContainsFunc(cs.cols, func(c ingest.Column) bool { return c.Name == name }) {
		return &ChangeError{i, field, "duplicate", "the dataset already has a column " + name}
	}
	return nil
}

// steps checks change i against the columns, applies it to them and says what it takes: the
// ALTER TABLE steps (a relationship's columns follow a rename or a drop at once).
func (a *alterer) steps(ctx context.Context, cs *columnSet, i int, ch Change, check func(i int, c ingest.Column) error) ([]step, error) {
	switch ch.Op {
	case "add_column":
		return a.addColumn(cs, i, ch, check)
	case "rename_column":
		return a.renameColumn(ctx, cs, i, ch)
	case "drop_column":
		j, err := cs.find(i, ch.Column)
		if err != nil {
			return nil, err
		}
		if ch.Column == a.key {
			return nil, &ChangeError{i, "column", "primary_key", ch.Column + " keys the records and cannot be dropped; make another column the key first (set_primary_key)"}
		}
		if ms := cs.measuresOf(ch.Column); len(ms) > 0 {
			return nil, &ChangeError{i, "column", "measure", "the measures " + strings.Join(ms, ", ") + " are built on " + ch.Column + "; drop them first (drop_measure)"}
		}
		if _, err := a.tx.ExecContext(ctx, `DELETE FROM platform.dataset_relationships WHERE (from_dataset = $1 AND from_column = $2)
			OR (to_dataset = $1 AND to_column = $2)`, a.id, ch.Column); err != nil {
			return nil, err
		}
		cs.cols = slices.Delete(cs.cols, j, j+1)
		return []step{{sql: `DROP COLUMN ` + pq.QuoteIdentifier(ch.Column)}}, nil
	case "alter_column":
		return a.changeColumn(cs, i, ch, check)
	case "set_primary_key":
		return a.setKey(ctx, cs, i, ch)
	case "add_relationship":
		return a.addRelationship(ctx, cs, i, ch)
	case "drop_relationship":
		if _, err := cs.find(i, ch.Column); err != nil {
			return nil, err
		}
		return nil, a.dropRelationship(ctx, i, ch)
	case "add_measure":
		return nil, cs.addMeasure(i, *ch.Measure)
	case "drop_measure":
		return nil, cs.dropMeasure(i, ch.Measure.Name)
	}
	return nil, nil
}

// addMeasure keeps a named measure with the column it is built on.
func (cs *columnSet) addMeasure(i int, m ingest.Measure) error {
	if err := ingest.CheckMeasure(m, cs.cols); err != nil {
		var me *ingest.MeasureError
		if errors.As(err, &me) {
			return &ChangeError{i, "measure." + me.Field, "invalid", me.Message}
		}
		return err
	}
	j := slices.IndexFunc(cs.cols, func(c ingest.Column) bool { return c.Name == m.Column })
	sem := ingest.Semantics{}
	if cs.cols[j].Semantics != nil {
		sem = *cs.cols[j].Semantics
	}
	sem.Measures = append(slices.Clone(sem.Measures), m)
	cs.cols[j].Semantics = &sem
	return nil
}

// dropMeasure removes the named measure.
func (cs *columnSet) dropMeasure(i int, name string) error {
	for j, c := range cs.cols {
		if c.Semantics == nil {
			continue
		}
		if k := slices.IndexFunc(c.Semantics.Measures, func(m ingest.Measure) bool { return m.Name == name }); k >= 0 {
			sem := *c.Semantics
			sem.Measures = slices.Delete(slices.Clone(sem.Measures), k, k+1)
			cs.cols[j].Semantics = &sem
			if sem.Empty() {
				cs.cols[j].Semantics = nil
			}
			return nil
		}
	}
	return &ChangeError{i, "measure.name", "not_found", "the dataset has no measure " + name}
}

// measuresOf are the names of the measures built on column name (its own, or as minus).
func (cs *columnSet) measuresOf(name string) []string {
	var out []string
	for _, m := range ingest.Measures(cs.cols) {
		if m.Column == name || m.Minus == name {
			out = append(out, m.Name)
		}
	}
	return out
}

// renameInMeasures points the measures built on column from at its new name.
func (cs *columnSet) renameInMeasures(from, to string) {
	for j, c := range cs.cols {
		if c.Semantics == nil || len(c.Semantics.Measures) == 0 {
			continue
		}
		sem := *c.Semantics
		sem.Measures = slices.Clone(sem.Measures)
		for k := range sem.Measures {
			if sem.Measures[k].Column == from {
				sem.Measures[k].Column = to
			}
			if sem.Measures[k].Minus == from {
				sem.Measures[k].Minus = to
			}
		}
		cs.cols[j].Semantics = &sem
	}
}

// addColumn is the step of adding ch's column, and its constraints.
func (a *alterer) addColumn(cs *columnSet, i int, ch Change, check func(i int, c ingest.Column) error) ([]step, error) {
	n := *ch.Define
	if err := cs.taken(i, "column.name", n.Name); err != nil {
		return nil, err
	}
	if err := check(i, n); err != nil {
		return nil, err
	}
	if len(cs.cols) >= ingest.MaxColumns {
		return nil, &ChangeError{i, "column", "too_many_columns", fmt.Sprintf("a dataset has at most %d columns", ingest.MaxColumns)}
	}
	def, err := ColumnDDL(n)
	if err != nil {
		return nil, &ChangeError{i, "column.default", "type", err.Error()}
	}
	s := step{sql: `ADD COLUMN ` + def}
	if !n.Nullable && n.DefaultValue() == nil {
		s.offending, s.constraint, s.message = "true", "required", "a required column without a default has no value in the existing rows"
	}
	cs.cols = append(cs.cols, n)
	return append([]step{s}, a.addConstraints(n, nil)...), nil
}

// renameColumn is the steps of renaming a column and its constraints; the key's trigger and
// the relationships naming the column follow it.
func (a *alterer) renameColumn(ctx context.Context, cs *columnSet, i int, ch Change) ([]step, error) {
	j, err := cs.find(i, ch.Column)
	if err != nil {
		return nil, err
	}
	if err := cs.taken(i, "new_name", ch.NewName); err != nil {
		return nil, err
	}
	o := cs.cols[j]
	n := o
	n.Name, n.Original = ch.NewName, ch.NewName
	steps := []step{{sql: `RENAME COLUMN ` + pq.QuoteIdentifier(o.Name) + ` TO ` + pq.QuoteIdentifier(n.Name)}}
	if o.Name == a.key {
		if err := a.keyTrigger(ctx, n.Name); err != nil {
			return nil, err
		}
	}
	oc, nc := Constraints(a.id, o), Constraints(a.id, n)
	for k := range oc {
		steps = append(steps, step{sql: `RENAME CONSTRAINT ` + pq.QuoteIdentifier(oc[k].Name) + ` TO ` + pq.QuoteIdentifier(nc[k].Name)})
	}
	if _, err := a.tx.ExecContext(ctx, `UPDATE platform.dataset_relationships SET from_column = $3 WHERE from_dataset = $1 AND from_column = $2`, a.id, o.Name, n.Name); err != nil {
		return nil, err
	}
	if _, err := a.tx.ExecContext(ctx, `UPDATE platform.dataset_relationships SET to_column = $3 WHERE to_dataset = $1 AND to_column = $2`, a.id, o.Name, n.Name); err != nil {
		return nil, err
	}
	cs.cols[j] = n
	cs.renameInMeasures(o.Name, n.Name)
	return steps, nil
}

// changeColumn is the steps of altering a column's type, default, nullability or constraints.
func (a *alterer) changeColumn(cs *columnSet, i int, ch Change, check func(i int, c ingest.Column) error) ([]step, error) {
	j, err := cs.find(i, ch.Column)
	if err != nil {
		return nil, err
	}
	o := cs.cols[j]
	n := o
	if o.Constraints != nil {
		k := *o.Constraints
		n.Constraints = &k
	} else {
		n.Constraints = &ingest.Constraints{}
	}
	ch.Alter(&n)
	if n.Constraints.Empty() {
		n.Constraints = nil
	}
	if o.Key && (n.Nullable || !keyType(n.Type)) {
		return nil, &ChangeError{i, "column", "primary_key", o.Name + " keys the records: it stays required and of an integer, text or uuid type"}
	}
	if err := check(i, n); err != nil {
		return nil, err
	}
	steps, err := a.alterColumn(o, n)
	if err != nil {
		return nil, &ChangeError{i, "default", "type", err.Error()}
	}
	cs.cols[j] = n
	for _, m := range ingest.Measures(cs.cols) {
		if err := ingest.CheckMeasureColumns(m, cs.cols); err != nil && (m.Column == n.Name || m.Minus == n.Name) {
			return nil, &ChangeError{i, "type", "measure", "the measure " + m.Name + " is built on " + n.Name + ": " + err.Error()}
		}
	}
	return steps, nil
}

type alterer struct {
	tx         *sqlx.Tx
	table, id  string
	key        string // the column keying the records as the changes so far leave it
	d          *store.Dataset
	violations Violations
}

// alterColumn is the steps from column o to n: drop the constraints that go or change, the
// type (and the default around it, which may not cast), nullability, the default, then add
// the constraints that are new or changed.
func (a *alterer) alterColumn(o, n ingest.Column) ([]step, error) {
	q := pq.QuoteIdentifier(n.Name)
	alter := `ALTER COLUMN ` + q + ` `
	var steps []step
	oc := Constraints(a.id, o)
	for _, c := range oc {
		if !slices.Contains(Constraints(a.id, n), c) {
			steps = append(steps, step{sql: `DROP CONSTRAINT ` + pq.QuoteIdentifier(c.Name)})
		}
	}
	oldDefault, err := defaultSQL(o)
	if err != nil {
		return nil, err
	}
	newDefault, err := defaultSQL(n)
	if err != nil {
		return nil, err
	}
	if ot, nt := SQLType(o), SQLType(n); ot != nt {
		if oldDefault != "" {
			steps = append(steps, step{sql: alter + `DROP DEFAULT`})
			oldDefault = ""
		}
		s := step{sql: alter + `TYPE ` + nt + ` USING ` + q + `::text::` + nt, constraint: "type",
			offending: q + ` IS NOT NULL AND NOT pg_temp.dp_castable(` + q + `::text, ` + pq.QuoteLiteral(nt) + `)`,
			message:   "values cannot be converted to " + nt}
		if n.Type == ingest.Text && n.Constraints != nil && n.Constraints.MaxLength != nil {
			s.offending, s.constraint = fmt.Sprintf(`char_length(%s::text) > %d`, q, *n.Constraints.MaxLength), "max_length"
			s.message = fmt.Sprintf("values are longer than %d characters", *n.Constraints.MaxLength)
		}
		steps = append(steps, s)
	}
	switch {
	case o.Nullable && !n.Nullable:
		steps = append(steps, step{sql: alter + `SET NOT NULL`, offending: q + ` IS NULL`, constraint: "required", message: "rows have no value"})
	case !o.Nullable && n.Nullable:
		steps = append(steps, step{sql: alter + `DROP NOT NULL`})
	}
	if newDefault != oldDefault {
		if newDefault == "" {
			steps = append(steps, step{sql: alter + `DROP DEFAULT`})
		} else {
			steps = append(steps, step{sql: alter + `SET DEFAULT ` + newDefault})
		}
	}
	return append(steps, a.addConstraints(n, oc)...), nil
}

func defaultSQL(c ingest.Column) (string, error) {
	if v := c.DefaultValue(); v != nil {
		return Literal(c, v)
	}
	return "", nil
}

// addConstraints is the steps that add n's constraints missing from had, each checked
// against the rows first.
func (a *alterer) addConstraints(n ingest.Column, had []Constraint) []step {
	q := pq.QuoteIdentifier(n.Name)
	var steps []step
	for _, c := range Constraints(a.id, n) {
		if slices.Contains(had, c) {
			continue
		}
		s := step{sql: `ADD CONSTRAINT ` + pq.QuoteIdentifier(c.Name) + ` ` + c.SQL, constraint: c.Kind}
		if c.Kind == "unique" {
			s.offending = q + ` IN (SELECT ` + q + ` FROM ` + a.table + ` GROUP BY 1 HAVING count(*) > 1)`
			s.message = "values occur more than once"
		} else {
			s.offending = `NOT ` + strings.TrimPrefix(c.SQL, "CHECK ")
			s.message = "values break the " + c.Kind + " constraint"
		}
		steps = append(steps, s)
	}
	return steps
}

// run checks s against the rows, then runs it in a savepoint: a violation is recorded and
// the work goes on, so that one answer reports every offending change.
func (a *alterer) run(ctx context.Context, i int, ch Change, s step) error {
	column := ch.Column
	if ch.Define != nil {
		column = ch.Define.Name
	}
	if s.offending != "" {
		// After a violation the statements that failed were skipped, so a later check can
		// refer to what does not exist (a column never added): it runs in a savepoint and
		// is dropped when it fails.
		guarded := len(a.violations) > 0
		if guarded {
			if _, err := a.tx.ExecContext(ctx, `SAVEPOINT dp_check`); err != nil {
				return err
			}
		}
		var n int64
		if err := a.tx.GetContext(ctx, &n, `SELECT count(*) FROM `+a.table+` WHERE `+s.offending); err != nil {
			if guarded {
				_, rerr := a.tx.ExecContext(ctx, `ROLLBACK TO SAVEPOINT dp_check`)
				return rerr
			}
			return err
		}
		if n > 0 {
			v := Violation{Change: i, Op: ch.Op, Column: column, Constraint: s.constraint, Message: s.message, RowCount: n, Rows: []ViolatingValue{}}
			value := "NULL::json"
			if s.offending != "true" {
				value = `to_json(` + pq.QuoteIdentifier(column) + `)`
			}
			k := pq.QuoteIdentifier(a.key)
			rows, err := a.tx.QueryxContext(ctx, `SELECT to_json(`+k+`), `+value+` FROM `+a.table+` WHERE `+s.offending+` ORDER BY `+k+` LIMIT $1`, maxReported)
			if err != nil {
				return err
			}
			defer rows.Close()
			for rows.Next() {
				var r ViolatingValue
				var id, raw []byte
				if err := rows.Scan(&id, &raw); err != nil {
					return err
				}
				r.ID = json.RawMessage(id)
				if raw != nil {
					r.Value = json.RawMessage(raw)
				}
				v.Rows = append(v.Rows, r)
			}
			a.violations = append(a.violations, v)
			return rows.Err()
		}
	}
	if len(a.violations) > 0 || s.sql == "" {
		return nil // the set fails anyway (later steps may build on the failed one), or a check only
	}
	if _, err := a.tx.ExecContext(ctx, `ALTER TABLE `+a.table+` `+s.sql); err != nil {
		var pe *pq.Error
		if errors.As(err, &pe) {
			switch {
			case pe.Code == "42846" || pe.Code == "42804" || pe.Code == "42883":
				return &ChangeError{i, "type", "incompatible_type", pe.Message}
			case pe.Code == "54011": // columns dropped before still count towards PostgreSQL's 1,600
				return &ChangeError{i, "column", "too_many_columns", pe.Message + " (dropped columns count until the table is rewritten)"}
			case strings.HasPrefix(string(pe.Code), "22") || strings.HasPrefix(string(pe.Code), "23"):
				a.violations = append(a.violations, Violation{Change: i, Op: ch.Op, Column: column, Constraint: s.constraint,
					Message: pe.Message, Rows: []ViolatingValue{}})
				return errStop
			}
		}
		return err
	}
	return nil
}

// errStop ends the changes after a statement failed: the transaction is aborted.
var errStop = errors.New("stop")
