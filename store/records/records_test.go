package records_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"dataplatform/store"
	"dataplatform/store/datasets"
	"dataplatform/store/ingest"
	"dataplatform/store/pgtest"
	"dataplatform/store/records"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// columns are a customer-like dataset's: a required name, a unique email, a nullable score,
// a status with an enum and a default, text tags, a JSON field and a date.
var columns = []ingest.Column{
	{Name: "name", Type: ingest.Text},
	{Name: "email", Type: ingest.Text, Nullable: true, Constraints: &ingest.Constraints{Unique: true}},
	{Name: "score", Type: ingest.Integer, Nullable: true},
	{Name: "status", Type: ingest.Text, Constraints: &ingest.Constraints{Enum: []string{"pending", "active", "inactive"}, Default: json.RawMessage(`"pending"`)}},
	{Name: "tags", Type: ingest.TextArray, Nullable: true},
	{Name: "meta", Type: ingest.JSONB, Nullable: true},
	{Name: "joined", Type: ingest.Date, Nullable: true},
}

// fixture is a dataset table of its own database, made as an upload makes it: the system
// columns, the columns' DDL and constraints, row-level security.
type fixture struct {
	db     *sqlx.DB
	org    string // the schema (an organization's)
	tbl    *records.Table
	fields []string
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	db, tbl := datasetTable(t, columns, true)
	return &fixture{db: db, org: tbl.Schema, tbl: tbl, fields: tbl.Fields()}
}

// datasetTable makes a dataset table of cols in a database of its own, as an upload makes it:
// the system columns, and with full the columns' constraints and row-level security too.
func datasetTable(tb testing.TB, cols []ingest.Column, full bool) (*sqlx.DB, *records.Table) {
	tb.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, pgtest.NewDatabase(tb))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { st.Close() })
	org, id := store.NewID("org"), store.NewID("ds")
	if err := datasets.EnsureSchema(ctx, st.DB, org); err != nil {
		tb.Fatal(err)
	}
	table := datasets.Table(org, id)
	defs := []string{"id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY"}
	for _, c := range cols {
		d, err := datasets.ColumnDDL(c)
		if err != nil {
			tb.Fatal(err)
		}
		defs = append(defs, d)
	}
	defs = append(defs, "created_at timestamptz NOT NULL DEFAULT now()", "updated_at timestamptz NOT NULL DEFAULT now()",
		"deleted_at timestamptz", "version integer NOT NULL DEFAULT 1")
	var after []string
	if full {
		for _, c := range cols {
			for _, k := range datasets.Constraints(id, c) {
				defs = append(defs, "CONSTRAINT "+pq.QuoteIdentifier(k.Name)+" "+k.SQL)
			}
		}
		after = datasets.RowSecurity(table)
	}
	for _, q := range append([]string{`CREATE TABLE ` + table + ` (` + strings.Join(defs, ", ") + `)`}, after...) {
		if _, err := st.DB.Exec(q); err != nil {
			tb.Fatalf("%s: %v", q, err)
		}
	}
	return st.DB, records.NewTable(datasets.TableDef{Name: id, Schema: org, Relation: id, Columns: cols, PrimaryKey: []string{"id"}})
}

// people are the seeded records, in insertion order (ids 1 to 5), as the record API decodes
// request bodies (numbers as json.Number).
var people = decode(`[
	{"name": "Ann", "email": "ann@example.com", "score": 90, "status": "active", "tags": ["vip", "north"], "meta": {"city": "Oslo"}, "joined": "2024-01-05"},
	{"name": "Bob", "email": "bob@example.com", "score": 40, "status": "inactive", "tags": ["south"], "meta": {"city": "Rome"}, "joined": "2024-02-10"},
	{"name": "Cid", "email": "cid@example.com", "score": null, "status": "active", "joined": null},
	{"name": "Dee", "email": "dee@example.com", "score": 60, "tags": ["vip"], "meta": {"city": "Oslo", "floor": 3}, "joined": "2024-03-01"},
	{"name": "Eve", "email": "eve@example.com", "score": 10, "status": "active", "meta": {"city": "Paris"}, "joined": "2023-12-24"}
]`)

// decode reads JSON as the record API reads request bodies.
func decode(s string) []map[string]any {
	d := json.NewDecoder(strings.NewReader(s))
	d.UseNumber()
	var out []map[string]any
	if err := d.Decode(&out); err != nil {
		panic(err)
	}
	return out
}

// body is one request body.
func body(s string) map[string]any { return decode("[" + s + "]")[0] }

// seed inserts people and dates them a day apart (Ann oldest), so that the default order,
// newest first, does not depend on how fast the inserts ran.
func (f *fixture) seed(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	for _, p := range people {
		if _, err := f.tbl.Insert(ctx, f.db, p, f.fields); err != nil {
			t.Fatalf("insert %v: %v", p["name"], err)
		}
	}
	if _, err := f.db.Exec(`UPDATE ` + f.tbl.Qualified() + ` SET created_at = timestamptz '2024-06-01 00:00:00Z' + id * interval '1 day'`); err != nil {
		t.Fatal(err)
	}
}

// rowsRead is the rows of the fixture's table read so far (index and sequential), as the
// statistics of the session say: the fixture's pool must hold one connection.
func (f *fixture) rowsRead(t *testing.T) int64 {
	t.Helper()
	if _, err := f.db.Exec(`SELECT pg_stat_force_next_flush()`); err != nil {
		t.Fatal(err)
	}
	var n int64
	if err := f.db.QueryRow(`SELECT coalesce(idx_tup_fetch, 0) + coalesce(seq_tup_read, 0) FROM pg_stat_user_tables WHERE relid = $1::regclass`, f.tbl.Qualified()).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// record decodes a JSON record.
func record(t *testing.T, j json.RawMessage) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(j, &m); err != nil {
		t.Fatalf("record %s: %v", j, err)
	}
	return m
}

// names are the name fields of a page's rows, in order.
func names(t *testing.T, rows []json.RawMessage) []string {
	t.Helper()
	out := []string{}
	for _, r := range rows {
		out = append(out, fmt.Sprint(record(t, r)["name"]))
	}
	return out
}

func fieldError(t *testing.T, err error, field, code string) {
	t.Helper()
	var fe *records.FieldError
	if !errors.As(err, &fe) || fe.Field != field || fe.Code != code {
		t.Fatalf("error %v (%T), want a field error %s %s", err, err, field, code)
	}
}

func pqCode(t *testing.T, err error, code string) {
	t.Helper()
	var pe *pq.Error
	if !errors.As(err, &pe) || string(pe.Code) != code {
		t.Fatalf("error %v, want PostgreSQL error %s", err, code)
	}
}

