package tests

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"dataplatform/cmd/dataplatform/config"

	"github.com/coder/websocket"
)

// sessionCookie is the dp_session cookie a response sets (nil when it sets none).
func sessionCookie(r *resp) *http.Cookie {
	for _, c := range (&http.Response{Header: r.Header}).Cookies() {
		if c.Name == "dp_session" {
			return c
		}
	}
	return nil
}

// signInBrowser signs a browser in with POST /api/v1/auth/session and answers the Cookie
// header of its session and its CSRF token.
func (e *env) signInBrowser(body map[string]any, hs ...header) (cookie header, csrf string, r *resp) {
	e.t.Helper()
	r = e.do("POST", "/api/v1/auth/session", body, hs...).status(200)
	c := sessionCookie(r)
	if c == nil || c.Value == "" {
		e.t.Fatalf("sign-in set no session cookie: %v", r.Header)
	}
	return header{"Cookie": "dp_session=" + c.Value}, r.str("csrf_token"), r
}

func join(hs ...header) header {
	out := header{}
	for _, h := range hs {
		for k, v := range h {
			out[k] = v
		}
	}
	return out
}

// TestBrowserSession: sign-in sets an HttpOnly, SameSite=Lax cookie of a session stored
// hashed; the cookie authenticates with the user's own permissions; unsafe requests need the
// CSRF token and this origin, and refused ones change nothing; a bearer token beside the
// cookie needs neither; sign-out revokes the session and clears the cookie; sign-in and
// sign-out are audited.
func TestBrowserSession(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	own := bearer(e.ownerToken)
	creds := map[string]any{"email": adminEmail, "password": adminPassword}

	cookie, csrf, r := e.signInBrowser(creds)
	c := sessionCookie(r)
	raw := r.Header.Get("Set-Cookie")
	if !c.HttpOnly || c.SameSite != http.SameSiteLaxMode || c.Path != "/" || c.Secure || c.MaxAge != 14*24*3600 || c.Domain != "" ||
		!strings.Contains(raw, "HttpOnly") || !strings.Contains(raw, "SameSite=Lax") || r.Header.Get("Cache-Control") != "no-store" {
		t.Fatalf("cookie: %s (%+v)", raw, c)
	}
	now := e.clock.Now()
	exp, _ := time.Parse(time.RFC3339, r.str("expires_at"))
	idle, _ := time.Parse(time.RFC3339, r.str("idle_expires_at"))
	if r.str("user.email") != adminEmail || r.str("user.organization_id") != e.orgID || r.str("user.roles.0") != "owner" ||
		exp.Sub(now).Round(time.Minute) != 14*24*time.Hour || idle.Sub(now).Round(time.Minute) != 8*time.Hour ||
		r.num("idle_timeout_seconds") != 480*60 || len(csrf) < 40 || strings.Contains(string(r.Body), c.Value) {
		t.Fatalf("session: %s", r.Body)
	}
	// Stored as SHA-256 only.
	sum := sha256.Sum256([]byte(c.Value))
	if e.countRows(`SELECT count(*) FROM platform.browser_sessions WHERE token_hash = '\x`+hex.EncodeToString(sum[:])+`'`) != 1 ||
		e.countRows(`SELECT count(*) FROM platform.browser_sessions s WHERE s::text LIKE '%`+c.Value+`%'`) != 0 {
		t.Fatal("the session is not stored as the hash of its token")
	}

	// The cookie authenticates, as the user.
	g := e.do("GET", "/api/v1/auth/session", nil, cookie).status(200)
	if g.str("csrf_token") != csrf || g.str("user.id") != e.userIDOf(adminEmail) || g.Header.Get("Cache-Control") != "no-store" {
		t.Fatalf("GET session: %s", g.Body)
	}
	if me := e.do("GET", "/api/v1/auth/me", nil, cookie).status(200); me.str("auth_method") != "session" || me.str("organizations.0.role") != "owner" {
		t.Fatalf("me: %s", me.Body)
	}
	e.do("GET", "/api/v1/organizations/"+e.orgID+"/projects", nil, cookie).status(200)
	// A bearer token is not a session.
	e.do("GET", "/api/v1/auth/session", nil, own).authError(401, "AUTH_REQUIRED")
	e.do("GET", "/api/v1/auth/session", nil).authError(401, "AUTH_REQUIRED")

	// Unsafe requests: without the token, with a wrong one, or from another origin, 403 and
	// nothing is created.
	projects := func() int {
		return e.countRows(`SELECT count(*) FROM platform.projects WHERE organization_id = '` + e.orgID + `'`)
	}
	before := projects()
	create := "/api/v1/organizations/" + e.orgID + "/projects"
	body := map[string]any{"name": "From the browser"}
	withCSRF := header{"X-CSRF-Token": csrf}
	for name, h := range map[string]header{
		"no token":             cookie,
		"wrong token":          join(cookie, header{"X-CSRF-Token": csrf[:len(csrf)-2] + "xx"}),
		"other origin":         join(cookie, withCSRF, header{"Origin": "https://evil.example"}),
		"null origin":          join(cookie, withCSRF, header{"Origin": "null"}),
		"cross-site fetch":     join(cookie, withCSRF, header{"Sec-Fetch-Site": "cross-site"}),
		"same-site sibling":    join(cookie, withCSRF, header{"Sec-Fetch-Site": "same-site"}),
		"origin on other port": join(cookie, withCSRF, header{"Origin": strings.Replace(e.ts.URL, "127.0.0.1:", "127.0.0.1:1", 1)}),
	} {
		if r := e.do("POST", create, body, h).authError(403, "CSRF_CHECK_FAILED"); r.get("message") == "" {
			t.Fatalf("%s: %s", name, r.Body)
		}
	}
	if projects() != before {
		t.Fatal("a refused request created a project")
	}
	// With the token, from this origin (as the browser says it), it works.
	e.do("POST", create, map[string]any{"name": "Same origin"}, join(cookie, withCSRF, header{"Origin": e.ts.URL, "Sec-Fetch-Site": "same-origin"})).status(201)
	e.do("POST", create, map[string]any{"name": "Base URL origin"}, join(cookie, withCSRF, header{"Origin": baseURL})).status(201)
	e.do("POST", create, map[string]any{"name": "No browser headers"}, join(cookie, withCSRF)).status(201)
	// A bearer token or API key beside the cookie is the request's credential: no CSRF check.
	e.do("POST", create, map[string]any{"name": "Bearer"}, join(cookie, own, header{"Origin": "https://evil.example"})).status(201)
	if projects() != before+4 {
		t.Fatalf("%d projects, want %d", projects(), before+4)
	}
	if n := e.countRows(`SELECT count(*) FROM platform.audit_log WHERE action = 'project.create' AND actor_id = '` + e.userIDOf(adminEmail) + `'`); n != 4 {
		t.Fatalf("%d project.create audit rows, want 4", n)
	}

	// Login CSRF: another site cannot sign a visitor in.
	sessions := func() int { return e.countRows(`SELECT count(*) FROM platform.browser_sessions`) }
	n := sessions()
	e.do("POST", "/api/v1/auth/session", creds, header{"Origin": "https://evil.example"}).authError(403, "CSRF_CHECK_FAILED")
	e.do("POST", "/api/v1/auth/session", creds, header{"Sec-Fetch-Site": "cross-site"}).authError(403, "CSRF_CHECK_FAILED")
	// Wrong password or unknown fields: no session, no cookie.
	bad := e.do("POST", "/api/v1/auth/session", map[string]any{"email": adminEmail, "password": "wrong"}).authError(401, "AUTH_REQUIRED")
	if sessionCookie(bad) != nil {
		t.Fatal("a refused sign-in set a cookie")
	}
	e.do("POST", "/api/v1/auth/session", map[string]any{"email": adminEmail, "password": adminPassword, "remember": true}).
		apiError(400, "VALIDATION_ERROR", "body.remember", "unknown_field")
	if sessions() != n {
		t.Fatal("a refused sign-in made a session")
	}
	if n := e.countRows(`SELECT count(*) FROM platform.audit_log WHERE action = 'auth.login' AND details->>'session_id' IS NOT NULL AND details->>'method' = 'password'`); n != 1 {
		t.Fatalf("%d auth.login audit rows of sessions, want 1", n)
	}

	// A second browser's session is its own.
	other, otherCSRF, _ := e.signInBrowser(creds)
	if otherCSRF == csrf {
		t.Fatal("two sessions share a CSRF token")
	}
	// Signing in again in the same browser replaces its session: the old one ends.
	replaced, _, _ := e.signInBrowser(creds)
	_, _, again := e.signInBrowser(creds, replaced)
	e.do("GET", "/api/v1/auth/session", nil, replaced).authError(401, "AUTH_REQUIRED")
	e.do("GET", "/api/v1/auth/session", nil, header{"Cookie": "dp_session=" + sessionCookie(again).Value}).status(200)
	if n := e.countRows(`SELECT count(*) FROM platform.audit_log WHERE action = 'auth.login' AND details->>'replaced_session_id' IS NOT NULL`); n != 1 {
		t.Fatalf("%d sign-ins audited as replacing a session, want 1", n)
	}
	e.do("POST", create, map[string]any{"name": "x"}, join(other, withCSRF)).authError(403, "CSRF_CHECK_FAILED")

	// Sign-out needs the CSRF token too; then the session is gone and the cookie cleared.
	e.do("DELETE", "/api/v1/auth/session", nil, cookie).authError(403, "CSRF_CHECK_FAILED")
	e.do("GET", "/api/v1/auth/session", nil, cookie).status(200)
	out := e.do("DELETE", "/api/v1/auth/session", nil, join(cookie, withCSRF)).status(204)
	if c := sessionCookie(out); c == nil || c.Value != "" || c.MaxAge >= 0 {
		t.Fatalf("sign-out does not clear the cookie: %v", out.Header)
	}
	gone := e.do("GET", "/api/v1/auth/session", nil, cookie).authError(401, "AUTH_REQUIRED")
	if c := sessionCookie(gone); c == nil || c.Value != "" {
		t.Fatalf("a dead session's cookie is not cleared: %v", gone.Header)
	}
	e.do("GET", "/api/v1/organizations/"+e.orgID+"/projects", nil, cookie).authError(401, "AUTH_REQUIRED")
	e.do("DELETE", "/api/v1/auth/session", nil, join(cookie, withCSRF)).authError(401, "AUTH_REQUIRED")
	e.do("GET", "/api/v1/auth/session", nil, other).status(200)
	if n := e.countRows(`SELECT count(*) FROM platform.audit_log WHERE action = 'auth.logout' AND details->>'session_id' IS NOT NULL`); n != 1 {
		t.Fatalf("%d auth.logout audit rows, want 1", n)
	}
}

