package datasets

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"dataplatform/store"
	"dataplatform/store/ingest"
	"dataplatform/store/jobs"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
)

// RebuildRows: an upsert or replace of at least this many rows, and of at least a tenth of the
// dataset's rows, builds the dataset's table anew from the old one and the file and swaps it
// in, instead of changing rows in place (which maintains every index row by row, and leaves
// a dead row version per changed row).
const RebuildRows = 10_000

// merge moves the staged rows into the dataset's table.
type merge struct {
	tx      *sqlx.Tx
	d       *store.Dataset
	table   string
	staging string // the staging table (stagingName)
	plan    *importPlan
	cols    []ingest.Column // the dataset's columns (added ones included)
	seq     string          // the key's identity sequence, "" when the key is not generated (or there is none)
	rows    int64           // staged rows
	mark    func(phase string)
}

func (m *merge) q(c ingest.Column) string { return pq.QuoteIdentifier(c.Name) }

// keyed reports whether rows are matched by the user key (upsert, and replace of a keyed
// dataset whose file has the key).
func (m *merge) keyed() bool { return m.plan.key != nil && m.plan.keyIn }

// rowOf is the data row (1-based, the COPY line) of the staged row at ctid: the staging
// table is filled by one COPY, in file order.
func (m *merge) rowOf(ctx context.Context, ctid string) (int64, error) {
	var n int64
	err := m.tx.GetContext(ctx, &n, `SELECT count(*) FROM `+m.staging+` WHERE ctid <= $1::tid`, ctid)
	return n, err
}

// check fails the import, before any row moves, with the first data row the merge would
// fail on: a key (or unique value) the file has twice (dups; a rebuild finds them building
// its constraints), one a record already has (append), a new record without a required
// column the file lacks (upsert).
func (m *merge) check(ctx context.Context, mode string, dups bool) error {
	for _, c := range m.plan.into {
		if !c.Key && (c.Constraints == nil || !c.Constraints.Unique) {
			continue
		}
		if dups {
			if err := m.duplicate(ctx, c); err != nil {
				return err
			}
		}
		if mode != ModeAppend {
			continue // upsert and replace match existing keys; a unique value another record has fails the merge
		}
		q := m.q(c)
		var taken struct {
			Ctid    string `db:"c"`
			Value   string `db:"v"`
			Deleted bool   `db:"deleted"`
		}
		err := m.tx.GetContext(ctx, &taken, `SELECT s.ctid::text AS c, s.`+q+`::text AS v, t.deleted_at IS NOT NULL AS deleted
			FROM `+m.staging+` s JOIN `+m.table+` t ON t.`+q+` = s.`+q+` ORDER BY s.ctid LIMIT 1`)
		if errors.Is(err, sql.ErrNoRows) {
			continue
		} else if err != nil {
			return err
		}
		r, err := m.rowOf(ctx, taken.Ctid)
		if err != nil {
			return err
		}
		rec, hint := "a record", ""
		if taken.Deleted {
			rec = "a deleted record"
		}
		if c.Key {
			hint = " (append adds records; upsert updates the ones the file has)"
		}
		return jobs.Permanent(fmt.Errorf("data row %d, column %s: %s already has %s %s%s", r, c.Name, rec, c.Name, strconv.Quote(taken.Value), hint))
	}
	if mode != ModeUpsert {
		return nil
	}
	var required []string
	for _, c := range m.plan.missing {
		if !c.Key && !c.Nullable && c.DefaultValue() == nil {
			required = append(required, c.Name)
		}
	}
	if len(required) == 0 {
		return nil
	}
	var ctid string
	err := m.tx.GetContext(ctx, &ctid, `SELECT s.ctid::text FROM `+m.staging+` s WHERE `+m.newRows("s")+` ORDER BY s.ctid LIMIT 1`)
	if errors.Is(err, sql.ErrNoRows) {
		return nil
	} else if err != nil {
		return err
	}
	r, err := m.rowOf(ctx, ctid)
	if err != nil {
		return err
	}
	return jobs.Permanent(fmt.Errorf("data row %d: its key is not a record's, so upsert creates the record, and the file lacks the required column %s",
		r, strings.Join(required, ", ")))
}

