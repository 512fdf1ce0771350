package server

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"time"

	"dataplatform/handlers"
	"dataplatform/handlers/apierr"
	"dataplatform/handlers/auth"
	"dataplatform/handlers/reqmeta"
	"dataplatform/store"
	"dataplatform/templates/descriptions"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/routers"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

func (s *Server) route(c echo.Context) *route {
	return s.routes[routeKey{c.Request().Method, c.Path()}]
}

func (s *Server) recoverer(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) (err error) {
		defer func() {
			if r := recover(); r != nil {
				if r == http.ErrAbortHandler {
					panic(r)
				}
				s.log.Error("panic", append(s.failure(c, nil), "panic", fmt.Sprint(r), "stack", string(debug.Stack()))...)
				err = apierr.New(http.StatusInternalServerError, apierr.CodeInternalError, "internal error (request "+requestID(c)+")")
			}
		}()
		return next(c)
	}
}

var clientRequestID = regexp.MustCompile(`^[A-Za-z0-9._:-]{1,128}$`)

func requestID(c echo.Context) string {
	id, _ := c.Get("request_id").(string)
	return id
}

// requestMeta assigns the request id (a well-formed X-Request-Id from the client is kept) and
// puts the request's facts in its context.
func (s *Server) requestMeta(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		req := c.Request()
		id := req.Header.Get(echo.HeaderXRequestID)
		if !clientRequestID.MatchString(id) {
			b := make([]byte, 12)
			_, _ = rand.Read(b)
			id = "req_" + hex.EncodeToString(b)
		}
		c.Set("request_id", id)
		c.Response().Header().Set(echo.HeaderXRequestID, id)
		m := &reqmeta.Meta{RequestID: id, IP: c.RealIP(), UserAgent: req.UserAgent(), Path: req.URL.Path, Host: req.Host, Query: req.URL.Query(),
			Accept: req.Header.Get("Accept"), Header: req.Header}
		c.SetRequest(req.WithContext(reqmeta.With(req.Context(), m)))
		return next(c)
	}
}

// securityHeaders sets the security headers (HSTS, nosniff, frame and XSS protection, a
// default CSP) on every answer.
func securityHeaders(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		h := c.Response().Header()
		for _, sh := range securityHeaderValues {
			h[sh.name] = sh.value // shared and never appended to in place (a slice of one is full)
		}
		return next(c)
	}
}

// securityHeaderValues are the security headers, canonical names and value slices made once:
// every answer carries them.
var securityHeaderValues = []struct {
	name  string
	value []string
}{
	{"X-Content-Type-Options", []string{"nosniff"}},
	{"X-Frame-Options", []string{"DENY"}},
	{"X-Xss-Protection", []string{"1; mode=block"}},
	{"Strict-Transport-Security", []string{"max-age=31536000"}},
	{"Content-Security-Policy", []string{"default-src 'self'"}},
}

// cors allows the configured origins with credentials. Methods, headers and max age are those
// of the API, plus PATCH (the API has PATCH operations a browser client must be able to call)
// and the headers a client needs to read back.
func cors(origins []string) echo.MiddlewareFunc {
	return middleware.CORSWithConfig(middleware.CORSConfig{
		AllowOrigins: origins,
		AllowMethods: []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete, http.MethodOptions},
		// The Mcp- headers: browser clients of the MCP server send and read them.
		AllowHeaders:     []string{"Origin", "Content-Type", "Accept", "Authorization", "X-API-Key", "Mcp-Protocol-Version", "Mcp-Session-Id", "Last-Event-ID"},
		AllowCredentials: true,
		MaxAge:           86400,
		ExposeHeaders: []string{"X-Request-Id", "X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset",
			"X-RateLimit-Reset-After", "Location", "ETag", "WWW-Authenticate", "Mcp-Session-Id"},
	})
}

var (
	httpRequests = promauto.NewCounterVec(prometheus.CounterOpts{
		Name: "dataplatform_http_requests_total", Help: "HTTP requests by route, method and status.",
	}, []string{"method", "route", "status"})
	httpDuration = promauto.NewHistogramVec(prometheus.HistogramOpts{
		Name: "dataplatform_http_request_duration_seconds", Help: "HTTP request latency by route and method.",
		Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
	}, []string{"method", "route"})
)

// routeMetrics are the series of one method, route and status; kept, so that a request does
// not hash its labels into the vectors again.
type routeMetrics struct {
	count    prometheus.Counter
	duration prometheus.Observer
}

type routeMetricsKey struct {
	method, route string
	status        int
}

