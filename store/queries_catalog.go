package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
)

// Query is an execution of a project query.
type Query struct {
	ID              string         `db:"id"`
	ProjectID       string         `db:"project_id"`
	OrgID           string         `db:"organization_id"`
	UserID          *string        `db:"user_id"`
	Type            string         `db:"type"`
	Query           string         `db:"query"`
	Args            string         `db:"args"` // jsonb: the values of the generated SQL's $n
	Status          string         `db:"status"`
	DatasetIDs      pq.StringArray `db:"dataset_ids"`
	RowCount        *int           `db:"row_count"`
	ExecutionTimeMS *int64         `db:"execution_time_ms"`
	ErrorCode       *string        `db:"error_code"`
	Body            *string        `db:"body"`    // jsonb: the executed query as answered
	Private         bool           `db:"private"` // seen by its author only (a private saved query's)
	CreatedAt       time.Time      `db:"created_at"`
	FinishedAt      *time.Time     `db:"finished_at"`
	// CreatedByName is the user's name (history reads).
	CreatedByName *string `db:"created_by_name"`
}

const queryCols = `q.id, q.project_id, q.organization_id, q.user_id, q.type, q.query, q.args, q.status, q.dataset_ids, q.row_count,
	q.execution_time_ms, q.error_code, q.body, q.private, q.created_at, q.finished_at`

// ProjectDatasets are a project's active datasets (or those of several projects), by name.
func ProjectDatasets(ctx context.Context, q sqlx.QueryerContext, projectIDs ...string) ([]Dataset, error) {
	var out []Dataset
	err := sqlx.SelectContext(ctx, q, &out, `SELECT `+datasetCols+` FROM platform.datasets d
		WHERE d.project_id = ANY($1) AND d.status = 'active' ORDER BY d.name, d.id`, pq.StringArray(append([]string{}, projectIDs...)))
	return out, wrap("list project datasets", err)
}

// InsertQuery adds a query to the history.
func InsertQuery(ctx context.Context, q sqlx.ExtContext, qr *Query) error {
	if qr.Args == "" {
		qr.Args = "[]"
	}
	_, err := sqlx.NamedExecContext(ctx, q, `INSERT INTO platform.queries (id, project_id, organization_id, user_id, type, query, args, status,
		dataset_ids, row_count, execution_time_ms, error_code, body, private, created_at, finished_at) VALUES (:id, :project_id, :organization_id,
		:user_id, :type, :query, :args, :status, :dataset_ids, :row_count, :execution_time_ms, :error_code, :body, :private, :created_at,
		:finished_at)`, qr)
	return wrap("insert query", err)
}

// FinishQuery writes a query's outcome.
func FinishQuery(ctx context.Context, q sqlx.ExtContext, qr *Query) error {
	_, err := sqlx.NamedExecContext(ctx, q, `UPDATE platform.queries SET status = :status, dataset_ids = :dataset_ids, row_count = :row_count,
		execution_time_ms = :execution_time_ms, error_code = :error_code, body = :body, finished_at = :finished_at WHERE id = :id`, qr)
	return wrap("finish query", err)
}

// QueryFilter selects history entries; Viewer's private ones among them.
type QueryFilter struct {
	ProjectID, Viewer, Type, Status, DatasetID string
	From, To                                   *time.Time
	Limit, Offset                              int
}

// ListQueries pages through a project's history, newest first, without bodies.
func ListQueries(ctx context.Context, q sqlx.ExtContext, f QueryFilter) ([]Query, int, error) {
	cond := ` WHERE q.project_id = $1 AND ($2 = '' OR q.type = $2) AND ($3 = '' OR q.status = $3) AND ($4 = '' OR $4 = ANY (q.dataset_ids))
		AND ($5::timestamptz IS NULL OR q.created_at >= $5) AND ($6::timestamptz IS NULL OR q.created_at < $6)
		AND (NOT q.private OR q.user_id = $7)`
	args := []any{f.ProjectID, f.Type, f.Status, f.DatasetID, f.From, f.To, f.Viewer}
	var total int
	if err := sqlx.GetContext(ctx, q, &total, `SELECT count(*) FROM platform.queries q`+cond, args...); err != nil {
		return nil, 0, fmt.Errorf("list queries: %w", err)
	}
	var out []Query
	err := sqlx.SelectContext(ctx, q, &out, `SELECT q.id, q.project_id, q.organization_id, q.user_id, q.type, q.query, q.status, q.dataset_ids,
		q.row_count, q.execution_time_ms, q.error_code, q.created_at, q.finished_at, u.name AS created_by_name
		FROM platform.queries q LEFT JOIN platform.users u ON u.id = q.user_id`+cond+
		` ORDER BY q.created_at DESC, q.seq DESC LIMIT $8 OFFSET $9`, append(args, f.Limit, f.Offset)...)
	return out, total, wrap("list queries", err)
}

