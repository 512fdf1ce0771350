package records

import (
	"context"
	"database/sql"
	"io"
	"strconv"
	"strings"

	"dataplatform/store"
	"dataplatform/store/datasets"
	"dataplatform/store/export"
	"dataplatform/store/ingest"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
)

// ExportQuery selects what an export holds and shapes its file.
type ExportQuery struct {
	Format    string // csv, json, ndjson, parquet, excel
	Fields    []string
	Filters   []Filter
	Delimiter string // csv: one of Delimiters
	Header    bool   // csv and excel: a first row of field names
	Gzip      bool
	Escape    bool // csv and excel: escape formulas in text (export.Options.EscapeFormulas)
}

// Delimiters are the CSV delimiters an export may use.
var Delimiters = []string{",", ";", "\t", "|"}

// Export is an export's records: counted, and read from the database as they are written.
type Export struct {
	Total int64 // the records the export holds
	rows  *sql.Rows
	eq    *ExportQuery
	cols  []export.Column
	// A large export PostgreSQL can write itself (copyQuery) is read with COPY ... TO
	// STDOUT on a connection of its own, under the request's context.
	out       *store.CopyOut
	copyQuery string
	ctx       context.Context
}

// CopyMinRows is the size from which an export is read with COPY ... TO STDOUT (when its
// file is PostgreSQL's COPY output as it is: copyable): below it the connection COPY needs
// costs more than it saves. A variable for the tests.
var CopyMinRows int64 = 10_000

// OpenExport counts the export's records and runs its SELECT: every field as the text of its
// JSON value for csv (datasets.TextValue: true/false, RFC 3339 UTC times, arrays as JSON),
// one JSON object per record for json/ndjson (the record a read gives), the typed columns for
// parquet and excel. Rows stream from the database as they are written, so memory does not
// grow with the table.
func (t *Table) OpenExport(ctx context.Context, q sqlx.QueryerContext, eq *ExportQuery) (*Export, error) {
	var b builder
	if err := t.where(&b, eq.Filters, ""); err != nil {
		return nil, err
	}
	where := ` WHERE ` + strings.Join(b.conds, " AND ")
	order := ""
	if t.key != "" {
		order = ` ORDER BY ` + pq.QuoteIdentifier(t.key)
	}
	x := &Export{eq: eq, cols: t.exportColumns(eq.Fields)}
	var err error
	if x.Total, err = t.exactCount(ctx, q, where, b.args); err != nil {
		return nil, err
	}
	if db, ok := q.(*sqlx.DB); ok && len(b.args) == 0 && x.Total >= CopyMinRows {
		if cq := t.copyQuery(eq, x.cols, where, order); cq != "" {
			if out, err := store.OpenCopyOut(ctx, db); err == nil { // else the SELECT below reads it
				x.out, x.copyQuery, x.ctx = out, cq, ctx
				return x, nil
			}
		}
	}
	sel, from := "", ` FROM `+t.Qualified()+where+order
	switch eq.Format {
	case "csv":
		// Each field as the text of its JSON value (datasets.TextValue), made by PostgreSQL.
		// Fields whose text never needs CSV quoting (numbers, dates, times, booleans, uuids:
		// export.Column.Plain) are joined by PostgreSQL into one value per run, so the client
		// decodes a few values per row instead of one per field.
		var parts []string
		var run []string
		flushRun := func() {
			if len(run) > 0 {
				parts = append(parts, `concat_ws(`+pq.QuoteLiteral(eq.Delimiter)+`, `+strings.Join(run, ", ")+`)`)
				run = nil
			}
		}
		for _, c := range x.cols {
			v := datasets.TextValue(t.cols[c.Name], pq.QuoteIdentifier(c.Name))
			if c.Plain {
				run = append(run, `coalesce(`+v+`, '')`)
			} else {
				flushRun()
				parts = append(parts, v)
			}
		}
		flushRun()
		sel = strings.Join(parts, ", ")
	case "json", "ndjson":
		sel, from = `to_json(r)::text`, ` FROM (SELECT `+t.rowJSON(eq.Fields, "")+from+`) r`
	default:
		parts := make([]string, len(eq.Fields))
		for i, f := range eq.Fields {
			parts[i] = pq.QuoteIdentifier(f)
			switch c := t.cols[f]; {
			case c.Type == ingest.JSONB || c.Type.IsArray() || c.Type == ingest.Numeric || c.Type == ingest.UUID:
				parts[i] = datasets.TextValue(c, parts[i]) // as text, exactly (a uuid without JSON's quotes)
			case eq.Format == "parquet" && c.Type == ingest.Date:
				// Parquet's own numbers (days, microseconds since 1970), counted by PostgreSQL:
				// the driver's parsing of dates and times was most of a large export's time.
				// An infinite one fails the export, as it did as a time.
				parts[i] = `(` + parts[i] + ` - DATE '1970-01-01')`
			case eq.Format == "parquet" && c.Type == ingest.Timestamptz:
				parts[i] = `(extract(epoch FROM ` + parts[i] + `) * 1000000)::bigint`
			}
		}
		sel = strings.Join(parts, ", ")
	}
	if x.rows, err = q.QueryContext(ctx, `SELECT `+sel+from, b.args...); err != nil {
		return nil, err
	}
	return x, nil
}

