package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
)

// JSON is a jsonb value: sent as text (lib/pq sends []byte as bytea, which jsonb refuses).
type JSON json.RawMessage

// Value sends the JSON as text.
func (j JSON) Value() (driver.Value, error) {
	if j == nil {
		return nil, nil
	}
	return string(j), nil
}

// Scan reads jsonb.
func (j *JSON) Scan(src any) error {
	switch v := src.(type) {
	case []byte:
		*j = append(JSON(nil), v...)
	case string:
		*j = JSON(v)
	case nil:
		*j = nil
	default:
		return fmt.Errorf("JSON: cannot scan %T", src)
	}
	return nil
}

// MarshalJSON is the JSON itself.
func (j JSON) MarshalJSON() ([]byte, error) {
	if j == nil {
		return []byte("null"), nil
	}
	return j, nil
}

// Dashboard is a row of platform.dashboards; Spec is its JSON (dashboards.Spec).
type Dashboard struct {
	ID          string         `db:"id"`
	OrgID       string         `db:"organization_id"`
	ProjectID   string         `db:"project_id"`
	SourceType  string         `db:"source_type"` // dataset, view or project
	DatasetID   *string        `db:"dataset_id"`
	ViewID      *string        `db:"view_id"`
	Source      JSON           `db:"source"`
	DisplayName string         `db:"display_name"`
	Spec        JSON           `db:"spec"`
	Version     int            `db:"version"`
	GeneratedBy string         `db:"generated_by"`
	Warnings    pq.StringArray `db:"warnings"`
	CreatedBy   *string        `db:"created_by"`
	CreatedAt   time.Time      `db:"created_at"`
	UpdatedAt   time.Time      `db:"updated_at"`
	// Reach is how the caller reaches the dashboard's project (DashboardForUser).
	Reach
}

// DashboardVersion is a row of platform.dashboard_versions.
type DashboardVersion struct {
	ID           string    `db:"id"`
	DashboardID  string    `db:"dashboard_id"`
	Number       int       `db:"number"`
	Kind         string    `db:"kind"` // generate, edit, refine, restore
	Message      *string   `db:"message"`
	DisplayName  string    `db:"display_name"`
	Spec         JSON      `db:"spec"`
	Pinned       bool      `db:"pinned"`
	RestoredFrom *int      `db:"restored_from"`
	CreatedBy    *string   `db:"created_by"`
	CreatedAt    time.Time `db:"created_at"`
}

// dashboardCols read a dashboard; listCols the same without its spec, which lists do not answer.
const (
	dashboardHead = `b.id, b.organization_id, b.project_id, b.source_type, b.dataset_id, b.view_id, b.source, b.display_name, `
	dashboardTail = `, b.version, b.generated_by, b.warnings, b.created_by, b.created_at, b.updated_at`
	dashboardCols = dashboardHead + `b.spec` + dashboardTail
	listCols      = dashboardHead + `NULL::jsonb AS spec` + dashboardTail
)

// DashboardForUser is a dashboard of a project userID may see, with the user's reach of it.
func DashboardForUser(ctx context.Context, q sqlx.QueryerContext, id, userID string) (*Dashboard, error) {
	var d Dashboard
	err := sqlx.GetContext(ctx, q, &d, `SELECT `+dashboardCols+`, `+reachCols("$2")+`
		FROM platform.dashboards b JOIN platform.projects p ON p.id = b.project_id`+reachJoin("$2")+`
		WHERE b.id = $1 AND `+reachable("$2"), id, userID)
	return &d, wrap("read dashboard", notFound(err))
}

// DashboardOf is the dashboard generated from a dataset or a view (sourceType), if any.
func DashboardOf(ctx context.Context, q sqlx.QueryerContext, sourceType, sourceID string) (*Dashboard, error) {
	var d Dashboard
	col := "dataset_id"
	if sourceType == "view" {
		col = "view_id"
	}
	err := sqlx.GetContext(ctx, q, &d, `SELECT `+dashboardCols+` FROM platform.dashboards b WHERE b.source_type = $1 AND b.`+col+` = $2`,
		sourceType, sourceID)
	return &d, wrap("read dashboard of source", notFound(err))
}

