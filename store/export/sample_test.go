package export

// The sample rows TestGolden writes, in the forms each caller hands them over (the record
// API's SELECTs, through a database/sql driver of this file's own; the query export job's
// JSON-ready values), and the golden files the output is compared with (testdata; -update
// writes them).

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"dataplatform/store/ingest"
)

// sampleColumn is a sample column: its record API type and the type a query reports for it.
type sampleColumn struct {
	Name   string
	Record ingest.Type
	PG     string // lowercased DatabaseTypeName, as the query sandbox reports it
}

// sampleColumns are the sample's columns.
var sampleColumns = []sampleColumn{
	{"n", ingest.Integer, "int4"},
	{"big", ingest.BigInt, "int8"},
	{"amount", ingest.Numeric, "numeric"},
	{"ok", ingest.Boolean, "bool"},
	{"day", ingest.Date, "date"},
	{"at", ingest.Timestamptz, "timestamptz"},
	{"name", ingest.Text, "text"},
	{"note", ingest.Text, "text"},
	{"meta", ingest.JSONB, "jsonb"},
	{"tags", ingest.TextArray, "_text"},
	{"u", ingest.UUID, "uuid"},
}

// sampleNames are the names of sampleColumns.
func sampleNames() []string {
	out := make([]string, len(sampleColumns))
	for i, c := range sampleColumns {
		out[i] = c.Name
	}
	return out
}

func day(y int, m time.Month, d int) time.Time { return time.Date(y, m, d, 0, 0, 0, 0, time.UTC) }

// sampleRows are the sample, a value per column: int64 (integer, bigint), string (numeric's text,
// text, jsonb's text, uuid), bool, time.Time (date, timestamptz), []string (text[]); nil is
// NULL. They hold NULLs, an empty string, unicode, quotes, delimiters and line breaks in
// text, large and negative numbers, fractions of seconds and a time zone.
var sampleRows = [][]any{
	{int64(1), int64(9007199254740993), "12.5", true, day(2024, 1, 2), time.Date(2024, 1, 2, 3, 4, 5, 123456000, time.UTC),
		"Ann", `hello, "world"`, `{"a": [1, 2.5, null], "s": "x,y", "html": "<&>"}`, []string{"a", "b,c"}, "6f1c0c8e-0d4b-4a57-9a4e-3f2b1c0d9e8f"},
	{nil, nil, nil, nil, nil, nil, "", "multi\nline\r\nend", nil, nil, nil},
	{int64(-3), int64(-42), "-0.001", false, day(1999, 12, 31), time.Date(2023, 6, 30, 23, 59, 59, 0, time.UTC),
		"Zoë ünïcödé 日本語 😀", "semi;colon|pipe\ttab 'single' \"double\" back\\slash", `[1, "two", {"three": true}]`, []string{}, "00000000-0000-0000-0000-000000000000"},
	{int64(2147483647), int64(1), "100000000000000000000.25", true, day(2024, 2, 29), time.Date(2024, 2, 29, 12, 0, 0, 500000000, time.FixedZone("", 2*3600)),
		"   spaced   ", `"`, `{"unicode": "é\t"}`, []string{"日本", ""}, "ffffffff-ffff-ffff-ffff-ffffffffffff"},
	{int64(0), int64(-9223372036854775808), "0", false, day(1970, 1, 1), time.Date(1969, 12, 31, 23, 59, 59, 999999000, time.UTC),
		"lone\rreturn", "", `"just a string"`, []string{`q"uote`, `back\slash`, "with space"}, "12345678-1234-1234-1234-123456789abc"},
}

