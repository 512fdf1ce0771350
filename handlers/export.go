package handlers

import (
	"bytes"
	"compress/gzip"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"time"

	"dataplatform/handlers/apierr"
	"dataplatform/store/ingest"
	"dataplatform/store/records"

	"github.com/labstack/echo/v4"
)

var exportTypes = map[string]struct{ contentType, ext string }{
	"csv":     {"text/csv; charset=utf-8", "csv"},
	"json":    {"application/json", "json"},
	"ndjson":  {"application/x-ndjson", "ndjson"},
	"parquet": {"application/vnd.apache.parquet", "parquet"},
	"excel":   {"application/vnd.openxmlformats-officedocument.spreadsheetml.sheet", "xlsx"},
}

// Export is GET /api/v1/datasets/{id}/data/export: every matching record, streamed from the
// database to the client row by row (memory stays flat whatever the table's size).
func (h *Records) Export(c echo.Context) error {
	rc, err := h.resolve(c, "datasets:read")
	if err != nil {
		return err
	}
	t, q := rc.desc.Table, c.QueryParams()
	format := q.Get("format")
	if format == "" {
		format = "csv"
	}
	if format == "json" && q.Get("stream") == "true" {
		format = "ndjson" // SPEC.md: stream=true with json is NDJSON
	}
	delim := q.Get("delimiter")
	if delim == "" {
		delim = ","
	} else if delim == "tab" || delim == `\t` {
		delim = "\t"
	}
	if !slices.Contains(records.Delimiters, delim) {
		return apierr.Field("query.delimiter", "enum", "the delimiter is one of , ; | or tab")
	}
	fields, err := t.Exact(q.Get("fields"))
	if err != nil {
		return fieldErr(err)
	}
	filters, err := t.ParseFilters(q)
	if err != nil {
		return fieldErr(err)
	}
	ctx := c.Request().Context()
	eq := &records.ExportQuery{Format: format, Fields: fields, Filters: filters, Delimiter: delim}
	rows, total, err := t.ExportRows(ctx, h.Store.DB, eq)
	if err != nil {
		return fieldErr(err)
	}
	defer rows.Close()
	if format == "excel" && total > records.MaxExcelRows {
		return apierr.New(http.StatusRequestEntityTooLarge, apierr.CodeExportTooLarge,
			fmt.Sprintf("%d records do not fit one Excel sheet (%d at most); export csv or parquet, or filter", total, records.MaxExcelRows)).
			WithDetails(map[string]any{"total_records": total, "max_records": records.MaxExcelRows})
	}
	// The export may outlast the server's write timeout.
	_ = http.NewResponseController(c.Response().Writer).SetWriteDeadline(time.Now().Add(exportDeadline))
	ty := exportTypes[format]
	name := ingest.Identifiers([]string{rc.d.Name})[0]
	if name == "" {
		name = rc.d.ID
	}
	filename := name + "." + ty.ext
	hd := c.Response().Header()
	hd.Set("Content-Type", ty.contentType)
	hd.Set("X-Total-Records", strconv.FormatInt(total, 10))
	id := make([]byte, 10)
	_, _ = rand.Read(id)
	hd.Set("X-Export-Id", "exp_"+hex.EncodeToString(id))
	var w io.Writer = c.Response()
	if q.Get("compress") == "true" {
		hd.Set("Content-Encoding", "gzip")
		filename += ".gz"
		gz, _ := gzip.NewWriterLevel(c.Response(), gzip.BestSpeed)
		defer gz.Close()
		w = gz
	}
	hd.Set("Content-Disposition", fmt.Sprintf(`attachment; filename="%s"`, filename))
	c.Response().WriteHeader(http.StatusOK)
	switch format {
	case "csv":
		err = writeCSV(w, rows, fields, eq.Quoted(), delim, q.Get("header") != "false")
	case "json", "ndjson":
		err = writeLines(w, rows, format)
	case "parquet":
		err = records.WriteParquet(w, rows, t, fields)
	case "excel":
		err = records.WriteExcel(w, rows, t, fields, q.Get("header") != "false")
	}
	if err != nil {
		// The status is sent: cut the connection so the client sees an incomplete body.
		h.Log.Error("export failed mid-stream", "dataset_id", rc.d.ID, "error", err)
		panic(http.ErrAbortHandler)
	}
	return nil
}

