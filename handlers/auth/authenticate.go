package auth

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync"
	"time"

	"dataplatform/handlers/apierr"
	"dataplatform/store"
	"dataplatform/store/secrets"
)

// BearerVerifier verifies bearer tokens of an external identity provider and maps them to a
// principal (the OpenID Connect integration).
type BearerVerifier interface {
	Issuer() string
	VerifyBearer(ctx context.Context, raw string) (*Principal, error)
}

// ErrTokenRevoked is the 401 of an access token ended before its expiry (its sign-in was
// signed out, or its refresh token reused).
var ErrTokenRevoked = apierr.AuthRequired("the access token was revoked (signed out); sign in again")

// Authenticator turns request credentials into a Principal.
type Authenticator struct {
	Tokens   *Tokens
	Store    *store.Store
	External BearerVerifier // nil when no identity provider is configured
	Clock    func() time.Time
	Origin   string // DP_BASE_URL's origin: unsafe session-cookie requests must come from it (or their own Host)

	touched sync.Map // API key id -> time.Time of the last recorded use
}

// Authenticate reads, in this order, `Authorization: Bearer`, `X-API-Key`, the `api_key`
// query parameter and the browser session cookie (the weakest: a request that carries another
// credential is that credential's, and needs no CSRF check).
func (a *Authenticator) Authenticate(r *http.Request) (*Principal, error) {
	ctx := r.Context()
	if h := r.Header.Get("Authorization"); h != "" {
		scheme, raw, ok := strings.Cut(h, " ")
		raw = strings.TrimSpace(raw)
		if !ok || !strings.EqualFold(scheme, "Bearer") || raw == "" {
			return nil, apierr.AuthRequired("the Authorization header must be `Bearer <token>`")
		}
		if LooksLikeAPIKey(raw) { // an API key sent as a bearer token is accepted too
			return a.apiKey(ctx, raw)
		}
		if a.External != nil && issuerOf(raw) == a.External.Issuer() && a.External.Issuer() != a.Tokens.Issuer {
			return a.External.VerifyBearer(ctx, raw)
		}
		c, err := a.Tokens.Verify(ctx, raw)
		if err != nil {
			return nil, err
		}
		// After the verified-token cache, on every request: a map lookup while the server
		// listens for revocations, one primary-key lookup otherwise (store/revocations.go).
		if revoked, err := a.Store.AccessTokenRevoked(ctx, c.ID); err != nil {
			return nil, err
		} else if revoked {
			return nil, ErrTokenRevoked
		}
		return &Principal{UserID: c.UserID, Email: c.Email, Method: MethodJWT, TokenOrg: c.Org, TokenID: c.ID, TokenExpires: c.ExpiresAt}, nil
	}
	if k := r.Header.Get("X-API-Key"); k != "" {
		return a.apiKey(ctx, k)
	}
	if k := r.URL.Query().Get("api_key"); k != "" {
		return a.apiKey(ctx, k)
	}
	if c, err := r.Cookie(SessionCookie); err == nil && c.Value != "" {
		return a.session(r, c.Value)
	}
	return nil, apierr.AuthRequired("authentication required: send `Authorization: Bearer <token>` or `X-API-Key: <key>`, or sign in at " + SignInPath)
}

func (a *Authenticator) apiKey(ctx context.Context, k string) (*Principal, error) {
	bad := apierr.AuthRequired("invalid, revoked or expired API key")
	if !LooksLikeAPIKey(k) {
		return nil, bad
	}
	now := a.Clock()
	o, err := a.Store.APIKeyByHash(ctx, secrets.Hash(k), now)
	if errors.Is(err, store.ErrNotFound) {
		return nil, bad
	} else if err != nil {
		return nil, err
	}
	perms := []string(o.Permissions)
	if o.Service {
		// An organization's key works while the member it belongs to may create keys, and
		// never beyond that member's current role. Checked here, on every request (the
		// owner's role comes with the key's own row, no cache to invalidate), so that a
		// removal or demotion holds from the next request on.
		if perms, err = OrgKeyPermissions(perms, o.OwnerRole, *o.OrgID, o.KeyID); err != nil {
			return nil, err
		}
	}
	// Record use at most once a minute per key, not on every request.
	if last, ok := a.touched.Load(o.KeyID); !ok || now.Sub(last.(time.Time)) > time.Minute {
		a.touched.Store(o.KeyID, now)
		if err := store.TouchAPIKey(ctx, a.Store.DB, o.KeyID, now); err != nil {
			return nil, err
		}
	}
	return &Principal{UserID: o.UserID, Email: o.Email, Method: MethodAPIKey, KeyID: o.KeyID, KeyPermissions: perms, Service: o.Service}, nil
}

// issuerOf reads the unverified `iss` claim of a JWT, only to choose its verifier.
func issuerOf(raw string) string {
	parts := strings.Split(raw, ".")
	if len(parts) != 3 {
		return ""
	}
	b, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return ""
	}
	var c struct {
		Iss string `json:"iss"`
	}
	_ = json.Unmarshal(b, &c)
	return c.Iss
}
