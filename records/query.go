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
	Rows      []json.RawMessage
	Truncated bool
}

// RunQuery runs checked user SQL (a SELECT with $n parameters) in a read-only transaction,
// under the organization's query role, with a statement timeout, and always rolls back. At
// most maxRows rows are returned.
func RunQuery(ctx context.Context, db *sqlx.DB, orgID, query string, args []any, timeout time.Duration, maxRows int) (*QueryResult, error) {
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
		`SET LOCAL statement_timeout = ` + strconv.FormatInt(timeout.Milliseconds(), 10),
		`SET LOCAL lock_timeout = 1000`,
		`SET LOCAL idle_in_transaction_session_timeout = ` + strconv.FormatInt(timeout.Milliseconds()+5000, 10),
		`SET LOCAL search_path = ` + pq.QuoteIdentifier(orgID),
		`SET LOCAL ROLE ` + pq.QuoteIdentifier(datasets.QueryRole(orgID)),
	} {
		if _, err := tx.ExecContext(ctx, q); err != nil {
			return nil, err
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
	res := &QueryResult{Rows: []json.RawMessage{}}
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
		if len(res.Rows) == maxRows {
			res.Truncated = true
			break
		}
		if err := rows.Scan(ptrs...); err != nil {
			return nil, err
		}
		obj := make(map[string]any, len(types))
		for i, t := range types {
			obj[t.Name()] = jsonValue(res.Columns[i].Type, vals[i])
		}
		b, err := json.Marshal(obj)
		if err != nil {
			return nil, err
		}
		res.Rows = append(res.Rows, b)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return res, nil
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
