// Package records is the one dynamic handler of every dataset's record API: list and aggregate (list.go), read with expand/include (read.go), create, replace,
// patch and delete (write.go), bulk (bulk.go), export (export.go), the read-only SQL query
// (query.go), and the change streams over SSE (stream.go) and WebSocket (ws.go). The server has
// resolved the dataset and validated the request against its description
// (templates/descriptions) before a handler runs; the SQL is store/records'.
package records

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"dataplatform/handlers"
	"dataplatform/handlers/apierr"
	"dataplatform/store"
	recsql "dataplatform/store/records"
	"dataplatform/templates/descriptions"

	"github.com/labstack/echo/v4"
	"github.com/lib/pq"
)

// Records serves every dataset's record API: one handler, driven by the dataset's
// description, against which the server has already validated the request.
type Records struct {
	*handlers.Handlers
	verdicts *verdictCache // streams' access checks, shared per caller and dataset
}

// Routes are the record API's operations, for the server to mount: one handler for every
// dataset.
func Routes(hs *handlers.Handlers) []handlers.Route {
	h := &Records{Handlers: hs, verdicts: &verdictCache{m: map[string]verdict{}}}
	return []handlers.Route{
		{Method: http.MethodGet, Template: "/api/v1/datasets/{dataset_id}/data", Category: "records_read", Handler: h.List},
		{Method: http.MethodPost, Template: "/api/v1/datasets/{dataset_id}/data", Category: "records_write", Handler: h.Create},
		{Method: http.MethodGet, Template: "/api/v1/datasets/{dataset_id}/data/aggregate", Category: "records_query", Handler: h.Aggregate},
		{Method: http.MethodGet, Template: "/api/v1/datasets/{dataset_id}/data/export", Category: "records_export", Handler: h.Export},
		{Method: http.MethodPost, Template: "/api/v1/datasets/{dataset_id}/data/bulk", Category: "records_bulk", Handler: h.Bulk},
		{Method: http.MethodPost, Template: "/api/v1/datasets/{dataset_id}/data/query", Category: "records_query", Handler: h.Query},
		{Method: http.MethodGet, Template: "/api/v1/datasets/{dataset_id}/data/stream", Category: "records_read", Handler: h.Stream},
		{Method: http.MethodGet, Template: "/api/v1/datasets/{dataset_id}/data/ws", Category: "records_read", Handler: h.Socket},
		{Method: http.MethodGet, Template: "/api/v1/datasets/{dataset_id}/data/{id}", Category: "records_read", Handler: h.Get},
		{Method: http.MethodPut, Template: "/api/v1/datasets/{dataset_id}/data/{id}", Category: "records_write", Handler: h.Replace},
		{Method: http.MethodPatch, Template: "/api/v1/datasets/{dataset_id}/data/{id}", Category: "records_write", Handler: h.Patch},
		{Method: http.MethodDelete, Template: "/api/v1/datasets/{dataset_id}/data/{id}", Category: "records_delete", Handler: h.Delete},
	}
}

// recordCtx is what the server's validation resolved for a record request.
type recordCtx struct {
	d    *store.Dataset
	desc *descriptions.Description
}

func (h *Records) resolve(c echo.Context, perm string) (*recordCtx, error) {
	t, ok := handlers.RecordTargetOf(c)
	if !ok {
		return nil, errors.New("record request without a resolved dataset")
	}
	rc := &recordCtx{d: t.Dataset, desc: t.Description}
	_, err := h.Allow(c.Request().Context(), rc.d.OrgID, rc.d.Reach, perm)
	return rc, err
}

func fieldErr(err error) error {
	var fe *recsql.FieldError
	if errors.As(err, &fe) {
		return apierr.Field(fe.Field, fe.Code, fe.Message)
	}
	return err
}

// detailID is a record's key as errors carry it in details.id: always a string (as in the
// URL), whatever the key's type, so that one field has one type across every error.
func detailID(v any) string {
	switch x := v.(type) {
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	case []byte:
		return string(x)
	}
	return fmt.Sprint(v)
}

func recordNotFound(id string) error {
	return apierr.New(http.StatusNotFound, apierr.CodeRecordNotFound, "record not found").WithDetails(map[string]any{"id": id})
}

// resolveRecord is resolve for a request about one record: also its table and the record's id
// from the path, checked against the table's key.
func (h *Records) resolveRecord(c echo.Context, perm string) (*recordCtx, *recsql.Table, string, error) {
	rc, err := h.resolve(c, perm)
	if err != nil {
		return nil, nil, "", err
	}
	id, err := recordID(c, rc.desc.Table)
	return rc, rc.desc.Table, id, err
}

// recordID is the record named by the path, checked against the table's key.
func recordID(c echo.Context, t *recsql.Table) (string, error) {
	id, err := t.ParseKey(c.Param("id"))
	return id, fieldErr(err)
}

