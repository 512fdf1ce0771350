package handlers

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"dataplatform/handlers/apierr"
	"dataplatform/store/usersql"

	"github.com/lib/pq"
)

// MaxCached bounds each cache of query answers and plans.
const MaxCached = 1000

// QueryError maps what went wrong with user SQL (project queries, the record API's query) to
// the API's errors.
func QueryError(err error, sqlText *string, timeout, took time.Duration) error {
	var se *usersql.SyntaxError
	var fe *usersql.ForbiddenError
	var pe *pq.Error
	switch {
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
		case pe.Code == "42501" || pe.Code == "25006":
			return apierr.New(http.StatusBadRequest, apierr.CodeForbiddenOperation, "not allowed: "+pe.Message).WithDetails(map[string]any{"message": pe.Message})
		case strings.HasPrefix(string(pe.Code), "42") || strings.HasPrefix(string(pe.Code), "22") || pe.Code == "21000": // syntax, names, types; data; a subquery of several rows
			d := map[string]any{"message": pe.Message}
			if sqlText != nil && pe.Position != "" {
				var pos int
				fmt.Sscan(pe.Position, &pos)
				d["line"], d["column"] = usersql.Position(*sqlText, pos)
			}
			return apierr.New(http.StatusBadRequest, apierr.CodeInvalidQuery, pe.Message).WithDetails(d)
		}
	}
	return err
}
