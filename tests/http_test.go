package tests

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"dataplatform/cmd/dataplatform/config"
	"dataplatform/handlers/apierr"

	"github.com/getkin/kin-openapi/openapi3"
)

// sendRaw is e.do for a request built by hand (for bodies of unknown length); the response is
// validated against the description the same way.
func (e *env) sendRaw(req *http.Request) *resp {
	e.t.Helper()
	res, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	r := &resp{t: e.t, Code: res.StatusCode, Header: res.Header, Body: b, req: req.Method + " " + req.URL.Path}
	if len(b) > 0 && strings.HasPrefix(res.Header.Get("Content-Type"), "application/json") {
		if err := json.Unmarshal(b, &r.json); err != nil {
			e.t.Fatalf("%s: response is not JSON: %v\n%s", r.req, err, b)
		}
	}
	e.validate(req, r)
	return r
}

// docResolves follows the documentation_url of a nested error body: it must be this
// service's page for the same code and status.
func (e *env) docResolves(r *resp) {
	e.t.Helper()
	u := r.str("error.documentation_url")
	if !strings.HasPrefix(u, baseURL+"/") {
		e.t.Fatalf("%s: documentation_url %q is not under %s", r.req, u, baseURL)
	}
	d := e.do("GET", strings.TrimPrefix(u, baseURL), nil).status(200)
	if d.str("code") != r.str("error.code") || d.num("status") != r.Code || d.str("title") == "" || d.str("description") == "" {
		e.t.Fatalf("%s: documentation of %s: %s", r.req, r.str("error.code"), d.Body)
	}
}

var wantSecurityHeaders = map[string]string{
	"X-Content-Type-Options":    "nosniff",
	"X-Frame-Options":           "DENY",
	"X-XSS-Protection":          "1; mode=block",
	"Strict-Transport-Security": "max-age=31536000",
	"Content-Security-Policy":   "default-src 'self'",
}

func TestHTTPSecurityHeaders(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *config.Config) { c.MaxBodyBytes = 1024; c.MetricsToken = "m-token" })
	own := bearer(e.ownerToken)
	cases := []struct {
		name string
		call func() *resp
	}{
		{"health", func() *resp { return e.do("GET", "/healthz", nil).status(200) }},
		{"authenticated read", func() *resp { return e.do("GET", "/api/v1/organizations/"+e.orgID, nil, own).status(200) }},
		{"created", func() *resp {
			return e.do("POST", "/api/v1/organizations/"+e.orgID+"/projects", map[string]any{"name": "H"}, own).status(201)
		}},
		{"no content", func() *resp {
			p := e.do("POST", "/api/v1/organizations/"+e.orgID+"/projects", map[string]any{"name": "Gone"}, own).status(201)
			return e.do("DELETE", "/api/v1/projects/"+p.str("id"), nil, own).status(204)
		}},
		{"metrics", func() *resp { return e.do("GET", "/metrics", nil, bearer("m-token")).status(200) }},
		{"yaml", func() *resp { return e.do("GET", "/api/v1/openapi.yaml", nil).status(200) }},
		{"validation error", func() *resp {
			return e.do("POST", "/api/v1/organizations", `{}`, own).apiError(400, "VALIDATION_ERROR")
		}},
		{"unauthenticated", func() *resp { return e.do("GET", "/api/v1/auth/me", nil).authError(401, "AUTH_REQUIRED") }},
		{"forbidden", func() *resp {
			k := e.do("POST", "/api/v1/api-keys", map[string]any{"name": "k", "permissions": []string{"datasets:list"}}, own).status(201).str("key")
			return e.do("POST", "/api/v1/organizations", map[string]any{"name": "x"}, apiKey(k)).authError(403, "PERMISSION_DENIED")
		}},
		{"missing resource", func() *resp { return e.do("GET", "/api/v1/projects/prj_nothere", nil, own).apiError(404, "NOT_FOUND") }},
		{"unknown route", func() *resp { return e.do("GET", "/nope", nil).apiError(404, "NOT_FOUND") }},
		{"unknown api route", func() *resp {
			return e.do("GET", "/api/v1/organizations/"+e.orgID+"/nothing", nil, own).apiError(404, "NOT_FOUND")
		}},
		{"wrong method", func() *resp { return e.do("PUT", "/api/v1/auth/login", nil).apiError(405, "METHOD_NOT_ALLOWED") }},
		{"too large", func() *resp {
			return e.do("POST", "/api/v1/organizations", `{"name":"`+strings.Repeat("a", 2048)+`"}`, own).apiError(413, "PAYLOAD_TOO_LARGE")
		}},
	}
	for _, tc := range cases {
		e.subtest(t, tc.name, func(t *testing.T) {
			r := tc.call()
			for k, v := range wantSecurityHeaders {
				if got := r.Header.Values(k); len(got) != 1 || got[0] != v {
					t.Errorf("%s: %s = %q, want exactly %q", r.req, k, got, v)
				}
			}
			if !regexp.MustCompile(`^req_[0-9a-f]{24}$`).MatchString(r.Header.Get("X-Request-Id")) {
				t.Errorf("%s: X-Request-Id %q", r.req, r.Header.Get("X-Request-Id"))
			}
		})
	}
}

