package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jmoiron/sqlx"
)

// IdempotencyTTL is how long the answer to an X-Idempotency-Key is kept.
const IdempotencyTTL = 24 * time.Hour

// ChangeRetention is how long the change log keeps a change: a stream resumed with an older
// Last-Event-ID starts at the oldest change kept.
const ChangeRetention = 7 * 24 * time.Hour

// SweepIdempotencyKeys deletes the idempotency keys created before before.
func SweepIdempotencyKeys(ctx context.Context, q sqlx.ExecerContext, before time.Time) error {
	_, err := q.ExecContext(ctx, `DELETE FROM platform.idempotency_keys WHERE created_at < $1`, before)
	return wrap("sweep idempotency keys", err)
}

// SweepRecordChanges deletes the record change log's entries from before before.
func SweepRecordChanges(ctx context.Context, q sqlx.ExecerContext, before time.Time) error {
	_, err := q.ExecContext(ctx, `DELETE FROM platform.record_changes WHERE changed_at < $1`, before)
	return wrap("sweep record changes", err)
}

// FailInterruptedQueries marks failed (INTERRUPTED) the queries still running that started
// before before: their server died.
func FailInterruptedQueries(ctx context.Context, q sqlx.ExecerContext, now, before time.Time) (int64, error) {
	res, err := q.ExecContext(ctx, `UPDATE platform.queries SET status = 'failed', error_code = 'INTERRUPTED', finished_at = $1
		WHERE status = 'running' AND created_at < $2`, now, before)
	if err != nil {
		return 0, fmt.Errorf("fail interrupted queries: %w", err)
	}
	return res.RowsAffected()
}

// SweepRevokedAccessTokens deletes the deny-list's rows of tokens that expired before before.
func SweepRevokedAccessTokens(ctx context.Context, q sqlx.ExecerContext, before time.Time) error {
	_, err := q.ExecContext(ctx, `DELETE FROM platform.revoked_access_tokens WHERE expires_at < $1`, before)
	return wrap("sweep revoked access tokens", err)
}
