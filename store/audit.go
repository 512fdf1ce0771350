package store

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"
)

// AuditEntry is one row of the audit log.
type AuditEntry struct {
	OrgID        string
	ActorID      string
	ActorName    string
	ActorEmail   string
	Action       string
	ResourceType string
	ResourceID   string
	ResourceName string
	Details      map[string]any
	IP           string
	UserAgent    string
	At           time.Time
}

func nullable(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// Audit writes e; call it in the transaction of the change it records.
func Audit(ctx context.Context, q sqlx.ExecerContext, e AuditEntry) error {
	if e.Details == nil {
		e.Details = map[string]any{}
	}
	d, err := json.Marshal(e.Details)
	if err != nil {
		return fmt.Errorf("write audit entry: %w", err)
	}
	_, err = q.ExecContext(ctx, `INSERT INTO platform.audit_log (organization_id, actor_id, actor_name, actor_email, action,
		resource_type, resource_id, resource_name, details, ip_address, user_agent, created_at)
		VALUES ($1, $2, COALESCE($3, (SELECT name FROM platform.users WHERE id = $2)), $4, $5, $6, $7, $8, $9, $10, $11, $12)`,
		nullable(e.OrgID), nullable(e.ActorID), nullable(e.ActorName), nullable(e.ActorEmail), e.Action, e.ResourceType,
		nullable(e.ResourceID), nullable(e.ResourceName), string(d), nullable(e.IP), nullable(e.UserAgent), e.At)
	return wrap("write audit entry", err)
}

// AuditRow is an audit log entry as read back.
type AuditRow struct {
	ID           int64     `db:"id"`
	ActorID      *string   `db:"actor_id"`
	ActorName    *string   `db:"actor_name"`
	ActorEmail   *string   `db:"actor_email"`
	Action       string    `db:"action"`
	ResourceType string    `db:"resource_type"`
	ResourceID   *string   `db:"resource_id"`
	ResourceName *string   `db:"resource_name"`
	Details      string    `db:"details"`
	IP           *string   `db:"ip_address"`
	UserAgent    *string   `db:"user_agent"`
	At           time.Time `db:"created_at"`
}

// AuditFilter narrows ListAudit; empty fields do not.
type AuditFilter struct {
	ActorID, Action, ResourceType string // Action "x.*": the actions of family x
	From, To                      *time.Time
}

// AuditCountCap is how far ListAudit counts matching entries.
const AuditCountCap = 10000

// ListAudit pages through an organization's audit log, newest first. total counts matching
// entries up to AuditCountCap (capped says it stopped there): an exact count of millions of
// rows would cost more than the page.
func ListAudit(ctx context.Context, q sqlx.QueryerContext, orgID string, f AuditFilter, limit, offset int) (rows []AuditRow, total int, capped bool, err error) {
	action, family := f.Action, ""
	if strings.HasSuffix(action, ".*") {
		action, family = "", escapeLike(strings.TrimSuffix(f.Action, "*"))+"%"
	}
	cond := ` WHERE organization_id = $1 AND ($2 = '' OR actor_id = $2) AND ($3 = '' OR action = $3) AND ($4 = '' OR action LIKE $4)
		AND ($5 = '' OR resource_type = $5) AND ($6::timestamptz IS NULL OR created_at >= $6) AND ($7::timestamptz IS NULL OR created_at < $7)`
	args := []any{orgID, f.ActorID, action, family, f.ResourceType, f.From, f.To}
	if err = sqlx.GetContext(ctx, q, &total, `SELECT count(*) FROM (SELECT 1 FROM platform.audit_log`+cond+` LIMIT `+strconv.Itoa(AuditCountCap+1)+`) x`, args...); err != nil {
		return nil, 0, false, fmt.Errorf("list audit log: %w", err)
	}
	if total > AuditCountCap {
		total, capped = AuditCountCap, true
	}
	rows = []AuditRow{}
	err = sqlx.SelectContext(ctx, q, &rows, `SELECT id, actor_id, actor_name, actor_email, action, resource_type, resource_id, resource_name,
		details, ip_address, user_agent, created_at FROM platform.audit_log`+cond+` ORDER BY created_at DESC, id DESC LIMIT $8 OFFSET $9`,
		append(args, limit, offset)...)
	return rows, total, capped, wrap("list audit log", err)
}