// duplicate fails with the first data row whose value of column c (the key, or a unique
// column) an earlier row of the file has.
func (m *merge) duplicate(ctx context.Context, c ingest.Column) error {
	q := m.q(c)
	var dup struct {
		Ctid  string `db:"c"`
		Value string `db:"v"`
		First string `db:"first"`
	}
	err := m.tx.GetContext(ctx, &dup, `SELECT c::text AS c, v, first::text AS first FROM (SELECT ctid AS c, `+q+`::text AS v, min(ctid) OVER (PARTITION BY `+q+`) AS first
		FROM `+m.staging+` WHERE `+q+` IN (SELECT `+q+` FROM `+m.staging+` WHERE `+q+` IS NOT NULL GROUP BY 1 HAVING count(*) > 1)) x
		WHERE c > first ORDER BY c LIMIT 1`)
	if errors.Is(err, sql.ErrNoRows) {
		return nil
	} else if err != nil {
		return err
	}
	r, err := m.rowOf(ctx, dup.Ctid)
	if err != nil {
		return err
	}
	first, err := m.rowOf(ctx, dup.First)
	if err != nil {
		return err
	}
	what := "the column's values are unique"
	if c.Key {
		what = "the records' key is unique"
	}
	return jobs.Permanent(fmt.Errorf("data row %d, column %s: %s occurs again (first at data row %d): %s", r, c.Name, strconv.Quote(dup.Value), first, what))
}

// newRows is the condition on staged row s that it makes a new record (keyed merges).
func (m *merge) newRows(s string) string {
	k := m.q(*m.plan.key)
	cond := `NOT EXISTS (SELECT 1 FROM ` + m.table + ` t WHERE t.` + k + ` = ` + s + `.` + k + `)`
	if m.seq != "" {
		cond = s + `.` + k + ` IS NULL OR ` + cond
	}
	return cond
}

// keyExpr is the key of staged row s, generated when it has none.
func (m *merge) keyExpr(c ingest.Column, s, seq string) string {
	if c.Key && m.seq != "" {
		return `coalesce(` + s + `.` + m.q(c) + `, nextval(` + pq.QuoteLiteral(seq) + `))`
	}
	return s + `.` + m.q(c)
}

// insert inserts the staged rows (onlyNew: those whose key no record has), in file order,
// and answers how many.
func (m *merge) insert(ctx context.Context, onlyNew bool) (int64, error) {
	names, exprs := make([]string, len(m.plan.into)), make([]string, len(m.plan.into))
	for i, c := range m.plan.into {
		names[i], exprs[i] = m.q(c), m.keyExpr(c, "s", m.seq)
	}
	q := `INSERT INTO ` + m.table + ` (` + strings.Join(names, ", ") + `) SELECT ` + strings.Join(exprs, ", ") + ` FROM ` + m.staging + ` s`
	if onlyNew {
		q += ` WHERE ` + m.newRows("s")
	}
	return m.exec(ctx, q+` ORDER BY s.ctid`)
}

// defaults are the missing columns' values in a new record: their defaults, or NULL.
func (m *merge) defaults() ([]string, error) {
	out := make([]string, len(m.plan.missing))
	for i, c := range m.plan.missing {
		out[i] = "NULL"
		if v := c.DefaultValue(); v != nil {
			lit, err := Literal(c, v)
			if err != nil {
				return nil, err
			}
			out[i] = lit
		}
	}
	return out, nil
}

// compared are the columns that tell whether a matched record changes, as the record has them
// (t) and as the import would make them: the file's values, and for replace the defaults of
// the columns the file lacks (upsert keeps those).
func (m *merge) compared(replace bool) (before, after []string, err error) {
	for _, c := range m.plan.into {
		if !c.Key {
			before, after = append(before, `t.`+m.q(c)), append(after, `s.`+m.q(c))
		}
	}
	if replace {
		defs, err := m.defaults()
		if err != nil {
			return nil, nil, err
		}
		for i, c := range m.plan.missing {
			if !c.Key {
				before, after = append(before, `t.`+m.q(c)), append(after, defs[i])
			}
		}
	}
	return before, after, nil
}

