// Package server assembles the HTTP service: echo with the middleware chain of the
// architecture (request id, recover, security headers, CORS, body limit, authentication, rate
// limit, validation against the published description), the handlers, and the central error
// handler.
package server

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"dataplatform/gen/api"
	"dataplatform/gen/spec"
	"dataplatform/handlers"
	"dataplatform/handlers/auth"
	"dataplatform/handlers/server/ratelimit"
	"dataplatform/handlers/settings"
	"dataplatform/store"
	"dataplatform/store/changes"
	"dataplatform/store/datasets"
	"dataplatform/store/jobs"
	"dataplatform/store/queries"
	"dataplatform/store/secrets"
	"dataplatform/store/views"
	"dataplatform/store/webhooks"
	"dataplatform/templates/descriptions"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/routers"
	"github.com/labstack/echo/v4"
)

// Deps are what the server is built from.
type Deps struct {
	Config settings.Settings
	Store  *store.Store
	// DatabaseURL reaches PostgreSQL directly (not through a transaction pooler), for the
	// LISTEN connections of jobs, webhooks, change streams and the lookup cache (empty: they
	// poll, and the lookups are not cached).
	DatabaseURL string
	Logger      *slog.Logger
	Clock       func() time.Time // nil: time.Now
	// Records gives the record API's routes over the handlers (records.Routes); the server
	// mounts them behind its middleware, validating each request against the dataset's own
	// description.
	Records func(*handlers.Handlers) []handlers.Route
	// Agents gives the protocol agents use (mcp.Agents), run through the API in process.
	Agents handlers.AgentsFunc
}

// Server is the assembled service.
type Server struct {
	cfg    settings.Settings
	dbURL  string
	log    *slog.Logger
	echo   *echo.Echo
	routes map[routeKey]*route
	// aliased are the routes also served under /v1/api (aliasTag).
	aliased map[routeKey]bool
	authn   *auth.Authenticator
	limiter *ratelimit.Limiter
	// recordSlots admits record API requests to the database a few at a time, in arrival
	// order (a channel's waiters are served first come, first served).
	recordSlots chan struct{}
	records     []handlers.Route
	agentsOf    handlers.AgentsFunc
	agents      handlers.Agents
	exporter    *queries.Exporter
	Keys        *auth.KeyStore
	H           *handlers.Handlers
	// Jobs runs background work (dataset ingestion); the caller starts and stops it.
	Jobs *jobs.Runner
	// Webhooks delivers events to webhook endpoints; the caller starts and stops it.
	Webhooks *webhooks.Dispatcher
}

// routeKey names an operation by its method and echo path: a struct, so that the lookups
// every middleware makes per request build no string.
type routeKey struct{ method, path string }

// route is what the middleware needs to know about an operation of the description.
type route struct {
	opID   string
	public bool
	// optionalAuth: public, but a user credential, when sent, is checked and used
	// (security lists {} beside a scheme)
	optionalAuth bool
	// page: the operation answers an HTML page (its 200 is text/html): a browser without
	// credentials is sent to the sign-in page instead of a 401
	page      bool
	category  string // rate-limit category ("" = not limited), from x-rate-limit
	limitKey  string // path parameter the count is kept per, instead of the caller
	bodyLimit int64
	upload    bool // x-body-limit: upload
	multipart bool
	op        *openapi3.Operation
	kin       *routers.Route
	query     *queryParams // op's query parameters
	// dynamic routes are the record API: validated against the dataset's own description,
	// at the path template of that description.
	dynamic  bool
	template string
	// dispatches: the MCP endpoint, whose tools run API operations in process (dispatch), each
	// validated and invalidating caches as itself
	dispatches bool
}

