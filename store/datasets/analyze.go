package datasets

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"time"

	"dataplatform/store"
	"dataplatform/store/extdb"
	"dataplatform/store/ingest"
	"dataplatform/store/jobs"
	"dataplatform/store/secrets"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
)

// KindAnalyze is the job kind that re-analyses an active dataset (POST .../refresh).
const KindAnalyze = "dataset.analyze"

// AnalysisVersion names the method of the statistics below; it changes when they are
// computed differently, so a reader can tell old statistics from new ones.
const AnalysisVersion = 1

// ExactLimit is the row count up to which distinct counts and value frequencies are exact.
// Above it they come from PostgreSQL's ANALYZE sample (pg_stats), which reads a fixed
// number of rows whatever the table's size: an exact count(DISTINCT) per column would sort
// the whole table once per column.
const ExactLimit = 200_000

// sampleSize is how many values per column the analysis keeps as samples.
const sampleSize = 5

// maxIndexedValues bounds the values of one column that go to the search index, and
// lowCardinality the distinct count up to which a text column's values are indexed at all
// (names of categories, statuses and cities help match words to filters; free text does not).
const (
	maxIndexedValues = 100
	lowCardinality   = 1000
)

// ColumnStats are one column's statistics.
type ColumnStats struct {
	DistinctCount     int64           `json:"distinct_count"`
	DistinctEstimated bool            `json:"distinct_estimated,omitempty"`
	NullCount         int64           `json:"null_count"`
	Min               json.RawMessage `json:"min,omitempty"`
	Max               json.RawMessage `json:"max,omitempty"`
	Avg               *float64        `json:"avg,omitempty"`
	Completeness      float64         `json:"completeness"`
	SampleValues      []any           `json:"sample_values"`
}

// TableStats are one table's statistics.
type TableStats struct {
	RowCount int64                   `json:"row_count"`
	Sampled  int64                   `json:"sampled,omitempty"` // rows the column statistics were computed over, when not all
	Columns  map[string]*ColumnStats `json:"columns"`
}

// Statistics are what an analysis found, per table, as kept in platform.datasets.statistics.
type Statistics struct {
	Tables map[string]*TableStats `json:"tables"`
}

// analyzed is a column the analysis reads: the system id of an uploaded table and the
// dataset's columns.
type analyzed struct {
	name string
	typ  ingest.Type
}

func analyzedColumns(t TableDef) []analyzed {
	var out []analyzed
	if t.GeneratedID() {
		out = append(out, analyzed{"id", ingest.BigInt})
	}
	for _, c := range t.Columns {
		out = append(out, analyzed{c.Name, c.Type})
	}
	return out
}

// Analyze computes the dataset's statistics, search index entries and inferred relationships
// inside tx and writes them to d and the platform tables (the caller saves d). Uploaded
// tables are analysed whole (after PostgreSQL's ANALYZE, so the planner knows the new rows
// too); connected tables over their first SampleRows rows, to spare the other database.
func Analyze(ctx context.Context, tx *sqlx.Tx, d *store.Dataset, now time.Time) error {
	tables, err := Tables(d)
	if err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `SET LOCAL timezone = 'UTC'`); err != nil {
		return err
	}
	st := &Statistics{Tables: map[string]*TableStats{}}
	var rows int64
	for _, t := range tables {
		ts, err := tableStatistics(ctx, tx, t)
		if err != nil {
			return err
		}
		if err := samples(ctx, tx, t, ts); err != nil {
			return err
		}
		st.Tables[t.Name] = ts
		rows += ts.RowCount
	}
	vectors, err := index(ctx, tx, d, tables, st)
	if err != nil {
		return err
	}
	if d.Type == "file" {
		if err := inferRelationships(ctx, tx, d, tables[0].Columns, now); err != nil {
			return err
		}
	}
	b, err := json.Marshal(st)
	if err != nil {
		return err
	}
	d.Statistics, d.RowCount, d.VectorCount, d.AnalyzedAt, d.AnalysisVersion = string(b), &rows, vectors, &now, AnalysisVersion
	return nil
}

func orderable(t ingest.Type) bool {
	switch t {
	case ingest.Integer, ingest.BigInt, ingest.Numeric, ingest.Date, ingest.Timestamptz, ingest.Text, ingest.Boolean:
		return true
	}
	return false
}