// DashboardFilter narrows a list of dashboards: one project, or every project of the
// organizations the user reaches but those excluded; Search matches the display name.
type DashboardFilter struct {
	UserID, ProjectID, Search string
	Excluded                  []string
	Limit, Offset             int
}

// ListDashboards pages through the dashboards of projects the user may see, most recently
// changed first.
func ListDashboards(ctx context.Context, q sqlx.QueryerContext, f DashboardFilter) ([]Dashboard, int, error) {
	from := ` FROM platform.dashboards b JOIN platform.projects p ON p.id = b.project_id` + reachJoin("$1") + `
		WHERE ` + reachable("$1") + ` AND ($2 = '' OR b.project_id = $2) AND ($3 = '' OR b.display_name ILIKE '%' || $3 || '%')
		AND b.organization_id <> ALL($4)`
	args := []any{f.UserID, f.ProjectID, escapeLike(f.Search), pq.StringArray(append([]string{}, f.Excluded...))}
	var total int
	if err := sqlx.GetContext(ctx, q, &total, `SELECT count(*)`+from, args...); err != nil {
		return nil, 0, fmt.Errorf("list dashboards: %w", err)
	}
	var out []Dashboard
	err := sqlx.SelectContext(ctx, q, &out, `SELECT `+listCols+`, `+reachCols("$1")+from+
		` ORDER BY b.updated_at DESC, b.id LIMIT $5 OFFSET $6`, append(args, f.Limit, f.Offset)...)
	return out, total, wrap("list dashboards", err)
}

// ErrDashboardExists is a dataset's or view's second dashboard (the unique index).
var ErrDashboardExists = errors.New("the source already has a dashboard")

// CreateDashboard inserts d with its first version v.
func CreateDashboard(ctx context.Context, tx *sqlx.Tx, d *Dashboard, v *DashboardVersion) error {
	if d.Warnings == nil {
		d.Warnings = pq.StringArray{}
	}
	_, err := tx.NamedExecContext(ctx, `INSERT INTO platform.dashboards (id, organization_id, project_id, source_type, dataset_id,
		view_id, source, display_name, spec, version, generated_by, warnings, created_by, created_at, updated_at)
		VALUES (:id, :organization_id, :project_id, :source_type, :dataset_id, :view_id, :source, :display_name, :spec, :version,
		:generated_by, :warnings, :created_by, :created_at, :updated_at)`, d)
	var pe *pq.Error
	if errors.As(err, &pe) && pe.Code == "23505" {
		return ErrDashboardExists
	} else if err != nil {
		return fmt.Errorf("create dashboard: %w", err)
	}
	return insertDashboardVersion(ctx, tx, v)
}

// SaveDashboardVersion records v as d's new current version: d takes v's spec and name.
// keep is how many unpinned versions stay; older unpinned ones are removed (never the
// current one).
func SaveDashboardVersion(ctx context.Context, tx *sqlx.Tx, d *Dashboard, v *DashboardVersion, keep int) error {
	if d.Warnings == nil {
		d.Warnings = pq.StringArray{}
	}
	if err := sqlx.GetContext(ctx, tx, &v.Number, `UPDATE platform.dashboards SET version = version + 1, spec = $2, display_name = $3,
		generated_by = $4, warnings = $5, updated_at = $6 WHERE id = $1 RETURNING version`,
		d.ID, v.Spec, v.DisplayName, d.GeneratedBy, d.Warnings, v.CreatedAt); err != nil {
		return fmt.Errorf("save dashboard version: %w", notFound(err))
	}
	d.Version, d.Spec, d.DisplayName, d.UpdatedAt = v.Number, v.Spec, v.DisplayName, v.CreatedAt
	if err := insertDashboardVersion(ctx, tx, v); err != nil {
		return fmt.Errorf("save dashboard version: %w", err)
	}
	_, err := tx.ExecContext(ctx, `DELETE FROM platform.dashboard_versions WHERE dashboard_id = $1 AND NOT pinned AND id IN (
		SELECT id FROM platform.dashboard_versions WHERE dashboard_id = $1 AND NOT pinned ORDER BY number DESC OFFSET $2)`, d.ID, keep)
	return wrap("save dashboard version", err)
}

