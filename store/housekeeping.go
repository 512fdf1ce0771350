package store

import (
	"context"
	"time"

	"github.com/jmoiron/sqlx"
)

// BootstrapNeeded takes the bootstrap lock for the rest of transaction tx (one replica
// bootstraps; the others wait here and then find the user) and says whether no user exists yet.
func BootstrapNeeded(ctx context.Context, tx *sqlx.Tx) (bool, error) {
	if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock(hashtext('platform.bootstrap'))`); err != nil {
		return false, err
	}
	var n int
	err := tx.GetContext(ctx, &n, `SELECT count(*) FROM platform.users`)
	return n == 0, err
}

// SweepIdempotencyKeys deletes the idempotency keys created before before.
func SweepIdempotencyKeys(ctx context.Context, q sqlx.ExecerContext, before time.Time) error {
	_, err := q.ExecContext(ctx, `DELETE FROM platform.idempotency_keys WHERE created_at < $1`, before)
	return err
}

// SweepRecordChanges deletes the record change log's entries from before before.
func SweepRecordChanges(ctx context.Context, q sqlx.ExecerContext, before time.Time) error {
	_, err := q.ExecContext(ctx, `DELETE FROM platform.record_changes WHERE changed_at < $1`, before)
	return err
}

// FailInterruptedQueries marks failed (INTERRUPTED) the queries still running that started
// before before: their server died.
func FailInterruptedQueries(ctx context.Context, q sqlx.ExecerContext, now, before time.Time) (int64, error) {
	res, err := q.ExecContext(ctx, `UPDATE platform.queries SET status = 'failed', error_code = 'INTERRUPTED', finished_at = $1
		WHERE status = 'running' AND created_at < $2`, now, before)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// NoFlushOnCommit lets transaction tx commit without waiting for its disk flush: for writes
// that are not worth one (query history).
func NoFlushOnCommit(ctx context.Context, tx *sqlx.Tx) error {
	_, err := tx.ExecContext(ctx, `SET LOCAL synchronous_commit = off`)
	return err
}
