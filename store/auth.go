package store

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
)

// SigningKey is an RS256 key that signs access tokens.
type SigningKey struct {
	Kid        string     `db:"kid"`
	PrivatePEM string     `db:"private_pem"`
	CreatedAt  time.Time  `db:"created_at"`
	RetiredAt  *time.Time `db:"retired_at"`
}

// SigningKeys returns the active key(s) and the keys retired after since, newest first.
func SigningKeys(ctx context.Context, q sqlx.ExtContext, since time.Time) ([]SigningKey, error) {
	var ks []SigningKey
	err := sqlx.SelectContext(ctx, q, &ks, `SELECT kid, private_pem, created_at, retired_at FROM platform.signing_keys
		WHERE retired_at IS NULL OR retired_at > $1 ORDER BY created_at DESC`, since)
	return ks, wrap("read signing keys", err)
}

// AddSigningKey stores a new key. With retireOthers, every other active key is retired now
// (rotation); without it the key is only added when no active key exists (first start, safe
// when several replicas start at once). It reports whether the key was added.
func AddSigningKey(ctx context.Context, tx *sqlx.Tx, k SigningKey, retireOthers bool) (bool, error) {
	if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock(hashtext('platform.signing_keys'))`); err != nil {
		return false, fmt.Errorf("add signing key: %w", err)
	}
	if retireOthers {
		if _, err := tx.ExecContext(ctx, `UPDATE platform.signing_keys SET retired_at = $1 WHERE retired_at IS NULL`, k.CreatedAt); err != nil {
			return false, fmt.Errorf("add signing key: %w", err)
		}
	} else {
		var n int
		if err := tx.GetContext(ctx, &n, `SELECT count(*) FROM platform.signing_keys WHERE retired_at IS NULL`); err != nil {
			return false, fmt.Errorf("add signing key: %w", err)
		}
		if n > 0 {
			return false, nil
		}
	}
	_, err := tx.ExecContext(ctx, `INSERT INTO platform.signing_keys (kid, private_pem, created_at) VALUES ($1, $2, $3)`, k.Kid, k.PrivatePEM, k.CreatedAt)
	return err == nil, wrap("add signing key", err)
}

// APIKeyOwner is what authenticating with an API key needs.
type APIKeyOwner struct {
	KeyID       string         `db:"id"`
	UserID      string         `db:"user_id"`
	Email       string         `db:"email"`
	Permissions pq.StringArray `db:"permissions"`
	Service     bool           `db:"service"`         // an organization's key
	OrgID       *string        `db:"organization_id"` // an organization's key: its organization
	// OwnerRole is, for an organization's key, the role of the member it belongs to
	// (created_by) in the key's organization: empty when they are not an active member with
	// an active account (removed, disabled, deleted).
	OwnerRole string `db:"owner_role"`
}

// orgKeyOwnerRole is the SQL of APIKeyOwner.OwnerRole for the key k: one primary-key
// lookup of a membership and of a user.
const orgKeyOwnerRole = `COALESCE((SELECT m.role FROM platform.memberships m JOIN platform.users o ON o.id = m.user_id
		WHERE m.organization_id = k.organization_id AND m.user_id = k.created_by AND m.status = 'active' AND NOT m.service
		  AND o.status = 'active'), '')`

// APIKeyByHash finds a live key (not revoked, not expired at now) of an active user. It runs
// on every request made with a key, so it is a prepared statement, and a key found is kept
// (s.apiKeys, as OrgSecurity is) while no control-plane change is notified: revoking a key,
// changing its expiry or permissions, a member's removal or role change and a user's
// suspension all notify (and this replica says so itself before it answers such a write), so
// the request after one reads the key again. The key's expiry is compared with now on every
// use; a key not found is not kept (a new one works at once).
func (s *Store) APIKeyByHash(ctx context.Context, hash []byte, now time.Time) (*APIKeyOwner, error) {
	if k, ok := s.apiKeys.get(&s.look, string(hash)); ok && (k.ExpiresAt == nil || k.ExpiresAt.After(now)) {
		o := k.APIKeyOwner
		o.Permissions = slices.Clone(o.Permissions)
		return &o, nil
	}
	gen := s.look.gen.Load()
	st, err := s.prepared(ctx, `SELECT k.id, k.user_id, u.email, k.permissions, k.organization_id IS NOT NULL AS service,
		k.organization_id, `+orgKeyOwnerRole+` AS owner_role, k.expires_at
		FROM platform.api_keys k JOIN platform.users u ON u.id = k.user_id
		WHERE k.key_hash = $1 AND k.revoked_at IS NULL AND (k.expires_at IS NULL OR k.expires_at > $2)
		  AND u.status = 'active'`)
	if err != nil {
		return nil, fmt.Errorf("read api key: %w", err)
	}
	var k liveKey
	if err = st.GetContext(ctx, &k, hash, now); err == nil {
		s.apiKeys.put(&s.look, string(hash), k, gen)
	}
	o := k.APIKeyOwner
	o.Permissions = slices.Clone(o.Permissions)
	return &o, wrap("read api key", notFound(err))
}

// liveKey is a key APIKeyByHash found, with its expiry.
type liveKey struct {
	APIKeyOwner
	ExpiresAt *time.Time `db:"expires_at"`
}

// CallerLive reports whether a user is still active and, for a key (keyID not empty), the key
// still live at now, and for a browser session (sessionID not empty) the session not ended:
// what a long-lived stream re-checks of the credential it was opened with.
func CallerLive(ctx context.Context, q sqlx.QueryerContext, userID, keyID, sessionID string, now time.Time) (bool, error) {
	var ok bool
	err := sqlx.GetContext(ctx, q, &ok, `SELECT EXISTS (SELECT 1 FROM platform.users u WHERE u.id = $1 AND u.status = 'active'
		AND ($2 = '' OR EXISTS (SELECT 1 FROM platform.api_keys k WHERE k.id = $2 AND k.user_id = u.id AND k.revoked_at IS NULL
			AND (k.expires_at IS NULL OR k.expires_at > $3)))
		AND ($4 = '' OR EXISTS (SELECT 1 FROM platform.browser_sessions s WHERE s.id = $4 AND s.user_id = u.id AND s.revoked_at IS NULL
			AND s.expires_at > $3)))`, userID, keyID, now, sessionID)
	return ok, wrap("check caller", err)
}

// OrgKeyOwnerRole is the organization of an organization's key id and APIKeyOwner.OwnerRole
// (what a long-lived stream opened with the key re-checks).
func OrgKeyOwnerRole(ctx context.Context, q sqlx.QueryerContext, id string) (orgID, role string, err error) {
	var r struct {
		OrgID string `db:"organization_id"`
		Role  string `db:"owner_role"`
	}
	err = sqlx.GetContext(ctx, q, &r, `SELECT k.organization_id, `+orgKeyOwnerRole+` AS owner_role
		FROM platform.api_keys k WHERE k.id = $1 AND k.organization_id IS NOT NULL`, id)
	return r.OrgID, r.Role, wrap("read org key owner role", notFound(err))
}

// TouchAPIKey records a use of the key.
func TouchAPIKey(ctx context.Context, q sqlx.ExtContext, id string, now time.Time) error {
	_, err := q.ExecContext(ctx, `UPDATE platform.api_keys SET last_used_at = $2 WHERE id = $1`, id, now)
	return wrap("touch api key", err)
}
