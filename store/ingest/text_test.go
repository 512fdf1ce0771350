package ingest

import (
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"
	"time"
)

func TestText(t *testing.T) {
	ts := time.Date(2024, 1, 5, 10, 0, 0, 500, time.FixedZone("", 3600))
	cases := []struct {
		typ    Type
		v      Value
		want   string
		reason string // when the value does not fit
	}{
		{Integer, "42", "42", ""},
		{Integer, "+7", "+7", ""},
		{Integer, json.Number("-3"), "-3", ""},
		{Integer, int64(5), "5", ""},
		{Integer, "2147483648", "", "is out of range for integer"},
		{Integer, "abc", "", "is not an integer"},
		{Integer, "1.5", "", "is not an integer"},
		{Integer, true, "", "is not an integer"},
		{BigInt, "2147483648", "2147483648", ""},
		{BigInt, "99999999999999999999", "", "is out of range for bigint"},
		{Numeric, "1.50", "1.50", ""},
		{Numeric, json.Number("1e-3"), "1e-3", ""},
		{Numeric, "NaN", "NaN", ""},
		{Numeric, math.Inf(-1), "-Infinity", ""},
		{Numeric, int64(3), "3", ""},
		{Numeric, "1,5", "", "is not a number"},
		{Boolean, "TRUE", "true", ""},
		{Boolean, "f", "false", ""},
		{Boolean, "Yes", "true", ""},
		{Boolean, "0", "false", ""},
		{Boolean, true, "true", ""},
		{Boolean, json.Number("1"), "true", ""},
		{Boolean, "maybe", "", "is not a boolean"},
		{Date, "2024-02-29", "2024-02-29", ""},
		{Date, ts, "2024-01-05", ""},
		{Date, "2023-02-29", "", "is not a date (YYYY-MM-DD)"},
		{Date, "05/01/2024", "", "is not a date (YYYY-MM-DD)"},
		{Timestamptz, "2024-01-05T10:00:00Z", "2024-01-05T10:00:00Z", ""},
		{Timestamptz, "2024-01-05 10:00:00.25+02:00", "2024-01-05 10:00:00.25+02:00", ""},
		{Timestamptz, "2024-01-05 10:00:00", "2024-01-05 10:00:00+00", ""}, // no zone: UTC
		{Timestamptz, "2024-01-05", "2024-01-05 00:00:00+00", ""},
		{Timestamptz, ts, "2024-01-05T09:00:00.0000005Z", ""},
		{Timestamptz, "yesterday", "", "is not a timestamp (YYYY-MM-DD HH:MM:SS, RFC 3339)"},
		{UUID, "6F1C2A9E-8E4B-4C1A-9D5E-1F2A3B4C5D6E", "6F1C2A9E-8E4B-4C1A-9D5E-1F2A3B4C5D6E", ""},
		{UUID, "6f1c2a9e", "", "is not a UUID"},
		{JSONB, map[string]any{"a": []any{json.Number("1"), "<b>"}, "n": nil}, `{"a":[1,"<b>"],"n":null}`, ""},
		{JSONB, []any{true}, `[true]`, ""},
		{JSONB, `{"from":"csv"}`, `{"from":"csv"}`, ""},
		{JSONB, json.RawMessage(`[1]`), `[1]`, ""},
		{JSONB, "{oops", "", "is not valid JSON"},
		{JSONB, map[string]any{"x": math.NaN()}, "", "cannot be written as JSON"},
		{Text, "tab\there", "tab\there", ""},
		{Text, json.Number("1.0"), "1.0", ""},
		{Text, false, "false", ""},
		{Text, map[string]any{"a": "b"}, `{"a":"b"}`, ""},
		{Text, "nul\x00", "", "contains a NUL character"},
		{Text, "bad \xff", "", "is not valid UTF-8"},
		{TextArray, []any{"a", `b "c"`, nil, `back\slash`, "NULL", "{x,y}"}, `{"a","b \"c\"",NULL,"back\\slash","NULL","{x,y}"}`, ""},
		{TextArray, `["x", "y"]`, `{"x","y"}`, ""},
		{TextArray, "{already,literal}", "{already,literal}", ""},
		{TextArray, []any{}, "{}", ""},
		{TextArray, "plain", "", "is not an array"},
		{TextArray, []any{[]any{"nested"}}, "", "element 1 is an array (nested arrays go in jsonb columns)"},
		{BigIntArray, []any{json.Number("1"), int64(2), nil}, `{"1","2",NULL}`, ""},
		{BigIntArray, []any{json.Number("1"), "x"}, "", "element 2 is not an integer"},
		{NumericArray, []any{json.Number("1.5")}, `{"1.5"}`, ""},
		{BooleanArray, []any{true, false}, `{"true","false"}`, ""},
		{ArrayOf(Date), []any{"2024-01-01"}, `{"2024-01-01"}`, ""},
	}
	for _, c := range cases {
		col := Column{Name: "c", Original: "My Col", Type: c.typ}
		got, null, err := col.Text(c.v)
		if c.reason != "" {
			var re *RowError
			if !errors.As(err, &re) || re.Reason != c.reason || re.Column != "My Col" {
				t.Errorf("%s %#v: got %q, %v; want error %q", c.typ, c.v, got, err, c.reason)
			}
			continue
		}
		if err != nil || null || got != c.want {
			t.Errorf("%s %#v = %q, %v, %v; want %q", c.typ, c.v, got, null, err, c.want)
		}
	}
	for _, typ := range []Type{Integer, Text, JSONB, TextArray, Date} {
		if s, null, err := (Column{Type: typ}).Text(nil); !null || s != "" || err != nil {
			t.Errorf("%s NULL = %q, %v, %v", typ, s, null, err)
		}
	}
}

func TestRowError(t *testing.T) {
	cols := []Column{{Name: "name", Original: "Name", Type: Text}, {Name: "age", Original: "age", Type: Integer}}
	if _, err := AppendCopyLine(nil, cols, []Value{"Ann", "abc"}, 12); err == nil || err.Error() != `line 12, column "age": "abc" is not an integer` {
		t.Fatalf("got %v", err)
	}
	_, _, err := cols[1].Text(strings.Repeat("9", 100))
	if err == nil || err.Error() != `column "age": "`+strings.Repeat("9", 57)+`..." is out of range for integer` {
		t.Fatalf("got %v", err)
	}
	if got := (&RowError{Line: 3, Reason: "2 fields where the header has 3"}).Error(); got != "line 3: 2 fields where the header has 3" {
		t.Fatalf("got %q", got)
	}
	if got := (&RowError{Reason: "the file has no records"}).Error(); got != "the file has no records" {
		t.Fatalf("got %q", got)
	}
}

// COPY's text format: tabs separate, \N is NULL, and backslash, tab, newline and carriage
// return inside values are escaped.
func TestAppendCopyLine(t *testing.T) {
	cols := []Column{{Type: Text}, {Type: Integer}, {Type: TextArray}, {Type: Boolean}}
	got, err := AppendCopyLine([]byte("x"), cols, []Value{"a\\b\tc\nd\re", nil, []any{"q\"\\"}, "yes"}, 1)
	want := "xa\\\\b\\tc\\nd\\re\t\\N\t{\"q\\\\\"\\\\\\\\\"}\ttrue\n"
	if err != nil || string(got) != want {
		t.Fatalf("got %q, %v\nwant %q", got, err, want)
	}
}