// same is the condition that matched record t keeps its values.
func same(before, after []string) string {
	if len(before) == 0 {
		return "true"
	}
	return `(` + strings.Join(before, ", ") + `) IS NOT DISTINCT FROM (` + strings.Join(after, ", ") + `)`
}

// upsert changes the table in place: the records whose key the file has are updated (one
// whose values are the file's is left alone) and the other rows inserted. A soft-deleted
// record whose key the file has comes back as a new record (inserted: the columns the file
// lacks take their defaults, created_at is now; its version still goes up, so that nothing
// from before its deletion matches it). replace first deletes the records the file does not
// have, soft-deleted ones too, and sets the columns the file lacks to their defaults; a
// dataset whose rows the file cannot match (the generated id) has all its rows replaced.
func (m *merge) upsert(ctx context.Context, replace bool, res *ImportResult) error {
	var err error
	if !m.keyed() {
		if err := m.tx.GetContext(ctx, &res.Deleted, `WITH d AS (DELETE FROM `+m.table+` RETURNING deleted_at) SELECT count(*) FILTER (WHERE deleted_at IS NULL) FROM d`); err != nil {
			return mergeError(err)
		}
		res.Inserted, err = m.insert(ctx, false)
		return err
	}
	k := m.q(*m.plan.key)
	if replace {
		if err := m.tx.GetContext(ctx, &res.Deleted, `WITH d AS (DELETE FROM `+m.table+` t WHERE NOT EXISTS (SELECT 1 FROM `+m.staging+` s WHERE s.`+k+` = t.`+k+`)
			RETURNING deleted_at) SELECT count(*) FILTER (WHERE deleted_at IS NULL) FROM d`); err != nil {
			return mergeError(err)
		}
	}
	before, after, err := m.compared(replace)
	if err != nil {
		return jobs.Permanent(err)
	}
	set := []string{`updated_at = now()`, `version = t.version + 1`}
	for i, b := range before {
		set = append(set, strings.TrimPrefix(b, "t.")+` = `+after[i])
	}
	from := ` FROM ` + m.staging + ` s WHERE t.` + k + ` = s.` + k
	revived := []string{`updated_at = now()`, `version = t.version + 1`, `created_at = now()`, `deleted_at = NULL`}
	for _, c := range m.plan.into {
		if !c.Key {
			revived = append(revived, m.q(c)+` = s.`+m.q(c))
		}
	}
	defs, err := m.defaults()
	if err != nil {
		return jobs.Permanent(err)
	}
	for i, c := range m.plan.missing {
		if !c.Key {
			revived = append(revived, m.q(c)+` = `+defs[i])
		}
	}
	restored, err := m.exec(ctx, `UPDATE `+m.table+` t SET `+strings.Join(revived, ", ")+from+` AND t.deleted_at IS NOT NULL`)
	if err != nil {
		return err
	}
	if len(before) > 0 {
		if res.Updated, err = m.exec(ctx, `UPDATE `+m.table+` t SET `+strings.Join(set, ", ")+from+` AND t.deleted_at IS NULL AND NOT `+same(before, after)); err != nil {
			return err
		}
	}
	if res.Inserted, err = m.insert(ctx, true); err != nil {
		return err
	}
	res.Inserted += restored
	res.Unchanged = m.rows - res.Inserted - res.Updated
	return nil
}