func TestHTTPRequestID(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	seen := map[string]bool{}
	for i := 0; i < 3; i++ {
		id := e.do("GET", "/healthz", nil).status(200).Header.Get("X-Request-Id")
		if !regexp.MustCompile(`^req_[0-9a-f]{24}$`).MatchString(id) || seen[id] {
			t.Fatalf("generated request id %q (seen: %v)", id, seen)
		}
		seen[id] = true
	}
	echoed := []string{"client-id-123", "a.b:c_d-E9", strings.Repeat("x", 128), "0"}
	for _, id := range echoed {
		if got := e.do("GET", "/healthz", nil, header{"X-Request-Id": id}).status(200).Header.Get("X-Request-Id"); got != id {
			t.Fatalf("well-formed id %q answered as %q", id, got)
		}
	}
	replaced := []string{strings.Repeat("x", 300), strings.Repeat("y", 129), "has space", "semi;colon", "slash/x", `"quoted"`, "<script>"}
	for _, id := range replaced {
		got := e.do("GET", "/healthz", nil, header{"X-Request-Id": id}).status(200).Header.Get("X-Request-Id")
		if got == id || !regexp.MustCompile(`^req_[0-9a-f]{24}$`).MatchString(got) {
			t.Fatalf("malformed id %q answered as %q", id, got)
		}
	}
	// Error bodies carry the same id, whether the client's or a generated one.
	r := e.do("GET", "/api/v1/projects/prj_nothere", nil, bearer(e.ownerToken), header{"X-Request-Id": "trace-42"}).apiError(404, "NOT_FOUND")
	if r.str("error.request_id") != "trace-42" {
		t.Fatalf("404 body: %s", r.Body)
	}
	r = e.do("GET", "/api/v1/auth/me", nil, header{"X-Request-Id": "trace-43"}).authError(401, "AUTH_REQUIRED")
	if r.str("request_id") != "trace-43" || r.Header.Get("X-Request-Id") != "trace-43" {
		t.Fatalf("401 body: %s", r.Body)
	}
	r = e.do("POST", "/api/v1/organizations", `{}`, bearer(e.ownerToken), header{"X-Request-Id": strings.Repeat("z", 300)}).apiError(400, "VALIDATION_ERROR")
	if strings.Contains(string(r.Body), "zzzz") {
		t.Fatalf("malformed client id in the body: %s", r.Body)
	}
}

