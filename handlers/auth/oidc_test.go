package auth

// NOTE for merging: this file holds package auth's TestMain (one embedded PostgreSQL per test
// binary). If another test file of package auth adds a TestMain, keep only one of them.

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"dataplatform/handlers/apierr"
	"dataplatform/handlers/auth/oidctest"
	"dataplatform/store"
	"dataplatform/store/pgtest"
	"dataplatform/store/secrets"
	"dataplatform/tests/fakeclock"

	"github.com/lestrrat-go/jwx/v2/jwa"
	"github.com/lestrrat-go/jwx/v2/jws"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

type oidcFixture struct {
	ctx   context.Context
	st    *store.Store
	p     *oidctest.Provider
	o     *OIDC
	clock *fakeclock.Clock
}

func newOIDCFixture(t *testing.T) *oidcFixture {
	t.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, pgtest.NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	clock := fakeclock.New(time.Now().UTC().Truncate(time.Second))
	p := oidctest.Start(t)
	p.Clock = clock.Now
	o, err := NewOIDC(ctx, OIDCConfig{Issuer: p.URL, ClientID: p.ClientID, ClientSecret: p.ClientSecret, RedirectURL: p.RedirectURL}, st, clock.Now)
	if err != nil {
		t.Fatal(err)
	}
	return &oidcFixture{ctx: ctx, st: st, p: p, o: o, clock: clock}
}

