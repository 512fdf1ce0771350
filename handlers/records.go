package handlers

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/big"
	"mime"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"dataplatform/gen/api"
	"dataplatform/handlers/apierr"
	"dataplatform/handlers/auth"
	"dataplatform/handlers/server/validation"
	"dataplatform/store"
	"dataplatform/store/records"
	"dataplatform/templates/descriptions"

	jsonpatch "github.com/evanphx/json-patch/v5"
	"github.com/getkin/kin-openapi/openapi3"
	"github.com/jmoiron/sqlx"
	"github.com/labstack/echo/v4"
	"github.com/lib/pq"
	"gopkg.in/yaml.v3"
)

func (h *Datasets) GetDatasetDescription(ctx context.Context, req api.GetDatasetDescriptionRequestObject) (api.GetDatasetDescriptionResponseObject, error) {
	raw, etag, _, err := h.descriptionAt(ctx, req.DatasetId, req.Params.Table, req.Params.Version)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, err
	}
	return api.GetDatasetDescription200JSONResponse{Body: m, Headers: api.GetDatasetDescription200ResponseHeaders{ETag: &etag}}, nil
}

func (h *Datasets) GetDatasetDescriptionYAML(ctx context.Context, req api.GetDatasetDescriptionYAMLRequestObject) (api.GetDatasetDescriptionYAMLResponseObject, error) {
	raw, etag, _, err := h.descriptionAt(ctx, req.DatasetId, req.Params.Table, req.Params.Version)
	if err != nil {
		return nil, err
	}
	var node yaml.Node // keeps the JSON document's key order
	if err := yaml.Unmarshal(raw, &node); err != nil {
		return nil, err
	}
	blockStyle(&node)
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(&node); err != nil {
		return nil, err
	}
	return api.GetDatasetDescriptionYAML200ApplicationyamlResponse{Body: &buf, ContentLength: int64(buf.Len()),
		Headers: api.GetDatasetDescriptionYAML200ResponseHeaders{ETag: &etag}}, nil
}

// blockStyle turns a node parsed from JSON (flow style, quoted strings) into ordinary YAML.
func blockStyle(n *yaml.Node) {
	if n.Kind == yaml.ScalarNode && n.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle) != 0 {
		n.Style = 0 // the encoder quotes again where YAML needs it
	} else if n.Kind != yaml.ScalarNode {
		n.Style = 0
	}
	for _, c := range n.Content {
		blockStyle(c)
	}
}

func (h *Datasets) description(ctx context.Context, id string, table *string) (*descriptions.Description, error) {
	d, desc, err := h.ResolveRecords(ctx, id, deref(table))
	if err != nil {
		return nil, err
	}
	p := auth.FromContext(ctx)
	return desc, auth.AccessFor(p, d.OrgID, d.Role).Need("datasets:list")
}

// ResolveRecords finds a dataset the caller is a member of and the description of one of its tables
// (table "": the first; a connected database's dataset has one per table): 404 otherwise, 409
// while it is not active, 400 for a table it does not have.
func (h *Handlers) ResolveRecords(ctx context.Context, datasetID, table string) (*store.Dataset, *descriptions.Description, error) {
	p, err := auth.Caller(ctx)
	if err != nil {
		return nil, nil, err
	}
	d, err := h.Store.DatasetForRecords(ctx, datasetID, p.UserID)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil, apierr.New(http.StatusNotFound, apierr.CodeDatasetNotFound, "dataset not found").WithDetails(map[string]any{"dataset_id": datasetID})
	} else if err != nil {
		return nil, nil, err
	}
	if err := active(d, "its API is served"); err != nil {
		return nil, nil, err
	}
	desc, err := h.Descriptions.Describe(ctx, d, table)
	return d, desc, err
}

// Records serves every dataset's record API: one handler, driven by the dataset's
// description, against which the server has already validated the request.
type Records struct{ *Handlers }

// recordCtx is what the server's validation resolved for a record request.
type recordCtx struct {
	d    *store.Dataset
	desc *descriptions.Description
}

// recordContextKey is where the server leaves the resolved dataset in the echo context.
const recordContextKey = "record_dataset"

// WithRecordContext stores a resolved dataset for the record handler.
func WithRecordContext(c echo.Context, d *store.Dataset, desc *descriptions.Description) {
	c.Set(recordContextKey, &recordCtx{d: d, desc: desc})
}

