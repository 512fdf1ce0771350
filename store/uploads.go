package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
)

// Upload is a stored file waiting for (or claimed by) a dataset.
type Upload struct {
	ID          string     `db:"id"`
	ProjectID   string     `db:"project_id"`
	OrgID       string     `db:"organization_id"`
	Filename    string     `db:"filename"`
	Name        *string    `db:"name"`
	Description *string    `db:"description"`
	Size        int64      `db:"size_bytes"`
	Format      string     `db:"format"`
	StorageKey  string     `db:"storage_key"`
	CreatedBy   *string    `db:"created_by"`
	CreatedAt   time.Time  `db:"created_at"`
	ExpiresAt   time.Time  `db:"expires_at"`
	ClaimedAt   *time.Time `db:"claimed_at"`
}

// CreateUpload inserts u.
func CreateUpload(ctx context.Context, q sqlx.ExtContext, u *Upload) error {
	_, err := sqlx.NamedExecContext(ctx, q, `INSERT INTO platform.uploads (id, project_id, organization_id, filename, name, description,
		size_bytes, format, storage_key, created_by, created_at, expires_at)
		VALUES (:id, :project_id, :organization_id, :filename, :name, :description, :size_bytes, :format, :storage_key, :created_by, :created_at, :expires_at)`, u)
	return wrap("create upload", err)
}

const uploadCols = `id, project_id, organization_id, filename, name, description, size_bytes, format, storage_key, created_by, created_at, expires_at, claimed_at`

// UploadByID finds an upload of a project.
func UploadByID(ctx context.Context, q sqlx.QueryerContext, projectID, id string) (*Upload, error) {
	var u Upload
	err := sqlx.GetContext(ctx, q, &u, `SELECT `+uploadCols+` FROM platform.uploads WHERE id = $1 AND project_id = $2`, id, projectID)
	return &u, wrap("read upload", notFound(err))
}

// ExpiredUploads removes the rows of unclaimed uploads that expired before now and returns
// them, so that their files can be deleted.
func ExpiredUploads(ctx context.Context, q sqlx.ExtContext, now time.Time) ([]Upload, error) {
	var out []Upload
	err := sqlx.SelectContext(ctx, q, &out, `DELETE FROM platform.uploads WHERE claimed_at IS NULL AND expires_at < $1
		RETURNING `+uploadCols, now)
	return out, wrap("list expired uploads", err)
}

// KnownUploads are those of keys that an upload row (claimed or not) stores its file under.
func KnownUploads(ctx context.Context, q sqlx.QueryerContext, keys []string) (map[string]bool, error) {
	var known []string
	if err := sqlx.SelectContext(ctx, q, &known, `SELECT storage_key FROM platform.uploads WHERE storage_key = ANY($1)`, pq.StringArray(keys)); err != nil {
		return nil, fmt.Errorf("list known uploads: %w", err)
	}
	out := map[string]bool{}
	for _, k := range known {
		out[k] = true
	}
	return out, nil
}

// DeleteUpload deletes the upload row id (its dataset is being deleted).
func DeleteUpload(ctx context.Context, q sqlx.ExecerContext, id string) error {
	_, err := q.ExecContext(ctx, `DELETE FROM platform.uploads WHERE id = $1`, id)
	return wrap("delete upload", err)
}
