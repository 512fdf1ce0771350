package records

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"time"

	"dataplatform/handlers/apierr"
	"dataplatform/store/export"
	"dataplatform/store/ingest"
	recsql "dataplatform/store/records"

	"github.com/jmoiron/sqlx"
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
		format = "ndjson" // stream=true with json streams NDJSON
	}
	delim := q.Get("delimiter")
	if delim == "" {
		delim = ","
	} else if delim == "tab" || delim == `\t` {
		delim = "\t"
	}
	if !slices.Contains(recsql.Delimiters, delim) {
		return apierr.Field("query.delimiter", "enum", "the delimiter is one of , ; | or tab")
	}
	// Excel is read by people in a spreadsheet: formulas escaped unless asked not to; csv is
	// often read by programs: exact unless asked.
	escape := format == "excel"
	switch q.Get("escape_formulas") {
	case "":
	case "true":
		escape = true
	case "false":
		escape = false
	default:
		return apierr.Field("query.escape_formulas", "type", "escape_formulas is true or false")
	}
	fields, err := t.Exact(q.Get("fields"))
	if err != nil {
		return fieldErr(err)
	}
	filters, err := t.ParseFilters(q)
	if err != nil {
		return fieldErr(err)
	}
	eq := &recsql.ExportQuery{Format: format, Fields: fields, Filters: filters, Delimiter: delim,
		Header: q.Get("header") != "false", Gzip: q.Get("compress") == "true", Escape: escape}
	var x *recsql.Export
	err = h.Store.OnReader(c.Request().Context(), func(db *sqlx.DB) (err error) {
		x, err = t.OpenExport(c.Request().Context(), db, eq)
		return err
	})
	if err != nil {
		return fieldErr(err)
	}
	defer func() { _ = x.Close() }()
	if format == "excel" && x.Total > export.MaxExcelRows {
		return apierr.New(http.StatusRequestEntityTooLarge, apierr.CodeExportTooLarge,
			fmt.Sprintf("%d records do not fit one Excel sheet (%d at most); export csv or parquet, or filter", x.Total, export.MaxExcelRows)).
			WithDetails(map[string]any{"total_records": x.Total, "max_records": export.MaxExcelRows})
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
	hd.Set("X-Total-Records", strconv.FormatInt(x.Total, 10))
	id := make([]byte, 10)
	_, _ = rand.Read(id)
	hd.Set("X-Export-Id", "exp_"+hex.EncodeToString(id))
	if eq.Gzip {
		hd.Set("Content-Encoding", "gzip")
		filename += ".gz"
	}
	hd.Set("Content-Disposition", fmt.Sprintf(`attachment; filename="%s"`, filename))
	c.Response().WriteHeader(http.StatusOK)
	if err := x.Write(c.Response()); err != nil {
		if c.Request().Context().Err() != nil { // the client went away: its query is cancelled with it
			h.Log.Info("export abandoned by its client", "dataset_id", rc.d.ID)
		} else {
			h.Log.Error("export failed mid-stream", "dataset_id", rc.d.ID, "error", err)
		}
		// The status is sent: cut the connection so the client sees an incomplete body.
		panic(http.ErrAbortHandler)
	}
	return nil
}

// exportDeadline bounds one export's writing (the server's write timeout is a minute).
const exportDeadline = 2 * time.Hour
