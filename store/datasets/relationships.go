package datasets

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"dataplatform/store"
	"dataplatform/store/ingest"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
)

// Relationship inference. Whenever a dataset arrives, is re-imported or changes schema, the
// links of its columns, and of every column of the project it may be what they refer to, are
// found again against all the active uploaded datasets of the project, so that the outcome
// never depends on the order the files came in. A column refers to a column of another
// dataset when
//
//   - the names make it plausible: the column is named after the dataset (customer_id →
//     customers; start_station, end_station → stations; stu_id → students), or it has the
//     other column's name (bike_serial → bikes.bike_serial), or ends with it
//     (home_station_code → stations.station_code);
//   - the other column identifies its records: the key, a unique column, or an identifier-
//     shaped column whose values turn out unique and present (it is then promoted: made the
//     key of a dataset that had only the generated id, or given a UNIQUE constraint);
//   - every non-empty value of the column is among the other column's values, and the types
//     agree.
//
// Names alone never link a column of numbers that is not shaped as an identifier (a count
// of stations fits a key of 1…N by chance), and values alone never link anything. When the
// best-named candidates of a column are several and the values fit more than one, none is
// guessed. Declared relationships, and relationships a person dropped, are kept as they are.

// Link strengths, from the names: the best that the values confirm wins.
const (
	linkNone = iota
	linkAbbrev
	linkSuffix
	linkSameName
	linkNamed
)

// member is a dataset of the project as inference sees it.
type member struct {
	d    *store.Dataset
	cols []ingest.Column
}

// linkCandidate is a column that may refer to a column of another dataset.
type linkCandidate struct {
	to       int // index in the members
	target   ingest.Column
	strength int
}

func inferRelationships(ctx context.Context, tx *sqlx.Tx, d *store.Dataset, cols []ingest.Column, now time.Time) error {
	ms, err := members(ctx, tx, d, cols)
	if err != nil {
		return err
	}
	// The columns whose reference is found again: every column of d, each column of the
	// others that d's columns may be what it refers to (d's arrival may add a reading of it,
	// or change one), and each that pointed at d. A column d offers nothing is resolved as
	// before: the datasets it may refer to are the same, so the outcome does not depend on
	// the order the files came in, and an arrival costs a pass over the project's columns,
	// not over every pair of them.
	redo := map[[2]string]bool{}
	for _, c := range cols {
		redo[[2]string{d.ID, c.Name}] = true
	}
	var pointing []string
	if err := tx.SelectContext(ctx, &pointing, `SELECT from_dataset || '.' || from_column FROM platform.dataset_relationships
		WHERE to_dataset = $1 AND origin = 'inferred'`, d.ID); err != nil {
		return err
	}
	for _, k := range pointing {
		ds, col, _ := strings.Cut(k, ".")
		redo[[2]string{ds, col}] = true
	}
	offered(ms, 0, redo)
	return relinkAndPromote(ctx, tx, ms, redo, true, now)
}

// members are d (with cols) and the other active uploaded datasets of its project.
func members(ctx context.Context, tx *sqlx.Tx, d *store.Dataset, cols []ingest.Column) ([]member, error) {
	var others []store.Dataset
	if err := tx.SelectContext(ctx, &others, `SELECT `+datasetColumns+` FROM platform.datasets
		WHERE project_id = $1 AND id <> $2 AND status = 'active' AND type = 'file' ORDER BY id`, d.ProjectID, d.ID); err != nil {
		return nil, err
	}
	ms := []member{{d, cols}}
	for i := range others {
		var oc []ingest.Column
		if err := json.Unmarshal([]byte(others[i].Columns), &oc); err != nil {
			return nil, err
		}
		ms = append(ms, member{&others[i], oc})
	}
	return ms, nil
}

// Unlink is inference's part of a dataset leaving its project: its relationships go, and the
// columns of the others it may have been what they referred to are resolved again without it
// (one that was ambiguous because of it may now be found).
func Unlink(ctx context.Context, tx *sqlx.Tx, d *store.Dataset, now time.Time) error {
	if d.Type != "file" {
		return nil
	}
	var cols []ingest.Column
	if err := json.Unmarshal([]byte(d.Columns), &cols); err != nil || len(cols) == 0 {
		return nil // never loaded
	}
	ms, err := members(ctx, tx, d, cols)
	if err != nil {
		return err
	}
	redo := map[[2]string]bool{}
	offered(ms, 0, redo)
	if _, err := tx.ExecContext(ctx, `DELETE FROM platform.dataset_relationships WHERE from_dataset = $1 OR to_dataset = $1`, d.ID); err != nil {
		return err
	}
	return relinkAndPromote(ctx, tx, ms[1:], redo, false, now)
}