func TestHTTPCORS(t *testing.T) {
	t.Parallel()
	const origin = "https://app.example"
	e := newEnv(t, func(c *config.Config) { c.CORSOrigins = []string{origin} })
	list := func(h string) []string {
		var out []string
		for _, p := range strings.Split(h, ",") {
			out = append(out, strings.TrimSpace(p))
		}
		return out
	}
	for _, method := range []string{"GET", "POST", "PUT", "PATCH", "DELETE"} {
		pre := e.do("OPTIONS", "/api/v1/organizations/"+e.orgID, nil, header{"Origin": origin, "Access-Control-Request-Method": method,
			"Access-Control-Request-Headers": "authorization,content-type,x-api-key"})
		if pre.Code != 204 && pre.Code != 200 {
			t.Fatalf("preflight %s: status %d\n%s", method, pre.Code, pre.Body)
		}
		h := pre.Header
		if h.Get("Access-Control-Allow-Origin") != origin || h.Get("Access-Control-Allow-Credentials") != "true" || h.Get("Access-Control-Max-Age") != "86400" {
			t.Fatalf("preflight %s: %v", method, h)
		}
		methods := list(h.Get("Access-Control-Allow-Methods"))
		for _, m := range []string{"GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"} {
			if !slices.Contains(methods, m) {
				t.Fatalf("Access-Control-Allow-Methods %q lacks %s", h.Get("Access-Control-Allow-Methods"), m)
			}
		}
		headers := list(h.Get("Access-Control-Allow-Headers"))
		for _, x := range []string{"Origin", "Content-Type", "Accept", "Authorization", "X-API-Key"} {
			if !slices.Contains(headers, x) {
				t.Fatalf("Access-Control-Allow-Headers %q lacks %s", h.Get("Access-Control-Allow-Headers"), x)
			}
		}
		if !slices.Contains(h.Values("Vary"), "Origin") {
			t.Fatalf("preflight without Vary: Origin: %v", h)
		}
		for k, v := range wantSecurityHeaders {
			if h.Get(k) != v {
				t.Fatalf("preflight %s = %q", k, h.Get(k))
			}
		}
	}
	// An actual request from the origin: allowed, credentials, and the headers a client reads back.
	r := e.do("GET", "/api/v1/organizations/"+e.orgID, nil, bearer(e.ownerToken), header{"Origin": origin}).status(200)
	expose := list(r.Header.Get("Access-Control-Expose-Headers"))
	if r.Header.Get("Access-Control-Allow-Origin") != origin || r.Header.Get("Access-Control-Allow-Credentials") != "true" {
		t.Fatalf("simple request: %v", r.Header)
	}
	for _, x := range []string{"X-Request-Id", "X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset", "Location"} {
		if !slices.Contains(expose, x) {
			t.Fatalf("Access-Control-Expose-Headers %q lacks %s", r.Header.Get("Access-Control-Expose-Headers"), x)
		}
	}
	// Errors carry the CORS headers too, so the browser lets the client read them.
	if r := e.do("GET", "/api/v1/auth/me", nil, header{"Origin": origin}).authError(401, "AUTH_REQUIRED"); r.Header.Get("Access-Control-Allow-Origin") != origin {
		t.Fatalf("401 without CORS headers: %v", r.Header)
	}

	for _, foreign := range []string{"https://evil.example", "http://app.example", "https://app.example.evil.com", "https://sub.app.example", "https://app.example:8443", "null"} {
		e.subtest(t, foreign, func(t *testing.T) {
			pre := e.do("OPTIONS", "/api/v1/organizations", nil, header{"Origin": foreign, "Access-Control-Request-Method": "GET"})
			get := e.do("GET", "/api/v1/organizations", nil, bearer(e.ownerToken), header{"Origin": foreign}).status(200)
			for _, h := range []http.Header{pre.Header, get.Header} {
				if h.Get("Access-Control-Allow-Origin") != "" || h.Get("Access-Control-Allow-Credentials") != "" || h.Get("Access-Control-Allow-Methods") != "" {
					t.Fatalf("foreign origin %s allowed: %v", foreign, h)
				}
			}
		})
	}

	// Without configured origins: no CORS headers at all.
	plain := newEnv(t)
	for _, r := range []*resp{
		plain.do("GET", "/healthz", nil, header{"Origin": origin}).status(200),
		plain.do("GET", "/api/v1/organizations", nil, bearer(plain.ownerToken), header{"Origin": origin}).status(200),
		plain.do("OPTIONS", "/api/v1/organizations", nil, header{"Origin": origin, "Access-Control-Request-Method": "GET"}),
	} {
		for k := range r.Header {
			if strings.HasPrefix(k, "Access-Control-") {
				t.Fatalf("%s: CORS header %s without configured origins", r.req, k)
			}
		}
	}
}