// QueryByID is a query of a project's history that viewer may see.
func QueryByID(ctx context.Context, q sqlx.ExtContext, projectID, id, viewer string) (*Query, error) {
	var qr Query
	err := sqlx.GetContext(ctx, q, &qr, `SELECT `+queryCols+` FROM platform.queries q WHERE q.project_id = $1 AND q.id = $2
		AND (NOT q.private OR q.user_id = $3)`, projectID, id, viewer)
	return &qr, wrap("read query", notFound(err))
}

// MakeQueryPrivate hides a history query from everyone but its author (who saved it as a
// private saved query).
func MakeQueryPrivate(ctx context.Context, q sqlx.ExecerContext, id, author string) error {
	_, err := q.ExecContext(ctx, `UPDATE platform.queries SET private = true WHERE id = $1 AND user_id = $2`, id, author)
	return wrap("make query private", err)
}

// SavedQuery is a query saved under a name.
type SavedQuery struct {
	ID            string         `db:"id"`
	ProjectID     string         `db:"project_id"`
	OrgID         string         `db:"organization_id"`
	SourceQueryID *string        `db:"source_query_id"`
	Name          string         `db:"name"`
	Description   *string        `db:"description"`
	Type          string         `db:"type"`
	Query         string         `db:"query"`
	Tags          pq.StringArray `db:"tags"`
	Visibility    string         `db:"visibility"`
	Parameters    string         `db:"parameters"` // jsonb: the declared parameters
	UsageCount    int            `db:"usage_count"`
	LastUsedAt    *time.Time     `db:"last_used_at"`
	CreatedBy     *string        `db:"created_by"`
	CreatedAt     time.Time      `db:"created_at"`
	// CreatedByName is the author's name (reads).
	CreatedByName *string `db:"created_by_name"`
}

const savedCols = `s.id, s.project_id, s.organization_id, s.source_query_id, s.name, s.description, s.type, s.query, s.tags, s.visibility,
	s.parameters, s.usage_count, s.last_used_at, s.created_by, s.created_at, u.name AS created_by_name`

// ErrLimit is a fixed limit reached.
var ErrLimit = errors.New("limit reached")

// CreateSavedQuery saves sq unless its project already holds max saved queries (the
// project row is locked, so concurrent saves cannot both pass).
func CreateSavedQuery(ctx context.Context, tx *sqlx.Tx, sq *SavedQuery, max int) error {
	var n int
	if err := tx.GetContext(ctx, &n, `SELECT count(*) FROM platform.saved_queries WHERE project_id = (
		SELECT id FROM platform.projects WHERE id = $1 FOR UPDATE)`, sq.ProjectID); err != nil {
		return fmt.Errorf("create saved query: %w", err)
	}
	if n >= max {
		return ErrLimit
	}
	_, err := sqlx.NamedExecContext(ctx, tx, `INSERT INTO platform.saved_queries (id, project_id, organization_id, source_query_id, name,
		description, type, query, tags, visibility, parameters, created_by, created_at) VALUES (:id, :project_id, :organization_id,
		:source_query_id, :name, :description, :type, :query, :tags, :visibility, :parameters, :created_by, :created_at)`, sq)
	return wrap("create saved query", err)
}

// SavedQueryFor is a saved query of a project that userID may see.
func SavedQueryFor(ctx context.Context, q sqlx.ExtContext, projectID, id, userID string) (*SavedQuery, error) {
	var sq SavedQuery
	err := sqlx.GetContext(ctx, q, &sq, `SELECT `+savedCols+` FROM platform.saved_queries s LEFT JOIN platform.users u ON u.id = s.created_by
		WHERE s.project_id = $1 AND s.id = $2 AND (s.visibility = 'project' OR s.created_by = $3)`, projectID, id, userID)
	return &sq, wrap("read saved query", notFound(err))
}

