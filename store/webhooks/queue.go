package webhooks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"dataplatform/store"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

var (
	attemptsTotal = promauto.NewCounterVec(prometheus.CounterOpts{
		Name: "dataplatform_webhook_attempts_total",
		Help: "Webhook delivery attempts by outcome: succeeded, retry (failed, to be retried) or failed (given up).",
	}, []string{"outcome"})
	fannedOut = promauto.NewCounter(prometheus.CounterOpts{
		Name: "dataplatform_webhook_deliveries_created_total",
		Help: "Deliveries made from outbox events (one per matching endpoint), test pings included.",
	})
	queueAge = promauto.NewGauge(prometheus.GaugeOpts{
		Name: "dataplatform_webhook_queue_age_seconds",
		Help: "How long the oldest due webhook delivery has been waiting (0 when none is due).",
	})
	latency = promauto.NewHistogram(prometheus.HistogramOpts{
		Name:    "dataplatform_webhook_delivery_latency_seconds",
		Help:    "From the event (or redelivery) to the receiver's 2xx answer.",
		Buckets: []float64{.01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300, 3600},
	})
)

// fanBatch is how many outbox events one fan-out transaction takes.
const fanBatch = 500

// fanoutLock keys the advisory lock that lets one replica fan out at a time, so deliveries
// are made in event order.
const fanoutLock = 0x77656268 // "webh"

type event struct {
	ID        int64           `db:"id"`
	Type      string          `db:"event_type"`
	OrgID     *string         `db:"organization_id"`
	Payload   json.RawMessage `db:"payload"`
	CreatedAt time.Time       `db:"created_at"`
}

type subscriber struct {
	ID         string         `db:"id"`
	OrgID      string         `db:"organization_id"`
	Events     pq.StringArray `db:"events"`
	ProjectIDs pq.StringArray `db:"project_ids"`
	SinceEvent int64          `db:"since_event"`
	Retired    bool           `db:"retired"`
	Enabled    bool           `db:"enabled"`
}

// receives says whether the endpoint gets the event (a disabled one in its log only): it
// subscribes to the kind, existed when
// the event was written (by the outbox's order, not by clocks), and (for a project's event) follows that project. An endpoint of a
// deleted organization gets only organization.deleted.
func (s *subscriber) receives(ev *event, project string) bool {
	return ev.ID > s.SinceEvent && Matches(s.Events, ev.Type) &&
		(!s.Retired || ev.Type == "organization.deleted") &&
		(project == "" || len(s.ProjectIDs) == 0 || contains(s.ProjectIDs, project))
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// Message is the body of every delivery: the Standard Webhooks payload shape.
type Message struct {
	Type      string         `json:"type"`
	Timestamp time.Time      `json:"timestamp"`
	Data      map[string]any `json:"data"`
}

// newDelivery is a row to insert.
type newDelivery struct {
	ID        string `json:"id"`
	WebhookID string `json:"webhook_id"`
	OrgID     string `json:"organization_id"`
	EventID   *int64 `json:"event_id"`
	Type      string `json:"event_type"`
	Body      string `json:"body"`
	At        string `json:"at"`
	N         int    `json:"n"` // the position in the events' order
	// Disabled: the endpoint is disabled, so the delivery is logged as failed, to be
	// redelivered by hand, instead of queued
	Disabled bool `json:"disabled"`
}

// disabledError is the error of a delivery made while its endpoint was disabled.
const disabledError = "the endpoint was disabled when the event happened; redeliver it to send it"

// Fanout turns the oldest unpublished outbox events (up to fanBatch) into deliveries for the
// endpoints that receive them, and marks them published, in one transaction: a crash leaves
// them unpublished, to be fanned out again. It returns how many events and deliveries.
func Fanout(ctx context.Context, st *store.Store, now time.Time) (events, deliveries int, err error) {
	err = st.Tx(ctx, func(tx *sqlx.Tx) error {
		events, deliveries = 0, 0
		if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock($1)`, fanoutLock); err != nil {
			return err
		}
		var evs []event
		if err := tx.SelectContext(ctx, &evs, `SELECT id, event_type, organization_id, payload, created_at FROM platform.outbox
			WHERE published_at IS NULL ORDER BY id LIMIT $1`, fanBatch); err != nil || len(evs) == 0 {
			return err
		}
		var orgs, ids []string
		for _, ev := range evs {
			ids = append(ids, fmt.Sprint(ev.ID))
			if ev.OrgID != nil {
				orgs = append(orgs, *ev.OrgID)
			}
		}
		var subs []subscriber
		// FOR SHARE: a sender recording a hold on one of these endpoints (record) either went
		// first, and the new deliveries wait for its held_until, or waits for this transaction
		// and holds them with the rest.
		if err := tx.SelectContext(ctx, &subs, `SELECT id, organization_id, events, project_ids, since_event, retired_at IS NOT NULL AS retired,
			enabled FROM platform.webhooks WHERE organization_id = ANY($1) ORDER BY created_at, id FOR SHARE`, pq.StringArray(orgs)); err != nil {
			return err
		}
		byOrg := map[string][]*subscriber{}
		for i := range subs {
			byOrg[subs[i].OrgID] = append(byOrg[subs[i].OrgID], &subs[i])
		}
		var rows []newDelivery
		for i := range evs {
			ev := &evs[i]
			if ev.OrgID == nil || len(byOrg[*ev.OrgID]) == 0 {
				continue
			}
			var data map[string]any
			if err := json.Unmarshal(ev.Payload, &data); err != nil || data == nil {
				data = map[string]any{"payload": ev.Payload}
			}
			if _, ok := data["organization_id"]; !ok {
				data["organization_id"] = *ev.OrgID
			}
			project, _ := data["project_id"].(string)
			var body []byte
			for _, s := range byOrg[*ev.OrgID] {
				if !s.receives(ev, project) {
					continue
				}
				if body == nil {
					if body, err = json.Marshal(Message{Type: ev.Type, Timestamp: ev.CreatedAt.UTC(), Data: data}); err != nil {
						return err
					}
				}
				rows = append(rows, newDelivery{ID: store.NewID("msg"), WebhookID: s.ID, OrgID: s.OrgID, EventID: &ev.ID, Type: ev.Type,
					Body: string(body), At: now.Format(time.RFC3339Nano), Disabled: !s.Enabled})
			}
		}
		n, err := insertDeliveries(ctx, tx, rows)
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE platform.outbox SET published_at = $1 WHERE id = ANY($2::bigint[])`, now, pq.StringArray(ids)); err != nil {
			return err
		}
		events, deliveries = len(evs), n
		return nil
	})
	if err == nil {
		fannedOut.Add(float64(deliveries))
	}
	return events, deliveries, err
}

