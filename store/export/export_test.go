package export

import (
	"bytes"
	"database/sql/driver"
	"fmt"
	"testing"

	"dataplatform/store/ingest"
)

// The record API's columns (store/records): kinds by the fields' types; plain text joined in
// runs by its csv SELECT.
func recordColumns() []Column {
	var cols []Column
	for _, c := range sampleColumns {
		k := Text
		switch c.Record {
		case ingest.Integer:
			k = Int32
		case ingest.BigInt:
			k = Int64
		case ingest.Numeric:
			k = Double
		case ingest.Boolean:
			k = Bool
		case ingest.Date:
			k = Date
		case ingest.Timestamptz:
			k = Timestamp
		case ingest.JSONB:
			k = JSON
		}
		cols = append(cols, Column{Name: c.Name, Kind: k, Plain: plain(c.Record)})
	}
	return cols
}

// The query export job's columns (store/queries): kinds by the query's column types.
func queryColumns(dup bool) []Column {
	var cols []Column
	for i, c := range sampleColumns {
		k := Text
		switch c.PG {
		case "int2", "int4":
			k = Int32
		case "int8":
			k = Int64
		case "float4", "float8", "numeric":
			k = Double
		case "bool":
			k = Bool
		case "date":
			k = Date
		case "timestamptz":
			k = Timestamp
		case "jsonb":
			k = JSON
		}
		name := c.Name
		if dup && i >= 6 && i <= 8 {
			name = "n" // n, n_2, n_3, n_4
		}
		cols = append(cols, Column{Name: name, Kind: k})
	}
	return cols
}

// TestGolden writes the sample rows in every format, with each caller's options, and
// compares each file with the one its writer made before the two were merged.
func TestGolden(t *testing.T) {
	record := func(header bool, delim string) Options {
		return Options{Header: header, Delimiter: delim, Quote: `"`, QuoteEmpty: true, Schema: "record"}
	}
	query := func(header bool, delim, quote string) Options {
		return Options{Header: header, Delimiter: delim, Quote: quote, QuoteEmpty: true, BracketLines: true, Schema: "row"}
	}
	gzipped := func(o Options) Options { o.Gzip = true; return o }
	escaped := func(o Options) Options { o.EscapeFormulas = true; return o }
	for _, c := range []struct {
		name, format string
		o            Options
		empty, dup   bool
		formulas     bool // the sample with formulaRows
	}{
		{"records-csv", "csv", record(true, ","), false, false, false},
		{"records-csv-semicolon-noheader", "csv", record(false, ";"), false, false, false},
		{"records-csv-tab", "csv", record(true, "\t"), false, false, false},
		{"records-csv-pipe", "csv", record(true, "|"), false, false, false},
		{"records-csv-empty", "csv", record(true, ","), true, false, false},
		{"records-csv-gzip", "csv", gzipped(record(true, ",")), false, false, false},
		{"records-json", "json", record(true, ","), false, false, false},
		{"records-json-empty", "json", record(true, ","), true, false, false},
		{"records-json-gzip", "json", gzipped(record(true, ",")), false, false, false},
		{"records-ndjson", "ndjson", record(true, ","), false, false, false},
		{"records-ndjson-empty", "ndjson", record(true, ","), true, false, false},
		{"records-parquet", "parquet", record(true, ","), false, false, false},
		{"records-parquet-empty", "parquet", record(true, ","), true, false, false},
		{"records-parquet-gzip", "parquet", gzipped(record(true, ",")), false, false, false},
		{"records-excel", "excel", record(true, ","), false, false, false},
		{"records-excel-noheader", "excel", record(false, ","), false, false, false},
		{"records-excel-empty", "excel", record(true, ","), true, false, false},
		{"records-excel-gzip", "excel", gzipped(record(true, ",")), false, false, false},

		{"query-csv", "csv", query(true, ",", `"`), false, false, false},
		{"query-csv-tab-noheader", "csv", query(false, "\t", `"`), false, false, false},
		{"query-csv-semicolon-singlequote", "csv", query(true, ";", `'`), false, false, false},
		{"query-csv-pipe", "csv", query(true, "|", `"`), false, false, false},
		{"query-csv-empty", "csv", query(true, ",", `"`), true, false, false},
		{"query-json", "json", query(true, ",", `"`), false, false, false},
		{"query-json-empty", "json", query(true, ",", `"`), true, false, false},
		{"query-excel", "excel", query(true, ",", `"`), false, false, false},
		{"query-excel-noheader", "excel", query(false, ",", `"`), false, false, false},
		{"query-excel-empty", "excel", query(true, ",", `"`), true, false, false},
		{"query-parquet", "parquet", query(true, ",", `"`), false, false, false},
		{"query-parquet-empty", "parquet", query(true, ",", `"`), true, false, false},
		{"query-parquet-duplicate-names", "parquet", query(true, ",", `"`), false, true, false},

		// Formulas: raw unless asked (csv's default), escaped in text cells only when asked.
		{"records-csv-formulas", "csv", record(true, ","), false, false, true},
		{"records-csv-formulas-escaped", "csv", escaped(record(true, ",")), false, false, true},
		{"records-excel-formulas-escaped", "excel", escaped(record(true, ",")), false, false, true},
		{"query-csv-formulas", "csv", query(true, ",", `"`), false, false, true},
		{"query-csv-formulas-escaped", "csv", escaped(query(true, ",", `"`)), false, false, true},
		{"query-excel-formulas-escaped", "excel", escaped(query(true, ",", `"`)), false, false, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.formulas {
				base := sampleRows
				sampleRows = append(append([][]any(nil), base...), formulaRows...)
				defer func() { sampleRows = base }()
			}
			var buf bytes.Buffer
			if c.name[:len("records")] == "records" {
				w, err := New(&buf, c.format, recordColumns(), c.o)
				if err != nil {
					t.Fatal(err)
				}
				some := func(rows [][]driver.Value) [][]driver.Value {
					if c.empty {
						return nil
					}
					return rows
				}
				names := sampleNames()
				var rows [][]driver.Value
				switch c.format {
				case "csv":
					cells, quoted := recordCSV(c.o.Delimiter)
					rows, names = cells, make([]string, len(quoted))
					for i := range names {
						names[i] = fmt.Sprint("c", i)
					}
				case "json", "ndjson":
					rows, names = recordJSON(), []string{"to_json"}
				default:
					rows = recordTyped()
				}
				if err := w.Copy(sqlRows(t, names, some(rows))); err != nil {
					t.Fatal(err)
				}
			} else {
				w, err := New(&buf, c.format, queryColumns(c.dup), c.o)
				if err != nil {
					t.Fatal(err)
				}
				if !c.empty {
					for _, row := range queryValues() {
						if err := w.Row(row); err != nil {
							t.Fatal(err)
						}
					}
				}
				if err := w.Close(); err != nil {
					t.Fatal(err)
				}
			}
			golden(t, c.name, buf.Bytes())
		})
	}
}
