package store

import (
	"context"
	"fmt"
	"strconv"
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
	Statistics       string     `db:"statistics"` // jsonb: datasets.Statistics
	AnalyzedAt       *time.Time `db:"analyzed_at"`
	AnalysisVersion  int        `db:"analysis_version"`
	VectorCount      int64      `db:"vector_count"`
	SchemaVersion    int        `db:"schema_version"`
	Tables           *string    `db:"tables"` // jsonb: []datasets.TableDef of a database-connected dataset
	// ImportMode is set while an import into the dataset runs (status processing): append,
	// upsert or replace. Its rows are served meanwhile (Serving).
	ImportMode *string   `db:"import_mode"`
	CreatedAt  time.Time `db:"created_at"`
	UpdatedAt  time.Time `db:"updated_at"`
	// Reach is how the caller reaches the dataset's project (DatasetForUser).
	Reach
}

const datasetCols = `d.id, d.project_id, d.organization_id, d.name, d.description, d.type, d.status, d.error, d.source_type,
	d.upload_id, d.filename, d.size_bytes, d.storage_key, d.table_schema, d.columns, d.row_count, d.job_id, d.created_by,
	d.upload_time, d.processing_time_ms, d.index_time_ms, d.indexed_at, d.statistics, d.analyzed_at, d.analysis_version,
	d.vector_count, d.schema_version, d.tables, d.import_mode, d.created_at, d.updated_at`

// Serving reports whether the dataset's rows are served (record API, change stream, schema,
// preview): once active, and while an import into it runs, which readers do not see until it
// commits.
func (d *Dataset) Serving() bool {
	return d.Status == "active" || d.Status == "processing" && d.ImportMode != nil
}

// CreateDataset inserts d.
func CreateDataset(ctx context.Context, q sqlx.ExtContext, d *Dataset) error {
	if d.Statistics == "" {
		d.Statistics = "{}"
	}
	_, err := sqlx.NamedExecContext(ctx, q, `INSERT INTO platform.datasets (id, project_id, organization_id, name, description, type, status,
		source_type, upload_id, filename, size_bytes, storage_key, table_schema, columns, job_id, created_by, upload_time, statistics, tables, created_at, updated_at)
		VALUES (:id, :project_id, :organization_id, :name, :description, :type, :status, :source_type, :upload_id, :filename, :size_bytes,
		:storage_key, :table_schema, :columns, :job_id, :created_by, :upload_time, :statistics, :tables, :created_at, :updated_at)`, d)
	return wrap("create dataset", err)
}

// DatasetForUser is a dataset of project projectID with how the user reaches it; ErrNotFound
// when it does not exist or its project is out of the user's reach (ProjectForUser).
func DatasetForUser(ctx context.Context, q sqlx.QueryerContext, projectID, id, userID string) (*Dataset, error) {
	var d Dataset
	err := sqlx.GetContext(ctx, q, &d, `SELECT `+datasetCols+`, `+reachCols("$3")+` FROM platform.datasets d
		JOIN platform.projects p ON p.id = d.project_id`+reachJoin("$3")+`
		WHERE d.id = $1 AND d.project_id = $2 AND `+reachable("$3"), id, projectID, userID)
	return &d, wrap("read dataset", notFound(err))
}

// DatasetByID loads a dataset (for background work, no caller); lock takes a row lock.
func DatasetByID(ctx context.Context, q sqlx.QueryerContext, id string, lock bool) (*Dataset, error) {
	qs := `SELECT ` + datasetCols + ` FROM platform.datasets d WHERE d.id = $1`
	if lock {
		qs += ` FOR UPDATE`
	}
	var d Dataset
	err := sqlx.GetContext(ctx, q, &d, qs, id)
	return &d, wrap("read dataset by id", notFound(err))
}

