package ingest

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"
)

func TestKindAndWiden(t *testing.T) {
	for v, want := range map[string]Type{
		"42": Integer, "-7": Integer, "+3": Text, "+15557624039": Text, "02134": Text, "-0": Text, "-0.0": Text,
		"007.5": Text, "+1.5": Text, "-0.5": Numeric, "10.50": Numeric, "2147483648": BigInt, "99999999999999999999": Numeric,
		"1.5": Numeric, ".5": Numeric, "1e10": Numeric, "-2.5E-3": Numeric, "1e": Text, "1.2.3": Text, "-": Text, ".": Text,
		"true": Boolean, "No": Boolean, "T": Boolean, "1": Integer, "0": Integer,
		"2024-02-29": Date, "2023-02-29": Text, "0123": Text, "-007": Text, "0.5": Numeric,
		"2024-01-05T10:00:00.5-0330": Timestamptz, "2024-01-05T10:00:00+02": Timestamptz, "2024-01-05T10:00": Text,
		"2024-01-05 24:00:00": Text, "2024-01-05T10:00:00+16:00": Text, "0000-01-01": Text, "2024-01-05T10:00:00Z": Timestamptz, "2024-01-05 10:00:00": Timestamptz,
		"2024-01-05 10:00:00.123+02:00": Timestamptz, "2024-13-01": Text,
		"6f1c2a9e-8e4b-4c1a-9d5e-1f2a3b4c5d6e": UUID, "6f1c2a9e-8e4b-4c1a-9d5e-1f2a3b4c5d6g": Text, "hello": Text,
	} {
		if got := Kind(v); got != want {
			t.Errorf("Kind(%q) = %s, want %s", v, got, want)
		}
	}
	for _, c := range []struct{ a, b, want Type }{
		{Integer, BigInt, BigInt}, {Integer, Numeric, Numeric}, {BigInt, Integer, BigInt}, {Date, Timestamptz, Timestamptz},
		{Integer, Boolean, Text}, {UUID, Text, Text}, {Unknown, Date, Date}, {Numeric, Unknown, Numeric},
		{BigIntArray, NumericArray, NumericArray}, {anyArray, TextArray, TextArray}, {TextArray, BigIntArray, JSONB},
		{JSONB, BooleanArray, JSONB}, {JSONB, Text, Text}, {BigIntArray, BigInt, Text},
	} {
		if got := Widen(c.a, c.b); got != c.want {
			t.Errorf("Widen(%s, %s) = %s, want %s", c.a, c.b, got, c.want)
		}
	}
}

// Inference over a whole CSV file: widening, the boolean rule, NULLs and text lengths.
func TestInferCSV(t *testing.T) {
	rows := []string{
		"i,big,num,b01,flag,yn,d,ts,u,txt,zip,empty,n,phone,price",
		"1,1,1,0,true,yes,2024-01-01,2024-01-01,6f1c2a9e-8e4b-4c1a-9d5e-1f2a3b4c5d6e,Zoë,01234,,5,+15557624039,10.50",
		"2,3000000000,2.5,1,1,no,2024-01-02,2024-01-02 10:00:00,6F1C2A9E-8E4B-4C1A-9D5E-1F2A3B4C5D6E,hello world,75001,,,+4930901820,0.99",
		"-3,4,1e3,1,0,Y,2024-01-03,2024-01-03T10:00:00Z,6f1c2a9e-8e4b-4c1a-9d5e-1f2a3b4c5d6f,x,99,,7,15557624040,12",
	}
	path := writeTemp(t, "f.csv", strings.Join(rows, "\n")+"\n")
	s := infer(t, path, CSV)
	// Every inferred column is nullable (? below), blanks or not; phone numbers with a plus
	// and zip codes with a leading zero stay text, so the + and the zero survive.
	want := []string{"i:integer?", "big:bigint?", "num:numeric?", "b01:integer?", "flag:boolean?", "yn:text?", "d:date?",
		"ts:timestamptz?", "u:uuid?", "txt:text?", "zip:text?", "empty:text?", "n:integer?", "phone:text?", "price:numeric?"}
	if got := types(s.Columns); !reflect.DeepEqual(got, want) || s.Rows != 3 || s.Dialect == nil || !s.Dialect.Header {
		t.Fatalf("types %v rows %d\nwant %v", got, s.Rows, want)
	}
	if c := s.Columns[9]; c.MaxLength != 11 || c.NullCount != 0 {
		t.Errorf("txt %+v", c)
	}
	if c := s.Columns[11]; c.NullCount != 3 || c.MaxLength != 0 {
		t.Errorf("empty %+v", c)
	}
	if c := s.Columns[12]; c.NullCount != 1 {
		t.Errorf("n %+v", c)
	}
	if c := s.Columns[0]; c.MaxLength != 0 {
		t.Errorf("max length is for text columns only: %+v", c)
	}
}

