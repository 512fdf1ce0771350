package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
)

// View is a saved view: a named SELECT over a project's datasets and views, kept as a
// PostgreSQL view named by its id in the organization's schema (store/views).
type View struct {
	ID          string         `db:"id"`
	ProjectID   string         `db:"project_id"`
	OrgID       string         `db:"organization_id"`
	Name        string         `db:"name"`
	Description *string        `db:"description"`
	Definition  string         `db:"definition"` // jsonb: the definition as asked (sql or join)
	SQL         string         `db:"sql"`        // PostgreSQL's text of the view
	Columns     string         `db:"columns"`    // jsonb: the view's columns
	DatasetIDs  pq.StringArray `db:"dataset_ids"`
	Status      string         `db:"status"` // active or broken
	Error       *string        `db:"error"`  // why it is broken
	CreatedBy   *string        `db:"created_by"`
	CreatedAt   time.Time      `db:"created_at"`
	UpdatedAt   time.Time      `db:"updated_at"`
	// CreatedByName is the author's name (reads).
	CreatedByName *string `db:"created_by_name"`
}

const viewCols = `v.id, v.project_id, v.organization_id, v.name, v.description, v.definition, v.sql, v.columns, v.dataset_ids, v.status,
	v.error, v.created_by, v.created_at, v.updated_at, u.name AS created_by_name`

const viewFrom = ` FROM platform.views v LEFT JOIN platform.users u ON u.id = v.created_by`

// InsertView adds a view's row.
func InsertView(ctx context.Context, q sqlx.ExtContext, v *View) error {
	_, err := sqlx.NamedExecContext(ctx, q, `INSERT INTO platform.views (id, project_id, organization_id, name, description, definition, sql,
		columns, dataset_ids, status, error, created_by, created_at, updated_at) VALUES (:id, :project_id, :organization_id, :name, :description,
		:definition, :sql, :columns, :dataset_ids, :status, :error, :created_by, :created_at, :updated_at)`, v)
	return wrap("insert view", err)
}

// UpdateView writes everything of a view but its identity and author.
func UpdateView(ctx context.Context, q sqlx.ExtContext, v *View) error {
	_, err := sqlx.NamedExecContext(ctx, q, `UPDATE platform.views SET name = :name, description = :description, definition = :definition,
		sql = :sql, columns = :columns, dataset_ids = :dataset_ids, status = :status, error = :error, updated_at = :updated_at WHERE id = :id`, v)
	return wrap("update view", err)
}

// DeleteView removes a view's row.
func DeleteView(ctx context.Context, q sqlx.ExecerContext, id string) error {
	_, err := q.ExecContext(ctx, `DELETE FROM platform.views WHERE id = $1`, id)
	return wrap("delete view", err)
}

// ViewByID is a view of a project; lock takes a row lock.
func ViewByID(ctx context.Context, q sqlx.QueryerContext, projectID, id string, lock bool) (*View, error) {
	qs := `SELECT ` + viewCols + viewFrom + ` WHERE v.project_id = $1 AND v.id = $2`
	if lock {
		qs += ` FOR UPDATE OF v`
	}
	var v View
	err := sqlx.GetContext(ctx, q, &v, qs, projectID, id)
	return &v, wrap("read view", notFound(err))
}

// ProjectViews are a project's views (or those of several projects), by name.
func ProjectViews(ctx context.Context, q sqlx.QueryerContext, projectIDs ...string) ([]View, error) {
	var out []View
	err := sqlx.SelectContext(ctx, q, &out, `SELECT `+viewCols+viewFrom+` WHERE v.project_id = ANY($1) ORDER BY v.name, v.id`,
		pq.StringArray(append([]string{}, projectIDs...)))
	return out, wrap("list project views", err)
}

