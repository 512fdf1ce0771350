package store

import (
	"context"
	"crypto/subtle"
	"fmt"
	"time"

	"github.com/jmoiron/sqlx"
)

// SetEmailVerified marks the user's current address verified at now (kept when already set).
func SetEmailVerified(ctx context.Context, q sqlx.ExecerContext, userID string, now time.Time) error {
	_, err := q.ExecContext(ctx, `UPDATE platform.users SET email_verified_at = COALESCE(email_verified_at, $2) WHERE id = $1`, userID, now)
	return wrap("set email verified", err)
}

// ReleaseUnverifiedAccount takes an address away from the unverified account that held it, for
// its mailbox's proven owner: the account is disabled, its address replaced by one nobody can
// receive mail at, and its refresh tokens, browser sessions and API keys revoked. Its active memberships stay
// with it; MovePendingInvitations hands the pending ones on.
func ReleaseUnverifiedAccount(ctx context.Context, tx *sqlx.Tx, userID string, now time.Time) error {
	for _, st := range []string{
		`UPDATE platform.users SET status = 'disabled', email = id || '@released.invalid', updated_at = $2 WHERE id = $1`,
		`UPDATE platform.refresh_tokens SET revoked_at = $2 WHERE user_id = $1 AND revoked_at IS NULL`,
		// its access tokens too (the deny-list; every server hears of it from the database)
		`INSERT INTO platform.revoked_access_tokens (jti, expires_at) SELECT access_token_id, access_expires_at
			FROM platform.refresh_tokens WHERE user_id = $1 AND access_token_id IS NOT NULL AND access_expires_at > $2
			ON CONFLICT (jti) DO NOTHING`,
		`UPDATE platform.api_keys SET revoked_at = $2 WHERE user_id = $1 AND revoked_at IS NULL`,
		`UPDATE platform.browser_sessions SET revoked_at = $2 WHERE user_id = $1 AND revoked_at IS NULL`,
	} {
		if _, err := tx.ExecContext(ctx, st, userID, now); err != nil {
			return fmt.Errorf("release unverified account: %w", err)
		}
	}
	_, err := tx.ExecContext(ctx, `DELETE FROM platform.email_verifications WHERE user_id = $1`, userID)
	return wrap("release unverified account", err)
}

// MovePendingInvitations moves the pending invitations of a user, and the invited memberships
// they hold, to another user.
func MovePendingInvitations(ctx context.Context, tx *sqlx.Tx, fromUserID, toUserID string) error {
	for _, st := range []string{
		`UPDATE platform.memberships SET user_id = $2 WHERE user_id = $1 AND status = 'invited'`,
		`UPDATE platform.invitations SET user_id = $2 WHERE user_id = $1 AND status = 'pending'`,
	} {
		if _, err := tx.ExecContext(ctx, st, fromUserID, toUserID); err != nil {
			return fmt.Errorf("move pending invitations: %w", err)
		}
	}
	return nil
}

// EmailVerificationTries is how many wrong codes end a mailed code.
const EmailVerificationTries = 5

// PutEmailVerification stores the hash of a newly mailed code for the user's address,
// replacing any earlier one.
func PutEmailVerification(ctx context.Context, q sqlx.ExecerContext, userID, email string, codeHash []byte, expires, now time.Time) error {
	_, err := q.ExecContext(ctx, `INSERT INTO platform.email_verifications (user_id, email, code_hash, attempts, expires_at, created_at)
		VALUES ($1, $2, $3, 0, $4, $5)
		ON CONFLICT (user_id) DO UPDATE SET email = EXCLUDED.email, code_hash = EXCLUDED.code_hash, attempts = 0,
			expires_at = EXCLUDED.expires_at, created_at = EXCLUDED.created_at`, userID, email, codeHash, expires, now)
	return wrap("put email verification", err)
}

