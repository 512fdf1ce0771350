package store

import (
	"context"
	"time"

	"github.com/jmoiron/sqlx"
)

// Dataset is a dataset of a project. Its rows live in table TableSchema.ID.
type Dataset struct {
	ID               string     `db:"id"`
	ProjectID        string     `db:"project_id"`
	OrgID            string     `db:"organization_id"`
	Name             string     `db:"name"`
	Description      *string    `db:"description"`
	Type             string     `db:"type"`
	Status           string     `db:"status"`
	Error            *string    `db:"error"`
	SourceType       string     `db:"source_type"`
	UploadID         *string    `db:"upload_id"`
	Filename         *string    `db:"filename"`
	Size             *int64     `db:"size_bytes"`
	StorageKey       *string    `db:"storage_key"`
	TableSchema      string     `db:"table_schema"`
	Columns          string     `db:"columns"` // jsonb: []ingest column descriptions
	RowCount         *int64     `db:"row_count"`
	JobID            *string    `db:"job_id"`
	CreatedBy        *string    `db:"created_by"`
	UploadTime       *time.Time `db:"upload_time"`
	ProcessingTimeMS *int64     `db:"processing_time_ms"`
	IndexTimeMS      *int64     `db:"index_time_ms"`
	IndexedAt        *time.Time `db:"indexed_at"`
	CreatedAt        time.Time  `db:"created_at"`
	UpdatedAt        time.Time  `db:"updated_at"`
	// Role is the caller's role in the dataset's organization (DatasetForUser).
	Role string `db:"role"`
}

const datasetCols = `d.id, d.project_id, d.organization_id, d.name, d.description, d.type, d.status, d.error, d.source_type,
	d.upload_id, d.filename, d.size_bytes, d.storage_key, d.table_schema, d.columns, d.row_count, d.job_id, d.created_by,
	d.upload_time, d.processing_time_ms, d.index_time_ms, d.indexed_at, d.created_at, d.updated_at`

// CreateDataset inserts d.
func CreateDataset(ctx context.Context, q sqlx.ExtContext, d *Dataset) error {
	_, err := sqlx.NamedExecContext(ctx, q, `INSERT INTO platform.datasets (id, project_id, organization_id, name, description, type, status,
		source_type, upload_id, filename, size_bytes, storage_key, table_schema, columns, job_id, created_by, upload_time, created_at, updated_at)
		VALUES (:id, :project_id, :organization_id, :name, :description, :type, :status, :source_type, :upload_id, :filename, :size_bytes,
		:storage_key, :table_schema, :columns, :job_id, :created_by, :upload_time, :created_at, :updated_at)`, d)
	return err
}

// DatasetForUser is a dataset of project projectID with the user's role in its organization;
// ErrNotFound when it does not exist or the user is not an active member there.
func DatasetForUser(ctx context.Context, q sqlx.QueryerContext, projectID, id, userID string) (*Dataset, error) {
	var d Dataset
	err := sqlx.GetContext(ctx, q, &d, `SELECT `+datasetCols+`, m.role FROM platform.datasets d
		JOIN platform.memberships m ON m.organization_id = d.organization_id AND m.user_id = $3 AND m.status = 'active'
		WHERE d.id = $1 AND d.project_id = $2`, id, projectID, userID)
	return &d, notFound(err)
}

// DatasetByID loads a dataset (for background work, no caller); lock takes a row lock.
func DatasetByID(ctx context.Context, q sqlx.QueryerContext, id string, lock bool) (*Dataset, error) {
	qs := `SELECT ` + datasetCols + ` FROM platform.datasets d WHERE d.id = $1`
	if lock {
		qs += ` FOR UPDATE`
	}
	var d Dataset
	err := sqlx.GetContext(ctx, q, &d, qs, id)
	return &d, notFound(err)
}

// ListDatasets pages through a project's datasets, newest first.
func (s *Store) ListDatasets(ctx context.Context, projectID, search, typ string, limit, offset int) ([]Dataset, int, error) {
	cond := ` WHERE d.project_id = $1 AND ($2 = '' OR d.name ILIKE '%' || $2 || '%') AND ($3 = '' OR d.type = $3)`
	search = escapeLike(search)
	var total int
	if err := s.DB.GetContext(ctx, &total, `SELECT count(*) FROM platform.datasets d`+cond, projectID, search, typ); err != nil {
		return nil, 0, err
	}
	var out []Dataset
	err := s.DB.SelectContext(ctx, &out, `SELECT `+datasetCols+` FROM platform.datasets d`+cond+
		` ORDER BY d.created_at DESC, d.id LIMIT $4 OFFSET $5`, projectID, search, typ, limit, offset)
	return out, total, err
}

// UpdateDataset writes name and description.
func UpdateDataset(ctx context.Context, q sqlx.ExtContext, d *Dataset) error {
	_, err := sqlx.NamedExecContext(ctx, q, `UPDATE platform.datasets SET name = :name, description = :description, updated_at = :updated_at WHERE id = :id`, d)
	return err
}

// FinishDataset records the outcome of processing: active with its columns and row count, or
// failed with a reason.
func FinishDataset(ctx context.Context, q sqlx.ExtContext, d *Dataset) error {
	_, err := sqlx.NamedExecContext(ctx, q, `UPDATE platform.datasets SET status = :status, error = :error, columns = :columns,
		row_count = :row_count, processing_time_ms = :processing_time_ms, index_time_ms = :index_time_ms, indexed_at = :indexed_at,
		updated_at = :updated_at WHERE id = :id`, d)
	return err
}

// DeleteDataset removes the row.
func DeleteDataset(ctx context.Context, q sqlx.ExecerContext, id string) error {
	_, err := q.ExecContext(ctx, `DELETE FROM platform.datasets WHERE id = $1`, id)
	return err
}

// ClaimUpload marks an upload used by a dataset; false when it is unknown to the project,
// expired or already claimed.
func ClaimUpload(ctx context.Context, q sqlx.QueryerContext, projectID, id string, now time.Time) (*Upload, bool, error) {
	var u Upload
	err := sqlx.GetContext(ctx, q, &u, `UPDATE platform.uploads SET claimed_at = $3
		WHERE id = $1 AND project_id = $2 AND claimed_at IS NULL AND expires_at > $3 RETURNING `+uploadCols, id, projectID, now)
	if err = notFound(err); err == ErrNotFound {
		return nil, false, nil
	}
	return &u, err == nil, err
}

// DatasetFiles lists what a project's (or organization's) datasets keep outside their rows:
// their tables, and the files of every upload. scope is "project" or "organization".
func DatasetFiles(ctx context.Context, q sqlx.QueryerContext, scope, id string) (tables []Dataset, storageKeys []string, err error) {
	col := map[string]string{"project": "project_id", "organization": "organization_id"}[scope]
	if err = sqlx.SelectContext(ctx, q, &tables, `SELECT `+datasetCols+` FROM platform.datasets d WHERE d.`+col+` = $1`, id); err != nil {
		return nil, nil, err
	}
	err = sqlx.SelectContext(ctx, q, &storageKeys, `SELECT storage_key FROM platform.uploads WHERE `+col+` = $1`, id)
	return tables, storageKeys, err
}