func (h *Records) resolve(c echo.Context, perm string) (*recordCtx, error) {
	rc, ok := c.Get(recordContextKey).(*recordCtx)
	if !ok {
		return nil, errors.New("record request without a resolved dataset")
	}
	p := auth.FromContext(c.Request().Context())
	return rc, auth.AccessFor(p, rc.d.OrgID, rc.d.Role).Need(perm)
}

func fieldErr(err error) error {
	var fe *records.FieldError
	if errors.As(err, &fe) {
		return apierr.Field(fe.Field, fe.Code, fe.Message)
	}
	return err
}

func recordNotFound(id string) error {
	return apierr.New(http.StatusNotFound, apierr.CodeRecordNotFound, "record not found").WithDetails(map[string]any{"id": id})
}

// recordID is the record named by the path, checked against the table's key.
func recordID(c echo.Context, t *records.Table) (string, error) {
	id, err := t.ParseKey(c.Param("id"))
	return id, fieldErr(err)
}

// List is GET /api/v1/datasets/{id}/data.
func (h *Records) List(c echo.Context) error {
	start := time.Now()
	rc, err := h.resolve(c, "datasets:read")
	if err != nil {
		return err
	}
	t, q := rc.desc.Table, c.QueryParams()
	page, limit := 1, 20
	if v := q.Get("page"); v != "" {
		page, _ = strconv.Atoi(v)
	}
	if v := q.Get("limit"); v != "" {
		limit, _ = strconv.Atoi(v)
	}
	fields, err := t.Select(q.Get("fields"), q.Get("exclude"))
	if err != nil {
		return fieldErr(err)
	}
	filters, err := t.ParseFilters(q)
	if err != nil {
		return fieldErr(err)
	}
	page0, err := t.List(c.Request().Context(), h.Store.DB, records.ListQuery{Page: page, Limit: limit, Sort: q.Get("sort"),
		Fields: fields, Search: q.Get("search"), Filters: filters, Cursor: q.Get("cursor"), Count: q.Get("count"), Links: rc.desc.LinksSQL})
	if err != nil {
		return fieldErr(err)
	}
	defer page0.Release()
	data := page0.Rows
	if rc.desc.LinksSQL == "" {
		data = make([]json.RawMessage, len(page0.Rows))
		for i, r := range page0.Rows {
			if data[i], err = h.withLinks(rc, r); err != nil {
				return err
			}
		}
	}
	total := page0.Total
	pages := int(math.Ceil(float64(total) / float64(limit)))
	path, asked := c.Request().URL.Path, c.Request().URL.Query()
	asked.Del("cursor")
	asked.Del("page")
	asked.Set("limit", strconv.Itoa(limit))
	link := func(k, v string) *string {
		asked.Set(k, v)
		u := path + "?" + asked.Encode()
		asked.Del(k)
		return &u
	}
	pageURL := func(p int) *string { return link("page", strconv.Itoa(p)) }
	pg := listPagination{Page: page, Limit: limit, Total: total, Pages: pages, HasNext: page < pages, HasPrev: page > 1,
		FirstPageURL: *pageURL(1), LastPageURL: *pageURL(max(pages, 1)), TotalEstimated: page0.Estimated}
	cursor := q.Get("cursor")
	if cursor == "" {
		if page < pages {
			pg.NextPageURL = pageURL(page + 1)
		}
		if page > 1 {
			pg.PrevPageURL = pageURL(page - 1)
		}
	} else { // a cursor wins over page: the page links follow the cursors
		pg.HasNext, pg.HasPrev = page0.Next != "", page0.Prev != ""
	}
	if page0.Next != "" {
		pg.NextCursor = &page0.Next
		if cursor != "" {
			pg.NextPageURL = link("cursor", page0.Next)
		}
	}
	if page0.Prev != "" {
		pg.PrevCursor = &page0.Prev
		if cursor != "" {
			pg.PrevPageURL = link("cursor", page0.Prev)
		}
	}
	meta := listMeta{Sort: page0.Sort, FiltersApplied: len(filters)}
	if s := q.Get("search"); s != "" {
		meta.SearchQuery = &s
	}
	meta.ExecutionTimeMS = time.Since(start).Milliseconds()
	return writeList(c, data, pg, meta)
}

