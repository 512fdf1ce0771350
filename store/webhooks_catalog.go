package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
)

// Webhook is an organization's webhook endpoint (secrets sealed).
type Webhook struct {
	ID             string         `db:"id"`
	OrgID          string         `db:"organization_id"`
	URL            string         `db:"url"`
	Description    *string        `db:"description"`
	Events         pq.StringArray `db:"events"`
	ProjectIDs     pq.StringArray `db:"project_ids"`
	Enabled        bool           `db:"enabled"`
	DisabledReason *string        `db:"disabled_reason"`
	FailingSince   *time.Time     `db:"failing_since"`
	Secret         []byte         `db:"secret"`
	PreviousSecret []byte         `db:"previous_secret"`
	PreviousUntil  *time.Time     `db:"previous_until"`
	CreatedBy      *string        `db:"created_by"`
	CreatedAt      time.Time      `db:"created_at"`
	UpdatedAt      time.Time      `db:"updated_at"`
}

const webhookCols = `id, organization_id, url, description, events, project_ids, enabled, disabled_reason, secret, previous_secret,
	previous_until, created_by, created_at, updated_at`

// webhookRead is what a read selects: webhookCols and the dispatcher's failure streak.
const webhookRead = webhookCols + `, failing_since`

// CreateWebhook inserts w; it receives the events after the last one written so far.
func CreateWebhook(ctx context.Context, q sqlx.ExtContext, w *Webhook) error {
	_, err := sqlx.NamedExecContext(ctx, q, `INSERT INTO platform.webhooks (`+webhookCols+`, since_event) VALUES (:id, :organization_id, :url,
		:description, :events, :project_ids, :enabled, :disabled_reason, :secret, :previous_secret, :previous_until, :created_by, :created_at,
		:updated_at, (SELECT COALESCE(max(id), 0) FROM platform.outbox))`, w)
	return wrap("create webhook", err)
}

// ListWebhooks pages through an organization's webhooks, newest first.
func ListWebhooks(ctx context.Context, q sqlx.QueryerContext, orgID string, limit, offset int) ([]Webhook, int, error) {
	var total int
	if err := sqlx.GetContext(ctx, q, &total, `SELECT count(*) FROM platform.webhooks WHERE organization_id = $1`, orgID); err != nil {
		return nil, 0, fmt.Errorf("list webhooks: %w", err)
	}
	out := []Webhook{}
	err := sqlx.SelectContext(ctx, q, &out, `SELECT `+webhookRead+` FROM platform.webhooks WHERE organization_id = $1
		ORDER BY created_at DESC, id LIMIT $2 OFFSET $3`, orgID, limit, offset)
	return out, total, wrap("list webhooks", err)
}

// WebhookByID is one of an organization's webhooks; lock takes its row lock.
func WebhookByID(ctx context.Context, q sqlx.QueryerContext, orgID, id string, lock bool) (*Webhook, error) {
	qs := `SELECT ` + webhookRead + ` FROM platform.webhooks WHERE organization_id = $1 AND id = $2`
	if lock {
		qs += ` FOR UPDATE`
	}
	var w Webhook
	err := sqlx.GetContext(ctx, q, &w, qs, orgID, id)
	return &w, wrap("read webhook", notFound(err))
}

// UpdateWebhook writes every changeable field of w.
func UpdateWebhook(ctx context.Context, q sqlx.ExtContext, w *Webhook) error {
	_, err := sqlx.NamedExecContext(ctx, q, `UPDATE platform.webhooks SET url = :url, description = :description, events = :events,
		project_ids = :project_ids, enabled = :enabled, disabled_reason = :disabled_reason, secret = :secret,
		previous_secret = :previous_secret, previous_until = :previous_until, updated_at = :updated_at WHERE id = :id`, w)
	return wrap("update webhook", err)
}

// DeleteWebhook deletes one of an organization's webhooks.
func DeleteWebhook(ctx context.Context, q sqlx.ExecerContext, orgID, id string) error {
	_, err := q.ExecContext(ctx, `DELETE FROM platform.webhooks WHERE organization_id = $1 AND id = $2`, orgID, id)
	return wrap("delete webhook", err)
}

// MissingProjects are those of ids that are no project of the organization.
func MissingProjects(ctx context.Context, q sqlx.QueryerContext, orgID string, ids []string) ([]string, error) {
	out := []string{}
	if len(ids) == 0 {
		return out, nil
	}
	err := sqlx.SelectContext(ctx, q, &out, `SELECT x FROM unnest($2::text[]) x
		WHERE NOT EXISTS (SELECT 1 FROM platform.projects p WHERE p.organization_id = $1 AND p.id = x) ORDER BY x`, orgID, pq.StringArray(ids))
	return out, wrap("check projects", err)
}
