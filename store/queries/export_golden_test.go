package queries

import (
	"bytes"
	"testing"

	"dataplatform/store/export/exporttest"
	"dataplatform/store/usersql"
)

// TestQueryExportGolden writes the sample rows in every format of the query export job and
// compares each file with its golden one.
func TestQueryExportGolden(t *testing.T) {
	for _, c := range []struct {
		name, format string
		o            ExportOptions
		empty, dup   bool
	}{
		{"csv", "csv", ExportOptions{IncludeHeaders: true, Delimiter: ",", QuoteChar: `"`}, false, false},
		{"csv-tab-noheader", "csv", ExportOptions{IncludeHeaders: false, Delimiter: "\t", QuoteChar: `"`}, false, false},
		{"csv-semicolon-singlequote", "csv", ExportOptions{IncludeHeaders: true, Delimiter: ";", QuoteChar: `'`}, false, false},
		{"csv-pipe", "csv", ExportOptions{IncludeHeaders: true, Delimiter: "|", QuoteChar: `"`}, false, false},
		{"csv-empty", "csv", ExportOptions{IncludeHeaders: true, Delimiter: ",", QuoteChar: `"`}, true, false},
		{"json", "json", ExportOptions{IncludeHeaders: true, Delimiter: ",", QuoteChar: `"`}, false, false},
		{"json-empty", "json", ExportOptions{IncludeHeaders: true, Delimiter: ",", QuoteChar: `"`}, true, false},
		{"excel", "excel", ExportOptions{IncludeHeaders: true, Delimiter: ",", QuoteChar: `"`}, false, false},
		{"excel-noheader", "excel", ExportOptions{IncludeHeaders: false, Delimiter: ",", QuoteChar: `"`}, false, false},
		{"excel-empty", "excel", ExportOptions{IncludeHeaders: true, Delimiter: ",", QuoteChar: `"`}, true, false},
		{"parquet", "parquet", ExportOptions{IncludeHeaders: true, Delimiter: ",", QuoteChar: `"`}, false, false},
		{"parquet-empty", "parquet", ExportOptions{IncludeHeaders: true, Delimiter: ",", QuoteChar: `"`}, true, false},
		{"parquet-duplicate-names", "parquet", ExportOptions{IncludeHeaders: true, Delimiter: ",", QuoteChar: `"`}, false, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			var cols []usersql.QueryColumn
			for i, sc := range exporttest.Columns {
				name := sc.Name
				if c.dup && i >= 6 && i <= 8 {
					name = "n" // n, n_2, n_3, n_4
				}
				cols = append(cols, usersql.QueryColumn{Name: name, Type: sc.PG, Nullable: true})
			}
			var buf bytes.Buffer
			w, err := newRowWriter(c.format, &buf, cols, c.o)
			if err != nil {
				t.Fatal(err)
			}
			if !c.empty {
				for _, row := range exporttest.QueryValues() {
					if err := w.row(row); err != nil {
						t.Fatal(err)
					}
				}
			}
			if err := w.close(); err != nil {
				t.Fatal(err)
			}
			exporttest.Golden(t, "query-"+c.name, buf.Bytes())
		})
	}
}
