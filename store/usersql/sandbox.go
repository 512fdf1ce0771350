package usersql

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"dataplatform/store/datasets"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
	pg_query "github.com/pganalyze/pg_query_go/v6"
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
	Truncated bool    // more rows were left unread (at MaxRows or MaxBytes)
	// TooLarge says the rows stopped at MaxBytes (else, when Truncated, at MaxRows).
	TooLarge bool
	Bytes    int64           // the rows' size as JSON (RowBytes summed)
	Plan     json.RawMessage // EXPLAIN (FORMAT JSON) of the query, when asked
}

// QueryOptions bound a query: its statement timeout, the rows and bytes returned, whether
// the planner's plan is read first, and the concurrency slot it takes.
type QueryOptions struct {
	Timeout time.Duration
	MaxRows int
	// MaxBytes: RunQuery stops reading (Truncated, TooLarge) before the rows' size as JSON
	// passes it; 0: no cap.
	MaxBytes int64
	// MaxRowBytes: the database refuses (RowTooLargeError) a row whose text is larger, before
	// it is sent: the driver reads a whole row into memory, whatever its size. 0: no cap.
	MaxRowBytes int64
	Plan        bool
	PlanOnly    bool  // read the plan and stop: nothing runs
	Slot        *Slot // when set, the query holds one of Slot.Max slots of Slot.Key while it runs
}

// Slot is a counted resource, such as a user's running queries: an advisory lock per slot,
// held by the query's transaction (so every replica sees it, and a rollback or a dead
// connection frees it). Shared, when set, is a second resource every caller draws on, such
// as the database's running user SQL: a query that finds none of it free waits up to
// Shared.Wait for one, then is refused with ErrBusy. Of it, an organization holds at most
// Shared.PerOrg at once (0: no share of its own): a query past its organization's share
// waits the same, takes no shared slot while it waits, and is refused with OrgBusyError.
type Slot struct {
	Key    string
	Max    int
	Shared *SharedSlot
}

// SharedSlot bounds the user SQL running at once on the database, whoever runs it, and
// the part of it one organization may hold.
type SharedSlot struct {
	Max, PerOrg int
	Wait        time.Duration
}

// ErrNoSlot is a query refused because every slot of its key is taken.
var ErrNoSlot = errors.New("every slot is taken")

// ErrBusy is a query refused because every shared slot stayed taken for the wait.
var ErrBusy = errors.New("the database runs as much user SQL as it may; try again shortly")

// OrgBusyError is a query refused because its organization's share of the shared slots
// (Max) stayed taken for the wait.
type OrgBusyError struct{ Max int }

func (e *OrgBusyError) Error() string {
	return fmt.Sprintf("the organization runs as much user SQL as it may at once (%d); try again shortly", e.Max)
}

// NotRun says a query was refused for want of a slot, before it ran.
func NotRun(err error) bool {
	var ob *OrgBusyError
	return errors.Is(err, ErrNoSlot) || errors.Is(err, ErrBusy) || errors.As(err, &ob)
}

// SearchPath is user SQL's search path: sql_limits first, whose functions bound the sizes
// that repeat, lpad, rpad, array_fill and generate_series make (see sized), then the
// catalog, then the organization's schema.
func SearchPath(orgID string) string { return FunctionPath + ", " + pq.QuoteIdentifier(orgID) }

// FunctionPath is the part of SearchPath that resolves functions: what views are created
// under, so that they bind the same bounded functions.
const FunctionPath = "sql_limits, pg_catalog"