// rebuild builds the table the import leaves as a new table, from the staged rows and (by
// key) the old table's, then swaps it in. The new table is written once, without indexes
// (the search and column indexes are rebuilt after the commit, as after the first load), its
// PRIMARY KEY and UNIQUE constraints are built once it is full, and the old table's other
// parts (CHECK constraints, defaults, identity sequences, row security, the change trigger,
// the saved views reading it) are carried over. Readers keep reading the old table until the
// swap, which takes its ACCESS EXCLUSIVE lock from then to the commit.
func (m *merge) rebuild(ctx context.Context, replace bool, res *ImportResult, around func(ddl func() error) error) error {
	rel := m.d.ID + "_import"
	next := Table(m.d.TableSchema, rel)
	var count struct {
		Live    int64 `db:"live"`
		Deleted int64 `db:"deleted"`
	}
	if err := m.tx.GetContext(ctx, &count, `SELECT count(*) FILTER (WHERE deleted_at IS NULL) AS live, count(*) FILTER (WHERE deleted_at IS NOT NULL) AS deleted
		FROM `+m.table); err != nil {
		return err
	}
	if m.keyed() {
		// A file that changes nothing (the same file again) leaves the table as it is, with
		// its indexes: looking for the first difference costs less than building the table.
		changes, err := m.changes(ctx, replace)
		if err != nil {
			return err
		}
		if !changes && (!replace || count.Live == m.rows && count.Deleted == 0) {
			// (No constraint is built to find a key the file has twice: look for one.)
			if err := m.duplicates(ctx); err != nil {
				return err
			}
			res.Unchanged = m.rows
			m.mark("compare")
			return nil
		}
	}
	m.mark("prepare")
	// A join of a million rows hashes in memory rather than in batches on disk.
	if err := m.execAll(ctx, `SET LOCAL work_mem = '64MB'`); err != nil {
		return err
	}
	idents, err := m.build(ctx, next, replace, count.Live, res)
	if err != nil {
		return err
	}
	m.mark("define")
	cons, temp, err := m.keyConstraints(ctx, rel, next)
	if err != nil {
		return err
	}
	m.mark("keys")
	if err := m.execAll(ctx, append(RowSecurity(next), ChangeTrigger(next, KeyOf(m.cols)))...); err != nil {
		return err
	}
	if err := m.lockExclusive(ctx); err != nil {
		return err
	}
	defer m.mark("swap")
	return around(func() error {
		qs := []string{`DROP TABLE ` + m.table, `ALTER TABLE ` + next + ` RENAME TO ` + pq.QuoteIdentifier(m.d.ID)}
		for i, c := range cons {
			qs = append(qs, `ALTER TABLE `+m.table+` RENAME CONSTRAINT `+pq.QuoteIdentifier(temp[i])+` TO `+pq.QuoteIdentifier(c.Name))
		}
		for _, id := range idents {
			qs = append(qs, `ALTER SEQUENCE `+id.Next+` RENAME TO `+pq.QuoteIdentifier(id.Name))
		}
		return m.execAll(ctx, qs...)
	})
}

// execAll runs the statements in order, the first error a merge error.
func (m *merge) execAll(ctx context.Context, qs ...string) error {
	for _, q := range qs {
		if _, err := m.tx.ExecContext(ctx, q); err != nil {
			return mergeError(err)
		}
	}
	return nil
}

// duplicates fails on a value the key or a unique column has twice.
func (m *merge) duplicates(ctx context.Context) error {
	for _, c := range m.plan.into {
		if c.Key || c.Constraints != nil && c.Constraints.Unique {
			if err := m.duplicate(ctx, c); err != nil {
				return err
			}
		}
	}
	return nil
}

// constraint is a table constraint and its definition.
type constraint struct {
	Name string `db:"conname"`
	Def  string `db:"def"`
}

