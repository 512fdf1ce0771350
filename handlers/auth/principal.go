package auth

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"time"

	"dataplatform/handlers/apierr"
	"dataplatform/store"
	"dataplatform/store/roles"
)

// Method is how a request authenticated.
type Method string

const (
	MethodJWT     Method = "jwt"     // this service's access token
	MethodAPIKey  Method = "api_key" // a user API key
	MethodOIDC    Method = "oidc"    // a token of the external identity provider
	MethodSession Method = "session" // a browser session cookie
)

// Principal is the authenticated caller.
type Principal struct {
	UserID   string
	Email    string
	Method   Method
	TokenOrg string // the `org` claim of an access token
	// TokenID and TokenExpires are an access token's jti and exp: a stream opened with the
	// token ends when it expires or is revoked.
	TokenID      string
	TokenExpires time.Time
	// KeyID and KeyPermissions are set for API keys: the key may do only what these allow,
	// and never more than its owner's role.
	KeyID          string
	KeyPermissions []string
	// Service is set for an organization API key: it acts as the organization, not a person
	// (its UserID is the key's service account).
	Service bool
	// SessionID and CSRF are set for a browser session: the session's id and the token its
	// unsafe requests must carry.
	SessionID string
	CSRF      string
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
	perms := roles.Permissions(role)
	if p.KeyID != "" {
		perms = slices.DeleteFunc(slices.Clone(perms), func(x string) bool { return !slices.Contains(p.KeyPermissions, x) })
	}
	return Access{OrgID: orgID, Role: role, Permissions: perms}
}

// OrgKeyOwnerPermission is the permission that creates organization API keys, and that the
// member a key belongs to (its creator, or the admin who re-assigned it) must keep for the key
// to work.
const OrgKeyOwnerPermission = "organizations:manage"

// OrgKeyPermissions is what the organization API key keyID of orgID, with permissions perms,
// may do while the member it belongs to has ownerRole there ("" when they are not an active
// member with an active account): perms within what that role allows, or 401
// API_KEY_OWNER_ACCESS_LOST when the role cannot create keys (removed, demoted, disabled,
// deleted). The key is suspended, not revoked: re-assigned to an admin, it works again.
func OrgKeyPermissions(perms []string, ownerRole, orgID, keyID string) ([]string, error) {
	if !OrgKeyOwnerMay(ownerRole) {
		return nil, apierr.New(http.StatusUnauthorized, apierr.CodeAPIKeyOwnerAccessLost,
			"this organization API key is suspended: the member it belongs to is no longer an admin or owner of the organization "+
				"(removed, demoted, disabled or deleted); an admin re-assigns it to themselves with "+
				"POST /api/v1/organizations/"+orgID+"/api-keys/"+keyID+"/assign, or revokes it")
	}
	owner := roles.Permissions(ownerRole)
	return slices.DeleteFunc(slices.Clone(perms), func(x string) bool { return !slices.Contains(owner, x) }), nil
}

// OrgKeyOwnerMay reports whether a member with role (in the key's organization; "" for none)
// may own organization API keys: whether their keys work.
func OrgKeyOwnerMay(role string) bool {
	return slices.Contains(roles.Permissions(role), OrgKeyOwnerPermission)
}

// teamGrants maps a team's permissions (the team vocabulary: read, write, admin) onto the permissions a
// grant of a project to the team may give.
var teamGrants = map[string][]string{
	"projects.read":   {"datasets:list", "datasets:read", "queries:read", "dashboards:view"},
	"queries.execute": {"queries:execute", "visualizations:create"},
	"datasets.manage": {"datasets:write", "datasets:delete"},
}

// projectOps are the project changes a team permission names, with the permission the grant
// must give as well.
var projectOps = map[string]string{"projects.update": "datasets:write", "projects.delete": "datasets:delete"}

// ReachAccess is what p may do on a project it reaches as r: the permissions of its
// organization role where that role applies (r.Base), plus, for every team grant, those of
// the grant's role that the team's permissions allow. Renaming or deleting the project needs
// "projects.update" or "projects.delete" too: the organization role carries them with
// datasets:write and datasets:delete, a grant only when the team has them. An API key keeps
// only its own permissions of all that.
func ReachAccess(p *Principal, orgID string, r store.Reach) Access {
	a := Access{OrgID: orgID, Role: r.Role}
	add := func(perms, ops []string) {
		if p.KeyID != "" {
			perms = slices.DeleteFunc(slices.Clone(perms), func(x string) bool { return !slices.Contains(p.KeyPermissions, x) })
		}
		a.Permissions = slices.Grow(a.Permissions, len(perms)+len(ops)) // one allocation: every record request makes this list
		for _, x := range perms {
			if !slices.Contains(a.Permissions, x) {
				a.Permissions = append(a.Permissions, x)
			}
		}
		for _, op := range ops {
			if need, ok := projectOps[op]; ok && slices.Contains(perms, need) && !slices.Contains(a.Permissions, op) {
				a.Permissions = append(a.Permissions, op)
			}
		}
	}
	if r.Base {
		add(roles.Permissions(r.Role), []string{"projects.update", "projects.delete"})
	}
	for _, g := range r.Grants {
		role, team, _ := strings.Cut(g, "|")
		teamPerms := strings.Split(team, ",")
		var allowed []string
		for _, t := range teamPerms {
			allowed = append(allowed, teamGrants[t]...)
		}
		add(slices.DeleteFunc(slices.Clone(roles.Permissions(role)), func(x string) bool { return !slices.Contains(allowed, x) }), teamPerms)
	}
	return a
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
	if roles.Rank(a.Role) >= roles.Rank(role) {
		return nil
	}
	return apierr.InsufficientRole(role, roles.OrgRole(a.Role))
}