// ListDatasets pages through a project's datasets, newest first.
func ListDatasets(ctx context.Context, q sqlx.ExtContext, projectID, search, typ string, limit, offset int) ([]Dataset, int, error) {
	// The name condition is there only with a search, so that a search's plan can use the
	// names' trigram index and the list's the project's order.
	cond, args := ` WHERE d.project_id = $1 AND ($2 = '' OR d.type = $2)`, []any{projectID, typ}
	if search != "" {
		cond += ` AND d.name ILIKE '%' || $3 || '%'`
		args = append(args, escapeLike(search))
	}
	var total int
	if err := sqlx.GetContext(ctx, q, &total, `SELECT count(*) FROM platform.datasets d`+cond, args...); err != nil {
		return nil, 0, fmt.Errorf("list datasets: %w", err)
	}
	var out []Dataset
	page := ` ORDER BY d.created_at DESC, d.id LIMIT $` + strconv.Itoa(len(args)+1) + ` OFFSET $` + strconv.Itoa(len(args)+2)
	err := sqlx.SelectContext(ctx, q, &out, `SELECT `+datasetCols+` FROM platform.datasets d`+cond+page, append(args, limit, offset)...)
	return out, total, wrap("list datasets", err)
}

// UpdateDataset writes name and description.
func UpdateDataset(ctx context.Context, q sqlx.ExtContext, d *Dataset) error {
	_, err := sqlx.NamedExecContext(ctx, q, `UPDATE platform.datasets SET name = :name, description = :description, updated_at = :updated_at WHERE id = :id`, d)
	return wrap("update dataset", err)
}

// FinishDataset records the outcome of processing: active with its columns and row count, or
// failed with a reason.
func FinishDataset(ctx context.Context, q sqlx.ExtContext, d *Dataset) error {
	_, err := sqlx.NamedExecContext(ctx, q, `UPDATE platform.datasets SET status = :status, error = :error, columns = :columns,
		row_count = :row_count, processing_time_ms = :processing_time_ms, index_time_ms = :index_time_ms, indexed_at = :indexed_at,
		statistics = :statistics, analyzed_at = :analyzed_at, analysis_version = :analysis_version, vector_count = :vector_count,
		import_mode = NULL, updated_at = :updated_at WHERE id = :id`, d)
	return wrap("finish dataset", err)
}

// StartImport marks an active dataset processing an import in mode, followed by job jobID.
func StartImport(ctx context.Context, q sqlx.ExecerContext, d *Dataset, mode, jobID string, now time.Time) error {
	_, err := q.ExecContext(ctx, `UPDATE platform.datasets SET status = 'processing', import_mode = $2, job_id = $3, error = NULL,
		updated_at = $4 WHERE id = $1`, d.ID, mode, jobID, now)
	if err == nil {
		d.Status, d.ImportMode, d.JobID, d.Error, d.UpdatedAt = "processing", &mode, &jobID, nil, now
	}
	return wrap("start import", err)
}

// SaveAnalysis writes what an analysis found.
func SaveAnalysis(ctx context.Context, q sqlx.ExtContext, d *Dataset) error {
	_, err := sqlx.NamedExecContext(ctx, q, `UPDATE platform.datasets SET statistics = :statistics, analyzed_at = :analyzed_at,
		analysis_version = :analysis_version, vector_count = :vector_count, row_count = :row_count, index_time_ms = :index_time_ms,
		indexed_at = :indexed_at, updated_at = :updated_at WHERE id = :id`, d)
	return wrap("save analysis", err)
}

// DeleteDataset removes the row.
func DeleteDataset(ctx context.Context, q sqlx.ExecerContext, id string) error {
	_, err := q.ExecContext(ctx, `DELETE FROM platform.datasets WHERE id = $1`, id)
	return wrap("delete dataset", err)
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
	return &u, err == nil, wrap("claim upload", err)
}

// DatasetFiles lists what a project's (or organization's) datasets keep outside their rows:
// their tables, and the files of every upload. scope is "project" or "organization".
func DatasetFiles(ctx context.Context, q sqlx.QueryerContext, scope, id string) (tables []Dataset, storageKeys []string, err error) {
	col := map[string]string{"project": "project_id", "organization": "organization_id"}[scope]
	if err = sqlx.SelectContext(ctx, q, &tables, `SELECT `+datasetCols+` FROM platform.datasets d WHERE d.`+col+` = $1`, id); err != nil {
		return nil, nil, fmt.Errorf("list dataset files: %w", err)
	}
	err = sqlx.SelectContext(ctx, q, &storageKeys, `SELECT storage_key FROM platform.uploads WHERE `+col+` = $1`, id)
	return tables, storageKeys, wrap("list dataset files", err)
}

