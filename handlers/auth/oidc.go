package auth

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"dataplatform/handlers/apierr"
	"dataplatform/store"
	"dataplatform/store/secrets"

	"github.com/jmoiron/sqlx"
	"github.com/lestrrat-go/jwx/v2/jwa"
	"github.com/lestrrat-go/jwx/v2/jwk"
	"github.com/lestrrat-go/jwx/v2/jws"
	"github.com/lestrrat-go/jwx/v2/jwt"
	"golang.org/x/oauth2"
)

// OIDCConfig configures the external identity provider.
type OIDCConfig struct {
	Issuer, ClientID, ClientSecret, RedirectURL string
}

const (
	defaultOIDCScope = "openid profile email"
	oauthStateTTL    = 10 * time.Minute // how long a user may take at the provider
	jwksMinRefresh   = 10 * time.Second // unknown kids refetch the JWKS at most this often
	maxProviderBody  = 1 << 20
)

// asymmetricAlgs are the signature algorithms accepted from the provider. Symmetric (HS*) ones
// are excluded: their "key" would be the public JWKS or the client secret, and `none` is no
// signature at all.
var asymmetricAlgs = []jwa.SignatureAlgorithm{
	jwa.RS256, jwa.RS384, jwa.RS512, jwa.PS256, jwa.PS384, jwa.PS512,
	jwa.ES256, jwa.ES384, jwa.ES512, jwa.EdDSA,
}

// OIDC is the OpenID Connect relying party: it verifies the provider's tokens as bearer
// tokens and runs the authorization code flow (with PKCE and nonce), mapping provider
// accounts to users through platform.identities.
//
// Rules:
//   - audience: a token must name the client id in `aud`, access tokens too. A provider that
//     puts an API identifier in access tokens' `aud` must add the client id (or clients send
//     the ID token as the bearer), so tokens minted for other applications are never accepted.
//   - email linking: a new provider account links to an existing user with the same email only
//     when the provider asserts `email_verified: true`, the user's address is verified here too
//     and the user is active. Otherwise the sign-in is refused with 403 EMAIL_NOT_VERIFIED
//     (emails are unique, so no second user can be created for that email, and linking on an
//     unproven address would hand one person's account to the other). A provisioned user's
//     address is verified when the provider says so.
//   - no in-memory sub→user cache: the lookup is one indexed query, and a cache would keep
//     letting a disabled user in.
type OIDC struct {
	cfg   OIDCConfig
	st    *store.Store
	clock func() time.Time
	http  *http.Client
	oauth oauth2.Config // endpoints from discovery, client credentials sent in the form body
	jwks  string

	mu   sync.RWMutex
	keys jwk.Set

	refreshMu   sync.Mutex // one JWKS fetch at a time
	refreshedAt time.Time  // last fetch caused by an unknown kid (wall time: it protects the provider)
}

// NewOIDC discovers the provider and loads its keys; it fails when either is unreachable or
// the discovery document names another issuer (a mix-up or a misconfiguration).
func NewOIDC(ctx context.Context, cfg OIDCConfig, st *store.Store, clock func() time.Time) (*OIDC, error) {
	if cfg.Issuer == "" || cfg.ClientID == "" {
		return nil, errors.New("issuer and client id are required")
	}
	o := &OIDC{cfg: cfg, st: st, clock: clock, http: &http.Client{Timeout: 10 * time.Second}}
	var d struct {
		Issuer                string `json:"issuer"`
		AuthorizationEndpoint string `json:"authorization_endpoint"`
		TokenEndpoint         string `json:"token_endpoint"`
		JWKSURI               string `json:"jwks_uri"`
	}
	disc := strings.TrimSuffix(cfg.Issuer, "/") + "/.well-known/openid-configuration"
	body, err := o.get(ctx, disc)
	if err != nil {
		return nil, fmt.Errorf("discovery: %w", err)
	}
	if err := json.Unmarshal(body, &d); err != nil {
		return nil, fmt.Errorf("discovery %s: %w", disc, err)
	}
	if d.Issuer != cfg.Issuer {
		return nil, fmt.Errorf("discovery %s names issuer %q, but %q is configured; they must be equal", disc, d.Issuer, cfg.Issuer)
	}
	if d.AuthorizationEndpoint == "" || d.TokenEndpoint == "" || d.JWKSURI == "" {
		return nil, fmt.Errorf("discovery %s lacks authorization_endpoint, token_endpoint or jwks_uri", disc)
	}
	o.jwks = d.JWKSURI
	o.oauth = oauth2.Config{
		ClientID: cfg.ClientID, ClientSecret: cfg.ClientSecret, RedirectURL: cfg.RedirectURL,
		Endpoint: oauth2.Endpoint{AuthURL: d.AuthorizationEndpoint, TokenURL: d.TokenEndpoint, AuthStyle: oauth2.AuthStyleInParams},
	}
	if err := o.fetchKeys(ctx); err != nil {
		return nil, fmt.Errorf("JWKS: %w", err)
	}
	return o, nil
}

