package auth

import (
	"context"
	"errors"
	"sync"
	"time"

	"dataplatform/handlers/apierr"
	"dataplatform/store/secrets"

	"github.com/lestrrat-go/jwx/v2/jwa"
	"github.com/lestrrat-go/jwx/v2/jws"
	"github.com/lestrrat-go/jwx/v2/jwt"
)

// AccessTokenType is the `typ` header of access tokens (RFC 9068). Refresh tokens are opaque
// strings, so neither can pass for the other.
const AccessTokenType = "at+jwt"

// ClockSkew is the grace allowed on iat and nbf: a token made by a server whose clock is a
// little ahead is usable at once. It is not allowed on exp: a token ends at its exp on every
// server (the servers' clocks are assumed synchronized, as for every other expiry here). An
// external identity provider's tokens (oidc.go) keep it on exp too: that clock is not ours.
const ClockSkew = 5 * time.Minute

// Tokens issues and verifies this service's RS256 access tokens.
type Tokens struct {
	Keys   *KeyStore
	Issuer string
	TTL    time.Duration
	Clock  func() time.Time

	// verified remembers tokens whose signature and claims were checked, until they expire:
	// a client sends the same token on every request, and the RSA verification and JSON
	// decoding would otherwise dominate the cost of a cheap request.
	mu       sync.RWMutex
	verified map[string]*AccessClaims
}

// maxVerified bounds the verified-token cache (about 1 KB per entry).
const maxVerified = 20000

// AccessClaims are the claims of an access token.
type AccessClaims struct {
	ID          string // jti: what the deny-list names
	UserID      string
	Email       string
	Org         string
	Roles       []string
	Permissions []string
	IssuedAt    time.Time
	ExpiresAt   time.Time
}

// Issue signs an access token for c. It fills IssuedAt and ExpiresAt.
func (t *Tokens) Issue(c *AccessClaims) (string, error) {
	now := t.Clock().UTC().Truncate(time.Second)
	c.IssuedAt, c.ExpiresAt, c.ID = now, now.Add(t.TTL), secrets.NewToken()[:22]
	roles, perms := c.Roles, c.Permissions
	if roles == nil {
		roles = []string{}
	}
	if perms == nil {
		perms = []string{}
	}
	tok, err := jwt.NewBuilder().
		Issuer(t.Issuer).
		Subject(c.UserID).
		IssuedAt(now).
		NotBefore(now).
		Expiration(c.ExpiresAt).
		JwtID(c.ID).
		Claim("email", c.Email).
		Claim("org", c.Org).
		Claim("roles", roles).
		Claim("permissions", perms).
		Build()
	if err != nil {
		return "", err
	}
	hdr := jws.NewHeaders()
	signer := t.Keys.Signer()
	if err := hdr.Set(jws.TypeKey, AccessTokenType); err != nil {
		return "", err
	}
	if err := hdr.Set(jws.KeyIDKey, signer.KeyID()); err != nil {
		return "", err
	}
	b, err := jwt.Sign(tok, jwt.WithKey(jwa.RS256, signer, jws.WithProtectedHeaders(hdr)))
	return string(b), err
}

var errBadToken = apierr.AuthRequired("invalid access token")

// Verify checks an access token: RS256 only, a known kid, typ at+jwt, our issuer, a jti, exp
// present and not reached (no grace), iat and nbf not ahead by more than ClockSkew. An
// expired token is TOKEN_EXPIRED; anything else wrong is AUTH_REQUIRED. Whether the token was
// revoked is the caller's check (Authenticator): the deny-list is not cached here.
func (t *Tokens) Verify(ctx context.Context, raw string) (*AccessClaims, error) {
	t.mu.RLock()
	c, ok := t.verified[raw]
	t.mu.RUnlock()
	if ok {
		if t.Clock().Before(c.ExpiresAt) {
			return c, nil
		}
		t.mu.Lock()
		delete(t.verified, raw)
		t.mu.Unlock()
		return nil, apierr.TokenExpired()
	}
	c, err := t.verify(ctx, raw)
	if err != nil {
		return nil, err
	}
	t.mu.Lock()
	if len(t.verified) >= maxVerified || t.verified == nil {
		t.verified = make(map[string]*AccessClaims, 1024) // drop everything: cheap and bounded
	}
	t.verified[raw] = c
	t.mu.Unlock()
	return c, nil
}

func (t *Tokens) verify(ctx context.Context, raw string) (*AccessClaims, error) {
	msg, err := jws.Parse([]byte(raw))
	if err != nil || len(msg.Signatures()) != 1 {
		return nil, errBadToken
	}
	h := msg.Signatures()[0].ProtectedHeaders()
	if h.Algorithm() != jwa.RS256 || h.Type() != AccessTokenType || h.KeyID() == "" {
		return nil, errBadToken
	}
	key, ok := t.Keys.Lookup(ctx, h.KeyID())
	if !ok {
		return nil, errBadToken
	}
	tok, err := jwt.Parse([]byte(raw),
		jwt.WithKey(jwa.RS256, key),
		jwt.WithValidate(true),
		jwt.WithIssuer(t.Issuer),
		jwt.WithRequiredClaim(jwt.ExpirationKey),
		jwt.WithRequiredClaim(jwt.SubjectKey),
		jwt.WithRequiredClaim(jwt.JwtIDKey),
		jwt.WithAcceptableSkew(ClockSkew),
		jwt.WithClock(jwt.ClockFunc(t.Clock)),
	)
	if err != nil {
		if errors.Is(err, jwt.ErrTokenExpired()) {
			return nil, apierr.TokenExpired()
		}
		return nil, errBadToken
	}
	// jwx applies the skew to exp as well; exp gets none here.
	if !t.Clock().Before(tok.Expiration()) {
		return nil, apierr.TokenExpired()
	}
	c := &AccessClaims{ID: tok.JwtID(), UserID: tok.Subject(), IssuedAt: tok.IssuedAt(), ExpiresAt: tok.Expiration()}
	pc := tok.PrivateClaims()
	c.Email, _ = pc["email"].(string)
	c.Org, _ = pc["org"].(string)
	c.Roles = stringList(pc["roles"])
	c.Permissions = stringList(pc["permissions"])
	return c, nil
}

func stringList(v any) []string {
	arr, _ := v.([]any)
	out := make([]string, 0, len(arr))
	for _, x := range arr {
		if s, ok := x.(string); ok {
			out = append(out, s)
		}
	}
	return out
}
