package datasets

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	"dataplatform/store/ingest"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
)

// Preview reads rows of table t in key order, from offset, and counts its live rows; names
// are its columns, led by the record id on a dataset's own table (which holds the file's
// ids when they were its key). Values come as JSON would show them: numeric, uuid and text
// as strings, arrays and jsonb as JSON, dates as YYYY-MM-DD, NULL as nil.
func Preview(ctx context.Context, q sqlx.QueryerContext, t TableDef, limit, offset int) (names []string, rows [][]*any, total int64, err error) {
	cols := t.Columns
	if t.System() {
		cols = append([]ingest.Column{{Name: "id", Type: ingest.BigInt}}, cols...)
	}
	for _, c := range cols {
		names = append(names, c.Name)
	}
	sel := ""
	for i, c := range cols {
		if i > 0 {
			sel += ", "
		}
		if c.Type.IsArray() { // as a JSON array, not PostgreSQL's {a,b} literal
			sel += "to_json(" + pq.QuoteIdentifier(c.Name) + ")"
		} else {
			sel += pq.QuoteIdentifier(c.Name)
		}
	}
	order := ""
	if len(t.PrimaryKey) > 0 {
		keys := make([]string, len(t.PrimaryKey))
		for i, k := range t.PrimaryKey {
			keys[i] = pq.QuoteIdentifier(k)
		}
		order = ` ORDER BY ` + strings.Join(keys, ", ")
	}
	live := ""
	if t.System() {
		live = ` WHERE deleted_at IS NULL`
	}
	if err := sqlx.GetContext(ctx, q, &total, `SELECT count(*) FROM `+t.Qualified()+live); err != nil {
		return nil, nil, 0, err
	}
	rs, err := q.QueryxContext(ctx, `SELECT `+sel+` FROM `+t.Qualified()+live+order+` LIMIT $1 OFFSET $2`, limit, offset)
	if err != nil {
		return nil, nil, 0, err
	}
	defer rs.Close()
	rows = [][]*any{}
	for rs.Next() {
		vals, err := rs.SliceScan()
		if err != nil {
			return nil, nil, 0, err
		}
		row := make([]*any, len(vals))
		for i, v := range vals {
			switch x := v.(type) {
			case []byte: // numeric, uuid, jsonb arrive as text
				if cols[i].Type == ingest.JSONB || cols[i].Type.IsArray() {
					vals[i] = json.RawMessage(x)
				} else {
					vals[i] = string(x)
				}
			case time.Time:
				if cols[i].Type == ingest.Date {
					vals[i] = x.Format(time.DateOnly)
				}
			}
			if vals[i] != nil {
				row[i] = &vals[i]
			}
		}
		rows = append(rows, row)
	}
	return names, rows, total, rs.Err()
}
