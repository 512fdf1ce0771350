package records

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"time"

	"dataplatform/datasets"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
)

// QueryColumn describes a column of a query's result.
type QueryColumn struct {
	Name     string `json:"name"`
	Type     string `json:"type"`
	Nullable bool   `json:"nullable"`
}

// QueryResult is what a query returned.
type QueryResult struct {
	Columns   []QueryColumn
	Rows      [][]any // JSON-ready values, in the order of Columns
	Truncated bool
	Plan      json.RawMessage // EXPLAIN (FORMAT JSON) of the query, when asked
}

// QueryOptions bound a query: its statement timeout, the rows returned, and whether the
// planner's plan is read first.
type QueryOptions struct {
	Timeout  time.Duration
	MaxRows  int
	Plan     bool
	PlanOnly bool // read the plan and stop: nothing runs
}

// RunQuery runs checked user SQL (a SELECT with $n parameters) in a read-only transaction,
// under the organization's query role, with a statement timeout, and always rolls back.
func RunQuery(ctx context.Context, db *sqlx.DB, orgID, query string, args []any, o QueryOptions) (*QueryResult, error) {
	conn, err := db.Connx(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	tx, err := conn.BeginTxx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, err
	}
	defer tx.Rollback()
	for _, q := range []string{
		`SET LOCAL statement_timeout = ` + strconv.FormatInt(o.Timeout.Milliseconds(), 10),
		`SET LOCAL lock_timeout = 1000`,
		`SET LOCAL idle_in_transaction_session_timeout = ` + strconv.FormatInt(o.Timeout.Milliseconds()+5000, 10),
		`SET LOCAL search_path = ` + pq.QuoteIdentifier(orgID),
		`SET LOCAL ROLE ` + pq.QuoteIdentifier(datasets.QueryRole(orgID)),
	} {
		if _, err := tx.ExecContext(ctx, q); err != nil {
			return nil, err
		}
	}
	res := &QueryResult{Rows: [][]any{}}
	if o.Plan || o.PlanOnly {
		// Prepared too, and so one statement: EXPLAIN runs nothing (no ANALYZE).
		var plan []byte
		if err := tx.QueryRowxContext(ctx, `EXPLAIN (FORMAT JSON) `+query, args...).Scan(&plan); err != nil {
			return nil, err
		}
		res.Plan = plan
		if o.PlanOnly {
			return res, nil
		}
	}
	// Prepared: the extended protocol takes exactly one statement, so "RESET ROLE; SELECT ..."
	// cannot ride in with the simple protocol lib/pq uses for queries without arguments.
	st, err := tx.PreparexContext(ctx, query)
	if err != nil {
		return nil, err
	}
	defer st.Close()
	rows, err := st.QueryxContext(ctx, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	types, err := rows.ColumnTypes()
	if err != nil {
		return nil, err
	}
	for _, t := range types {
		nullable, ok := t.Nullable()
		res.Columns = append(res.Columns, QueryColumn{Name: t.Name(), Type: strings.ToLower(t.DatabaseTypeName()), Nullable: nullable || !ok})
	}
	vals := make([]any, len(types))
	ptrs := make([]any, len(types))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	for rows.Next() {
		if len(res.Rows) == o.MaxRows {
			res.Truncated = true
			break
		}
		if err := rows.Scan(ptrs...); err != nil {
			return nil, err
		}
		row := make([]any, len(types))
		for i := range types {
			row[i] = jsonValue(res.Columns[i].Type, vals[i])
		}
		res.Rows = append(res.Rows, row)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return res, nil
}

// Objects are the rows as JSON objects keyed by column name (a later column of the same
// name wins).
func (r *QueryResult) Objects() []map[string]any {
	out := make([]map[string]any, len(r.Rows))
	for i, row := range r.Rows {
		obj := make(map[string]any, len(row))
		for j, v := range row {
			obj[r.Columns[j].Name] = v
		}
		out[i] = obj
	}
	return out
}

// jsonValue is a database value as JSON: numerics as numbers, JSON as itself, dates as
// YYYY-MM-DD, times in RFC 3339, text as strings.
func jsonValue(typ string, v any) any {
	switch x := v.(type) {
	case []byte:
		switch typ {
		case "json", "jsonb":
			return json.RawMessage(x)
		case "numeric":
			if json.Valid(x) {
				return json.Number(x)
			}
		}
		return string(x)
	case time.Time:
		if typ == "date" {
			return x.Format(time.DateOnly)
		}
		return x.UTC().Format(time.RFC3339Nano)
	}
	return v
}

// IsTimeout reports a statement PostgreSQL cancelled for its statement timeout.
func IsTimeout(err error) bool {
	var pe *pq.Error
	return errors.As(err, &pe) && pe.Code == "57014"
}