// New builds the server: loads the signing keys, the description, the rate limiter and the
// handlers.
func New(ctx context.Context, d Deps) (*Server, error) {
	if d.Clock == nil {
		d.Clock = time.Now
	}
	if d.Logger == nil {
		d.Logger = slog.Default()
	}
	if d.Records == nil || d.Agents == nil {
		return nil, errors.New("server: Deps.Records and Deps.Agents are needed (the record API, the MCP server)")
	}
	keys, err := auth.NewKeyStore(ctx, d.Store, d.Clock, d.Config.AccessTokenTTL+auth.ClockSkew)
	if err != nil {
		return nil, fmt.Errorf("signing keys: %w", err)
	}
	tokens := &auth.Tokens{Keys: keys, Issuer: d.Config.BaseURL, TTL: d.Config.AccessTokenTTL, Clock: d.Clock}
	lim, err := ratelimit.New(d.Config.RedisURL, d.Config.RateLimits)
	if err != nil {
		return nil, err
	}
	box, err := secrets.Load(d.Config.DataDir, d.Config.SecretKey)
	if err != nil {
		return nil, fmt.Errorf("secret key: %w", err)
	}
	h := &handlers.Handlers{
		Store: d.Store, Config: d.Config, Clock: d.Clock, Log: d.Logger,
		Tokens: tokens, Keys: keys, Passwords: auth.NewPasswords(d.Config.BcryptCost), Secrets: box,
		Changes: changes.NewHub(d.DatabaseURL, d.Logger),
		Descriptions: descriptions.New(d.Store, descriptions.URLs{Production: d.Config.BaseURL, Staging: d.Config.StagingURL,
			Auth: d.Config.OIDCIssuer}, d.Clock, int(d.Config.DescriptionCacheBytes)),
	}
	if d.Config.SMTPURL != "" {
		if h.Mail, err = auth.NewMailer(d.Config.SMTPURL, cmp.Or(d.Config.MailFrom, "dataplatform@localhost")); err != nil {
			return nil, err
		}
	}
	authn := &auth.Authenticator{Tokens: tokens, Store: d.Store, Clock: d.Clock, Origin: auth.OriginOf(d.Config.BaseURL)}
	if d.Config.OIDCEnabled() {
		oidc, err := auth.NewOIDC(ctx, auth.OIDCConfig{
			Issuer: d.Config.OIDCIssuer, ClientID: d.Config.OIDCClientID,
			ClientSecret: d.Config.OIDCClientSecret, RedirectURL: d.Config.OIDCRedirectURL,
		}, d.Store, d.Clock)
		if err != nil {
			return nil, fmt.Errorf("OpenID Connect provider %s: %w", d.Config.OIDCIssuer, err)
		}
		h.OIDC, authn.External = oidc, oidc
	}
	s := &Server{cfg: d.Config, dbURL: d.DatabaseURL, log: d.Logger, authn: authn, limiter: lim, Keys: keys, H: h, records: d.Records(h), agentsOf: d.Agents}
	if n := d.Config.RecordConcurrency; n > 0 {
		s.recordSlots = make(chan struct{}, n)
	}
	s.Jobs = jobs.NewRunner(d.Store, d.DatabaseURL, d.Clock, d.Logger, jobs.Options{Workers: 2, Lease: d.Config.JobLease})
	// A job's changes of datasets are known here before its end is seen anywhere.
	s.Jobs.OnFinish(func(context.Context, *jobs.Job, error) { d.Store.ControlPlaneChanged() })
	(&datasets.Ingester{Store: d.Store, Clock: d.Clock, Log: d.Logger, UploadPath: h.UploadPath}).Register(s.Jobs)
	(&datasets.Importer{Store: d.Store, Clock: d.Clock, Log: d.Logger, UploadPath: h.UploadPath, Around: views.AroundDataset}).Register(s.Jobs)
	(&datasets.Analyzer{Store: d.Store, Clock: d.Clock, Secrets: box, Networks: d.Config.ConnectionNetworks}).Register(s.Jobs)
	(&datasets.Indexer{Store: d.Store}).Register(s.Jobs)
	(&datasets.Rekeyer{Store: d.Store, Clock: d.Clock, Log: d.Logger, UploadPath: h.UploadPath}).Register(s.Jobs)
	s.exporter = &queries.Exporter{Store: d.Store, Clock: d.Clock, Dir: h.ExportDir(), MaxRowBytes: d.Config.QueryResultBytes}
	s.exporter.Register(s.Jobs)
	s.Webhooks = webhooks.New(d.Store, d.DatabaseURL, box, d.Clock, d.Logger, webhooks.Options{Lease: d.Config.JobLease,
		Timeout: d.Config.WebhookTimeout, Networks: d.Config.WebhookNetworks, DisableAfter: d.Config.WebhookDisableAfter,
		DisableFailures: d.Config.WebhookDisableFailures})
	if err := s.loadRoutes(); err != nil {
		return nil, err
	}
	s.echo = s.buildEcho()
	return s, nil
}