// keyConstraints adds the old table's key and unique constraints to next, under names of
// their own until the swap (their indexes share the schema's namespace with the old table's):
// it returns them and their temporary names.
func (m *merge) keyConstraints(ctx context.Context, rel, next string) ([]constraint, []string, error) {
	var cons []constraint
	if err := m.tx.SelectContext(ctx, &cons, `SELECT conname, pg_get_constraintdef(oid) AS def FROM pg_constraint
		WHERE conrelid = $1::regclass AND contype IN ('p', 'u') ORDER BY contype, conname`, m.table); err != nil {
		return nil, nil, err
	}
	temp := make([]string, len(cons))
	for i, c := range cons {
		temp[i] = constraintName(fmt.Sprintf("%s_c%d", rel, i))
		if err := m.execAll(ctx, `SAVEPOINT dp_key`); err != nil {
			return nil, nil, err
		}
		if _, err := m.tx.ExecContext(ctx, `ALTER TABLE `+next+` ADD CONSTRAINT `+pq.QuoteIdentifier(temp[i])+` `+c.Def); err != nil {
			var pe *pq.Error
			if errors.As(err, &pe) && pe.Code == "23505" {
				if err := m.execAll(ctx, `ROLLBACK TO SAVEPOINT dp_key`); err != nil {
					return nil, nil, err
				}
				// the file has a value twice, or (upsert) one a kept record has
				if err := m.duplicates(ctx); err != nil {
					return nil, nil, err
				}
			}
			return nil, nil, mergeError(err)
		}
		if err := m.execAll(ctx, `RELEASE SAVEPOINT dp_key`); err != nil {
			return nil, nil, err
		}
	}
	return cons, temp, nil
}

// identity is an identity column of the old table: its sequence (qualified, and its name),
// and the new table's.
type identity struct {
	Column string `db:"attname"`
	Seq    string `db:"seq"`
	Name   string `db:"relname"`
	Next   string
}

// build makes the new table next with the rows the import leaves, and counts what changed;
// its identity columns continue the old table's sequences. A keyed merge is one CREATE TABLE
// AS over the join of the staged rows with the old table (written in bulk, the join by
// parallel workers), which then takes the old table's definition: defaults, NOT NULL, CHECK
// constraints and identity columns.
func (m *merge) build(ctx context.Context, next string, replace bool, live int64, res *ImportResult) ([]identity, error) {
	var idents []identity
	if err := m.tx.SelectContext(ctx, &idents, `SELECT a.attname, s.oid::regclass::text AS seq, s.relname FROM pg_attribute a
		JOIN pg_class s ON s.oid = pg_get_serial_sequence($1, a.attname)::regclass
		WHERE a.attrelid = $1::regclass AND a.attidentity <> '' AND NOT a.attisdropped`, m.table); err != nil {
		return nil, err
	}
	if !m.keyed() { // nothing to match: the file's rows are the records, with new keys
		return idents, m.buildUnkeyed(ctx, next, idents, live, res)
	}
	value, unchanged, from, err := m.mergedValues(replace)
	if err != nil {
		return nil, err
	}
	attrs, err := m.attributes(ctx)
	if err != nil {
		return nil, err
	}
	alter, err := m.fill(ctx, next, attrs, value, unchanged, from)
	if err != nil {
		return nil, err
	}
	if err := m.define(ctx, next, attrs, alter); err != nil {
		return nil, err
	}
	if err := m.continueSeqs(ctx, next, idents); err != nil {
		return nil, err
	}
	// New records were created now, changed ones updated now.
	var n struct {
		New     int64 `db:"new"`
		Touched int64 `db:"touched"`
	}
	if err := m.tx.GetContext(ctx, &n, `SELECT count(*) FILTER (WHERE created_at = now()) AS new,
		count(*) FILTER (WHERE updated_at = now() AND created_at <> now()) AS touched FROM `+next); err != nil {
		return nil, err
	}
	res.Inserted, res.Updated = n.New, n.Touched
	res.Unchanged = m.rows - res.Inserted - res.Updated
	if replace {
		res.Deleted = live - res.Updated - res.Unchanged
	}
	return idents, nil
}

// continueSeqs gives next's identity columns their sequences' places in the old ones.
func (m *merge) continueSeqs(ctx context.Context, next string, idents []identity) error {
	for i, id := range idents {
		if err := m.tx.GetContext(ctx, &idents[i].Next, `SELECT pg_get_serial_sequence($1, $2)`, next, id.Column); err != nil {
			return err
		}
		if _, err := m.tx.ExecContext(ctx, `SELECT setval(`+pq.QuoteLiteral(idents[i].Next)+`, last_value, is_called) FROM `+id.Seq); err != nil {
			return err
		}
	}
	return nil
}