func TestInsertGetUpdateDelete(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	tbl, db := f.tbl, f.db

	j, err := tbl.Insert(ctx, db, body(`{"name": "Ann", "email": "ann@example.com", "score": "7", "tags": ["a", "b"], "meta": {"k": 1}, "joined": "2024-01-05"}`), f.fields)
	if err != nil {
		t.Fatal(err)
	}
	r := record(t, j)
	// The default fills status; the system fields are set; values come back typed.
	if r["id"] != 1.0 || r["version"] != 1.0 || r["status"] != "pending" || r["score"] != 7.0 || r["joined"] != "2024-01-05" ||
		fmt.Sprint(r["tags"]) != "[a b]" || fmt.Sprint(r["meta"]) != "map[k:1]" || r["created_at"] == nil || r["updated_at"] == nil {
		t.Fatalf("inserted: %s", j)
	}
	if _, ok := r["deleted_at"]; ok {
		t.Fatalf("deleted_at is not a record field: %s", j)
	}
	id, err := tbl.ParseKey("1")
	if err != nil || id != "1" {
		t.Fatalf("ParseKey: %q %v", id, err)
	}

	g, err := tbl.Get(ctx, db, id, []string{"id", "name", "score"}, false)
	if err != nil {
		t.Fatal(err)
	}
	if m := record(t, g); len(m) != 3 || m["name"] != "Ann" || m["score"] != 7.0 {
		t.Fatalf("get with fields: %s", g)
	}

	// An update at the current version writes and moves the version on; a stale one writes
	// nothing.
	u, ok, err := tbl.Update(ctx, db, id, 1, body(`{"score": 8, "status": "active"}`), false, f.fields)
	if err != nil || !ok {
		t.Fatalf("update: %v %v", ok, err)
	}
	if m := record(t, u); m["version"] != 2.0 || m["score"] != 8.0 || m["status"] != "active" || m["name"] != "Ann" || m["email"] != "ann@example.com" {
		t.Fatalf("updated: %s", u)
	}
	if _, ok, err := tbl.Update(ctx, db, id, 1, body(`{"score": 9}`), false, f.fields); err != nil || ok {
		t.Fatalf("stale update: ok %v, %v", ok, err)
	}
	// A replace resets what the body leaves out to its default (NULL, or the declared one).
	u, ok, err = tbl.Update(ctx, db, id, 2, map[string]any{"name": "Annie"}, true, f.fields)
	if err != nil || !ok {
		t.Fatalf("replace: %v %v", ok, err)
	}
	if m := record(t, u); m["version"] != 3.0 || m["name"] != "Annie" || m["score"] != nil || m["email"] != nil || m["status"] != "pending" || m["tags"] != nil {
		t.Fatalf("replaced: %s", u)
	}

	// A soft delete hides the record but keeps the row; a hard one removes it.
	at, err := tbl.Delete(ctx, db, id, true)
	if err != nil || time.Since(at) > time.Minute || at.Location() != time.UTC {
		t.Fatalf("soft delete: %v %v", at, err)
	}
	if _, err := tbl.Get(ctx, db, id, f.fields, false); !errors.Is(err, records.ErrNotFound) {
		t.Fatalf("get after soft delete: %v", err)
	}
	if _, ok, err := tbl.Update(ctx, db, id, 4, map[string]any{"name": "ghost"}, false, f.fields); err != nil || ok {
		t.Fatalf("update of a deleted record: %v %v", ok, err)
	}
	var deleted int
	if err := db.Get(&deleted, `SELECT count(*) FROM `+tbl.Qualified()+` WHERE deleted_at IS NOT NULL AND version = 4`); err != nil || deleted != 1 {
		t.Fatalf("soft-deleted row: %d %v", deleted, err)
	}
	if _, err := tbl.Delete(ctx, db, id, true); !errors.Is(err, records.ErrNotFound) {
		t.Fatalf("second delete: %v", err)
	}
	j, err = tbl.Insert(ctx, db, map[string]any{"name": "Bob"}, []string{"id"})
	if err != nil {
		t.Fatal(err)
	}
	bob := fmt.Sprint(record(t, j)["id"])
	if _, err := tbl.Delete(ctx, db, bob, false); err != nil {
		t.Fatal(err)
	}
	var left int
	if err := db.Get(&left, `SELECT count(*) FROM `+tbl.Qualified()); err != nil || left != 1 {
		t.Fatalf("rows after a hard delete: %d %v", left, err)
	}
}

// The database refuses what the table's constraints forbid; values that do not fit a column
// are refused before they reach it.
func TestWritesRefused(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.seed(t)
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		body map[string]any
		code string // PostgreSQL error code, or "" for a field error
		fe   string // the field error's field
	}{
		{"unique email", map[string]any{"name": "Ann 2", "email": "ann@example.com"}, "23505", ""},
		{"status outside the enum", map[string]any{"name": "X", "status": "gone"}, "23514", ""},
		{"required name missing", map[string]any{"email": "x@example.com"}, "23502", ""},
		{"score not an integer", map[string]any{"name": "X", "score": "many"}, "", "body.score"},
		{"date not a date", map[string]any{"name": "X", "joined": "yesterday"}, "", "body.joined"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := f.tbl.Insert(ctx, f.db, tc.body, f.fields)
			if tc.code != "" {
				pqCode(t, err, tc.code)
			} else {
				fieldError(t, err, tc.fe, "type")
			}
		})
	}
	// An update that breaks a constraint changes nothing.
	_, _, err := f.tbl.Update(ctx, f.db, "2", 1, map[string]any{"email": "ann@example.com"}, false, f.fields)
	pqCode(t, err, "23505")
	if g, err := f.tbl.Get(ctx, f.db, "2", f.fields, false); err != nil || record(t, g)["email"] != "bob@example.com" || record(t, g)["version"] != 1.0 {
		t.Fatalf("after a refused update: %s %v", g, err)
	}
	var n int
	if err := f.db.Get(&n, `SELECT count(*) FROM `+f.tbl.Qualified()); err != nil || n != len(people) {
		t.Fatalf("%d rows after refused inserts (%v), want %d", n, err, len(people))
	}
	// Paths name records by positive integer ids only.
	for _, s := range []string{"abc", "0", "-3", "1.5"} {
		_, err := f.tbl.ParseKey(s)
		fieldError(t, err, "path.id", "type")
	}
	if _, err := f.tbl.Get(ctx, f.db, "99", f.fields, false); !errors.Is(err, records.ErrNotFound) {
		t.Fatalf("get of a missing record: %v", err)
	}
	if _, err := f.tbl.Delete(ctx, f.db, "99", false); !errors.Is(err, records.ErrNotFound) {
		t.Fatalf("delete of a missing record: %v", err)
	}
}

