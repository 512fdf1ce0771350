// Package oidctest is a real OpenID Connect identity provider for tests: an httptest server
// with freshly generated RS256 keys that serves discovery, a JWKS, the authorization endpoint
// and the token endpoint, and checks what a strict provider checks (registered client and
// redirect URI, client_secret_post, PKCE S256, single-use codes).
//
//	p := oidctest.Start(t)
//	p.AddUser("alice", "alice@example.com", "Alice", true)
//	// configure the service with p.URL, p.ClientID, p.ClientSecret, p.RedirectURL
//	code, state := p.Authorize(t, authorizeURL, "alice") // the user approves
//	bearer := p.Token("alice", p.ClientID, time.Hour)
package oidctest

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"io"
	"mime"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lestrrat-go/jwx/v2/jwa"
	"github.com/lestrrat-go/jwx/v2/jwk"
	"github.com/lestrrat-go/jwx/v2/jws"
)

// sessionCookie stands for the user's login session at the provider: Authorize sends it, the
// authorization endpoint reads the subject from it.
const sessionCookie = "oidctest_session"

// Provider is a running identity provider.
type Provider struct {
	URL string // the issuer; endpoints are URL + /.well-known/openid-configuration, /jwks.json, /oauth/authorize, /oauth/token

	// The one registered client. Change them right after Start, before the first request.
	ClientID, ClientSecret, RedirectURL string
	// Clock dates the tokens (iat, exp); time.Now unless set right after Start.
	Clock func() time.Time

	srv *httptest.Server

	mu       sync.Mutex
	key      jwk.Key // private signing key; only its public half is served
	users    map[string]user
	codes    map[string]grant
	jwksHits int
}

type user struct {
	email, name string
	verified    bool
}

// grant is an issued authorization code and what it was issued for.
type grant struct {
	sub, clientID, redirectURI, challenge, nonce, scope string
	expires                                             time.Time
}

// Start runs a provider until the test ends.
func Start(t testing.TB) *Provider {
	t.Helper()
	p := &Provider{
		ClientID: "dp-test-client", ClientSecret: "dp-test-secret",
		RedirectURL: "http://localhost:8080/api/v1/auth/oauth/callback",
		Clock:       time.Now, users: map[string]user{}, codes: map[string]grant{},
	}
	p.RotateKey()
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/openid-configuration", p.discovery)
	mux.HandleFunc("GET /jwks.json", p.jwks)
	mux.HandleFunc("GET /oauth/authorize", p.authorize)
	mux.HandleFunc("POST /oauth/token", p.token)
	p.srv = httptest.NewServer(mux)
	p.URL = p.srv.URL
	t.Cleanup(p.srv.Close)
	return p
}

// Close stops the provider now (to test an unreachable provider); Start's cleanup is then a
// no-op.
func (p *Provider) Close() { p.srv.Close() }

// AddUser creates or replaces an account at the provider.
func (p *Provider) AddUser(sub, email, name string, emailVerified bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.users[sub] = user{email: email, name: name, verified: emailVerified}
}

// RotateKey replaces the signing key with a new one under a new kid; the old key is no longer
// served, so tokens it signed stop verifying once a client refreshes its JWKS.
func (p *Provider) RotateKey() {
	priv, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		panic(err)
	}
	k, err := jwk.FromRaw(priv)
	if err != nil {
		panic(err)
	}
	_ = k.Set(jwk.KeyIDKey, randomString(12))
	_ = k.Set(jwk.AlgorithmKey, jwa.RS256)
	_ = k.Set(jwk.KeyUsageKey, "sig")
	p.mu.Lock()
	p.key = k
	p.mu.Unlock()
}

// KeyID is the kid of the current signing key.
func (p *Provider) KeyID() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.key.KeyID()
}

// PublicKey is the current public key (for instance to forge an HS256 token keyed with it).
func (p *Provider) PublicKey() jwk.Key {
	p.mu.Lock()
	defer p.mu.Unlock()
	pub, _ := p.key.PublicKey()
	return pub
}

// JWKSRequests counts the requests for the JWKS so far.
func (p *Provider) JWKSRequests() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.jwksHits
}

// Token signs a token for sub with audience aud valid for ttl from Clock (negative: already
// expired), carrying the user's email, email_verified and name when the user exists.
func (p *Provider) Token(sub, audience string, ttl time.Duration) string {
	return p.Sign(p.Claims(sub, audience, ttl))
}