func TestHTTPBodyLimit(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *config.Config) { c.MaxBodyBytes = 1024 })
	own := bearer(e.ownerToken)
	big := `{"name":"` + strings.Repeat("a", 2048) + `"}`
	r := e.do("POST", "/api/v1/organizations", big, own).apiError(413, "PAYLOAD_TOO_LARGE")
	if r.str("error.message") == "" {
		t.Fatalf("413: %s", r.Body)
	}
	e.docResolves(r)
	// The limit holds for public operations and for bodies sent without a length.
	e.do("POST", "/api/v1/auth/login", `{"email":"`+strings.Repeat("a", 2048)+`@example.com","password":"x"}`).apiError(413, "PAYLOAD_TOO_LARGE")
	req, _ := http.NewRequest("POST", e.ts.URL+"/api/v1/organizations", io.MultiReader(strings.NewReader(big)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+e.ownerToken)
	if req.ContentLength != 0 {
		t.Fatal("want a body of unknown length")
	}
	e.sendRaw(req).apiError(413, "PAYLOAD_TOO_LARGE")
	if l := e.do("GET", "/api/v1/organizations", nil, own).status(200); l.num("pagination.total") != 1 {
		t.Fatalf("an oversized request created something: %s", l.Body)
	}
	// Just under the limit is fine, with or without a length.
	body := `{"name":"` + strings.Repeat("b", 255) + `","description":"` + strings.Repeat("d", 700) + `"}`
	if len(body) > 1024 {
		t.Fatal("test body too big")
	}
	e.do("POST", "/api/v1/organizations", body, own).status(201)
	req, _ = http.NewRequest("POST", e.ts.URL+"/api/v1/organizations/"+e.orgID+"/projects", io.MultiReader(strings.NewReader(`{"name":"chunked"}`)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+e.ownerToken)
	e.sendRaw(req).status(201)
}

func TestHTTPServiceEndpoints(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *config.Config) { c.MetricsToken = "m-token" })
	if r := e.do("GET", "/healthz", nil).status(200); r.str("status") != "ok" {
		t.Fatalf("healthz: %s", r.Body)
	}
	if r := e.do("GET", "/readyz", nil).status(200); r.str("status") != "ok" || r.str("checks.database") != "ok" {
		t.Fatalf("readyz: %s", r.Body)
	}
	e.do("GET", "/api/v1/projects/"+e.projectID, nil, bearer(e.ownerToken)).status(200)
	e.do("GET", "/definitely/not/here", nil).status(404)
	m := e.do("GET", "/metrics", nil, bearer("m-token")).status(200)
	body := string(m.Body)
	if !strings.HasPrefix(m.Header.Get("Content-Type"), "text/plain") || !strings.Contains(body, "dataplatform_http_requests_total") ||
		!strings.Contains(body, "dataplatform_http_request_duration_seconds") {
		t.Fatalf("metrics: %.500s", body)
	}
	// Routes are labelled by template, not by the ids in the path.
	if !strings.Contains(body, `route="/api/v1/projects/:project_id"`) || strings.Contains(body, e.projectID) || strings.Contains(body, "/definitely/not/here") ||
		!strings.Contains(body, `route="unmatched"`) {
		t.Fatal("metrics route labels are not templates")
	}

	// The published description, as JSON and as YAML: the same document.
	j := e.do("GET", "/api/v1/openapi.json", nil).status(200)
	y := e.do("GET", "/api/v1/openapi.yaml", nil).status(200)
	if !strings.HasPrefix(y.Header.Get("Content-Type"), "application/yaml") {
		t.Fatalf("yaml content type %q", y.Header.Get("Content-Type"))
	}
	// Conditional: a client that has the document gets 304 and no body.
	for _, r := range []*resp{j, y} {
		tag := r.Header.Get("ETag")
		if tag == "" {
			t.Fatalf("%s: no ETag", r.req)
		}
		path := strings.Fields(r.req)[1]
		if c := e.do("GET", path, nil, header{"If-None-Match": tag}).status(304); len(c.Body) != 0 || c.Header.Get("ETag") != tag {
			t.Fatalf("%s revalidated: %q %v", path, c.Body, c.Header)
		}
		e.do("GET", path, nil, header{"If-None-Match": `"other"`}).status(200)
	}
	if j.Header.Get("ETag") == y.Header.Get("ETag") {
		t.Fatal("JSON and YAML share an entity tag")
	}
	load := func(name string, b []byte) *openapi3.T {
		t.Helper()
		d, err := openapi3.NewLoader().LoadFromData(b)
		if err != nil {
			t.Fatalf("%s does not parse: %v", name, err)
		}
		if err := d.Validate(context.Background()); err != nil {
			t.Fatalf("%s is not a valid OpenAPI 3 document: %v", name, err)
		}
		return d
	}
	dj, dy := load("openapi.json", j.Body), load("openapi.yaml", y.Body)
	if dj.Paths.Len() != dy.Paths.Len() || dj.Paths.Len() < 20 || dj.Info.Version != dy.Info.Version || dj.OpenAPI != dy.OpenAPI {
		t.Fatalf("json has %d paths, yaml %d", dj.Paths.Len(), dy.Paths.Len())
	}
	ops := func(d *openapi3.T) []string {
		var out []string
		for p, item := range d.Paths.Map() {
			for m, op := range item.Operations() {
				out = append(out, m+" "+p+" "+op.OperationID)
			}
		}
		slices.Sort(out)
		return out
	}
	if oj, oy := ops(dj), ops(dy); !slices.Equal(oj, oy) {
		t.Fatalf("operations differ:\njson %v\nyaml %v", oj, oy)
	}
	// It is the description the server validates with.
	if dj.Paths.Len() != doc.Paths.Len() || !slices.Equal(ops(dj), ops(doc)) {
		t.Fatal("served description differs from the bundled one")
	}
	for _, p := range []string{"/api/v1/organizations", "/api/v1/organizations/{organization_id}/invitations", "/api/v1/projects/{project_id}", "/api/v1/errors/{code}"} {
		if dj.Paths.Find(p) == nil {
			t.Fatalf("%s missing from the description", p)
		}
	}
	// Service endpoints need no credentials and are not rate limited.
	for i := 0; i < 3; i++ {
		if r := e.do("GET", "/healthz", nil).status(200); r.Header.Get("X-RateLimit-Limit") != "" {
			t.Fatalf("healthz rate limited: %v", r.Header)
		}
	}
}

