package records_test

import (
	"context"
	"math"
	"strings"
	"testing"

	"dataplatform/store/ingest"
	"dataplatform/store/records"
)

// An export read with COPY ... TO STDOUT (a large one) is byte for byte the file the SELECT
// path writes, in every format COPY serves, with every delimiter, with and without a header,
// for values that need quoting (delimiters, quotes, line breaks, the empty string against
// NULL) and values that look like COPY's own markers (\. and \N); the exports COPY cannot
// write as the SELECT path does (formulas escaped, a single field, filters with values) are
// read by the SELECT.
func TestExportCopyOut(t *testing.T) {
	cols := []ingest.Column{
		{Name: "amount", Type: ingest.Numeric, Nullable: true},
		{Name: "big", Type: ingest.BigInt, Nullable: true},
		{Name: "ok", Type: ingest.Boolean, Nullable: true},
		{Name: "day", Type: ingest.Date, Nullable: true},
		{Name: "at", Type: ingest.Timestamptz, Nullable: true},
		{Name: "meta", Type: ingest.JSONB, Nullable: true},
		{Name: "tags", Type: ingest.TextArray, Nullable: true},
		{Name: "note", Type: ingest.Text, Nullable: true},
		{Name: "other", Type: ingest.Text, Nullable: true},
		{Name: "times", Type: ingest.ArrayOf(ingest.Timestamptz), Nullable: true},
		{Name: "ref", Type: ingest.UUID, Nullable: true},
		{Name: "n", Type: ingest.Integer, Nullable: true},
	}
	db, tbl := datasetTable(t, cols, true)
	ctx := context.Background()
	notes := []string{"", `a,b`, `say "hi"`, "line\nbreak", "cr\rx", `\.`, `\N`, `=1+1`, "-2", "tab\tx", "semi;colon", "pipe|x",
		"ü€😀", " spaced ", `back\slash`, `{"j": 1}`, "\\", `"`, ","}
	table := tbl.Qualified()
	for i, n := range notes {
		if _, err := db.ExecContext(ctx, `INSERT INTO `+table+` (amount, big, ok, day, at, meta, tags, note, other, times, ref, n)
			VALUES ($1::numeric * 1.5, $1::bigint * 9007199254740993, $1::int % 2 = 0, DATE '2024-05-06' + $1::int, TIMESTAMPTZ '2024-05-06T19:30:00.25+02:00' + $1::int * interval '1 hour',
			jsonb_build_object('n', $2::text, 'i', $1::int), ARRAY[$2::text, 'x,y'], $2::text, $3, ARRAY[TIMESTAMPTZ '2024-05-06T23:00:00+05:30', NULL],
			md5($2::text)::uuid, -$1::int)`,
			i, n, notes[len(notes)-1-i]); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := db.ExecContext(ctx, `INSERT INTO `+table+` (note, at) VALUES (NULL, 'infinity'), (NULL, '-infinity')`); err != nil {
		t.Fatal(err)
	}
	export := func(eq records.ExportQuery, copyMin int64) (string, bool) {
		t.Helper()
		records.CopyMinRows = copyMin
		defer func() { records.CopyMinRows = 10_000 }()
		x, err := tbl.OpenExport(ctx, db, &eq)
		if err != nil {
			t.Fatal(err)
		}
		defer x.Close()
		var b strings.Builder
		if err := x.Write(&b); err != nil {
			t.Fatalf("%+v: %v", eq, err)
		}
		return b.String(), records.Copied(x)
	}
	all := tbl.Fields()
	for _, format := range []string{"csv", "json", "ndjson"} {
		for _, delim := range records.Delimiters {
			for _, header := range []bool{true, false} {
				for _, fields := range [][]string{all, {"note", "other"}, {"note"}} {
					for _, escape := range []bool{false, true} {
						eq := records.ExportQuery{Format: format, Fields: fields, Delimiter: delim, Header: header, Escape: escape}
						want, copied := export(eq, math.MaxInt64)
						if copied {
							t.Fatal("a small export was read with COPY")
						}
						got, copied := export(eq, 0)
						if wantCopy := format != "csv" || !escape && len(fields) > 1; copied != wantCopy {
							t.Fatalf("%s %q fields %v escape %v: read with COPY %v", format, delim, fields, escape, copied)
						}
						if got != want {
							t.Fatalf("%s %q header %v fields %v: COPY wrote\n%q\nthe SELECT\n%q", format, delim, header, fields, got, want)
						}
					}
				}
			}
		}
	}
	// A filter's value is a bound parameter, which COPY does not take: the SELECT reads it.
	filters, err := tbl.ParseFilters(map[string][]string{"filter[note]": {"a,b"}})
	if err != nil {
		t.Fatal(err)
	}
	got, copied := export(records.ExportQuery{Format: "csv", Fields: all, Filters: filters, Delimiter: ",", Header: true}, 0)
	if copied || strings.Count(got, "\n") != 2 {
		t.Fatalf("filtered export (COPY %v):\n%s", copied, got)
	}
}