var routeMetricsOf sync.Map // routeMetricsKey -> *routeMetrics

func requestMetrics(method, route string, status int) *routeMetrics {
	k := routeMetricsKey{method, route, status}
	if m, ok := routeMetricsOf.Load(k); ok {
		return m.(*routeMetrics)
	}
	m := &routeMetrics{httpRequests.WithLabelValues(method, route, strconv.Itoa(status)), httpDuration.WithLabelValues(method, route)}
	v, _ := routeMetricsOf.LoadOrStore(k, m)
	return v.(*routeMetrics)
}

// secretParams are path parameters that are secrets (an invitation's token): the access log
// shows them redacted. (Query strings, where api_key may be, are not logged at all.)
var secretParams = map[string]bool{"token": true}

// loggedPath is the request path as the access log shows it.
func loggedPath(c echo.Context) string {
	path := c.Request().URL.Path
	vals := c.ParamValues()
	for i, n := range c.ParamNames() {
		if secretParams[n] && i < len(vals) && vals[i] != "" {
			path = strings.Replace(path, vals[i], "[redacted]", 1)
		}
	}
	return path
}

// observe records metrics and writes one structured log line per request.
func (s *Server) observe(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		start := time.Now()
		err := next(c)
		if err != nil {
			c.Error(err) // render now, so the status below is the one sent
		}
		status := c.Response().Status
		routePath := c.Path()
		if s.route(c) == nil {
			routePath = "unmatched"
		}
		d := time.Since(start)
		m := requestMetrics(c.Request().Method, routePath, status)
		m.count.Inc()
		m.duration.Observe(d.Seconds())
		if s.cfg.LogRequests {
			attrs := []any{"request_id", requestID(c), "method", c.Request().Method, "path", loggedPath(c),
				"route", routePath, "status", status, "duration_ms", float64(d.Microseconds()) / 1000, "ip", c.RealIP()}
			if p := auth.FromContext(c.Request().Context()); p != nil {
				attrs = append(attrs, "user_id", p.UserID, "auth", string(p.Method))
			}
			s.log.Info("request", attrs...)
		}
		return nil
	}
}

// bodyLimit caps request bodies: DP_MAX_BODY_BYTES, or DP_MAX_UPLOAD_BYTES on operations
// marked x-body-limit: upload. A declared Content-Length over the limit is refused before
// anything is read.
func (s *Server) bodyLimit(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		req := c.Request()
		limit := s.cfg.MaxBodyBytes
		upload := false
		if rt := s.route(c); rt != nil {
			limit, upload = rt.bodyLimit, rt.upload
		}
		if req.ContentLength > limit {
			if upload {
				return apierr.FileTooLarge(req.ContentLength, s.cfg.MaxUploadBytes)
			}
			return apierr.New(http.StatusRequestEntityTooLarge, apierr.CodePayloadTooLarge,
				fmt.Sprintf("the request body is larger than %d bytes", limit))
		}
		if !upload || req.Body == nil {
			if req.Body != nil {
				req.Body = http.MaxBytesReader(c.Response(), req.Body, limit)
			}
			return next(c)
		}
		// The server's read timeout suits JSON bodies, not a gigabyte on a slow link; but only a
		// caller allowed to upload gets longer, and then at a minimum rate (pacedBody).
		rc := http.NewResponseController(c.Response())
		pb := &pacedBody{r: req.Body, rc: rc, min: s.cfg.UploadMinRate, window: s.cfg.UploadRateWindow}
		reqmeta.From(req.Context()).AllowLongBody = pb.start
		req.Body = http.MaxBytesReader(c.Response(), pb, limit)
		err := next(c)
		if err != nil || !pb.isStarted() {
			// Refused (unauthenticated, forbidden, too slow, malformed): answer and close
			// without reading on; net/http would otherwise drain up to 256 KiB of a chunked
			// body, at whatever pace the client sends it.
			c.Response().Header().Set("Connection", "close")
			_ = rc.SetReadDeadline(time.Now())
		}
		return err
	}
}