func numeric(t ingest.Type) bool {
	return t == ingest.Integer || t == ingest.BigInt || t == ingest.Numeric
}

// statsChunk is how many columns one statistics query reads.
const statsChunk = 300

// tableStatistics reads counts, bounds and averages in one scan of the table (one per
// statsChunk columns); distinct counts are exact up to ExactLimit rows, estimated from
// pg_stats above. A connected table's column statistics cover its first sampleRows rows; its
// row count is counted remotely.
func tableStatistics(ctx context.Context, tx *sqlx.Tx, t TableDef) (*TableStats, error) {
	sampleRows := t.sampleRows()
	cols := analyzedColumns(t)
	from := t.Qualified() + ` WHERE ` + t.Live()
	exact := true
	ts := &TableStats{Columns: map[string]*ColumnStats{}}
	if t.Foreign {
		if err := tx.GetContext(ctx, &ts.RowCount, `SELECT count(*) FROM `+t.Qualified()); err != nil {
			return nil, err
		}
		from = `(SELECT * FROM ` + t.Qualified() + ` LIMIT ` + strconv.FormatInt(sampleRows, 10) + `) s`
		if ts.RowCount > sampleRows {
			ts.Sampled = sampleRows
		}
	} else {
		if _, err := tx.ExecContext(ctx, `ANALYZE `+t.Qualified()); err != nil {
			return nil, err
		}
		// ANALYZE has just counted the table (reltuples): enough to choose between exact and
		// estimated distinct counts without a scan of its own.
		var estimated float64
		if err := tx.GetContext(ctx, &estimated, `SELECT reltuples FROM pg_class WHERE oid = $1::regclass`, t.Qualified()); err != nil {
			return nil, err
		}
		exact = estimated <= ExactLimit
	}
	accs, rows, err := aggregateColumns(ctx, tx, cols, from, exact)
	if err != nil {
		return nil, err
	}
	if !t.Foreign {
		ts.RowCount = rows
	}
	estimates := map[string]float64{}
	if !exact {
		if estimates, err = distinctEstimates(ctx, tx, t); err != nil {
			return nil, err
		}
	}
	for i, c := range cols {
		a := accs[i]
		cs := &ColumnStats{NullCount: rows - deref(a.count), Avg: a.avg, SampleValues: []any{}}
		if rows > 0 {
			cs.Completeness = float64(deref(a.count)) / float64(rows)
		}
		if a.min != nil {
			cs.Min, cs.Max = json.RawMessage(shortJSON(*a.min)), json.RawMessage(shortJSON(*a.max))
		}
		switch {
		case exact:
			cs.DistinctCount, cs.DistinctEstimated = deref(a.distinct), ts.Sampled > 0
		default:
			n := estimates[c.name]
			if n < 0 { // a fraction of the rows
				n = -n * float64(rows)
			}
			cs.DistinctCount, cs.DistinctEstimated = int64(n+0.5), true
		}
		ts.Columns[c.name] = cs
	}
	return ts, nil
}

// columnAggregates are a column's count, distinct count, bounds and average.
type columnAggregates struct {
	count, distinct *int64
	min, max        *string
	avg             *float64
}

// aggregateColumns reads the aggregates of cols over from (distinct counts when exact) and
// the rows' count.
func aggregateColumns(ctx context.Context, tx *sqlx.Tx, cols []analyzed, from string, exact bool) ([]columnAggregates, int64, error) {
	accs := make([]columnAggregates, len(cols))
	var rows int64
	// A select list holds at most 1,664 entries and a column takes 5: wide tables are read in
	// chunks of columns, one scan each (a table of about 330 columns failed to load before).
	for lo := 0; lo < len(cols); lo += statsChunk {
		chunk := cols[lo:min(lo+statsChunk, len(cols))]
		vals := append(make([]any, 0, len(chunk)*5+1), &rows)
		for i := range chunk {
			a := &accs[lo+i]
			vals = append(vals, &a.count, &a.min, &a.max, &a.avg, &a.distinct)
		}
		if err := tx.QueryRowxContext(ctx, `SELECT `+strings.Join(aggregateList(chunk, exact), ", ")+` FROM `+from).Scan(vals...); err != nil {
			return nil, 0, err
		}
	}
	if len(cols) == 0 {
		if err := tx.GetContext(ctx, &rows, `SELECT count(*) FROM `+from); err != nil {
			return nil, 0, err
		}
	}
	return accs, rows, nil
}

