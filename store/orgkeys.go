package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jmoiron/sqlx"
)

// CreateOrgAPIKey inserts an organization's key k with its service account: a user named
// after the key, member of the organization with role.
func CreateOrgAPIKey(ctx context.Context, tx *sqlx.Tx, k *APIKey, role string) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO platform.users (id, email, name, status, service_org, created_at, updated_at)
		VALUES ($1, $2, $3, 'active', $4, $5, $5)`, k.UserID, k.ID+"@api-keys.invalid", k.Name, *k.OrgID, k.CreatedAt)
	if err != nil {
		return fmt.Errorf("create org api key: %w", err)
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO platform.memberships (organization_id, user_id, role, status, joined_at, created_at, service)
		VALUES ($1, $2, $3, 'active', $4, $4, true)`, *k.OrgID, k.UserID, role, k.CreatedAt); err != nil {
		return fmt.Errorf("create org api key: %w", err)
	}
	return CreateAPIKey(ctx, tx, k)
}

// OrgKeysCreatedSince counts the organization's keys created since since (revoked ones too),
// with the first of them.
func OrgKeysCreatedSince(ctx context.Context, q sqlx.QueryerContext, orgID string, since time.Time) (int, *time.Time, error) {
	var r struct {
		N     int        `db:"n"`
		First *time.Time `db:"first"`
	}
	err := sqlx.GetContext(ctx, q, &r, `SELECT count(*) AS n, min(created_at) AS first FROM platform.api_keys
		WHERE organization_id = $1 AND created_at > $2`, orgID, since)
	return r.N, r.First, wrap("count org keys", err)
}

// OrgAPIKey is an organization's key with the current role of the member it belongs to.
type OrgAPIKey struct {
	APIKey
	OwnerRole string `db:"owner_role"` // as APIKeyOwner.OwnerRole
}

// orgKeyCols are apiKeyCols of the table aliased k, with the owner's role.
const orgKeyCols = `k.id, k.user_id, k.name, k.description, k.key_hash, k.key_preview, k.permissions, k.expires_at, k.revoked_at,
	k.rotated_to, k.last_used_at, k.created_at, k.organization_id, k.created_by, k.mcp_writes, ` + orgKeyOwnerRole + ` AS owner_role`

// ListOrgAPIKeys pages through an organization's keys that are not revoked, newest first.
func ListOrgAPIKeys(ctx context.Context, q sqlx.ExtContext, orgID string, limit, offset int) ([]OrgAPIKey, int, error) {
	var total int
	if err := sqlx.GetContext(ctx, q, &total, `SELECT count(*) FROM platform.api_keys WHERE organization_id = $1 AND revoked_at IS NULL`, orgID); err != nil {
		return nil, 0, fmt.Errorf("list org api keys: %w", err)
	}
	out := []OrgAPIKey{}
	err := sqlx.SelectContext(ctx, q, &out, `SELECT `+orgKeyCols+` FROM platform.api_keys k WHERE k.organization_id = $1 AND k.revoked_at IS NULL
		ORDER BY k.created_at DESC, k.id LIMIT $2 OFFSET $3`, orgID, limit, offset)
	return out, total, wrap("list org api keys", err)
}

// OrgAPIKeyForUpdate locks an organization's key that is not revoked; ErrNotFound when the
// organization has none such.
func OrgAPIKeyForUpdate(ctx context.Context, tx *sqlx.Tx, orgID, id string) (*OrgAPIKey, error) {
	var k OrgAPIKey
	err := sqlx.GetContext(ctx, tx, &k, `SELECT `+orgKeyCols+` FROM platform.api_keys k
		WHERE k.organization_id = $1 AND k.id = $2 AND k.revoked_at IS NULL FOR UPDATE OF k`, orgID, id)
	return &k, wrap("lock org api key", notFound(err))
}

// AssignOrgAPIKey makes userID the member an organization's key belongs to (created_by) and
// returns the key as it is then.
func AssignOrgAPIKey(ctx context.Context, tx *sqlx.Tx, orgID, id, userID string) (*OrgAPIKey, error) {
	var k OrgAPIKey
	err := sqlx.GetContext(ctx, tx, &k, `UPDATE platform.api_keys k SET created_by = $3
		WHERE k.organization_id = $1 AND k.id = $2 RETURNING `+orgKeyCols, orgID, id, userID)
	return &k, wrap("assign org api key", notFound(err))
}

// RevokeOrgAPIKey revokes an organization's key and disables its service account;
// ErrNotFound when the organization has no such live key.
func RevokeOrgAPIKey(ctx context.Context, q sqlx.QueryerContext, orgID, id string, now time.Time) (*APIKey, error) {
	var k APIKey
	err := sqlx.GetContext(ctx, q, &k, `UPDATE platform.api_keys SET revoked_at = $3
		WHERE organization_id = $1 AND id = $2 AND revoked_at IS NULL RETURNING `+apiKeyCols, orgID, id, now)
	if err != nil {
		return nil, fmt.Errorf("revoke org api key: %w", notFound(err))
	}
	var uid string
	err = sqlx.GetContext(ctx, q, &uid, `UPDATE platform.users SET status = 'disabled', updated_at = $2 WHERE id = $1 RETURNING id`, k.UserID, now)
	return &k, wrap("revoke org api key", err)
}