func (s *Server) loadRoutes() error {
	doc, err := openapi3.NewLoader().LoadFromData(spec.YAML)
	if err != nil {
		return fmt.Errorf("load description: %w", err)
	}
	s.routes, s.aliased = map[routeKey]*route{}, map[routeKey]bool{}
	for path, item := range doc.Paths.Map() {
		if strings.HasPrefix(path, aliasPrefix) {
			for method := range item.Operations() {
				s.aliased[routeKey{method, echoTemplate("/api/v1/" + strings.TrimPrefix(path, aliasPrefix))}] = true
			}
			continue
		}
		echoPath := echoTemplate(path)
		for method, op := range item.Operations() {
			// kin-openapi validates parameters and bodies only: authentication is the
			// authenticate middleware's (kin's security check would also read every body,
			// uploads included, into memory).
			unsecured := *op
			unsecured.Security = &openapi3.SecurityRequirements{}
			rt := &route{opID: op.OperationID, public: public(op), optionalAuth: optionalAuth(op), page: htmlPage(op), op: op,
				category: "default", bodyLimit: s.cfg.MaxBodyBytes,
				kin: &routers.Route{Spec: doc, Path: path, PathItem: item, Method: method, Operation: &unsecured}, query: queryParamsOf(item, op)}
			if rt.public {
				rt.category = "auth"
			}
			// x-rate-limit: {category, key} names the operation's rate-limit category (none:
			// not limited) and the path parameter counted per, when not the caller.
			if x, ok := op.Extensions["x-rate-limit"].(map[string]any); ok {
				if c, _ := x["category"].(string); c == "none" {
					rt.category = ""
				} else if c != "" {
					rt.category = c
				}
				rt.limitKey, _ = x["key"].(string)
			}
			if op.Extensions["x-body-limit"] == "upload" {
				rt.upload = true
				rt.bodyLimit = s.cfg.MaxUploadBytes + 1<<20 // the file plus the form around it
			}
			if op.RequestBody != nil && op.RequestBody.Value.Content.Get("multipart/form-data") != nil {
				rt.multipart = true
			}
			s.routes[routeKey{method, echoPath}] = rt
		}
	}
	return nil
}

// public reports whether an operation needs no user credential: its security lists {}
// (anyone), or only the operator's metrics token (its handler checks that one).
func public(op *openapi3.Operation) bool {
	if op.Security == nil {
		return false
	}
	if slices.ContainsFunc(*op.Security, func(r openapi3.SecurityRequirement) bool { return len(r) == 0 }) {
		return true
	}
	for _, req := range *op.Security {
		for scheme := range req {
			if scheme != "metricsToken" {
				return false
			}
		}
	}
	return true
}

// htmlPage reports whether an operation's 200 answer is an HTML page.
func htmlPage(op *openapi3.Operation) bool {
	r := op.Responses.Status(http.StatusOK)
	return r != nil && r.Value != nil && r.Value.Content.Get("text/html") != nil
}

// optionalAuth reports whether a public operation also takes user credentials ({} beside a
// scheme): when sent, they are checked and used.
func optionalAuth(op *openapi3.Operation) bool { return public(op) && len(*op.Security) > 1 }

