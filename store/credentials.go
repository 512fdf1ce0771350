package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
)

// APIKey is a user API key (never its secret).
type APIKey struct {
	ID          string         `db:"id"`
	UserID      string         `db:"user_id"`
	Name        string         `db:"name"`
	Description *string        `db:"description"`
	KeyHash     []byte         `db:"key_hash"`
	KeyPreview  string         `db:"key_preview"`
	Permissions pq.StringArray `db:"permissions"`
	ExpiresAt   *time.Time     `db:"expires_at"`
	RevokedAt   *time.Time     `db:"revoked_at"`
	RotatedTo   *string        `db:"rotated_to"`
	LastUsedAt  *time.Time     `db:"last_used_at"`
	CreatedAt   time.Time      `db:"created_at"`
	// OrgID and CreatedBy are set for an organization's key (UserID is then its service
	// account).
	OrgID     *string `db:"organization_id"`
	CreatedBy *string `db:"created_by"`
	// MCPWrites lets the key change data through the MCP server (which must allow it too).
	MCPWrites bool `db:"mcp_writes"`
}

const apiKeyCols = `id, user_id, name, description, key_hash, key_preview, permissions, expires_at, revoked_at, rotated_to, last_used_at, created_at,
	organization_id, created_by, mcp_writes`

// CreateAPIKey inserts k.
func CreateAPIKey(ctx context.Context, q sqlx.ExtContext, k *APIKey) error {
	_, err := sqlx.NamedExecContext(ctx, q, `INSERT INTO platform.api_keys (`+apiKeyCols+`)
		VALUES (:id, :user_id, :name, :description, :key_hash, :key_preview, :permissions, :expires_at, :revoked_at, :rotated_to, :last_used_at, :created_at,
			:organization_id, :created_by, :mcp_writes)`, k)
	return wrap("create api key", err)
}

// ListAPIKeys pages through a user's keys that are not revoked, newest first.
func ListAPIKeys(ctx context.Context, q sqlx.ExtContext, userID string, limit, offset int) ([]APIKey, int, error) {
	var total int
	if err := sqlx.GetContext(ctx, q, &total, `SELECT count(*) FROM platform.api_keys WHERE user_id = $1 AND revoked_at IS NULL`, userID); err != nil {
		return nil, 0, fmt.Errorf("list api keys: %w", err)
	}
	var out []APIKey
	err := sqlx.SelectContext(ctx, q, &out, `SELECT `+apiKeyCols+` FROM platform.api_keys WHERE user_id = $1 AND revoked_at IS NULL
		ORDER BY created_at DESC, id LIMIT $2 OFFSET $3`, userID, limit, offset)
	return out, total, wrap("list api keys", err)
}

// APIKeyForUpdate locks a user's key that is not revoked.
func APIKeyForUpdate(ctx context.Context, q sqlx.QueryerContext, userID, id string) (*APIKey, error) {
	var k APIKey
	err := sqlx.GetContext(ctx, q, &k, `SELECT `+apiKeyCols+` FROM platform.api_keys WHERE id = $1 AND user_id = $2 AND revoked_at IS NULL FOR UPDATE`, id, userID)
	return &k, wrap("lock api key", notFound(err))
}

// RevokeAPIKey revokes a key now.
func RevokeAPIKey(ctx context.Context, q sqlx.ExecerContext, id string, now time.Time) error {
	_, err := q.ExecContext(ctx, `UPDATE platform.api_keys SET revoked_at = $2 WHERE id = $1`, id, now)
	return wrap("revoke api key", err)
}

// EndAPIKeyAt sets when a rotated key stops working and what replaced it.
func EndAPIKeyAt(ctx context.Context, q sqlx.ExecerContext, id, rotatedTo string, end time.Time) error {
	_, err := q.ExecContext(ctx, `UPDATE platform.api_keys SET expires_at = LEAST(COALESCE(expires_at, $3), $3), rotated_to = $2 WHERE id = $1`, id, rotatedTo, end)
	return wrap("end api key", err)
}

// RefreshToken is a stored (hashed) refresh token.
type RefreshToken struct {
	ID        string     `db:"id"`
	TokenHash []byte     `db:"token_hash"`
	FamilyID  string     `db:"family_id"`
	UserID    string     `db:"user_id"`
	OrgID     *string    `db:"organization_id"`
	ExpiresAt time.Time  `db:"expires_at"`
	UsedAt    *time.Time `db:"used_at"`
	RevokedAt *time.Time `db:"revoked_at"`
	CreatedAt time.Time  `db:"created_at"`
	// AccessTokenID and AccessExpiresAt are the `jti` and expiry of the access token issued
	// with this refresh token: ending the family revokes it too.
	AccessTokenID   *string    `db:"access_token_id"`
	AccessExpiresAt *time.Time `db:"access_expires_at"`
}

