package store

import (
	"context"
	"time"

	"github.com/jmoiron/sqlx"
)

// CreateOrgAPIKey inserts an organization's key k with its service account: a user named
// after the key, member of the organization with role.
func CreateOrgAPIKey(ctx context.Context, tx *sqlx.Tx, k *APIKey, role string) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO platform.users (id, email, name, status, service_org, created_at, updated_at)
		VALUES ($1, $2, $3, 'active', $4, $5, $5)`, k.UserID, k.ID+"@api-keys.invalid", k.Name, *k.OrgID, k.CreatedAt)
	if err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO platform.memberships (organization_id, user_id, role, status, joined_at, created_at, service)
		VALUES ($1, $2, $3, 'active', $4, $4, true)`, *k.OrgID, k.UserID, role, k.CreatedAt); err != nil {
		return err
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
	return r.N, r.First, err
}

// ListOrgAPIKeys pages through an organization's keys that are not revoked, newest first.
func ListOrgAPIKeys(ctx context.Context, q sqlx.ExtContext, orgID string, limit, offset int) ([]APIKey, int, error) {
	var total int
	if err := sqlx.GetContext(ctx, q, &total, `SELECT count(*) FROM platform.api_keys WHERE organization_id = $1 AND revoked_at IS NULL`, orgID); err != nil {
		return nil, 0, err
	}
	out := []APIKey{}
	err := sqlx.SelectContext(ctx, q, &out, `SELECT `+apiKeyCols+` FROM platform.api_keys WHERE organization_id = $1 AND revoked_at IS NULL
		ORDER BY created_at DESC, id LIMIT $2 OFFSET $3`, orgID, limit, offset)
	return out, total, err
}

// RevokeOrgAPIKey revokes an organization's key and disables its service account;
// ErrNotFound when the organization has no such live key.
func RevokeOrgAPIKey(ctx context.Context, q sqlx.QueryerContext, orgID, id string, now time.Time) (*APIKey, error) {
	var k APIKey
	err := sqlx.GetContext(ctx, q, &k, `UPDATE platform.api_keys SET revoked_at = $3
		WHERE organization_id = $1 AND id = $2 AND revoked_at IS NULL RETURNING `+apiKeyCols, orgID, id, now)
	if err != nil {
		return nil, notFound(err)
	}
	var uid string
	err = sqlx.GetContext(ctx, q, &uid, `UPDATE platform.users SET status = 'disabled', updated_at = $2 WHERE id = $1 RETURNING id`, k.UserID, now)
	return &k, err
}