// RunQuery runs checked user SQL (a SELECT with $n parameters) in a read-only transaction,
// under the organization's query role, with a statement timeout, and always rolls back.
func RunQuery(ctx context.Context, db *sqlx.DB, orgID, query string, args []any, o QueryOptions) (*QueryResult, error) {
	s, err := beginQuery(ctx, db, orgID, o, o.Timeout+5*time.Second)
	if err != nil {
		return nil, err
	}
	defer s.end()
	tx := s.tx
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
	capped, shift := rowCapped(query, o.MaxRowBytes)
	st, err := tx.PreparexContext(ctx, capped)
	if err != nil {
		return nil, rowError(err, o.MaxRowBytes, shift)
	}
	defer func() { _ = st.Close() }()
	// Cancelled when reading stops early, so that the database stops sending what is left
	// (closing the rows would otherwise read it all).
	rctx, stop := context.WithCancel(ctx)
	defer stop()
	rows, err := st.QueryxContext(rctx, args...)
	if err != nil {
		return nil, rowError(err, o.MaxRowBytes, shift)
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
		n := RowBytes(row)
		if o.MaxBytes > 0 && res.Bytes+n > o.MaxBytes {
			res.Truncated, res.TooLarge = true, true
			break
		}
		res.Bytes += n
		res.Rows = append(res.Rows, row)
	}
	if res.Truncated {
		stop()
		return res, nil
	}
	if err := rows.Err(); err != nil {
		return nil, rowError(err, o.MaxRowBytes, shift)
	}
	return res, nil
}

// RowTooLargeError is a row the database refused to send: its text is larger than Max bytes.
type RowTooLargeError struct{ Bytes, Max int64 }

func (e *RowTooLargeError) Error() string {
	return fmt.Sprintf("a row of the result is %d bytes, more than the %d a row may have", e.Bytes, e.Max)
}

// rowTooLarge marks the error rowCapped makes the database raise.
const rowTooLarge = "dp_row_too_large:"

// rowCapped wraps checked SQL so that the database raises an error (a failed cast of a
// marked text) instead of sending a row whose text is larger than max bytes. The stored
// size (pg_column_size) is cheap but may be compressed (up to about 256 times smaller), so
// only rows past max/256 pay for their text. Only the statement's own text goes in: a
// trailing semicolon or comment would break the wrapping, and text that is not exactly one
// statement goes in whole, for the database to refuse. shift is how many characters
// further the statement's text is in the wrapped one (for the positions of errors).
func rowCapped(query string, max int64) (wrapped string, shift int) {
	if max <= 0 {
		return query, 0
	}
	if tree, err := pg_query.Parse(query); err == nil && len(tree.Stmts) == 1 {
		s := tree.Stmts[0]
		end := len(query)
		if s.StmtLen > 0 {
			end = int(s.StmtLocation + s.StmtLen)
		}
		if int(s.StmtLocation) <= end && end <= len(query) {
			shift = -utf8.RuneCountInString(query[:s.StmtLocation])
			query = query[s.StmtLocation:end]
		}
	}
	const prefix = "SELECT dp_t.* FROM (\n"
	n, pre := strconv.FormatInt(max, 10), strconv.FormatInt(max/256, 10)
	return prefix + query + "\n" + `) dp_t WHERE CASE WHEN pg_column_size(dp_t.*) > ` + pre +
			` AND octet_length(dp_t::text) > ` + n + ` THEN (` + pq.QuoteLiteral(rowTooLarge) + ` || octet_length(dp_t::text))::int IS NULL ELSE true END`,
		shift + len(prefix)
}

// rowError is err, or a RowTooLargeError when it is rowCapped's (with max); the position
// of another database error is moved back by shift, into the statement's own text.
func rowError(err error, max int64, shift int) error {
	var pe *pq.Error
	if !errors.As(err, &pe) {
		return err
	}
	if i := strings.Index(pe.Message, rowTooLarge); i >= 0 && pe.Code == "22P02" {
		e := &RowTooLargeError{Max: max}
		_, _ = fmt.Sscan(pe.Message[i+len(rowTooLarge):], &e.Bytes) // no size in the message: 0
		return e
	}
	if pos, perr := strconv.Atoi(pe.Position); perr == nil && shift != 0 && pos > shift {
		pe.Position = strconv.Itoa(pos - shift)
	}
	return err
}