func (o *OIDC) Issuer() string { return o.cfg.Issuer }

// VerifyBearer verifies a provider token sent as a bearer token and maps it to a user,
// linking or provisioning one on first use.
func (o *OIDC) VerifyBearer(ctx context.Context, raw string) (*Principal, error) {
	c, err := o.verify(ctx, raw, "")
	if err != nil {
		return nil, err
	}
	u, err := o.resolve(ctx, c)
	if ae := (*apierr.Error)(nil); errors.As(err, &ae) && ae.Code == apierr.CodeEmailNotVerified {
		// A bearer token is authentication: its refusal is a 401 on whatever operation.
		return nil, apierr.AuthRequired(ae.Message)
	} else if err != nil {
		return nil, err
	}
	return &Principal{UserID: u.ID, Email: u.Email, Method: MethodOIDC}, nil
}

// AuthorizeURL starts an authorization code flow: it stores the state (hashed), the PKCE
// verifier and the nonce, and returns the provider URL to send the browser to.
func (o *OIDC) AuthorizeURL(ctx context.Context, scope string) (string, error) {
	var scopes []string
	for _, s := range strings.Fields(cmp.Or(scope, defaultOIDCScope)) {
		if strings.ContainsFunc(s, func(r rune) bool { return r < 0x21 || r > 0x7e || r == '"' || r == '\\' }) { // RFC 6749 §3.3
			return "", apierr.Field("query.scope", "pattern", "scopes are printable ASCII without quotes or backslashes, separated by spaces")
		}
		if !slices.Contains(scopes, s) {
			scopes = append(scopes, s)
		}
	}
	if !slices.Contains(scopes, "openid") { // without it the provider returns no ID token
		scopes = append([]string{"openid"}, scopes...)
	}
	state, nonce, verifier := secrets.NewToken(), secrets.NewToken(), oauth2.GenerateVerifier()
	now := o.clock().UTC()
	st := &store.OAuthState{StateHash: secrets.Hash(state), CodeVerifier: verifier, Nonce: nonce, ExpiresAt: now.Add(oauthStateTTL), CreatedAt: now}
	err := o.st.Tx(ctx, func(tx *sqlx.Tx) error { return store.CreateOAuthState(ctx, tx, st) })
	if err != nil {
		return "", err
	}
	cfg := o.oauth
	cfg.Scopes = scopes
	return cfg.AuthCodeURL(state, oauth2.S256ChallengeOption(verifier), oauth2.SetAuthURLParam("nonce", nonce)), nil
}

// Callback finishes a flow: it spends the state, exchanges the code (with the PKCE
// verifier), verifies the ID token and its nonce, and returns the linked or new user.
func (o *OIDC) Callback(ctx context.Context, code, state string) (*store.User, error) {
	if state == "" {
		return nil, apierr.AuthRequired("the sign-in state is missing; start the sign-in again")
	}
	flow, live, err := store.ConsumeOAuthState(ctx, o.st.DB, secrets.Hash(state), o.clock())
	if errors.Is(err, store.ErrNotFound) {
		return nil, apierr.AuthRequired("unknown or already used sign-in state; start the sign-in again")
	} else if err != nil {
		return nil, err
	}
	if !live {
		return nil, apierr.AuthRequired("the sign-in expired (it must finish within 10 minutes); start it again")
	}
	tok, err := o.oauth.Exchange(context.WithValue(ctx, oauth2.HTTPClient, o.http), code, oauth2.VerifierOption(flow.CodeVerifier))
	if err != nil {
		var re *oauth2.RetrieveError
		if errors.As(err, &re) && re.ErrorCode == "invalid_grant" {
			return nil, apierr.AuthRequired("the identity provider rejected the authorization code (invalid, expired or already used); start the sign-in again")
		}
		// Anything else is the provider's or our configuration's fault (e.g. invalid_client).
		slog.WarnContext(ctx, "oidc: token exchange failed", "issuer", o.cfg.Issuer, "err", err)
		if re != nil && re.Response != nil {
			return nil, providerError(fmt.Sprintf("the identity provider's token endpoint answered %s %s", re.Response.Status, re.ErrorCode))
		}
		return nil, providerError("the identity provider's token endpoint could not be reached or answered something unusable")
	}
	raw, _ := tok.Extra("id_token").(string)
	if raw == "" {
		return nil, providerError("the identity provider's token response has no id_token")
	}
	c, err := o.verify(ctx, raw, flow.Nonce)
	if err != nil {
		return nil, err
	}
	return o.resolve(ctx, c)
}