// TestBrowserSessionTimeouts: a session ends when idle longer than its organization's
// session_timeout_minutes (each use starts the count again) and at its absolute lifetime
// (DP_SESSION_MAX_AGE) however busy.
func TestBrowserSessionTimeouts(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *config.Config) { c.SessionMaxAge = time.Hour })
	creds := map[string]any{"email": adminEmail, "password": adminPassword}

	// The default idle time (480 minutes) is longer than the lifetime here.
	cookie, _, r := e.signInBrowser(creds)
	if sessionCookie(r).MaxAge != 3600 || r.str("idle_expires_at") != r.str("expires_at") {
		t.Fatalf("session: %s %v", r.Body, r.Header)
	}
	e.clock.Advance(59 * time.Minute)
	e.do("GET", "/api/v1/auth/session", nil, cookie).status(200)
	e.clock.Advance(2 * time.Minute)
	e.do("GET", "/api/v1/auth/session", nil, cookie).authError(401, "AUTH_REQUIRED")

	// The organization's 5 minutes (with a new access token: the first one expired at 60).
	owner := e.login(adminEmail, adminPassword, "").str("access_token")
	e.do("PATCH", "/api/v1/organizations/"+e.orgID+"/settings", map[string]any{"security": map[string]any{"session_timeout_minutes": 5}}, bearer(owner)).status(200)
	cookie, _, r = e.signInBrowser(creds)
	if r.num("idle_timeout_seconds") != 300 {
		t.Fatalf("session: %s", r.Body)
	}
	for i := 0; i < 4; i++ { // used every 4 minutes: alive for 16
		e.clock.Advance(4 * time.Minute)
		g := e.do("GET", "/api/v1/auth/session", nil, cookie).status(200)
		idle, _ := time.Parse(time.RFC3339, g.str("idle_expires_at"))
		if d := idle.Sub(e.clock.Now().Add(5 * time.Minute)); d < -time.Second || d > time.Second {
			t.Fatalf("idle_expires_at %s, now %s", idle, e.clock.Now())
		}
	}
	e.clock.Advance(5*time.Minute + time.Second)
	exp := e.do("GET", "/api/v1/organizations/"+e.orgID+"/projects", nil, cookie).authError(401, "SESSION_EXPIRED")
	if !strings.Contains(exp.str("message"), "5 minutes") || sessionCookie(exp) == nil {
		t.Fatalf("expired: %s %v", exp.Body, exp.Header)
	}
}

