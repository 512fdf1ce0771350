package handlers

import (
	"context"
	"errors"
	"time"

	"dataplatform/gen/api"
	"dataplatform/handlers/apierr"
	"dataplatform/handlers/auth"
	"dataplatform/store"
	"dataplatform/store/secrets"

	"github.com/jmoiron/sqlx"
)

// keyManager returns the caller if it may manage API keys: a signed-in user (not a key: a
// leaked key must not be able to mint more) whose role somewhere grants api-keys:manage.
func (a *Auth) keyManager(ctx context.Context) (*auth.Principal, error) {
	p, err := auth.Caller(ctx)
	if err != nil {
		return nil, err
	}
	if p.KeyID != "" {
		return nil, apierr.Forbidden("API keys are managed with a signed-in user's token, not with an API key")
	}
	orgs, err := store.UserOrganizations(ctx, a.Store.DB, p.UserID)
	if err != nil {
		return nil, err
	}
	for _, o := range orgs {
		if auth.AccessFor(p, o.OrgID, o.Role).Has("api-keys:manage") {
			return p, nil
		}
	}
	return nil, apierr.PermissionDenied("api-keys:manage")
}

func keyStatus(k *store.APIKey, now time.Time) api.ApiKeyStatus {
	switch {
	case k.ExpiresAt != nil && !now.Before(*k.ExpiresAt):
		return api.ApiKeyStatusExpired
	case k.RotatedTo != nil:
		return api.ApiKeyStatusExpiring
	}
	return api.ApiKeyStatusActive
}

func apiKeyOut(k *store.APIKey, now time.Time) api.ApiKey {
	perms := make([]api.Permission, len(k.Permissions))
	for i, p := range k.Permissions {
		perms[i] = api.Permission(p)
	}
	return api.ApiKey{Id: k.ID, Name: k.Name, Description: k.Description, KeyPreview: k.KeyPreview, Permissions: perms,
		Status: keyStatus(k, now), CreatedAt: k.CreatedAt, ExpiresAt: k.ExpiresAt, LastUsedAt: k.LastUsedAt, McpWrites: ptr(k.MCPWrites)}
}

func (a *Auth) ListApiKeys(ctx context.Context, req api.ListApiKeysRequestObject) (api.ListApiKeysResponseObject, error) {
	p, err := a.keyManager(ctx)
	if err != nil {
		return nil, err
	}
	pg, limit, offset := page(req.Params.Page, req.Params.Limit)
	keys, total, err := store.ListAPIKeys(ctx, a.Store.DB, p.UserID, limit, offset)
	if err != nil {
		return nil, err
	}
	out := api.ListApiKeys200JSONResponse{ApiKeys: []api.ApiKey{}, Pagination: paginate(ctx, pg, limit, total)}
	now := a.Now()
	for i := range keys {
		out.ApiKeys = append(out.ApiKeys, apiKeyOut(&keys[i], now))
	}
	return out, nil
}

func (a *Auth) CreateApiKey(ctx context.Context, req api.CreateApiKeyRequestObject) (api.CreateApiKeyResponseObject, error) {
	p, err := a.keyManager(ctx)
	if err != nil {
		return nil, err
	}
	b := req.Body
	now := a.Now()
	if b.ExpiresAt != nil && !b.ExpiresAt.After(now) {
		return nil, apierr.Field("body.expires_at", "minimum", "expires_at must be in the future")
	}
	secret := auth.NewAPIKey()
	k := &store.APIKey{ID: store.NewID("key"), UserID: p.UserID, Name: b.Name, Description: b.Description,
		KeyHash: secrets.Hash(secret), KeyPreview: auth.KeyPreview(secret), ExpiresAt: b.ExpiresAt, CreatedAt: now,
		MCPWrites: deref(b.McpWrites)}
	for _, x := range b.Permissions {
		k.Permissions = append(k.Permissions, string(x))
	}
	err = a.Store.Tx(ctx, func(tx *sqlx.Tx) error {
		if err := store.CreateAPIKey(ctx, tx, k); err != nil {
			return err
		}
		return a.audit(ctx, tx, p.TokenOrg, "api_key.create", "api_key", k.ID, k.Name, map[string]any{"permissions": k.Permissions, "mcp_writes": k.MCPWrites})
	})
	if err != nil {
		return nil, err
	}
	o := apiKeyOut(k, now)
	return api.CreateApiKey201JSONResponse{Body: api.ApiKeyWithSecret{Id: o.Id, Name: o.Name, Description: o.Description, KeyPreview: o.KeyPreview,
		Permissions: o.Permissions, Status: api.ApiKeyWithSecretStatus(o.Status), CreatedAt: o.CreatedAt, ExpiresAt: o.ExpiresAt,
		McpWrites: o.McpWrites, Key: secret}, Headers: api.CreateApiKey201ResponseHeaders{CacheControl: noStore, Pragma: noCache}}, nil
}

