package server

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"dataplatform/handlers/apierr"

	"github.com/labstack/echo/v4"
)

// TestErrorAfterContextEnded: an error met once the request's context has ended is still
// answered (a client still there must not read an empty 200), and counted as 499, not logged
// as a failure; an error that is not the API's own is answered 503.
func TestErrorAfterContextEnded(t *testing.T) {
	var logs strings.Builder
	s := &Server{log: slog.New(slog.NewTextHandler(&logs, nil))}
	e := echo.New()
	for _, tc := range []struct {
		err    error
		status int
		code   string
	}{
		{apierr.Field("body.file", "required", "the multipart form needs a `file` part"), http.StatusBadRequest, "VALIDATION_ERROR"},
		{errors.New("pq: canceling statement due to user request"), http.StatusServiceUnavailable, "SERVICE_UNAVAILABLE"},
	} {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		req := httptest.NewRequest(http.MethodPost, "/api/v1/projects/prj_x/datasets/upload", nil).WithContext(ctx)
		rec := httptest.NewRecorder()
		c := e.NewContext(req, rec)
		s.errorHandler(tc.err, c)
		if rec.Code != tc.status || !strings.Contains(rec.Body.String(), tc.code) || c.Response().Status != 499 {
			t.Fatalf("%v: answered %d %s, counted %d; want %d %s, counted 499", tc.err, rec.Code, rec.Body, c.Response().Status, tc.status, tc.code)
		}
	}
	if strings.Contains(logs.String(), "request failed") || !strings.Contains(logs.String(), "client closed the request") {
		t.Fatalf("logged: %s", logs.String())
	}
}