// echoTemplate is an OpenAPI path template as echo writes it ({id} → :id).
func echoTemplate(path string) string {
	for strings.Contains(path, "{") {
		i, j := strings.Index(path, "{"), strings.Index(path, "}")
		path = path[:i] + ":" + path[i+1:j] + path[j+1:]
	}
	return path
}

// aliasPrefix is the second prefix the dashboard operations are published under; the description publishes
// every dashboard and view operation there too (cmd/bundle's addAliases), and unalias routes
// those requests to the /api/v1 handlers: one implementation at two addresses.
const aliasPrefix = "/v1/api/"

// unalias (before routing) serves /v1/api/... as /api/v1/...; aliasedOnly then refuses what
// the description does not publish under /v1/api.
func unalias(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if r := c.Request(); strings.HasPrefix(r.URL.Path, aliasPrefix) {
			c.Set("alias", true)
			r.URL.Path = "/api/v1/" + strings.TrimPrefix(r.URL.Path, aliasPrefix)
			if r.URL.RawPath != "" {
				r.URL.RawPath = "/api/v1/" + strings.TrimPrefix(r.URL.RawPath, aliasPrefix)
			}
		}
		return next(c)
	}
}

func (s *Server) aliasedOnly(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if c.Get("alias") != nil && !s.aliased[routeKey{c.Request().Method, c.Path()}] {
			return echo.ErrNotFound
		}
		return next(c)
	}
}

func (s *Server) buildEcho() *echo.Echo {
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	e.HTTPErrorHandler = s.errorHandler
	// Client addresses (IP allowlists, rate limits, audit) come from the connection, not from
	// X-Forwarded-For, which any client can write, unless the connection comes from one of
	// the proxies DP_TRUSTED_PROXIES names: then from the last address of X-Forwarded-For
	// that is not one of them.
	e.IPExtractor = echo.ExtractIPDirect()
	if len(s.cfg.TrustedProxies) > 0 {
		opts := []echo.TrustOption{echo.TrustLoopback(false), echo.TrustLinkLocal(false), echo.TrustPrivateNet(false)}
		for _, p := range s.cfg.TrustedProxies {
			opts = append(opts, echo.TrustIPRange(netipNet(p)))
		}
		e.IPExtractor = echo.ExtractIPFromXFFHeader(opts...)
	}
	e.Pre(unalias)
	e.Use(s.requestMeta, securityHeaders, s.observe, s.recoverer, s.aliasedOnly)
	if len(s.cfg.CORSOrigins) > 0 {
		e.Use(cors(s.cfg.CORSOrigins))
	}
	e.Use(s.bodyLimit, s.wellFormedQuery, s.authenticate, s.rateLimit, s.validateRequest, s.controlPlaneWrites)

	api.RegisterHandlers(e, api.NewStrictHandler(handlers.NewAPI(s.H), nil))

	// The web console: a page at / outside the description, a client of the API above.
	e.GET(handlers.ConsolePath, s.H.Console(s.authn))

	s.agents = s.agentsOf(s.H, s.dispatch, s.log)
	s.mountAgents(e, s.agents)

	// The record API: one handler for every dataset, validated against its own description.
	for _, r := range s.records {
		echoPath := echoTemplate(r.Template)
		e.Add(r.Method, echoPath, r.Handler)
		s.routes[routeKey{r.Method, echoPath}] = &route{opID: "records", category: r.Category, bodyLimit: s.cfg.MaxBodyBytes, dynamic: true, template: r.Template}
	}
	return e
}

// Handler is the HTTP handler of the service.
func (s *Server) Handler() http.Handler { return s.echo }

