package handlers

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"dataplatform/gen/api"
	"dataplatform/handlers/apierr"
	"dataplatform/handlers/auth"
	"dataplatform/store"
	"dataplatform/store/roles"
	"dataplatform/store/secrets"

	"github.com/jmoiron/sqlx"
)

// orgKeysPerDay is how many API keys an organization creates in 24 hours.
const orgKeysPerDay = 10

// orgKeyManager checks that the caller manages the organization's API keys
// (organizations:manage); minting, re-assigning and revoking also need a signed-in user, not
// a key, so that a leaked key cannot make more or vouch for itself.
func (o *Orgs) orgKeyManager(ctx context.Context, q sqlx.QueryerContext, orgID string, mint bool) (*auth.Principal, auth.Access, error) {
	p, acc, err := o.access(ctx, q, orgID)
	if err != nil {
		return nil, acc, err
	}
	if err := acc.Need(auth.OrgKeyOwnerPermission); err != nil {
		return nil, acc, err
	}
	if mint && p.KeyID != "" {
		return nil, acc, apierr.Forbidden("organization API keys are managed with a signed-in user's token, not with an API key")
	}
	return p, acc, nil
}

// orgKeyPermissions normalizes the permissions asked for: the dotted forms (datasets.read) are the
// permission of the same name (projects.read is seeing projects, datasets:list).
func orgKeyPermissions(in []api.OrganizationApiKeyPermission) []string {
	var out []string
	for _, x := range in {
		s := string(x)
		if s == "projects.read" {
			s = "datasets:list"
		}
		s = strings.Replace(s, ".", ":", 1)
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// keyRole is the least role whose permissions include perms: the role of a key's service
// account (the key itself is held to exactly perms).
func keyRole(perms []string) string {
	for _, r := range roles.All {
		if !slices.ContainsFunc(perms, func(p string) bool { return !slices.Contains(roles.Permissions(r), p) }) {
			return r
		}
	}
	return "admin"
}

// orgKeyOut is k as the API shows it: expired past its expiry, else suspended while the
// member it belongs to may not own keys (authentication refuses it then).
func orgKeyOut(k *store.OrgAPIKey, now time.Time) api.OrganizationApiKey {
	perms := make([]api.Permission, len(k.Permissions))
	for i, p := range k.Permissions {
		perms[i] = api.Permission(p)
	}
	status := api.OrganizationApiKeyStatusActive
	if k.ExpiresAt != nil && !now.Before(*k.ExpiresAt) {
		status = api.OrganizationApiKeyStatusExpired
	} else if !auth.OrgKeyOwnerMay(k.OwnerRole) {
		status = api.OrganizationApiKeyStatusSuspended
	}
	return api.OrganizationApiKey{Id: k.ID, Name: k.Name, Description: k.Description, KeyPreview: k.KeyPreview, Permissions: perms,
		Status: status, CreatedAt: k.CreatedAt, ExpiresAt: k.ExpiresAt, LastUsedAt: k.LastUsedAt, CreatedBy: k.CreatedBy, McpWrites: ptr(k.MCPWrites)}
}

func (o *Orgs) ListOrganizationApiKeys(ctx context.Context, req api.ListOrganizationApiKeysRequestObject) (api.ListOrganizationApiKeysResponseObject, error) {
	if _, _, err := o.orgKeyManager(ctx, o.Store.DB, req.OrganizationId, false); err != nil {
		return nil, err
	}
	pg, limit, offset := page(req.Params.Page, req.Params.Limit)
	keys, total, err := store.ListOrgAPIKeys(ctx, o.Store.DB, req.OrganizationId, limit, offset)
	if err != nil {
		return nil, err
	}
	out := api.ListOrganizationApiKeys200JSONResponse{ApiKeys: []api.OrganizationApiKey{}, Pagination: paginate(ctx, pg, limit, total)}
	now := o.Now()
	for i := range keys {
		out.ApiKeys = append(out.ApiKeys, orgKeyOut(&keys[i], now))
	}
	return out, nil
}

func (o *Orgs) CreateOrganizationApiKey(ctx context.Context, req api.CreateOrganizationApiKeyRequestObject) (api.CreateOrganizationApiKeyResponseObject, error) {
	b := req.Body
	now := o.Now()
	if b.ExpiresAt != nil && !b.ExpiresAt.After(now) {
		return nil, apierr.Field("body.expires_at", "minimum", "expires_at must be in the future")
	}
	perms := orgKeyPermissions(b.Permissions)
	secret := auth.NewAPIKey()
	orgID := req.OrganizationId
	k := &store.APIKey{ID: store.NewID("key"), UserID: store.NewID("usr"), Name: b.Name, Description: b.Description,
		KeyHash: secrets.Hash(secret), KeyPreview: auth.KeyPreview(secret), Permissions: perms, ExpiresAt: b.ExpiresAt,
		CreatedAt: now, OrgID: &orgID, MCPWrites: deref(b.McpWrites)}
	var ownerRole string
	err := o.Store.Tx(ctx, func(tx *sqlx.Tx) error {
		p, acc, err := o.orgKeyManager(ctx, tx, orgID, true)
		if err != nil {
			return err
		}
		k.CreatedBy, ownerRole = &p.UserID, acc.Role
		if err := store.LockOrganization(ctx, tx, orgID); err != nil {
			return err
		}
		// Counted here rather than by the rate limiter, which counts attempts: refused
		// attempts by anyone must not use up the organization's day.
		n, first, err := store.OrgKeysCreatedSince(ctx, tx, orgID, now.Add(-24*time.Hour))
		if err != nil {
			return err
		}
		if n >= orgKeysPerDay {
			secs := int64(first.Add(24*time.Hour).Sub(now).Seconds()) + 1
			after := strconv.FormatInt(secs, 10)
			return (&apierr.Error{Status: http.StatusTooManyRequests, Code: apierr.CodeRateLimitExceeded,
				Message: fmt.Sprintf("an organization creates at most %d API keys a day; retry in %s seconds", orgKeysPerDay, after),
				Headers: map[string]string{"Retry-After": after, "X-RateLimit-Limit": strconv.Itoa(orgKeysPerDay), "X-RateLimit-Remaining": "0",
					"X-RateLimit-Reset-After": after}}).
				WithDetails(map[string]any{"category": "organization_api_keys", "limit": orgKeysPerDay, "reset_after_seconds": secs})
		}
		if err := store.CreateOrgAPIKey(ctx, tx, k, keyRole(perms)); err != nil {
			return err
		}
		return o.audit(ctx, tx, orgID, "organization.api_key_create", "api_key", k.ID, k.Name,
			map[string]any{"permissions": perms, "expires_at": k.ExpiresAt, "mcp_writes": k.MCPWrites})
	})
	if err != nil {
		return nil, err
	}
	out := orgKeyOut(&store.OrgAPIKey{APIKey: *k, OwnerRole: ownerRole}, now)
	return api.CreateOrganizationApiKey201JSONResponse{Body: api.OrganizationApiKeyWithSecret{Id: out.Id, Name: out.Name,
		Description: out.Description, KeyPreview: out.KeyPreview, Permissions: out.Permissions,
		Status: api.OrganizationApiKeyWithSecretStatus(out.Status), CreatedAt: out.CreatedAt, ExpiresAt: out.ExpiresAt,
		LastUsedAt: out.LastUsedAt, CreatedBy: out.CreatedBy, McpWrites: out.McpWrites, Key: secret},
		Headers: api.CreateOrganizationApiKey201ResponseHeaders{CacheControl: noStore, Pragma: noCache}}, nil
}

func (o *Orgs) RevokeOrganizationApiKey(ctx context.Context, req api.RevokeOrganizationApiKeyRequestObject) (api.RevokeOrganizationApiKeyResponseObject, error) {
	err := o.Store.Tx(ctx, func(tx *sqlx.Tx) error {
		if _, _, err := o.orgKeyManager(ctx, tx, req.OrganizationId, true); err != nil {
			return err
		}
		k, err := store.RevokeOrgAPIKey(ctx, tx, req.OrganizationId, req.KeyId, o.Now())
		if errors.Is(err, store.ErrNotFound) {
			return apierr.NotFound("api key", req.KeyId)
		} else if err != nil {
			return err
		}
		return o.audit(ctx, tx, req.OrganizationId, "organization.api_key_revoke", "api_key", k.ID, k.Name, nil)
	})
	if err != nil {
		return nil, err
	}
	return api.RevokeOrganizationApiKey204Response{}, nil
}

// AssignOrganizationApiKey makes the caller, a signed-in admin or owner, the member the key
// belongs to: a key suspended because its owner left or lost the role works again.
func (o *Orgs) AssignOrganizationApiKey(ctx context.Context, req api.AssignOrganizationApiKeyRequestObject) (api.AssignOrganizationApiKeyResponseObject, error) {
	var out api.OrganizationApiKey
	err := o.Store.Tx(ctx, func(tx *sqlx.Tx) error {
		p, acc, err := o.orgKeyManager(ctx, tx, req.OrganizationId, true)
		if err != nil {
			return err
		}
		before, err := store.OrgAPIKeyForUpdate(ctx, tx, req.OrganizationId, req.KeyId)
		if errors.Is(err, store.ErrNotFound) {
			return apierr.NotFound("api key", req.KeyId)
		} else if err != nil {
			return err
		}
		// The new owner answers for all the key does: their role must allow it.
		for _, perm := range before.Permissions {
			if err := acc.Need(perm); err != nil {
				return err
			}
		}
		k, err := store.AssignOrgAPIKey(ctx, tx, req.OrganizationId, req.KeyId, p.UserID)
		if err != nil {
			return err
		}
		out = orgKeyOut(k, o.Now())
		return o.audit(ctx, tx, req.OrganizationId, "organization.api_key_assign", "api_key", k.ID, k.Name,
			map[string]any{"previous_owner": before.CreatedBy, "previous_owner_role": before.OwnerRole, "owner": p.UserID})
	})
	if err != nil {
		return nil, err
	}
	return api.AssignOrganizationApiKey200JSONResponse(out), nil
}
