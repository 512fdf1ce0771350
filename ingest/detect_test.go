package ingest

import (
	"errors"
	"strings"
	"testing"
)

func TestDetect(t *testing.T) {
	long := "id,name\n" + strings.Repeat("1,\"a, b\"\n", 10000)
	cases := []struct {
		name, file, content string
		want                Format
		provided            string
	}{
		{"csv", "a.csv", "id,name,age\n1,Ann,30\n2,Bob,40\n", CSV, ""},
		{"csv semicolon, any extension", "export.txt", "id;name\n1;Ann\n2;Bob\n", CSV, ""},
		{"tsv", "a.tsv", "id\tname\n1\tAnn\n", CSV, ""},
		{"csv with BOM", "a.csv", "\xef\xbb\xbfid,name\n1,Ann\n", CSV, ""},
		{"csv cut mid-line by the sample", "a.csv", long[:65536], CSV, ""},
		{"single-column csv by extension", "ids.csv", "id\n1\n2\n", CSV, ""},
		{"rune cut by the sample", "a.csv", "id,name\n1,Zo\xc3", CSV, ""},
		{"json array", "a.json", " [ {\"a\": 1}, {\"a\": 2} ]", JSON, ""},
		{"empty json array", "a.json", "[]", JSON, ""},
		{"ndjson", "a.jsonl", "{\"a\":1}\n{\"a\":2}\n", NDJSON, ""},
		{"parquet", "a.bin", "PAR1\x15\x04", Parquet, ""},
		{"png named csv", "a.csv", "\x89PNG\r\n\x1a\n\x00\x00", "", "png"},
		{"pdf", "a.pdf", "%PDF-1.7\n", "", "pdf"},
		{"xlsx", "book.xlsx", "PK\x03\x04\x14\x00", "", "xlsx"},
		{"zip", "a.zip", "PK\x03\x04\x14\x00", "", "zip"},
		{"gzip", "a.csv.gz", "\x1f\x8b\x08", "", "gzip"},
		{"binary", "a.csv", "ab\x00cd", "", "binary"},
		{"latin-1", "a.csv", "id,name\n1,Ren\xe9\n", "", "binary"},
		{"json scalars", "a.json", "[1, 2, 3]", "", "json-scalar-array"},
		{"one pretty object", "a.json", "{\n  \"a\": 1\n}\n", "", "json-object"},
		{"empty", "a.csv", "", "", "empty"},
		{"blank", "a.csv", "  \n ", "", "empty"},
		{"prose", "notes.md", "Hello there.\nThis is text.\n", "", "md"},
		{"prose without extension", "notes", "Hello there.\nThis is text.\n", "", "text"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := Detect([]byte(c.content), c.file)
			var fe *FormatError
			if c.provided != "" {
				if !errors.As(err, &fe) || fe.Provided != c.provided {
					t.Fatalf("got %q, %v; want FormatError %q", got, err, c.provided)
				}
				return
			}
			if err != nil || got != c.want {
				t.Fatalf("got %q, %v; want %q", got, err, c.want)
			}
		})
	}
}
