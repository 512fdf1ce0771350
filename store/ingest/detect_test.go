package ingest

import (
	"errors"
	"os"
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
		{"csv without header", "data", "1,Ann,30\n2,Bob,40\n", CSV, ""},
		{"tab-separated named .txt", "a.txt", "id\tname\n1\tAnn\n", CSV, ""},
		{"pipes", "a.dat", "id|name\n1|Ann\n", CSV, ""},
		{"single quotes", "a.csv", "id,name\n1,'Smith, Ann'\n2,'Bob'\n", CSV, ""},
		{"quoted newline", "a.csv", "id,note\n1,\"two\nlines\"\n2,x\n", CSV, ""},
		{"crlf", "a.csv", "id,name\r\n1,Ann\r\n", CSV, ""},
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
		{"json number", "a.json", "42\n", "", "json-scalar"},
		{"json string", "a.ndjson", `"hello"`, "", "json-scalar"},
		{"ndjson named .csv", "a.csv", "{\"a\":1}\n{\"a\":2}\n", NDJSON, ""},
		{"utf-16", "a.csv", "\xff\xfei\x00d\x00", "", "binary"},
		{"jpeg", "a.csv", "\xff\xd8\xff\xe0", "", "jpeg"},
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

// A real Parquet file, as parquet-go writes it, is recognised whatever its name.
func TestDetectParquetFile(t *testing.T) {
	path := writeParquet(t, []struct {
		ID int64 `parquet:"id"`
	}{{1}, {2}})
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) > HeadSize {
		b = b[:HeadSize]
	}
	if f, err := Detect(b, "upload.csv"); err != nil || f != Parquet {
		t.Fatalf("got %q, %v", f, err)
	}
}

// The dialect of a CSV file is detected when its schema is inferred.
func TestInferDialect(t *testing.T) {
	for _, c := range []struct {
		content string
		want    Dialect
	}{
		{"id,name\n1,Ann\n", Dialect{",", `"`, true}},
		{"id;price\nfoo;1,5\nbar;2,0\n", Dialect{";", `"`, true}}, // decimal commas
		{"a\tb, c\tz\n1\t2, 3\t4\n", Dialect{"\t", `"`, true}},
		{"a|b\n1|2\n", Dialect{"|", `"`, true}},
		{"1,Ann,2024-01-01\n2,Bob,2024-01-02\n", Dialect{",", `"`, false}},
		{"\xef\xbb\xbfname,age\nAnn,3\n", Dialect{",", `"`, true}},
		{"name,city\n'Smith, Ann',Paris\n'Doe, Bob',Rome\n", Dialect{",", "'", true}},
		{",a,b\n0,1,2\n", Dialect{",", `"`, true}}, // pandas: unnamed index column
	} {
		s := infer(t, writeTemp(t, "f.csv", c.content), CSV)
		if got := s.Dialect; got == nil || *got != c.want {
			t.Errorf("Infer(%q).Dialect = %+v, want %+v", c.content, got, c.want)
		}
	}
}
