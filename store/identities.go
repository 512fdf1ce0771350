package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jmoiron/sqlx"
)

// Identity links an account at the external OpenID Connect provider (issuer, subject) to a
// user.
type Identity struct {
	Issuer    string    `db:"issuer"`
	Subject   string    `db:"subject"`
	UserID    string    `db:"user_id"`
	Email     *string   `db:"email"`
	CreatedAt time.Time `db:"created_at"`
}

// UserByIdentity finds the user linked to the provider account (issuer, subject).
func UserByIdentity(ctx context.Context, q sqlx.QueryerContext, issuer, subject string) (*User, error) {
	var u User
	err := sqlx.GetContext(ctx, q, &u, `SELECT u.id, u.email, u.name, u.password_hash, u.status, u.avatar_url, u.two_factor_enabled,
		u.last_active_at, u.created_at, u.updated_at, u.email_verified_at
		FROM platform.identities i JOIN platform.users u ON u.id = i.user_id
		WHERE i.issuer = $1 AND i.subject = $2`, issuer, subject)
	return &u, wrap("read user by identity", notFound(err))
}

// LinkIdentity inserts id. A concurrent link of the same provider account fails with a unique
// violation, which the caller retries.
func LinkIdentity(ctx context.Context, q sqlx.ExtContext, id *Identity) error {
	_, err := sqlx.NamedExecContext(ctx, q, `INSERT INTO platform.identities (issuer, subject, user_id, email, created_at)
		VALUES (:issuer, :subject, :user_id, :email, :created_at)`, id)
	return wrap("link identity", err)
}

// OAuthState is a pending authorization-code flow. Only the SHA-256 of the state travels to
// the database; the PKCE verifier and nonce never leave the server.
type OAuthState struct {
	StateHash    []byte    `db:"state_hash"`
	CodeVerifier string    `db:"code_verifier"`
	Nonce        string    `db:"nonce"`
	ExpiresAt    time.Time `db:"expires_at"`
	CreatedAt    time.Time `db:"created_at"`
}

// CreateOAuthState stores s and drops the flows that expired before s.CreatedAt (abandoned
// sign-ins), so the table does not grow.
func CreateOAuthState(ctx context.Context, tx *sqlx.Tx, st *OAuthState) error {
	if _, err := tx.ExecContext(ctx, `DELETE FROM platform.oauth_states WHERE expires_at <= $1`, st.CreatedAt); err != nil {
		return fmt.Errorf("create oauth state: %w", err)
	}
	_, err := sqlx.NamedExecContext(ctx, tx, `INSERT INTO platform.oauth_states (state_hash, code_verifier, nonce, expires_at, created_at)
		VALUES (:state_hash, :code_verifier, :nonce, :expires_at, :created_at)`, st)
	return wrap("create oauth state", err)
}

// ConsumeOAuthState deletes and returns the flow with this state hash: a state works once,
// even when two callbacks race. live reports whether it had not expired at now.
func ConsumeOAuthState(ctx context.Context, q sqlx.ExtContext, hash []byte, now time.Time) (st *OAuthState, live bool, err error) {
	var row struct {
		OAuthState
		Live bool `db:"live"`
	}
	err = sqlx.GetContext(ctx, q, &row, `DELETE FROM platform.oauth_states WHERE state_hash = $1
		RETURNING state_hash, code_verifier, nonce, expires_at, created_at, expires_at > $2 AS live`, hash, now)
	if err != nil {
		return nil, false, fmt.Errorf("consume oauth state: %w", notFound(err))
	}
	return &row.OAuthState, row.Live, nil
}