// listPagination and listMeta are SPEC.md's pagination object and list meta.
type listPagination struct {
	Page           int     `json:"page"`
	Limit          int     `json:"limit"`
	Total          int64   `json:"total"`
	Pages          int     `json:"pages"`
	HasNext        bool    `json:"has_next"`
	HasPrev        bool    `json:"has_prev"`
	NextCursor     *string `json:"next_cursor"`
	PrevCursor     *string `json:"prev_cursor"`
	FirstPageURL   string  `json:"first_page_url"`
	LastPageURL    string  `json:"last_page_url"`
	NextPageURL    *string `json:"next_page_url"`
	PrevPageURL    *string `json:"prev_page_url"`
	TotalEstimated bool    `json:"total_estimated"`
}

type listMeta struct {
	Sort            []string `json:"sort"`
	FiltersApplied  int      `json:"filters_applied"`
	SearchQuery     *string  `json:"search_query"`
	ExecutionTimeMS int64    `json:"execution_time_ms"`
}

// writeList writes the list envelope around the records as PostgreSQL made them (encoding/json
// would parse and compact every record again), straight to the client, with its length
// (net/http would otherwise send a body this size in chunks).
func writeList(c echo.Context, data []json.RawMessage, pagination listPagination, meta listMeta) error {
	p, _ := json.Marshal(pagination)
	m, _ := json.Marshal(meta)
	n := len(`{"data":[],"pagination":,"meta":}`) + len(p) + len(m)
	for i, r := range data {
		n += len(r)
		if i > 0 {
			n++
		}
	}
	w := c.Response()
	w.Header().Set(echo.HeaderContentType, echo.MIMEApplicationJSON)
	w.Header().Set(echo.HeaderContentLength, strconv.Itoa(n))
	w.WriteHeader(http.StatusOK)
	var err error
	write := func(b []byte) {
		if err == nil {
			_, err = w.Write(b)
		}
	}
	write([]byte(`{"data":[`))
	for i, r := range data {
		if i > 0 {
			write([]byte{','})
		}
		write(r)
	}
	write([]byte(`],"pagination":`))
	write(p)
	write([]byte(`,"meta":`))
	write(m)
	write([]byte{'}'})
	return err
}

// Aggregate is GET /api/v1/datasets/{id}/data/aggregate.
func (h *Records) Aggregate(c echo.Context) error {
	start := time.Now()
	rc, err := h.resolve(c, "datasets:read")
	if err != nil {
		return err
	}
	t, q := rc.desc.Table, c.QueryParams()
	filters, err := t.ParseFilters(q)
	if err != nil {
		return fieldErr(err)
	}
	limit := 100
	if v := q.Get("limit"); v != "" {
		limit, _ = strconv.Atoi(v)
	}
	a, err := t.Aggregate(c.Request().Context(), h.Store.DB, records.AggregateQuery{GroupBy: q.Get("group_by"), Agg: q.Get("agg"),
		Having: q.Get("having"), Sort: q.Get("sort"), Limit: limit, Filters: filters})
	if err != nil {
		return fieldErr(err)
	}
	return c.JSON(http.StatusOK, map[string]any{"data": a.Groups, "aggregations": a.Totals,
		"meta": map[string]any{"groups": len(a.Groups), "execution_time_ms": time.Since(start).Milliseconds()}})
}

// withLinks adds `_links` to a record read as JSON.
func (h *Records) withLinks(rc *recordCtx, raw json.RawMessage) (json.RawMessage, error) {
	var m map[string]any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&m); err != nil {
		return nil, err
	}
	id := fmt.Sprint(m[rc.desc.Table.Key()])
	links := map[string]any{}
	if rc.desc.Table.Key() != "" {
		links["self"] = rc.desc.SelfURL(rc.d.ID, id)
	}
	for _, l := range rc.desc.Links {
		v, ok := m[l.Column]
		if l.Column == "id" {
			v, ok = id, true
		}
		if !ok || v == nil {
			continue
		}
		links[l.Name] = l.URL(fmt.Sprint(v), l.Table != "" || l.Target == "id")
	}
	m["_links"] = links
	return json.Marshal(m)
}

func returnFields(c echo.Context, t *records.Table, query string) ([]string, error) {
	f := c.Request().Header.Get("X-Return-Fields")
	if query != "" {
		f = query
	}
	fields, err := t.Select(f, "")
	if err != nil && f == c.Request().Header.Get("X-Return-Fields") {
		var fe *records.FieldError
		if errors.As(err, &fe) {
			fe.Field = "header.X-Return-Fields"
		}
	}
	if err != nil {
		return nil, err
	}
	return fields, nil
}

