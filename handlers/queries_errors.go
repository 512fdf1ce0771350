package handlers

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"dataplatform/handlers/apierr"
	"dataplatform/store/queries"
	"dataplatform/store/usersql"

	"github.com/lib/pq"
)

// MaxCached bounds each cache of query answers and plans; MaxCachedBytes is the largest
// answer (its rows as JSON) a cache keeps: the caches hold small answers, never big ones.
const (
	MaxCached      = 1000
	MaxCachedBytes = 1 << 20
)

// CutWarning says that a query's rows stopped at the response's byte limit (max), after
// rows rows, and how to get every row (all).
func CutWarning(rows int, max int64, all string) string {
	return fmt.Sprintf("the results were cut after %d row(s): more would pass the %s a response may hold (DP_QUERY_RESULT_BYTES); %s", rows, ByteSize(max), all)
}

// ByteSize is n in the largest whole binary unit (10 MiB), or in bytes.
func ByteSize(n int64) string {
	for _, u := range []struct {
		name  string
		shift uint
	}{{"GiB", 30}, {"MiB", 20}, {"KiB", 10}} {
		if n >= 1<<u.shift && n%(1<<u.shift) == 0 {
			return fmt.Sprintf("%d %s", n>>u.shift, u.name)
		}
	}
	return fmt.Sprintf("%d bytes", n)
}

// QueryError maps what went wrong with user SQL (project queries, the record API's query) to
// the API's errors.
func QueryError(err error, sqlText *string, timeout, took time.Duration) error {
	var se *usersql.SyntaxError
	var fe *usersql.ForbiddenError
	var pe *pq.Error
	var rte *usersql.RowTooLargeError
	var be *queries.BrokenError
	var ob *usersql.OrgBusyError
	switch {
	case errors.Is(err, usersql.ErrNoSlot):
		// A sixth concurrent query of a user: the category's X-RateLimit headers are the rate
		// limiter's, and it may retry in a second.
		e := apierr.New(http.StatusTooManyRequests, apierr.CodeRateLimitExceeded, fmt.Sprintf("%d of your queries are running; wait for one to finish", maxConcurrentQuery)).
			WithDetails(map[string]any{"concurrent_limit": maxConcurrentQuery})
		e.Headers, e.Cause = map[string]string{"Retry-After": "1"}, err
		return e
	case errors.As(err, &ob):
		// The tenant's own share of the database is taken by its other queries: like a user's
		// sixth query, a 429 it may retry shortly.
		e := apierr.New(http.StatusTooManyRequests, apierr.CodeRateLimitExceeded, "your organization is running as much SQL as it may at once (DP_QUERY_CONCURRENCY_PER_ORG); try again shortly").
			WithDetails(map[string]any{"organization_concurrent_limit": ob.Max})
		e.Headers, e.Cause = map[string]string{"Retry-After": "1"}, err
		return e
	case errors.Is(err, usersql.ErrBusy):
		e := apierr.New(http.StatusServiceUnavailable, apierr.CodeServiceUnavailable, "the database is running as much user SQL as it may at once (DP_QUERY_CONCURRENCY); try again shortly")
		e.Headers, e.Cause = map[string]string{"Retry-After": "1"}, err
		return e
	case errors.As(err, &be):
		return viewBroken(be.ID, be.Reason, be.Error())
	case errors.As(err, &rte):
		return apierr.New(http.StatusBadRequest, apierr.CodeInvalidQuery, fmt.Sprintf("a row of the result is %d bytes: a row may have at most %s (DP_QUERY_RESULT_BYTES)", rte.Bytes, ByteSize(rte.Max))).
			WithDetails(map[string]any{"row_bytes": rte.Bytes, "max_row_bytes": rte.Max,
				"suggestion": "select fewer or shorter columns (left(text, n), substring), or split the value"})
	case errors.As(err, &se):
		return apierr.New(http.StatusBadRequest, apierr.CodeInvalidQuery, "the query does not parse: "+se.Message).
			WithDetails(map[string]any{"line": se.Line, "column": se.Column, "message": se.Message})
	case errors.As(err, &fe):
		return apierr.New(http.StatusBadRequest, apierr.CodeForbiddenOperation, fe.Reason).WithDetails(map[string]any{"allowed": "one SELECT statement"})
	case usersql.IsTimeout(err):
		return apierr.New(http.StatusRequestTimeout, apierr.CodeQueryTimeout, fmt.Sprintf("the query ran longer than %s and was cancelled", timeout)).
			WithDetails(map[string]any{"timeout_seconds": timeout.Seconds(), "execution_time_seconds": took.Seconds(),
				"suggestion": "filter or aggregate more, add a LIMIT, or raise options.timeout (at most 120000 ms)"})
	case errors.As(err, &pe):
		switch {
		case pe.Code == "54000": // program_limit_exceeded: a size over sql_limits' bound, or one of PostgreSQL's own
			d := map[string]any{"message": pe.Message}
			_ = json.Unmarshal([]byte(pe.Detail), &d)
			return apierr.New(http.StatusUnprocessableEntity, apierr.CodeLimitExceeded, pe.Message).WithDetails(d)
		case pe.Code == "42501" || pe.Code == "25006":
			return apierr.New(http.StatusBadRequest, apierr.CodeForbiddenOperation, "not allowed: "+pe.Message).WithDetails(map[string]any{"message": pe.Message})
		case strings.HasPrefix(string(pe.Code), "42") || strings.HasPrefix(string(pe.Code), "22") || pe.Code == "21000": // syntax, names, types; data; a subquery of several rows
			d := map[string]any{"message": pe.Message}
			if sqlText != nil && pe.Position != "" {
				var pos int
				_, _ = fmt.Sscan(pe.Position, &pos) // no position: line and column of 0
				d["line"], d["column"] = usersql.Position(*sqlText, pos)
			}
			return apierr.New(http.StatusBadRequest, apierr.CodeInvalidQuery, pe.Message).WithDetails(d)
		}
	}
	return err
}