// DatasetForUserAnyProject is DatasetForUser for the dataset-scoped paths (/api/v1/datasets/{id}),
// which do not name the project.
func DatasetForUserAnyProject(ctx context.Context, q sqlx.QueryerContext, id, userID string) (*Dataset, error) {
	var d Dataset
	err := sqlx.GetContext(ctx, q, &d, `SELECT `+datasetCols+`, `+reachCols("$2")+` FROM platform.datasets d
		JOIN platform.projects p ON p.id = d.project_id`+reachJoin("$2")+`
		WHERE d.id = $1 AND `+reachable("$2"), id, userID)
	return &d, wrap("read dataset", notFound(err))
}

// Relationship is a link between columns of two datasets, with the other dataset's name.
type Relationship struct {
	FromDataset string `db:"from_dataset"`
	FromTable   string `db:"from_table"`
	FromColumn  string `db:"from_column"`
	ToDataset   string `db:"to_dataset"`
	ToTable     string `db:"to_table"`
	ToColumn    string `db:"to_column"`
	Origin      string `db:"origin"`
	FromName    string `db:"from_name"`
	ToName      string `db:"to_name"`
	// ToKey: ToColumn is the key of the records it points at (one record, by its address).
	ToKey bool `db:"to_key"`
}

// Relationships are the links from and to a dataset.
func Relationships(ctx context.Context, q sqlx.QueryerContext, datasetID string) ([]Relationship, error) {
	var out []Relationship
	err := sqlx.SelectContext(ctx, q, &out, `SELECT r.from_dataset, r.from_table, r.from_column, r.to_dataset, r.to_table, r.to_column, r.origin, f.name AS from_name, t.name AS to_name,
		coalesce(CASE WHEN t.tables IS NULL
			THEN r.to_column = coalesce((SELECT c->>'name' FROM jsonb_array_elements(t.columns) c WHERE c->>'key' = 'true' LIMIT 1), 'id')
			ELSE (SELECT x->'primary_key' = jsonb_build_array(r.to_column) FROM jsonb_array_elements(t.tables) x WHERE x->>'name' = r.to_table LIMIT 1)
		END, false) AS to_key
		FROM platform.dataset_relationships r JOIN platform.datasets f ON f.id = r.from_dataset JOIN platform.datasets t ON t.id = r.to_dataset
		WHERE (r.from_dataset = $1 OR r.to_dataset = $1) AND r.origin <> 'removed' ORDER BY r.from_dataset = $1 DESC, r.from_table, r.from_column, r.to_dataset, r.to_table`, datasetID)
	return out, wrap("list relationships", err)
}

// SchemaChange is one accepted change of a dataset's schema.
type SchemaChange struct {
	ID            string    `db:"id"`
	DatasetID     string    `db:"dataset_id"`
	SchemaVersion int       `db:"schema_version"`
	Changes       string    `db:"changes"`
	ColumnsBefore string    `db:"columns_before"`
	ColumnsAfter  string    `db:"columns_after"`
	CreatedBy     *string   `db:"created_by"`
	CreatedAt     time.Time `db:"created_at"`
}

// DatasetStatistics is a dataset's statistics (JSON, datasets.Statistics).
func DatasetStatistics(ctx context.Context, q sqlx.QueryerContext, id string) (string, error) {
	var s string
	err := sqlx.GetContext(ctx, q, &s, `SELECT statistics FROM platform.datasets WHERE id = $1`, id)
	return s, wrap("read dataset statistics", notFound(err))
}

