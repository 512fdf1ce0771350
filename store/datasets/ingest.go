package datasets

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"regexp"
	"slices"
	"strings"
	"time"

	"dataplatform/store"
	"dataplatform/store/ingest"
	"dataplatform/store/jobs"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
)

// KindIngest is the job kind that loads a file dataset.
const KindIngest = "dataset.ingest"

// Payload is the ingest job's payload.
type Payload struct {
	DatasetID string `json:"dataset_id"`
	// Schema is the declared schema of the create request, if any: it overrides inference.
	Schema []ingest.Column `json:"schema,omitempty"`
}

// Ingester runs ingest jobs.
type Ingester struct {
	Store      *store.Store
	Clock      func() time.Time
	Log        *slog.Logger
	UploadPath func(storageKey string) string
}

// Register installs the ingest handler and the failure hook on r.
func (in *Ingester) Register(r *jobs.Runner) {
	r.Register(KindIngest, in.handle)
	r.OnFinish(func(ctx context.Context, j *jobs.Job, err error) {
		if j.Kind == KindIngest && err != nil {
			in.fail(ctx, j, err)
		}
	})
}

// Table is the quoted name of a dataset's table.
func Table(schema, id string) string {
	return pq.QuoteIdentifier(schema) + "." + pq.QuoteIdentifier(id)
}

// handle loads the dataset in one transaction: its table, rows and status appear together or
// not at all, so an interrupted load leaves nothing half-filled, and a retry starts over.
func (in *Ingester) handle(ctx context.Context, j *jobs.Job, p *jobs.Progress) error {
	var pl Payload
	if err := j.Decode(&pl); err != nil {
		return jobs.Permanent(err)
	}
	start := time.Now()
	if d, err := store.DatasetByID(ctx, in.Store.DB, pl.DatasetID, false); err == nil && d.Type != "database" {
		if err := EnsureSchema(ctx, in.Store.DB, d.TableSchema); err != nil {
			return err
		}
	}
	// One connection for the whole load: COPY streams through the driver itself (raw CSV
	// lines, no per-row round through database/sql), inside the same transaction as the
	// table's creation and the dataset's status.
	conn, err := in.Store.DB.Connx(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	tx, err := conn.BeginTxx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if err := in.load(ctx, conn, tx, &pl, start, p); err != nil {
		return err
	}
	return tx.Commit()
}

func (in *Ingester) load(ctx context.Context, conn *sqlx.Conn, tx *sqlx.Tx, pl *Payload, start time.Time, p *jobs.Progress) error {
	d, err := store.DatasetByID(ctx, tx, pl.DatasetID, true)
	if errors.Is(err, store.ErrNotFound) {
		return nil // deleted meanwhile: nothing to do
	} else if err != nil {
		return err
	}
	if d.Status == "active" {
		return nil // a previous attempt finished
	}
	if d.Type == "database" {
		return in.ready(ctx, tx, d, start, 0, p)
	}
	if d.StorageKey == nil {
		return jobs.Permanent(errors.New("the dataset has no uploaded file"))
	}
	path := in.UploadPath(*d.StorageKey)
	if _, err := tx.ExecContext(ctx, `SET LOCAL timezone = 'UTC'`); err != nil {
		return err
	}
	// Types come from the first records; every value is verified as it is converted for
	// COPY. When one does not fit (or the load fails for any reason the file could cause),
	// the attempt is rolled back and the whole file is inferred before loading again.
	p.Set(ctx, "analyzing", 0, 0, "inferring column types")
	schema, err := ingest.InferSample(path, ingest.Format(d.SourceType), SampleRows)
	if err != nil {
		return fileError(err)
	}
	cols, err := in.loadFile(ctx, conn, tx, d, pl, schema, path, p)
	if err != nil && schema.Sampled && jobs.IsPermanent(err) {
		p.Set(ctx, "analyzing", 0, 0, "a value did not fit the sampled types: inferring from the whole file")
		if schema, err = ingest.Infer(path, ingest.Format(d.SourceType)); err != nil {
			return fileError(err)
		}
		cols, err = in.loadFile(ctx, conn, tx, d, pl, schema, path, p)
	}
	if err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, ChangeTrigger(Table(d.TableSchema, d.ID))); err != nil {
		return err
	}
	colsJSON, _ := json.Marshal(cols)
	d.Columns = string(colsJSON)
	return in.ready(ctx, tx, d, start, time.Since(start).Milliseconds(), p)
}

