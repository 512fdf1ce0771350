package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jmoiron/sqlx"
)

// TOTP is a user's two-factor state (secrets sealed).
type TOTP struct {
	Enabled  bool   `db:"two_factor_enabled"`
	Secret   []byte `db:"totp_secret"`
	Pending  []byte `db:"totp_pending"`
	LastStep *int64 `db:"totp_last_step"`
}

// LockTOTP reads the user's two-factor state and locks it until the transaction ends (a code
// is checked and spent at once).
func LockTOTP(ctx context.Context, q sqlx.QueryerContext, userID string) (*TOTP, error) {
	var t TOTP
	err := sqlx.GetContext(ctx, q, &t, `SELECT two_factor_enabled, totp_secret, totp_pending, totp_last_step
		FROM platform.users WHERE id = $1 FOR UPDATE`, userID)
	return &t, wrap("lock totp", notFound(err))
}

// SetPendingTOTP keeps a secret waiting for its confirming code.
func SetPendingTOTP(ctx context.Context, q sqlx.ExecerContext, userID string, sealed []byte, now time.Time) error {
	_, err := q.ExecContext(ctx, `UPDATE platform.users SET totp_pending = $2, updated_at = $3 WHERE id = $1`, userID, sealed, now)
	return wrap("set pending totp", err)
}

// EnableTOTP makes the pending secret the user's second factor, step already spent.
func EnableTOTP(ctx context.Context, q sqlx.ExecerContext, userID string, step int64, now time.Time) error {
	_, err := q.ExecContext(ctx, `UPDATE platform.users SET totp_secret = totp_pending, totp_pending = NULL, totp_last_step = $2,
		two_factor_enabled = true, updated_at = $3 WHERE id = $1`, userID, step, now)
	return wrap("enable totp", err)
}

// SpendTOTPStep records the time step of an accepted code.
func SpendTOTPStep(ctx context.Context, q sqlx.ExecerContext, userID string, step int64) error {
	_, err := q.ExecContext(ctx, `UPDATE platform.users SET totp_last_step = $2 WHERE id = $1`, userID, step)
	return wrap("spend totp step", err)
}

// DisableTOTP removes the user's second factor and recovery codes.
func DisableTOTP(ctx context.Context, q sqlx.ExecerContext, userID string, now time.Time) error {
	if _, err := q.ExecContext(ctx, `UPDATE platform.users SET totp_secret = NULL, totp_pending = NULL, totp_last_step = NULL,
		two_factor_enabled = false, updated_at = $2 WHERE id = $1`, userID, now); err != nil {
		return fmt.Errorf("disable totp: %w", err)
	}
	_, err := q.ExecContext(ctx, `DELETE FROM platform.recovery_codes WHERE user_id = $1`, userID)
	return wrap("disable totp", err)
}

// ReplaceRecoveryCodes makes hashes the user's recovery codes.
func ReplaceRecoveryCodes(ctx context.Context, q sqlx.ExecerContext, userID string, hashes [][]byte, now time.Time) error {
	if _, err := q.ExecContext(ctx, `DELETE FROM platform.recovery_codes WHERE user_id = $1`, userID); err != nil {
		return fmt.Errorf("replace recovery codes: %w", err)
	}
	for _, h := range hashes {
		if _, err := q.ExecContext(ctx, `INSERT INTO platform.recovery_codes (user_id, code_hash, created_at) VALUES ($1, $2, $3)`, userID, h, now); err != nil {
			return fmt.Errorf("replace recovery codes: %w", err)
		}
	}
	return nil
}

// UseRecoveryCode spends an unused recovery code; false when there is none such.
func UseRecoveryCode(ctx context.Context, q sqlx.ExecerContext, userID string, hash []byte, now time.Time) (bool, error) {
	res, err := q.ExecContext(ctx, `UPDATE platform.recovery_codes SET used_at = $3 WHERE user_id = $1 AND code_hash = $2 AND used_at IS NULL`,
		userID, hash, now)
	if err != nil {
		return false, fmt.Errorf("use recovery code: %w", err)
	}
	n, _ := res.RowsAffected()
	return n == 1, nil
}
