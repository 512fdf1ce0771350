package tests

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"os"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"dataplatform/cmd/dataplatform/config"
	"dataplatform/gen/spec"
	"dataplatform/handlers/mcp"
	"dataplatform/handlers/records"
	"dataplatform/handlers/server"
	"dataplatform/store"
	"dataplatform/store/pgtest"
	"dataplatform/tests/fakeclock"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"
)

func TestMain(m *testing.M) {
	// Exports answer files; the validator checks their headers and takes their bodies whole.
	for _, ct := range []string{"text/csv", "application/x-ndjson", "application/vnd.apache.parquet",
		"application/vnd.openxmlformats-officedocument.spreadsheetml.sheet", "text/event-stream", "application/zip"} {
		openapi3filter.RegisterBodyDecoder(ct, openapi3filter.FileBodyDecoder)
	}
	for _, ct := range []string{"text/markdown", "text/html", "text/css", "application/javascript", "text/javascript"} {
		openapi3filter.RegisterBodyDecoder(ct, openapi3filter.PlainBodyDecoder)
	}
	// The tests wait on PostgreSQL, jobs and child processes far more than they compute, and
	// go test runs GOMAXPROCS of them at once by default (2 on a small machine: barely faster
	// than one by one). Unless -parallel is given, run 8 at a time: each test's server holds
	// about 7 connections at its peak, so 8 stay well inside the embedded cluster's 200
	// (16 reached 107) however many cores the machine has.
	flag.Parse()
	explicit := false
	flag.Visit(func(f *flag.Flag) { explicit = explicit || f.Name == "test.parallel" })
	if !explicit {
		flag.Set("test.parallel", "8")
	}
	var err error
	if doc, err = openapi3.NewLoader().LoadFromData(spec.YAML); err != nil {
		fmt.Fprintln(os.Stderr, "tests: the published description:", err)
		os.Exit(1)
	}
	os.Exit(pgtest.Main(m))
}

const (
	adminEmail    = "owner@example.com"
	adminPassword = "owner-password-1"
	baseURL       = "http://dp.test"
)

// env is one server on its own database.
type env struct {
	t      testing.TB
	srv    *server.Server
	st     *store.Store
	ts     *httptest.Server
	clock  *fakeclock.Clock // the server's; tests move it to expire tokens and keys
	router routers.Router
	cfg    config.Config
	dbURL  string
	logs   *logBuffer // the server's log, from level INFO
	// members numbers the people member invites: per env, so that a test's emails do not
	// depend on what other tests ran before or beside it
	members *atomic.Int64
	// descRouters keeps the router of each dataset description seen, by its text: parsing
	// the description again for every record request was most of the harness's own work
	descRouters *sync.Map
	// the bootstrap owner and the ids of their organization and project
	ownerToken string
	orgID      string
	projectID  string
}

type option func(*config.Config)

// logBuffer keeps what the server logs, for tests that look at it.
type logBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// teeHandler logs to both handlers (each with its own level).
type teeHandler struct{ a, b slog.Handler }

func (t teeHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return t.a.Enabled(ctx, l) || t.b.Enabled(ctx, l)
}

func (t teeHandler) Handle(ctx context.Context, r slog.Record) error {
	for _, h := range []slog.Handler{t.a, t.b} {
		if h.Enabled(ctx, r.Level) {
			if err := h.Handle(ctx, r.Clone()); err != nil {
				return err
			}
		}
	}
	return nil
}

func (t teeHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return teeHandler{t.a.WithAttrs(as), t.b.WithAttrs(as)}
}

func (t teeHandler) WithGroup(n string) slog.Handler {
	return teeHandler{t.a.WithGroup(n), t.b.WithGroup(n)}
}