// Claims are the claims Token would sign, for tests that alter some before Sign.
func (p *Provider) Claims(sub, audience string, ttl time.Duration) map[string]any {
	now := p.Clock()
	c := map[string]any{"iss": p.URL, "sub": sub, "aud": audience, "iat": now.Unix(), "exp": now.Add(ttl).Unix()}
	p.mu.Lock()
	u, ok := p.users[sub]
	p.mu.Unlock()
	if ok {
		c["email"], c["email_verified"], c["name"] = u.email, u.verified, u.name
	}
	return c
}

// Sign signs arbitrary claims with the current key (RS256, kid and typ JWT in the header).
func (p *Provider) Sign(claims map[string]any) string {
	payload, err := json.Marshal(claims)
	if err != nil {
		panic(err)
	}
	p.mu.Lock()
	key := p.key
	p.mu.Unlock()
	hdr := jws.NewHeaders()
	_ = hdr.Set(jws.KeyIDKey, key.KeyID())
	_ = hdr.Set(jws.TypeKey, "JWT")
	b, err := jws.Sign(payload, jws.WithKey(jwa.RS256, key, jws.WithProtectedHeaders(hdr)))
	if err != nil {
		panic(err)
	}
	return string(b)
}

// Authorize plays the user who is signed in at the provider as sub and approves the request:
// it checks the request the service built, GETs it without following the redirect, and
// returns the code and state of the redirect back to the service.
func (p *Provider) Authorize(t testing.TB, authorizeURL, sub string) (code, state string) {
	t.Helper()
	u, err := url.Parse(authorizeURL)
	if err != nil {
		t.Fatalf("oidctest: authorize URL %q: %v", authorizeURL, err)
	}
	if got := u.Scheme + "://" + u.Host + u.Path; got != p.URL+"/oauth/authorize" {
		t.Fatalf("oidctest: authorize URL goes to %s, want %s/oauth/authorize", got, p.URL)
	}
	q := u.Query()
	for k, want := range map[string]string{"client_id": p.ClientID, "redirect_uri": p.RedirectURL, "response_type": "code", "code_challenge_method": "S256"} {
		if q.Get(k) != want {
			t.Fatalf("oidctest: authorize URL has %s=%q, want %q", k, q.Get(k), want)
		}
	}
	if q.Get("code_challenge") == "" || q.Get("state") == "" {
		t.Fatalf("oidctest: authorize URL lacks code_challenge or state: %s", authorizeURL)
	}
	req, _ := http.NewRequest(http.MethodGet, authorizeURL, nil)
	req.AddCookie(&http.Cookie{Name: sessionCookie, Value: sub})
	client := &http.Client{Timeout: 10 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("oidctest: authorize: %v", err)
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusFound {
		body, _ := io.ReadAll(resp.Body)
		t.Fatalf("oidctest: authorize answered %s: %s", resp.Status, body)
	}
	loc, err := resp.Location()
	if err != nil {
		t.Fatalf("oidctest: authorize redirect: %v", err)
	}
	if e := loc.Query().Get("error"); e != "" {
		t.Fatalf("oidctest: authorize refused: %s: %s", e, loc.Query().Get("error_description"))
	}
	return loc.Query().Get("code"), loc.Query().Get("state")
}

func (p *Provider) discovery(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{
		"issuer":                                p.URL,
		"authorization_endpoint":                p.URL + "/oauth/authorize",
		"token_endpoint":                        p.URL + "/oauth/token",
		"jwks_uri":                              p.URL + "/jwks.json",
		"response_types_supported":              []string{"code"},
		"grant_types_supported":                 []string{"authorization_code"},
		"subject_types_supported":               []string{"public"},
		"id_token_signing_alg_values_supported": []string{"RS256"},
		"scopes_supported":                      []string{"openid", "profile", "email", "offline_access"},
		"token_endpoint_auth_methods_supported": []string{"client_secret_post"},
		"code_challenge_methods_supported":      []string{"S256"},
		"claims_supported":                      []string{"iss", "sub", "aud", "exp", "iat", "nonce", "email", "email_verified", "name"},
	})
}

func (p *Provider) jwks(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	p.jwksHits++
	pub, err := p.key.PublicKey()
	p.mu.Unlock()
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	set := jwk.NewSet()
	_ = set.AddKey(pub)
	writeJSON(w, http.StatusOK, set)
}

