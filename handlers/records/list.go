package records

import (
	"encoding/json"
	"math"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"

	recsql "dataplatform/store/records"

	"github.com/jmoiron/sqlx"
	"github.com/labstack/echo/v4"
)

// List is GET /api/v1/datasets/{id}/data.
func (h *Records) List(c echo.Context) error {
	start := time.Now()
	rc, err := h.resolve(c, "datasets:read")
	if err != nil {
		return err
	}
	t, q := rc.desc.Table, c.QueryParams()
	page, limit := 1, recsql.DefaultListLimit
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
	read := fields
	if rc.desc.LinksSQL == "" { // the handler makes _links: read what they are made of
		read = slices.Clone(fields)
		for _, f := range append([]string{t.Key()}, linkColumns(rc.desc.Links)...) {
			if f != "" && !slices.Contains(read, f) {
				read = append(read, f)
			}
		}
	}
	var page0 *recsql.Page
	err = h.Store.OnReader(c.Request().Context(), func(db *sqlx.DB) (err error) {
		// Prepared, as a record by key is (read.go): a list's statement depends on the
		// request's shape (fields, filters, sort, limit, first page or not), never on the
		// filters' values.
		page0, err = t.List(c.Request().Context(), h.Store.Preparing(db), recsql.ListQuery{Page: page, Limit: limit, Sort: q.Get("sort"),
			Fields: read, Search: q.Get("search"), Filters: filters, Cursor: q.Get("cursor"), Count: q.Get("count"), Links: rc.desc.LinksSQL})
		return err
	})
	if err != nil {
		return fieldErr(err)
	}
	defer page0.Release()
	data := page0.Rows
	if rc.desc.LinksSQL == "" {
		data = make([]json.RawMessage, len(page0.Rows))
		for i, r := range page0.Rows {
			if data[i], err = h.shape(c.Request().Context(), rc, r, fields, ""); err != nil {
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

// listPagination and listMeta are the record list's pagination object and meta.
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
// would parse and compact every record again), to the client in one write with its length
// (net/http would otherwise send a body this size in chunks), from a reused buffer.
func writeList(c echo.Context, data []json.RawMessage, pagination listPagination, meta listMeta) error {
	p, _ := json.Marshal(pagination)
	m, _ := json.Marshal(meta)
	bp := listBufs.Get().(*[]byte)
	b := append((*bp)[:0], `{"data":[`...)
	for i, r := range data {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, r...)
	}
	b = append(append(append(append(append(b, `],"pagination":`...), p...), `,"meta":`...), m...), '}')
	w := c.Response()
	w.Header().Set(echo.HeaderContentType, echo.MIMEApplicationJSON)
	w.Header().Set(echo.HeaderContentLength, strconv.Itoa(len(b)))
	w.WriteHeader(http.StatusOK)
	_, err := w.Write(b)
	if *bp = b; cap(b) <= 1<<20 {
		listBufs.Put(bp)
	}
	return err
}

// listBufs are the buffers list answers are assembled in (one per request in flight).
var listBufs = sync.Pool{New: func() any { b := make([]byte, 0, 16<<10); return &b }}

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
	limit := recsql.DefaultAggregateLimit
	if v := q.Get("limit"); v != "" {
		limit, _ = strconv.Atoi(v)
	}
	var a *recsql.Aggregation
	err = h.Store.OnReader(c.Request().Context(), func(db *sqlx.DB) (err error) {
		a, err = t.Aggregate(c.Request().Context(), db, recsql.AggregateQuery{GroupBy: q.Get("group_by"), Agg: q.Get("agg"),
			Having: q.Get("having"), Sort: q.Get("sort"), Limit: limit, Filters: filters})
		return err
	})
	if err != nil {
		return fieldErr(err)
	}
	return c.JSON(http.StatusOK, map[string]any{"data": a.Groups, "aggregations": a.Totals,
		"meta": map[string]any{"groups": len(a.Groups), "execution_time_ms": time.Since(start).Milliseconds()}})
}

// linkColumns are the columns the links are made of.
func linkColumns(links []recsql.Link) []string {
	out := make([]string, len(links))
	for i, l := range links {
		out[i] = l.Column
	}
	return out
}

// withLinks adds `_links` to a record: self (by its key), then each relationship in the
// description's order, those whose column is null left out, as LinksSQL makes them.
func (h *Records) withLinks(rc *recordCtx, o *object) {
	var names []string
	var vals [][]byte
	key := rc.desc.Table.Key()
	id := o.text(key)
	if key != "" {
		names, vals = append(names, "self"), append(vals, quote(rc.desc.SelfURL(rc.d.ID, id)))
	}
	for _, l := range rc.desc.Links {
		v := id
		if l.Column != key {
			raw, ok := o.get(l.Column)
			if !ok || string(raw) == "null" {
				continue
			}
			v = o.text(l.Column)
		}
		names, vals = append(names, l.Name), append(vals, quote(l.URL(v)))
	}
	o.set("_links", members(names, vals))
}
