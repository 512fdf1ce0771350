package ingest

import (
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"
)

func TestCSVRead(t *testing.T) {
	cases := []struct {
		name, content string
		cols          []string // name:original
		rows          [][]Value
		lines         []int
	}{
		{
			name:    "semicolons, BOM, CRLF, empty is NULL",
			content: "\xef\xbb\xbfID;Full Name;Note\r\n1;Ann;\r\n2;Bob;hi\r\n",
			cols:    []string{"src_id:ID", "full_name:Full Name", "note:Note"},
			rows:    [][]Value{{"1", "Ann", nil}, {"2", "Bob", "hi"}},
			lines:   []int{2, 3},
		},
		{
			name:    "tabs without header",
			content: "1\t2024-01-01\tx\n2\t2024-01-02\ty\n",
			cols:    []string{"column_1:column_1", "column_2:column_2", "column_3:column_3"},
			rows:    [][]Value{{"1", "2024-01-01", "x"}, {"2", "2024-01-02", "y"}},
			lines:   []int{1, 2},
		},
		{
			name:    "quoted fields over lines, doubled quotes, blank lines skipped",
			content: "a,b\n\"x, \"\"y\"\"\",\"two\r\nlines\"\n\n3,\"\"\n5\" screen,6\n",
			cols:    []string{"a:a", "b:b"},
			rows:    [][]Value{{`x, "y"`, "two\nlines"}, {"3", nil}, {`5" screen`, "6"}},
			lines:   []int{2, 5, 6},
		},
		{
			name:    "single quotes",
			content: "name,city\n'Smith, Ann',Paris\n'O''Brien, Bob',Rome\n",
			cols:    []string{"name:name", "city:city"},
			rows:    [][]Value{{"Smith, Ann", "Paris"}, {"O'Brien, Bob", "Rome"}},
			lines:   []int{2, 3},
		},
		{
			name:    "no final newline",
			content: "a|b\n1|2",
			cols:    []string{"a:a", "b:b"},
			rows:    [][]Value{{"1", "2"}},
			lines:   []int{2},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := writeTemp(t, "f.csv", c.content)
			s, r, err := openInferred(path, CSV, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			var cols []string
			for _, col := range s.Columns {
				cols = append(cols, col.Name+":"+col.Original)
			}
			if !reflect.DeepEqual(cols, c.cols) {
				t.Errorf("columns %q, want %q", cols, c.cols)
			}
			for i := 0; ; i++ {
				row, err := r.Next()
				if err == io.EOF {
					if i != len(c.rows) {
						t.Errorf("%d rows, want %d", i, len(c.rows))
					}
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				if i >= len(c.rows) || !reflect.DeepEqual(row, c.rows[i]) || r.Line() != c.lines[i] {
					t.Errorf("row %d = %q at line %d", i, row, r.Line())
				}
			}
		})
	}
}

func TestCSVErrors(t *testing.T) {
	cases := []struct {
		name, content string
		line          int
		reason        string
	}{
		{"ragged: too many fields", "a,b\n1,2\n3,4\n5,6,7\n", 4, "3 fields where the header has 2"},
		{"ragged: too few fields", "a,b,c\n1,2,3\n4,5\n", 3, "2 fields where the header has 3"},
		{"ragged without header", "1,2\n3\n", 2, "1 fields where the first line has 2"},
		{"ragged after a multi-line field", "a,b\n\"x\ny\",1\n2\n", 4, "1 fields where the header has 2"},
		{"quote never closed", "a,b\n1,2\n3,\"oops\n4,5\n", 3, "a quoted field starting on this line is never closed"},
		{"text after closing quote", "a,b\n1,2\n\"x\"y,3\n", 3, `unexpected 'y' after a closing quote`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := writeTemp(t, "f.csv", c.content)
			for _, err := range []error{readErr(path, CSV), func() error { _, err := Infer(path, CSV); return err }()} {
				var re *RowError
				if !errors.As(err, &re) || re.Line != c.line || !strings.Contains(re.Reason, c.reason) {
					t.Fatalf("got %v, want line %d: %s", err, c.line, c.reason)
				}
			}
		})
	}
	if _, err := Infer(writeTemp(t, "e.csv", "\n\n"), CSV); err == nil {
		t.Error("a file without records opened")
	}
}