func TestHTTPErrorDocs(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	own := bearer(e.ownerToken)
	d := e.do("GET", "/api/v1/errors/VALIDATION_ERROR", nil).status(200)
	if d.str("code") != "VALIDATION_ERROR" || d.num("status") != 400 || d.str("title") == "" || !strings.Contains(d.str("description"), "unknown_field") {
		t.Fatalf("error doc: %s", d.Body)
	}
	if d := e.do("GET", "/api/v1/errors/validation_error", nil).status(200); d.str("code") != "VALIDATION_ERROR" {
		t.Fatalf("lower-case code: %s", d.Body)
	}
	e.do("GET", "/api/v1/errors/NO_SUCH_CODE", nil).apiError(404, "NOT_FOUND")
	// Every code of the catalog is documented with its status.
	for code, doc := range apierr.Catalog {
		r := e.do("GET", "/api/v1/errors/"+string(code), nil).status(200)
		if r.num("status") != doc.Status || r.str("code") != string(code) {
			t.Fatalf("%s: %s", code, r.Body)
		}
	}

	// The documentation_url of real error bodies resolves.
	inv := e.do("POST", "/api/v1/organizations/"+e.orgID+"/invitations", map[string]any{"email": "soon@example.com", "expires_in_days": 1}, own).status(201)
	for _, r := range []*resp{
		e.do("POST", "/api/v1/organizations", `{"name":1}`, own).apiError(400, "VALIDATION_ERROR"),
		e.do("GET", "/api/v1/organizations?page=0", nil, own).apiError(400, "VALIDATION_ERROR"),
		e.do("GET", "/api/v1/projects/prj_nothere", nil, own).apiError(404, "NOT_FOUND"),
		e.do("GET", "/no/such/route", nil).apiError(404, "NOT_FOUND"),
		e.do("DELETE", "/api/v1/auth/login", nil).apiError(405, "METHOD_NOT_ALLOWED"),
		e.do("POST", "/api/v1/organizations", map[string]any{"name": "x", "slug": "default"}, own).apiError(409, "CONFLICT"),
		e.do("GET", "/api/v1/invitations/"+strings.Repeat("b", 43), nil).apiError(404, "INVITATION_NOT_FOUND"),
		e.do("POST", "/api/v1/organizations/"+e.orgID+"/invitations", map[string]any{"email": adminEmail}, own).apiError(409, "CONFLICT"),
	} {
		e.docResolves(r)
	}
	e.clock.Advance(25 * time.Hour)
	e.docResolves(e.do("POST", "/api/v1/invitations/"+invTokenOf(inv)+"/accept", map[string]any{"name": "S", "password": "quiet harbor lantern"}).apiError(410, "INVITATION_EXPIRED"))
	e.clock.Advance(-25 * time.Hour)
}

func TestHTTPNotFoundAndMethodNotAllowed(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, p := range []string{"/nope", "/api/v1", "/api/v1/organization", "/api/v2/organizations", "/api/v1/organizations/" + e.orgID + "/nothing/here"} {
		r := e.do("GET", p, nil).apiError(404, "NOT_FOUND") // unknown routes need no credentials to be unknown
		if r.str("error.message") == "" || r.get("error.documentation_url") == nil {
			t.Fatalf("%s: %s", p, r.Body)
		}
	}
	for _, tc := range []struct{ method, path, allow string }{
		{"PUT", "/api/v1/auth/login", "POST"},
		{"GET", "/api/v1/auth/login", "POST"},
		{"POST", "/api/v1/projects/" + e.projectID, "GET"},
		{"PUT", "/api/v1/organizations/" + e.orgID, "PATCH"},
		{"DELETE", "/healthz", "GET"},
	} {
		r := e.do(tc.method, tc.path, nil, bearer(e.ownerToken)).apiError(405, "METHOD_NOT_ALLOWED")
		if !strings.Contains(r.Header.Get("Allow"), tc.allow) {
			t.Fatalf("%s %s: Allow %q lacks %s", tc.method, tc.path, r.Header.Get("Allow"), tc.allow)
		}
	}
}

// Malformed path parameters are refused by validation with 400; the description must list
// that answer on every operation that has such parameters.
func TestHTTPMalformedPathParameters(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	own := bearer(e.ownerToken)
	for _, tc := range []struct{ method, path, field string }{
		{"GET", "/api/v1/organizations/not-an-id", "path.organization_id"},
		{"DELETE", "/api/v1/organizations/" + e.orgID + "/users/not-an-id", "path.user_id"},
		{"GET", "/api/v1/projects/not-an-id", "path.project_id"},
		{"DELETE", "/api/v1/projects/not-an-id", "path.project_id"},
		{"GET", "/api/v1/invitations/not.a.token.at.all.dots", "path.token"},
		{"GET", "/api/v1/errors/NOT-A-CODE", "path.code"},
	} {
		e.do(tc.method, tc.path, nil, own).apiError(400, "VALIDATION_ERROR", tc.field, "pattern")
	}
}