// ready analyses the loaded (or connected) dataset and makes it active.
func (in *Ingester) ready(ctx context.Context, tx *sqlx.Tx, d *store.Dataset, start time.Time, loadMS int64, p *jobs.Progress) error {
	p.Set(ctx, "indexing", 0, 0, "computing statistics and the search index")
	now := in.Clock().UTC()
	if err := Analyze(ctx, tx, d, now); err != nil {
		return err
	}
	indexMS := time.Since(start).Milliseconds() - loadMS
	d.Status, d.Error, d.ProcessingTimeMS, d.IndexTimeMS, d.IndexedAt, d.UpdatedAt = "active", nil, &loadMS, &indexMS, &now, now
	if err := store.FinishDataset(ctx, tx, d); err != nil {
		return err
	}
	if d.Type == "file" {
		if err := EnqueueSearchIndex(ctx, tx, d); err != nil {
			return err
		}
	}
	p.Set(ctx, "complete", *d.RowCount, *d.RowCount, "")
	return store.Emit(ctx, tx, "dataset.ready", d.OrgID, map[string]any{"dataset_id": d.ID, "project_id": d.ProjectID, "row_count": *d.RowCount}, now)
}

// SampleRows is how many records type inference reads before the load starts.
const SampleRows = 100_000

// loadFile loads the file into a new table. A file's own "id" column of integers is tried as
// the records' key first (its values become the system id, so record 5 of the API is row id 5
// of the file); when its values are not unique (or NULL) the load starts over with the column
// kept as src_id, which is made UNIQUE when its values allow, so that relationships can point
// at it (Analyze infers links only to a unique key). The column's description says which.
func (in *Ingester) loadFile(ctx context.Context, conn *sqlx.Conn, tx *sqlx.Tx, d *store.Dataset, pl *Payload, schema *ingest.Schema,
	path string, p *jobs.Progress) ([]ingest.Column, error) {
	key := fileKey(schema.Columns)
	if len(pl.Schema) == 0 && key >= 0 && (schema.Columns[key].Type == ingest.Integer || schema.Columns[key].Type == ingest.BigInt) {
		cols, _, err := in.attempt(ctx, conn, tx, d, pl, schema, key, path, p)
		if err == nil {
			table := Table(d.TableSchema, d.ID)
			// API-created records continue after the file's largest id.
			_, err = tx.ExecContext(ctx, `SELECT setval(pg_get_serial_sequence($1, 'id'), greatest(max(id), 1)) FROM `+table, table)
			return cols, err
		}
		if !jobs.IsPermanent(err) {
			return nil, err
		}
		p.Set(ctx, "loading", 0, 0, "the file's id column is not a key (not unique or empty): loading it as src_id")
	}
	cols, _, err := in.attempt(ctx, conn, tx, d, pl, schema, -1, path, p)
	if err != nil || len(pl.Schema) > 0 || key < 0 {
		return cols, err
	}
	return cols, uniqueSourceID(ctx, tx, d, cols)
}

// fileKey is the index of the file's own id column (named src_id in the table), -1 if none.
func fileKey(cols []ingest.Column) int {
	for i, c := range cols {
		if strings.EqualFold(c.Original, "id") && c.Name == "src_id" {
			return i
		}
	}
	return -1
}