// formulaRows are text a spreadsheet reads as formulas (=, +, -, @, tab, carriage return
// first, or after another separator), beside negative numbers and JSON that are not to be
// escaped.
var formulaRows = [][]any{
	{int64(-1), int64(-2), "-1.5", true, day(2024, 1, 2), time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC),
		"=1+1", "@SUM(1)", `-1`, []string{"=x"}, "6f1c0c8e-0d4b-4a57-9a4e-3f2b1c0d9e8f"},
	{int64(2), int64(3), "4", false, day(2024, 1, 3), time.Date(2024, 1, 3, 3, 4, 5, 0, time.UTC),
		"+1", "-1", `"=2+2"`, nil, nil},
	{nil, nil, nil, nil, nil, nil, "\tx", "\rcmd|' /C calc'!A0", nil, nil, nil},
	// A spreadsheet that splits at ; (or ,) whatever the delimiter would start a cell at =1+1.
	{nil, nil, nil, nil, nil, nil, "x;=1+1", "plain", nil, nil, nil},
}

// plain reports whether the record API's csv SELECT joins a column's text into a run with its
// neighbours' (text that never needs quoting).
func plain(t ingest.Type) bool {
	switch t {
	case ingest.Boolean, ingest.Integer, ingest.BigInt, ingest.Numeric, ingest.Date, ingest.Timestamptz, ingest.UUID:
		return true
	}
	return false
}

// csvText is a value as the record API's csv SELECT makes it (datasets.TextValue): the text
// of its JSON value, booleans true/false, times in RFC 3339 UTC, arrays as JSON.
func csvText(t ingest.Type, v any) string {
	switch x := v.(type) {
	case int64:
		return strconv.FormatInt(x, 10)
	case bool:
		return strconv.FormatBool(x)
	case time.Time:
		if t == ingest.Date {
			return x.Format(time.DateOnly)
		}
		return x.UTC().Format(time.RFC3339Nano)
	case []string:
		return toJSON(t, x)
	}
	return v.(string)
}

// jsonString is s as PostgreSQL's to_json writes a string.
func jsonString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		default:
			if r < 0x20 {
				fmt.Fprintf(&b, `\u%04x`, r)
			} else {
				b.WriteRune(r)
			}
		}
	}
	b.WriteByte('"')
	return b.String()
}

// toJSON is a value as to_json writes it.
func toJSON(t ingest.Type, v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case int64, bool:
		return fmt.Sprint(x)
	case time.Time:
		if t == ingest.Date {
			return `"` + x.Format(time.DateOnly) + `"`
		}
		return `"` + x.UTC().Format(time.RFC3339Nano) + `"`
	case []string:
		parts := make([]string, len(x))
		for i, s := range x {
			parts[i] = jsonString(s)
		}
		return "[" + strings.Join(parts, ",") + "]"
	}
	switch t {
	case ingest.Numeric, ingest.JSONB:
		return v.(string)
	}
	return jsonString(v.(string))
}

// recordTyped is the sample as the record API's parquet and excel SELECT returns it: JSON,
// arrays, numerics and uuids as text (a string, as lib/pq hands over text; arrays as JSON),
// the rest typed.
func recordTyped() [][]driver.Value {
	out := make([][]driver.Value, len(sampleRows))
	for i, row := range sampleRows {
		out[i] = make([]driver.Value, len(row))
		for j, v := range row {
			c := sampleColumns[j]
			switch {
			case v == nil:
			case c.Record == ingest.JSONB || c.Record.IsArray() || c.Record == ingest.Numeric:
				out[i][j] = toJSON(c.Record, v)
			case c.Record == ingest.UUID:
				out[i][j] = v.(string)
			default:
				out[i][j] = v
			}
		}
	}
	return out
}

// recordCSV is the sample as the record API's csv SELECT returns it with delimiter delim:
// runs of columns whose text never needs quoting joined into one value (NULL empty), the
// others as text; quoted says which values are single fields.
func recordCSV(delim string) (rows [][]driver.Value, quoted []bool) {
	for i, row := range sampleRows {
		var out []driver.Value
		var run []string
		inRun := false
		flush := func() {
			if inRun {
				out = append(out, strings.Join(run, delim))
				if i == 0 {
					quoted = append(quoted, false)
				}
				run, inRun = nil, false
			}
		}
		for j, v := range row {
			c := sampleColumns[j]
			if plain(c.Record) {
				inRun = true
				if v == nil {
					run = append(run, "")
				} else {
					run = append(run, csvText(c.Record, v))
				}
				continue
			}
			flush()
			if v == nil {
				out = append(out, nil)
			} else {
				out = append(out, csvText(c.Record, v))
			}
			if i == 0 {
				quoted = append(quoted, true)
			}
		}
		flush()
		rows = append(rows, out)
	}
	return rows, quoted
}

