package datasets

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"dataplatform/store/ingest"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
)

// Preview reads rows of table t in key order, from offset, and counts its live rows; names
// are its columns, led by the record id on a dataset's own table (which holds the file's
// ids when they were its key). Each value is the JSON a record read gives (JSONValue):
// numbers as JSON numbers, booleans, JSON documents and arrays as themselves, dates as
// YYYY-MM-DD, timestamps in RFC 3339 UTC, text as strings; NULL as nil.
func Preview(ctx context.Context, q sqlx.QueryerContext, t TableDef, limit, offset int) (names []string, rows [][]*any, total int64, err error) {
	cols := t.Columns
	if t.GeneratedID() {
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
		sel += "to_json(" + JSONValue(c, pq.QuoteIdentifier(c.Name)) + ")"
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
		return nil, nil, 0, fmt.Errorf("preview dataset: %w", err)
	}
	rs, err := q.QueryxContext(ctx, `SELECT `+sel+` FROM `+t.Qualified()+live+order+` LIMIT $1 OFFSET $2`, limit, offset)
	if err != nil {
		return nil, nil, 0, fmt.Errorf("preview dataset: %w", err)
	}
	defer rs.Close()
	rows = [][]*any{}
	vals := make([][]byte, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	for rs.Next() {
		if err := rs.Scan(ptrs...); err != nil {
			return nil, nil, 0, fmt.Errorf("preview dataset: %w", err)
		}
		row := make([]*any, len(vals))
		for i, v := range vals {
			if v != nil { // SQL NULL stays nil; a JSON null is the document null
				var x any = json.RawMessage(v)
				row[i] = &x
			}
		}
		rows = append(rows, row)
	}
	return names, rows, total, rs.Err()
}