// relinkAndPromote finds again the references of the columns in redo among ms and promotes
// what they point at; self: ms[0] is the dataset being analysed (its caller saves it).
func relinkAndPromote(ctx context.Context, tx *sqlx.Tx, ms []member, redo map[[2]string]bool, self bool, now time.Time) error {
	promote, err := relink(ctx, tx, ms, redo, now)
	if err != nil {
		return err
	}
	// A promoted column is a key or unique now: columns it may be what they refer to are
	// found again, once (a promotion this finds waits for the next arrival).
	again := map[[2]string]bool{}
	for _, k := range promote {
		i := slices.IndexFunc(ms, func(m member) bool { return m.d.ID == k[0] })
		cols, err := promoteSafely(ctx, tx, ms[i], k[1], self && i == 0, now)
		if err != nil {
			return err
		}
		if cols != nil {
			ms[i].cols = cols
			offered(ms, i, again)
		}
	}
	if len(again) > 0 {
		_, err = relink(ctx, tx, ms, again, now)
	}
	return err
}

// promoteSafely promotes a column (promoteColumn) inside a savepoint: when the rows no longer
// allow it (a write since its values were read made them repeat), the relationships found to
// it go instead of failing the analysis, and the columns are nil.
func promoteSafely(ctx context.Context, tx *sqlx.Tx, m member, column string, self bool, now time.Time) ([]ingest.Column, error) {
	if _, err := tx.ExecContext(ctx, `SAVEPOINT promote`); err != nil {
		return nil, err
	}
	cols, err := promoteColumn(ctx, tx, m, column, self, now)
	var vs Violations
	var ce *ChangeError
	if errors.As(err, &vs) || errors.As(err, &ce) {
		if _, err := tx.ExecContext(ctx, `ROLLBACK TO SAVEPOINT promote`); err != nil {
			return nil, err
		}
		_, err := tx.ExecContext(ctx, `DELETE FROM platform.dataset_relationships WHERE to_dataset = $1 AND to_column = $2 AND origin = 'inferred'`, m.d.ID, column)
		return nil, err
	}
	return cols, err
}

// offered adds to redo the columns of the other members that member t's columns may be what
// they refer to.
func offered(ms []member, t int, redo map[[2]string]bool) {
	for f, m := range ms {
		if f == t {
			continue
		}
		for _, c := range m.cols {
			if !redo[[2]string{m.d.ID, c.Name}] && len(linkCandidates(m, c, t, ms[t])) > 0 {
				redo[[2]string{m.d.ID, c.Name}] = true
			}
		}
	}
}

// relink finds again the references of the columns in redo (a person's declared or dropped
// relationship stays as it is) and answers the targets to promote (not yet a key or unique).
func relink(ctx context.Context, tx *sqlx.Tx, ms []member, redo map[[2]string]bool, now time.Time) ([][2]string, error) {
	var from, col []string
	for k := range redo {
		from, col = append(from, k[0]), append(col, k[1])
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM platform.dataset_relationships r USING unnest($1::text[], $2::text[]) AS x(ds, col)
		WHERE r.origin = 'inferred' AND r.from_dataset = x.ds AND r.from_column = x.col`, pq.Array(from), pq.Array(col)); err != nil {
		return nil, err
	}
	var held []string
	if err := tx.SelectContext(ctx, &held, `SELECT r.from_dataset || '.' || r.from_column FROM platform.dataset_relationships r
		JOIN unnest($1::text[], $2::text[]) AS x(ds, col) ON r.from_dataset = x.ds AND r.from_column = x.col`, pq.Array(from), pq.Array(col)); err != nil {
		return nil, err
	}
	var promote [][2]string
	for f, m := range ms {
		for _, c := range m.cols {
			if !redo[[2]string{m.d.ID, c.Name}] || slices.Contains(held, m.d.ID+"."+c.Name) {
				continue
			}
			to, target, err := resolve(ctx, tx, ms, f, c)
			if err != nil {
				return nil, err
			}
			if to < 0 {
				continue
			}
			if k := [2]string{ms[to].d.ID, target.Name}; !isTarget(target) && !slices.Contains(promote, k) {
				promote = append(promote, k)
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO platform.dataset_relationships (from_dataset, from_table, from_column, to_dataset, to_table,
				to_column, origin, created_at) VALUES ($1, $1, $2, $3, $3, $4, 'inferred', $5) ON CONFLICT DO NOTHING`,
				m.d.ID, c.Name, ms[to].d.ID, target.Name, now); err != nil {
				return nil, err
			}
		}
	}
	return promote, nil
}