// rateHeaders reads the four rate-limit headers.
func rateHeaders(t testing.TB, r *resp) (limit, remaining, reset, after int64) {
	t.Helper()
	var err error
	for _, h := range []struct {
		name string
		dst  *int64
	}{{"X-RateLimit-Limit", &limit}, {"X-RateLimit-Remaining", &remaining}, {"X-RateLimit-Reset", &reset}, {"X-RateLimit-Reset-After", &after}} {
		if *h.dst, err = strconv.ParseInt(r.Header.Get(h.name), 10, 64); err != nil {
			t.Fatalf("%s: %s = %q", r.req, h.name, r.Header.Get(h.name))
		}
	}
	return
}

func TestHTTPRateLimitPerPrincipal(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *config.Config) { c.RateLimits = "default=3-M" })
	own := bearer(e.ownerToken)
	prj := "/api/v1/projects/" + e.projectID
	_, other := e.member(e.orgID, "viewer")
	key := e.do("POST", "/api/v1/api-keys", map[string]any{"name": "k", "permissions": []string{"datasets:list", "datasets:write"}}, own).status(201).str("key")

	// newEnv's project listing was the owner's first request of the window.
	want := int64(1)
	for i := 0; i < 2; i++ {
		r := e.do("GET", prj, nil, own).status(200)
		limit, remaining, reset, after := rateHeaders(t, r)
		now := time.Now().Unix()
		if limit != 3 || remaining != want || reset < now || reset > now+61 || after < 0 || after > 60 {
			t.Fatalf("request %d: limit %d remaining %d reset %d (now %d) after %d", i+2, limit, remaining, reset, now, after)
		}
		want--
	}
	// The fourth is refused before anything happens.
	r := e.do("PATCH", prj, map[string]any{"name": "Renamed"}, own).apiError(429, "RATE_LIMIT_EXCEEDED")
	limit, remaining, reset, after := rateHeaders(t, r)
	now := time.Now().Unix()
	if limit != 3 || remaining != 0 || reset < now || reset > now+61 || after < 0 || after > 60 || r.Header.Get("Retry-After") != strconv.FormatInt(after, 10) {
		t.Fatalf("429 headers: %v", r.Header)
	}
	if r.str("error.details.category") != "default" || r.num("error.details.limit") != 3 {
		t.Fatalf("429 body: %s", r.Body)
	}
	e.docResolves(r)
	var name string
	if err := e.st.DB.Get(&name, `SELECT name FROM platform.projects WHERE id = $1`, e.projectID); err != nil || name != "Default project" {
		t.Fatalf("refused request changed the project: %q (%v)", name, err)
	}
	e.do("GET", prj, nil, own).apiError(429, "RATE_LIMIT_EXCEEDED")

	// Other principals have their own windows: another user, and the owner's own API key.
	for _, h := range []header{bearer(other), apiKey(key)} {
		r := e.do("GET", prj, nil, h).status(200)
		if _, remaining, _, _ := rateHeaders(t, r); remaining != 2 {
			t.Fatalf("another principal's window: %v", r.Header)
		}
	}
	// Other categories of the same principal are counted apart.
	e.do("POST", "/api/v1/organizations", map[string]any{"name": "Still allowed"}, own).status(201)
	// Unauthenticated requests are refused as such, not counted against the owner.
	e.do("GET", prj, nil).authError(401, "AUTH_REQUIRED")
}

func TestHTTPRateLimitLoginPerAddress(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *config.Config) { c.RateLimits = "auth=2-M" })
	// newEnv's sign-in was the first of this address.
	r := e.login(adminEmail, adminPassword, "")
	if limit, remaining, _, _ := rateHeaders(t, r); limit != 2 || remaining != 0 {
		t.Fatalf("login headers: %v", r.Header)
	}
	// The third sign-in from this address is refused, even with the right password, and
	// headers a client can write do not make it another address.
	for _, h := range []header{{}, {"X-Forwarded-For": "203.0.113.7"}, {"X-Real-IP": "203.0.113.8"}} {
		r := e.do("POST", "/api/v1/auth/login", map[string]any{"email": adminEmail, "password": adminPassword}, h).apiError(429, "RATE_LIMIT_EXCEEDED")
		if _, remaining, _, _ := rateHeaders(t, r); remaining != 0 || r.str("error.details.category") != "auth" {
			t.Fatalf("429: %v %s", r.Header, r.Body)
		}
	}
	// Every public operation shares the address's window.
	e.do("POST", "/api/v1/auth/refresh", map[string]any{"refresh_token": r.str("refresh_token")}).apiError(429, "RATE_LIMIT_EXCEEDED")
	e.do("GET", "/api/v1/invitations/"+strings.Repeat("c", 43), nil).apiError(429, "RATE_LIMIT_EXCEEDED")
	e.do("POST", "/api/v1/invitations/"+strings.Repeat("c", 43)+"/accept", map[string]any{"name": "N", "password": "quiet harbor lantern"}).apiError(429, "RATE_LIMIT_EXCEEDED")
	// Signed-in requests are counted per principal, in their own category.
	if r := e.do("GET", "/api/v1/projects/"+e.projectID, nil, bearer(e.ownerToken)).status(200); r.Header.Get("X-RateLimit-Limit") != "1000" {
		t.Fatalf("default category: %v", r.Header)
	}
}

