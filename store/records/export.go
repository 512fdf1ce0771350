package records

import (
	"context"
	"database/sql"
	"strconv"
	"strings"

	"dataplatform/store/ingest"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
)

// ExportQuery selects what an export holds.
type ExportQuery struct {
	Format    string // csv, json, ndjson, parquet, excel
	Fields    []string
	Filters   []Filter
	Delimiter string // csv: one of , ; TAB |

	// quoted tells, per value of a csv row, whether it is one field to quote as needed (else
	// a run of fields that never need quoting, joined already).
	quoted []bool
}

// Quoted is, after ExportRows, which values of a csv row are single fields.
func (eq *ExportQuery) Quoted() []bool { return eq.quoted }

// Delimiters are the CSV delimiters an export may use.
var Delimiters = []string{",", ";", "\t", "|"}

// ExportRows runs the export's SELECT: every field as text for csv, one JSON object per
// record for json/ndjson, the typed columns for parquet and excel. Rows stream from the
// database as they are read, so memory does not grow with the table.
func (t *Table) ExportRows(ctx context.Context, q sqlx.QueryerContext, eq *ExportQuery) (*sql.Rows, int64, error) {
	var b builder
	if err := t.where(&b, eq.Filters, ""); err != nil {
		return nil, 0, err
	}
	where := ` WHERE ` + strings.Join(b.conds, " AND ")
	order := ""
	if t.key != "" {
		order = ` ORDER BY ` + pq.QuoteIdentifier(t.key)
	}
	var total int64
	if err := sqlx.GetContext(ctx, q, &total, `SELECT count(*) FROM `+t.Qualified()+where, b.args...); err != nil {
		return nil, 0, err
	}
	var sel string
	switch eq.Format {
	case "csv":
		// Each field as its type's text output (what COPY writes; booleans t/f like COPY).
		// Fields whose text never needs CSV quoting (numbers, dates, times, booleans, uuids)
		// are joined by PostgreSQL into one value per run, so the client decodes a few values
		// per row instead of one per field.
		var parts []string
		var run []string
		flushRun := func() {
			if len(run) > 0 {
				parts = append(parts, `concat_ws(`+pq.QuoteLiteral(eq.Delimiter)+`, `+strings.Join(run, ", ")+`)`)
				eq.quoted = append(eq.quoted, false)
				run = nil
			}
		}
		for _, f := range eq.Fields {
			q := pq.QuoteIdentifier(f)
			switch t.cols[f].Type {
			case ingest.Boolean:
				run = append(run, `CASE WHEN `+q+` THEN 't' WHEN NOT `+q+` THEN 'f' ELSE '' END`)
			case ingest.Integer, ingest.BigInt, ingest.Numeric, ingest.Date, ingest.Timestamptz, ingest.UUID:
				run = append(run, `coalesce(`+q+`::text, '')`)
			default:
				flushRun()
				parts = append(parts, q+`::text`)
				eq.quoted = append(eq.quoted, true)
			}
		}
		flushRun()
		sel = strings.Join(parts, ", ")
	case "json", "ndjson":
		rows, err := q.QueryContext(ctx, `SELECT to_json(r)::text FROM (SELECT `+rowJSON(eq.Fields)+` FROM `+t.Qualified()+where+order+`) r`, b.args...)
		return rows, total, err
	default:
		parts := make([]string, len(eq.Fields))
		for i, f := range eq.Fields {
			parts[i] = pq.QuoteIdentifier(f)
			if c := t.cols[f]; c.Type == ingest.JSONB || c.Type.IsArray() || c.Type == ingest.Numeric || c.Type == ingest.UUID {
				parts[i] = "to_json(" + parts[i] + ")::text" // as text, exactly
			}
		}
		sel = strings.Join(parts, ", ")
	}
	rows, err := q.QueryContext(ctx, `SELECT `+sel+` FROM `+t.Qualified()+where+order, b.args...)
	return rows, total, err
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
