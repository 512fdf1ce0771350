package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jmoiron/sqlx"
)

// BrowserSession is a signed-in browser (never its token).
type BrowserSession struct {
	ID         string     `db:"id"`
	TokenHash  []byte     `db:"token_hash"`
	UserID     string     `db:"user_id"`
	OrgID      *string    `db:"organization_id"`
	CreatedAt  time.Time  `db:"created_at"`
	LastSeenAt time.Time  `db:"last_seen_at"`
	ExpiresAt  time.Time  `db:"expires_at"`
	RevokedAt  *time.Time `db:"revoked_at"`
	IP         *string    `db:"ip_address"`
	UserAgent  *string    `db:"user_agent"`
}

// SessionUser is a live session with its user's facts, as the authenticator needs them.
type SessionUser struct {
	BrowserSession
	Email string `db:"email"`
}

const sessionCols = `id, token_hash, user_id, organization_id, created_at, last_seen_at, expires_at, revoked_at, ip_address, user_agent`

// CreateBrowserSession inserts s.
func CreateBrowserSession(ctx context.Context, q sqlx.ExtContext, s *BrowserSession) error {
	_, err := sqlx.NamedExecContext(ctx, q, `INSERT INTO platform.browser_sessions (`+sessionCols+`)
		VALUES (:id, :token_hash, :user_id, :organization_id, :created_at, :last_seen_at, :expires_at, :revoked_at, :ip_address, :user_agent)`, s)
	return wrap("create browser session", err)
}

// BrowserSessionByHash finds the session with this token hash that is neither revoked nor past
// its absolute end at now, of an active user (idleness is the caller's to judge: it depends
// on the organization's settings). ErrNotFound otherwise.
func BrowserSessionByHash(ctx context.Context, q sqlx.QueryerContext, hash []byte, now time.Time) (*SessionUser, error) {
	var s SessionUser
	err := sqlx.GetContext(ctx, q, &s, `SELECT s.id, s.token_hash, s.user_id, s.organization_id, s.created_at, s.last_seen_at, s.expires_at,
			s.revoked_at, s.ip_address, s.user_agent, u.email
		FROM platform.browser_sessions s JOIN platform.users u ON u.id = s.user_id
		WHERE s.token_hash = $1 AND s.revoked_at IS NULL AND s.expires_at > $2 AND u.status = 'active'`, hash, now)
	return &s, wrap("read browser session", notFound(err))
}

// TouchBrowserSession records a use of the session (its idle time starts again).
func TouchBrowserSession(ctx context.Context, q sqlx.ExecerContext, id string, now time.Time) error {
	_, err := q.ExecContext(ctx, `UPDATE platform.browser_sessions SET last_seen_at = $2 WHERE id = $1 AND last_seen_at < $2`, id, now)
	return wrap("touch browser session", err)
}

// RevokeBrowserSession ends a session; it reports whether the session was live.
func RevokeBrowserSession(ctx context.Context, q sqlx.ExecerContext, id string, now time.Time) (bool, error) {
	res, err := q.ExecContext(ctx, `UPDATE platform.browser_sessions SET revoked_at = $2 WHERE id = $1 AND revoked_at IS NULL`, id, now)
	if err != nil {
		return false, fmt.Errorf("revoke browser session: %w", err)
	}
	n, err := res.RowsAffected()
	return n > 0, wrap("revoke browser session", err)
}

// RevokeBrowserSessionByHash ends the live session with this token hash, if any, and answers
// its id ("" for none).
func RevokeBrowserSessionByHash(ctx context.Context, q sqlx.QueryerContext, hash []byte, now time.Time) (string, error) {
	var id string
	err := sqlx.GetContext(ctx, q, &id, `UPDATE platform.browser_sessions SET revoked_at = $2 WHERE token_hash = $1 AND revoked_at IS NULL
		RETURNING id`, hash, now)
	if errors.Is(notFound(err), ErrNotFound) {
		return "", nil
	}
	return id, wrap("revoke browser session", err)
}

// RevokeUserSessions ends every session of a user (their credentials are revoked).
func RevokeUserSessions(ctx context.Context, q sqlx.ExecerContext, userID string, now time.Time) error {
	_, err := q.ExecContext(ctx, `UPDATE platform.browser_sessions SET revoked_at = $2 WHERE user_id = $1 AND revoked_at IS NULL`, userID, now)
	return wrap("revoke user sessions", err)
}

// SweepBrowserSessions deletes sessions that ended (past their absolute end, or revoked)
// before before.
func SweepBrowserSessions(ctx context.Context, q sqlx.ExecerContext, before time.Time) error {
	_, err := q.ExecContext(ctx, `DELETE FROM platform.browser_sessions WHERE expires_at < $1 OR revoked_at < $1`, before)
	return wrap("sweep browser sessions", err)
}

// SessionIdleTimeout is how long a session of an organization (nil: of a user without one)
// may go unused: the organization's session_timeout_minutes, the settings' default otherwise.
func (s *Store) SessionIdleTimeout(ctx context.Context, orgID *string) (time.Duration, error) {
	def := time.Duration(DefaultSettings().Security.SessionTimeoutMinutes) * time.Minute
	if orgID == nil {
		return def, nil
	}
	sec, err := s.OrgSecurity(ctx, *orgID)
	if errors.Is(err, ErrNotFound) {
		return def, nil // the organization is gone: its sessions reach nothing of it anyway
	} else if err != nil {
		return 0, fmt.Errorf("read session idle timeout: %w", err)
	}
	if sec.SessionTimeout <= 0 {
		return def, nil
	}
	return sec.SessionTimeout, nil
}

// BrowserSessionByID reads a session.
func BrowserSessionByID(ctx context.Context, q sqlx.QueryerContext, id string) (*BrowserSession, error) {
	var s BrowserSession
	err := sqlx.GetContext(ctx, q, &s, `SELECT `+sessionCols+` FROM platform.browser_sessions WHERE id = $1`, id)
	return &s, wrap("read browser session", notFound(err))
}
