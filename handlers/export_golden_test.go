package handlers

import (
	"bytes"
	"compress/gzip"
	"database/sql/driver"
	"fmt"
	"io"
	"testing"

	"dataplatform/store/datasets"
	"dataplatform/store/export/exporttest"
	"dataplatform/store/ingest"
	"dataplatform/store/records"
)

// TestRecordExportGolden writes the sample rows in every format of the record API's export
// and compares each file with its golden one.
func TestRecordExportGolden(t *testing.T) {
	var cols []ingest.Column
	for _, c := range exporttest.Columns {
		cols = append(cols, ingest.Column{Name: c.Name, Type: c.Record})
	}
	table := records.NewTable(datasets.TableDef{Columns: cols})
	fields := exporttest.Names()
	for _, c := range []struct {
		name, format, delim string
		header, gzip, empty bool
	}{
		{"csv", "csv", ",", true, false, false},
		{"csv-semicolon-noheader", "csv", ";", false, false, false},
		{"csv-tab", "csv", "\t", true, false, false},
		{"csv-pipe", "csv", "|", true, false, false},
		{"csv-empty", "csv", ",", true, false, true},
		{"csv-gzip", "csv", ",", true, true, false},
		{"json", "json", ",", true, false, false},
		{"json-empty", "json", ",", true, false, true},
		{"json-gzip", "json", ",", true, true, false},
		{"ndjson", "ndjson", ",", true, false, false},
		{"ndjson-empty", "ndjson", ",", true, false, true},
		{"parquet", "parquet", ",", true, false, false},
		{"parquet-empty", "parquet", ",", true, false, true},
		{"parquet-gzip", "parquet", ",", true, true, false},
		{"excel", "excel", ",", true, false, false},
		{"excel-noheader", "excel", ",", false, false, false},
		{"excel-empty", "excel", ",", true, false, true},
		{"excel-gzip", "excel", ",", true, true, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			var buf bytes.Buffer
			var w io.Writer = &buf
			var gz *gzip.Writer
			if c.gzip {
				gz, _ = gzip.NewWriterLevel(&buf, gzip.BestSpeed)
				w = gz
			}
			some := func(rows [][]driver.Value) [][]driver.Value {
				if c.empty {
					return nil
				}
				return rows
			}
			var err error
			switch c.format {
			case "csv":
				cells, quoted := exporttest.RecordCSV(c.delim)
				names := make([]string, len(quoted))
				for i := range names {
					names[i] = fmt.Sprint("c", i)
				}
				err = writeCSV(w, exporttest.SQLRows(t, names, some(cells)), fields, quoted, c.delim, c.header)
			case "json", "ndjson":
				err = writeLines(w, exporttest.SQLRows(t, []string{"to_json"}, some(exporttest.RecordJSON())), c.format)
			case "parquet":
				err = records.WriteParquet(w, exporttest.SQLRows(t, fields, some(exporttest.RecordTyped())), table, fields)
			case "excel":
				err = records.WriteExcel(w, exporttest.SQLRows(t, fields, some(exporttest.RecordTyped())), table, fields, c.header)
			}
			if err != nil {
				t.Fatal(err)
			}
			if gz != nil {
				gz.Close()
			}
			exporttest.Golden(t, "records-"+c.name, buf.Bytes())
		})
	}
}
