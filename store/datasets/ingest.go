package datasets

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"encoding/json"
	"errors"
	"fmt"
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
	// PrimaryKey is the column the create request names as the records' key, if any.
	PrimaryKey string `json:"primary_key,omitempty"`
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
	ph := &phases{last: start}
	ctx = context.WithValue(ctx, phasesKey{}, ph)
	if err := in.load(ctx, conn, tx, &pl, start, p); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	lap(ctx, "commit")
	in.Log.Info("dataset loaded", append([]any{"dataset_id", pl.DatasetID, "total_ms", time.Since(start).Milliseconds()}, ph.ms...)...)
	return nil
}

// phases times the steps of one load for its log line ("dataset loaded": infer_ms, copy_ms,
// key_ms, analyze_ms...), kept in the load's context.
type phases struct {
	last time.Time
	ms   []any
}

type phasesKey struct{}

// lap ends the load's current step, named name.
func lap(ctx context.Context, name string) {
	if ph, ok := ctx.Value(phasesKey{}).(*phases); ok {
		now := time.Now()
		ph.ms = append(ph.ms, name+"_ms", now.Sub(ph.last).Milliseconds())
		ph.last = now
	}
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
	lap(ctx, "infer")
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
	if _, err := tx.ExecContext(ctx, ChangeTrigger(Table(d.TableSchema, d.ID), KeyOf(cols))); err != nil {
		return err
	}
	lap(ctx, "trigger")
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
	lap(ctx, "analyze")
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
	lap(ctx, "finish")
	return store.Emit(ctx, tx, "dataset.ready", d.OrgID, map[string]any{"dataset_id": d.ID, "project_id": d.ProjectID, "row_count": *d.RowCount}, now)
}

// SampleRows is how many records type inference reads before the load starts.
const SampleRows = 100_000

// loadFile loads the file into a new table and chooses its key: the column named as
// primary_key, or the first of the inferred candidates (keyCandidates) whose values are
// unique and present; a file without one keeps the generated id.
func (in *Ingester) loadFile(ctx context.Context, conn *sqlx.Conn, tx *sqlx.Tx, d *store.Dataset, pl *Payload, schema *ingest.Schema,
	path string, p *jobs.Progress) ([]ingest.Column, error) {
	cols, err := in.attempt(ctx, conn, tx, d, pl, schema, path, p)
	if err != nil {
		return nil, err
	}
	var cands []keyCandidate
	declared := pl.PrimaryKey != ""
	if declared {
		i := slices.IndexFunc(cols, func(c ingest.Column) bool { return c.Name == pl.PrimaryKey || c.Original == pl.PrimaryKey })
		if i < 0 {
			names := make([]string, len(cols))
			for j, c := range cols {
				names[j] = c.Name
			}
			return nil, jobs.Permanent(fmt.Errorf("primary_key %s is not a column of the file (its columns: %s)", pl.PrimaryKey, strings.Join(names, ", ")))
		}
		if !keyType(cols[i].Type) {
			return nil, jobs.Permanent(fmt.Errorf("primary_key %s: a key is an integer, text or uuid column; this one is %s", pl.PrimaryKey, cols[i].Type))
		}
		cands = []keyCandidate{{i, "named at creation"}}
	} else if len(pl.Schema) == 0 { // a declared schema says what the table is: its key too (primary_key)
		cands = keyCandidates(d.Name, cols)
	}
	lap(ctx, "copy")
	p.Set(ctx, "indexing", 0, 0, "choosing the records' key")
	cols, err = chooseKey(ctx, tx, d.TableSchema, d.ID, cols, cands, declared)
	lap(ctx, "key")
	var ke *KeyError
	if errors.As(err, &ke) {
		return nil, jobs.Permanent(err)
	}
	return cols, err
}

// attempt creates the table for schema (or the declared columns), with a generated id that
// is not yet its primary key (loadFile chooses the key), and loads the file into it, inside a
// savepoint that is rolled back when it fails.
func (in *Ingester) attempt(ctx context.Context, conn *sqlx.Conn, tx *sqlx.Tx, d *store.Dataset, pl *Payload, schema *ingest.Schema,
	path string, p *jobs.Progress) ([]ingest.Column, error) {
	cols := schema.Columns
	var err error
	if len(pl.Schema) > 0 {
		if schema.Columns, cols, err = apply(schema.Columns, pl.Schema); err != nil {
			return nil, jobs.Permanent(err)
		}
	}
	if len(cols) == 0 {
		return nil, jobs.Permanent(errors.New("the file has no columns"))
	}
	ddl, err := createTable(d.TableSchema, d.ID, cols)
	if err != nil {
		return nil, jobs.Permanent(err)
	}
	if _, err := tx.ExecContext(ctx, `SAVEPOINT load`); err != nil {
		return nil, err
	}
	_, err = func() (int64, error) {
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
			return nil, rerr
		}
		return nil, err
	}
	return slices.Clone(cols), nil
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
	defer func() { _ = r.Close() }()
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
			_ = ds.Close()
			return errors.New("the database driver cannot stream COPY data")
		}
		defer func() { _ = st.Close() }()
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