// CreateRefreshToken inserts t.
func CreateRefreshToken(ctx context.Context, q sqlx.ExtContext, t *RefreshToken) error {
	_, err := sqlx.NamedExecContext(ctx, q, `INSERT INTO platform.refresh_tokens (id, token_hash, family_id, user_id, organization_id, expires_at, created_at,
		access_token_id, access_expires_at)
		VALUES (:id, :token_hash, :family_id, :user_id, :organization_id, :expires_at, :created_at, :access_token_id, :access_expires_at)`, t)
	return wrap("create refresh token", err)
}

// RefreshTokenForUpdate locks the token with this hash.
func RefreshTokenForUpdate(ctx context.Context, q sqlx.QueryerContext, hash []byte) (*RefreshToken, error) {
	var t RefreshToken
	err := sqlx.GetContext(ctx, q, &t, `SELECT id, token_hash, family_id, user_id, organization_id, expires_at, used_at, revoked_at, created_at
		FROM platform.refresh_tokens WHERE token_hash = $1 FOR UPDATE`, hash)
	return &t, wrap("lock refresh token", notFound(err))
}

// SpendRefreshToken marks a token used.
func SpendRefreshToken(ctx context.Context, q sqlx.ExecerContext, id string, now time.Time) error {
	_, err := q.ExecContext(ctx, `UPDATE platform.refresh_tokens SET used_at = $2 WHERE id = $1`, id, now)
	return wrap("spend refresh token", err)
}

// RevokeRefreshFamily revokes every token of a family, and puts the access tokens issued with
// them that have not expired on the deny-list (RevokedAccessTokens). It answers those access
// tokens: once the transaction commits, give them to Store.AccessRevoked so that this server
// refuses them at once (the others hear it from the database).
func RevokeRefreshFamily(ctx context.Context, q sqlx.ExtContext, familyID string, now time.Time) ([]RevokedAccess, error) {
	if _, err := q.ExecContext(ctx, `UPDATE platform.refresh_tokens SET revoked_at = $2 WHERE family_id = $1 AND revoked_at IS NULL`, familyID, now); err != nil {
		return nil, fmt.Errorf("revoke refresh token family: %w", err)
	}
	var out []RevokedAccess
	err := sqlx.SelectContext(ctx, q, &out, `INSERT INTO platform.revoked_access_tokens (jti, expires_at)
		SELECT access_token_id, access_expires_at FROM platform.refresh_tokens
		WHERE family_id = $1 AND access_token_id IS NOT NULL AND access_expires_at > $2
		ON CONFLICT (jti) DO NOTHING RETURNING jti, expires_at`, familyID, now)
	return out, wrap("revoke refresh token family", err)
}

// Invitation is an invitation to join an organization.
type Invitation struct {
	ID         string     `db:"id"`
	OrgID      string     `db:"organization_id"`
	UserID     string     `db:"user_id"`
	Email      string     `db:"email"`
	Name       *string    `db:"name"`
	Role       string     `db:"role"`
	Message    *string    `db:"message"`
	TokenHash  []byte     `db:"token_hash"`
	InvitedBy  *string    `db:"invited_by"`
	Status     string     `db:"status"`
	ExpiresAt  time.Time  `db:"expires_at"`
	AcceptedAt *time.Time `db:"accepted_at"`
	CreatedAt  time.Time  `db:"created_at"`
	OrgName    string     `db:"organization_name"`
	// DeliveredByEmail: the token went only to the invited mailbox, never to the inviter.
	DeliveredByEmail bool `db:"delivered_by_email"`
	// TeamIDs are the teams accepting joins (as member).
	TeamIDs pq.StringArray `db:"team_ids"`
}

const invitationCols = `i.id, i.organization_id, i.user_id, i.email, i.name, i.role, i.message, i.token_hash, i.invited_by,
	i.status, i.expires_at, i.accepted_at, i.created_at, o.name AS organization_name, i.delivered_by_email, i.team_ids`