// TestBrowserSessionTwoFactor: an account with two-factor sign-in needs its code for a
// session too; a wrong code counts as a failed sign-in and makes no session.
func TestBrowserSessionTwoFactor(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	email, tok := e.member(e.orgID, "analyst")
	secret := e.do("POST", "/api/v1/auth/2fa/setup", nil, bearer(tok)).status(200).str("secret")
	e.do("POST", "/api/v1/auth/2fa/confirm", map[string]any{"code": e.totpCode(secret, 0)}, bearer(tok)).status(200)
	e.clock.Advance(30 * time.Second)
	creds := map[string]any{"email": email, "password": "password-analyst"}

	e.do("POST", "/api/v1/auth/session", creds).authError(401, "TWO_FACTOR_CODE_REQUIRED")
	creds["two_factor_code"] = "000000"
	e.do("POST", "/api/v1/auth/session", creds).authError(401, "INVALID_TWO_FACTOR_CODE")
	if n := e.countRows(`SELECT count(*) FROM platform.browser_sessions`); n != 0 {
		t.Fatalf("%d sessions without the second factor", n)
	}
	if n := e.countRows(`SELECT failures FROM platform.login_failures WHERE email_key = '` + strings.ToLower(email) + `'`); n != 1 {
		t.Fatalf("the wrong code counted %d failures, want 1", n)
	}
	creds["two_factor_code"] = e.totpCode(secret, 0)
	cookie, _, r := e.signInBrowser(creds)
	if r.str("user.roles.0") != "analyst" {
		t.Fatalf("session: %s", r.Body)
	}
	// The analyst's own permissions: reading yes, creating projects no.
	e.do("GET", "/api/v1/projects/"+e.projectID, nil, cookie).status(200)
	e.do("POST", "/api/v1/organizations/"+e.orgID+"/projects", map[string]any{"name": "no"}, join(cookie, header{"X-CSRF-Token": r.str("csrf_token")})).
		authError(403, "PERMISSION_DENIED")
	if n := e.countRows(`SELECT count(*) FROM platform.audit_log WHERE action = 'auth.login' AND details->>'method' = 'password+totp' AND details->>'session_id' IS NOT NULL`); n != 1 {
		t.Fatalf("%d audit rows of the two-factor session sign-in, want 1", n)
	}

	// The organization's two-factor requirement holds for sessions as for tokens.
	e.setTwoFactor(e.userIDOf(adminEmail), true)
	e.do("PATCH", "/api/v1/organizations/"+e.orgID+"/settings", map[string]any{"security": map[string]any{"two_factor_required": true}}, bearer(e.ownerToken)).status(200)
	viewer, _ := e.member(e.orgID, "viewer")
	vc, _, _ := e.signInBrowser(map[string]any{"email": viewer, "password": "password-viewer"})
	e.do("GET", "/api/v1/projects/"+e.projectID, nil, vc).authError(403, "TWO_FACTOR_REQUIRED")
	e.do("GET", "/api/v1/projects/"+e.projectID, nil, cookie).status(200)
}