func TestList(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.seed(t)
	used := map[string]bool{}
	filters := func(q string) []records.Filter {
		t.Helper()
		for _, m := range regexp.MustCompile(`\]\[(\w+)\]=`).FindAllStringSubmatch(q, -1) {
			used[m[1]] = true
		}
		v, err := url.ParseQuery(q)
		if err != nil {
			t.Fatal(err)
		}
		fs, err := f.tbl.ParseFilters(v)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		return fs
	}
	for _, tc := range []struct {
		name  string
		lq    records.ListQuery
		want  []string
		total int64
	}{
		{"default order: newest first", records.ListQuery{}, []string{"Eve", "Dee", "Cid", "Bob", "Ann"}, 5},
		{"by name", records.ListQuery{Sort: "name"}, []string{"Ann", "Bob", "Cid", "Dee", "Eve"}, 5},
		{"score descending, nulls first", records.ListQuery{Sort: "-score"}, []string{"Cid", "Ann", "Dee", "Bob", "Eve"}, 5},
		{"two keys", records.ListQuery{Sort: "status,-score"}, []string{"Cid", "Ann", "Eve", "Bob", "Dee"}, 5},
		{"second page", records.ListQuery{Sort: "name", Page: 2, Limit: 2}, []string{"Cid", "Dee"}, 5},
		{"past the end", records.ListQuery{Sort: "name", Page: 4, Limit: 2}, []string{}, 5},
		{"eq", records.ListQuery{Sort: "name", Filters: filters("filter[status]=active")}, []string{"Ann", "Cid", "Eve"}, 3},
		{"ne keeps nulls", records.ListQuery{Sort: "name", Filters: filters("filter[score][ne]=90")}, []string{"Bob", "Cid", "Dee", "Eve"}, 4},
		{"gt", records.ListQuery{Sort: "name", Filters: filters("filter[score][gt]=40")}, []string{"Ann", "Dee"}, 2},
		{"lt", records.ListQuery{Sort: "name", Filters: filters("filter[score][lt]=40")}, []string{"Eve"}, 1},
		{"eq spelled", records.ListQuery{Sort: "name", Filters: filters("filter[name][eq]=Bob")}, []string{"Bob"}, 1},
		{"like is case-sensitive", records.ListQuery{Sort: "name", Filters: filters("filter[name][like]=%25e")}, []string{"Dee", "Eve"}, 2},
		{"ilike", records.ListQuery{Sort: "name", Filters: filters("filter[name][ilike]=e%25")}, []string{"Eve"}, 1},
		{"lte on a date", records.ListQuery{Sort: "name", Filters: filters("filter[joined][lte]=2024-01-05")}, []string{"Ann", "Eve"}, 2},
		{"in", records.ListQuery{Sort: "name", Filters: filters("filter[status][in]=inactive,pending")}, []string{"Bob", "Dee"}, 2},
		{"nin keeps nulls", records.ListQuery{Sort: "name", Filters: filters("filter[score][nin]=90,40")}, []string{"Cid", "Dee", "Eve"}, 3},
		{"between", records.ListQuery{Sort: "name", Filters: filters("filter[score][between]=10,60")}, []string{"Bob", "Dee", "Eve"}, 3},
		{"is null", records.ListQuery{Sort: "name", Filters: filters("filter[score][is]=null")}, []string{"Cid"}, 1},
		{"contains text, any case", records.ListQuery{Sort: "name", Filters: filters("filter[email][contains]=E@EXAMPLE")}, []string{"Dee", "Eve"}, 2},
		{"startswith escapes wildcards", records.ListQuery{Filters: filters("filter[name][startswith]=_")}, []string{}, 0},
		{"endswith", records.ListQuery{Sort: "name", Filters: filters("filter[name][endswith]=e")}, []string{"Dee", "Eve"}, 2},
		{"contains in an array", records.ListQuery{Sort: "name", Filters: filters("filter[tags][contains]=vip")}, []string{"Ann", "Dee"}, 2},
		{"contains in JSON", records.ListQuery{Sort: "name", Filters: filters(`filter[meta][contains]={"city":"Oslo"}`)}, []string{"Ann", "Dee"}, 2},
		{"a path into JSON", records.ListQuery{Sort: "name", Filters: filters("filter[meta.city]=Rome")}, []string{"Bob"}, 1},
		{"filters combine", records.ListQuery{Sort: "name", Filters: filters("filter[status]=active&filter[score][gte]=10")}, []string{"Ann", "Eve"}, 2},
		{"search", records.ListQuery{Sort: "name", Search: "paris"}, []string{"Eve"}, 1},
		{"search in text", records.ListQuery{Sort: "name", Search: "bob"}, []string{"Bob"}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lq := tc.lq
			if lq.Limit == 0 {
				lq.Limit = 10
			}
			if lq.Page == 0 {
				lq.Page = 1
			}
			lq.Fields = f.fields
			p, err := f.tbl.List(context.Background(), f.db, lq)
			if err != nil {
				t.Fatal(err)
			}
			defer p.Release()
			if got := names(t, p.Rows); !slices.Equal(got, tc.want) || p.Total != tc.total || p.Estimated {
				t.Fatalf("rows %v total %d (estimated %v), want %v total %d", got, p.Total, p.Estimated, tc.want, tc.total)
			}
		})
	}

	// Every operator the descriptions list (records.FilterOperators) is exercised above.
	for _, op := range records.Operators {
		if !used[op] {
			t.Errorf("the operator %s is listed but not tested", op)
		}
	}

	// Only the fields asked for, even when the sort needs others.
	p, err := f.tbl.List(context.Background(), f.db, records.ListQuery{Page: 1, Limit: 1, Sort: "-score", Fields: []string{"name"}, Count: "exact"})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Rows) != 1 || fmt.Sprint(record(t, p.Rows[0])) != "map[name:Cid]" || p.Total != 5 || !slices.Equal(p.Sort, []string{"-score"}) {
		t.Fatalf("narrowed: %s, total %d, sort %v", p.Rows, p.Total, p.Sort)
	}
	// Soft-deleted records are not listed.
	if _, err := f.tbl.Delete(context.Background(), f.db, "1", true); err != nil {
		t.Fatal(err)
	}
	p, err = f.tbl.List(context.Background(), f.db, records.ListQuery{Page: 1, Limit: 10, Sort: "name", Fields: f.fields})
	if err != nil {
		t.Fatal(err)
	}
	if got := names(t, p.Rows); !slices.Equal(got, []string{"Bob", "Cid", "Dee", "Eve"}) || p.Total != 4 {
		t.Fatalf("after deleting Ann: %v total %d", got, p.Total)
	}
}

