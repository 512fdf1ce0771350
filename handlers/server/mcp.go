package server

import (
	"bytes"
	"context"
	"io"
	"net/http"

	"dataplatform/handlers"
	"dataplatform/handlers/apierr"
	"dataplatform/handlers/reqmeta"

	"github.com/labstack/echo/v4"
)

// mountAgents serves the agents' protocol (the MCP server) at its path, behind the same
// authentication and body limit as the API and counted in its own rate-limit category, and
// the protected resource metadata (RFC 9728) that its 401s point at.
func (s *Server) mountAgents(e *echo.Echo, a handlers.Agents) {
	h := echo.WrapHandler(a.Handler)
	for _, method := range []string{http.MethodGet, http.MethodPost, http.MethodDelete} {
		e.Add(method, a.Path, h)
		s.routes[routeKey{method, a.Path}] = &route{opID: a.Category, category: a.Category, bodyLimit: s.cfg.MaxBodyBytes, dispatches: true}
	}
	meta := echo.WrapHandler(a.Metadata)
	for _, p := range a.MetadataPaths {
		e.GET(p, meta)
		s.routes[routeKey{http.MethodGet, p}] = &route{opID: "oauthProtectedResource", public: true}
	}
}

// dispatch runs the API operation at method and target (path and query) in process, for the
// caller already authenticated in ctx: routed, counted in its rate-limit category, validated
// against the published description (a dataset's own for its records, with a record slot),
// then its handler, so that an MCP
// tool has exactly the permissions, validation and errors of the REST call it stands for.
// The answer is written to w; a refusal is returned as the *apierr.Error the API would render.
func (s *Server) dispatch(ctx context.Context, method, target string, body []byte, w http.ResponseWriter) error {
	var rd io.Reader = http.NoBody
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, target, rd)
	if err != nil {
		return apierr.Field("arguments", "invalid_value", "not a valid address of the API: "+err.Error())
	}
	req.RequestURI = target
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	m := *reqmeta.From(ctx)
	m.Path, m.Query, m.Accept, m.Header, m.AllowLongBody = req.URL.Path, req.URL.Query(), "application/json", req.Header, nil
	req = req.WithContext(reqmeta.With(ctx, &m))
	c := s.echo.NewContext(req, w)
	c.Set("request_id", m.RequestID)
	s.echo.Router().Find(method, echo.GetPath(req), c)
	if rt := s.route(c); rt == nil || rt.dispatches {
		return apierr.New(http.StatusNotFound, apierr.CodeNotFound, "no such endpoint: "+method+" "+req.URL.Path)
	}
	// The operation's own rate-limit category counts too: MCP is no way around a REST limit.
	if err := s.rateLimit(s.validateRequest(s.controlPlaneWrites(c.Handler())))(c); err != nil {
		return s.toAPIError(err, c)
	}
	if writesData(req) && c.Response().Status < 400 {
		s.H.Store.Wrote(ctx)
	}
	return nil
}
