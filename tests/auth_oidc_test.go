package tests

import (
	"net/url"
	"testing"
	"time"

	"dataplatform/cmd/dataplatform/config"
	"dataplatform/handlers/auth/oidctest"
)

func withProvider(p *oidctest.Provider) option {
	return func(c *config.Config) {
		c.OIDCIssuer, c.OIDCClientID, c.OIDCClientSecret, c.OIDCRedirectURL = p.URL, p.ClientID, p.ClientSecret, p.RedirectURL
	}
}

// The authorization-code flow through the service: authorize redirects to the provider, the
// callback answers this service's tokens for a provisioned user, and the provider's own tokens
// work as bearer tokens for the same user.
func TestOIDCAuthorizationCodeFlow(t *testing.T) {
	t.Parallel()
	p := oidctest.Start(t)
	e := newEnv(t, withProvider(p))
	p.Clock = e.clock.Now
	p.AddUser("alice-sub", "alice@example.com", "Alice", true)

	r := e.do("GET", "/api/v1/auth/oauth/authorize?scope=openid%20email%20profile", nil).status(302)
	loc := r.Header.Get("Location")
	u, err := url.Parse(loc)
	if err != nil || u.Query().Get("state") == "" || u.Query().Get("code_challenge_method") != "S256" || u.Query().Get("nonce") == "" {
		t.Fatalf("authorize redirect: %s", loc)
	}
	code, state := p.Authorize(t, loc, "alice-sub")
	cb := e.do("GET", "/api/v1/auth/oauth/callback?code="+url.QueryEscape(code)+"&state="+url.QueryEscape(state), nil).status(200)
	if cb.str("user.email") != "alice@example.com" {
		t.Fatalf("callback: %s", cb.Body)
	}
	me := e.do("GET", "/api/v1/auth/me", nil, bearer(cb.str("access_token"))).status(200)
	userID := me.str("id")
	// The state is single use.
	e.do("GET", "/api/v1/auth/oauth/callback?code="+url.QueryEscape(code)+"&state="+url.QueryEscape(state), nil).authError(401, "AUTH_REQUIRED")
	// The provider's error is passed on as 401.
	e.do("GET", "/api/v1/auth/oauth/callback?error=access_denied&state=x", nil).authError(401, "AUTH_REQUIRED")
	e.do("GET", "/api/v1/auth/oauth/callback", nil).apiError(400, "VALIDATION_ERROR", "query.state", "required")

	// A provider token as a bearer: the same user, method oidc.
	pm := e.do("GET", "/api/v1/auth/me", nil, bearer(p.Token("alice-sub", p.ClientID, time.Hour))).status(200)
	if pm.str("id") != userID || pm.str("auth_method") != "oidc" {
		t.Fatalf("provider bearer: %s", pm.Body)
	}
	e.do("GET", "/api/v1/auth/me", nil, bearer(p.Token("alice-sub", "another-client", time.Hour))).authError(401, "AUTH_REQUIRED")
	e.do("GET", "/api/v1/auth/me", nil, bearer(p.Token("alice-sub", p.ClientID, -10*time.Minute))).authError(401, "TOKEN_EXPIRED")
}

func TestOIDCNotConfigured(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.do("GET", "/api/v1/auth/oauth/authorize", nil).apiError(501, "OIDC_NOT_CONFIGURED")
	e.do("GET", "/api/v1/auth/oauth/callback?code=x&state=y", nil).apiError(501, "OIDC_NOT_CONFIGURED")
}