// uniqueSourceID makes the file's id column (kept as src_id) UNIQUE when its values are, and
// says in the column's description why it is not the records' key.
func uniqueSourceID(ctx context.Context, tx *sqlx.Tx, d *store.Dataset, cols []ingest.Column) error {
	i := fileKey(cols)
	if i < 0 {
		return nil
	}
	c := &cols[i]
	if c.Type == ingest.Integer || c.Type == ingest.BigInt {
		c.Description = "The file's id column. Its values are not unique (or some are empty), so records have their own id and this column is not a key."
		return nil
	}
	u := *c
	u.Constraints = &ingest.Constraints{Unique: true}
	k := Constraints(d.ID, u)[0]
	if _, err := tx.ExecContext(ctx, `SAVEPOINT src_key`); err != nil {
		return err
	}
	_, err := tx.ExecContext(ctx, `ALTER TABLE `+Table(d.TableSchema, d.ID)+` ADD CONSTRAINT `+pq.QuoteIdentifier(k.Name)+` `+k.SQL)
	var pe *pq.Error
	if errors.As(err, &pe) && pe.Code == "23505" {
		if _, err := tx.ExecContext(ctx, `ROLLBACK TO SAVEPOINT src_key`); err != nil {
			return err
		}
		c.Description = "The file's id column. Its values are not unique, so records have their own id and this column is not a key."
		return nil
	} else if err != nil {
		return err
	}
	c.Constraints = u.Constraints
	c.Description = "The file's id column, unique. Its values are not integers, so records have their own id as well."
	return nil
}

// attempt creates the table for schema (or the declared columns) and loads the file into it,
// inside a savepoint that is rolled back when it fails. key >= 0 loads that file column into
// the system id column instead of a column of its own.
func (in *Ingester) attempt(ctx context.Context, conn *sqlx.Conn, tx *sqlx.Tx, d *store.Dataset, pl *Payload, schema *ingest.Schema,
	key int, path string, p *jobs.Progress) ([]ingest.Column, int64, error) {
	cols := schema.Columns
	var err error
	if len(pl.Schema) > 0 {
		if schema.Columns, cols, err = apply(schema.Columns, pl.Schema); err != nil {
			return nil, 0, jobs.Permanent(err)
		}
	}
	if key >= 0 {
		read := *schema
		read.Columns = slices.Clone(schema.Columns)
		read.Columns[key].Name = "id"
		schema = &read
		cols = slices.Delete(slices.Clone(cols), key, key+1)
	}
	if len(cols) == 0 {
		return nil, 0, jobs.Permanent(errors.New("the file has no columns"))
	}
	ddl, err := createTable(d.TableSchema, d.ID, cols)
	if err != nil {
		return nil, 0, jobs.Permanent(err)
	}
	if _, err := tx.ExecContext(ctx, `SAVEPOINT load`); err != nil {
		return nil, 0, err
	}
	n, err := func() (int64, error) {
		table := Table(d.TableSchema, d.ID)
		for _, q := range append([]string{`DROP TABLE IF EXISTS ` + table, ddl}, RowSecurity(table)...) {
			if _, err := tx.ExecContext(ctx, q); err != nil {
				return 0, copyError(err)
			}
		}
		total := schema.Rows
		if schema.Sampled {
			total = 0 // unknown
		}
		p.Set(ctx, "loading", 0, total, "loading rows")
		return copyRows(ctx, conn, table, schema, path, p)
	}()
	if err != nil {
		if _, rerr := tx.ExecContext(ctx, `ROLLBACK TO SAVEPOINT load`); rerr != nil {
			return nil, 0, rerr
		}
		return nil, 0, err
	}
	return cols, n, nil
}

// fileError makes problems with the file's content permanent: retrying cannot fix them.
func fileError(err error) error {
	var re *ingest.RowError
	if errors.As(err, &re) {
		return jobs.Permanent(err)
	}
	return err
}

// copyDataStmt is lib/pq's COPY statement, which takes rows as text lines.
type copyDataStmt interface {
	driver.Stmt
	CopyData(ctx context.Context, line string) (driver.Result, error)
}