// aggregateList is the select list of the rows' count and, per column, its five aggregates.
func aggregateList(chunk []analyzed, exact bool) []string {
	sel := []string{"count(*)"}
	for _, c := range chunk {
		q := pq.QuoteIdentifier(c.name)
		sel = append(sel, "count("+q+")")
		switch {
		case c.typ == ingest.Boolean:
			sel = append(sel, "to_json(bool_and("+q+"))::text", "to_json(bool_or("+q+"))::text")
		case orderable(c.typ):
			sel = append(sel, "to_json(min("+q+"))::text", "to_json(max("+q+"))::text")
		default:
			sel = append(sel, "NULL::text", "NULL::text")
		}
		if numeric(c.typ) {
			sel = append(sel, "avg("+q+")::float8")
		} else {
			sel = append(sel, "NULL::float8")
		}
		if exact {
			sel = append(sel, "count(DISTINCT "+q+")")
		} else {
			sel = append(sel, "NULL::bigint")
		}
	}
	return sel
}

// distinctEstimates are ANALYZE's estimates of the columns' distinct counts (a negative one a
// fraction of the rows).
func distinctEstimates(ctx context.Context, tx *sqlx.Tx, t TableDef) (map[string]float64, error) {
	var ps []struct {
		Name     string  `db:"attname"`
		Distinct float64 `db:"n_distinct"`
	}
	if err := tx.SelectContext(ctx, &ps, `SELECT attname, n_distinct FROM pg_stats WHERE schemaname = $1 AND tablename = $2`,
		t.Schema, t.Relation); err != nil {
		return nil, err
	}
	estimates := map[string]float64{}
	for _, p := range ps {
		estimates[p.Name] = p.Distinct
	}
	return estimates, nil
}

// shortJSON keeps a long JSON string value readable: bounds of text columns can be whole
// paragraphs.
func shortJSON(s string) string {
	const max = 200
	if len(s) <= max || s[0] != '"' {
		return s
	}
	var v string
	if json.Unmarshal([]byte(s), &v) != nil {
		return s
	}
	r := []rune(v)
	if len(r) <= max {
		return s
	}
	b, _ := json.Marshal(string(r[:max]) + "…")
	return string(b)
}

func deref[T any](p *T) T {
	var z T
	if p == nil {
		return z
	}
	return *p
}

// samples keeps up to sampleSize distinct values per column from the first rows.
func samples(ctx context.Context, tx *sqlx.Tx, t TableDef, ts *TableStats) error {
	cols := analyzedColumns(t)
	sel := make([]string, len(cols))
	for i, c := range cols {
		sel[i] = "to_json(" + pq.QuoteIdentifier(c.name) + ")::text"
	}
	order := ""
	if t.System() {
		order = " ORDER BY " + pq.QuoteIdentifier(KeyOf(t.Columns))
	}
	rows, err := tx.QueryContext(ctx, `SELECT `+strings.Join(sel, ", ")+` FROM `+t.Qualified()+` WHERE `+t.Live()+order+` LIMIT 1000`)
	if err != nil {
		return err
	}
	defer rows.Close()
	vals := make([]*string, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	seen := make([]map[string]bool, len(cols))
	for i := range seen {
		seen[i] = map[string]bool{}
	}
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return err
		}
		for i, v := range vals {
			cs := ts.Columns[cols[i].name]
			if v == nil || len(cs.SampleValues) >= sampleSize || seen[i][*v] {
				continue
			}
			seen[i][*v] = true
			cs.SampleValues = append(cs.SampleValues, json.RawMessage(shortJSON(*v)))
		}
	}
	return rows.Err()
}