func providerError(msg string) error {
	return apierr.New(http.StatusBadGateway, apierr.CodeOidcError, msg)
}

// providerClaims is what a verified token says about the person.
type providerClaims struct {
	sub, email, name string
	emailVerified    bool
}

// verify checks signature (an asymmetric algorithm, a key of the provider's JWKS), iss, aud,
// exp (required; ClockSkew of grace, on the injected clock) and, for the ID token of a flow,
// nonce and azp.
func (o *OIDC) verify(ctx context.Context, raw, nonce string) (*providerClaims, error) {
	bad := func(why string) error { return apierr.AuthRequired("invalid identity provider token: " + why) }
	msg, err := jws.Parse([]byte(raw))
	if err != nil || len(msg.Signatures()) != 1 {
		return nil, bad("not a signed JWT")
	}
	h := msg.Signatures()[0].ProtectedHeaders()
	alg := h.Algorithm()
	if !slices.Contains(asymmetricAlgs, alg) {
		return nil, bad("signature algorithm " + alg.String() + " is not accepted")
	}
	key, ok := o.key(ctx, h.KeyID())
	if !ok {
		return nil, bad("unknown signing key")
	}
	if ka := key.Algorithm(); ka != nil && ka.String() != "" && ka.String() != alg.String() {
		return nil, bad("the signing key is not for " + alg.String())
	}
	tok, err := jwt.Parse([]byte(raw),
		jwt.WithKey(alg, key),
		jwt.WithValidate(true),
		jwt.WithIssuer(o.cfg.Issuer),
		jwt.WithAudience(o.cfg.ClientID),
		jwt.WithRequiredClaim(jwt.ExpirationKey),
		jwt.WithRequiredClaim(jwt.SubjectKey),
		jwt.WithAcceptableSkew(ClockSkew),
		jwt.WithClock(jwt.ClockFunc(o.clock)),
	)
	switch {
	case err == nil:
	case errors.Is(err, jwt.ErrTokenExpired()):
		return nil, apierr.TokenExpired()
	case errors.Is(err, jwt.ErrInvalidIssuer()):
		return nil, bad("wrong issuer")
	case errors.Is(err, jwt.ErrInvalidAudience()):
		return nil, bad("the audience does not include this service's client id")
	default:
		return nil, bad("signature or claims rejected")
	}
	pc := tok.PrivateClaims()
	if nonce != "" {
		if n, _ := pc["nonce"].(string); n != nonce { // a replayed or injected ID token
			return nil, bad("the nonce does not match this sign-in")
		}
		if azp, ok := pc["azp"].(string); ok && azp != o.cfg.ClientID {
			return nil, bad("the ID token was issued to another client")
		}
	}
	c := &providerClaims{sub: tok.Subject()}
	c.email, _ = pc["email"].(string)
	c.name, _ = pc["name"].(string)
	// Some providers send the boolean as a string.
	c.emailVerified = pc["email_verified"] == true || pc["email_verified"] == "true"
	return c, nil
}

// resolve maps a provider account to a user: the linked one; else the active user with the
// same, provider-verified email (linked now); else a new user. See OIDC for the rules.
func (o *OIDC) resolve(ctx context.Context, c *providerClaims) (*store.User, error) {
	// Fast path without a transaction: the account is usually linked already.
	u, err := store.UserByIdentity(ctx, o.st.DB, o.cfg.Issuer, c.sub)
	if err == nil {
		return activeUser(u)
	} else if !errors.Is(err, store.ErrNotFound) {
		return nil, err
	}
	for attempt := 0; ; attempt++ {
		err = o.st.Tx(ctx, func(tx *sqlx.Tx) error {
			var err error
			u, err = o.link(ctx, tx, c)
			return err
		})
		// A concurrent first sign-in of the same person won the race; the retry sees its rows.
		if _, dup := store.UniqueViolation(err); dup && attempt == 0 {
			continue
		}
		return u, err
	}
}

