package store

import (
	"context"
	"time"

	"github.com/jmoiron/sqlx"
)

// Usage is what an organization used in a period (UsageBetween).
type Usage struct {
	Key       string `db:"key"`  // breakdown: the project, user or team id ("" for none)
	Name      string `db:"name"` // its name, "" when gone
	Queries   int64  `db:"queries"`
	ComputeMS int64  `db:"compute_ms"`
}

// UsageBetween sums the organization's recorded usage of the days from from to to
// (inclusive, UTC dates).
func UsageBetween(ctx context.Context, q sqlx.QueryerContext, orgID string, from, to time.Time) (Usage, error) {
	var u Usage
	err := sqlx.GetContext(ctx, q, &u, `SELECT '' AS key, '' AS name, COALESCE(sum(queries), 0) AS queries, COALESCE(sum(compute_ms), 0) AS compute_ms
		FROM platform.usage_daily WHERE organization_id = $1 AND day BETWEEN $2::date AND $3::date`, orgID, from, to)
	return u, wrap("read usage", err)
}

// UsageBreakdown is UsageBetween per project, user or team (a user's usage counts for each
// of their teams; usage of no one's, such as background jobs, is under key "").
func UsageBreakdown(ctx context.Context, q sqlx.QueryerContext, orgID, by string, from, to time.Time) ([]Usage, error) {
	var qs string
	switch by {
	case "project":
		qs = `SELECT u.project_id AS key, COALESCE(p.name, '') AS name, sum(u.queries) AS queries, sum(u.compute_ms) AS compute_ms
			FROM platform.usage_daily u LEFT JOIN platform.projects p ON p.id = u.project_id
			WHERE u.organization_id = $1 AND u.day BETWEEN $2::date AND $3::date GROUP BY 1, 2`
	case "user":
		qs = `SELECT u.user_id AS key, COALESCE(x.name, '') AS name, sum(u.queries) AS queries, sum(u.compute_ms) AS compute_ms
			FROM platform.usage_daily u LEFT JOIN platform.users x ON x.id = u.user_id
			WHERE u.organization_id = $1 AND u.day BETWEEN $2::date AND $3::date GROUP BY 1, 2`
	default: // team
		qs = `SELECT t.id AS key, t.name, sum(u.queries) AS queries, sum(u.compute_ms) AS compute_ms
			FROM platform.usage_daily u
			JOIN platform.team_members tm ON tm.organization_id = u.organization_id AND tm.user_id = u.user_id
			JOIN platform.teams t ON t.id = tm.team_id
			WHERE u.organization_id = $1 AND u.day BETWEEN $2::date AND $3::date GROUP BY 1, 2`
	}
	out := []Usage{}
	err := sqlx.SelectContext(ctx, q, &out, `SELECT * FROM (`+qs+`) b ORDER BY queries DESC, compute_ms DESC, key`, orgID, from, to)
	return out, wrap("read usage breakdown", err)
}

// StorageBytes is what the organization stores: its uploaded datasets' tables with their
// indexes and TOAST, as measured at most tableSizesAge ago, and its upload files, now.
func (s *Store) StorageBytes(ctx context.Context, q sqlx.QueryerContext, orgID string) (int64, error) {
	tables, err := s.tableBytes(ctx, q, orgID)
	if err != nil {
		return 0, err
	}
	var files int64
	err = sqlx.GetContext(ctx, q, &files, `SELECT COALESCE(sum(size_bytes), 0) FROM platform.uploads WHERE organization_id = $1`, orgID)
	return tables + files, wrap("read storage bytes", err)
}

// tableSizesAge is how long an organization's tables' size is used before it is measured
// again. Measuring asks the file system about every table, index and TOAST of the
// organization (tens of microseconds each), and an upload and its dataset check storage
// three times: with thousands of datasets that was most of the work of making one. A file
// counts at once through its upload (tables grow from files already counted).
const tableSizesAge = 10 * time.Second

type measured struct {
	bytes int64
	at    time.Time
}

// tableBytes is the size of the organization's dataset tables (one small entry kept per
// organization).
func (s *Store) tableBytes(ctx context.Context, q sqlx.QueryerContext, orgID string) (int64, error) {
	if m, ok := s.tableSizes.Load(orgID); ok && time.Since(m.(measured).at) < tableSizesAge {
		return m.(measured).bytes, nil
	}
	var n int64
	err := sqlx.GetContext(ctx, q, &n, `SELECT COALESCE(sum(pg_total_relation_size(to_regclass(format('%I.%I', d.table_schema, d.id)))), 0)
		FROM platform.datasets d WHERE d.organization_id = $1 AND d.tables IS NULL`, orgID)
	if err != nil {
		return 0, wrap("read storage bytes", err)
	}
	s.tableSizes.Store(orgID, measured{n, time.Now()})
	return n, nil
}

// PlanChange is a plan an organization was on from a time.
type PlanChange struct {
	Tier         string    `db:"tier"`
	BillingCycle string    `db:"billing_cycle"`
	ChangedAt    time.Time `db:"changed_at"`
}

// PlanChanges are the organization's plans over time, oldest first.
func PlanChanges(ctx context.Context, q sqlx.QueryerContext, orgID string) ([]PlanChange, error) {
	out := []PlanChange{}
	err := sqlx.SelectContext(ctx, q, &out, `SELECT tier, billing_cycle, changed_at FROM platform.plan_changes
		WHERE organization_id = $1 ORDER BY changed_at, id`, orgID)
	return out, wrap("list plan changes", err)
}

// SetPlan changes an organization's plan and billing cycle (a trigger records the change).
func SetPlan(ctx context.Context, q sqlx.ExecerContext, orgID, tier, cycle string, now time.Time) error {
	_, err := q.ExecContext(ctx, `UPDATE platform.organizations SET plan_tier = $2, billing_cycle = $3, updated_at = $4 WHERE id = $1`,
		orgID, tier, cycle, now)
	return wrap("set plan", err)
}

// PlanTier is the organization's plan.
func PlanTier(ctx context.Context, q sqlx.QueryerContext, orgID string) (string, error) {
	var tier string
	err := sqlx.GetContext(ctx, q, &tier, `SELECT plan_tier FROM platform.organizations WHERE id = $1`, orgID)
	return tier, wrap("read plan tier", notFound(err))
}