func returnFields(c echo.Context, t *recsql.Table, query string) ([]string, error) {
	f := c.Request().Header.Get("X-Return-Fields")
	if query != "" {
		f = query
	}
	fields, err := t.Select(f, "")
	if err != nil && f == c.Request().Header.Get("X-Return-Fields") {
		var fe *recsql.FieldError
		if errors.As(err, &fe) {
			fe.Field = "header.X-Return-Fields"
		}
	}
	if err != nil {
		return nil, err
	}
	return fields, nil
}

// etag is a record's entity tag: its id and version, or for a connected table's record
// (which has no version) its key and a digest of all its values.
func etag(d *store.Dataset, t *recsql.Table, rec json.RawMessage) string {
	o, err := parseObject(rec)
	if err != nil {
		o = &object{}
	}
	return objectETag(d, t, o, rec)
}

// objectETag is etag of a record already split into its members (o).
func objectETag(d *store.Dataset, t *recsql.Table, o *object, rec json.RawMessage) string {
	if !t.System() {
		var m map[string]json.RawMessage
		_ = json.Unmarshal(rec, &m)
		b, _ := json.Marshal(m) // keys sorted: the same values make the same tag
		sum := sha256.Sum256(b)
		var key string
		if raw, ok := m[t.Key()]; ok {
			key = strings.Trim(string(raw), `"`)
		}
		return fmt.Sprintf(`"%s.%s.%s.%s"`, d.ID, t.Name, url.PathEscape(key), hex.EncodeToString(sum[:8]))
	}
	// id and version are numbers: their text as PostgreSQL wrote it.
	return `"` + d.ID + "." + o.text("id") + "." + o.text("version") + `"`
}

// shape is a whole record as answered: with its _links, the related records embed names
// (include/expand; "" for none), narrowed to fields in their order. Every value keeps the
// bytes PostgreSQL wrote (see object).
func (h *Records) shape(ctx context.Context, rc *recordCtx, rec json.RawMessage, fields []string, embed string) (json.RawMessage, error) {
	o, err := parseObject(rec)
	if err != nil {
		return nil, err
	}
	return h.shapeObject(ctx, rc, o, fields, embed)
}

// shapeObject is shape of a record already split into its members.
func (h *Records) shapeObject(ctx context.Context, rc *recordCtx, o *object, fields []string, embed string) (json.RawMessage, error) {
	h.withLinks(rc, o)
	if embed != "" {
		if err := h.embed(ctx, rc, o, embed); err != nil {
			return nil, err
		}
	}
	return o.record(fields), nil
}

func (h *Records) respond(c echo.Context, rc *recordCtx, status int, rec json.RawMessage, fields []string) error {
	out, err := h.shape(c.Request().Context(), rc, rec, fields, embedParam(c))
	if err != nil {
		return err
	}
	c.Response().Header().Set("ETag", etag(rc.d, rc.desc.Table, rec))
	return c.JSONBlob(status, out)
}

// embedParam is the relations include and expand name ("" for none).
func embedParam(c echo.Context) string {
	return strings.Join(slices.DeleteFunc([]string{c.QueryParam("include"), c.QueryParam("expand")}, func(s string) bool { return s == "" }), ",")
}

// decodeObject decodes a validated JSON object body, numbers kept exact.
func decodeObject(raw []byte) (map[string]any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		return nil, apierr.Field("body", "invalid_json", "the body is not a JSON object")
	}
	return m, nil
}

// writeErr maps database refusals of a write to API errors: a taken unique value is 409 with
// the field; a value a constraint refuses is 400.
func writeErr(err error, t *recsql.Table) error {
	var pe *pq.Error
	errors.As(err, &pe)
	if col, ok := store.UniqueViolation(err); ok {
		field := col
		for _, c := range t.Columns {
			if strings.Contains(col, "_"+c.Name+"_key") || col == c.Name {
				field = c.Name
			}
		}
		if strings.HasSuffix(col, "_pkey") && t.Key() != "" { // the records' key
			field = t.Key()
		}
		if m := detailKey.FindStringSubmatch(pe.Detail); field == "" && m != nil {
			// A connected database's refusal names no constraint, only the remote column.
			field = m[1]
			for _, c := range t.Columns {
				if c.Original == m[1] || c.Name == m[1] {
					field = c.Name
				}
			}
		}
		return apierr.Conflict(field, "a record with this "+field+" already exists")
	}
	if pe != nil && pe.Code == "23503" { // a connected database's foreign key
		return apierr.New(http.StatusConflict, apierr.CodeConflict, "the connected database refused: "+pe.Message).
			WithDetails(map[string]any{"reason": pe.Detail})
	}
	if pe != nil && pe.Code == "42501" && t.Foreign {
		return apierr.New(http.StatusForbidden, apierr.CodePermissionDenied, "the connected database refused the write: "+pe.Message).
			WithDetails(map[string]any{"table": t.Name})
	}
	if v, ok := store.ConstraintViolation(err); ok {
		return apierr.Field("body", "constraint", v)
	}
	return fieldErr(err)
}

// detailKey reads the column of PostgreSQL's "Key (email)=(...) already exists."
var detailKey = regexp.MustCompile(`^Key \(([^,()]+)\)=`)