// readFields are the fields to read for a record answered with fields: those and what its
// ETag is made of (version; a connected table's whole record).
func readFields(t *records.Table, fields []string) []string {
	if !t.System() {
		return t.Fields()
	}
	if !slices.Contains(fields, "version") {
		fields = append(fields, "version")
	}
	return fields
}

// etag is a record's entity tag: its id and version, or for a connected table's record
// (which has no version) its key and a digest of all its values.
func etag(d *store.Dataset, t *records.Table, rec json.RawMessage) string {
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
	var m struct {
		ID      json.Number `json:"id"`
		Version json.Number `json:"version"`
	}
	_ = json.Unmarshal(rec, &m)
	return fmt.Sprintf(`"%s.%s.%s"`, d.ID, m.ID, m.Version)
}

// narrow keeps only fields of a record read with readFields (a connected table's record is
// read whole for its ETag).
func narrow(t *records.Table, rec json.RawMessage, fields []string) json.RawMessage {
	if t.System() || len(fields) == len(t.Fields()) {
		return rec
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(rec, &m) != nil {
		return rec
	}
	out := make(map[string]json.RawMessage, len(fields))
	for _, f := range fields {
		if v, ok := m[f]; ok {
			out[f] = v
		}
	}
	b, _ := json.Marshal(out)
	return b
}

func (h *Records) respond(c echo.Context, rc *recordCtx, status int, rec json.RawMessage, fields []string) error {
	out, err := h.withLinks(rc, narrow(rc.desc.Table, rec, fields))
	if err != nil {
		return err
	}
	c.Response().Header().Set("ETag", etag(rc.d, rc.desc.Table, rec))
	return c.JSONBlob(status, out)
}

// Get is GET /api/v1/datasets/{id}/data/{id}.
func (h *Records) Get(c echo.Context) error {
	rc, err := h.resolve(c, "datasets:read")
	if err != nil {
		return err
	}
	t := rc.desc.Table
	id, err := recordID(c, t)
	if err != nil {
		return err
	}
	fields, err := t.Select(c.QueryParam("fields"), "")
	if err != nil {
		return fieldErr(err)
	}
	rec, err := t.Get(c.Request().Context(), h.Store.DB, id, readFields(t, fields), false)
	if errors.Is(err, records.ErrNotFound) {
		return recordNotFound(c.Param("id"))
	} else if err != nil {
		return err
	}
	if tag := etag(rc.d, t, rec); c.Request().Header.Get("If-None-Match") == tag {
		c.Response().Header().Set("ETag", tag)
		return c.NoContent(http.StatusNotModified)
	}
	embed := strings.Join(slices.DeleteFunc([]string{c.QueryParam("include"), c.QueryParam("expand")}, func(s string) bool { return s == "" }), ",")
	if embed == "" {
		return h.respond(c, rc, http.StatusOK, rec, fields)
	}
	out, err := h.withLinks(rc, narrow(t, rec, fields))
	if err != nil {
		return err
	}
	if out, err = h.embed(c.Request().Context(), rc, out, embed); err != nil {
		return err
	}
	c.Response().Header().Set("ETag", etag(rc.d, t, rec))
	return c.JSONBlob(http.StatusOK, out)
}

// maxEmbedded bounds the records of one included collection.
const maxEmbedded = 100

// embed adds the related records named in names (link names) under _embedded.
func (h *Records) embed(ctx context.Context, rc *recordCtx, out json.RawMessage, names string) (json.RawMessage, error) {
	var m map[string]any
	dec := json.NewDecoder(bytes.NewReader(out))
	dec.UseNumber()
	if err := dec.Decode(&m); err != nil {
		return nil, err
	}
	emb := map[string]any{}
	for _, name := range strings.Split(names, ",") {
		name = strings.TrimSpace(name)
		i := slices.IndexFunc(rc.desc.Links, func(l records.Link) bool { return l.Name == name })
		if i < 0 {
			var known []string
			for _, l := range rc.desc.Links {
				known = append(known, l.Name)
			}
			return nil, apierr.Field("query.include", "unknown_relation", fmt.Sprintf("no relation %q; this dataset's are: %s", name, strings.Join(known, ", ")))
		}
		l := rc.desc.Links[i]
		od, err := store.DatasetForUserAnyProject(ctx, h.Store.DB, l.Dataset, auth.FromContext(ctx).UserID)
		if err != nil {
			continue // not visible to the caller: nothing to embed
		}
		odesc, err := h.Descriptions.Describe(ctx, od, l.Table)
		if err != nil {
			return nil, err
		}
		v := m[l.Column]
		if l.Column == "id" {
			v = m["id"]
		}
		if v == nil {
			if l.Many {
				emb[name] = []any{}
			} else {
				emb[name] = nil
			}
			continue
		}
		ids, err := odesc.Table.Referring(ctx, h.Store.DB, l.Target, fmt.Sprint(v))
		if err != nil {
			return nil, err
		}
		if len(ids) > maxEmbedded {
			ids = ids[:maxEmbedded]
		}
		var recs []any
		for _, id := range ids {
			r, err := odesc.Table.Get(ctx, h.Store.DB, id, odesc.Table.Fields(), false)
			if err != nil {
				continue
			}
			recs = append(recs, json.RawMessage(r))
		}
		switch {
		case l.Many:
			if recs == nil {
				recs = []any{}
			}
			emb[name] = recs
		case len(recs) > 0:
			emb[name] = recs[0]
		default:
			emb[name] = nil
		}
	}
	m["_embedded"] = emb
	return json.Marshal(m)
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
func writeErr(err error, t *records.Table) error {
	var pe *pq.Error
	errors.As(err, &pe)
	if col, ok := store.UniqueViolation(err); ok {
		field := col
		for _, c := range t.Columns {
			if strings.Contains(col, "_"+c.Name+"_key") || col == c.Name {
				field = c.Name
			}
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

// IdempotencyTTL is how long the answer to an X-Idempotency-Key is kept.
const IdempotencyTTL = 24 * time.Hour

// Create is POST /api/v1/datasets/{id}/data. With X-Idempotency-Key, the first answer is kept
// a day and given again to the same request; the same key with another body is refused.
func (h *Records) Create(c echo.Context) error {
	rc, err := h.resolve(c, "datasets:write")
	if err != nil {
		return err
	}
	raw, err := io.ReadAll(c.Request().Body)
	if err != nil {
		return err
	}
	b, err := decodeObject(raw)
	if err != nil {
		return err
	}
	t := rc.desc.Table
	fields, err := returnFields(c, t, "")
	if err != nil {
		return fieldErr(err)
	}
	ctx := c.Request().Context()
	key := c.Request().Header.Get("X-Idempotency-Key")
	principal := auth.FromContext(ctx).Subject()
	hash := sha256.Sum256(append([]byte(t.Name+"\n"+c.Request().Header.Get("X-Return-Fields")+"\n"), raw...))
	var rec json.RawMessage
	var replay *store.Idempotent
	var location string
	var out json.RawMessage
	err = h.Store.Tx(ctx, func(tx *sqlx.Tx) error {
		if key != "" {
			if replay, err = store.ClaimIdempotencyKey(ctx, tx, principal, rc.d.ID, key, hex.EncodeToString(hash[:]), h.now()); err != nil {
				return err
			}
			if replay != nil {
				if replay.RequestHash != hex.EncodeToString(hash[:]) {
					return apierr.New(http.StatusUnprocessableEntity, apierr.CodeIdempotencyKeyReused,
						"this X-Idempotency-Key was used with another request; use a new key for a new record").
						WithDetails(map[string]any{"key": key})
				}
				return nil
			}
		}
		if rec, err = t.Insert(ctx, tx, b, readFields(t, fields)); err != nil {
			return err
		}
		var m map[string]any
		dec := json.NewDecoder(bytes.NewReader(rec))
		dec.UseNumber()
		_ = dec.Decode(&m)
		location = rc.desc.SelfURL(rc.d.ID, fmt.Sprint(m[t.Key()]))
		if out, err = h.withLinks(rc, narrow(t, rec, fields)); err != nil {
			return err
		}
		if key != "" {
			return store.StoreIdempotentAnswer(ctx, tx, principal, rc.d.ID, key, http.StatusCreated, location, string(out))
		}
		return nil
	})
	if err != nil {
		var ae *apierr.Error
		if errors.As(err, &ae) {
			return err
		}
		return writeErr(err, rc.desc.Table)
	}
	if replay != nil && replay.Body != nil {
		c.Response().Header().Set("Location", deref(replay.Location))
		c.Response().Header().Set("Idempotent-Replayed", "true")
		if t.System() { // a connected table's tag covers fields the stored answer may lack
			c.Response().Header().Set("ETag", etag(rc.d, t, json.RawMessage(*replay.Body)))
		}
		return c.JSONBlob(*replay.Status, []byte(*replay.Body))
	}
	c.Response().Header().Set("Location", location)
	c.Response().Header().Set("ETag", etag(rc.d, t, rec))
	return c.JSONBlob(http.StatusCreated, out)
}

// Replace is PUT; Patch is PATCH: both need the current version, from If-Match or the body.
func (h *Records) Replace(c echo.Context) error { return h.update(c, true) }

// Patch is PATCH /api/v1/datasets/{id}/data/{id}: given fields replace the stored ones;
// objects merge into the stored object.
func (h *Records) Patch(c echo.Context) error { return h.update(c, false) }

func (h *Records) update(c echo.Context, replace bool) error {
	rc, err := h.resolve(c, "datasets:write")
	if err != nil {
		return err
	}
	t := rc.desc.Table
	id, err := recordID(c, t)
	if err != nil {
		return err
	}
	ct, _, _ := mime.ParseMediaType(c.Request().Header.Get("Content-Type"))
	jsonPatch := !replace && ct == "application/json-patch+json"
	raw, err := io.ReadAll(c.Request().Body)
	if err != nil {
		return err
	}
	var b map[string]any
	if !jsonPatch {
		if b, err = decodeObject(raw); err != nil {
			return err
		}
	}
	fields, err := returnFields(c, t, "")
	if err != nil {
		return fieldErr(err)
	}
	ctx := c.Request().Context()
	var rec json.RawMessage
	err = h.Store.Tx(ctx, func(tx *sqlx.Tx) error {
		cur, err := t.Get(ctx, tx, id, t.Fields(), true)
		if errors.Is(err, records.ErrNotFound) {
			return recordNotFound(c.Param("id"))
		} else if err != nil {
			return err
		}
		var now map[string]any
		dec := json.NewDecoder(bytes.NewReader(cur))
		dec.UseNumber()
		if err := dec.Decode(&now); err != nil {
			return err
		}
		current, _ := strconv.Atoi(fmt.Sprint(now["version"]))
		want := current
		if v, ok := b["version"]; ok {
			want, _ = strconv.Atoi(fmt.Sprint(v))
			delete(b, "version")
		}
		if m := c.Request().Header.Get("If-Match"); m != "" && m != "*" && m != etag(rc.d, t, cur) {
			want = -1
		}
		if want != current {
			details := map[string]any{"id": now[t.Key()]}
			if t.System() {
				details["current_version"] = current
			} else {
				details["current_etag"] = etag(rc.d, t, cur)
			}
			return apierr.New(http.StatusConflict, apierr.CodeOptimisticLockError, "the record changed since the version sent; read it again").
				WithDetails(details)
		}
		switch {
		case jsonPatch:
			if b, err = applyJSONPatch(rc, now, raw); err != nil {
				return err
			}
		case !replace:
			if b, err = applyOperators(rc, now, b); err != nil {
				return err
			}
		}
		var ok bool
		if rec, ok, err = t.Update(ctx, tx, id, current, b, replace, readFields(t, fields)); err != nil {
			return err
		} else if !ok {
			return apierr.New(http.StatusConflict, apierr.CodeOptimisticLockError, "the record changed meanwhile; read it again").
				WithDetails(map[string]any{"id": now[t.Key()]})
		}
		return nil
	})
	if err != nil {
		var ae *apierr.Error
		if errors.As(err, &ae) {
			return err
		}
		return writeErr(err, t)
	}
	return h.respond(c, rc, http.StatusOK, rec, fields)
}

// writable is the record's column values (no system fields, no links).
func writable(t *records.Table, rec map[string]any) map[string]any {
	out := map[string]any{}
	for _, col := range t.Columns {
		if v, ok := rec[col.Name]; ok && v != nil && !col.Computed {
			out[col.Name] = v
		}
	}
	return out
}

// applyJSONPatch applies an RFC 6902 patch to the record's fields and returns every column's
// new value (NULL for a removed one), checked against the description's update schema.
func applyJSONPatch(rc *recordCtx, now map[string]any, raw []byte) (map[string]any, error) {
	t := rc.desc.Table
	patch, err := jsonpatch.DecodePatch(raw)
	if err != nil {
		return nil, apierr.Field("body", "invalid_patch", err.Error())
	}
	doc, _ := json.Marshal(writable(t, now))
	out, err := patch.ApplyWithOptions(doc, &jsonpatch.ApplyOptions{SupportNegativeIndices: true, EnsurePathExistsOnAdd: false,
		AllowMissingPathOnRemove: false})
	if err != nil {
		if errors.Is(err, jsonpatch.ErrTestFailed) {
			return nil, apierr.New(http.StatusConflict, apierr.CodePatchTestFailed, "a test operation of the patch failed; nothing was changed").
				WithDetails(map[string]any{"reason": err.Error()})
		}
		return nil, apierr.Field("body", "invalid_patch", err.Error())
	}
	var next map[string]any
	dec := json.NewDecoder(bytes.NewReader(out))
	dec.UseNumber()
	if err := dec.Decode(&next); err != nil {
		return nil, apierr.Field("body", "invalid_patch", "the patch does not leave an object")
	}
	if err := check(rc.desc, "Update", next); err != nil {
		return nil, err
	}
	for _, col := range t.Columns {
		if _, ok := next[col.Name]; !ok {
			next[col.Name] = nil
		}
	}
	return next, nil
}

// applyOperators turns a JSON patch body into the new values of the fields it changes:
// objects merge into the stored ones, and the $ operators compute from the stored values.
func applyOperators(rc *recordCtx, now map[string]any, b map[string]any) (map[string]any, error) {
	out := map[string]any{}
	for k, v := range b {
		if strings.HasPrefix(k, "$") {
			continue
		}
		if obj, ok := v.(map[string]any); ok {
			if old, ok := now[k].(map[string]any); ok {
				v = merge(old, obj)
			}
		}
		out[k] = v
	}
	value := func(k string) any {
		if v, ok := out[k]; ok {
			return v
		}
		return now[k]
	}
	if inc, ok := b["$inc"].(map[string]any); ok {
		for k, d := range inc {
			base, _ := new(big.Float).SetString(fmt.Sprint(orZero(value(k))))
			add, _ := new(big.Float).SetString(fmt.Sprint(d))
			if base == nil || add == nil {
				return nil, apierr.Field("body.$inc."+k, "type", "not a number")
			}
			out[k] = json.Number(new(big.Float).Add(base, add).Text('f', -1))
		}
	}
	if push, ok := b["$push"].(map[string]any); ok {
		for k, x := range push {
			arr, _ := value(k).([]any)
			out[k] = append(append([]any{}, arr...), x)
		}
	}
	if pull, ok := b["$pull"].(map[string]any); ok {
		for k, x := range pull {
			arr, _ := value(k).([]any)
			kept := []any{}
			for _, y := range arr {
				if fmt.Sprint(y) != fmt.Sprint(x) {
					kept = append(kept, y)
				}
			}
			out[k] = kept
		}
	}
	if set, ok := b["$setOnInsert"].(map[string]any); ok {
		for k, x := range set {
			if value(k) == nil {
				out[k] = x
			}
		}
	}
	// The operators' results must still fit the description (an $inc past the maximum).
	probe := map[string]any{}
	for k, v := range out {
		if v != nil {
			probe[k] = v
		}
	}
	if len(probe) > 0 {
		if err := check(rc.desc, "Patch", probe); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func orZero(v any) any {
	if v == nil {
		return "0"
	}
	return v
}

// check validates a value against one of the description's record schemas (<Singular><kind>).
func check(d *descriptions.Description, kind string, v map[string]any) error {
	ref := d.Doc.Components.Schemas[d.Singular+kind]
	if ref == nil {
		return nil
	}
	// Through JSON, so that numbers are float64 as the validator expects.
	b, _ := json.Marshal(v)
	var x any
	_ = json.Unmarshal(b, &x)
	if err := ref.Value.VisitJSON(x, openapi3.MultiErrors()); err != nil {
		return apierr.Validation(validation.FieldErrors(err, "body")...)
	}
	return nil
}

// merge is a deep merge of patch into base (JSON merge patch, RFC 7386: null removes a key).
func merge(base, patch map[string]any) map[string]any {
	out := make(map[string]any, len(base))
	for k, v := range base {
		out[k] = v
	}
	for k, v := range patch {
		switch x := v.(type) {
		case nil:
			delete(out, k)
		case map[string]any:
			if old, ok := out[k].(map[string]any); ok {
				out[k] = merge(old, x)
			} else {
				out[k] = x
			}
		default:
			out[k] = v
		}
	}
	return out
}

// Delete is DELETE /api/v1/datasets/{id}/data/{id}: soft unless soft=false. A record other
// records refer to (a relationship) is refused with 409 unless cascade=true, which deletes
// them too, the same way.
func (h *Records) Delete(c echo.Context) error {
	rc, err := h.resolve(c, "datasets:delete")
	if err != nil {
		return err
	}
	t := rc.desc.Table
	id, err := recordID(c, t)
	if err != nil {
		return err
	}
	// A connected table has no soft deletion (its description allows only soft=false).
	soft := c.QueryParam("soft") != "false" && t.System()
	cascade := c.QueryParam("cascade") == "true"
	ctx := c.Request().Context()
	var at time.Time
	var key any
	cascaded := map[string]int64{}
	err = h.Store.Tx(ctx, func(tx *sqlx.Tx) error {
		cur, err := t.Get(ctx, tx, id, t.Fields(), true)
		if errors.Is(err, records.ErrNotFound) {
			return recordNotFound(c.Param("id"))
		} else if err != nil {
			return err
		}
		var rec map[string]any
		dec := json.NewDecoder(bytes.NewReader(cur))
		dec.UseNumber()
		if err := dec.Decode(&rec); err != nil {
			return err
		}
		key = rec[t.Key()]
		if err := h.referrers(ctx, tx, rc, rec, soft, cascade, cascaded, 0); err != nil {
			return err
		}
		at, err = t.Delete(ctx, tx, id, soft)
		return err
	})
	if err != nil {
		var ae *apierr.Error
		if errors.As(err, &ae) {
			return err
		}
		return writeErr(err, t)
	}
	out := map[string]any{"deleted": true, "id": key, "message": fmt.Sprintf("record %s deleted", id)}
	if soft {
		out["deleted_at"] = at.Format(time.RFC3339Nano)
		out["message"] = fmt.Sprintf("record %s deleted (soft: kept with deleted_at; soft=false removes it)", id)
	}
	if len(cascaded) > 0 {
		out["cascaded"] = cascaded
	}
	return c.JSON(http.StatusOK, out)
}

// maxCascadeDepth bounds how far a cascade follows relationships (they may form cycles).
const maxCascadeDepth = 5

// referrers finds the live records of other datasets that refer to rec through a
// relationship: with cascade they are deleted (and theirs, recursively), without it their
// existence is a 409.
func (h *Records) referrers(ctx context.Context, tx *sqlx.Tx, rc *recordCtx, rec map[string]any, soft, cascade bool, done map[string]int64, depth int) error {
	if !rc.desc.Table.System() {
		return nil // a connected database's foreign keys answer for its records
	}
	for _, l := range rc.desc.Links {
		if !l.Many {
			continue
		}
		v := rec[l.Column]
		if v == nil {
			continue
		}
		od, err := store.DatasetByID(ctx, tx, l.Dataset, false)
		if errors.Is(err, store.ErrNotFound) {
			continue
		} else if err != nil {
			return err
		}
		odesc, err := h.Descriptions.Describe(ctx, od, "")
		if err != nil {
			return err
		}
		ids, err := odesc.Table.Referring(ctx, tx, l.Target, fmt.Sprint(v))
		if err != nil {
			return err
		}
		if len(ids) == 0 {
			continue
		}
		if !cascade {
			return apierr.New(http.StatusConflict, apierr.CodeConflict, fmt.Sprintf("%d records of %s refer to this record; delete them first or use cascade=true", len(ids), od.Name)).
				WithDetails(map[string]any{"field": l.Column, "referenced_by": od.ID, "dataset_name": od.Name, "count": len(ids)})
		}
		if depth >= maxCascadeDepth {
			return apierr.Conflict("cascade", "the cascade is deeper than 5 relationships")
		}
		orc := &recordCtx{d: od, desc: odesc}
		for _, rid := range ids {
			cur, err := odesc.Table.Get(ctx, tx, rid, odesc.Table.Fields(), true)
			if errors.Is(err, records.ErrNotFound) {
				continue // reached twice through a cycle
			} else if err != nil {
				return err
			}
			var r map[string]any
			dec := json.NewDecoder(bytes.NewReader(cur))
			dec.UseNumber()
			if err := dec.Decode(&r); err != nil {
				return err
			}
			if err := h.referrers(ctx, tx, orc, r, soft, cascade, done, depth+1); err != nil {
				return err
			}
			if _, err := odesc.Table.Delete(ctx, tx, rid, soft); err != nil && !errors.Is(err, records.ErrNotFound) {
				return err
			}
			done[od.ID]++
		}
	}
	return nil
}
