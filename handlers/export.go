package handlers

import (
	"compress/gzip"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"dataplatform/apierr"
	"dataplatform/records"

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
	rows, total, err := t.ExportRows(ctx, h.Store.DB, records.ExportQuery{Format: format, Fields: fields, Filters: filters, Delimiter: delim})
	if err != nil {
		return fieldErr(err)
	}
	defer rows.Close()
	if format == "excel" && total > records.MaxExcelRows {
		return apierr.New(http.StatusRequestEntityTooLarge, "EXPORT_TOO_LARGE",
			fmt.Sprintf("%d records do not fit one Excel sheet (%d at most); export csv or parquet, or filter", total, records.MaxExcelRows)).
			WithDetails(map[string]any{"total_records": total, "max_records": records.MaxExcelRows})
	}
	// The export may outlast the server's write timeout.
	_ = http.NewResponseController(c.Response().Writer).SetWriteDeadline(time.Now().Add(exportDeadline))
	ty := exportTypes[format]
	name := identifier(rc.d.Name)
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
	case "csv", "json", "ndjson":
		err = writeLines(w, rows, format, fields, delim, q.Get("header") != "false")
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

func csvQuote(s, delim string) string {
	if s == "" || strings.ContainsAny(s, delim+"\"\r\n") {
		return `"` + strings.ReplaceAll(s, `"`, `""`) + `"`
	}
	return s
}

// writeLines writes rows of one text column each: CSV lines (after a header) or JSON objects
// (a JSON array, or one per line).
func writeLines(w io.Writer, rows interface {
	Next() bool
	Scan(...any) error
	Err() error
}, format string, fields []string, delim string, header bool) error {
	buf := make([]byte, 0, 64<<10)
	flush := func() error {
		_, err := w.Write(buf)
		buf = buf[:0]
		if f, ok := w.(http.Flusher); ok {
			f.Flush()
		}
		return err
	}
	if format == "csv" && header {
		for i, f := range fields {
			if i > 0 {
				buf = append(buf, delim...)
			}
			buf = append(buf, csvQuote(f, delim)...)
		}
		buf = append(buf, '\n')
	}
	if format == "json" {
		buf = append(buf, '[')
	}
	var line []byte
	n := 0
	for rows.Next() {
		if err := rows.Scan(&line); err != nil {
			return err
		}
		if format == "json" && n > 0 {
			buf = append(buf, ',', '\n')
		}
		buf = append(buf, line...)
		if format != "json" {
			buf = append(buf, '\n')
		}
		n++
		if len(buf) > 60<<10 {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	if err := rows.Err(); err != nil {
		return err
	}
	if format == "json" {
		buf = append(buf, ']', '\n')
	}
	return flush()
}
