package ingest

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
)

// The same records as a pretty-printed JSON array and as NDJSON: columns are the union of
// the keys in order of first appearance, a missing key is NULL, types widen across rows.
func TestJSONInfer(t *testing.T) {
	records := []string{
		`{"id": 1, "name": "Ann", "score": 10, "big": 5, "when": "2024-01-01", "tags": ["a", "b"], "nums": [1, 2], "addr": {"city": "Paris"}, "mixed": [1, "x"]}`,
		`{"id": 2, "name": null, "score": 2.5, "big": 9000000000, "when": "2024-01-02T10:00:00+02:00", "tags": [], "nums": [1.5], "addr": {"city": "Rome", "zip": "00100"}, "mixed": true, "flag": true}`,
		`{"id": 3, "name": "Bob", "score": 7, "big": 1, "when": null, "tags": ["c", null], "nums": null, "addr": null, "mixed": "y", "flag": false, "uid": "6f1c2a9e-8e4b-4c1a-9d5e-1f2a3b4c5d6e", "zip": "01234", "n01": 1}`,
	}
	want := []string{"src_id:integer?", "name:text?", "score:numeric?", "big:bigint?", "when:timestamptz?", "tags:text[]?",
		"nums:numeric[]?", "addr:jsonb?", "mixed:text?", "flag:boolean?", "uid:uuid?", "zip:text?", "n01:integer?"}
	files := map[Format]string{
		JSON:   "[\n  " + strings.Join(records, ",\n  ") + "\n]\n",
		NDJSON: strings.Join(records, "\n") + "\n\n",
	}
	for f, content := range files {
		t.Run(string(f), func(t *testing.T) {
			path := writeTemp(t, "f.json", content)
			s := infer(t, path, f)
			if got := types(s.Columns); !reflect.DeepEqual(got, want) || s.Rows != 3 || s.Format != f {
				t.Fatalf("types %v rows %d\nwant %v", got, s.Rows, want)
			}
			if c := s.Columns[9]; c.NullCount != 1 { // flag: missing in the first object
				t.Errorf("flag null count %d", c.NullCount)
			}
			if c := s.Columns[1]; c.MaxLength != 3 || c.NullCount != 1 {
				t.Errorf("name %+v", c)
			}
			cols, rows := readAll(t, path, f)
			if got := types(cols); len(got) != len(want) {
				t.Fatalf("columns %v", got)
			}
			if rows[0][10] != nil || rows[2][0] != json.Number("3") || !reflect.DeepEqual(rows[1][7], map[string]any{"city": "Rome", "zip": "00100"}) {
				t.Errorf("rows %v", rows)
			}
			r, err := OpenSchema(path, s)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			var lines []int
			var out []string
			for {
				row, err := r.Next()
				if err != nil {
					break
				}
				lines = append(lines, r.Line())
				b, err := AppendCopyLine(nil, s.Columns, row, r.Line())
				if err != nil {
					t.Fatal(err)
				}
				out = append(out, string(b))
			}
			wantLines := []int{1, 2, 3}
			if f == JSON {
				wantLines = []int{2, 3, 4}
			}
			if !reflect.DeepEqual(lines, wantLines) {
				t.Errorf("lines %v", lines)
			}
			wantCopy := "2\t\\N\t2.5\t9000000000\t2024-01-02T10:00:00+02:00\t{}\t{\"1.5\"}\t{\"city\":\"Rome\",\"zip\":\"00100\"}\ttrue\ttrue\t\\N\t\\N\t\\N\n"
			if out[1] != wantCopy {
				t.Errorf("COPY line\n%q\nwant\n%q", out[1], wantCopy)
			}
			if !strings.Contains(out[0], "\t{\"a\",\"b\"}\t{\"1\",\"2\"}\t") || !strings.Contains(out[0], "[1,\"x\"]") {
				t.Errorf("COPY line %q", out[0])
			}
		})
	}
}

func TestJSONTypes(t *testing.T) {
	for _, c := range []struct {
		values []string
		want   Type
	}{
		{[]string{"1", "2"}, Integer},
		{[]string{"1", "3000000000"}, BigInt},
		{[]string{"1", "1.5"}, Numeric},
		{[]string{"1e3"}, Numeric},
		{[]string{"true", "false"}, Boolean},
		{[]string{"0", "1"}, Integer}, // JSON numbers are never booleans
		{[]string{"true", "1"}, Text},
		{[]string{`"2024-01-01"`, `"2024-01-01 10:00:00"`}, Timestamptz},
		{[]string{`"42"`}, Text}, // a string is text even when it reads as a number
		{[]string{`{"a":1}`, `[{"b":2}]`}, JSONB},
		{[]string{`[1,2]`, `[3000000000]`}, BigIntArray},
		{[]string{`[1]`, `[1.5]`}, NumericArray},
		{[]string{`[true,null]`}, BooleanArray},
		{[]string{`[]`, `null`}, TextArray},
		{[]string{`[1]`, `["a"]`}, JSONB},
		{[]string{`[[1],[2]]`}, JSONB},
		{[]string{`[1,"a"]`}, JSONB},
		{[]string{`{"a":1}`, `"text"`}, Text},
		{[]string{`null`}, Text},
	} {
		var lines []string
		for _, v := range c.values {
			lines = append(lines, `{"v":`+v+`}`)
		}
		path := writeTemp(t, "f.ndjson", strings.Join(lines, "\n"))
		if got := infer(t, path, NDJSON).Columns[0].Type; got != c.want {
			t.Errorf("%v: %s, want %s", c.values, got, c.want)
		}
	}
}