// CreateInvitation inserts inv, withdrawing earlier pending invitations of the same user to the
// same organization (their ids are returned).
func CreateInvitation(ctx context.Context, q sqlx.ExtContext, inv *Invitation) (revoked []string, err error) {
	if err := sqlx.SelectContext(ctx, q, &revoked, `UPDATE platform.invitations SET status = 'revoked'
		WHERE organization_id = $1 AND user_id = $2 AND status = 'pending' RETURNING id`, inv.OrgID, inv.UserID); err != nil {
		return nil, fmt.Errorf("create invitation: %w", err)
	}
	_, err = sqlx.NamedExecContext(ctx, q, `INSERT INTO platform.invitations (id, organization_id, user_id, email, name, role, message, token_hash,
		invited_by, status, expires_at, created_at, delivered_by_email, team_ids)
		VALUES (:id, :organization_id, :user_id, :email, :name, :role, :message, :token_hash, :invited_by, :status, :expires_at, :created_at,
		:delivered_by_email, :team_ids)`, inv)
	return revoked, wrap("create invitation", err)
}

// Invited is what making an invitation changed besides the invitation: the membership it
// replaced (nil: none), whether the invited account was made for it, and the pending
// invitations it revoked.
type Invited struct {
	Before      *OrgUser
	UserCreated bool
	Revoked     []string
}

// WithdrawInvitation undoes an invitation whose mail could not be sent, as far as nothing
// else changed since: the invitation goes, the membership is what it was, an account made for
// it goes, and the invitations it revoked are pending again.
func WithdrawInvitation(ctx context.Context, tx *sqlx.Tx, inv *Invitation, was Invited) error {
	if _, err := tx.ExecContext(ctx, `DELETE FROM platform.invitations WHERE id = $1 AND status = 'pending'`, inv.ID); err != nil {
		return fmt.Errorf("withdraw invitation: %w", err)
	}
	var err error
	if b := was.Before; b == nil {
		_, err = tx.ExecContext(ctx, `DELETE FROM platform.memberships WHERE organization_id = $1 AND user_id = $2 AND status = 'invited'`,
			inv.OrgID, inv.UserID)
	} else {
		_, err = tx.ExecContext(ctx, `UPDATE platform.memberships SET role = $3, status = $4, joined_at = $5
			WHERE organization_id = $1 AND user_id = $2 AND status = 'invited'`, inv.OrgID, inv.UserID, b.Role, b.Status, b.JoinedAt)
	}
	if err != nil {
		return fmt.Errorf("withdraw invitation: %w", err)
	}
	if len(was.Revoked) > 0 {
		if _, err := tx.ExecContext(ctx, `UPDATE platform.invitations SET status = 'pending' WHERE id = ANY($1) AND status = 'revoked'`,
			pq.StringArray(was.Revoked)); err != nil {
			return fmt.Errorf("withdraw invitation: %w", err)
		}
	}
	if was.UserCreated {
		_, err = tx.ExecContext(ctx, `DELETE FROM platform.users u WHERE id = $1 AND status = 'invited'
			AND NOT EXISTS (SELECT 1 FROM platform.memberships m WHERE m.user_id = u.id)
			AND NOT EXISTS (SELECT 1 FROM platform.invitations i WHERE i.user_id = u.id)`, inv.UserID)
	}
	return wrap("withdraw invitation", err)
}

// InvitationByToken finds an invitation by the hash of its token; lock takes a row lock.
func InvitationByToken(ctx context.Context, q sqlx.QueryerContext, hash []byte, lock bool) (*Invitation, error) {
	var inv Invitation
	qs := `SELECT ` + invitationCols + ` FROM platform.invitations i JOIN platform.organizations o ON o.id = i.organization_id WHERE i.token_hash = $1`
	if lock {
		qs += ` FOR UPDATE OF i`
	}
	err := sqlx.GetContext(ctx, q, &inv, qs, hash)
	return &inv, wrap("read invitation", notFound(err))
}

// AcceptInvitation marks an invitation used.
func AcceptInvitation(ctx context.Context, q sqlx.ExecerContext, id string, now time.Time) error {
	_, err := q.ExecContext(ctx, `UPDATE platform.invitations SET status = 'accepted', accepted_at = $2 WHERE id = $1`, id, now)
	return wrap("accept invitation", err)
}

// ActivateUser sets an invited placeholder's name and password and makes it active, with its
// address verified at verifiedAt (nil: not verified).
func ActivateUser(ctx context.Context, q sqlx.ExecerContext, id, name, passwordHash string, verifiedAt *time.Time, now time.Time) error {
	_, err := q.ExecContext(ctx, `UPDATE platform.users SET name = $2, password_hash = $3, status = 'active', email_verified_at = $4, updated_at = $5
		WHERE id = $1`, id, name, passwordHash, verifiedAt, now)
	return wrap("activate user", err)
}
