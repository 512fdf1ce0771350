package records

import (
	"context"
	"database/sql"
	"strconv"
	"strings"

	"dataplatform/ingest"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
)

// ExportQuery selects what an export holds.
type ExportQuery struct {
	Format    string // csv, json, ndjson, parquet, excel
	Fields    []string
	Filters   []Filter
	Delimiter string // csv: one of , ; TAB |
}

// Delimiters are the CSV delimiters an export may use.
var Delimiters = []string{",", ";", "\t", "|"}

// csvField is the SQL expression of one field as a CSV field: as COPY ... CSV writes it
// (NULL empty, an empty string "", quotes doubled inside quotes when needed).
func csvField(expr, delim string) string {
	v := expr + "::text"
	special := `[` + map[string]string{",": ",", ";": ";", "\t": `\t`, "|": `|`}[delim] + `"\r\n]`
	return `CASE WHEN ` + expr + ` IS NULL THEN '' WHEN ` + v + ` = '' OR ` + v + ` ~ ` + pq.QuoteLiteral(special) +
		` THEN '"' || replace(` + v + `, '"', '""') || '"' ELSE ` + v + ` END`
}

// ExportRows runs the export's SELECT: one text line per record for csv (the CSV line) and
// json/ndjson (the JSON object), the typed columns for parquet and excel. Rows stream from the
// database as they are read, so memory does not grow with the table.
func (t *Table) ExportRows(ctx context.Context, q sqlx.QueryerContext, eq ExportQuery) (*sql.Rows, int64, error) {
	var b builder
	if err := t.where(&b, eq.Filters, ""); err != nil {
		return nil, 0, err
	}
	where := ` WHERE ` + strings.Join(b.conds, " AND ")
	var total int64
	if err := sqlx.GetContext(ctx, q, &total, `SELECT count(*) FROM `+t.Qualified()+where, b.args...); err != nil {
		return nil, 0, err
	}
	var sel string
	switch eq.Format {
	case "csv":
		parts := make([]string, len(eq.Fields))
		for i, f := range eq.Fields {
			parts[i] = csvField(pq.QuoteIdentifier(f), eq.Delimiter)
		}
		sel = `concat_ws(` + pq.QuoteLiteral(eq.Delimiter) + `, ` + strings.Join(parts, ", ") + `)`
	case "json", "ndjson":
		rows, err := q.QueryContext(ctx, `SELECT to_json(r)::text FROM (SELECT `+rowJSON(eq.Fields)+` FROM `+t.Qualified()+where+
			` ORDER BY id) r`, b.args...)
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
	rows, err := q.QueryContext(ctx, `SELECT `+sel+` FROM `+t.Qualified()+where+` ORDER BY id`, b.args...)
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