// ListSavedQueries pages through the saved queries userID may see, most used first.
func ListSavedQueries(ctx context.Context, q sqlx.ExtContext, projectID, userID, tag string, limit, offset int) ([]SavedQuery, int, error) {
	cond := ` WHERE s.project_id = $1 AND (s.visibility = 'project' OR s.created_by = $2) AND ($3 = '' OR $3 = ANY (s.tags))`
	var total int
	if err := sqlx.GetContext(ctx, q, &total, `SELECT count(*) FROM platform.saved_queries s`+cond, projectID, userID, tag); err != nil {
		return nil, 0, fmt.Errorf("list saved queries: %w", err)
	}
	var out []SavedQuery
	err := sqlx.SelectContext(ctx, q, &out, `SELECT `+savedCols+` FROM platform.saved_queries s LEFT JOIN platform.users u ON u.id = s.created_by`+cond+
		` ORDER BY s.usage_count DESC, s.last_used_at DESC NULLS LAST, s.name LIMIT $4 OFFSET $5`, projectID, userID, tag, limit, offset)
	return out, total, wrap("list saved queries", err)
}

// UseSavedQuery counts a use of a saved query.
func UseSavedQuery(ctx context.Context, q sqlx.ExtContext, id string, at time.Time) error {
	_, err := q.ExecContext(ctx, `UPDATE platform.saved_queries SET usage_count = usage_count + 1, last_used_at = $2 WHERE id = $1`, id, at)
	return wrap("use saved query", err)
}

// QueryExport is a file of a query's results.
type QueryExport struct {
	ID          string     `db:"id"`
	QueryID     string     `db:"query_id"`
	ProjectID   string     `db:"project_id"`
	OrgID       string     `db:"organization_id"`
	UserID      *string    `db:"user_id"`
	Format      string     `db:"format"`
	Options     string     `db:"options"` // jsonb
	Status      string     `db:"status"`
	Error       *string    `db:"error"`
	SizeBytes   *int64     `db:"size_bytes"`
	RowCount    *int64     `db:"row_count"`
	StorageKey  *string    `db:"storage_key"`
	JobID       string     `db:"job_id"`
	CreatedAt   time.Time  `db:"created_at"`
	CompletedAt *time.Time `db:"completed_at"`
	ExpiresAt   time.Time  `db:"expires_at"`
}

const exportCols = `id, query_id, project_id, organization_id, user_id, format, options, status, error, size_bytes, row_count, storage_key,
	job_id, created_at, completed_at, expires_at`

// CreateQueryExport adds an export.
func CreateQueryExport(ctx context.Context, q sqlx.ExtContext, x *QueryExport) error {
	_, err := sqlx.NamedExecContext(ctx, q, `INSERT INTO platform.query_exports (`+exportCols+`) VALUES (:id, :query_id, :project_id,
		:organization_id, :user_id, :format, :options, :status, :error, :size_bytes, :row_count, :storage_key, :job_id, :created_at,
		:completed_at, :expires_at)`, x)
	return wrap("create query export", err)
}

// QueryExportByID is an export; projectID, when not empty, must be its project.
func QueryExportByID(ctx context.Context, q sqlx.QueryerContext, projectID, id string) (*QueryExport, error) {
	var x QueryExport
	err := sqlx.GetContext(ctx, q, &x, `SELECT `+exportCols+` FROM platform.query_exports WHERE id = $1 AND ($2 = '' OR project_id = $2)`, id, projectID)
	return &x, wrap("read query export", notFound(err))
}

// FinishQueryExport writes an export's outcome.
func FinishQueryExport(ctx context.Context, q sqlx.ExtContext, x *QueryExport) error {
	_, err := sqlx.NamedExecContext(ctx, q, `UPDATE platform.query_exports SET status = :status, error = :error, size_bytes = :size_bytes,
		row_count = :row_count, storage_key = :storage_key, completed_at = :completed_at WHERE id = :id`, x)
	return wrap("finish query export", err)
}

// FailQueryExport marks an export still processing failed with message.
func FailQueryExport(ctx context.Context, q sqlx.ExecerContext, id, message string, now time.Time) error {
	_, err := q.ExecContext(ctx, `UPDATE platform.query_exports SET status = 'failed', error = $2, completed_at = $3
		WHERE id = $1 AND status = 'processing'`, id, message, now)
	return wrap("fail query export", err)
}

// ExpireQueryExports marks exports past their expiry expired and returns their files' keys.
func ExpireQueryExports(ctx context.Context, q sqlx.QueryerContext, now time.Time) ([]string, error) {
	var keys []*string
	err := sqlx.SelectContext(ctx, q, &keys, `UPDATE platform.query_exports SET status = 'expired' WHERE expires_at < $1
		AND status IN ('completed', 'failed') RETURNING storage_key`, now)
	var out []string
	for _, k := range keys {
		if k != nil {
			out = append(out, *k)
		}
	}
	return out, wrap("expire query exports", err)
}