// insertDeliveries adds deliveries (once per endpoint and event), due now or, to an endpoint
// that is failing, with its next retry, or to a disabled one as failed; and wakes the senders.
func insertDeliveries(ctx context.Context, tx sqlx.ExtContext, rows []newDelivery) (int, error) {
	if len(rows) == 0 {
		return 0, nil
	}
	for i := range rows {
		rows[i].N = i
	}
	b, err := json.Marshal(rows)
	if err != nil {
		return 0, err
	}
	res, err := tx.ExecContext(ctx, `INSERT INTO platform.webhook_deliveries (id, webhook_id, organization_id, event_id, event_type, body,
			status, next_attempt_at, last_error, created_at, finished_at)
		SELECT r.id, r.webhook_id, r.organization_id, r.event_id, r.event_type, r.body,
			CASE WHEN r.disabled THEN 'failed' ELSE 'pending' END, CASE WHEN NOT r.disabled THEN GREATEST(r.at, w.held_until) END,
			CASE WHEN r.disabled THEN $2 END, r.at, CASE WHEN r.disabled THEN r.at END
		FROM jsonb_to_recordset($1::jsonb) AS r(id text, webhook_id text, organization_id text, event_id bigint,
			event_type text, body text, at timestamptz, n int, disabled boolean)
		JOIN platform.webhooks w ON w.id = r.webhook_id
		ORDER BY r.n -- seq follows the events' order, whatever order the join produces
		ON CONFLICT (webhook_id, event_id) DO NOTHING`, string(b), disabledError)
	if err != nil {
		return 0, err
	}
	n, _ := res.RowsAffected()
	if n > 0 {
		_, err = tx.ExecContext(ctx, `SELECT pg_notify($1, 'deliveries')`, channel)
	}
	return int(n), err
}

// errLeaseLost: another worker has the endpoint now.
var errLeaseLost = errors.New("the endpoint's lease was lost")