// index rebuilds the dataset's search entries: its name and description, its tables (of a
// connected database), column names (as stored and as in the file), and the frequent values
// of low-cardinality text columns. It returns how many entries there are.
func index(ctx context.Context, tx *sqlx.Tx, d *store.Dataset, tables []TableDef, st *Statistics) (int64, error) {
	if _, err := tx.ExecContext(ctx, `DELETE FROM platform.dataset_search WHERE dataset_id = $1`, d.ID); err != nil {
		return 0, err
	}
	type entry struct {
		kind, column, content string
		freq                  *int64
	}
	entries := []entry{{kind: "dataset", content: d.Name}}
	if d.Description != nil && *d.Description != "" {
		entries = append(entries, entry{kind: "dataset", content: *d.Description})
	}
	for _, t := range tables {
		ts := st.Tables[t.Name]
		if t.Foreign {
			entries = append(entries, entry{kind: "dataset", content: strings.ReplaceAll(t.Name, "_", " ")})
		}
		for _, c := range t.Columns {
			entries = append(entries, entry{kind: "column", column: c.Name, content: strings.ReplaceAll(c.Name, "_", " ")})
			if c.Original != "" && c.Original != c.Name {
				entries = append(entries, entry{kind: "column", column: c.Name, content: c.Original})
			}
			if c.Description != "" {
				entries = append(entries, entry{kind: "column", column: c.Name, content: c.Description})
			}
			if c.Semantics != nil {
				for _, a := range c.Semantics.Aliases {
					entries = append(entries, entry{kind: "column", column: c.Name, content: a})
				}
			}
			cs := ts.Columns[c.Name]
			if c.Type != ingest.Text || cs == nil || cs.DistinctCount == 0 || cs.DistinctCount > lowCardinality {
				continue
			}
			var vals []struct {
				Value string `db:"v"`
				Freq  int64  `db:"n"`
			}
			var err error
			q := pq.QuoteIdentifier(c.Name)
			switch {
			case t.Foreign:
				err = tx.SelectContext(ctx, &vals, `SELECT `+q+` AS v, count(*) AS n FROM (SELECT `+q+` FROM `+t.Qualified()+` LIMIT $2) s
					WHERE `+q+` IS NOT NULL AND length(`+q+`) <= 200 GROUP BY 1 ORDER BY 2 DESC, 1 LIMIT $1`, maxIndexedValues, max(ts.Sampled, ts.RowCount))
			case ts.RowCount <= ExactLimit:
				err = tx.SelectContext(ctx, &vals, `SELECT `+q+` AS v, count(*) AS n FROM `+t.Qualified()+` WHERE deleted_at IS NULL AND `+q+
					` IS NOT NULL AND length(`+q+`) <= 200 GROUP BY 1 ORDER BY 2 DESC, 1 LIMIT $1`, maxIndexedValues)
			default:
				// ANALYZE's most common values, their frequencies scaled to the table.
				err = tx.SelectContext(ctx, &vals, `SELECT v, round(f * $4)::bigint AS n
					FROM pg_stats, unnest(most_common_vals::text::text[], most_common_freqs) AS m(v, f)
					WHERE schemaname = $1 AND tablename = $2 AND attname = $3 AND length(v) <= 200 ORDER BY f DESC LIMIT $5`,
					t.Schema, t.Relation, c.Name, ts.RowCount, maxIndexedValues)
			}
			if err != nil {
				return 0, err
			}
			for _, v := range vals {
				entries = append(entries, entry{kind: "value", column: c.Name, content: v.Value, freq: &v.Freq})
			}
		}
	}
	for _, e := range entries {
		if _, err := tx.ExecContext(ctx, `INSERT INTO platform.dataset_search (dataset_id, project_id, kind, column_name, content, frequency)
			VALUES ($1, $2, $3, NULLIF($4, ''), $5, $6)`, d.ID, d.ProjectID, e.kind, e.column, e.content, e.freq); err != nil {
			return 0, err
		}
	}
	return int64(len(entries)), nil
}

// targets are the columns of a dataset that references may point at: its key and the other
// columns a UNIQUE constraint keeps unique, all holding the user's own values. The generated
// id is never one: its numbers are the order rows were loaded in, which another file's values
// would match only by chance.
func targets(cols []ingest.Column) []ingest.Column {
	var out []ingest.Column
	for _, c := range cols {
		if c.Key || (c.Constraints != nil && c.Constraints.Unique) {
			out = append(out, c)
		}
	}
	return out
}

func comparable(a, b ingest.Type) bool {
	return a == b || (numeric(a) && numeric(b) && a != ingest.Numeric && b != ingest.Numeric)
}

// Analyzer runs refresh jobs.
type Analyzer struct {
	Store    *store.Store
	Clock    func() time.Time
	Secrets  *secrets.Box
	Networks extdb.Networks // where connected databases may be (DP_CONNECTION_NETWORKS)
}

// Register installs the analyze handler on r.
func (a *Analyzer) Register(r *jobs.Runner) { r.Register(KindAnalyze, a.handle) }