// copyQuery is the COPY ... TO STDOUT whose output is the export's file (its csv lines, its
// JSON objects one per line), or "" when PostgreSQL cannot write it as the SELECT path does:
// csv with formulas escaped, or of one field (COPY quotes a lone \. there). The csv fields
// are the SELECT path's values (datasets.TextValue) each quoted by COPY as that path quotes
// them: when it holds the delimiter, a quote or a line break, or is empty (NULL is nothing).
// A JSON object holds no raw control character, so csv with \x01 as its quote and \x02 as
// its delimiter writes each object as it is. The csv rows are ordered by the table's key
// column (its output field of the same name is its text).
func (t *Table) copyQuery(eq *ExportQuery, cols []export.Column, where, order string) string {
	var sel, opts string
	switch eq.Format {
	case "csv":
		if eq.Escape || len(cols) < 2 {
			return ""
		}
		parts := make([]string, len(cols))
		for i, c := range cols {
			parts[i] = copyText(t.cols[c.Name], pq.QuoteIdentifier(c.Name))
		}
		if t.key != "" {
			order = ` ORDER BY ` + t.Qualified() + `.` + pq.QuoteIdentifier(t.key)
		}
		sel, opts = strings.Join(parts, ", ")+` FROM `+t.Qualified()+where+order, `FORMAT csv, DELIMITER `+pq.QuoteLiteral(eq.Delimiter)
	case "json", "ndjson":
		sel = `to_json(r)::text FROM (SELECT ` + t.rowJSON(eq.Fields, "") + ` FROM ` + t.Qualified() + where + order + `) r`
		opts = `FORMAT csv, QUOTE E'\x01', DELIMITER E'\x02'`
	default:
		return ""
	}
	return `COPY (SELECT ` + sel + `) TO STDOUT WITH (` + opts + `)`
}

// copyText is column c's value (ref) as COPY writes it into a csv cell: TextValue, but the
// value itself where COPY's output of it is already that text (a cast to text made a copy of
// every value of a large export for nothing).
func copyText(c ingest.Column, ref string) string {
	switch c.Type {
	case ingest.Integer, ingest.BigInt, ingest.Numeric, ingest.Date, ingest.UUID, ingest.Text, ingest.JSONB:
		return ref
	}
	return datasets.TextValue(c, ref)
}

// Write writes the file to w: csv quoted as COPY ... CSV quotes (NULL as nothing, an empty
// string as ""), json an array of objects, ndjson an object per line, parquet and excel typed
// by the fields' types. On an error the file is left incomplete.
func (x *Export) Write(w io.Writer) error {
	f, err := export.New(w, x.eq.Format, x.cols, export.Options{Header: x.eq.Header, Delimiter: x.eq.Delimiter, Quote: `"`, QuoteEmpty: true,
		Schema: "record", Gzip: x.eq.Gzip, EscapeFormulas: x.eq.Escape})
	if err != nil {
		return err
	}
	if x.out != nil {
		return f.Raw(func(w io.Writer) error {
			_, err := x.out.Copy(x.ctx, x.copyQuery, w)
			return err
		})
	}
	return f.Copy(x.rows)
}

// Close releases the export's rows (or its COPY connection).
func (x *Export) Close() error {
	if x.out != nil {
		return x.out.Close()
	}
	return x.rows.Close()
}

// exportColumns are fields as the columns of an export's file: typed by the fields' types,
// plain (joined in runs by the csv SELECT) where their text never needs CSV quoting.
func (t *Table) exportColumns(fields []string) []export.Column {
	cols := make([]export.Column, len(fields))
	for i, f := range fields {
		c := export.Column{Name: f, Kind: export.Text}
		switch t.cols[f].Type {
		case ingest.Integer:
			c.Kind = export.Int32
		case ingest.BigInt:
			c.Kind = export.Int64
		case ingest.Numeric:
			c.Kind = export.Double
		case ingest.Boolean:
			c.Kind = export.Bool
		case ingest.Date:
			c.Kind = export.Date
		case ingest.Timestamptz:
			c.Kind = export.Timestamp
		case ingest.JSONB:
			c.Kind = export.JSON
		}
		switch t.cols[f].Type {
		case ingest.Boolean, ingest.Integer, ingest.BigInt, ingest.Numeric, ingest.Date, ingest.Timestamptz, ingest.UUID:
			c.Plain = true
		}
		cols[i] = c
	}
	return cols
}

// Column is a field's column (system fields included).
func (t *Table) Column(name string) ingest.Column { return t.cols[name] }

// Exact is fields (comma-separated) exactly, or every field when empty.
func (t *Table) Exact(fields string) ([]string, error) {
	if strings.TrimSpace(fields) == "" {
		return t.Fields(), nil
	}
	var out []string
	for _, f := range strings.Split(fields, ",") {
		f = strings.TrimSpace(f)
		if _, ok := t.cols[f]; !ok {
			return nil, &FieldError{"query.fields", "unknown_field", "no field " + strconv.Quote(f)}
		}
		out = append(out, f)
	}
	return out, nil
}