// TestBrowserSessionRevokedWithCredentials: when the mailbox's owner takes an address over
// from an unverified account (its password replaced, its credentials revoked), the old
// account's browser sessions end with its refresh tokens and keys.
func TestBrowserSessionRevokedWithCredentials(t *testing.T) {
	t.Parallel()
	sink := startMailSink(t)
	e := newEnv(t, withMail(sink))
	email, _ := e.member(e.orgID, "viewer")
	e.unverified(email)
	cookie, _, _ := e.signInBrowser(map[string]any{"email": email, "password": "password-viewer"})
	e.do("GET", "/api/v1/projects/"+e.projectID, nil, cookie).status(200)

	org := e.do("POST", "/api/v1/organizations", map[string]any{"name": "Second"}, bearer(e.ownerToken)).status(201).str("id")
	inv := e.do("POST", "/api/v1/organizations/"+org+"/invitations", map[string]any{"email": email, "role": "viewer"}, bearer(e.ownerToken)).status(201)
	e.do("POST", "/api/v1/invitations/"+e.invitationToken(inv)+"/accept", map[string]any{"name": "Owner of the mailbox", "password": "mailbox-kettle-orbit-42"}).status(200)

	e.do("GET", "/api/v1/auth/session", nil, cookie).authError(401, "AUTH_REQUIRED")
	if n := e.countRows(`SELECT count(*) FROM platform.browser_sessions WHERE revoked_at IS NULL`); n != 0 {
		t.Fatalf("%d sessions still live", n)
	}
}