// ConsumeEmailVerification checks a code against the user's pending one: it must match, be
// unexpired at now, have been mailed to email (the user's current address) and not have used
// up its tries. A match deletes the code; a mismatch counts a try.
func ConsumeEmailVerification(ctx context.Context, tx *sqlx.Tx, userID, email string, codeHash []byte, now time.Time) (bool, error) {
	var v struct {
		Email     string    `db:"email"`
		CodeHash  []byte    `db:"code_hash"`
		Attempts  int       `db:"attempts"`
		ExpiresAt time.Time `db:"expires_at"`
	}
	err := tx.GetContext(ctx, &v, `SELECT email, code_hash, attempts, expires_at FROM platform.email_verifications
		WHERE user_id = $1 FOR UPDATE`, userID)
	if err != nil {
		return false, fmt.Errorf("consume email verification: %w", notFound(err))
	}
	if v.Attempts >= EmailVerificationTries || !now.Before(v.ExpiresAt) || v.Email != email {
		return false, nil
	}
	if subtle.ConstantTimeCompare(v.CodeHash, codeHash) != 1 {
		_, err := tx.ExecContext(ctx, `UPDATE platform.email_verifications SET attempts = attempts + 1 WHERE user_id = $1`, userID)
		return false, wrap("consume email verification", err)
	}
	_, err = tx.ExecContext(ctx, `DELETE FROM platform.email_verifications WHERE user_id = $1`, userID)
	return err == nil, wrap("consume email verification", err)
}

// Login throttling: after LoginFreeFailures failures in a row for one address, each further
// attempt waits LoginBackoff(failures), doubling from a second to LoginMaxBackoff.
const (
	LoginFreeFailures = 5
	LoginMaxBackoff   = 15 * time.Minute
	// loginFailureMemory: a failure count untouched this long starts again from zero.
	loginFailureMemory = 24 * time.Hour
)

// LoginBackoff is the wait after the failures-th failure in a row (0 below the threshold).
func LoginBackoff(failures int) time.Duration {
	if failures < LoginFreeFailures {
		return 0
	}
	n := failures - LoginFreeFailures
	if n >= 10 { // 2^10 s > 15 min
		return LoginMaxBackoff
	}
	return min(time.Duration(1<<n)*time.Second, LoginMaxBackoff)
}

// LoginGate decides whether a sign-in for the address key may be tried at now. Once the free
// failures are used, trying reserves the next wait at once (the row's update is atomic), so
// concurrent attempts cannot all slip through the same opening. It returns the time until
// which the caller must wait, or the zero time when the attempt may go on.
func LoginGate(ctx context.Context, q sqlx.QueryerContext, key string, now time.Time) (time.Time, error) {
	var until time.Time
	err := sqlx.GetContext(ctx, q, &until, `WITH reserve AS (
			UPDATE platform.login_failures SET updated_at = $2,
				blocked_until = $2::timestamptz + make_interval(secs => LEAST(power(2, failures + 1 - $4), $3))
			WHERE email_key = $1 AND blocked_until <= $2 AND failures >= $4 AND updated_at >= $2::timestamptz - make_interval(secs => $5)
			RETURNING email_key)
		SELECT blocked_until FROM platform.login_failures
		WHERE email_key = $1 AND blocked_until > $2 AND NOT EXISTS (SELECT 1 FROM reserve)`,
		key, now, LoginMaxBackoff.Seconds(), LoginFreeFailures, loginFailureMemory.Seconds())
	if err = notFound(err); err == ErrNotFound {
		return time.Time{}, nil
	}
	return until, wrap("check login gate", err)
}

// LoginFailed counts a failed sign-in for key and sets the wait it earns.
func LoginFailed(ctx context.Context, q sqlx.ExtContext, key string, now time.Time) error {
	var failures int
	err := sqlx.GetContext(ctx, q, &failures, `INSERT INTO platform.login_failures AS f (email_key, failures, blocked_until, updated_at)
		VALUES ($1, 1, $2, $2)
		ON CONFLICT (email_key) DO UPDATE SET
			failures = CASE WHEN f.updated_at < $2::timestamptz - make_interval(secs => $3) THEN 1 ELSE f.failures + 1 END,
			updated_at = $2
		RETURNING failures`, key, now, loginFailureMemory.Seconds())
	if err != nil {
		return fmt.Errorf("record login failure: %w", err)
	}
	_, err = q.ExecContext(ctx, `UPDATE platform.login_failures SET blocked_until = $2 WHERE email_key = $1`,
		key, now.Add(LoginBackoff(failures)))
	return wrap("record login failure", err)
}

// LoginSucceeded forgets the failures of key.
func LoginSucceeded(ctx context.Context, q sqlx.ExecerContext, key string) error {
	_, err := q.ExecContext(ctx, `DELETE FROM platform.login_failures WHERE email_key = $1`, key)
	return wrap("record login success", err)
}

// SweepLoginFailures deletes the counts not touched since before.
func SweepLoginFailures(ctx context.Context, q sqlx.ExecerContext, before time.Time) error {
	_, err := q.ExecContext(ctx, `DELETE FROM platform.login_failures WHERE updated_at < $1 AND blocked_until < $1`, before)
	return wrap("sweep login failures", err)
}
