package queries

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"dataplatform/store"
	"dataplatform/store/datasets"
	"dataplatform/store/export"
	"dataplatform/store/jobs"
	"dataplatform/store/usersql"
)

// KindExport is the job that writes a query export's file.
const KindExport = "query.export"

// ExportTTL is how long an export's file and link live.
const ExportTTL = 24 * time.Hour

// ExportOptions shape a file.
type ExportOptions struct {
	IncludeHeaders bool   `json:"include_headers"`
	Delimiter      string `json:"delimiter"`  // csv: one character
	QuoteChar      string `json:"quote_char"` // csv: one character
	EscapeFormulas bool   `json:"escape_formulas"`
}

// ContentTypes are the media types of the export formats; Extensions their file endings.
var (
	ContentTypes = map[string]string{"csv": "text/csv", "json": "application/json",
		"excel": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet", "parquet": "application/vnd.apache.parquet"}
	Extensions = map[string]string{"csv": ".csv", "json": ".json", "excel": ".xlsx", "parquet": ".parquet"}
)

// Exporter runs export jobs: the query's SQL again, through a cursor, into a file.
type Exporter struct {
	Store *store.Store
	Clock func() time.Time
	Dir   string // where export files live
	// MaxRowBytes: the largest row an export reads (DP_QUERY_RESULT_BYTES); 0: no cap
	MaxRowBytes int64
}

// Register installs the export handler on r, and the hook that fails an export whose job
// failed without its handler saying so (every attempt interrupted by its server's death).
func (x *Exporter) Register(r *jobs.Runner) {
	r.Register(KindExport, x.handle)
	r.OnFinish(func(ctx context.Context, j *jobs.Job, err error) {
		if j.Kind != KindExport || err == nil {
			return
		}
		var pl struct {
			ExportID string `json:"export_id"`
		}
		if j.Decode(&pl) == nil {
			_ = store.FailQueryExport(ctx, x.Store.DB, pl.ExportID, jobs.Describe(err), x.Clock())
		}
	})
}

// partialPrefix begins the name of a file being written; it becomes the export's file by a
// rename once complete, so a download never sees part of one.
const partialPrefix = ".export-"

// PartialAge is how long a partial file must have gone unwritten before it is taken for the
// remains of a server killed mid-export: a running export writes at least every fetch
// (fetchTimeout), and its job's retry writes a new file of its own.
const PartialAge = time.Hour

// SweepPartial removes the partial files nothing has written to since before (file times
// are the machine's) and returns how many.
func (x *Exporter) SweepPartial(before time.Time) (int, error) {
	n := 0
	err := filepath.WalkDir(x.Dir, func(p string, d fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil || !d.Type().IsRegular() || !strings.HasPrefix(d.Name(), partialPrefix) {
			return err
		}
		if info, err := d.Info(); err == nil && info.ModTime().Before(before) && os.Remove(p) == nil {
			n++
		}
		return nil
	})
	return n, err
}

// Path is the file of a storage key.
func (x *Exporter) Path(key string) string { return filepath.Join(x.Dir, filepath.FromSlash(key)) }

// fetchTimeout bounds each fetch of an export's cursor.
const fetchTimeout = 120 * time.Second

func (x *Exporter) handle(ctx context.Context, j *jobs.Job, p *jobs.Progress) error {
	var pl struct {
		ExportID string `json:"export_id"`
	}
	if err := j.Decode(&pl); err != nil {
		return jobs.Permanent(err)
	}
	ex, err := store.QueryExportByID(ctx, x.Store.DB, "", pl.ExportID)
	if errors.Is(err, store.ErrNotFound) {
		return nil // deleted meanwhile
	} else if err != nil {
		return err
	}
	if ex.Status != "processing" {
		return nil
	}
	err = x.write(ctx, ex, p)
	now := x.Clock()
	ex.CompletedAt = &now
	if err != nil {
		ex.Status, ex.Error = "failed", ptr(jobs.Describe(err))
	} else {
		ex.Status = "completed"
	}
	if ferr := store.FinishQueryExport(ctx, x.Store.DB, ex); ferr != nil {
		return ferr
	}
	if err != nil {
		return jobs.Permanent(err)
	}
	return nil
}

func ptr[T any](v T) *T { return &v }

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer func() { _ = d.Close() }()
	return d.Sync()
}

