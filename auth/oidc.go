package auth

import (
	"context"
	"errors"
	"time"

	"dataplatform/store"
)

// PLACEHOLDER: being replaced by the OpenID Connect implementation.

// OIDCConfig configures the external identity provider.
type OIDCConfig struct {
	Issuer, ClientID, ClientSecret, RedirectURL string
}

// OIDC is the external identity provider integration.
type OIDC struct{ cfg OIDCConfig }

// NewOIDC discovers the provider.
func NewOIDC(ctx context.Context, cfg OIDCConfig, st *store.Store, clock func() time.Time) (*OIDC, error) {
	return nil, errors.New("not implemented yet")
}

func (o *OIDC) Issuer() string { return o.cfg.Issuer }

func (o *OIDC) VerifyBearer(ctx context.Context, raw string) (*Principal, error) {
	return nil, errors.New("not implemented yet")
}

func (o *OIDC) AuthorizeURL(ctx context.Context, scope string) (string, error) {
	return "", errors.New("not implemented yet")
}

func (o *OIDC) Callback(ctx context.Context, code, state string) (*store.User, error) {
	return nil, errors.New("not implemented yet")
}