// Cursors walk a sorted list page by page, forwards and back, across NULLs.
func TestListCursors(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.seed(t)
	ctx := context.Background()
	list := func(cursor string) *records.Page {
		t.Helper()
		p, err := f.tbl.List(ctx, f.db, records.ListQuery{Page: 1, Limit: 2, Sort: "-score", Fields: f.fields, Cursor: cursor})
		if err != nil {
			t.Fatalf("cursor %q: %v", cursor, err)
		}
		return p
	}
	var pages [][]string
	var prevs []string
	p := list("")
	if p.Prev != "" {
		t.Fatal("the first page has a previous one")
	}
	for {
		pages = append(pages, names(t, p.Rows))
		prevs = append(prevs, p.Prev)
		if p.Next == "" {
			break
		}
		p = list(p.Next)
	}
	if fmt.Sprint(pages) != "[[Cid Ann] [Dee Bob] [Eve]]" {
		t.Fatalf("forwards: %v", pages)
	}
	// Back from the last page: the page before it, then the first.
	back := list(prevs[2])
	if got := names(t, back.Rows); !slices.Equal(got, []string{"Dee", "Bob"}) || back.Next == "" || back.Prev == "" {
		t.Fatalf("back from the last page: %v (next %q prev %q)", got, back.Next, back.Prev)
	}
	if first := list(back.Prev); !slices.Equal(names(t, first.Rows), []string{"Cid", "Ann"}) || first.Prev != "" {
		t.Fatalf("back to the first page: %v (prev %q)", names(t, first.Rows), first.Prev)
	}
	// A cursor is bound to its dataset and its sort.
	_, err := f.tbl.List(ctx, f.db, records.ListQuery{Page: 1, Limit: 2, Sort: "name", Fields: f.fields, Cursor: prevs[1]})
	fieldError(t, err, "query.cursor", "invalid_cursor")
	other := records.Cursor{Dataset: "ds_other", Sort: "-score"}.Encode()
	_, err = f.tbl.List(ctx, f.db, records.ListQuery{Page: 1, Limit: 2, Sort: "-score", Fields: f.fields, Cursor: other})
	fieldError(t, err, "query.cursor", "invalid_cursor")
	_, err = f.tbl.List(ctx, f.db, records.ListQuery{Page: 1, Limit: 2, Sort: "-score", Fields: f.fields, Cursor: "not a cursor"})
	fieldError(t, err, "query.cursor", "invalid_cursor")
}

// Requests naming what the table does not have, or asking what its fields cannot do, are
// refused with the parameter at fault.
func TestListRefused(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	for _, tc := range []struct {
		query, field, code string
	}{
		{"filter[nope]=1", "query.filter[nope]", "unknown_field"},
		{"filter[name][near]=x", "query.filter[name][near]", "invalid_operator"},
		{"filter=x", "query.filter", "invalid_filter"},
		{"filter[name.first]=x", "query.filter[name.first]", "invalid_filter"},
	} {
		v, _ := url.ParseQuery(tc.query)
		_, err := f.tbl.ParseFilters(v)
		fieldError(t, err, tc.field, tc.code)
	}
	for _, tc := range []struct {
		name  string
		lq    records.ListQuery
		field string
		code  string
	}{
		{"gt on an array", records.ListQuery{Filters: []records.Filter{{Field: "tags", Op: "gt", Value: "a"}}}, "query.filter[tags][gt]", "invalid_operator"},
		{"a word for an integer", records.ListQuery{Filters: []records.Filter{{Field: "score", Op: "gt", Value: "many"}}}, "query.filter[score][gt]", "invalid_value"},
		{"like on an integer", records.ListQuery{Filters: []records.Filter{{Field: "score", Op: "like", Value: "1%"}}}, "query.filter[score][like]", "invalid_operator"},
		{"is true on text", records.ListQuery{Filters: []records.Filter{{Field: "name", Op: "is", Value: "true"}}}, "query.filter[name][is]", "invalid_value"},
		{"between one value", records.ListQuery{Filters: []records.Filter{{Field: "score", Op: "between", Value: "1"}}}, "query.filter[score][between]", "invalid_value"},
		{"contains non-JSON in JSON", records.ListQuery{Filters: []records.Filter{{Field: "meta", Op: "contains", Value: "{"}}}, "query.filter[meta][contains]", "invalid_value"},
		{"sort by an unknown field", records.ListQuery{Sort: "nope"}, "query.sort", "unknown_field"},
		{"sort by an array", records.ListQuery{Sort: "tags"}, "query.sort", "not_sortable"},
		{"sort twice by a field", records.ListQuery{Sort: "name,-name"}, "query.sort", "duplicate"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.lq.Page, tc.lq.Limit, tc.lq.Fields = 1, 10, f.fields
			_, err := f.tbl.List(ctx, f.db, tc.lq)
			fieldError(t, err, tc.field, tc.code)
		})
	}
	_, err := f.tbl.Select("name,nope", "")
	fieldError(t, err, "query.fields", "unknown_field")
	// A narrowed selection is what was asked, in that order, each field once, after the key.
	sel, err := f.tbl.Select("email, name,email", "")
	if err != nil || !slices.Equal(sel, []string{"id", "email", "name"}) {
		t.Fatalf("select email,name: %v %v", sel, err)
	}
	if sel, err = f.tbl.Select("name,id", ""); err != nil || !slices.Equal(sel, []string{"name", "id"}) {
		t.Fatalf("select name,id: %v %v", sel, err)
	}
	_, err = f.tbl.Select("", "id,name")
	fieldError(t, err, "query.exclude", "key_required")
	sel, err = f.tbl.Select("", "tags,meta,name")
	if err != nil || slices.Contains(sel, "tags") || slices.Contains(sel, "meta") || slices.Contains(sel, "name") || !slices.Contains(sel, "id") {
		t.Fatalf("exclude: %v %v", sel, err)
	}
	sel, err = f.tbl.Select("name,email", "name")
	if err != nil || !slices.Equal(sel, []string{"id", "email"}) {
		t.Fatalf("fields minus exclude: %v %v", sel, err)
	}
	_, err = f.tbl.Select("name", "name")
	fieldError(t, err, "query.exclude", "nothing_selected")
}

func TestUpdateAndDeleteWhere(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.seed(t)
	ctx := context.Background()
	ids, err := f.tbl.UpdateWhere(ctx, f.db, records.Selector{Filters: []records.Filter{{Field: "status", Op: "eq", Value: "active"}}}, body(`{"score": 1}`))
	if err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(ids, func(a, b json.RawMessage) int { return strings.Compare(string(a), string(b)) })
	if fmt.Sprintf("%s", ids) != "[1 3 5]" {
		t.Fatalf("updated ids %s", ids)
	}
	var changed []string
	if err := f.db.Select(&changed, `SELECT name FROM `+f.tbl.Qualified()+` WHERE score = 1 AND version = 2 ORDER BY name`); err != nil ||
		!slices.Equal(changed, []string{"Ann", "Cid", "Eve"}) {
		t.Fatalf("rows updated: %v %v", changed, err)
	}
	// By ids and a filter together: both must hold.
	ids, err = f.tbl.DeleteWhere(ctx, f.db, records.Selector{IDs: []string{"1", "2", "3"}, Filters: []records.Filter{{Field: "score", Op: "eq", Value: "1"}}}, true)
	if err != nil || len(ids) != 2 {
		t.Fatalf("deleted %s, %v", ids, err)
	}
	p, err := f.tbl.List(ctx, f.db, records.ListQuery{Page: 1, Limit: 10, Sort: "name", Fields: f.fields})
	if err != nil || !slices.Equal(names(t, p.Rows), []string{"Bob", "Dee", "Eve"}) {
		t.Fatalf("left: %v %v", names(t, p.Rows), err)
	}
	_, err = f.tbl.UpdateWhere(ctx, f.db, records.Selector{}, body(`{"score": 2}`))
	fieldError(t, err, "ids", "required")
	_, err = f.tbl.UpdateWhere(ctx, f.db, records.Selector{IDs: []string{"2"}}, map[string]any{})
	fieldError(t, err, "data", "required")
	_, err = f.tbl.DeleteWhere(ctx, f.db, records.Selector{}, false)
	fieldError(t, err, "ids", "required")
}