// exportDeadline bounds one export's writing (the server's write timeout is a minute).
const exportDeadline = 2 * time.Hour

func csvQuote(dst, s []byte, delim byte) []byte {
	if len(s) > 0 && bytes.IndexByte(s, delim) < 0 && bytes.IndexByte(s, '"') < 0 && bytes.IndexByte(s, '\n') < 0 && bytes.IndexByte(s, '\r') < 0 {
		return append(dst, s...)
	}
	dst = append(dst, '"')
	for _, c := range s {
		if c == '"' {
			dst = append(dst, '"')
		}
		dst = append(dst, c)
	}
	return append(dst, '"')
}

type rowSource interface {
	Next() bool
	Scan(...any) error
	Err() error
}

// flusher writes buffered output in 256 KiB chunks, pushing each to the client from a
// goroutine of its own, so that writing to the network overlaps reading the next rows.
type flusher struct {
	closed bool
	buf    []byte
	ch     chan []byte
	done   chan error
	free   chan []byte
}

const chunk = 256 << 10

func newFlusher(w io.Writer) *flusher {
	f := &flusher{buf: make([]byte, 0, chunk+4096), ch: make(chan []byte, 2), done: make(chan error, 1), free: make(chan []byte, 3)}
	go func() {
		var err error
		for b := range f.ch {
			if err == nil {
				if _, err = w.Write(b); err == nil {
					if fl, ok := w.(http.Flusher); ok {
						fl.Flush()
					}
				}
			}
			select {
			case f.free <- b[:0]:
			default:
			}
		}
		f.done <- err
	}()
	return f
}

func (f *flusher) maybe() error {
	if len(f.buf) < chunk {
		return nil
	}
	f.ch <- f.buf
	select {
	case f.buf = <-f.free:
	default:
		f.buf = make([]byte, 0, chunk+4096)
	}
	return nil
}

// close sends what is left and waits for the writer.
func (f *flusher) close() error {
	if f.closed {
		return nil
	}
	f.closed = true
	if len(f.buf) > 0 {
		f.ch <- f.buf
	}
	close(f.ch)
	return <-f.done
}

// writeCSV writes CSV as COPY ... CSV does: NULL as nothing, an empty string as "", fields
// with the delimiter, quotes or line breaks quoted.
func writeCSV(w io.Writer, rows rowSource, fields []string, quoted []bool, delim string, header bool) error {
	f := newFlusher(w)
	defer f.close() // on an early return; a no-op after the last close
	d := delim[0]
	if header {
		for i, name := range fields {
			if i > 0 {
				f.buf = append(f.buf, d)
			}
			f.buf = csvQuote(f.buf, []byte(name), d)
		}
		f.buf = append(f.buf, '\n')
	}
	vals := make([]sql.RawBytes, len(quoted))
	ptrs := make([]any, len(quoted))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return err
		}
		for i, v := range vals {
			if i > 0 {
				f.buf = append(f.buf, d)
			}
			switch {
			case !quoted[i]:
				f.buf = append(f.buf, v...)
			case v != nil:
				f.buf = csvQuote(f.buf, v, d)
			}
		}
		f.buf = append(f.buf, '\n')
		if err := f.maybe(); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return err
	}
	return f.close()
}

// writeLines writes rows of one JSON object each: a JSON array, or one object per line.
func writeLines(w io.Writer, rows rowSource, format string) error {
	f := newFlusher(w)
	defer f.close()
	if format == "json" {
		f.buf = append(f.buf, '[')
	}
	var line sql.RawBytes
	n := 0
	for rows.Next() {
		if err := rows.Scan(&line); err != nil {
			return err
		}
		if format == "json" && n > 0 {
			f.buf = append(f.buf, ',', '\n')
		}
		f.buf = append(f.buf, line...)
		if format != "json" {
			f.buf = append(f.buf, '\n')
		}
		n++
		if err := f.maybe(); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return err
	}
	if format == "json" {
		f.buf = append(f.buf, ']', '\n')
	}
	return f.close()
}