// buildUnkeyed fills next with the file's rows as new records: there is no key to match.
func (m *merge) buildUnkeyed(ctx context.Context, next string, idents []identity, live int64, res *ImportResult) error {
	if _, err := m.tx.ExecContext(ctx, `CREATE TABLE `+next+` (LIKE `+m.table+` INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING IDENTITY INCLUDING STORAGE INCLUDING COMPRESSION)`); err != nil {
		return err
	}
	if err := m.continueSeqs(ctx, next, idents); err != nil {
		return err
	}
	names, exprs := make([]string, len(m.plan.into)), make([]string, len(m.plan.into))
	for i, c := range m.plan.into {
		seq := ""
		for _, id := range idents {
			if id.Column == c.Name {
				seq = id.Next
			}
		}
		names[i], exprs[i] = m.q(c), m.keyExpr(c, "s", seq)
	}
	n, err := m.exec(ctx, `INSERT INTO `+next+` (`+strings.Join(names, ", ")+`) SELECT `+strings.Join(exprs, ", ")+` FROM `+m.staging+` s`)
	res.Inserted, res.Deleted = n, live
	return err
}

// mergedValues is, per column, its value in the new table of a keyed merge; unchanged, the
// condition of a record keeping its values; from, the join the values are read from.
func (m *merge) mergedValues(replace bool) (value map[string]string, unchanged, from string, err error) {
	k := m.q(*m.plan.key)
	before, after, err := m.compared(replace)
	if err != nil {
		return nil, "", "", jobs.Permanent(err)
	}
	defs, err := m.defaults()
	if err != nil {
		return nil, "", "", jobs.Permanent(err)
	}
	// t is a live record (a soft-deleted one the file has comes back as a new record).
	liveT := `t.` + k + ` IS NOT NULL AND t.deleted_at IS NULL`
	unchanged = liveT + ` AND ` + same(before, after)
	value = map[string]string{} // column → its value in the new table
	if replace {
		// The file's rows; a record whose key the file has keeps its creation time and
		// (when its values do not change) its version; the columns the file lacks take
		// their defaults.
		for _, c := range m.plan.into {
			value[c.Name] = `s.` + m.q(c)
		}
		for i, c := range m.plan.missing {
			value[c.Name] = defs[i]
		}
		value["created_at"] = `CASE WHEN ` + liveT + ` THEN t.created_at ELSE now() END`
		value["deleted_at"] = `NULL`
		from = ` FROM ` + m.staging + ` s LEFT JOIN ` + m.table + ` t ON t.` + k + ` = s.` + k
	} else {
		// Every record, and the file's new rows: a record the file has takes its values
		// (the columns the file lacks keep theirs), the others stay as they are.
		present := `s."dp.present"`
		for _, c := range m.plan.into {
			value[c.Name] = `CASE WHEN ` + present + ` THEN s.` + m.q(c) + ` ELSE t.` + m.q(c) + ` END`
		}
		kept := `t.` + k + ` IS NOT NULL AND (` + present + ` IS NULL OR t.deleted_at IS NULL)` // a record that stays one
		for i, c := range m.plan.missing {
			value[c.Name] = `CASE WHEN ` + kept + ` THEN t.` + m.q(c) + ` ELSE ` + defs[i] + ` END`
		}
		value["created_at"] = `CASE WHEN ` + kept + ` THEN t.created_at ELSE now() END`
		value["deleted_at"] = `CASE WHEN ` + present + ` THEN NULL ELSE t.deleted_at END`
		unchanged = present + ` IS NULL OR ` + unchanged
		from = ` FROM ` + m.table + ` t FULL JOIN (SELECT *, true AS "dp.present" FROM ` + m.staging + `) s ON t.` + k + ` = s.` + k
	}
	return value, unchanged, from, nil
}

// attribute is a column of the old table as the new one must have it.
type attribute struct {
	Name     string `db:"attname"`
	Type     string `db:"type"`
	NotNull  bool   `db:"attnotnull"`
	Default  string `db:"def"`
	Identity string `db:"attidentity"`
}