func TestAggregate(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.seed(t)
	ctx := context.Background()
	a, err := f.tbl.Aggregate(ctx, f.db, records.AggregateQuery{GroupBy: "status", Agg: "count,sum(score),max(joined)", Sort: "-count", Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprintf("%s", a.Groups) != `[{"status":"active","count":3,"sum_score":100,"max_joined":"2024-01-05"} {"status":"inactive","count":1,"sum_score":40,"max_joined":"2024-02-10"} {"status":"pending","count":1,"sum_score":60,"max_joined":"2024-03-01"}]` {
		t.Fatalf("groups: %s", a.Groups)
	}
	if string(a.Totals) != `{"count":5,"sum_score":200,"max_joined":"2024-03-01"}` {
		t.Fatalf("totals: %s", a.Totals)
	}
	// Having and filters narrow the groups; the totals follow the filters only.
	a, err = f.tbl.Aggregate(ctx, f.db, records.AggregateQuery{GroupBy: "date_trunc(year, joined)", Agg: "count,avg(score)", Having: "count>1",
		Filters: []records.Filter{{Field: "score", Op: "gte", Value: "10"}}, Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Groups) != 1 || !strings.Contains(string(a.Groups[0]), `"count":3`) || !strings.Contains(string(a.Groups[0]), `"avg_score":63.333333`) ||
		!strings.Contains(string(a.Totals), `"count":4`) {
		t.Fatalf("having: %s totals %s", a.Groups, a.Totals)
	}
	for _, tc := range []struct{ aq records.AggregateQuery }{
		{records.AggregateQuery{GroupBy: "nope", Agg: "count"}},
		{records.AggregateQuery{Agg: "sum(name)"}},
		{records.AggregateQuery{Agg: "median(score)"}},
		{records.AggregateQuery{Agg: "count", Having: "sum_score>1"}},
		{records.AggregateQuery{GroupBy: "date_trunc(year, name)", Agg: "count"}},
	} {
		tc.aq.Limit = 10
		if _, err := f.tbl.Aggregate(ctx, f.db, tc.aq); !errors.As(err, new(*records.FieldError)) {
			t.Fatalf("%+v: %v, want a field error", tc.aq, err)
		}
	}
}

// TestAggregateTotals: the groups and the totals of an aggregate are those plain SQL computes
// apart, with few groups (read in one scan, with the totals) and with many (the totals read
// apart), with NULL group keys, soft-deleted rows, HAVING, a limit that cuts the groups, and
// filters that match nothing.
func TestAggregateTotals(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	f.db.SetMaxOpenConns(1) // one session, whose statistics are read below
	if _, err := f.db.Exec(`INSERT INTO ` + f.tbl.Qualified() + ` (name, email, score, status, joined, deleted_at)
		SELECT 'n' || (g % 97), 'e' || g || '@example.org', CASE WHEN g % 7 = 0 THEN NULL ELSE g % 50 END,
		  (ARRAY['pending', 'active', 'inactive'])[1 + g % 3], CASE WHEN g % 11 = 0 THEN NULL ELSE date '2021-01-01' + g % 400 END,
		  CASE WHEN g % 13 = 0 THEN now() END
		FROM generate_series(1, 12000) g; ANALYZE ` + f.tbl.Qualified()); err != nil {
		t.Fatal(err)
	}
	read := func() int64 { return f.rowsRead(t) }
	// rowsOf are the values of each row of query as text ("null" for NULL).
	rowsOf := func(query string) [][]string {
		t.Helper()
		rs, err := f.db.Query(query)
		if err != nil {
			t.Fatal(err)
		}
		defer rs.Close()
		cols, _ := rs.Columns()
		var out [][]string
		for rs.Next() {
			vals := make([]sql.NullString, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rs.Scan(ptrs...); err != nil {
				t.Fatal(err)
			}
			row := make([]string, len(cols))
			for i, v := range vals {
				row[i] = map[bool]string{true: v.String, false: "null"}[v.Valid]
			}
			out = append(out, row)
		}
		return out
	}
	// values are an answer object's values in the order of names, as text.
	values := func(j json.RawMessage, names []string) []string {
		t.Helper()
		dec := json.NewDecoder(strings.NewReader(string(j)))
		dec.UseNumber()
		var m map[string]any
		if err := dec.Decode(&m); err != nil || len(m) != len(names) {
			t.Fatalf("%s: %v, want the keys %v", j, err, names)
		}
		out := make([]string, len(names))
		for i, n := range names {
			v, ok := m[n]
			if !ok {
				t.Fatalf("%s has no %s", j, n)
			}
			out[i] = fmt.Sprint(v)
			if v == nil {
				out[i] = "null"
			}
		}
		return out
	}
	tbl := f.tbl.Qualified()
	for _, c := range []struct {
		name          string
		aq            records.AggregateQuery
		groups, aggs  []string // the answer's keys
		want, wantTot string   // the same by plain SQL
	}{
		{"few groups", records.AggregateQuery{GroupBy: "status", Agg: "count,sum(score),max(joined)", Sort: "-count", Limit: 10},
			[]string{"status"}, []string{"count", "sum_score", "max_joined"},
			`SELECT status, count(*), sum(score), max(joined)::text FROM ` + tbl + ` WHERE deleted_at IS NULL GROUP BY 1 ORDER BY 2 DESC, 1 LIMIT 10`,
			`SELECT count(*), sum(score), max(joined)::text FROM ` + tbl + ` WHERE deleted_at IS NULL`},
		{"months, NULL among them, having, cut", records.AggregateQuery{GroupBy: "date_trunc(month, joined)", Agg: "count,avg(score),min(name)", Having: "count>100",
			Filters: []records.Filter{{Field: "score", Op: "gte", Value: "10"}}, Sort: "-count", Limit: 4},
			[]string{"joined_month"}, []string{"count", "avg_score", "min_name"},
			`SELECT to_char(date_trunc('month', joined::timestamp), 'YYYY-MM-DD"T"HH24:MI:SS"Z"'), count(*), round(avg(score), 6), min(name) FROM ` + tbl + ` WHERE deleted_at IS NULL AND score >= 10
				GROUP BY 1 HAVING count(*) > 100 ORDER BY 2 DESC NULLS LAST, 1 LIMIT 4`,
			`SELECT count(*), round(avg(score), 6), min(name) FROM ` + tbl + ` WHERE deleted_at IS NULL AND score >= 10`},
		{"two keys, the smallest groups", records.AggregateQuery{GroupBy: "status,score", Agg: "count", Sort: "count", Limit: 7},
			[]string{"status", "score"}, []string{"count"},
			`SELECT status, score, count(*) FROM ` + tbl + ` WHERE deleted_at IS NULL GROUP BY 1, 2 ORDER BY 3, 1, 2 LIMIT 7`,
			`SELECT count(*) FROM ` + tbl + ` WHERE deleted_at IS NULL`},
		{"nothing matches", records.AggregateQuery{GroupBy: "status", Agg: "count,sum(score)", Filters: []records.Filter{{Field: "score", Op: "gt", Value: "1000"}}, Limit: 10},
			[]string{"status"}, []string{"count", "sum_score"},
			`SELECT status, count(*), sum(score) FROM ` + tbl + ` WHERE deleted_at IS NULL AND score > 1000 GROUP BY 1 ORDER BY 1 LIMIT 10`,
			`SELECT count(*), sum(score) FROM ` + tbl + ` WHERE deleted_at IS NULL AND score > 1000`},
		{"many groups", records.AggregateQuery{GroupBy: "email", Agg: "count,max(score)", Sort: "-max_score", Limit: 5},
			[]string{"email"}, []string{"count", "max_score"},
			`SELECT email, count(*), max(score) FROM ` + tbl + ` WHERE deleted_at IS NULL GROUP BY 1 ORDER BY 3 DESC NULLS LAST, 1 LIMIT 5`,
			`SELECT count(*), max(score) FROM ` + tbl + ` WHERE deleted_at IS NULL`},
	} {
		before := read()
		a, err := f.tbl.Aggregate(ctx, f.db, c.aq)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		n := read() - before
		var got [][]string
		for _, g := range a.Groups {
			got = append(got, values(g, append(slices.Clone(c.groups), c.aggs...)))
		}
		if want := rowsOf(c.want); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s: groups\n %v\nwant\n %v", c.name, got, want)
		}
		if got, want := values(a.Totals, c.aggs), rowsOf(c.wantTot)[0]; fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s: totals %v, want %v", c.name, got, want)
		}
		if c.name == "few groups" && n != 12000 {
			t.Errorf("%s: read %d rows of 12,000 for groups and totals", c.name, n)
		}
	}
}

// TestAggregateManyKeys: grouped by more fields than GROUPING() takes (31), or by a field
// named as the one scan's totals mark, an aggregate reads its totals apart rather than fail.
func TestAggregateManyKeys(t *testing.T) {
	t.Parallel()
	var cols []ingest.Column
	var names []string
	for i := 0; i < 33; i++ {
		cols = append(cols, ingest.Column{Name: fmt.Sprintf("c%02d", i), Type: ingest.Integer, Nullable: true})
		names = append(names, fmt.Sprintf("c%02d", i))
	}
	db, tbl := datasetTable(t, cols, false)
	if _, err := db.Exec(`INSERT INTO ` + tbl.Qualified() + ` (` + strings.Join(names, ", ") + `)
		SELECT ` + strings.Repeat("g % 2, ", 32) + `g FROM generate_series(1, 10) g`); err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{31, 32} {
		a, err := tbl.Aggregate(context.Background(), db, records.AggregateQuery{GroupBy: strings.Join(names[:n], ","), Agg: "count,sum(c32)", Limit: 10})
		if err != nil {
			t.Fatalf("%d keys: %v", n, err)
		}
		if len(a.Groups) != 2 || string(a.Totals) != `{"count":10,"sum_c32":55}` {
			t.Fatalf("%d keys: groups %s, totals %s", n, a.Groups, a.Totals)
		}
	}

	// A field named as the one scan's totals mark (a connected table may name a column so):
	// the totals are read apart, and the answer is the same.
	db, tbl = datasetTable(t, []ingest.Column{{Name: "grouping()", Type: ingest.Integer, Nullable: true}, {Name: "v", Type: ingest.Integer}}, false)
	if _, err := db.Exec(`INSERT INTO ` + tbl.Qualified() + ` ("grouping()", v) SELECT g % 3, g FROM generate_series(1, 9) g`); err != nil {
		t.Fatal(err)
	}
	a, err := tbl.Aggregate(context.Background(), db, records.AggregateQuery{GroupBy: "grouping()", Agg: "count,sum(v)", Limit: 10})
	if err != nil {
		t.Fatalf("grouped by a field named grouping(): %v", err)
	}
	if got := fmt.Sprintf("%s %s", a.Groups, a.Totals); got != `[{"grouping()":0,"count":3,"sum_v":18} {"grouping()":1,"count":3,"sum_v":12} {"grouping()":2,"count":3,"sum_v":15}] {"count":9,"sum_v":45}` {
		t.Fatalf("grouped by a field named grouping(): %s", got)
	}
}

// User SQL runs under the organization's query role: it reads live rows of its own schema,
// cannot write, and stops at its timeout and row limit.

// A record reads the same on every path and whatever the session's time zone: the list (with
// and without a sort key outside fields) and the single read give the same bytes, fields in
// the order asked; numbers keep their text, times are RFC 3339 UTC; a csv export writes the
// text of each JSON value, a json export the record.
func TestOneFormat(t *testing.T) {
	t.Parallel()
	cols := []ingest.Column{
		{Name: "amount", Type: ingest.Numeric, Nullable: true},
		{Name: "big", Type: ingest.BigInt, Nullable: true},
		{Name: "ok", Type: ingest.Boolean, Nullable: true},
		{Name: "day", Type: ingest.Date, Nullable: true},
		{Name: "at", Type: ingest.Timestamptz, Nullable: true},
		{Name: "meta", Type: ingest.JSONB, Nullable: true},
		{Name: "tags", Type: ingest.TextArray, Nullable: true},
		{Name: "note", Type: ingest.Text, Nullable: true},
		{Name: "times", Type: ingest.ArrayOf(ingest.Timestamptz), Nullable: true}, // as a connected table may have
	}
	db, tbl := datasetTable(t, cols, true)
	ctx := context.Background()
	conn, err := db.Connx(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, `SET TimeZone = 'Asia/Kolkata'`); err != nil { // +05:30
		t.Fatal(err)
	}
	fields := []string{"amount", "big", "ok", "day", "at", "meta", "tags", "note", "times"}
	ins, err := tbl.Insert(ctx, conn, body(`{"amount": 4412.80, "big": 9007199254740993, "ok": true, "day": "2024-05-06",
		"at": "2024-05-06T19:30:00.25+02:00", "meta": {"b": 1, "a": [1, 2.50]}, "tags": ["x", "y,z"], "note": null, "times": ["2024-05-06T23:00:00+05:30", null]}`), fields)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"amount":4412.80,"big":9007199254740993,"ok":true,"day":"2024-05-06","at":"2024-05-06T17:30:00.25Z",` +
		`"meta":{"a": [1, 2.50], "b": 1},"tags":["x","y,z"],"note":null,"times":["2024-05-06T17:30:00Z",null]}`
	if string(ins) != want {
		t.Fatalf("insert answered\n%s\nwant\n%s", ins, want)
	}
	asked := []string{"tags", "at", "amount", "meta"}
	for _, fs := range [][]string{fields, asked} {
		one, err := tbl.Get(ctx, conn, "1", fs, false)
		if err != nil {
			t.Fatal(err)
		}
		for _, sort := range []string{"", "-day", "note,-ok"} {
			pg, err := tbl.List(ctx, conn, records.ListQuery{Page: 1, Limit: 10, Sort: sort, Fields: fs})
			if err != nil {
				t.Fatal(err)
			}
			if len(pg.Rows) != 1 || string(pg.Rows[0]) != string(one) {
				t.Fatalf("fields %v, sort %q: the list gives\n%s\nthe read\n%s", fs, sort, pg.Rows, one)
			}
		}
		if len(fs) == len(fields) && string(one) != want {
			t.Fatalf("read\n%s\nwant\n%s", one, want)
		}
		if len(fs) == len(asked) && string(one) != `{"tags":["x","y,z"],"at":"2024-05-06T17:30:00.25Z","amount":4412.80,"meta":{"a": [1, 2.50], "b": 1}}` {
			t.Fatalf("read with fields %v: %s", fs, one)
		}
	}
	for format, want := range map[string]string{
		"csv": "amount,big,ok,day,at,meta,tags,note,times\n" +
			`4412.80,9007199254740993,true,2024-05-06,2024-05-06T17:30:00.25Z,"{""a"": [1, 2.50], ""b"": 1}","[""x"",""y,z""]",,"[""2024-05-06T17:30:00Z"",null]"` + "\n",
		"ndjson": want + "\n",
	} {
		x, err := tbl.OpenExport(ctx, conn, &records.ExportQuery{Format: format, Fields: fields, Delimiter: ",", Header: true})
		if err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		if err := x.Write(&b); err != nil {
			t.Fatal(err)
		}
		x.Close()
		if b.String() != want {
			t.Fatalf("%s export:\n%s\nwant\n%s", format, b.String(), want)
		}
	}
}

// TestPagePlannedOnce: a first page, or a page after a cursor, of a list whose plan does not
// depend on its values (no filter) is run on a generic plan once PostgreSQL has tried a few:
// planning it on every request cost about as much as running it. A filtered page is planned
// for its values every time (a rare value's best plan is not a common one's).
func TestPagePlannedOnce(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	f.db.SetMaxOpenConns(1) // one session, whose prepared statements are asked about below
	if _, err := f.db.Exec(`INSERT INTO ` + f.tbl.Qualified() + ` (name, email, score)
		SELECT 'n' || g, 'e' || g || '@example.com', g % 1000 FROM generate_series(1, 20000) g`); err != nil {
		t.Fatal(err)
	}
	if _, err := f.db.Exec(`CREATE INDEX ON ` + f.tbl.Qualified() + ` (score); ANALYZE ` + f.tbl.Qualified()); err != nil {
		t.Fatal(err)
	}
	q := (&store.Store{}).Preparing(f.db)
	var cursor string
	for i := range 12 {
		p, err := f.tbl.List(ctx, q, records.ListQuery{Page: 1, Limit: 20, Sort: "-score", Fields: f.fields, Count: "planned"})
		if err != nil || len(p.Rows) != 20 {
			t.Fatalf("page %d: %v", i, err)
		}
		if p, err = f.tbl.List(ctx, q, records.ListQuery{Limit: 20, Sort: "-score", Fields: f.fields, Count: "planned", Cursor: p.Next}); err != nil || len(p.Rows) != 20 {
			t.Fatalf("page after a cursor %d: %v", i, err)
		}
		cursor = p.Next
		if _, err := f.tbl.List(ctx, q, records.ListQuery{Page: 1, Limit: 20, Sort: "-score", Fields: f.fields, Count: "planned",
			Filters: []records.Filter{{Field: "score", Op: "gte", Value: fmt.Sprint(i * 80)}}}); err != nil {
			t.Fatalf("filtered page %d: %v", i, err)
		}
	}
	if cursor == "" {
		t.Fatal("no next cursor")
	}
	rows, err := f.db.Query(`SELECT statement, generic_plans, custom_plans FROM pg_prepared_statements WHERE statement LIKE '%to_json(x)%'`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		var st string
		var generic, custom int
		if err := rows.Scan(&st, &generic, &custom); err != nil {
			t.Fatal(err)
		}
		n++
		if filtered := strings.Contains(st, `"score" >= $`); filtered && generic > 0 || !filtered && (generic < 5 || custom > 5) {
			t.Errorf("planned %d times for its values, %d on the generic plan: %.300s", custom, generic, st)
		}
	}
	if n != 3 {
		t.Fatalf("%d page statements prepared, want 3 (first page, after a cursor, filtered)", n)
	}
}

// TestCursorWalks: walking every page of a list by its cursors, forwards and back, gives the
// rows in the order worked out here independently (NULLs last ascending, first descending,
// then the key, the way of the last field), for sorts ascending and descending, on columns
// with NULLs and without, and on two keys; and a page far into a sort on an indexed column reads a page's worth of rows,
// not every row before it (nor, ascending on a column with NULLs, every NULL after it, nor,
// amid many rows of one value, every row of that value, either way).
func TestCursorWalks(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	f.db.SetMaxOpenConns(1) // one session, whose statistics are read below
	if _, err := f.db.Exec(`INSERT INTO ` + f.tbl.Qualified() + ` (name, email, score, joined)
		SELECT 'n' || (g * 7919 % 37), 'e' || g || '@example.com', CASE WHEN g % 5 = 0 THEN NULL ELSE g * 31 % 11 END,
		  CASE WHEN g % 7 = 0 THEN NULL ELSE date '2020-01-01' + g * 17 % 13 END
		FROM generate_series(1, 240) g`); err != nil {
		t.Fatal(err)
	}
	type row struct {
		id     int64
		name   string
		score  *int64
		joined *string
	}
	var all []row
	rs, err := f.db.Query(`SELECT id, name, score, joined::text FROM ` + f.tbl.Qualified())
	if err != nil {
		t.Fatal(err)
	}
	for rs.Next() {
		var r row
		if err := rs.Scan(&r.id, &r.name, &r.score, &r.joined); err != nil {
			t.Fatal(err)
		}
		all = append(all, r)
	}
	rs.Close()
	// cmpNull orders a and b (nil: NULL) ascending with NULLs last; desc reverses all of it.
	cmpNull := func(a, b *string, desc bool) int {
		c := 0
		switch {
		case a == nil && b == nil:
		case a == nil:
			c = 1
		case b == nil:
			c = -1
		default:
			c = strings.Compare(*a, *b)
		}
		if desc {
			c = -c
		}
		return c
	}
	num := func(p *int64) *string {
		if p == nil {
			return nil
		}
		s := fmt.Sprintf("%020d", *p)
		return &s
	}
	key := map[string]func(r row) *string{
		"name": func(r row) *string { return &r.name }, "score": func(r row) *string { return num(r.score) },
		"joined": func(r row) *string { return r.joined },
		"id":     func(r row) *string { return num(&r.id) },
	}
	for _, sort := range []string{"score", "-score", "name", "-name", "joined,-score", "-joined,name", "-score,-id", "score,-id"} {
		want := slices.Clone(all)
		slices.SortFunc(want, func(a, b row) int {
			for _, k := range strings.Split(sort, ",") {
				desc := strings.HasPrefix(k, "-")
				if c := cmpNull(key[strings.TrimPrefix(k, "-")](a), key[strings.TrimPrefix(k, "-")](b), desc); c != 0 {
					return c
				}
			}
			if strings.HasPrefix(sort[strings.LastIndex(sort, ",")+1:], "-") { // the key goes the way of the last field
				return int(b.id - a.id)
			}
			return int(a.id - b.id)
		})
		var wantIDs, fwd, back []int64
		for _, r := range want {
			wantIDs = append(wantIDs, r.id)
		}
		ids := func(p *records.Page) []int64 {
			var out []int64
			for _, r := range p.Rows {
				out = append(out, int64(record(t, r)["id"].(float64)))
			}
			return out
		}
		lq := records.ListQuery{Page: 1, Limit: 7, Sort: sort, Fields: f.fields, Count: "planned"}
		p, err := f.tbl.List(ctx, f.db, lq)
		for err == nil {
			fwd = append(fwd, ids(p)...)
			if p.Next == "" {
				break
			}
			lq.Cursor = p.Next
			p, err = f.tbl.List(ctx, f.db, lq)
		}
		for err == nil { // from the last page back to the first
			back = append(ids(p), back...)
			if p.Prev == "" {
				break
			}
			lq.Cursor = p.Prev
			p, err = f.tbl.List(ctx, f.db, lq)
		}
		if err != nil {
			t.Fatalf("sort %s: %v", sort, err)
		}
		if !slices.Equal(fwd, wantIDs) || !slices.Equal(back, wantIDs) {
			t.Errorf("sort %s:\n forwards %v\n back     %v\n want     %v", sort, fwd, back, wantIDs)
		}
	}

	// A page far into a sort on an indexed column, each way.
	if _, err := f.db.Exec(`INSERT INTO ` + f.tbl.Qualified() + ` (name, email, score)
		SELECT 'm' || g, 'm' || g || '@example.com', CASE WHEN g % 10 = 0 THEN NULL WHEN g % 10 = 1 THEN 2600 ELSE g % 5000 END FROM generate_series(1, 50000) g`); err != nil {
		t.Fatal(err)
	}
	// The indexes an uploaded dataset's columns get: the column, then the key.
	if _, err := f.db.Exec(`CREATE INDEX ON ` + f.tbl.Qualified() + ` (score, id); CREATE INDEX ON ` + f.tbl.Qualified() + ` (name, id); ANALYZE ` + f.tbl.Qualified()); err != nil {
		t.Fatal(err)
	}
	read := func() int64 { return f.rowsRead(t) }
	// order is each sort's ORDER BY, to find the rows after the cursor apart from List.
	for _, c := range []struct {
		sort, order string
		near        records.Filter
		also        []records.Filter // more filters to find the cursor's row by
	}{
		{"-score", "score DESC NULLS FIRST, id DESC", records.Filter{Field: "score", Op: "eq", Value: "3"}, nil},
		{"name", "name, id", records.Filter{Field: "name", Op: "gte", Value: "m9998"}, nil},
		// ascending on a column with NULLs: amid the values, and across into the NULLs
		{"score", "score ASC NULLS LAST, id", records.Filter{Field: "score", Op: "eq", Value: "2502"}, nil},
		{"score", "score ASC NULLS LAST, id", records.Filter{Field: "score", Op: "eq", Value: "4999"}, nil},
		// amid 5,000 rows of one value: the index of the value and the key starts at the cursor
		{"score", "score ASC NULLS LAST, id", records.Filter{Field: "score", Op: "eq", Value: "2600"}, []records.Filter{{Field: "id", Op: "gte", Value: "30000"}}},
		{"-score,-id", "score DESC NULLS FIRST, id DESC", records.Filter{Field: "score", Op: "eq", Value: "2600"}, []records.Filter{{Field: "id", Op: "lte", Value: "30000"}}},
		// descending, the key unnamed: it goes the way of the field, as the index is read backwards
		{"-score", "score DESC NULLS FIRST, id DESC", records.Filter{Field: "score", Op: "eq", Value: "2600"}, []records.Filter{{Field: "id", Op: "lte", Value: "30000"}}},
		{"-name", "name DESC NULLS FIRST, id DESC", records.Filter{Field: "name", Op: "lte", Value: "m5"}, nil},
	} {
		lq := records.ListQuery{Page: 1, Limit: 1, Sort: c.sort, Fields: f.fields, Filters: append([]records.Filter{c.near}, c.also...), Count: "planned"}
		p, err := f.tbl.List(ctx, f.db, lq)
		if err != nil || p.Next == "" {
			t.Fatalf("%s: %v", c.sort, err)
		}
		var want []int64
		if err := f.db.Select(&want, `SELECT id FROM (SELECT id, row_number() OVER (ORDER BY `+c.order+`) n FROM `+f.tbl.Qualified()+`) o
			WHERE n > (SELECT n FROM (SELECT id, row_number() OVER (ORDER BY `+c.order+`) n FROM `+f.tbl.Qualified()+`) s WHERE id = $1)
			ORDER BY n LIMIT 20`, int64(record(t, p.Rows[0])["id"].(float64))); err != nil {
			t.Fatal(err)
		}
		lq.Filters, lq.Limit, lq.Cursor = nil, 20, p.Next
		before := read()
		if p, err = f.tbl.List(ctx, f.db, lq); err != nil {
			t.Fatalf("%s, after the cursor: %v", c.sort, err)
		}
		if n := read() - before; n > 1000 {
			t.Errorf("sort %s near %s: a page far into the order read %d rows", c.sort, c.near.Value, n)
		}
		var got []int64
		for _, r := range p.Rows {
			got = append(got, int64(record(t, r)["id"].(float64)))
		}
		if !slices.Equal(got, want) {
			t.Errorf("sort %s near %s: page %v, want %v", c.sort, c.near.Value, got, want)
		}
	}

	// The first page of a descending sort starts at its 5,000 NULLs: it reads a page of them.
	var want []int64
	if err := f.db.Select(&want, `SELECT id FROM `+f.tbl.Qualified()+` ORDER BY score DESC NULLS FIRST, id DESC LIMIT 20`); err != nil {
		t.Fatal(err)
	}
	before := read()
	p, err := f.tbl.List(ctx, f.db, records.ListQuery{Page: 1, Limit: 20, Sort: "-score", Fields: f.fields, Count: "planned"})
	if err != nil {
		t.Fatal(err)
	}
	if n := read() - before; n > 1000 {
		t.Errorf("sort -score: the first page read %d rows", n)
	}
	var got []int64
	for _, r := range p.Rows {
		got = append(got, int64(record(t, r)["id"].(float64)))
	}
	if !slices.Equal(got, want) {
		t.Errorf("sort -score, first page: %v, want %v", got, want)
	}
}