// ListViews pages through a project's views, by name; search matches name and description.
func ListViews(ctx context.Context, q sqlx.QueryerContext, projectID, search string, limit, offset int) ([]View, int, error) {
	cond := ` WHERE v.project_id = $1 AND ($2 = '' OR v.name ILIKE '%' || $2 || '%' OR v.description ILIKE '%' || $2 || '%')`
	search = escapeLike(search)
	var total int
	if err := sqlx.GetContext(ctx, q, &total, `SELECT count(*) FROM platform.views v`+cond, projectID, search); err != nil {
		return nil, 0, fmt.Errorf("list views: %w", err)
	}
	var out []View
	err := sqlx.SelectContext(ctx, q, &out, `SELECT `+viewCols+viewFrom+cond+` ORDER BY lower(v.name), v.id LIMIT $3 OFFSET $4`,
		projectID, search, limit, offset)
	return out, total, wrap("list views", err)
}

// ViewsReading are the views that read any of ids, directly or through other views, each
// once with its depth: 1 for a view reading one of ids, 2 for a view reading such a view...
// (its longest path), so that recreating them by depth recreates what each reads first.
func ViewsReading(ctx context.Context, q sqlx.QueryerContext, ids []string) ([]View, []int, error) {
	var rows []struct {
		View
		Depth int `db:"depth"`
	}
	err := sqlx.SelectContext(ctx, q, &rows, `WITH RECURSIVE r (id, depth) AS (
			SELECT id, 1 FROM platform.views WHERE dataset_ids && $1
			UNION ALL
			SELECT v.id, r.depth + 1 FROM platform.views v JOIN r ON v.dataset_ids @> ARRAY[r.id] WHERE r.depth < 100)
		SELECT `+viewCols+`, d.depth`+viewFrom+` JOIN (SELECT id, max(depth) AS depth FROM r GROUP BY id) d ON d.id = v.id
		ORDER BY d.depth, v.created_at, v.id FOR UPDATE OF v`, pq.StringArray(ids))
	out, depth := make([]View, len(rows)), make([]int, len(rows))
	for i, r := range rows {
		out[i], depth[i] = r.View, r.Depth
	}
	return out, depth, wrap("list views reading", err)
}

// ViewNamed reports whether a view of the project (other than exceptID) answers to one of
// names in SQL (names in lower case; a view's name is an identifier).
func ViewNamed(ctx context.Context, q sqlx.QueryerContext, projectID, exceptID string, names []string) (bool, error) {
	var taken bool
	err := sqlx.GetContext(ctx, q, &taken, `SELECT EXISTS (SELECT 1 FROM platform.views WHERE project_id = $1 AND id <> $2 AND lower(name) = ANY ($3))`,
		projectID, exceptID, pq.StringArray(names))
	return taken, wrap("read view by name", err)
}

// ScopeViews are the views of a project or an organization (scope "project" or
// "organization").
func ScopeViews(ctx context.Context, q sqlx.QueryerContext, scope, id string) ([]View, error) {
	col := map[string]string{"project": "project_id", "organization": "organization_id"}[scope]
	var out []View
	err := sqlx.SelectContext(ctx, q, &out, `SELECT `+viewCols+viewFrom+` WHERE v.`+col+` = $1 ORDER BY v.id`, id)
	return out, wrap("list scope views", err)
}

// ViewColumn is a column of a view: its name, its type (the platform's column types, as
// datasets have) and whether it may be NULL.
type ViewColumn struct {
	Name     string `json:"name"`
	Type     string `json:"type"`
	Nullable bool   `json:"nullable"`
}

// LockNames serialises the naming of a project's datasets and views (which share SQL's
// names) until the transaction ends.
func LockNames(ctx context.Context, tx *sqlx.Tx, projectID string) error {
	_, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock(hashtext('platform.names'), hashtext($1))`, projectID)
	return wrap("lock names", err)
}

// DatasetNames are the names of a project's datasets, whatever their status.
func DatasetNames(ctx context.Context, q sqlx.QueryerContext, projectID string) ([]string, error) {
	var out []string
	err := sqlx.SelectContext(ctx, q, &out, `SELECT name FROM platform.datasets WHERE project_id = $1`, projectID)
	return out, wrap("list dataset names", err)
}
