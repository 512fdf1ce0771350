package queries

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"dataplatform/store"
	"dataplatform/store/datasets"
	"dataplatform/store/jobs"
	"dataplatform/store/records"
	"dataplatform/store/usersql"

	"github.com/parquet-go/parquet-go"
	"github.com/xuri/excelize/v2"
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
}

// Register installs the export handler on r.
func (x *Exporter) Register(r *jobs.Runner) { r.Register(KindExport, x.handle) }

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

func (x *Exporter) write(ctx context.Context, ex *store.QueryExport, p *jobs.Progress) error {
	qr, err := x.Store.QueryByID(ctx, ex.ProjectID, ex.QueryID)
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
	cur, err := usersql.OpenCursor(ctx, x.Store.DB, ex.OrgID, e.GeneratedSQL, args, usersql.QueryOptions{Timeout: fetchTimeout})
	if err != nil {
		return err
	}
	defer cur.Close()
	key := ex.OrgID + "/" + ex.ID + Extensions[ex.Format]
	path := x.Path(key)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(path), ".export-*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	defer f.Close()
	bw := bufio.NewWriterSize(f, 256<<10)
	var w rowWriter
	n, _, err := cur.Each(ctx, func(cols []usersql.QueryColumn) error {
		w, err = newRowWriter(ex.Format, bw, cols, o)
		return err
	}, func(row []any) error {
		return w.row(row)
	})
	if err == nil {
		err = w.close()
	}
	if err == nil {
		err = bw.Flush()
	}
	if err == nil {
		err = f.Sync()
	}
	if err != nil {
		return err
	}
	st, err := f.Stat()
	if err != nil {
		return err
	}
	if err := os.Rename(f.Name(), path); err != nil {
		return err
	}
	size, rows := st.Size(), int64(n)
	ex.SizeBytes, ex.RowCount, ex.StorageKey = &size, &rows, &key
	p.Set(ctx, "written", rows, rows, fmt.Sprintf("%d rows, %d bytes", rows, size))
	return nil
}

// rowWriter writes rows of JSON-ready values (usersql.RunQuery's) in a format.
type rowWriter interface {
	row([]any) error
	close() error
}

func newRowWriter(format string, w io.Writer, cols []usersql.QueryColumn, o ExportOptions) (rowWriter, error) {
	names := make([]string, len(cols))
	for i, c := range cols {
		names[i] = c.Name
	}
	switch format {
	case "csv":
		cw := &csvWriter{w: w, delim: o.Delimiter, quote: o.QuoteChar}
		if o.IncludeHeaders {
			vals := make([]any, len(names))
			for i, n := range names {
				vals[i] = n
			}
			if err := cw.row(vals); err != nil {
				return nil, err
			}
		}
		return cw, nil
	case "json":
		keys := make([][]byte, len(names))
		for i, n := range names {
			keys[i], _ = json.Marshal(n)
		}
		_, err := io.WriteString(w, "[")
		return &jsonWriter{w: w, keys: keys}, err
	case "excel":
		return newExcelWriter(w, names, o.IncludeHeaders)
	case "parquet":
		return newParquetWriter(w, cols)
	}
	return nil, fmt.Errorf("unknown export format %q", format)
}

// text is a value as a CSV field: null empty, numbers and JSON as written.
func text(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case json.Number:
		return string(x)
	case json.RawMessage:
		return string(x)
	case int64:
		return strconv.FormatInt(x, 10)
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64)
	case bool:
		return strconv.FormatBool(x)
	}
	return fmt.Sprint(v)
}

type csvWriter struct {
	w            io.Writer
	delim, quote string
	buf          []byte
}

func (c *csvWriter) row(vals []any) error {
	c.buf = c.buf[:0]
	for i, v := range vals {
		if i > 0 {
			c.buf = append(c.buf, c.delim...)
		}
		s := text(v)
		if strings.Contains(s, c.delim) || strings.Contains(s, c.quote) || strings.ContainsAny(s, "\r\n") {
			c.buf = append(c.buf, c.quote...)
			c.buf = append(c.buf, strings.ReplaceAll(s, c.quote, c.quote+c.quote)...)
			c.buf = append(c.buf, c.quote...)
		} else {
			c.buf = append(c.buf, s...)
		}
	}
	c.buf = append(c.buf, '\n')
	_, err := c.w.Write(c.buf)
	return err
}

func (c *csvWriter) close() error { return nil }

type jsonWriter struct {
	w    io.Writer
	keys [][]byte
	n    int
	buf  []byte
}

func (j *jsonWriter) row(vals []any) error {
	j.buf = j.buf[:0]
	if j.n > 0 {
		j.buf = append(j.buf, ',')
	}
	j.buf = append(j.buf, "\n{"...)
	for i, v := range vals {
		if i > 0 {
			j.buf = append(j.buf, ',')
		}
		j.buf = append(j.buf, j.keys[i]...)
		j.buf = append(j.buf, ':')
		b, err := json.Marshal(v)
		if err != nil {
			return err
		}
		j.buf = append(j.buf, b...)
	}
	j.buf = append(j.buf, '}')
	j.n++
	_, err := j.w.Write(j.buf)
	return err
}