func insertDashboardVersion(ctx context.Context, tx *sqlx.Tx, v *DashboardVersion) error {
	_, err := tx.NamedExecContext(ctx, `INSERT INTO platform.dashboard_versions (id, dashboard_id, number, kind, message, display_name,
		spec, pinned, restored_from, created_by, created_at)
		VALUES (:id, :dashboard_id, :number, :kind, :message, :display_name, :spec, :pinned, :restored_from, :created_by, :created_at)`, v)
	return err
}

// LockDashboard locks the dashboard's row for a change in tx and reads it again.
func LockDashboard(ctx context.Context, tx *sqlx.Tx, id string) (*Dashboard, error) {
	var d Dashboard
	err := sqlx.GetContext(ctx, tx, &d, `SELECT `+dashboardCols+` FROM platform.dashboards b WHERE b.id = $1 FOR UPDATE`, id)
	return &d, wrap("lock dashboard", notFound(err))
}

// DeleteDashboard removes the dashboard and its versions.
func DeleteDashboard(ctx context.Context, tx *sqlx.Tx, id string) error {
	res, err := tx.ExecContext(ctx, `DELETE FROM platform.dashboards WHERE id = $1`, id)
	if err != nil {
		return fmt.Errorf("delete dashboard: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return ErrNotFound
	}
	return nil
}

const versionCols = `id, dashboard_id, number, kind, message, display_name, pinned, restored_from, created_by, created_at`

// DashboardVersions pages through a dashboard's versions, newest first, without their spec.
func DashboardVersions(ctx context.Context, q sqlx.QueryerContext, dashboardID string, limit, offset int) ([]DashboardVersion, int, error) {
	var total int
	if err := sqlx.GetContext(ctx, q, &total, `SELECT count(*) FROM platform.dashboard_versions WHERE dashboard_id = $1`, dashboardID); err != nil {
		return nil, 0, fmt.Errorf("list dashboard versions: %w", err)
	}
	var out []DashboardVersion
	err := sqlx.SelectContext(ctx, q, &out, `SELECT `+versionCols+` FROM platform.dashboard_versions WHERE dashboard_id = $1
		ORDER BY number DESC LIMIT $2 OFFSET $3`, dashboardID, limit, offset)
	return out, total, wrap("list dashboard versions", err)
}

// DashboardVersionByID is one version with its spec.
func DashboardVersionByID(ctx context.Context, q sqlx.QueryerContext, dashboardID, id string) (*DashboardVersion, error) {
	var v DashboardVersion
	err := sqlx.GetContext(ctx, q, &v, `SELECT `+versionCols+`, spec FROM platform.dashboard_versions WHERE dashboard_id = $1 AND id = $2`,
		dashboardID, id)
	return &v, wrap("read dashboard version", notFound(err))
}

// UpdateDashboardVersion sets a version's name (nil clears it) or pin and answers it.
func UpdateDashboardVersion(ctx context.Context, tx *sqlx.Tx, dashboardID, id string, message *string, pinned *bool) (*DashboardVersion, error) {
	var v DashboardVersion
	err := sqlx.GetContext(ctx, tx, &v, `UPDATE platform.dashboard_versions SET
		message = CASE WHEN $3 THEN $4 ELSE message END, pinned = coalesce($5, pinned)
		WHERE dashboard_id = $1 AND id = $2 RETURNING `+versionCols, dashboardID, id, message != nil || pinned == nil, message, pinned)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, ErrNotFound
	}
	return &v, wrap("update dashboard version", err)
}