// The boolean rule: words make a boolean column, and 0/1 join them; 0/1 alone stay integers.
func TestBooleanRule(t *testing.T) {
	for _, c := range []struct {
		values []string
		want   Type
	}{
		{[]string{"true", "false", "TRUE"}, Boolean},
		{[]string{"t", "f"}, Boolean},
		{[]string{"yes", "No"}, Boolean},
		{[]string{"0", "1", "1"}, Integer},
		{[]string{"1", "0", "true"}, Boolean},
		{[]string{"true", "0", "1", ""}, Boolean},
		{[]string{"1", "2", "true"}, Text},
		{[]string{"true", "1", "2"}, Text},
		{[]string{"true", "1.0"}, Text},
		{[]string{"yes", "maybe"}, Text},
	} {
		var st colState
		for _, v := range c.values {
			st.text(v)
		}
		if st.t != c.want {
			t.Errorf("%q: %s, want %s", c.values, st.t, c.want)
		}
	}
}

// A file of more columns than a dataset table can hold is refused before its columns are
// named or inferred, in every format.
func TestMaxColumns(t *testing.T) {
	row := func(n int, v string) string { return strings.TrimSuffix(strings.Repeat(v+",", n), ",") + "\n" }
	if s := infer(t, writeTemp(t, "ok.csv", row(MaxColumns, "a")+row(MaxColumns, "1")), CSV); len(s.Columns) != MaxColumns {
		t.Fatalf("%d columns", len(s.Columns))
	}
	if _, err := Infer(writeTemp(t, "wide.csv", row(100_000, "a")+row(100_000, "1")), CSV); err == nil ||
		err.Error() != "line 1: the file has 100000 columns; a dataset has at most 1500 columns" {
		t.Fatalf("csv: %v", err)
	}
	var obj strings.Builder
	obj.WriteString("{\"id\": 1}\n{")
	for i := range MaxColumns + 1 {
		if i > 0 {
			obj.WriteString(", ")
		}
		fmt.Fprintf(&obj, `"k%d": 1`, i)
	}
	obj.WriteString("}\n")
	if _, err := Infer(writeTemp(t, "wide.ndjson", obj.String()), NDJSON); err == nil ||
		err.Error() != "line 2: the objects have more than 1500 distinct keys; a dataset has at most 1500 columns" {
		t.Fatalf("ndjson: %v", err)
	}
	group := parquet.Group{}
	for i := range MaxColumns + 1 {
		group[fmt.Sprint("c", i)] = parquet.Leaf(parquet.Int64Type)
	}
	path := filepath.Join(t.TempDir(), "wide.parquet")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := parquet.NewWriter(f, parquet.NewSchema("wide", group))
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if _, err := Infer(path, Parquet); err == nil || err.Error() != "the file has 1501 columns; a dataset has at most 1500 columns" {
		t.Fatalf("parquet: %v", err)
	}
}