// authenticate requires credentials on every operation that the description does not mark
// public (security: []). Public operations ignore the session cookie: only a credential sent
// on purpose (a header, api_key) makes an optional one count.
func (s *Server) authenticate(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		rt := s.route(c)
		if rt == nil || (rt.public && !(rt.optionalAuth && hasCredentials(c.Request()))) {
			return next(c)
		}
		r := c.Request()
		p, err := s.authn.Authenticate(r)
		if ae := (*apierr.Error)(nil); errors.As(err, &ae) && ae.Status == http.StatusUnauthorized && !hasCredentials(r) {
			// Nothing but the session cookie, if anything, and it is not (or no longer) a
			// session: the browser drops it, and one asking for a page signs in again.
			if _, cerr := r.Cookie(auth.SessionCookie); cerr == nil {
				c.Response().Header().Add("Set-Cookie", auth.SessionCookieHeader("", 0, s.H.SecureCookies()))
			}
			if rt.page && auth.WantsHTML(r.Header.Get("Accept")) {
				return auth.SignInRedirect(r.URL.Path, r.URL.Query())
			}
		}
		if err != nil {
			return err
		}
		// Reads from standbys wait for the caller's own writes of data: such a write's WAL
		// position is kept before its answer is sent (store.Wrote), so no later read of the
		// caller misses it.
		ctx := store.WithReader(auth.WithPrincipal(c.Request().Context(), p), p.UserID)
		c.SetRequest(c.Request().WithContext(ctx))
		if writesData(c.Request()) {
			c.Response().Before(func() {
				if c.Response().Status < 400 {
					s.H.Store.Wrote(ctx)
				}
			})
		}
		return next(c)
	}
}

// writesData reports a request that may change what standbys serve: datasets' rows and
// tables (record writes, bulk, schema changes, dataset creation and deletion). Other writes
// (the control plane, query history) are read back from the primary anyway, and POSTs that
// only read (record SQL, aggregates) change nothing.
func writesData(r *http.Request) bool {
	switch r.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return false
	}
	p := r.URL.Path
	if strings.HasSuffix(p, "/data/query") || strings.HasSuffix(p, "/data/aggregate") || strings.HasSuffix(p, "/data/export") {
		return false
	}
	return strings.HasPrefix(p, "/api/v1/datasets/") || strings.HasPrefix(p, "/api/v1/projects/") && strings.Contains(p, "/datasets")
}

func hasCredentials(r *http.Request) bool {
	return r.Header.Get("Authorization") != "" || r.Header.Get("X-API-Key") != "" || r.URL.Query().Has("api_key")
}

// rateLimit counts the request against its category, per principal (per client address for
// public operations), and sets the X-RateLimit headers.
func (s *Server) rateLimit(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		rt := s.route(c)
		if rt == nil || rt.category == "" {
			return next(c)
		}
		key := "ip:" + c.RealIP()
		if p := auth.FromContext(c.Request().Context()); p != nil {
			key = p.Subject()
		}
		if rt.limitKey != "" {
			key = rt.limitKey + ":" + c.Param(rt.limitKey)
		}
		if rt.dynamic {
			// Each dataset's generated API is an API of its own: its traffic draws neither on
			// another dataset's counters nor on the platform API's (default).
			key += ":" + c.Param("dataset_id")
		}
		r, err := s.limiter.Take(c.Request().Context(), rt.category, key)
		if err != nil {
			// A rate-limit store outage must not take the API down: let the request through.
			s.log.Warn("rate limiter unavailable", "error", err)
			return next(c)
		}
		after := r.Reset - time.Now().Unix()
		if after < 0 {
			after = 0
		}
		// Set directly under Go's canonical names (what Header.Set would make of
		// "X-RateLimit-Limit", anew on each request), the four values in one array: every
		// answer carries them.
		h := c.Response().Header()
		v := [4]string{strconv.FormatInt(r.Limit, 10), strconv.FormatInt(r.Remaining, 10), strconv.FormatInt(r.Reset, 10), strconv.FormatInt(after, 10)}
		h["X-Ratelimit-Limit"], h["X-Ratelimit-Remaining"], h["X-Ratelimit-Reset"], h["X-Ratelimit-Reset-After"] = v[0:1:1], v[1:2:2], v[2:3:3], v[3:4:4]
		if r.Reached {
			h.Set("Retry-After", strconv.FormatInt(after, 10))
			return (&apierr.Error{Status: http.StatusTooManyRequests, Code: apierr.CodeRateLimitExceeded,
				Message: fmt.Sprintf("rate limit of %d requests exceeded for %s; retry in %d seconds", r.Limit, rt.category, after)}).
				WithDetails(map[string]any{"category": rt.category, "limit": r.Limit, "reset_after_seconds": after})
		}
		return next(c)
	}
}

// wellFormedQuery refuses, on every operation, a query string of which Go's parser would drop
// parameters (malformedQuery): the one check of the raw query, before anything reads it
// (authentication's api_key, validation, handlers).
func (s *Server) wellFormedQuery(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if s.route(c) != nil { // an unknown path stays 404
			if err := malformedQuery(c.Request().URL.RawQuery); err != nil {
				return err
			}
		}
		return next(c)
	}
}

