package store

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jmoiron/sqlx"
)

// User is a person with an account.
type User struct {
	ID               string     `db:"id"`
	Email            string     `db:"email"`
	Name             string     `db:"name"`
	PasswordHash     *string    `db:"password_hash"`
	Status           string     `db:"status"`
	AvatarURL        *string    `db:"avatar_url"`
	TwoFactorEnabled bool       `db:"two_factor_enabled"`
	LastActiveAt     *time.Time `db:"last_active_at"`
	CreatedAt        time.Time  `db:"created_at"`
	UpdatedAt        time.Time  `db:"updated_at"`
	// EmailVerifiedAt is when the address was proven to be the user's; nil: not proven.
	EmailVerifiedAt *time.Time `db:"email_verified_at"`
}

const userCols = `id, email, name, password_hash, status, avatar_url, two_factor_enabled, last_active_at, created_at, updated_at, email_verified_at`

// UserByEmail finds a user by email, case-insensitively.
func UserByEmail(ctx context.Context, q sqlx.QueryerContext, email string) (*User, error) {
	var u User
	err := sqlx.GetContext(ctx, q, &u, `SELECT `+userCols+` FROM platform.users WHERE lower(email) = lower($1)`, email)
	return &u, wrap("read user by email", notFound(err))
}

// UserByID finds a user.
func UserByID(ctx context.Context, q sqlx.QueryerContext, id string) (*User, error) {
	var u User
	err := sqlx.GetContext(ctx, q, &u, `SELECT `+userCols+` FROM platform.users WHERE id = $1`, id)
	return &u, wrap("read user", notFound(err))
}

// CreateUser inserts u.
func CreateUser(ctx context.Context, q sqlx.ExtContext, u *User) error {
	_, err := sqlx.NamedExecContext(ctx, q, `INSERT INTO platform.users (`+userCols+`)
		VALUES (:id, :email, :name, :password_hash, :status, :avatar_url, :two_factor_enabled, :last_active_at, :created_at, :updated_at, :email_verified_at)`, u)
	return wrap("create user", err)
}

// TouchUser records activity (sign-in, refresh).
func TouchUser(ctx context.Context, q sqlx.ExecerContext, id string, now time.Time) error {
	_, err := q.ExecContext(ctx, `UPDATE platform.users SET last_active_at = $2 WHERE id = $1`, id, now)
	return wrap("touch user", err)
}

// Role is the user's role in an organization where the membership is active.
func Role(ctx context.Context, q sqlx.QueryerContext, orgID, userID string) (string, error) {
	var role string
	err := sqlx.GetContext(ctx, q, &role, `SELECT role FROM platform.memberships
		WHERE organization_id = $1 AND user_id = $2 AND status = 'active'`, orgID, userID)
	return role, wrap("read member role", notFound(err))
}

// OrgMembership is one organization of a user.
type OrgMembership struct {
	OrgID string `db:"organization_id"`
	Name  string `db:"name"`
	Slug  string `db:"slug"`
	Role  string `db:"role"`
}

// UserOrganizations lists the active memberships of a user, oldest first.
func UserOrganizations(ctx context.Context, q sqlx.QueryerContext, userID string) ([]OrgMembership, error) {
	var ms []OrgMembership
	err := sqlx.SelectContext(ctx, q, &ms, `SELECT m.organization_id, o.name, o.slug, m.role
		FROM platform.memberships m JOIN platform.organizations o ON o.id = m.organization_id
		WHERE m.user_id = $1 AND m.status = 'active' ORDER BY m.joined_at, o.created_at`, userID)
	return ms, wrap("list user organizations", err)
}

// AddMembership inserts or replaces a membership.
func AddMembership(ctx context.Context, q sqlx.ExecerContext, orgID, userID, role, status string, joined *time.Time, now time.Time) error {
	_, err := q.ExecContext(ctx, `INSERT INTO platform.memberships (organization_id, user_id, role, status, joined_at, created_at)
		VALUES ($1, $2, $3, $4, $5, $6)
		ON CONFLICT (organization_id, user_id) DO UPDATE SET role = EXCLUDED.role, status = EXCLUDED.status, joined_at = EXCLUDED.joined_at`,
		orgID, userID, role, status, joined, now)
	return wrap("add membership", err)
}

// Emit writes an event to the outbox; call it in the transaction of the change.
func Emit(ctx context.Context, q sqlx.ExecerContext, eventType, orgID string, payload any, at time.Time) error {
	b, err := json.Marshal(payload)
	if err != nil {
		return fmt.Errorf("emit event: %w", err)
	}
	_, err = q.ExecContext(ctx, `INSERT INTO platform.outbox (event_type, organization_id, payload, created_at) VALUES ($1, $2, $3, $4)`,
		eventType, nullable(orgID), string(b), at)
	return wrap("emit event", err)
}

// BootstrapNeeded takes the bootstrap lock for the rest of transaction tx (one replica
// bootstraps; the others wait here and then find the user) and says whether no user exists yet.
func BootstrapNeeded(ctx context.Context, tx *sqlx.Tx) (bool, error) {
	if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock(hashtext('platform.bootstrap'))`); err != nil {
		return false, fmt.Errorf("check bootstrap: %w", err)
	}
	var n int
	err := tx.GetContext(ctx, &n, `SELECT count(*) FROM platform.users`)
	return n == 0, wrap("check bootstrap", err)
}