// A NUL character is valid JSON but cannot be stored in PostgreSQL text: it must be refused as
// a validation error, not fail in the database.
func TestHTTPNULInStrings(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	own := bearer(e.ownerToken)
	for _, tc := range []struct{ method, path, body, field string }{
		{"POST", "/api/v1/organizations", `{"name":"a\u0000b"}`, "body.name"},
		{"POST", "/api/v1/organizations/" + e.orgID + "/projects", `{"name":"a\u0000b"}`, "body.name"},
		{"PATCH", "/api/v1/projects/" + e.projectID, `{"description":"a\u0000b"}`, "body.description"},
		{"POST", "/api/v1/organizations/" + e.orgID + "/invitations", `{"email":"nul@example.com","name":"a\u0000b"}`, "body.name"},
	} {
		r := e.do(tc.method, tc.path, tc.body, own).status(400)
		if r.str("error.code") != "VALIDATION_ERROR" || !strings.Contains(string(r.Body), `"field":"`+tc.field+`"`) {
			t.Fatalf("%s %s: %s", tc.method, tc.path, r.Body)
		}
	}
}

// The relative page URLs keep the request's query parameters, but never a credential: an API
// key sent as api_key must not be copied into response bodies.
func TestHTTPPageURLsOmitAPIKey(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	own := bearer(e.ownerToken)
	k := e.do("POST", "/api/v1/api-keys", map[string]any{"name": "q", "permissions": []string{"datasets:list"}}, own).status(201).str("key")
	for i := 0; i < 2; i++ {
		e.do("POST", "/api/v1/organizations/"+e.orgID+"/projects", map[string]any{"name": fmt.Sprint("P", i)}, own).status(201)
	}
	r := e.do("GET", "/api/v1/organizations/"+e.orgID+"/projects?limit=1&search=p&api_key="+k, nil).status(200)
	if q := pageQuery(t, "/api/v1/organizations/"+e.orgID+"/projects", r.str("pagination.next_page_url")); q.Get("search") != "p" || q.Get("page") != "2" {
		t.Fatalf("next_page_url: %s", r.Body)
	}
	if strings.Contains(string(r.Body), k) {
		t.Fatalf("the API key is copied into the response: %s", r.Body)
	}
}

// TestMetricsNeedToken: route names, request counts and runtime figures are the operator's,
// not the public's. Without DP_METRICS_TOKEN the public listener does not serve
// them; with it, only that bearer token reads them; a user's own access token does not.
func TestMetricsNeedToken(t *testing.T) {
	t.Parallel()
	off := newEnv(t)
	off.do("GET", "/metrics", nil).apiError(404, "NOT_FOUND")
	off.do("GET", "/metrics", nil, bearer(off.ownerToken)).apiError(404, "NOT_FOUND")

	e := newEnv(t, func(c *config.Config) { c.MetricsToken = "s3cret-metrics" })
	for name, h := range map[string]header{
		"none": {}, "wrong": bearer("s3cret-metricz"), "prefix": bearer("s3cret"), "user token": bearer(e.ownerToken),
		"basic": {"Authorization": "Basic czNjcmV0LW1ldHJpY3M="},
	} {
		if r := e.do("GET", "/metrics", nil, h); r.Code != 401 {
			t.Errorf("%s: status %d, want 401", name, r.Code)
		}
	}
	if m := e.do("GET", "/metrics", nil, bearer("s3cret-metrics")).status(200); !strings.Contains(string(m.Body), "dataplatform_http_requests_total") {
		t.Fatalf("metrics: %.300s", m.Body)
	}
}