// HTTPServer is an http.Server (its Addr for the caller to set) with timeouts, so a slow client
// cannot hold a connection forever. Streaming routes (exports, change streams, query streams)
// extend their own deadlines with http.ResponseController.
func (s *Server) HTTPServer() *http.Server {
	return &http.Server{
		Handler:           s.echo,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       60 * time.Second,
		WriteTimeout:      60 * time.Second,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
}

// Listen listens for record change notifications (change streams), control-plane change
// notifications (the record API's cached dataset lookups) and access-token revocations (the
// deny-list's copy) until ctx ends.
func (s *Server) Listen(ctx context.Context) {
	s.H.Changes.Start(ctx)
	s.H.Store.WatchControlPlane(ctx, s.dbURL, s.log)
	s.H.Store.WatchRevokedAccess(ctx, s.dbURL, s.H.Clock, s.log)
}

// Close releases what the server holds (not the store).
func (s *Server) Close() error { return s.limiter.Close() }

// Maintain runs periodic housekeeping until ctx ends: removing uploads that expired without
// a dataset claiming them, and idempotency keys past their day. Every replica may run it; each expired row is deleted once.
func (s *Server) Maintain(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		if n, err := s.H.SweepUploads(ctx); err != nil && ctx.Err() == nil {
			s.log.Warn("sweeping expired uploads", "error", err)
		} else if n > 0 {
			s.log.Info("removed expired uploads", "count", n)
		}
		if err := store.SweepIdempotencyKeys(ctx, s.H.Store.DB, s.H.Clock().Add(-store.IdempotencyTTL)); err != nil && ctx.Err() == nil {
			s.log.Warn("sweeping idempotency keys", "error", err)
		}
		if err := store.SweepLoginFailures(ctx, s.H.Store.DB, s.H.Clock().Add(-24*time.Hour)); err != nil && ctx.Err() == nil {
			s.log.Warn("sweeping login failures", "error", err)
		}
		if err := store.SweepBrowserSessions(ctx, s.H.Store.DB, s.H.Clock().Add(-24*time.Hour)); err != nil && ctx.Err() == nil {
			s.log.Warn("sweeping ended browser sessions", "error", err)
		}
		// Kept past exp by the clock-skew allowance, for a server whose clock is behind.
		if err := store.SweepRevokedAccessTokens(ctx, s.H.Store.DB, s.H.Clock().Add(-auth.ClockSkew)); err != nil && ctx.Err() == nil {
			s.log.Warn("sweeping the access-token deny-list", "error", err)
		}
		if _, err := s.H.FailInterruptedQueries(ctx); err != nil && ctx.Err() == nil {
			s.log.Warn("failing interrupted queries", "error", err)
		}
		if keys, err := store.ExpireQueryExports(ctx, s.H.Store.DB, s.H.Clock()); err != nil && ctx.Err() == nil {
			s.log.Warn("expiring query exports", "error", err)
		} else {
			for _, k := range keys {
				_ = os.Remove(filepath.Join(s.H.ExportDir(), filepath.FromSlash(k))) // best effort: the export's row is gone already
			}
		}
		if n, err := s.exporter.SweepPartial(time.Now().Add(-queries.PartialAge)); err != nil && ctx.Err() == nil {
			s.log.Warn("sweeping partial export files", "error", err)
		} else if n > 0 {
			s.log.Info("removed the partial files of interrupted exports", "count", n)
		}
		if n, err := datasets.PurgeDeleted(ctx, s.H.Store.DB, s.H.Clock()); err != nil && ctx.Err() == nil {
			s.log.Warn("purging soft-deleted records past their retention", "error", err)
		} else if n > 0 {
			s.log.Info("purged soft-deleted records past their retention", "count", n)
		}
		if err := webhooks.Sweep(ctx, s.H.Store.DB, s.H.Clock()); err != nil && ctx.Err() == nil {
			s.log.Warn("sweeping webhook deliveries", "error", err)
		}
		if err := store.SweepRecordChanges(ctx, s.H.Store.DB, s.H.Clock().Add(-store.ChangeRetention)); err != nil && ctx.Err() == nil {
			s.log.Warn("sweeping the record change log", "error", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// netipNet is p as a net.IPNet (echo's trust options take those).
func netipNet(p netip.Prefix) *net.IPNet {
	return &net.IPNet{IP: p.Addr().AsSlice(), Mask: net.CIDRMask(p.Bits(), p.Addr().BitLen())}
}