// datasetColumns are the dataset fields inference reads and promotion writes.
const datasetColumns = `id, organization_id, project_id, name, type, status, table_schema, columns, schema_version, analyzed_at, created_at, updated_at`

// isTarget reports whether a column already identifies its dataset's records.
func isTarget(c ingest.Column) bool { return c.Key || (c.Constraints != nil && c.Constraints.Unique) }

// resolve is the column of another member that column c of member f refers to, or -1: the
// candidates of the best naming strength whose values confirm them, when exactly one does.
func resolve(ctx context.Context, tx *sqlx.Tx, ms []member, f int, c ingest.Column) (int, ingest.Column, error) {
	var cands []linkCandidate
	for t := range ms {
		if t != f {
			cands = append(cands, linkCandidates(ms[f], c, t, ms[t])...)
		}
	}
	slices.SortStableFunc(cands, func(a, b linkCandidate) int { return b.strength - a.strength })
	for len(cands) > 0 {
		s := cands[0].strength
		var ok []linkCandidate
		for len(cands) > 0 && cands[0].strength == s {
			fits, err := valuesFit(ctx, tx, ms[f].d, c, ms[cands[0].to].d, cands[0].target)
			if err != nil {
				return -1, ingest.Column{}, err
			}
			if fits {
				ok = append(ok, cands[0])
			}
			cands = cands[1:]
		}
		switch len(ok) {
		case 0:
			continue
		case 1:
			return ok[0].to, ok[0].target, nil
		default:
			return -1, ingest.Column{}, nil // several readings: none is guessed
		}
	}
	return -1, ingest.Column{}, nil
}

// linkCandidates are the columns of member to that column c of member from may refer to,
// by their names, with how strongly the names say so.
func linkCandidates(from member, c ingest.Column, t int, to member) []linkCandidate {
	if !keyType(c.Type) || c.Name == "src_id" {
		return nil
	}
	_, idLike := idStem(c.Name)
	named := referredName(to.d.Name, c.Name)
	// A dataset's own key points nowhere unless named after the other dataset more surely
	// than after its own: invoices.order_id → orders (one invoice per order), but
	// customers.customer_id is no reference to customer_orders, and copies of one file keyed
	// alike point at none of each other.
	if c.Key && (named == namesNot || referredName(from.d.Name, c.Name) >= named) {
		return nil
	}
	_, toKeyed := UserKey(to.cols)
	var out []linkCandidate
	for _, tc := range to.cols {
		if !comparable(c.Type, tc.Type) || !keyType(tc.Type) {
			continue
		}
		_, tIDLike := idStem(tc.Name)
		fileID := isTarget(tc) && strings.EqualFold(tc.Original, "id") // the file's id column, kept unique beside a generated id
		tNamed := names(to.d.Name, tc.Name) >= namesWord
		if !isTarget(tc) && !tIDLike && !tNamed {
			continue // the other column does not identify anything
		}
		// Columns identifying their own datasets alike (copies of a file, one period and
		// the next) are not each other's references.
		if c.Name == tc.Name && isTarget(c) && named == namesNot {
			continue
		}
		s := linkNone
		switch {
		case c.Name == tc.Name && (idLike || tc.Key || tNamed):
			s = linkSameName
			if named >= namesWord {
				s = linkNamed
			}
		case named >= namesWord && (tc.Key || (!toKeyed && (fileID || tIDLike && referredName(to.d.Name, tc.Name) >= namesWord))):
			s = linkNamed
		case tc.Key && strings.HasSuffix(c.Name, "_"+tc.Name) && names(to.d.Name, strings.TrimSuffix(c.Name, "_"+tc.Name)) >= namesWord:
			s = linkNamed // squad_label → squads.label
		case named == namesAbbrev && tc.Key:
			s = linkAbbrev
		case tIDLike && strings.HasSuffix(c.Name, "_"+tc.Name):
			s = linkSuffix
		}
		if s == linkNone {
			continue
		}
		// A number that is not shaped as an identifier (a count, an amount) is only ever
		// the same column by name, or named as the dataset is.
		if !idLike && c.Type != ingest.Text && c.Type != ingest.UUID && c.Name != tc.Name && names(to.d.Name, c.Name) < namesWord {
			continue // campus → campuses is a reference; station_count → stations is not
		}
		// Within a kind, a dataset the name names more surely, then its key, comes first:
		// customer_id means customers.customer_id before customer_orders.customer_id.
		s = s*10 + named*2
		if tc.Key {
			s++
		}
		out = append(out, linkCandidate{t, tc, s})
	}
	return out
}