// SchemaChanges are a dataset's accepted schema changes, oldest first.
func SchemaChanges(ctx context.Context, q sqlx.QueryerContext, datasetID string) ([]SchemaChange, error) {
	var out []SchemaChange
	err := sqlx.SelectContext(ctx, q, &out, `SELECT id, dataset_id, schema_version, changes, columns_before, columns_after, created_by, created_at
		FROM platform.dataset_schema_changes WHERE dataset_id = $1 ORDER BY schema_version`, datasetID)
	return out, wrap("list schema changes", err)
}

// RecordSchemaChange stores c and moves the dataset to its schema version and columns (the
// tables of a connected dataset, when tables is set).
func RecordSchemaChange(ctx context.Context, q sqlx.ExtContext, c *SchemaChange, tables bool) error {
	if _, err := sqlx.NamedExecContext(ctx, q, `INSERT INTO platform.dataset_schema_changes (id, dataset_id, schema_version, changes,
		columns_before, columns_after, created_by, created_at) VALUES (:id, :dataset_id, :schema_version, :changes, :columns_before,
		:columns_after, :created_by, :created_at)`, c); err != nil {
		return fmt.Errorf("record schema change: %w", err)
	}
	col := "columns"
	if tables {
		col = "tables"
	}
	_, err := q.ExecContext(ctx, `UPDATE platform.datasets SET `+col+` = $2, schema_version = $3, updated_at = $4 WHERE id = $1`,
		c.DatasetID, c.ColumnsAfter, c.SchemaVersion, c.CreatedAt)
	return wrap("record schema change", err)
}

// Connection is how a database-connected dataset reaches its database.
type Connection struct {
	DatasetID   string `db:"dataset_id"`
	Type        string `db:"type"`
	Host        string `db:"host"`
	Port        int    `db:"port"`
	Database    string `db:"database"`
	Username    string `db:"username"`
	PasswordEnc []byte `db:"password_enc"`
	SSLMode     string `db:"ssl_mode"`
	Options     string `db:"options"` // jsonb
	ServerName  string `db:"server_name"`
}

// CreateConnection stores c.
func CreateConnection(ctx context.Context, q sqlx.ExtContext, c *Connection) error {
	_, err := sqlx.NamedExecContext(ctx, q, `INSERT INTO platform.dataset_connections (dataset_id, type, host, port, database, username,
		password_enc, ssl_mode, options, server_name) VALUES (:dataset_id, :type, :host, :port, :database, :username, :password_enc,
		:ssl_mode, :options, :server_name)`, c)
	return wrap("create connection", err)
}

// ConnectionOf is a dataset's connection; ErrNotFound for a file dataset.
func ConnectionOf(ctx context.Context, q sqlx.QueryerContext, datasetID string) (*Connection, error) {
	var c Connection
	err := sqlx.GetContext(ctx, q, &c, `SELECT * FROM platform.dataset_connections WHERE dataset_id = $1`, datasetID)
	return &c, wrap("read connection", notFound(err))
}

// Idempotent is a stored answer to a request with an idempotency key.
type Idempotent struct {
	RequestHash string  `db:"request_hash"`
	Status      *int    `db:"status"`
	Location    *string `db:"location"`
	Body        *string `db:"body"`
}

// ClaimIdempotencyKey records key for a request in tx. A new key answers nil; a key seen
// before answers what was stored for it (a concurrent first request is waited for, by the
// primary key's lock).
func ClaimIdempotencyKey(ctx context.Context, q sqlx.QueryerContext, principal, datasetID, key, hash string, now time.Time) (*Idempotent, error) {
	var inserted bool
	err := sqlx.GetContext(ctx, q, &inserted, `INSERT INTO platform.idempotency_keys (principal, dataset_id, key, request_hash, created_at)
		VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING RETURNING true`, principal, datasetID, key, hash, now)
	if err == nil {
		return nil, nil
	}
	if notFound(err) != ErrNotFound {
		return nil, wrap("claim idempotency key", err)
	}
	var it Idempotent
	err = sqlx.GetContext(ctx, q, &it, `SELECT request_hash, status, location, body FROM platform.idempotency_keys
		WHERE principal = $1 AND dataset_id = $2 AND key = $3`, principal, datasetID, key)
	return &it, wrap("claim idempotency key", err)
}