func (a *Analyzer) handle(ctx context.Context, j *jobs.Job, p *jobs.Progress) error {
	var pl Payload
	if err := j.Decode(&pl); err != nil {
		return jobs.Permanent(err)
	}
	// A connected database is read again first, outside the transaction: its tables may
	// have changed since the dataset was made.
	var reread *reintrospection
	if c, err := store.ConnectionOf(ctx, a.Store.DB, pl.DatasetID); err == nil {
		p.Set(ctx, "connecting", 0, 0, "reading the database's tables")
		if reread, err = a.introspect(ctx, c); err != nil {
			return err
		}
	} else if !errors.Is(err, store.ErrNotFound) {
		return err
	}
	return a.Store.Tx(ctx, func(tx *sqlx.Tx) error {
		d, err := store.DatasetByID(ctx, tx, pl.DatasetID, true)
		if err != nil {
			if errors.Is(err, store.ErrNotFound) {
				return nil // deleted meanwhile
			}
			return err
		}
		if d.Status != "active" {
			return jobs.Permanent(fmt.Errorf("the dataset is %s", d.Status))
		}
		start := time.Now()
		now := a.Clock().UTC()
		if reread != nil {
			if err := reconnect(ctx, tx, d, reread, now); err != nil {
				return err
			}
		}
		p.Set(ctx, "analyzing", 0, deref(d.RowCount), "computing statistics and the search index")
		if err := Analyze(ctx, tx, d, now); err != nil {
			return err
		}
		ms := time.Since(start).Milliseconds()
		d.IndexTimeMS, d.IndexedAt, d.UpdatedAt = &ms, &now, now
		if err := store.SaveAnalysis(ctx, tx, d); err != nil {
			return err
		}
		if d.Type == "file" { // the columns may have changed: the search index follows
			if err := EnqueueSearchIndex(ctx, tx, d); err != nil {
				return err
			}
		}
		p.Set(ctx, "complete", *d.RowCount, *d.RowCount, "")
		return nil
	})
}

type reintrospection struct {
	cfg  extdb.Config
	opts extdb.Options
	info *extdb.Info
}

func (a *Analyzer) introspect(ctx context.Context, c *store.Connection) (*reintrospection, error) {
	pw, err := a.Secrets.Open(c.PasswordEnc)
	if err != nil {
		return nil, jobs.Permanent(fmt.Errorf("the stored password cannot be decrypted (was DP_SECRET_KEY changed?): %w", err))
	}
	r := &reintrospection{cfg: extdb.Config{Type: c.Type, Host: c.Host, Port: c.Port, Database: c.Database, Username: c.Username,
		Password: string(pw), SSLMode: c.SSLMode, Networks: a.Networks}}
	if err := json.Unmarshal([]byte(c.Options), &r.opts); err != nil {
		return nil, err
	}
	if r.info, err = extdb.Introspect(ctx, r.cfg, r.opts); err != nil {
		return nil, fmt.Errorf("reading the database: %w", err)
	}
	return r, nil
}

// reconnect rebuilds a connected dataset's foreign tables from a new reading of its database.
// When the tables or columns changed, the change is recorded as a new schema version.
func reconnect(ctx context.Context, tx *sqlx.Tx, d *store.Dataset, r *reintrospection, now time.Time) error {
	if err := Drop(ctx, tx, d); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM platform.dataset_relationships WHERE origin = 'foreign_key' AND from_dataset = $1`, d.ID); err != nil {
		return err
	}
	tables, err := Connect(ctx, tx, d, r.cfg, r.opts, r.info, now)
	if err != nil {
		return err
	}
	before := deref(d.Tables)
	var old []TableDef
	if err := json.Unmarshal([]byte(before), &old); err != nil {
		return err
	}
	b, _ := json.Marshal(tables)
	d.Tables = ptrTo(string(b))
	if reflect.DeepEqual(old, tables) {
		return nil
	}
	d.SchemaVersion++
	return store.RecordSchemaChange(ctx, tx, &store.SchemaChange{ID: store.NewID("sch"), DatasetID: d.ID, SchemaVersion: d.SchemaVersion,
		Changes: `[{"op":"reintrospect"}]`, ColumnsBefore: before, ColumnsAfter: string(b), CreatedAt: now}, true)
}

func ptrTo[T any](v T) *T { return &v }