// attributes are the old table's columns, in their order.
func (m *merge) attributes(ctx context.Context) ([]attribute, error) {
	var attrs []attribute
	err := m.tx.SelectContext(ctx, &attrs, `SELECT a.attname, format_type(a.atttypid, a.atttypmod) AS type, a.attnotnull,
		coalesce(pg_get_expr(d.adbin, d.adrelid), '') AS def, a.attidentity::text AS attidentity
		FROM pg_attribute a LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
		WHERE a.attrelid = $1::regclass AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum`, m.table)
	return attrs, err
}

// fill creates next with the old table's columns, in their order and of their types, from
// the merged values, and gives a generated key the file left empty the old sequence's next;
// it returns the ALTER TABLE clauses of the columns' defaults and NOT NULL.
func (m *merge) fill(ctx context.Context, next string, attrs []attribute, value map[string]string, unchanged, from string) ([]string, error) {
	// Whether a record keeps its values is worked out once per row (the subquery is not
	// flattened: OFFSET 0), then decides its updated_at and version.
	value["updated_at"] = `CASE WHEN "dp.same" THEN "dp.updated_at" ELSE now() END`
	value["version"] = `CASE WHEN "dp.same" THEN "dp.version" ELSE coalesce("dp.version" + 1, 1) END`
	inner := []string{`t.updated_at AS "dp.updated_at"`, `t.version AS "dp.version"`, `coalesce(` + unchanged + `, false) AS "dp.same"`}
	outer := make([]string, len(attrs))
	alter := []string{}
	for i, a := range attrs {
		v, ok := value[a.Name]
		if !ok {
			return nil, fmt.Errorf("the table's column %s is not the dataset's", a.Name)
		}
		if a.Name != "updated_at" && a.Name != "version" {
			alias := pq.QuoteIdentifier(fmt.Sprintf("dp.%d", i))
			inner = append(inner, v+` AS `+alias)
			v = alias
		}
		q := pq.QuoteIdentifier(a.Name)
		outer[i] = `(` + v + `)::` + a.Type + ` AS ` + q
		if a.Default != "" {
			alter = append(alter, `ALTER COLUMN `+q+` SET DEFAULT `+a.Default)
		}
		if a.NotNull {
			alter = append(alter, `ALTER COLUMN `+q+` SET NOT NULL`)
		}
	}
	if _, err := m.tx.ExecContext(ctx, `CREATE TABLE `+next+` AS SELECT `+strings.Join(outer, ", ")+` FROM (SELECT `+strings.Join(inner, ", ")+from+` OFFSET 0) x`); err != nil {
		return nil, mergeError(err)
	}
	m.mark("fill")
	// A generated key the file left empty is the old sequence's next.
	if m.seq != "" {
		k := m.q(*m.plan.key)
		var empty bool
		if err := m.tx.GetContext(ctx, &empty, `SELECT EXISTS (SELECT 1 FROM `+m.staging+` WHERE `+k+` IS NULL)`); err != nil {
			return nil, err
		}
		if empty {
			if _, err := m.tx.ExecContext(ctx, `UPDATE `+next+` SET `+k+` = nextval(`+pq.QuoteLiteral(m.seq)+`) WHERE `+k+` IS NULL`); err != nil {
				return nil, mergeError(err)
			}
		}
	}
	return alter, nil
}