// valuesFit reports whether every value of from's column c is among the values of to's
// column target (and there is at least one), and whether target, when not yet a key or
// unique, is unique and present in every row.
func valuesFit(ctx context.Context, tx *sqlx.Tx, from *store.Dataset, c ingest.Column, to *store.Dataset, target ingest.Column) (bool, error) {
	ft, tt := Table(from.TableSchema, from.ID), Table(to.TableSchema, to.ID)
	q, k := pq.QuoteIdentifier(c.Name), pq.QuoteIdentifier(target.Name)
	var used, orphan bool
	err := tx.QueryRowxContext(ctx, fmt.Sprintf(`SELECT EXISTS (SELECT 1 FROM %[1]s WHERE %[2]s IS NOT NULL AND deleted_at IS NULL),
		EXISTS (SELECT 1 FROM %[1]s a WHERE a.%[2]s IS NOT NULL AND a.deleted_at IS NULL
			AND NOT EXISTS (SELECT 1 FROM %[3]s b WHERE b.%[4]s = a.%[2]s AND b.deleted_at IS NULL))`, ft, q, tt, k)).Scan(&used, &orphan)
	if err != nil || !used || orphan {
		return false, err
	}
	if isTarget(target) {
		return true, nil
	}
	var unique bool
	err = tx.GetContext(ctx, &unique, fmt.Sprintf(`SELECT count(%[1]s) = count(*) AND count(DISTINCT %[1]s) = count(*) FROM %[2]s`, k, tt))
	return unique, err
}

// promoteColumn makes a column that a relationship points at identify its dataset's records:
// the key of a dataset that had only the generated id, a UNIQUE column otherwise. It is a
// schema change of that dataset with its own version, except for a dataset being loaded for
// the first time (self), whose first version already has it.
func promoteColumn(ctx context.Context, tx *sqlx.Tx, m member, column string, self bool, now time.Time) ([]ingest.Column, error) {
	d := m.d
	if !self {
		var err error
		if d, err = store.DatasetByID(ctx, tx, d.ID, true); err != nil {
			return nil, err
		}
	}
	var before []ingest.Column
	if err := json.Unmarshal([]byte(d.Columns), &before); err != nil {
		return nil, err
	}
	ch := Change{Op: "set_primary_key", Column: column}
	reason := "other datasets refer to its values"
	if _, keyed := UserKey(before); keyed {
		ch = Change{Op: "alter_column", Column: column, Alter: func(c *ingest.Column) { c.Constraints.Unique = true }}
	}
	after, err := Alter(ctx, tx, d, before, []Change{ch}, func(int, ingest.Column) error { return nil })
	if err != nil {
		return nil, err
	}
	for i := range after {
		if after[i].Name == column && after[i].Key {
			after[i].Description = "The records' key (" + reason + ")."
		}
	}
	b, _ := json.Marshal(after)
	d.Columns = string(b)
	if self && d.AnalyzedAt == nil { // its first load: the first version has it
		return after, nil
	}
	changes, _ := json.Marshal([]map[string]any{{"op": ch.Op, "column": column, "reason": reason}})
	if err := record(ctx, tx, d, before, after, string(changes), now); err != nil {
		return nil, err
	}
	if self {
		return after, nil
	}
	return after, EnqueueSearchIndex(ctx, tx, d)
}