func (a *Auth) RevokeApiKey(ctx context.Context, req api.RevokeApiKeyRequestObject) (api.RevokeApiKeyResponseObject, error) {
	p, err := a.keyManager(ctx)
	if err != nil {
		return nil, err
	}
	err = a.Store.Tx(ctx, func(tx *sqlx.Tx) error {
		k, err := store.APIKeyForUpdate(ctx, tx, p.UserID, req.KeyId)
		if errors.Is(err, store.ErrNotFound) {
			return apierr.NotFound("api key", req.KeyId)
		} else if err != nil {
			return err
		}
		if err := store.RevokeAPIKey(ctx, tx, k.ID, a.Now()); err != nil {
			return err
		}
		return a.audit(ctx, tx, p.TokenOrg, "api_key.revoke", "api_key", k.ID, k.Name, nil)
	})
	if err != nil {
		return nil, err
	}
	return api.RevokeApiKey204Response{}, nil
}

func (a *Auth) RotateApiKey(ctx context.Context, req api.RotateApiKeyRequestObject) (api.RotateApiKeyResponseObject, error) {
	p, err := a.keyManager(ctx)
	if err != nil {
		return nil, err
	}
	grace := 24 * time.Hour
	if req.Body != nil && req.Body.GracePeriodSeconds != nil {
		grace = time.Duration(*req.Body.GracePeriodSeconds) * time.Second
	}
	now := a.Now()
	var out api.ApiKeyRotation
	err = a.Store.Tx(ctx, func(tx *sqlx.Tx) error {
		old, err := store.APIKeyForUpdate(ctx, tx, p.UserID, req.KeyId)
		if errors.Is(err, store.ErrNotFound) {
			return apierr.NotFound("api key", req.KeyId)
		} else if err != nil {
			return err
		}
		if old.RotatedTo != nil {
			return apierr.Conflict("key_id", "this key was already rotated (to "+*old.RotatedTo+"); rotate the new key instead")
		}
		if old.ExpiresAt != nil && !now.Before(*old.ExpiresAt) {
			return apierr.Conflict("key_id", "this key has expired; create a new one")
		}
		secret := auth.NewAPIKey()
		nk := &store.APIKey{ID: store.NewID("key"), UserID: p.UserID, Name: old.Name, Description: old.Description,
			KeyHash: secrets.Hash(secret), KeyPreview: auth.KeyPreview(secret), Permissions: old.Permissions,
			ExpiresAt: old.ExpiresAt, CreatedAt: now, MCPWrites: old.MCPWrites}
		if err := store.CreateAPIKey(ctx, tx, nk); err != nil {
			return err
		}
		end := now.Add(grace)
		if err := store.EndAPIKeyAt(ctx, tx, old.ID, nk.ID, end); err != nil {
			return err
		}
		if old.ExpiresAt != nil && old.ExpiresAt.Before(end) {
			end = *old.ExpiresAt
		}
		out = api.ApiKeyRotation{Id: nk.ID, OldKeyId: old.ID, OldKey: old.KeyPreview, NewKey: secret,
			KeyPreview: nk.KeyPreview, GracePeriodEnds: end}
		return a.audit(ctx, tx, p.TokenOrg, "api_key.rotate", "api_key", old.ID, old.Name,
			map[string]any{"new_key_id": nk.ID, "grace_period_ends": end})
	})
	if err != nil {
		return nil, err
	}
	return api.RotateApiKey200JSONResponse{Body: out, Headers: api.RotateApiKey200ResponseHeaders{CacheControl: noStore, Pragma: noCache}}, nil
}