// record writes what a round of attempts did, in one transaction: each delivery's state and
// attempt, the wait of the endpoint's other deliveries when one is held for a retry, and the
// endpoint's failure streak, disabling it when the streak is too long.
func (d *Dispatcher) record(ctx context.Context, ep *endpoint, done []attempt, hold *time.Time) error {
	now := d.clock()
	since, inRow := ep.FailingSince, ep.FailuresInRow
	type row struct {
		ID       string     `json:"id"`
		Status   string     `json:"status"`
		N        int        `json:"n"`
		Next     *time.Time `json:"next"`
		At       time.Time  `json:"at"`
		Code     *int       `json:"code"`
		Response *string    `json:"response"`
		Error    *string    `json:"error"`
		Ms       int64      `json:"ms"`
	}
	rows := make([]row, 0, len(done))
	for _, a := range done {
		r := row{ID: a.DeliveryID, Status: "pending", N: a.N, Next: a.Next, At: a.At, Code: a.StatusCode, Response: a.Response,
			Error: a.Error, Ms: a.Duration.Milliseconds()}
		switch a.Outcome {
		case outcomeSucceeded:
			r.Status, since, inRow = "succeeded", nil, 0
		case outcomeFailed:
			r.Status = "failed"
			inRow++
		}
		if a.Outcome != outcomeSucceeded && since == nil {
			t := a.At
			since = &t
		}
		rows = append(rows, r)
	}
	disable := ""
	if inRow >= d.opt.DisableFailures {
		disable = fmt.Sprintf("disabled by the service: %d deliveries in a row failed", inRow)
	} else if since != nil && now.Sub(*since) >= d.opt.DisableAfter {
		disable = fmt.Sprintf("disabled by the service: deliveries have failed since %s", since.UTC().Format(time.RFC3339))
	}
	b, err := json.Marshal(rows)
	if err != nil {
		return err
	}
	err = d.st.Tx(ctx, func(tx *sqlx.Tx) error {
		// The endpoint's row first: a fan-out that has it FOR SHARE finishes before the hold
		// below, which then sees its deliveries (see Fanout).
		// Only while the lease is still this worker's: a worker that stalled past it has been
		// replaced, and the new one resends and records (what was sent twice is at least once).
		// This round ran, so an earlier hold is over: the endpoint is held only by this one's.
		res, err := tx.ExecContext(ctx, `UPDATE platform.webhooks SET failing_since = $3, failures_in_row = $4, held_until = $5,
			enabled = enabled AND $6 = '', disabled_reason = CASE WHEN $6 = '' THEN disabled_reason ELSE $6 END,
			updated_at = CASE WHEN $6 = '' THEN updated_at ELSE $7 END
			WHERE id = $1 AND lease_owner = $2`, ep.ID, d.id, since, inRow, hold, disable, now)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return errLeaseLost
		}
		if disable != "" {
			d.log.Warn("webhook endpoint disabled", "webhook_id", ep.ID, "reason", disable)
			if err := store.Audit(ctx, tx, store.AuditEntry{OrgID: ep.OrgID, Action: "webhook.disable", ResourceType: "webhook",
				ResourceID: ep.ID, ResourceName: ep.URL, Details: map[string]any{"reason": disable}, At: now}); err != nil {
				return err
			}
		}
		if _, err := tx.ExecContext(ctx, `UPDATE platform.webhook_deliveries d SET status = r.status, attempts = r.n,
				next_attempt_at = r.next, last_attempt_at = r.at, last_status_code = r.code, last_response = r.response,
				last_error = r.error, last_duration_ms = r.ms, finished_at = CASE WHEN r.status = 'pending' THEN NULL ELSE r.at END
			FROM jsonb_to_recordset($1::jsonb) AS r(id text, status text, n int, next timestamptz, at timestamptz, code int,
				response text, error text, ms int)
			WHERE d.id = r.id AND d.status = 'pending'`, string(b)); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO platform.webhook_attempts (delivery_id, attempt, started_at, status_code, response, error, duration_ms)
			SELECT r.id, r.n, r.at, r.code, r.response, r.error, r.ms
			FROM jsonb_to_recordset($1::jsonb) AS r(id text, n int, at timestamptz, code int, response text, error text, ms int)
			WHERE EXISTS (SELECT 1 FROM platform.webhook_deliveries d WHERE d.id = r.id)
			ON CONFLICT (delivery_id, attempt) DO UPDATE SET started_at = EXCLUDED.started_at, status_code = EXCLUDED.status_code,
				response = EXCLUDED.response, error = EXCLUDED.error, duration_ms = EXCLUDED.duration_ms`, string(b)); err != nil {
			return err
		}
		if hold == nil {
			return nil
		}
		_, err = tx.ExecContext(ctx, `UPDATE platform.webhook_deliveries SET next_attempt_at = $2
			WHERE webhook_id = $1 AND status = 'pending' AND next_attempt_at < $2`, ep.ID, *hold)
		return err
	})
	if err != nil {
		return err
	}
	ep.FailingSince, ep.FailuresInRow = since, inRow
	for _, a := range done {
		attemptsTotal.WithLabelValues(a.Outcome).Inc()
		if a.Outcome == outcomeSucceeded {
			latency.Observe(a.latency.Seconds())
		}
	}
	return nil
}

// measureQueue sets the queue-age gauge.
func (d *Dispatcher) measureQueue(ctx context.Context) {
	now := d.clock()
	var oldest *time.Time
	if err := d.st.DB.GetContext(ctx, &oldest, `SELECT min(next_attempt_at) FROM platform.webhook_deliveries
		WHERE status = 'pending' AND next_attempt_at <= $1`, now); err != nil {
		return
	}
	if oldest == nil {
		queueAge.Set(0)
		return
	}
	queueAge.Set(now.Sub(*oldest).Seconds())
}
