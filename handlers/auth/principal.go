package auth

import (
	"context"
	"slices"

	"dataplatform/handlers/apierr"
)

// Method is how a request authenticated.
type Method string

const (
	MethodJWT    Method = "jwt"     // this service's access token
	MethodAPIKey Method = "api_key" // a user API key
	MethodOIDC   Method = "oidc"    // a token of the external identity provider
)

// Principal is the authenticated caller.
type Principal struct {
	UserID   string
	Email    string
	Method   Method
	TokenOrg string // the `org` claim of an access token
	// KeyID and KeyPermissions are set for API keys: the key may do only what these allow,
	// and never more than its owner's role.
	KeyID          string
	KeyPermissions []string
}

// Subject identifies the principal for rate limiting: the key for keys, the user otherwise.
func (p *Principal) Subject() string {
	if p.KeyID != "" {
		return p.KeyID
	}
	return p.UserID
}

type principalKey struct{}

// WithPrincipal stores p in ctx.
func WithPrincipal(ctx context.Context, p *Principal) context.Context {
	return context.WithValue(ctx, principalKey{}, p)
}

// FromContext returns the principal of ctx, or nil.
func FromContext(ctx context.Context) *Principal {
	p, _ := ctx.Value(principalKey{}).(*Principal)
	return p
}

// Caller returns the principal of ctx or AUTH_REQUIRED.
func Caller(ctx context.Context) (*Principal, error) {
	if p := FromContext(ctx); p != nil {
		return p, nil
	}
	return nil, apierr.AuthRequired("authentication required")
}

// Access is what a principal may do in one organization.
type Access struct {
	OrgID       string
	Role        string // membership role
	Permissions []string
}

// AccessFor combines a membership role with the principal's restrictions.
func AccessFor(p *Principal, orgID, role string) Access {
	perms := RolePermissions(role)
	if p.KeyID != "" {
		perms = slices.DeleteFunc(slices.Clone(perms), func(x string) bool { return !slices.Contains(p.KeyPermissions, x) })
	}
	return Access{OrgID: orgID, Role: role, Permissions: perms}
}

// Has reports whether the access includes permission perm.
func (a Access) Has(perm string) bool { return slices.Contains(a.Permissions, perm) }

// Need fails with PERMISSION_DENIED unless the access includes perm.
func (a Access) Need(perm string) error {
	if a.Has(perm) {
		return nil
	}
	return apierr.PermissionDenied(perm)
}

// NeedRole fails with INSUFFICIENT_PERMISSIONS unless the organization role is at least role
// (owner or admin).
func (a Access) NeedRole(role string) error {
	if RoleRank(a.Role) >= RoleRank(role) {
		return nil
	}
	return apierr.InsufficientRole(role, OrgRole(a.Role))
}