// RowBytes is the size of a row of JSON-ready values as JSON (an array of them): what
// MaxBytes counts. Strings count their escapes as Go's encoder writes them.
func RowBytes(row []any) int64 {
	n := int64(1 + len(row)) // brackets and commas
	for _, v := range row {
		switch x := v.(type) {
		case nil:
			n += 4
		case bool:
			n += 5
		case string:
			n += 2 + int64(len(x))
			for i := 0; i < len(x); i++ {
				switch c := x[i]; {
				case c < 0x20, c == '<', c == '>', c == '&':
					n += 5 // \u00XX
				case c == '"', c == '\\':
					n++
				}
			}
		case json.RawMessage:
			n += int64(len(x))
		case json.Number:
			n += int64(len(x))
		default: // numbers
			n += 24
		}
	}
	return n
}

// session is the transaction user SQL runs in, on a connection of its own, and what it
// holds of the process's gate.
type session struct {
	conn    *sqlx.Conn
	tx      *sqlx.Tx
	release func()
}

// end rolls the transaction back, returns the connection and gives back the gate's tokens.
func (s *session) end() {
	s.tx.Rollback()
	s.conn.Close()
	s.release()
}

// beginQuery opens the read-only transaction user SQL runs in: the organization's query
// role and schema, a statement timeout, an idle timeout so that a stalled client cannot hold
// it open, and the query's slot, once the process's gate has admitted it (see gate). One
// round trip: the settings are this service's own values (never request text), so the
// statement goes as a simple query.
func beginQuery(ctx context.Context, db *sqlx.DB, orgID string, o QueryOptions, idle time.Duration) (*session, error) {
	release := func() {}
	var deadline time.Time
	if o.Slot != nil && o.Slot.Shared != nil {
		deadline = time.Now().Add(o.Slot.Shared.Wait)
		var err error
		if release, err = gateOf(o.Slot.Shared).enter(ctx, o.Slot, orgID, deadline); err != nil {
			return nil, err
		}
	}
	conn, err := db.Connx(ctx)
	if err != nil {
		release()
		return nil, err
	}
	tx, err := conn.BeginTxx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		conn.Close()
		release()
		return nil, err
	}
	// In FROM, so that the locks are taken before the role (which may not call them) is set.
	// Each is taken only once the one before it is held (the user's, the organization's, the
	// database's), and the settings apply only once all are: a query waiting for its
	// organization's share holds none of the database's, and one waiting asks again only for
	// what it lacks, keeping what it holds.
	locks := [3]string{`0`, `0`, `0`}
	if o.Slot != nil {
		locks[0] = slotSQL("platform.slot."+o.Slot.Key, o.Slot.Max)
		if sh := o.Slot.Shared; sh != nil {
			if sh.PerOrg > 0 {
				locks[1] = slotSQL("platform.slot.org."+orgID, sh.PerOrg)
			}
			locks[2] = slotSQL("platform.slot.user-sql", sh.Max)
		}
	}
	begin := func() string {
		return `SELECT a.l, b.l, c.l FROM (SELECT ` + locks[0] + ` AS l) a
		LEFT JOIN LATERAL (SELECT ` + locks[1] + ` AS l WHERE a.l IS NOT NULL OFFSET 0) b ON true
		LEFT JOIN LATERAL (SELECT ` + locks[2] + ` AS l WHERE b.l IS NOT NULL OFFSET 0) c ON true
		LEFT JOIN LATERAL (SELECT
		set_config('statement_timeout', '` + strconv.FormatInt(o.Timeout.Milliseconds(), 10) + `', true),
		set_config('lock_timeout', '1000', true),
		set_config('idle_in_transaction_session_timeout', '` + strconv.FormatInt(idle.Milliseconds(), 10) + `', true),
		set_config('max_parallel_workers_per_gather', '0', true),
		set_config('search_path', ` + pq.QuoteLiteral(SearchPath(orgID)) + `, true),
		set_config('role', ` + pq.QuoteLiteral(datasets.QueryRole(orgID)) + `, true)
		WHERE c.l IS NOT NULL OFFSET 0) s ON true`
	}
	for pause := 10 * time.Millisecond; ; pause = min(2*pause, 200*time.Millisecond) {
		var got [3]sql.NullInt64
		if err = tx.QueryRowContext(ctx, begin()).Scan(&got[0], &got[1], &got[2]); err == nil && !got[0].Valid {
			err = ErrNoSlot
		}
		if err != nil || got[2].Valid {
			break
		}
		for i := range got {
			if got[i].Valid {
				locks[i] = strconv.FormatInt(got[i].Int64, 10)
			}
		}
		left := time.Until(deadline) // another replica's queries hold the slots
		if left <= 0 {
			err = ErrBusy
			if !got[1].Valid {
				err = &OrgBusyError{Max: o.Slot.Shared.PerOrg}
			}
			break
		}
		select {
		case <-time.After(min(pause, left)):
		case <-ctx.Done():
			err = ctx.Err()
		}
		if err != nil {
			break
		}
	}
	s := &session{conn: conn, tx: tx, release: release}
	if err != nil {
		s.end()
		return nil, err
	}
	return s, nil
}