func (x *Exporter) write(ctx context.Context, ex *store.QueryExport, p *jobs.Progress) error {
	var viewer string // the export's requester, who could see the query then
	if ex.UserID != nil {
		viewer = *ex.UserID
	}
	qr, err := store.QueryByID(ctx, x.Store.DB, ex.ProjectID, ex.QueryID, viewer)
	if err != nil {
		return err
	}
	var e Executed
	if qr.Body == nil || json.Unmarshal([]byte(*qr.Body), &e) != nil || e.GeneratedSQL == "" {
		return errors.New("the query has no SQL to run again")
	}
	var args []any
	if err := json.Unmarshal([]byte(qr.Args), &args); err != nil {
		return err
	}
	var o ExportOptions
	if err := json.Unmarshal([]byte(ex.Options), &o); err != nil {
		return err
	}
	if err := datasets.EnsureQueryRole(ctx, x.Store.DB, ex.OrgID); err != nil {
		return err
	}
	cur, err := usersql.OpenCursor(ctx, x.Store.DB, ex.OrgID, e.GeneratedSQL, args, usersql.QueryOptions{Timeout: fetchTimeout, MaxRowBytes: x.MaxRowBytes})
	if err != nil {
		return err
	}
	defer cur.Close()
	key := ex.OrgID + "/" + ex.ID + Extensions[ex.Format]
	path := x.Path(key)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(path), partialPrefix+"*")
	if err != nil {
		return err
	}
	defer func() { _ = os.Remove(f.Name()) }()
	defer func() { _ = f.Close() }() // closed and renamed below on success; this is the failure path
	bw := bufio.NewWriterSize(f, 256<<10)
	var w *export.Writer
	n, _, err := cur.Each(ctx, func(cols []usersql.QueryColumn) error {
		w, err = export.New(bw, ex.Format, exportColumns(cols), o.file())
		return err
	}, func(row []any) error {
		return w.Row(row)
	})
	if err == nil {
		err = w.Close()
	} else if w != nil {
		w.Abort()
	}
	if err == nil {
		err = bw.Flush()
	}
	if err == nil {
		err = f.Sync()
	}
	if rte := (*usersql.RowTooLargeError)(nil); errors.As(err, &rte) {
		return jobs.Permanent(err) // running it again cannot help
	} else if err != nil {
		return err
	}
	st, err := f.Stat()
	if err != nil {
		return err
	}
	if err := os.Rename(f.Name(), path); err != nil {
		return err
	}
	if err := syncDir(filepath.Dir(path)); err != nil { // the rename survives a crash before the export is marked completed
		return err
	}
	size, rows := st.Size(), int64(n)
	ex.SizeBytes, ex.RowCount, ex.StorageKey = &size, &rows, &key
	p.Set(ctx, "written", rows, rows, fmt.Sprintf("%d rows, %d bytes", rows, size))
	return nil
}

// file is how the options shape an export's file (a JSON array's brackets on lines of
// their own; in csv, as in the record export, NULL as nothing and an empty string quoted).
func (o ExportOptions) file() export.Options {
	return export.Options{Header: o.IncludeHeaders, Delimiter: o.Delimiter, Quote: o.QuoteChar, QuoteEmpty: true, BracketLines: true, Schema: "row",
		EscapeFormulas: o.EscapeFormulas}
}

// exportColumns are a query's columns as the columns of its file: parquet and excel type
// integers, floating-point and numeric values, booleans, dates, timestamps and JSON as the
// record export does; the rest is text.
func exportColumns(cols []usersql.QueryColumn) []export.Column {
	out := make([]export.Column, len(cols))
	for i, c := range cols {
		out[i] = export.Column{Name: c.Name, Kind: export.Text}
		switch c.Type {
		case "int2", "int4":
			out[i].Kind = export.Int32
		case "int8":
			out[i].Kind = export.Int64
		case "float4", "float8", "numeric":
			out[i].Kind = export.Double
		case "bool":
			out[i].Kind = export.Bool
		case "date":
			out[i].Kind = export.Date
		case "timestamptz", "timestamp":
			out[i].Kind = export.Timestamp
		case "json", "jsonb":
			out[i].Kind = export.JSON
		}
	}
	return out
}
