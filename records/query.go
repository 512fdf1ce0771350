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
	conn, tx, err := beginQuery(ctx, db, orgID, o.Timeout, o.Timeout+5*time.Second)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	defer tx.Rollback()
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
	if res.Columns, err = queryColumns(rows); err != nil {
		return nil, err
	}
	scan := scanner(res.Columns)
	for rows.Next() {
		if len(res.Rows) == o.MaxRows {
			res.Truncated = true
			break
		}
		row, err := scan(rows)
		if err != nil {
			return nil, err
		}
		res.Rows = append(res.Rows, row)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return res, nil
}

// beginQuery opens the read-only transaction user SQL runs in: the organization's query
// role and schema, a statement timeout, and an idle timeout so that a stalled client
// cannot hold it open.
func beginQuery(ctx context.Context, db *sqlx.DB, orgID string, timeout, idle time.Duration) (*sqlx.Conn, *sqlx.Tx, error) {
	conn, err := db.Connx(ctx)
	if err != nil {
		return nil, nil, err
	}
	tx, err := conn.BeginTxx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		conn.Close()
		return nil, nil, err
	}
	for _, q := range []string{
		`SET LOCAL statement_timeout = ` + strconv.FormatInt(timeout.Milliseconds(), 10),
		`SET LOCAL lock_timeout = 1000`,
		`SET LOCAL idle_in_transaction_session_timeout = ` + strconv.FormatInt(idle.Milliseconds(), 10),
		`SET LOCAL search_path = ` + pq.QuoteIdentifier(orgID),
		`SET LOCAL ROLE ` + pq.QuoteIdentifier(datasets.QueryRole(orgID)),
	} {
		if _, err := tx.ExecContext(ctx, q); err != nil {
			tx.Rollback()
			conn.Close()
			return nil, nil, err
		}
	}
	return conn, tx, nil
}

func queryColumns(rows *sqlx.Rows) ([]QueryColumn, error) {
	types, err := rows.ColumnTypes()
	if err != nil {
		return nil, err
	}
	cols := make([]QueryColumn, len(types))
	for i, t := range types {
		nullable, ok := t.Nullable()
		cols[i] = QueryColumn{Name: t.Name(), Type: strings.ToLower(t.DatabaseTypeName()), Nullable: nullable || !ok}
	}
	return cols, nil
}

// scanner reads a row of cols as JSON-ready values.
func scanner(cols []QueryColumn) func(*sqlx.Rows) ([]any, error) {
	vals := make([]any, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	return func(rows *sqlx.Rows) ([]any, error) {
		if err := rows.Scan(ptrs...); err != nil {
			return nil, err
		}
		row := make([]any, len(cols))
		for i := range cols {
			row[i] = jsonValue(cols[i].Type, vals[i])
		}
		return row, nil
	}
}

// StreamBatch is the rows a streamed query fetches at a time.
const StreamBatch = 1000

// StreamQuery runs checked user SQL like RunQuery but reads it through a cursor, StreamBatch
// rows at a time, handing each row to row as it arrives: memory stays flat whatever the row
// count. Timeout bounds each fetch (a slow reader is not a slow query); the transaction may
// sit idle a minute between fetches while the client catches up. columns is called once,
// before the first row. maxRows 0 reads everything.
func StreamQuery(ctx context.Context, db *sqlx.DB, orgID, query string, args []any, timeout time.Duration, maxRows int,
	columns func([]QueryColumn) error, row func([]any) error) (n int, truncated bool, err error) {
	conn, tx, err := beginQuery(ctx, db, orgID, timeout, time.Minute)
	if err != nil {
		return 0, false, err
	}
	defer conn.Close()
	defer tx.Rollback()
	// Prepared (one statement); the cursor runs the checked SELECT with its parameters.
	if _, err := tx.ExecContext(ctx, `DECLARE dp_stream NO SCROLL CURSOR FOR `+query, args...); err != nil {
		return 0, false, err
	}
	var cols []QueryColumn
	var scan func(*sqlx.Rows) ([]any, error)
	for {
		rows, err := tx.QueryxContext(ctx, `FETCH FORWARD `+strconv.Itoa(StreamBatch)+` FROM dp_stream`)
		if err != nil {
			return n, false, err
		}
		if cols == nil {
			if cols, err = queryColumns(rows); err != nil {
				rows.Close()
				return n, false, err
			}
			if err := columns(cols); err != nil {
				rows.Close()
				return n, false, err
			}
			scan = scanner(cols)
		}
		got := 0
		for rows.Next() {
			got++
			if maxRows > 0 && n == maxRows {
				rows.Close()
				return n, true, nil
			}
			r, err := scan(rows)
			if err != nil {
				rows.Close()
				return n, false, err
			}
			if err := row(r); err != nil {
				rows.Close()
				return n, false, err
			}
			n++
		}
		err = rows.Err()
		rows.Close()
		if err != nil {
			return n, false, err
		}
		if got < StreamBatch {
			return n, false, nil
		}
	}
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