func (o *OIDC) link(ctx context.Context, tx *sqlx.Tx, c *providerClaims) (*store.User, error) {
	u, err := store.UserByIdentity(ctx, tx, o.cfg.Issuer, c.sub)
	if err == nil {
		return activeUser(u)
	} else if !errors.Is(err, store.ErrNotFound) {
		return nil, err
	}
	if c.email == "" {
		return nil, apierr.AuthRequired("the identity provider did not share an email address; the `email` scope is needed")
	}
	now := o.clock().UTC()
	action := "user.link_identity"
	u, err = store.UserByEmail(ctx, tx, c.email)
	switch {
	case err == nil:
		if u.Status != "active" {
			return nil, apierr.AuthRequired("the account with this email address is not active")
		}
		// Both sides must have proven the mailbox: otherwise whoever typed the address at the
		// provider, or set up the local account through an invitation link they could see,
		// would get the other's account.
		if !c.emailVerified {
			return nil, apierr.New(http.StatusForbidden, apierr.CodeEmailNotVerified, "an account with this email address already exists and the identity provider has not verified the address, so it is not linked; sign in with the existing account")
		}
		if u.EmailVerifiedAt == nil {
			return nil, apierr.New(http.StatusForbidden, apierr.CodeEmailNotVerified, "an account with this email address already exists but its address is not verified, so it is not linked; sign in with the existing account and verify the address first")
		}
	case errors.Is(err, store.ErrNotFound):
		action = "user.provision"
		u = &store.User{ID: store.NewID("usr"), Email: c.email, Name: cmp.Or(c.name, c.email), Status: "active", CreatedAt: now, UpdatedAt: now}
		if c.emailVerified {
			u.EmailVerifiedAt = &now
		}
		if err := store.CreateUser(ctx, tx, u); err != nil {
			return nil, err
		}
	default:
		return nil, err
	}
	email := c.email
	if err := store.LinkIdentity(ctx, tx, &store.Identity{Issuer: o.cfg.Issuer, Subject: c.sub, UserID: u.ID, Email: &email, CreatedAt: now}); err != nil {
		return nil, err
	}
	return u, store.Audit(ctx, tx, store.AuditEntry{
		ActorID: u.ID, ActorName: u.Name, ActorEmail: u.Email, Action: action,
		ResourceType: "user", ResourceID: u.ID, ResourceName: u.Name, At: now,
		Details: map[string]any{"issuer": o.cfg.Issuer, "subject": c.sub, "email_verified": c.emailVerified},
	})
}

func activeUser(u *store.User) (*store.User, error) {
	if u.Status != "active" {
		return nil, apierr.AuthRequired("this account is " + u.Status)
	}
	return u, nil
}

// key returns the provider key kid. An unknown kid refetches the JWKS (the provider rotated
// its keys), at most once per jwksMinRefresh so that tokens with made-up kids cannot turn
// this service into a load generator against the provider.
func (o *OIDC) key(ctx context.Context, kid string) (jwk.Key, bool) {
	if k, ok := o.cachedKey(kid); ok {
		return k, true
	}
	o.refreshMu.Lock()
	defer o.refreshMu.Unlock()
	if k, ok := o.cachedKey(kid); ok { // fetched meanwhile by a concurrent request
		return k, true
	}
	if time.Since(o.refreshedAt) < jwksMinRefresh {
		return nil, false
	}
	o.refreshedAt = time.Now()
	if err := o.fetchKeys(ctx); err != nil {
		slog.WarnContext(ctx, "oidc: JWKS refresh failed", "issuer", o.cfg.Issuer, "err", err)
		return nil, false
	}
	return o.cachedKey(kid)
}

func (o *OIDC) cachedKey(kid string) (jwk.Key, bool) {
	o.mu.RLock()
	defer o.mu.RUnlock()
	if kid == "" && o.keys.Len() == 1 { // a provider with a single key may omit kid
		return o.keys.Key(0)
	}
	if kid == "" {
		return nil, false
	}
	return o.keys.LookupKeyID(kid)
}

// fetchKeys loads the provider's JWKS, keeping the asymmetric signature keys.
func (o *OIDC) fetchKeys(ctx context.Context) error {
	body, err := o.get(ctx, o.jwks)
	if err != nil {
		return err
	}
	set, err := jwk.Parse(body)
	if err != nil {
		return fmt.Errorf("%s: %w", o.jwks, err)
	}
	keys := jwk.NewSet()
	for i := 0; i < set.Len(); i++ {
		k, _ := set.Key(i)
		if k.KeyType() == jwa.OctetSeq || k.KeyUsage() == "enc" {
			continue
		}
		if err := keys.AddKey(k); err != nil {
			return err
		}
	}
	if keys.Len() == 0 {
		return fmt.Errorf("%s holds no signature keys", o.jwks)
	}
	o.mu.Lock()
	o.keys = keys
	o.mu.Unlock()
	return nil
}

// get fetches a provider document, expecting 200.
func (o *OIDC) get(ctx context.Context, url string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := o.http.Do(req)
	if err != nil {
		return nil, err
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return io.ReadAll(io.LimitReader(resp.Body, maxProviderBody))
}