// authorize is the authorization endpoint. A bad client or redirect URI is answered here (never
// redirect to an unregistered address); other errors go back to the client per RFC 6749 §4.1.2.1.
func (p *Provider) authorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if q.Get("client_id") != p.ClientID {
		http.Error(w, "unknown client_id", http.StatusBadRequest)
		return
	}
	redirect, err := url.Parse(q.Get("redirect_uri"))
	if err != nil || q.Get("redirect_uri") != p.RedirectURL {
		http.Error(w, "redirect_uri is not registered for this client", http.StatusBadRequest)
		return
	}
	back := func(params map[string]string) {
		v := redirect.Query()
		for k, x := range params {
			v.Set(k, x)
		}
		if s := q.Get("state"); s != "" {
			v.Set("state", s)
		}
		u := *redirect
		u.RawQuery = v.Encode()
		http.Redirect(w, r, u.String(), http.StatusFound)
	}
	fail := func(code, desc string) { back(map[string]string{"error": code, "error_description": desc}) }
	cookie, _ := r.Cookie(sessionCookie)
	switch {
	case q.Get("response_type") != "code":
		fail("unsupported_response_type", "only response_type=code is supported")
	case !slices.Contains(strings.Fields(q.Get("scope")), "openid"):
		fail("invalid_scope", "the openid scope is required")
	case q.Get("state") == "":
		fail("invalid_request", "state is required")
	case q.Get("code_challenge") == "" || q.Get("code_challenge_method") != "S256":
		fail("invalid_request", "PKCE with code_challenge_method=S256 is required")
	case cookie == nil:
		fail("login_required", "no user is signed in at the provider")
	default:
		p.mu.Lock()
		_, known := p.users[cookie.Value]
		code := randomString(24)
		if known {
			p.codes[code] = grant{sub: cookie.Value, clientID: p.ClientID, redirectURI: p.RedirectURL, challenge: q.Get("code_challenge"),
				nonce: q.Get("nonce"), scope: q.Get("scope"), expires: time.Now().Add(time.Minute)}
		}
		p.mu.Unlock()
		if !known {
			fail("access_denied", "unknown user")
			return
		}
		back(map[string]string{"code": code})
	}
}

// token is the token endpoint: authorization_code grant, client_secret_post, PKCE S256.
func (p *Provider) token(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	oauthErr := func(status int, code, desc string) {
		writeJSON(w, status, map[string]string{"error": code, "error_description": desc})
	}
	if ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); ct != "application/x-www-form-urlencoded" {
		oauthErr(http.StatusBadRequest, "invalid_request", "the body must be application/x-www-form-urlencoded")
		return
	}
	if err := r.ParseForm(); err != nil {
		oauthErr(http.StatusBadRequest, "invalid_request", err.Error())
		return
	}
	f := r.PostForm
	if _, _, basic := r.BasicAuth(); basic {
		oauthErr(http.StatusUnauthorized, "invalid_client", "this client is registered for client_secret_post: send client_id and client_secret in the form body")
		return
	}
	if f.Get("grant_type") != "authorization_code" {
		oauthErr(http.StatusBadRequest, "unsupported_grant_type", "only authorization_code is supported")
		return
	}
	if f.Get("client_id") != p.ClientID || f.Get("client_secret") != p.ClientSecret {
		oauthErr(http.StatusUnauthorized, "invalid_client", "client authentication failed")
		return
	}
	p.mu.Lock()
	g, ok := p.codes[f.Get("code")]
	delete(p.codes, f.Get("code")) // single use, even when the checks below fail
	p.mu.Unlock()
	sum := sha256.Sum256([]byte(f.Get("code_verifier")))
	switch {
	case !ok || time.Now().After(g.expires):
		oauthErr(http.StatusBadRequest, "invalid_grant", "unknown, expired or used authorization code")
		return
	case g.clientID != f.Get("client_id") || g.redirectURI != f.Get("redirect_uri"):
		oauthErr(http.StatusBadRequest, "invalid_grant", "the code was issued to another client or redirect_uri")
		return
	case f.Get("code_verifier") == "" || base64.RawURLEncoding.EncodeToString(sum[:]) != g.challenge:
		oauthErr(http.StatusBadRequest, "invalid_grant", "PKCE verification failed")
		return
	}
	idClaims := p.Claims(g.sub, p.ClientID, time.Hour)
	if g.nonce != "" {
		idClaims["nonce"] = g.nonce
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"access_token": p.Token(g.sub, p.ClientID, time.Hour),
		"id_token":     p.Sign(idClaims),
		"token_type":   "Bearer",
		"expires_in":   3600,
		"scope":        g.scope,
	})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func randomString(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return base64.RawURLEncoding.EncodeToString(b)
}