func (s *Server) validateRequest(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		rt := s.route(c)
		if rt != nil && rt.dynamic && s.recordSlots != nil && !ownSlots(rt.template) {
			// Many requests at once on a few cores make PostgreSQL slower for all of them
			// (and its tail long); the rest wait here, in order, for a slot.
			select {
			case s.recordSlots <- struct{}{}:
				defer func() { <-s.recordSlots }()
			case <-c.Request().Context().Done():
				return c.Request().Context().Err()
			}
		}
		if rt != nil && rt.dynamic {
			var err error
			if rt, err = s.recordRoute(c, rt); err != nil {
				return err
			}
		}
		if rt != nil && rt.kin != nil {
			if err := s.validate(c, rt); err != nil {
				return err
			}
		}
		return next(c)
	}
}

// controlPlaneWrites tells the store, once a request that may have changed datasets or
// memberships has done its work and before its client hears the answer, that cached dataset
// lookups are no longer to be trusted (other replicas hear it from the database). Record API
// writes change records only.
func (s *Server) controlPlaneWrites(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		switch c.Request().Method {
		case http.MethodGet, http.MethodHead, http.MethodOptions:
			return next(c)
		}
		if rt := s.route(c); rt != nil && (rt.dynamic || rt.dispatches) {
			return next(c)
		}
		c.Response().Before(s.H.Store.ControlPlaneChanged)
		err := next(c)
		s.H.Store.ControlPlaneChanged() // an error answer is written after this
		return err
	}
}

// ownSlots are the record API operations that do not take a record slot: those that stream
// for as long as the client reads, and user SQL (/data/query), which takes one of its user's
// query slots instead, so that one analyst's slow SQL cannot queue every tenant's requests.
func ownSlots(template string) bool {
	for _, op := range []string{"/data/export", "/data/stream", "/data/ws", "/data/query"} {
		if strings.HasSuffix(template, op) {
			return true
		}
	}
	return false
}

// recordRoute resolves a record API request's dataset (404 when the caller is not a member)
// and the operation of its description the request is validated against.
func (s *Server) recordRoute(c echo.Context, rt *route) (*route, error) {
	d, desc, err := s.H.ResolveRecords(c.Request().Context(), c.Param("dataset_id"), c.QueryParam("table"))
	if err != nil {
		return nil, err
	}
	method := c.Request().Method
	if d.Status != "active" && method != http.MethodGet && method != http.MethodHead && !strings.HasSuffix(rt.template, "/data/query") {
		// An import into the dataset is running (ResolveRecords serves nothing else that is
		// not active): readers see the rows as they were, writers wait for it to end rather
		// than for its table lock.
		return nil, apierr.New(http.StatusConflict, apierr.CodeDatasetNotReady,
			"the dataset is importing a file; its records can be written once it is active again")
	}
	item := desc.Doc.Paths.Value(rt.template)
	if item == nil || item.GetOperation(method) == nil {
		return nil, desc.NotServed(rt.template, method)
	}
	op := item.GetOperation(method)
	vh, err := desc.VersionHeaders(d.ID, s.cfg.BaseURL, c.Request().Header.Get("X-API-Version"))
	if err != nil {
		return nil, err
	}
	for k, v := range vh {
		c.Response().Header().Set(k, v)
	}
	handlers.WithRecordTarget(c, &handlers.RecordTarget{Dataset: d, Description: desc})
	c.Set(operationIDKey, op.OperationID)
	return s.descRoute(desc, rt, item, op, method), nil
}

// descRoute is the route a record request is validated at: the operation of the dataset's
// description, made once per description, echo route and method (each request would
// otherwise copy the operation) and kept with the description, so that it goes when the
// description leaves the cache (a route holds the whole document).
func (s *Server) descRoute(desc *descriptions.Description, rt *route, item *openapi3.PathItem, op *openapi3.Operation, method string) *route {
	return desc.Derived(descRouteKey{rt, method}, func() any {
		unsecured := *op
		unsecured.Security = &openapi3.SecurityRequirements{}
		return &route{opID: op.OperationID, category: rt.category, bodyLimit: rt.bodyLimit, op: op, query: queryParamsOf(item, op),
			kin: &routers.Route{Spec: desc.Doc, Path: rt.template, PathItem: item, Method: method, Operation: &unsecured}}
	}).(*route)
}

type descRouteKey struct {
	rt     *route
	method string
}
