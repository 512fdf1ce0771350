package records_test

import (
	"bytes"
	"cmp"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"

	"dataplatform/store/ingest"
	"dataplatform/store/records"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
)

// fuzzColumns have one column of every type a filter, sort or cursor value is checked
// against.
var fuzzColumns = []ingest.Column{
	{Name: "name", Type: ingest.Text},
	{Name: "score", Type: ingest.Integer, Nullable: true},
	{Name: "big", Type: ingest.BigInt, Nullable: true},
	{Name: "amount", Type: ingest.Numeric, Nullable: true},
	{Name: "vip", Type: ingest.Boolean, Nullable: true},
	{Name: "joined", Type: ingest.Date, Nullable: true},
	{Name: "seen", Type: ingest.Timestamptz, Nullable: true},
	{Name: "ref", Type: ingest.UUID, Nullable: true},
	{Name: "tags", Type: ingest.TextArray, Nullable: true},
	{Name: "nums", Type: ingest.BigIntArray, Nullable: true},
	{Name: "meta", Type: ingest.JSONB, Nullable: true},
}

var fuzzRows = decode(`[
	{"name": "Ann", "score": 90, "big": 9000000000, "amount": 12.5, "vip": true, "joined": "2024-01-05", "seen": "2024-01-05T10:00:00Z",
	 "ref": "123e4567-e89b-12d3-a456-426614174000", "tags": ["vip", "north"], "nums": [1, 2], "meta": {"city": "Oslo", "a": {"b": 1}}},
	{"name": "Bob", "score": 40, "amount": -3, "vip": false, "joined": "2024-02-29", "tags": ["south"], "meta": {"city": "Rome"}},
	{"name": "Cid", "meta": "[\"a JSON string, not an array\"]"},
	{"name": "Dag", "meta": "Oslo"},
	{"name": "dee_%\\", "score": -2147483648, "big": -9223372036854775808, "amount": 1e-7, "seen": "1999-12-31T23:59:59.999999+14:00", "tags": [], "meta": []}
]`)

// fuzzTable is a dataset table of its own database, made as an upload makes it, holding
// fuzzRows.
func fuzzTable(tb testing.TB) (*sqlx.DB, *records.Table) {
	ctx := context.Background()
	db, tbl := datasetTable(tb, fuzzColumns, false)
	for _, r := range fuzzRows {
		rec, err := tbl.Insert(ctx, db, r, tbl.Fields())
		if err != nil {
			tb.Fatalf("insert %v: %v", r, err)
		}
		// A string in a jsonb field is a JSON string, not JSON text to parse.
		var got struct{ Meta any }
		if s, ok := r["meta"].(string); ok && (json.Unmarshal(rec, &got) != nil || got.Meta != s) {
			tb.Fatalf("jsonb string %q stored as %s", s, rec)
		}
	}
	return db, tbl
}