func newEnv(t testing.TB, opts ...option) *env {
	t.Helper()
	ctx := context.Background()
	dbURL := pgtest.NewDatabase(t)
	st, err := store.Open(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	cfg := config.Defaults()
	cfg.BaseURL = baseURL
	cfg.BcryptCost = 4
	cfg.AdminEmail, cfg.AdminPassword = adminEmail, adminPassword
	cfg.LogRequests = false
	cfg.DataDir = t.TempDir()
	// The test databases are on loopback; 10.255.255.1 is the unreachable host.
	cfg.ConnectionNetworks = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("10.255.255.1/32")}
	for _, o := range opts {
		o(&cfg)
	}
	e := &env{t: t, st: st, clock: fakeclock.New(time.Now().UTC()), cfg: cfg, dbURL: dbURL, members: new(atomic.Int64),
		descRouters: new(sync.Map)}
	e.logs = &logBuffer{}
	var log *slog.Logger = slog.New(slog.NewTextHandler(e.logs, nil))
	if testing.Verbose() {
		log = slog.New(teeHandler{log.Handler(), slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})})
	}
	e.srv, err = server.New(ctx, server.Deps{Config: cfg.Settings, Store: st, DatabaseURL: dbURL, Logger: log, Clock: e.clock.Now, Records: records.Routes, Agents: mcp.Agents})
	if err != nil {
		t.Fatal(err)
	}
	e.srv.Jobs.Start(context.Background())
	t.Cleanup(e.srv.Jobs.Stop)
	e.srv.Webhooks.Start(context.Background())
	t.Cleanup(e.srv.Webhooks.Stop)
	streams, stop := context.WithCancel(context.Background())
	e.srv.Listen(streams)
	t.Cleanup(stop)
	if err := e.srv.H.Bootstrap(ctx); err != nil {
		t.Fatal(err)
	}
	e.ts = httptest.NewServer(e.srv.Handler())
	t.Cleanup(e.ts.Close)
	t.Cleanup(func() { e.srv.Close() })
	e.router = specRouter(t, e.ts.URL)

	r := e.login(adminEmail, adminPassword, "")
	e.ownerToken = r.str("access_token")
	e.orgID = r.str("user.organization_id")
	p := e.do("GET", "/api/v1/organizations/"+e.orgID+"/projects", nil, bearer(e.ownerToken)).status(200)
	e.projectID = p.str("projects.0.id")
	return e
}

// doc is the published description, loaded once in TestMain; tests only read it.
var doc *openapi3.T

// specRouter finds operations of the published description for response validation.
func specRouter(t testing.TB, serverURL string) routers.Router {
	d := *doc
	d.Servers = openapi3.Servers{{URL: serverURL}}
	r, err := gorillamux.NewRouter(&d)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// header sets request headers.
type header map[string]string

func bearer(tok string) header { return header{"Authorization": "Bearer " + tok} }
func apiKey(k string) header   { return header{"X-API-Key": k} }

// resp is a response whose body was validated against the description.
type resp struct {
	t      testing.TB
	Code   int
	Header http.Header
	Body   []byte
	json   any
	req    string
}

// do sends a request and validates the response against the published description (status
// documented, headers and body matching the schema). body may be a string (sent raw) or any
// value (sent as JSON).
func (e *env) do(method, path string, body any, hs ...header) *resp {
	e.t.Helper()
	var rd io.Reader
	ct := ""
	switch b := body.(type) {
	case nil:
	case string:
		rd, ct = strings.NewReader(b), "application/json"
	case []byte:
		rd, ct = bytes.NewReader(b), "application/json"
	default:
		j, _ := json.Marshal(b)
		rd, ct = bytes.NewReader(j), "application/json"
	}
	req, err := http.NewRequest(method, e.ts.URL+path, rd)
	if err != nil {
		e.t.Fatal(err)
	}
	if ct != "" {
		req.Header.Set("Content-Type", ct)
	}
	for _, h := range hs {
		for k, v := range h {
			req.Header.Set(k, v)
		}
	}
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err := client.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	r := &resp{t: e.t, Code: res.StatusCode, Header: res.Header, Body: b, req: method + " " + path}
	if len(b) > 0 && strings.HasPrefix(res.Header.Get("Content-Type"), "application/json") {
		if err := json.Unmarshal(b, &r.json); err != nil {
			e.t.Fatalf("%s: response is not JSON: %v\n%s", r.req, err, b)
		}
	}
	e.validate(req, r)
	return r
}

func (e *env) validate(req *http.Request, r *resp) {
	e.t.Helper()
	router := e.router
	if m := recordPath.FindStringSubmatch(req.URL.Path); m != nil {
		router = e.datasetRouter(m[1], req.URL.Query().Get("table"))
	}
	route, params, err := router.FindRoute(req)
	if err != nil {
		if r.Code == http.StatusNotFound || r.Code == http.StatusMethodNotAllowed || req.Method == http.MethodOptions {
			return // an undocumented path, or a CORS preflight: nothing to validate against
		}
		e.t.Fatalf("%s: no operation in the description: %v", r.req, err)
	}
	in := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route,
			Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc}},
		Status: r.Code, Header: r.Header, Body: io.NopCloser(bytes.NewReader(r.Body)),
		Options: &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true},
	}
	if err := openapi3filter.ValidateResponse(context.Background(), in); err != nil {
		e.t.Fatalf("%s: response %d does not match the description: %v\n%s", r.req, r.Code, err, r.Body)
	}
}

