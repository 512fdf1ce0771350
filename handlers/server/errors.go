package server

import (
	"context"
	"errors"
	"net/http"
	"strings"

	"dataplatform/handlers/apierr"
	"dataplatform/handlers/auth"
	"dataplatform/store"
	"dataplatform/templates/descriptions"
	"dataplatform/templates/specgen"

	"github.com/labstack/echo/v4"
)

// errorHandler is the one place error bodies are written. It renders the API's three error shapes: the flat
// authentication shape for 401 and 403, the dashboard shape on dashboard routes, and the nested
// envelope everywhere else.
func (s *Server) errorHandler(err error, c echo.Context) {
	if c.Response().Committed {
		return
	}
	gone := errors.Is(c.Request().Context().Err(), context.Canceled)
	if gone {
		// The request's context ended: mostly its client closed the connection, and whatever
		// failed then failed because of it; nothing wrong here, 499 in the metrics and the access
		// log, as nginx counts it. The answer is still written (to no one, mostly): the context
		// also ends when the server stops reading a refused upload, and a client still there
		// must learn the status, not read an empty 200.
		s.log.Info("client closed the request", "request_id", requestID(c), "error", err)
		if ae := (*apierr.Error)(nil); !errors.As(err, &ae) {
			err = apierr.New(http.StatusServiceUnavailable, apierr.CodeServiceUnavailable, "the request ended before its answer was made; send it again")
		}
		defer func() { c.Response().Status = 499 }()
	}
	if rd := (*auth.Redirect)(nil); errors.As(err, &rd) {
		_ = c.Redirect(http.StatusSeeOther, rd.Location)
		return
	}
	var e *apierr.Error
	if !gone || !errors.As(err, &e) { // a request given up on is not logged as a failure
		e = s.toAPIError(err, c)
	}
	for k, v := range e.Headers {
		c.Response().Header().Set(k, v)
	}
	rid := requestID(c)
	var body any
	switch {
	case strings.Contains(c.Path(), "/dashboard"):
		m := map[string]any{"code": e.Status, "error": strings.ToLower(string(e.Code)), "message": e.Message, "request_id": rid}
		switch d := e.Details.(type) {
		case []apierr.FieldError:
			m["details"] = d
		case map[string]any:
			if s, ok := d["suggestions"]; ok {
				m["suggestions"] = s
			}
		}
		body = m
	case e.Status == http.StatusUnauthorized || e.Status == http.StatusForbidden:
		short := "forbidden"
		if e.Code == apierr.CodeTokenExpired {
			short = "token_expired"
		} else if e.Status == http.StatusUnauthorized {
			short = "unauthorized"
		}
		m := map[string]any{"error": short, "message": e.Message, "code": e.Code, "request_id": rid}
		for k, v := range e.Extra {
			m[k] = v
		}
		if e.Status == http.StatusUnauthorized {
			// resource_metadata (RFC 9728) tells OAuth-capable clients (MCP's) where to sign in.
			if len(s.agents.MetadataPaths) > 0 {
				c.Response().Header().Set("WWW-Authenticate", `Bearer realm="dataplatform", resource_metadata="`+s.cfg.BaseURL+s.agents.MetadataPaths[0]+`"`)
			}
		}
		body = m
	default:
		inner := map[string]any{"code": e.Code, "message": e.Message, "request_id": rid,
			"documentation_url": s.cfg.BaseURL + "/api/v1/errors/" + string(e.Code)}
		if e.Details != nil {
			inner["details"] = e.Details
		}
		body = map[string]any{"error": inner}
	}
	if c.Request().Method == http.MethodHead {
		_ = c.NoContent(e.Status)
		return
	}
	_ = c.JSON(e.Status, body)
}