// TestHTTPMalformedQuery: a query string Go's parser would silently drop part of (a pair with
// a semicolon, a broken percent-escape) is refused with 400 naming the parameter, on the
// static API and on every dataset's record API, instead of answering as if the parameter had
// not been sent (every row, for a filter).
func TestHTTPMalformedQuery(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	own := bearer(e.ownerToken)
	id := e.uploadAndCreate(e.ownerToken, "Cities", "c.csv", "id,city\n1,Boston\n2,Bos;ton\n3,Austin\n")
	e.waitDataset(e.ownerToken, id)
	data := "/api/v1/datasets/" + id + "/data"
	for _, tc := range []struct{ path, field string }{
		{data + "?filter[city][eq]=Bos;ton", "query.filter[city][eq]"},
		{data + "?limit=2&filter[city][eq]=Bos;ton", "query.filter[city][eq]"},
		{data + "?filter[city][eq]=Bos%zzton", "query.filter[city][eq]"},
		{data + "?sort=city;limit=1", "query.sort"},
		{"/api/v1/organizations/" + e.orgID + "/projects?page=1;limit=1", "query.page"},
		{"/api/v1/auth/me?x=1;y=2", "query.x"},
	} {
		r := e.do("GET", tc.path, nil, own).apiError(400, "VALIDATION_ERROR", tc.field, "malformed")
		if !strings.Contains(r.str("error.message"), strings.TrimPrefix(tc.field, "query.")) {
			t.Fatalf("%s: the message does not name the parameter: %s", tc.path, r.Body)
		}
	}
	// Dashboard routes answer in their own shape.
	if r := e.do("GET", "/api/v1/dashboards?query=a;b", nil, own).status(400); r.get("error") != "validation_error" {
		t.Fatalf("dashboards: %s", r.Body)
	}
	// Escaped, the semicolon is a value like any other.
	if l := e.do("GET", data+"?filter[city][eq]=Bos%3Bton", nil, own).status(200); l.len("data") != 1 || l.str("data.0.city") != "Bos;ton" {
		t.Fatalf("escaped semicolon: %s", l.Body)
	}
	if l := e.do("GET", data+"?filter[city][eq]=Boston", nil, own).status(200); l.len("data") != 1 {
		t.Fatalf("plain filter: %s", l.Body)
	}
}

// TestHTTPErrorShapesDescribed: the description says which of the three error shapes each
// answer has (the info description names them and where each applies), and every error
// response of every operation declares the shape the error handler writes there.
func TestHTTPErrorShapesDescribed(t *testing.T) {
	t.Parallel()
	for _, words := range []string{"ErrorEnvelope", "AuthError", "DashboardError", "Dashboards tag", "401 and 403 included"} {
		if !strings.Contains(strings.Join(strings.Fields(doc.Info.Description), " "), words) {
			t.Errorf("the description's info does not say %q:\n%s", words, doc.Info.Description)
		}
	}
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			dashboard := strings.Contains(path, "/dashboard") // the error handler's rule
			if !strings.HasPrefix(path, "/v1/api/") && dashboard != slices.Contains(op.Tags, "Dashboards") {
				t.Errorf("%s %s: the Dashboards tag and the /dashboard path disagree", method, path)
			}
			for status, r := range op.Responses.Map() {
				code, _ := strconv.Atoi(status)
				mt := r.Value.Content.Get("application/json")
				if code < 400 || mt == nil || method+" "+path+" "+status == "GET /readyz 503" { // not ready: the health report, not an error
					continue
				}
				want := "ErrorEnvelope"
				switch {
				case dashboard:
					want = "DashboardError"
				case code == 401 || code == 403:
					want = "AuthError"
				}
				if !strings.HasSuffix(mt.Schema.Ref, "/"+want) {
					t.Errorf("%s %s %s: schema %q, the handler writes %s", method, path, status, mt.Schema.Ref, want)
				}
			}
		}
	}
	e := newEnv(t)
	e.do("GET", "/api/v1/dashboards", nil).dashError(401, "auth_required")
	e.do("GET", "/v1/api/dashboards/dsh_nothere", nil, bearer(e.ownerToken)).dashError(404, "not_found")
}

// TestHTTPInternalErrorLogged: a request that fails inside the store answers a bare 500, and
// its log line names the operation (method, path template, operationId) and the store call that
// failed, with the database's error.
func TestHTTPInternalErrorLogged(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	if _, err := e.st.DB.Exec(`CREATE FUNCTION public.refuse_project() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN RAISE EXCEPTION 'forced failure'; END $$;
		CREATE TRIGGER refuse BEFORE INSERT ON platform.projects FOR EACH ROW EXECUTE FUNCTION public.refuse_project()`); err != nil {
		t.Fatal(err)
	}
	// Straight to the handler: the description lists no 500 for the response check of e.do.
	req := httptest.NewRequest(http.MethodPost, "/api/v1/organizations/"+e.orgID+"/projects", strings.NewReader(`{"name":"Doomed"}`))
	req.Header.Set("Authorization", "Bearer "+e.ownerToken)
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	e.srv.Handler().ServeHTTP(rec, req)
	if rec.Code != http.StatusInternalServerError || !strings.Contains(rec.Body.String(), `"INTERNAL_ERROR"`) || strings.Contains(rec.Body.String(), "forced") {
		t.Fatalf("%d %s", rec.Code, rec.Body)
	}
	var line string
	for _, l := range strings.Split(e.logs.String(), "\n") {
		if strings.Contains(l, `msg="request failed"`) {
			line = l
		}
	}
	for _, want := range []string{"method=POST", "route=/api/v1/organizations/{organization_id}/projects", "operation_id=createProject",
		`error="create project: pq: forced failure`} {
		if !strings.Contains(line, want) {
			t.Fatalf("the failure's log line lacks %s:\n%s", want, e.logs.String())
		}
	}
}