func (j *jsonWriter) close() error {
	_, err := io.WriteString(j.w, "\n]\n")
	return err
}

type excelWriter struct {
	w    io.Writer
	f    *excelize.File
	sw   *excelize.StreamWriter
	next int
}

func newExcelWriter(w io.Writer, names []string, header bool) (*excelWriter, error) {
	f := excelize.NewFile()
	sw, err := f.NewStreamWriter("Sheet1")
	if err != nil {
		return nil, err
	}
	x := &excelWriter{w: w, f: f, sw: sw, next: 1}
	if header {
		vals := make([]any, len(names))
		for i, n := range names {
			vals[i] = n
		}
		if err := x.row(vals); err != nil {
			return nil, err
		}
	}
	return x, nil
}

func (x *excelWriter) row(vals []any) error {
	if x.next > records.MaxExcelRows+1 {
		return fmt.Errorf("an Excel sheet holds at most %d rows: export as csv or parquet", records.MaxExcelRows)
	}
	cells := make([]any, len(vals))
	for i, v := range vals {
		switch y := v.(type) {
		case json.Number:
			if f, err := y.Float64(); err == nil {
				cells[i] = f
			} else {
				cells[i] = string(y)
			}
		case json.RawMessage:
			cells[i] = string(y)
		default:
			cells[i] = y
		}
	}
	cell, _ := excelize.CoordinatesToCellName(1, x.next)
	x.next++
	return x.sw.SetRow(cell, cells)
}

func (x *excelWriter) close() error {
	if err := x.sw.Flush(); err != nil {
		return err
	}
	_, err := x.f.WriteTo(x.w)
	return err
}

type parquetWriter struct {
	pw    *parquet.Writer
	kinds []string // per column: int32, int64, double, boolean or string
	leaf  []int
	batch []parquet.Row
}

func newParquetWriter(w io.Writer, cols []usersql.QueryColumn) (*parquetWriter, error) {
	group := parquet.Group{}
	names := make([]string, len(cols))
	p := &parquetWriter{kinds: make([]string, len(cols)), leaf: make([]int, len(cols))}
	seen := map[string]int{}
	for i, c := range cols {
		name := c.Name
		if seen[name]++; seen[name] > 1 {
			name = fmt.Sprintf("%s_%d", name, seen[name])
		}
		names[i] = name
		var n parquet.Node
		switch c.Type {
		case "int2", "int4":
			p.kinds[i], n = "int32", parquet.Int(32)
		case "int8":
			p.kinds[i], n = "int64", parquet.Int(64)
		case "float4", "float8", "numeric":
			p.kinds[i], n = "double", parquet.Leaf(parquet.DoubleType)
		case "bool":
			p.kinds[i], n = "boolean", parquet.Leaf(parquet.BooleanType)
		default:
			p.kinds[i], n = "string", parquet.String()
		}
		group[name] = parquet.Optional(n)
	}
	// A Group orders its fields by name: leaf i is the i-th name in that order.
	order := slices.Clone(names)
	slices.Sort(order)
	for i, n := range names {
		p.leaf[i] = slices.Index(order, n)
	}
	p.pw = parquet.NewWriter(w, parquet.NewSchema("row", group), parquet.PageBufferSize(256<<10))
	p.batch = make([]parquet.Row, 0, 1024)
	return p, nil
}

func (p *parquetWriter) row(vals []any) error {
	r := make(parquet.Row, len(vals))
	for i, v := range vals {
		var pv parquet.Value
		if v == nil {
			pv = parquet.NullValue()
		} else {
			switch p.kinds[i] {
			case "int32", "int64":
				n, err := strconv.ParseInt(text(v), 10, 64)
				if err != nil {
					return err
				}
				if p.kinds[i] == "int32" {
					pv = parquet.Int32Value(int32(n))
				} else {
					pv = parquet.Int64Value(n)
				}
			case "double":
				f, err := strconv.ParseFloat(text(v), 64)
				if err != nil {
					return err
				}
				pv = parquet.DoubleValue(f)
			case "boolean":
				pv = parquet.BooleanValue(v == true)
			default:
				pv = parquet.ByteArrayValue([]byte(text(v)))
			}
		}
		def := 0
		if !pv.IsNull() {
			def = 1
		}
		r[p.leaf[i]] = pv.Level(0, def, p.leaf[i])
	}
	p.batch = append(p.batch, r)
	if len(p.batch) == cap(p.batch) {
		if _, err := p.pw.WriteRows(p.batch); err != nil {
			return err
		}
		p.batch = p.batch[:0]
	}
	return nil
}

func (p *parquetWriter) close() error {
	if len(p.batch) > 0 {
		if _, err := p.pw.WriteRows(p.batch); err != nil {
			return err
		}
	}
	return p.pw.Close()
}