// replica starts a second server on the same database and data directory, as another
// replica of the service would run; it answers at the returned base URL.
func (e *env) replica() string {
	e.t.Helper()
	srv, err := server.New(context.Background(), server.Deps{Config: e.cfg.Settings, Store: e.st, DatabaseURL: e.dbURL, Records: records.Routes, Agents: mcp.Agents,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Clock: e.clock.Now})
	if err != nil {
		e.t.Fatal(err)
	}
	streams, stop := context.WithCancel(context.Background())
	srv.Listen(streams)
	ts := httptest.NewServer(srv.Handler())
	e.t.Cleanup(func() { ts.Close(); stop(); srv.Close() })
	return ts.URL
}

var recordPath = regexp.MustCompile(`^/api/v1/datasets/(ds_[a-z0-9_]+)/data(/|$)`)

// datasetRouter finds operations of a dataset's own description (read with the owner's
// token), for validating record API responses.
func (e *env) datasetRouter(id, table string) routers.Router {
	e.t.Helper()
	req, _ := http.NewRequest("GET", e.ts.URL+"/api/v1/datasets/"+id+"/openapi.json?table="+url.QueryEscape(table), nil)
	req.Header.Set("Authorization", "Bearer "+e.ownerToken)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if r, ok := e.descRouters.Load(string(b)); ok && res.StatusCode == 200 {
		return r.(routers.Router) // the same description as before: its router is kept
	}
	if res.StatusCode != 200 && table != "" {
		return e.datasetRouter(id, "") // a table the dataset lacks: the answer is the default table's 400
	}
	if res.StatusCode != 200 {
		e.t.Logf("no description for %s: %d %s", id, res.StatusCode, b)
		return e.router // no description (unknown dataset): the static one has no such path either
	}
	d, err := openapi3.NewLoader().LoadFromData(b)
	if err != nil {
		e.t.Fatalf("dataset description: %v", err)
	}
	d.Servers = openapi3.Servers{{URL: e.ts.URL}}
	r, err := gorillamux.NewRouter(d)
	if err != nil {
		e.t.Fatal(err)
	}
	e.descRouters.Store(string(b), r)
	return r
}

// status fails the test unless the response has the given status.
func (r *resp) status(code int) *resp {
	r.t.Helper()
	if r.Code != code {
		r.t.Fatalf("%s: status %d, want %d\n%s", r.req, r.Code, code, r.Body)
	}
	return r
}

// get reads a dotted path (a.b.0.c) from the JSON body.
func (r *resp) get(path string) any {
	var cur any = r.json
	if path == "" {
		return cur
	}
	for _, p := range strings.Split(path, ".") {
		switch c := cur.(type) {
		case map[string]any:
			cur = c[p]
		case []any:
			var i int
			if _, err := fmt.Sscanf(p, "%d", &i); err != nil || i >= len(c) {
				return nil
			}
			cur = c[i]
		default:
			return nil
		}
	}
	return cur
}

func (r *resp) str(path string) string {
	r.t.Helper()
	s, ok := r.get(path).(string)
	if !ok {
		r.t.Fatalf("%s: %s is not a string in\n%s", r.req, path, r.Body)
	}
	return s
}

func (r *resp) num(path string) int {
	r.t.Helper()
	f, ok := r.get(path).(float64)
	if !ok {
		r.t.Fatalf("%s: %s is not a number in\n%s", r.req, path, r.Body)
	}
	return int(f)
}

func (r *resp) len(path string) int {
	r.t.Helper()
	a, ok := r.get(path).([]any)
	if !ok {
		r.t.Fatalf("%s: %s is not an array in\n%s", r.req, path, r.Body)
	}
	return len(a)
}

// apiError checks a nested-envelope error with code and, when field is given, a details entry
// for that field with that detail code.
func (r *resp) apiError(status int, code string, fieldAndCode ...string) *resp {
	r.t.Helper()
	r.status(status)
	if got := r.get("error.code"); got != code {
		r.t.Fatalf("%s: error code %v, want %s\n%s", r.req, got, code, r.Body)
	}
	if r.get("error.request_id") != r.Header.Get("X-Request-Id") {
		r.t.Fatalf("%s: error.request_id does not match X-Request-Id\n%s", r.req, r.Body)
	}
	for i := 0; i+1 < len(fieldAndCode); i += 2 {
		found := false
		ds, _ := r.get("error.details").([]any)
		for _, d := range ds {
			m := d.(map[string]any)
			if m["field"] == fieldAndCode[i] && m["code"] == fieldAndCode[i+1] {
				found = true
			}
		}
		if !found {
			r.t.Fatalf("%s: no detail {field %s, code %s} in\n%s", r.req, fieldAndCode[i], fieldAndCode[i+1], r.Body)
		}
	}
	return r
}