// recordJSON is the sample as the record API's json SELECT returns it: one object per row.
func recordJSON() [][]driver.Value {
	out := make([][]driver.Value, len(sampleRows))
	for i, row := range sampleRows {
		parts := make([]string, len(row))
		for j, v := range row {
			parts[j] = jsonString(sampleColumns[j].Name) + ":" + toJSON(sampleColumns[j].Record, v)
		}
		out[i] = []driver.Value{"{" + strings.Join(parts, ",") + "}"}
	}
	return out
}

// queryValues is the sample as the query sandbox reads it: JSON-ready values (numerics as
// json.Number, JSON and arrays as json.RawMessage, dates and times as text).
func queryValues() [][]any {
	out := make([][]any, len(sampleRows))
	for i, row := range sampleRows {
		out[i] = make([]any, len(row))
		for j, v := range row {
			c := sampleColumns[j]
			switch x := v.(type) {
			case nil, int64, bool:
				out[i][j] = x
			case time.Time:
				if c.Record == ingest.Date {
					out[i][j] = x.Format(time.DateOnly)
				} else {
					out[i][j] = x.UTC().Format(time.RFC3339Nano)
				}
			case []string:
				out[i][j] = json.RawMessage(toJSON(c.Record, x))
			case string:
				switch c.Record {
				case ingest.Numeric:
					out[i][j] = json.Number(x)
				case ingest.JSONB:
					out[i][j] = json.RawMessage(x)
				default:
					out[i][j] = x
				}
			}
		}
	}
	return out
}

// sqlRows serves rows (of columns cols) as *sql.Rows, through a driver of this package.
func sqlRows(t testing.TB, cols []string, rows [][]driver.Value) *sql.Rows {
	t.Helper()
	register.Do(func() { sql.Register("exporttest", fakeDriver{}) })
	key := fmt.Sprintf("rows-%p", &rows)
	served.Store(key, &fakeRows{cols: cols, rows: rows})
	db, err := sql.Open("exporttest", "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	r, err := db.QueryContext(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

var (
	register sync.Once
	served   sync.Map // query text → *fakeRows
)

type fakeDriver struct{}

func (fakeDriver) Open(string) (driver.Conn, error) { return fakeConn{}, nil }

type fakeConn struct{}

func (fakeConn) Prepare(string) (driver.Stmt, error) { return nil, fmt.Errorf("not supported") }
func (fakeConn) Close() error                        { return nil }
func (fakeConn) Begin() (driver.Tx, error)           { return nil, fmt.Errorf("not supported") }
func (fakeConn) QueryContext(_ context.Context, q string, _ []driver.NamedValue) (driver.Rows, error) {
	v, ok := served.Load(q)
	if !ok {
		return nil, fmt.Errorf("no rows %q", q)
	}
	r := *v.(*fakeRows)
	return &r, nil
}

type fakeRows struct {
	cols []string
	rows [][]driver.Value
}

func (r *fakeRows) Columns() []string { return r.cols }
func (r *fakeRows) Close() error      { return nil }
func (r *fakeRows) Next(dest []driver.Value) error {
	if len(r.rows) == 0 {
		return io.EOF
	}
	copy(dest, r.rows[0])
	r.rows = r.rows[1:]
	return nil
}

var update = flag.Bool("update", false, "write the export golden files")

// golden compares got with the golden file name (or, with -update, writes it).
func golden(t testing.TB, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%s: %v (write it with -update)", name, err)
	}
	if string(want) != string(got) {
		t.Errorf("%s: the output differs from its golden file (%d bytes, want %d)\n%q\nwant\n%q", name, len(got), len(want), clip(got), clip(want))
	}
}

func clip(b []byte) []byte {
	if len(b) > 800 {
		return b[:800]
	}
	return b
}