// copyRows streams the file's records into the table with COPY (text format), through the
// driver connection of conn (on which the load's transaction is open): each record goes from
// the file to a COPY line without a round through database/sql.
func copyRows(ctx context.Context, conn *sqlx.Conn, table string, schema *ingest.Schema, path string, p *jobs.Progress) (int64, error) {
	r, err := ingest.OpenSchema(path, schema)
	if err != nil {
		return 0, fileError(err)
	}
	defer r.Close()
	names := make([]string, len(schema.Columns))
	for i, c := range schema.Columns {
		names[i] = pq.QuoteIdentifier(c.Name)
	}
	var n int64
	err = conn.Raw(func(dc any) error {
		prep, ok := dc.(driver.ConnPrepareContext)
		if !ok {
			return errors.New("the database driver cannot COPY")
		}
		ds, err := prep.PrepareContext(ctx, `COPY `+table+` (`+strings.Join(names, ", ")+`) FROM STDIN WITH (FREEZE)`)
		if err != nil {
			return err
		}
		st, ok := ds.(copyDataStmt)
		if !ok {
			ds.Close()
			return errors.New("the database driver cannot stream COPY data")
		}
		defer st.Close()
		// Lines are handed to the driver in batches of about 64 KiB (CopyData adds the last
		// newline itself): one call and one copy per batch instead of per row.
		batch := make([]byte, 0, 72<<10)
		send := func() error {
			if len(batch) == 0 {
				return nil
			}
			// A context that cannot be cancelled: lib/pq would otherwise start a watcher per
			// call. Cancellation is checked every 10,000 rows instead.
			_, err := st.CopyData(context.Background(), string(batch[:len(batch)-1]))
			batch = batch[:0]
			return copyError(err)
		}
		for {
			batch, err = r.AppendCopyLine(batch)
			if err == io.EOF {
				break
			}
			if err != nil {
				return fileError(err)
			}
			if len(batch) >= 64<<10 {
				if err := send(); err != nil {
					return err
				}
			}
			if n++; n%10000 == 0 {
				if err := ctx.Err(); err != nil {
					return err
				}
				if n%100000 == 0 {
					p.Set(ctx, "loading", n, schema.Rows, "")
				}
			}
		}
		if err := send(); err != nil {
			return err
		}
		_, err = st.Exec(nil) //nolint:staticcheck // ends the COPY; lib/pq has no context variant for it
		return copyError(err)
	})
	return n, err
}

// copyWhere is the context PostgreSQL gives a COPY error: the table, the record (its line in
// the COPY stream, the data row of the file) and the column when one value was at fault.
var copyWhere = regexp.MustCompile(`^COPY [^,]+, line (\d+)(?:, column ([^:]+))?`)

// copyError makes PostgreSQL's rejection of a value a readable, permanent failure.
func copyError(err error) error {
	var pe *pq.Error
	if errors.As(err, &pe) && (strings.HasPrefix(string(pe.Code), "22") || strings.HasPrefix(string(pe.Code), "23")) {
		msg := pe.Message
		if m := copyWhere.FindStringSubmatch(pe.Where); m != nil {
			at := "data row " + m[1]
			if m[2] != "" {
				at += ", column " + m[2]
			}
			msg = at + ": " + msg
		}
		return jobs.Permanent(errors.New(msg))
	}
	return err
}

// fail marks the dataset failed with the job's error, once no more attempts will be made.
func (in *Ingester) fail(ctx context.Context, j *jobs.Job, cause error) {
	var pl Payload
	if j.Decode(&pl) != nil {
		return
	}
	err := in.Store.Tx(ctx, func(tx *sqlx.Tx) error {
		d, err := store.DatasetByID(ctx, tx, pl.DatasetID, true)
		if err != nil {
			return err
		}
		msg := jobs.Describe(cause)
		now := in.Clock()
		d.Status, d.Error, d.UpdatedAt = "failed", &msg, now
		if err := store.FinishDataset(ctx, tx, d); err != nil {
			return err
		}
		return store.Emit(ctx, tx, "dataset.failed", d.OrgID, map[string]any{"dataset_id": d.ID, "project_id": d.ProjectID, "error": msg}, now)
	})
	if err != nil && !errors.Is(err, store.ErrNotFound) && !errors.Is(err, sql.ErrNoRows) {
		in.Log.Error("marking a dataset failed", "dataset_id", pl.DatasetID, "error", err)
	}
}