// flow runs authorize → provider approval as sub → callback.
func (f *oidcFixture) flow(t *testing.T, sub string) (*store.User, error) {
	t.Helper()
	u, err := f.o.AuthorizeURL(f.ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	code, state := f.p.Authorize(t, u, sub)
	return f.o.Callback(f.ctx, code, state)
}

func (f *oidcFixture) count(t *testing.T, q string, args ...any) int {
	t.Helper()
	var n int
	if err := f.st.DB.GetContext(f.ctx, &n, q, args...); err != nil {
		t.Fatal(err)
	}
	return n
}

func (f *oidcFixture) createUser(t *testing.T, email string) *store.User {
	t.Helper()
	now := f.clock.Now()
	u := &store.User{ID: store.NewID("usr"), Email: email, Name: "Existing", Status: "active", CreatedAt: now, UpdatedAt: now,
		EmailVerifiedAt: &now}
	if err := store.CreateUser(f.ctx, f.st.DB, u); err != nil {
		t.Fatal(err)
	}
	return u
}

// wantCode fails unless err is an apierr.Error with code (and, when given, a message
// containing msg).
func wantCode(t *testing.T, err error, code, msg string) {
	t.Helper()
	var ae *apierr.Error
	if !errors.As(err, &ae) || string(ae.Code) != code || !strings.Contains(ae.Message, msg) {
		t.Fatalf("got error %v, want %s containing %q", err, code, msg)
	}
}

func TestOIDCFlowProvisionsThenLinks(t *testing.T) {
	f := newOIDCFixture(t)
	f.p.AddUser("alice", "alice@example.com", "Alice Liddell", true)

	au, err := f.o.AuthorizeURL(f.ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	q := mustQuery(t, au)
	if q.Get("scope") != "openid profile email" || q.Get("nonce") == "" || q.Get("code_challenge_method") != "S256" || q.Get("response_type") != "code" {
		t.Fatalf("authorize URL %s", au)
	}
	// Only the hash of the state is stored.
	if n := f.count(t, `SELECT count(*) FROM platform.oauth_states WHERE state_hash = $1`, secrets.Hash(q.Get("state"))); n != 1 {
		t.Fatalf("state rows = %d", n)
	}
	code, state := f.p.Authorize(t, au, "alice")
	u1, err := f.o.Callback(f.ctx, code, state)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(u1.ID, "usr_") || u1.Email != "alice@example.com" || u1.Name != "Alice Liddell" || u1.Status != "active" || u1.PasswordHash != nil {
		t.Fatalf("provisioned %+v", u1)
	}
	u2, err := f.flow(t, "alice")
	if err != nil {
		t.Fatal(err)
	}
	if u2.ID != u1.ID {
		t.Fatalf("second sign-in gave user %s, want %s", u2.ID, u1.ID)
	}
	if n := f.count(t, `SELECT count(*) FROM platform.identities WHERE issuer = $1 AND subject = 'alice' AND user_id = $2`, f.p.URL, u1.ID); n != 1 {
		t.Fatalf("identities = %d", n)
	}
	if n := f.count(t, `SELECT count(*) FROM platform.audit_log WHERE action = 'user.provision' AND resource_type = 'user' AND resource_id = $1`, u1.ID); n != 1 {
		t.Fatalf("provision audit rows = %d", n)
	}
	// The provider's access token works as a bearer for the same user.
	pr, err := f.o.VerifyBearer(f.ctx, f.p.Token("alice", f.p.ClientID, time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if pr.UserID != u1.ID || pr.Email != "alice@example.com" || pr.Method != MethodOIDC {
		t.Fatalf("principal %+v", pr)
	}

	// openid is always requested; duplicates are dropped.
	au, err = f.o.AuthorizeURL(f.ctx, "datasets:read email email")
	if err != nil {
		t.Fatal(err)
	}
	if s := mustQuery(t, au).Get("scope"); s != "openid datasets:read email" {
		t.Fatalf("scope = %q", s)
	}
	_, err = f.o.AuthorizeURL(f.ctx, `openid "x"`)
	wantCode(t, err, "VALIDATION_ERROR", "")
}

func TestOIDCLinksVerifiedEmail(t *testing.T) {
	f := newOIDCFixture(t)
	existing := f.createUser(t, "Bob@Example.com")
	f.p.AddUser("bob-sub", "bob@example.com", "Bob", true)
	u, err := f.flow(t, "bob-sub")
	if err != nil {
		t.Fatal(err)
	}
	if u.ID != existing.ID {
		t.Fatalf("linked to %s, want the existing %s", u.ID, existing.ID)
	}
	if n := f.count(t, `SELECT count(*) FROM platform.audit_log WHERE action = 'user.link_identity' AND resource_id = $1`, existing.ID); n != 1 {
		t.Fatalf("link audit rows = %d", n)
	}
	if n := f.count(t, `SELECT count(*) FROM platform.users`); n != 1 {
		t.Fatalf("users = %d", n)
	}
}

// An unverified email never takes over an existing account: the sign-in is refused (a second
// user cannot have the same email). Without an existing account, a user is provisioned.
func TestOIDCUnverifiedEmail(t *testing.T) {
	f := newOIDCFixture(t)
	f.createUser(t, "carol@example.com")
	f.p.AddUser("mallory", "carol@example.com", "Not Carol", false)
	_, err := f.flow(t, "mallory")
	wantCode(t, err, "EMAIL_NOT_VERIFIED", "not verified")
	_, err = f.o.VerifyBearer(f.ctx, f.p.Token("mallory", f.p.ClientID, time.Hour))
	wantCode(t, err, "AUTH_REQUIRED", "not verified")
	if n := f.count(t, `SELECT count(*) FROM platform.identities`); n != 0 {
		t.Fatalf("identities = %d", n)
	}

	f.p.AddUser("dave", "dave@example.com", "", false)
	u, err := f.flow(t, "dave")
	if err != nil {
		t.Fatal(err)
	}
	if u.Email != "dave@example.com" || u.Name != "dave@example.com" {
		t.Fatalf("provisioned %+v", u)
	}

	// A verified email does not link to an account that is not active.
	f.createUser(t, "erin@example.com")
	if _, err := f.st.DB.Exec(`UPDATE platform.users SET status = 'disabled' WHERE email = 'erin@example.com'`); err != nil {
		t.Fatal(err)
	}
	f.p.AddUser("erin", "erin@example.com", "Erin", true)
	_, err = f.flow(t, "erin")
	wantCode(t, err, "AUTH_REQUIRED", "not active")
}

func TestOIDCCallbackRejections(t *testing.T) {
	f := newOIDCFixture(t)
	f.p.AddUser("alice", "alice@example.com", "Alice", true)

	t.Run("state reuse", func(t *testing.T) {
		au, _ := f.o.AuthorizeURL(f.ctx, "")
		code, state := f.p.Authorize(t, au, "alice")
		if _, err := f.o.Callback(f.ctx, code, state); err != nil {
			t.Fatal(err)
		}
		_, err := f.o.Callback(f.ctx, code, state)
		wantCode(t, err, "AUTH_REQUIRED", "already used")
	})
	t.Run("unknown or missing state", func(t *testing.T) {
		_, err := f.o.Callback(f.ctx, "x", "made-up")
		wantCode(t, err, "AUTH_REQUIRED", "unknown")
		_, err = f.o.Callback(f.ctx, "x", "")
		wantCode(t, err, "AUTH_REQUIRED", "missing")
	})
	t.Run("expired state", func(t *testing.T) {
		au, _ := f.o.AuthorizeURL(f.ctx, "")
		f.clock.Advance(oauthStateTTL + time.Second)
		code, state := f.p.Authorize(t, au, "alice")
		_, err := f.o.Callback(f.ctx, code, state)
		wantCode(t, err, "AUTH_REQUIRED", "expired")
		// The expired state was spent too.
		_, err = f.o.Callback(f.ctx, code, state)
		wantCode(t, err, "AUTH_REQUIRED", "unknown")
	})
	t.Run("wrong nonce", func(t *testing.T) {
		au, _ := f.o.AuthorizeURL(f.ctx, "")
		code, state := f.p.Authorize(t, withParam(t, au, "nonce", "attacker-nonce"), "alice")
		_, err := f.o.Callback(f.ctx, code, state)
		wantCode(t, err, "AUTH_REQUIRED", "nonce")
	})
	t.Run("bad code", func(t *testing.T) {
		au, _ := f.o.AuthorizeURL(f.ctx, "")
		_, state := f.p.Authorize(t, au, "alice")
		_, err := f.o.Callback(f.ctx, "bogus", state)
		wantCode(t, err, "AUTH_REQUIRED", "rejected the authorization code")
	})
	t.Run("PKCE mismatch", func(t *testing.T) {
		au, _ := f.o.AuthorizeURL(f.ctx, "")
		code, state := f.p.Authorize(t, withParam(t, au, "code_challenge", "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"), "alice")
		_, err := f.o.Callback(f.ctx, code, state)
		wantCode(t, err, "AUTH_REQUIRED", "rejected the authorization code")
	})
	t.Run("wrong client secret", func(t *testing.T) {
		bad, err := NewOIDC(f.ctx, OIDCConfig{Issuer: f.p.URL, ClientID: f.p.ClientID, ClientSecret: "wrong", RedirectURL: f.p.RedirectURL}, f.st, f.clock.Now)
		if err != nil {
			t.Fatal(err)
		}
		au, _ := bad.AuthorizeURL(f.ctx, "")
		code, state := f.p.Authorize(t, au, "alice")
		_, err = bad.Callback(f.ctx, code, state)
		wantCode(t, err, "OIDC_ERROR", "401")
	})
	t.Run("provider down", func(t *testing.T) {
		au, _ := f.o.AuthorizeURL(f.ctx, "")
		code, state := f.p.Authorize(t, au, "alice")
		f.p.Close()
		_, err := f.o.Callback(f.ctx, code, state)
		wantCode(t, err, "OIDC_ERROR", "could not be reached")
	})
}

func TestOIDCVerifyBearer(t *testing.T) {
	f := newOIDCFixture(t)
	f.p.AddUser("alice", "alice@example.com", "Alice", true)
	f.p.AddUser("nomail", "", "No Mail", false)
	other := oidctest.Start(t) // another provider: other keys
	other.AddUser("alice", "alice@example.com", "Alice", true)

	withClaims := func(edit func(map[string]any)) string {
		c := f.p.Claims("alice", f.p.ClientID, time.Hour)
		edit(c)
		return f.p.Sign(c)
	}
	payload, _ := json.Marshal(f.p.Claims("alice", f.p.ClientID, time.Hour))
	b64 := base64.RawURLEncoding.EncodeToString
	algNone := b64([]byte(`{"alg":"none","typ":"JWT","kid":"`+f.p.KeyID()+`"}`)) + "." + b64(payload) + "."
	// HS256 keyed with the public key: the classic algorithm-confusion forgery.
	pubJSON, _ := json.Marshal(f.p.PublicKey())
	hdr := jws.NewHeaders()
	_ = hdr.Set(jws.KeyIDKey, f.p.KeyID())
	hs256, err := jws.Sign(payload, jws.WithKey(jwa.HS256, pubJSON, jws.WithProtectedHeaders(hdr)))
	if err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		name, token, code, msg string
	}{
		{"valid", f.p.Token("alice", f.p.ClientID, time.Hour), "", ""},
		{"expired within skew", f.p.Token("alice", f.p.ClientID, -2*time.Minute), "", ""},
		{"expired", f.p.Token("alice", f.p.ClientID, -10*time.Minute), "TOKEN_EXPIRED", ""},
		{"wrong audience", f.p.Token("alice", "someone-else", time.Hour), "AUTH_REQUIRED", "audience"},
		{"wrong issuer", withClaims(func(c map[string]any) { c["iss"] = "https://evil.example" }), "AUTH_REQUIRED", "issuer"},
		{"no exp", withClaims(func(c map[string]any) { delete(c, "exp") }), "AUTH_REQUIRED", ""},
		{"no sub", withClaims(func(c map[string]any) { delete(c, "sub") }), "AUTH_REQUIRED", ""},
		{"alg none", algNone, "AUTH_REQUIRED", "not accepted"},
		{"HS256", string(hs256), "AUTH_REQUIRED", "not accepted"},
		{"tampered payload", tamper(f.p.Token("alice", f.p.ClientID, time.Hour)), "AUTH_REQUIRED", ""},
		{"other provider's key", func() string {
			c := other.Claims("alice", f.p.ClientID, time.Hour)
			c["iss"] = f.p.URL
			return other.Sign(c)
		}(), "AUTH_REQUIRED", "unknown signing key"},
		{"garbage", "not.a.jwt", "AUTH_REQUIRED", ""},
		{"no email", f.p.Token("nomail", f.p.ClientID, time.Hour), "AUTH_REQUIRED", "email"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := f.o.VerifyBearer(f.ctx, tc.token)
			if tc.code == "" {
				if err != nil || p.Email != "alice@example.com" {
					t.Fatalf("got %+v, %v", p, err)
				}
				return
			}
			wantCode(t, err, tc.code, tc.msg)
		})
	}

	// A disabled user's provider tokens stop working at once (no stale cache).
	if _, err := f.st.DB.Exec(`UPDATE platform.users SET status = 'disabled' WHERE email = 'alice@example.com'`); err != nil {
		t.Fatal(err)
	}
	_, err = f.o.VerifyBearer(f.ctx, f.p.Token("alice", f.p.ClientID, time.Hour))
	wantCode(t, err, "AUTH_REQUIRED", "disabled")
}

func TestOIDCKeyRotation(t *testing.T) {
	f := newOIDCFixture(t)
	f.p.AddUser("alice", "alice@example.com", "Alice", true)
	old := f.p.Token("alice", f.p.ClientID, time.Hour)
	if _, err := f.o.VerifyBearer(f.ctx, old); err != nil {
		t.Fatal(err)
	}
	fetches := f.p.JWKSRequests()

	f.p.RotateKey()
	if _, err := f.o.VerifyBearer(f.ctx, f.p.Token("alice", f.p.ClientID, time.Hour)); err != nil {
		t.Fatalf("token of the rotated-in key: %v", err)
	}
	if got := f.p.JWKSRequests(); got != fetches+1 {
		t.Fatalf("JWKS fetched %d times, want once more than %d", got, fetches)
	}
	_, err := f.o.VerifyBearer(f.ctx, old) // the old key is no longer served
	wantCode(t, err, "AUTH_REQUIRED", "unknown signing key")

	// Within jwksMinRefresh an unknown kid does not refetch.
	f.p.RotateKey()
	next := f.p.Token("alice", f.p.ClientID, time.Hour)
	_, err = f.o.VerifyBearer(f.ctx, next)
	wantCode(t, err, "AUTH_REQUIRED", "unknown signing key")
	if got := f.p.JWKSRequests(); got != fetches+1 {
		t.Fatalf("JWKS fetched %d times within the refresh interval", got)
	}
	f.o.refreshMu.Lock()
	f.o.refreshedAt = time.Now().Add(-jwksMinRefresh)
	f.o.refreshMu.Unlock()
	if _, err := f.o.VerifyBearer(f.ctx, next); err != nil {
		t.Fatalf("after the refresh interval: %v", err)
	}
}

func TestOIDCDiscoveryFailures(t *testing.T) {
	ctx := context.Background()
	p := oidctest.Start(t)
	cfg := OIDCConfig{Issuer: p.URL, ClientID: p.ClientID, ClientSecret: p.ClientSecret, RedirectURL: p.RedirectURL}

	mismatch := cfg
	mismatch.Issuer = p.URL + "/"
	if _, err := NewOIDC(ctx, mismatch, nil, time.Now); err == nil || !strings.Contains(err.Error(), "must be equal") {
		t.Fatalf("issuer mismatch: %v", err)
	}
	p.Close()
	if _, err := NewOIDC(ctx, cfg, nil, time.Now); err == nil || !strings.Contains(err.Error(), "discovery") {
		t.Fatalf("provider down: %v", err)
	}
}

func mustQuery(t *testing.T, raw string) url.Values {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return u.Query()
}

func withParam(t *testing.T, raw, k, v string) string {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set(k, v)
	u.RawQuery = q.Encode()
	return u.String()
}

// tamper changes the payload of a signed token, keeping its signature.
func tamper(tok string) string {
	parts := strings.Split(tok, ".")
	b, _ := base64.RawURLEncoding.DecodeString(parts[1])
	var c map[string]any
	_ = json.Unmarshal(b, &c)
	c["email"] = "admin@example.com"
	b, _ = json.Marshal(c)
	parts[1] = base64.RawURLEncoding.EncodeToString(b)
	return strings.Join(parts, ".")
}
