// Package datasets turns uploaded files into dataset tables: the background job that infers
// a file's columns, creates the table and loads the rows with COPY.
package datasets

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"dataplatform/ingest"
	"dataplatform/jobs"
	"dataplatform/store"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
)

// KindIngest is the job kind that loads a file dataset.
const KindIngest = "dataset.ingest"

// Payload is the ingest job's payload.
type Payload struct {
	DatasetID string `json:"dataset_id"`
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
	return in.Store.Tx(ctx, func(tx *sqlx.Tx) error {
		d, err := store.DatasetByID(ctx, tx, pl.DatasetID, true)
		if errors.Is(err, store.ErrNotFound) {
			return nil // deleted meanwhile: nothing to do
		} else if err != nil {
			return err
		}
		if d.Status == "active" {
			return nil // a previous attempt finished
		}
		if d.StorageKey == nil {
			return jobs.Permanent(errors.New("the dataset has no uploaded file"))
		}
		path := in.UploadPath(*d.StorageKey)
		var cols []ingest.Column
		switch d.SourceType {
		case "csv":
			p.Set(ctx, "analyzing", 0, 0, "inferring column types")
			if cols, err = ingest.InferCSV(path); err != nil {
				return fileError(err)
			}
		default:
			return jobs.Permanent(fmt.Errorf("loading %s files is not available yet; upload the data as CSV", d.SourceType))
		}
		if len(cols) == 0 {
			return jobs.Permanent(errors.New("the file has no columns"))
		}
		if _, err := tx.ExecContext(ctx, `SET LOCAL timezone = 'UTC'`); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `CREATE SCHEMA IF NOT EXISTS `+pq.QuoteIdentifier(d.TableSchema)); err != nil {
			return err
		}
		table := Table(d.TableSchema, d.ID)
		if _, err := tx.ExecContext(ctx, `DROP TABLE IF EXISTS `+table); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, createTable(table, cols)); err != nil {
			return err
		}
		p.Set(ctx, "loading", 0, 0, "loading rows")
		n, err := copyCSV(ctx, tx, d, cols, path, p)
		if err != nil {
			return err
		}
		colsJSON, _ := json.Marshal(cols)
		now := in.Clock()
		ms := time.Since(start).Milliseconds()
		d.Status, d.Error, d.Columns, d.RowCount, d.ProcessingTimeMS, d.UpdatedAt = "active", nil, string(colsJSON), &n, &ms, now
		if err := store.FinishDataset(ctx, tx, d); err != nil {
			return err
		}
		p.Set(ctx, "complete", n, n, "")
		return store.Emit(ctx, tx, "dataset.ready", d.OrgID, map[string]any{"dataset_id": d.ID, "project_id": d.ProjectID, "row_count": n}, now)
	})
}

// fileError makes problems with the file's content permanent: retrying cannot fix them.
func fileError(err error) error {
	var re *ingest.RowError
	if errors.As(err, &re) {
		return jobs.Permanent(err)
	}
	return err
}

func createTable(table string, cols []ingest.Column) string {
	var b strings.Builder
	b.WriteString(`CREATE TABLE ` + table + ` (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY`)
	for _, c := range cols {
		b.WriteString(", " + pq.QuoteIdentifier(c.Name) + " " + string(c.Type))
		if !c.Nullable {
			b.WriteString(" NOT NULL")
		}
	}
	b.WriteString(`, created_at timestamptz NOT NULL DEFAULT now(), updated_at timestamptz NOT NULL DEFAULT now(),
		deleted_at timestamptz, version integer NOT NULL DEFAULT 1)`)
	return b.String()
}

// copyCSV streams the file into the table with COPY.
func copyCSV(ctx context.Context, tx *sqlx.Tx, d *store.Dataset, cols []ingest.Column, path string, p *jobs.Progress) (int64, error) {
	r, err := ingest.OpenCSV(path)
	if err != nil {
		return 0, fileError(err)
	}
	defer r.Close()
	names := make([]string, len(cols))
	for i, c := range cols {
		names[i] = c.Name
	}
	stmt, err := tx.PrepareContext(ctx, pq.CopyInSchema(d.TableSchema, d.ID, names...))
	if err != nil {
		return 0, err
	}
	defer stmt.Close()
	vals := make([]any, len(cols))
	var n int64
	for {
		rec, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return 0, fileError(err)
		}
		for i, v := range rec {
			if v == "" {
				vals[i] = nil
			} else {
				vals[i] = v
			}
		}
		if _, err := stmt.ExecContext(ctx, vals...); err != nil {
			return 0, copyError(err, r.Line())
		}
		if n++; n%100000 == 0 {
			p.Set(ctx, "loading", n, 0, "")
		}
	}
	if _, err := stmt.ExecContext(ctx); err != nil {
		return 0, copyError(err, 0)
	}
	return n, nil
}

// copyError makes PostgreSQL's rejection of a value a readable, permanent failure.
func copyError(err error, line int) error {
	var pe *pq.Error
	if errors.As(err, &pe) && (strings.HasPrefix(string(pe.Code), "22") || strings.HasPrefix(string(pe.Code), "23")) {
		msg := pe.Message
		if pe.Where != "" {
			msg += " (" + pe.Where + ")"
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
		msg := cause.Error()
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