// define gives next the rest of the old table's definition: with alter (defaults, NOT NULL),
// its CHECK constraints and identity columns.
func (m *merge) define(ctx context.Context, next string, attrs []attribute, alter []string) error {
	var checks []struct {
		Name string `db:"conname"`
		Def  string `db:"def"`
	}
	if err := m.tx.SelectContext(ctx, &checks, `SELECT conname, pg_get_constraintdef(oid) AS def FROM pg_constraint
		WHERE conrelid = $1::regclass AND contype = 'c' ORDER BY conname`, m.table); err != nil {
		return err
	}
	for _, c := range checks {
		alter = append(alter, `ADD CONSTRAINT `+pq.QuoteIdentifier(c.Name)+` `+c.Def)
	}
	for _, a := range attrs {
		switch a.Identity {
		case "a":
			alter = append(alter, `ALTER COLUMN `+pq.QuoteIdentifier(a.Name)+` ADD GENERATED ALWAYS AS IDENTITY`)
		case "d":
			alter = append(alter, `ALTER COLUMN `+pq.QuoteIdentifier(a.Name)+` ADD GENERATED BY DEFAULT AS IDENTITY`)
		}
	}
	if len(alter) > 0 {
		// One statement: NOT NULL and the checks are verified in one scan.
		if _, err := m.tx.ExecContext(ctx, `ALTER TABLE `+next+` `+strings.Join(alter, ", ")); err != nil {
			return mergeError(err)
		}
	}
	return nil
}

// changes reports whether the staged rows change the table: a row whose key no live record
// has, or whose values differ from its record's (for replace, with the defaults of the columns
// the file lacks). It stops at the first.
func (m *merge) changes(ctx context.Context, replace bool) (bool, error) {
	before, after, err := m.compared(replace)
	if err != nil {
		return false, jobs.Permanent(err)
	}
	k := m.q(*m.plan.key)
	var changes bool
	err = m.tx.GetContext(ctx, &changes, `SELECT EXISTS (SELECT 1 FROM `+m.staging+` s LEFT JOIN `+m.table+` t ON t.`+k+` = s.`+k+`
		WHERE NOT coalesce(t.`+k+` IS NOT NULL AND t.deleted_at IS NULL AND `+same(before, after)+`, false))`)
	return changes, err
}

// lockExclusive takes the old table for the swap. Waiting for it queues the readers that
// come after, so it waits at most two seconds at a time for the readers before it, and tries
// again a little later (up to ten times; then the job is retried).
func (m *merge) lockExclusive(ctx context.Context) error {
	for i := 0; ; i++ {
		if _, err := m.tx.ExecContext(ctx, `SAVEPOINT dp_swap`); err != nil {
			return err
		}
		if _, err := m.tx.ExecContext(ctx, `SET LOCAL lock_timeout = '2s'`); err != nil {
			return err
		}
		_, err := m.tx.ExecContext(ctx, `LOCK TABLE `+m.table+` IN ACCESS EXCLUSIVE MODE`)
		var pe *pq.Error
		if err == nil {
			_, err = m.tx.ExecContext(ctx, `RELEASE SAVEPOINT dp_swap; SET LOCAL lock_timeout TO DEFAULT`)
			return err
		} else if !errors.As(err, &pe) || pe.Code != "55P03" || i == 9 {
			return err
		}
		if _, err := m.tx.ExecContext(ctx, `ROLLBACK TO SAVEPOINT dp_swap`); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

// advanceKeys moves a generated key's sequence past the keys the file brought, so that
// records created later do not collide with them.
func (m *merge) advanceKeys(ctx context.Context) error {
	if m.seq == "" || !m.plan.keyIn {
		return nil
	}
	k := m.q(*m.plan.key)
	_, err := m.tx.ExecContext(ctx, `SELECT setval($1, greatest((SELECT max(`+k+`) FROM `+m.table+`), (SELECT last_value FROM `+m.seq+`), 1))`, m.seq)
	return err
}

func (m *merge) exec(ctx context.Context, q string) (int64, error) {
	r, err := m.tx.ExecContext(ctx, q)
	if err != nil {
		return 0, mergeError(err)
	}
	return r.RowsAffected()
}

// mergeError makes a row the merge refuses (a unique value another record has) a readable,
// permanent failure with PostgreSQL's detail, which names the value.
func mergeError(err error) error {
	var pe *pq.Error
	if errors.As(err, &pe) && (strings.HasPrefix(string(pe.Code), "22") || strings.HasPrefix(string(pe.Code), "23")) {
		msg := pe.Message
		if pe.Detail != "" {
			msg += " (" + strings.TrimSuffix(pe.Detail, ".") + ")"
		}
		return jobs.Permanent(errors.New(msg))
	}
	return err
}