// TestSignInPage: the page and its script, under a CSP with no inline script; next must be a
// path of this service; pages send a browser without credentials (or with an ended session)
// there and come back, while API clients get the JSON 401.
func TestSignInPage(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	id := e.customers()
	docs := "/api/v1/datasets/" + id + "/docs"

	p := e.do("GET", "/sign-in?next="+url.QueryEscape(docs+"?table=customers"), nil).status(200)
	csp := p.Header.Get("Content-Security-Policy")
	if !strings.HasPrefix(p.Header.Get("Content-Type"), "text/html") || !strings.Contains(csp, "script-src 'self';") ||
		strings.Contains(csp, "nonce") || strings.Contains(csp, "unsafe") || !strings.Contains(csp, "frame-ancestors 'none'") ||
		strings.Contains(string(p.Body), "<script>") || !strings.Contains(string(p.Body), `data-next="`+docs+`?table=customers"`) ||
		!strings.Contains(string(p.Body), `src="/api/v1/docs/assets/sign-in.js"`) || p.Header.Get("X-Frame-Options") != "DENY" {
		t.Fatalf("sign-in page: %s\n%s", csp, p.Body)
	}
	e.do("GET", "/sign-in", nil).status(200)
	e.do("GET", "/api/v1/docs/assets/sign-in.js", nil).status(200)
	e.do("GET", "/api/v1/docs/assets/sign-in.css", nil).status(200)
	for _, next := range []string{"//evil.example/x", "https://evil.example/", "/\\evil.example", "\\\\evil.example", "/\t/evil.example",
		"javascript:alert(1)", "evil.example", "/ok\n", "/ x"} {
		e.do("GET", "/sign-in?next="+url.QueryEscape(next), nil).apiError(400, "VALIDATION_ERROR", "query.next", "invalid_redirect")
	}
	e.do("GET", "/sign-in?return_to=/x", nil).apiError(400, "VALIDATION_ERROR", "query.return_to", "unknown_field")

	// A browser without credentials goes to the sign-in page, which comes back (the api_key
	// of a link, a secret, is not carried along); an API client gets the 401.
	html := header{"Accept": "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"}
	r := e.do("GET", docs+"?table=customers", nil, html).status(303)
	if loc := r.Header.Get("Location"); loc != "/sign-in?next="+url.QueryEscape(docs+"?table=customers") {
		t.Fatalf("redirect to %q", loc)
	}
	e.do("GET", "/api/v1/datasets/"+id+"/redoc", nil, html).status(303)
	e.do("GET", docs, nil).authError(401, "AUTH_REQUIRED")
	e.do("GET", docs, nil, header{"Accept": "application/json"}).authError(401, "AUTH_REQUIRED")
	e.do("GET", docs+"?api_key=dpk_wrong", nil, html).authError(401, "AUTH_REQUIRED") // a credential sent is answered
	e.do("GET", "/api/v1/datasets/"+id+"/openapi.json", nil, html).authError(401, "AUTH_REQUIRED")

	// With the session cookie the page is drawn; an ended session goes to sign in again.
	cookie, csrf, _ := e.signInBrowser(map[string]any{"email": adminEmail, "password": adminPassword})
	if pg := e.do("GET", docs, nil, join(html, cookie)).status(200); !strings.Contains(string(pg.Body), "SwaggerUIBundle") ||
		!strings.Contains(string(pg.Body), `req.headers["X-CSRF-Token"] = "`+csrf+`"`) {
		t.Fatalf("docs page: %.2000s", pg.Body)
	}
	// A link with an API key is no session: its page has no CSRF token.
	key := e.do("POST", "/api/v1/api-keys", map[string]any{"name": "docs", "permissions": []string{"datasets:list"}}, bearer(e.ownerToken)).status(201).str("key")
	if pg := e.do("GET", docs+"?api_key="+key, nil, join(html, cookie)).status(200); strings.Contains(string(pg.Body), "X-CSRF-Token") {
		t.Fatalf("the api_key page carries a CSRF token: %.2000s", pg.Body)
	}
	e.do("DELETE", "/api/v1/auth/session", nil, join(cookie, header{"X-CSRF-Token": csrf})).status(204)
	if r := e.do("GET", docs, nil, join(html, cookie)).status(303); sessionCookie(r) == nil || sessionCookie(r).Value != "" {
		t.Fatalf("an ended session's cookie is kept: %v", r.Header)
	}
}