// FuzzListQuery reads a list request's query string (filter[...], sort, fields, exclude,
// search, page, limit, count) and a cursor (its JSON; @ds stands for the dataset's id, so
// that mutations keep it) the way the list handler does, then lists against PostgreSQL.
// Invariants: every refusal is a *records.FieldError (a request never gets PostgreSQL to
// fail: that would be a 500); parsed filters rendered back into a query string parse to
// the same filters; a Next or Prev cursor the list hands out lists again.
func FuzzListQuery(f *testing.F) {
	for _, s := range []struct{ q, cursor string }{
		{"filter[name]=Ann", ""},
		{"filter[score][gte]=40&filter[score][lt]=100&sort=-score,name&limit=2", ""},
		{"filter[tags][contains]=vip&fields=name,tags&exclude=tags", ""},
		{"filter[meta.city][in]=Oslo,Rome&filter[meta][contains]={\"a\":{\"b\":1}}", ""},
		{"filter[seen][between]=2024-01-01T00:00:00Z,2024-12-31&filter[vip][is]=true", ""},
		{"filter[amount][nin]=1.5,-3,NaN&filter[ref][ne]=123e4567-e89b-12d3-a456-426614174000", ""},
		{"filter[name][startswith]=de_%25&search=ann%20OR%20-bob&count=exact", ""},
		{"sort=joined&limit=1", `{"d":"@ds","s":"joined","v":["2024-01-05",1]}`},
		{"sort=-seen,big&limit=1", `{"d":"@ds","s":"-seen,big","v":[null,null,3],"b":true}`},
		{"limit=2", `{"d":"@ds","s":"-created_at,id","v":["2024-06-01T00:00:00Z",2]}`},
		{"sort=amount", `{"d":"@ds","s":"amount","v":[1e400,1]}`},
	} {
		f.Add(s.q, []byte(s.cursor))
	}
	db, tbl := fuzzTable(f)
	ctx := context.Background()
	f.Fuzz(func(t *testing.T, query string, cursor []byte) {
		if len(query) > 4096 || len(cursor) > 4096 {
			t.Skip()
		}
		q, _ := url.ParseQuery(query) // what ParseQuery could read, as echo does
		fields, err := tbl.Select(q.Get("fields"), q.Get("exclude"))
		if err != nil {
			fieldErr(t, err)
			return
		}
		filters, err := tbl.ParseFilters(q)
		if err != nil {
			fieldErr(t, err)
			return
		}
		again := url.Values{}
		for _, fl := range filters {
			again.Add("filter["+fl.Field+"]["+fl.Op+"]", fl.Value)
		}
		filters2, err := tbl.ParseFilters(again)
		if err != nil || !slices.Equal(sortedFilters(filters), sortedFilters(filters2)) {
			t.Fatalf("filters %v rendered as %q parse to %v, %v", filters, again.Encode(), filters2, err)
		}
		page, limit := 1, 20
		if v := q.Get("page"); v != "" {
			page, _ = strconv.Atoi(v)
		}
		if v := q.Get("limit"); v != "" {
			limit, _ = strconv.Atoi(v)
		}
		// The description bounds page and limit; kin-openapi refuses the rest before the list.
		page, limit = max(1, min(page, 1000)), max(1, min(limit, 100))
		lq := records.ListQuery{Page: page, Limit: limit, Sort: q.Get("sort"), Fields: fields, Search: q.Get("search"),
			Filters: filters, Count: q.Get("count")}
		if len(cursor) > 0 {
			lq.Cursor = base64.RawURLEncoding.EncodeToString(bytes.ReplaceAll(cursor, []byte("@ds"), []byte(tbl.Name)))
		}
		pg, err := tbl.List(ctx, db, lq)
		if err != nil {
			fieldErr(t, err)
			return
		}
		defer pg.Release()
		for _, c := range []string{pg.Next, pg.Prev} {
			if c == "" {
				continue
			}
			lq.Cursor = c
			p2, err := tbl.List(ctx, db, lq)
			if err != nil {
				t.Fatalf("the cursor %q the list gave does not list: %v", c, err)
			}
			p2.Release()
		}
	})
}

// fieldErr fails the test unless err is the caller's fault, said as a *records.FieldError.
func fieldErr(t *testing.T, err error) {
	t.Helper()
	var fe *records.FieldError
	if !errors.As(err, &fe) {
		var pe *pq.Error
		if errors.As(err, &pe) {
			t.Fatalf("PostgreSQL refused the list (a 500): %v (%s, %s)", err, pe.Code, pe.Where)
		}
		t.Fatalf("not a field error: %v (%T)", err, err)
	}
}

func sortedFilters(fs []records.Filter) []records.Filter {
	return slices.SortedFunc(slices.Values(fs), func(a, b records.Filter) int {
		return cmp.Or(strings.Compare(a.Field, b.Field), strings.Compare(a.Op, b.Op), strings.Compare(a.Value, b.Value))
	})
}
