package webhooks

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"dataplatform/store"

	"github.com/jmoiron/sqlx"
)

// Delivery is one event on its way to one endpoint.
type Delivery struct {
	ID             string     `db:"id"`
	WebhookID      string     `db:"webhook_id"`
	EventID        *int64     `db:"event_id"`
	EventType      string     `db:"event_type"`
	Body           string     `db:"body"`
	Status         string     `db:"status"`
	Attempts       int        `db:"attempts"`
	NextAttemptAt  *time.Time `db:"next_attempt_at"`
	LastAttemptAt  *time.Time `db:"last_attempt_at"`
	LastStatusCode *int       `db:"last_status_code"`
	LastResponse   *string    `db:"last_response"`
	LastError      *string    `db:"last_error"`
	LastDurationMs *int       `db:"last_duration_ms"`
	CreatedAt      time.Time  `db:"created_at"`
	FinishedAt     *time.Time `db:"finished_at"`
}

// Attempt is one try of a delivery.
type Attempt struct {
	Attempt    int       `db:"attempt"`
	StartedAt  time.Time `db:"started_at"`
	StatusCode *int      `db:"status_code"`
	Response   *string   `db:"response"`
	Error      *string   `db:"error"`
	DurationMs int       `db:"duration_ms"`
}

const deliveryCols = `id, webhook_id, event_id, event_type, body, status, attempts, next_attempt_at, last_attempt_at,
	last_status_code, last_response, last_error, last_duration_ms, created_at, finished_at`

// Filter narrows a list of deliveries.
type Filter struct {
	Status    string // pending, succeeded, failed; empty: all
	EventType string // a kind, or an area wildcard (dataset.*); empty: all
}

// List pages through an endpoint's deliveries, newest first.
func List(ctx context.Context, q sqlx.QueryerContext, webhookID string, f Filter, limit, offset int) ([]Delivery, int, error) {
	where, args := `webhook_id = $1`, []any{webhookID}
	if f.Status != "" {
		args = append(args, f.Status)
		where += ` AND status = $2`
	}
	if area, ok := strings.CutSuffix(f.EventType, ".*"); ok {
		args = append(args, area+".%")
		where += ` AND event_type LIKE $` + strconv.Itoa(len(args))
	} else if f.EventType != "" {
		args = append(args, f.EventType)
		where += ` AND event_type = $` + strconv.Itoa(len(args))
	}
	var total int
	if err := sqlx.GetContext(ctx, q, &total, `SELECT count(*) FROM platform.webhook_deliveries WHERE `+where, args...); err != nil {
		return nil, 0, fmt.Errorf("list webhook deliveries: %w", err)
	}
	out := []Delivery{}
	err := sqlx.SelectContext(ctx, q, &out, `SELECT `+deliveryCols+` FROM platform.webhook_deliveries WHERE `+where+
		` ORDER BY seq DESC LIMIT `+strconv.Itoa(limit)+` OFFSET `+strconv.Itoa(offset), args...)
	return out, total, err
}

// Get is one of an endpoint's deliveries with its attempts, oldest first.
func Get(ctx context.Context, q sqlx.QueryerContext, webhookID, id string) (*Delivery, []Attempt, error) {
	var d Delivery
	err := sqlx.GetContext(ctx, q, &d, `SELECT `+deliveryCols+` FROM platform.webhook_deliveries WHERE webhook_id = $1 AND id = $2`, webhookID, id)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil, store.ErrNotFound
	}
	if err != nil {
		return nil, nil, fmt.Errorf("read webhook delivery: %w", err)
	}
	as := []Attempt{}
	err = sqlx.SelectContext(ctx, q, &as, `SELECT attempt, started_at, status_code, response, error, duration_ms
		FROM platform.webhook_attempts WHERE delivery_id = $1 ORDER BY attempt`, id)
	return &d, as, err
}

// Redeliver makes a delivery due now with a fresh retry schedule, whatever its state; the
// receiver sees the same webhook-id, so it can tell a redelivery from a new event.
func Redeliver(ctx context.Context, tx sqlx.ExtContext, webhookID, id string, now time.Time) (*Delivery, error) {
	var d Delivery
	err := sqlx.GetContext(ctx, tx, &d, `UPDATE platform.webhook_deliveries SET status = 'pending', next_attempt_at = $3,
		schedule_from = attempts, finished_at = NULL WHERE webhook_id = $1 AND id = $2 RETURNING `+deliveryCols, webhookID, id, now)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, store.ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("redeliver webhook delivery: %w", err)
	}
	_, err = tx.ExecContext(ctx, `SELECT pg_notify($1, 'deliveries')`, channel)
	return &d, err
}

// Ping queues a webhook.ping event to one endpoint.
func Ping(ctx context.Context, tx sqlx.ExtContext, webhookID, orgID string, now time.Time) (*Delivery, error) {
	body, err := json.Marshal(Message{Type: PingKind, Timestamp: now.UTC(), Data: map[string]any{"webhook_id": webhookID,
		"organization_id": orgID, "message": "a test event from POST /webhooks/{webhook_id}/test"}})
	if err != nil {
		return nil, err
	}
	id := store.NewID("msg")
	if _, err := insertDeliveries(ctx, tx, []newDelivery{{ID: id, WebhookID: webhookID, OrgID: orgID, Type: PingKind,
		Body: string(body), At: now.Format(time.RFC3339Nano)}}); err != nil {
		return nil, err
	}
	fannedOut.Inc()
	d, _, err := Get(ctx, tx, webhookID, id)
	return d, err
}

// Resume is called when a person enables an endpoint: the deliveries it held are due now and
// its failure streak starts over.
func Resume(ctx context.Context, tx sqlx.ExecerContext, webhookID string, now time.Time) error {
	if _, err := tx.ExecContext(ctx, `UPDATE platform.webhooks SET failing_since = NULL, failures_in_row = 0, held_until = NULL WHERE id = $1`, webhookID); err != nil {
		return fmt.Errorf("resume webhook: %w", err)
	}
	if _, err := tx.ExecContext(ctx, `UPDATE platform.webhook_deliveries SET next_attempt_at = $2
		WHERE webhook_id = $1 AND status = 'pending' AND next_attempt_at > $2`, webhookID, now); err != nil {
		return fmt.Errorf("resume webhook: %w", err)
	}
	_, err := tx.ExecContext(ctx, `SELECT pg_notify($1, 'deliveries')`, channel)
	return err
}

// Retention is how long finished deliveries (and published outbox events) are kept.
const Retention = 30 * 24 * time.Hour

// Sweep removes finished deliveries and published events older than Retention, and retired
// endpoints with nothing left to send (or retired longer than Retention).
func Sweep(ctx context.Context, q sqlx.ExecerContext, now time.Time) error {
	before := now.Add(-Retention)
	if _, err := q.ExecContext(ctx, `DELETE FROM platform.webhook_deliveries WHERE status <> 'pending' AND finished_at < $1`, before); err != nil {
		return fmt.Errorf("sweep webhook deliveries: %w", err)
	}
	if _, err := q.ExecContext(ctx, `DELETE FROM platform.outbox WHERE published_at < $1`, before); err != nil {
		return fmt.Errorf("sweep webhook deliveries: %w", err)
	}
	// an hour leaves the fan-out time to make organization.deleted's deliveries
	_, err := q.ExecContext(ctx, `DELETE FROM platform.webhooks w WHERE retired_at < $1 OR (retired_at < $2 AND NOT EXISTS
		(SELECT 1 FROM platform.webhook_deliveries d WHERE d.webhook_id = w.id AND d.status = 'pending'))`, before, now.Add(-time.Hour))
	return err
}