// TestSignInInBrowser: in Chromium, a dataset's docs page sends a browser without credentials
// to the sign-in page; a wrong password shows the error; the account's two-factor code is
// asked for; then the browser is back on the docs page, drawn with its operations. The
// sign-in page then shows who is signed in and signs out, after which the docs page asks for
// a sign-in again. No console error, exception or CSP refusal on the way.
func TestSignInInBrowser(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	id := e.customers()
	email, tok := e.member(e.orgID, "analyst")
	secret := e.do("POST", "/api/v1/auth/2fa/setup", nil, bearer(tok)).status(200).str("secret")
	e.do("POST", "/api/v1/auth/2fa/confirm", map[string]any{"code": e.totpCode(secret, 0)}, bearer(tok)).status(200)
	e.clock.Advance(30 * time.Second)
	docs := "/api/v1/datasets/" + id + "/docs"

	b := newBrowser(t)
	b.open(e.ts.URL + docs)
	b.waitFor("the sign-in page", `location.pathname === "/sign-in" && new URLSearchParams(location.search).get("next") === "`+docs+`" && document.readyState === "complete"`)
	submit := func(fields map[string]string) {
		t.Helper()
		js := "(function () {"
		for k, v := range fields {
			js += fmt.Sprintf("document.getElementById(%q).value = %q;", k, v)
		}
		js += `document.getElementById("sign-in").requestSubmit(); return true; })()`
		if _, err := b.eval(js); err != nil {
			t.Fatal(err)
		}
	}
	shows := func(text string) string {
		return `!document.getElementById("error").hidden && document.getElementById("error").textContent.includes(` + fmt.Sprintf("%q", text) + `)`
	}
	submit(map[string]string{"email": email, "password": "wrong-password"})
	b.waitFor("the wrong password's error", shows("invalid email or password"))
	submit(map[string]string{"password": "password-analyst"})
	b.waitFor("the two-factor step", `!document.getElementById("code-step").hidden && `+shows("authenticator"))
	submit(map[string]string{"code": "000000"})
	b.waitFor("the wrong code's error", shows("wrong, expired or already used"))
	submit(map[string]string{"code": e.totpCode(secret, 0)})
	b.waitFor("the docs page, drawn", `location.pathname === "`+docs+`" && document.body.innerText.includes("listCustomers")`)
	if n := e.countRows(`SELECT count(*) FROM platform.browser_sessions WHERE revoked_at IS NULL AND user_id = '` + e.userIDOf(email) + `'`); n != 1 {
		t.Fatalf("%d live sessions, want 1", n)
	}
	// The page's own requests (Swagger UI's try-it-out) carry the session's CSRF token: a POST
	// made the way the page makes it works; one without the token is refused.
	post := func(withToken bool) any {
		t.Helper()
		v, err := b.eval(fmt.Sprintf(`(async function () {
  var req = {url: "/api/v1/datasets/%s/data/query", method: "POST", headers: {"Content-Type": "application/json"},
    body: JSON.stringify({sql: "SELECT count(*) AS n FROM ${table}"})};
  if (%t) { req = window.ui.getConfigs().requestInterceptor(req); }
  var res = await fetch(req.url, {method: req.method, headers: req.headers, body: req.body});
  var body = await res.json();
  return res.status + " " + (body.code || (body.data && body.data[0].n));
})()`, id, withToken))
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	if got := post(true); got != "200 1" {
		t.Fatalf("the page's POST with its token: %v", got)
	}
	if got := post(false); got != "403 CSRF_CHECK_FAILED" {
		t.Fatalf("a POST without the token: %v", got)
	}

	b.open(e.ts.URL + "/sign-in")
	b.waitFor("who is signed in", `!document.getElementById("signed-in").hidden && document.getElementById("who").textContent === "`+email+`"`)
	if _, err := b.eval(`document.getElementById("sign-out").click(), true`); err != nil {
		t.Fatal(err)
	}
	b.waitFor("signed out", `document.getElementById("signed-in").hidden && !document.getElementById("sign-in").hidden`)
	if n := e.countRows(`SELECT count(*) FROM platform.browser_sessions WHERE revoked_at IS NULL`); n != 0 {
		t.Fatalf("%d live sessions after signing out", n)
	}
	b.open(e.ts.URL + docs)
	b.waitFor("the sign-in page again", `location.pathname === "/sign-in" && document.readyState === "complete"`)
	if p := b.Problems(); len(p) > 0 {
		t.Fatalf("the pages went wrong:\n%s", strings.Join(p, "\n"))
	}
}

// TestBrowserSessionStreams: a change stream opened with the session cookie ends when the
// session is signed out; a WebSocket with the cookie must come from this origin.
func TestBrowserSessionStreams(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	id := e.customers()
	base := "/api/v1/datasets/" + id + "/data"
	cookie, csrf, _ := e.signInBrowser(map[string]any{"email": adminEmail, "password": adminPassword})

	ch, stop := e.openStream(base+"/stream", cookie)
	defer stop()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	dial := func(origin string) (*websocket.Conn, *http.Response, error) {
		h := http.Header{"Cookie": {cookie["Cookie"]}}
		if origin != "" {
			h.Set("Origin", origin)
		}
		return websocket.Dial(ctx, "ws"+strings.TrimPrefix(e.ts.URL, "http")+base+"/ws", &websocket.DialOptions{HTTPHeader: h})
	}
	if _, res, err := dial("https://evil.example"); err == nil || res == nil || res.StatusCode != 403 {
		t.Fatalf("a cross-origin WebSocket with the cookie: %v %v", res, err)
	}
	conn, _, err := dial(e.ts.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.CloseNow()

	e.do("DELETE", "/api/v1/auth/session", nil, join(cookie, header{"X-CSRF-Token": csrf})).status(204)
	e.do("POST", base, map[string]any{"name": "Kay", "email": "kay@example.com"}, bearer(e.ownerToken)).status(201)
	if ev := next(t, ch, true); ev.name != "error" || ev.data["code"] != "AUTH_REQUIRED" {
		t.Fatalf("want the stream to end with AUTH_REQUIRED, got %+v", ev)
	}
}