// slotSQL is the first of max advisory locks of key that this transaction can take, or null.
func slotSQL(key string, max int) string {
	return `(SELECT s FROM generate_series(0, ` + strconv.Itoa(max-1) + `) s WHERE pg_try_advisory_xact_lock(hashtext(` +
		pq.QuoteLiteral(key) + `), s) LIMIT 1)`
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

// RowCursor is checked user SQL opened like RunQuery but read through a server-side cursor,
// StreamBatch rows at a time: memory stays flat whatever the row count. Timeout bounds each
// fetch (a slow reader is not a slow query); the transaction may sit idle a minute between
// fetches while the client catches up.
type RowCursor struct {
	*session
	maxRows     int
	maxRowBytes int64
}

// OpenCursor begins the transaction, takes the slot and declares the cursor: what the
// database refuses up front (a missing column, a wrong type) is an error here.
func OpenCursor(ctx context.Context, db *sqlx.DB, orgID, query string, args []any, o QueryOptions) (*RowCursor, error) {
	s, err := beginQuery(ctx, db, orgID, o, time.Minute)
	if err != nil {
		return nil, err
	}
	// Prepared (one statement); the cursor runs the checked SELECT with its parameters.
	const declare = `DECLARE dp_stream NO SCROLL CURSOR FOR `
	capped, shift := rowCapped(query, o.MaxRowBytes)
	if _, err := s.tx.ExecContext(ctx, declare+capped, args...); err != nil {
		s.end()
		return nil, rowError(err, o.MaxRowBytes, shift+len(declare))
	}
	return &RowCursor{session: s, maxRows: o.MaxRows, maxRowBytes: o.MaxRowBytes}, nil
}

// Close rolls the transaction back, returns the connection and frees the query's slots.
func (c *RowCursor) Close() { c.end() }

// Each reads every row (at most MaxRows, when set), calling columns once before the first
// and row for each; it reports the rows read and whether more were left unread.
func (c *RowCursor) Each(ctx context.Context, columns func([]QueryColumn) error, row func([]any) error) (n int, truncated bool, err error) {
	var cols []QueryColumn
	var scan func(*sqlx.Rows) ([]any, error)
	for {
		rows, err := c.tx.QueryxContext(ctx, `FETCH FORWARD `+strconv.Itoa(StreamBatch)+` FROM dp_stream`)
		if err != nil {
			return n, false, rowError(err, c.maxRowBytes, 0)
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
			if c.maxRows > 0 && n == c.maxRows {
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
			return n, false, rowError(err, c.maxRowBytes, 0)
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

// jsonValue is a database value as the record API writes it in JSON: numerics as numbers,
// JSON as itself, arrays as JSON arrays, dates as YYYY-MM-DD, times in RFC 3339 (UTC), text
// as strings.
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
		if elem, ok := strings.CutPrefix(typ, "_"); ok && len(x) > 0 && x[0] == '{' {
			if a, ok := arrayJSON(elem, x); ok {
				return a
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