// authError checks the flat 401/403 shape.
func (r *resp) authError(status int, code string) *resp {
	r.t.Helper()
	r.status(status)
	if r.get("code") != code || r.get("error") == nil || r.get("message") == nil {
		r.t.Fatalf("%s: want flat error with code %s, got\n%s", r.req, code, r.Body)
	}
	return r
}

func (e *env) login(email, password, orgID string) *resp {
	e.t.Helper()
	body := map[string]any{"email": email, "password": password}
	if orgID != "" {
		body["organization_id"] = orgID
	}
	return e.do("POST", "/api/v1/auth/login", body).status(200)
}

// member invites a new person to orgID with role (as the owner), accepts, and returns their
// email and access token.
func (e *env) member(orgID, role string) (email, token string) {
	e.t.Helper()
	email = fmt.Sprintf("%s%d@example.com", role, e.members.Add(1))
	inv := e.do("POST", "/api/v1/organizations/"+orgID+"/invitations", map[string]any{"email": email, "role": role}, bearer(e.ownerToken)).status(201)
	acc := e.do("POST", "/api/v1/invitations/"+e.invitationToken(inv)+"/accept", map[string]any{"name": "User " + role, "password": "password-" + role}).status(200)
	return email, acc.str("access_token")
}

// countAuditRows counts audit log entries of an organization with an action.
func (e *env) countAuditRows(orgID, action string) int {
	e.t.Helper()
	var n int
	if err := e.st.DB.Get(&n, `SELECT count(*) FROM platform.audit_log WHERE organization_id = $1 AND action = $2`, orgID, action); err != nil {
		e.t.Fatal(err)
	}
	return n
}

// countOutboxRows counts outbox events of an organization with an event type.
func (e *env) countOutboxRows(orgID, event string) int {
	e.t.Helper()
	var n int
	if err := e.st.DB.Get(&n, `SELECT count(*) FROM platform.outbox WHERE organization_id = $1 AND event_type = $2`, orgID, event); err != nil {
		e.t.Fatal(err)
	}
	return n
}

// userIDOf is the id of the account with an email.
func (e *env) userIDOf(email string) string {
	e.t.Helper()
	var id string
	if err := e.st.DB.Get(&id, `SELECT id FROM platform.users WHERE lower(email) = lower($1)`, email); err != nil {
		e.t.Fatalf("user %s: %v", email, err)
	}
	return id
}

// setPlan moves an organization to another plan tier (billing does not exist yet: straight in
// the database).
func (e *env) setPlan(orgID, tier string) {
	e.t.Helper()
	if _, err := e.st.DB.Exec(`UPDATE platform.organizations SET plan_tier = $2 WHERE id = $1`, orgID, tier); err != nil {
		e.t.Fatal(err)
	}
}

// invTokenOf extracts the invitation token from an invitation's URL.
func invTokenOf(r *resp) string {
	u := r.str("invitation_url")
	return u[strings.LastIndex(u, "/")+1:]
}

// joinAs invites email to orgID with the inviter's token and accepts the invitation; a new
// person sets name and password, an existing account signs in with its password, has its
// address verified (see verified) and accepts signed in. It returns the access token of the
// accepted sign-in.
func (e *env) joinAs(inviterTok, orgID, email, role, name, password string) string {
	e.t.Helper()
	inv := e.do("POST", "/api/v1/organizations/"+orgID+"/invitations", map[string]any{"email": email, "role": role}, bearer(inviterTok)).status(201)
	tok := e.invitationToken(inv)
	if e.do("GET", "/api/v1/invitations/"+tok, nil).status(200).get("existing_user") == true {
		signedIn := e.login(email, password, "").str("access_token")
		e.verified(email)
		return e.do("POST", "/api/v1/invitations/"+tok+"/accept", map[string]any{}, bearer(signedIn)).status(200).str("access_token")
	}
	acc := e.do("POST", "/api/v1/invitations/"+tok+"/accept", map[string]any{"name": name, "password": password}).status(200)
	return acc.str("access_token")
}

// pageQuery parses a relative page URL of a pagination object.
func pageQuery(t testing.TB, path, u string) url.Values {
	t.Helper()
	p, err := url.Parse(u)
	if err != nil || p.Path != path || p.IsAbs() {
		t.Fatalf("page URL %q is not a relative URL of %s", u, path)
	}
	return p.Query()
}

// subtest runs f as a subtest with the env reporting to it, and points the env back at t after.
func (e *env) subtest(t *testing.T, name string, f func(t *testing.T)) {
	t.Helper()
	t.Run(name, func(st *testing.T) {
		e.t = st
		f(st)
	})
	e.t = t
}

// detailField is details.field of a nested error (conflicts name the field that way).
func detailField(r *resp) any { return r.get("error.details.field") }