func TestJSONErrors(t *testing.T) {
	long := `{"a":"` + strings.Repeat("x", 1<<20) + `"}`
	cases := []struct {
		name    string
		f       Format
		content string
		line    int
		reason  string
	}{
		{"array element not an object", JSON, "[\n{\"a\":1},\n2\n]", 3, "not an object"},
		{"syntax error in array", JSON, "[\n{\"a\":1},\n{\"a\":}\n]", 3, "invalid JSON"},
		{"array cut short", JSON, "[\n{\"a\":1},\n{\"a\":2", 3, "ends unexpectedly"},
		{"data after the array", JSON, "[{\"a\":1}]\n[]", 2, "after the array"},
		{"not an array", JSON, "{\"a\":1}", 1, "not a JSON array"},
		{"ndjson line not an object", NDJSON, "{\"a\":1}\n\n[1]\n", 3, "not a JSON object"},
		{"ndjson syntax error", NDJSON, "{\"a\":1}\n{\"a\":tru}\n", 2, "invalid JSON"},
		{"ndjson two values on a line", NDJSON, "{\"a\":1} {\"a\":2}\n", 1, "more than one"},
		{"ndjson long lines are fine, errors after them counted", NDJSON, long + "\n" + long + "\n{\n", 3, "ends unexpectedly"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := writeTemp(t, "f.json", c.content)
			_, err := Infer(path, c.f)
			var re *RowError
			if !errors.As(err, &re) || re.Line != c.line || !strings.Contains(re.Reason, c.reason) {
				t.Fatalf("got %v, want line %d: %s", err, c.line, c.reason)
			}
		})
	}
	// A key the declared schema does not have is an error, not dropped data.
	path := writeTemp(t, "f.ndjson", "{\"a\":1}\n{\"a\":2,\"b\":3}\n")
	r, err := OpenSchema(path, &Schema{Format: NDJSON, Columns: []Column{{Name: "a", Original: "a", Type: Integer}}})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	r.Next()
	if _, err := r.Next(); err == nil || err.Error() != `line 2: key "b" is not a column of the dataset` {
		t.Fatalf("got %v", err)
	}
}

// Lines longer than any buffer (up to 16 MiB) are read whole.
func TestNDJSONLongLine(t *testing.T) {
	v := strings.Repeat("é", 3<<20) // 6 MiB
	path := writeTemp(t, "f.ndjson", `{"a":"`+v+`"}`+"\n"+`{"a":"b"}`)
	s := infer(t, path, NDJSON)
	if s.Rows != 2 || s.Columns[0].MaxLength != 3<<20 {
		t.Fatalf("rows %d max length %d", s.Rows, s.Columns[0].MaxLength)
	}
	path = writeTemp(t, "g.ndjson", `{"a":"`+strings.Repeat("x", 17<<20)+`"}`)
	var re *RowError
	if _, err := Infer(path, NDJSON); !errors.As(err, &re) || re.Line != 1 {
		t.Fatalf("a 17 MiB line: %v", err)
	}
}

// An element of a JSON array is bounded as an NDJSON line is: it is decoded whole, and 100 MB
// of small numbers in one element held 2.9 GB of heap before.
func TestJSONLongRecord(t *testing.T) {
	v := strings.Repeat("x", 15<<20)
	path := writeTemp(t, "f.json", "[\n"+`{"a": "b"},`+"\n"+`{"a": "`+v+`"},`+"\n"+`{"a": "c"}]`)
	if s := infer(t, path, JSON); s.Rows != 3 || s.Columns[0].MaxLength != 15<<20 {
		t.Fatalf("rows %d max length %d", s.Rows, s.Columns[0].MaxLength)
	}
	path = writeTemp(t, "g.json", "[\n"+`{"a": 1},`+"\n"+`{"a": [`+strings.Repeat("1,", 20<<20)+`1]}]`)
	var err error
	alloc := allocated(func() { _, err = Infer(path, JSON) })
	if err == nil || err.Error() != "line 3: the record is longer than 16 MiB" {
		t.Fatalf("a 40 MiB record: %v", err)
	}
	if alloc > 100<<20 {
		t.Fatalf("refusing it allocated %d MiB", alloc>>20)
	}
}