func (s *Server) toAPIError(err error, c echo.Context) *apierr.Error {
	var ae *apierr.Error
	if errors.As(err, &ae) {
		if ae.Status >= 500 && ae.Status != http.StatusNotImplemented {
			s.log.Error("request failed", s.failure(c, err)...)
		}
		return ae
	}
	// A table whose description cannot be made valid (wherever it is needed: its own API, or
	// another table's that embeds its records) is the table's state, not a server failure.
	if re := (*descriptions.RequestError)(nil); errors.As(err, &re) {
		if re.NotServed {
			return apierr.New(http.StatusMethodNotAllowed, apierr.CodeMethodNotAllowed, re.Message).WithDetails(re.Details)
		}
		return apierr.Field(re.Field, re.Code, re.Message)
	}
	if ie := (*specgen.InvalidError)(nil); errors.As(err, &ie) {
		return apierr.New(http.StatusConflict, apierr.CodeDescriptionUnavailable, "the table cannot be described, so its API is not served: "+ie.Err.Error()).
			WithDetails(map[string]any{"dataset_id": ie.DatasetID, "table": ie.Table, "reason": ie.Err.Error()})
	}
	// The generated multipart handlers return net/http's plain errors for a form they cannot
	// read: client mistakes, not server failures.
	if errors.Is(err, http.ErrNotMultipart) || errors.Is(err, http.ErrMissingBoundary) {
		return apierr.Field("header.Content-Type", "content_type", "send a multipart/form-data body with a boundary: "+err.Error())
	}
	var he *echo.HTTPError
	if errors.As(err, &he) {
		msg := http.StatusText(he.Code)
		if m, ok := he.Message.(string); ok && m != "" {
			msg = m
		}
		switch he.Code {
		case http.StatusNotFound:
			return apierr.New(http.StatusNotFound, apierr.CodeNotFound, "no such endpoint: "+c.Request().Method+" "+c.Request().URL.Path)
		case http.StatusMethodNotAllowed:
			return apierr.New(http.StatusMethodNotAllowed, apierr.CodeMethodNotAllowed, "method "+c.Request().Method+" is not allowed here")
		case http.StatusRequestEntityTooLarge:
			return apierr.New(http.StatusRequestEntityTooLarge, apierr.CodePayloadTooLarge, "the request body is larger than the limit of this endpoint")
		case http.StatusUnsupportedMediaType, http.StatusBadRequest:
			// Binder errors (bad JSON, unsupported content type) are client mistakes.
			return apierr.Field("body", "invalid_body", msg)
		case http.StatusUnauthorized:
			return apierr.AuthRequired(msg)
		}
		if he.Code < 500 {
			return apierr.New(he.Code, apierr.Code(strings.ToUpper(strings.ReplaceAll(http.StatusText(he.Code), " ", "_"))), msg)
		}
		s.log.Error("request failed", s.failure(c, err)...)
		return apierr.New(he.Code, apierr.CodeInternalError, "internal error")
	}
	if store.Unavailable(err) {
		s.log.Warn("database unavailable", s.failure(c, err)...)
		e := apierr.New(http.StatusServiceUnavailable, apierr.CodeServiceUnavailable, "the database is not available at the moment; retry shortly")
		e.Headers = map[string]string{"Retry-After": "5"}
		return e
	}
	s.log.Error("request failed", s.failure(c, err)...)
	return apierr.New(http.StatusInternalServerError, apierr.CodeInternalError, "internal error (request "+requestID(c)+")")
}

// operationIDKey is where the record API's validation leaves the operationId of the dataset's
// description that the request is for.
const operationIDKey = "operation_id"

// failure is the log attributes of a request that failed on the server's side: the request,
// its operation (method, the path template it was routed by, the description's operationId)
// and the error, whose message carries the operations it passed through ("create dataset: ...").
func (s *Server) failure(c echo.Context, err error) []any {
	path, opID := c.Path(), ""
	if rt := s.route(c); rt != nil {
		opID = rt.opID
		if rt.kin != nil {
			path = rt.kin.Path
		} else if rt.template != "" {
			path = rt.template
		}
	}
	if id, ok := c.Get(operationIDKey).(string); ok && id != "" {
		opID = id
	}
	attrs := []any{"request_id", requestID(c), "method", c.Request().Method, "route", path, "operation_id", opID}
	if err != nil {
		attrs = append(attrs, "error", err)
	}
	return attrs
}