// StoreIdempotentAnswer keeps the answer given for a claimed key.
func StoreIdempotentAnswer(ctx context.Context, q sqlx.ExecerContext, principal, datasetID, key string, status int, location, body string) error {
	_, err := q.ExecContext(ctx, `UPDATE platform.idempotency_keys SET status = $4, location = $5, body = $6
		WHERE principal = $1 AND dataset_id = $2 AND key = $3`, principal, datasetID, key, status, location, body)
	return wrap("store idempotent answer", err)
}

// DatasetForRecords is DatasetForUserAnyProject for the record API's hot path: a prepared
// statement reading what serving records needs (not the statistics, which can be large). An
// active dataset's answer is kept until a change of datasets or memberships is notified
// (lookups); so is one serving its rows during an import.
func (s *Store) DatasetForRecords(ctx context.Context, id, userID string) (*Dataset, error) {
	if d, ok := s.look.get(id, userID); ok {
		return d, nil
	}
	gen := s.look.gen.Load()
	st, err := s.prepared(ctx, `SELECT d.id, d.project_id, d.organization_id, d.name, d.description, d.type, d.status, d.table_schema,
		d.columns, d.tables, d.schema_version, d.import_mode, d.created_at, d.updated_at, `+reachCols("$2")+` FROM platform.datasets d
		JOIN platform.projects p ON p.id = d.project_id`+reachJoin("$2")+`
		WHERE d.id = $1 AND `+reachable("$2"))
	if err != nil {
		return nil, fmt.Errorf("read dataset for records: %w", err)
	}
	var d Dataset
	if err = st.GetContext(ctx, &d, id, userID); err == nil && d.Serving() {
		s.look.put(id, userID, &d, gen)
	}
	return &d, wrap("read dataset for records", notFound(err))
}

// SDKGeneration is one generation of a dataset's SDK.
type SDKGeneration struct {
	ID         string    `db:"id"`
	DatasetID  string    `db:"dataset_id"`
	Language   string    `db:"language"`
	Version    string    `db:"version"`
	Status     string    `db:"status"`
	DurationMS int64     `db:"duration_ms"`
	SizeBytes  *int64    `db:"size_bytes"`
	Warnings   string    `db:"warnings"` // jsonb: []string
	Error      *string   `db:"error"`
	UserID     *string   `db:"user_id"`
	CreatedAt  time.Time `db:"created_at"`
}

// LogSDKGeneration records a generation.
func LogSDKGeneration(ctx context.Context, q sqlx.ExtContext, g *SDKGeneration) error {
	_, err := sqlx.NamedExecContext(ctx, q, `INSERT INTO platform.sdk_generations (id, dataset_id, language, version, status, duration_ms,
		size_bytes, warnings, error, user_id, created_at) VALUES (:id, :dataset_id, :language, :version, :status, :duration_ms, :size_bytes,
		:warnings, :error, :user_id, :created_at)`, g)
	return wrap("log sdk generation", err)
}

// SDKGenerations are a dataset's last generations, newest first.
func SDKGenerations(ctx context.Context, q sqlx.QueryerContext, datasetID string, limit int) ([]SDKGeneration, error) {
	var out []SDKGeneration
	err := sqlx.SelectContext(ctx, q, &out, `SELECT id, dataset_id, language, version, status, duration_ms, size_bytes, warnings, error,
		user_id, created_at FROM platform.sdk_generations WHERE dataset_id = $1 ORDER BY created_at DESC, id LIMIT $2`, datasetID, limit)
	return out, wrap("list sdk generations", err)
}

// SetDatasetTables records the tables of a connected database's dataset (JSON).
func SetDatasetTables(ctx context.Context, q sqlx.ExecerContext, id, tables string) error {
	_, err := q.ExecContext(ctx, `UPDATE platform.datasets SET tables = $2 WHERE id = $1`, id, tables)
	return wrap("set dataset tables", err)
}
