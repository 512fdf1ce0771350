package records

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"dataplatform/handlers"
	"dataplatform/handlers/apierr"
	"dataplatform/handlers/auth"
	"dataplatform/store"
	"dataplatform/store/datasets"
	"dataplatform/store/queries"
	"dataplatform/store/usersql"

	"github.com/jmoiron/sqlx"
	"github.com/labstack/echo/v4"
	"github.com/lib/pq"
)

// Query limits: the default and longest statement timeout, the rows returned.
const (
	defaultQueryTimeout = 30 * time.Second
	maxQueryTimeout     = 120 * time.Second
	maxQueryRows        = 10_000
	defaultCacheTTL     = 60 * time.Second
)

// queryCache keeps small record query answers (options.cache) for their cache_ttl.
var queryCache = handlers.NewTTLCache[map[string]any](handlers.MaxCached)

// Query is POST /api/v1/datasets/{id}/data/query: one SELECT of the caller's, checked with
// PostgreSQL's parser, run read-only under the organization's query role with a timeout.
func (h *Records) Query(c echo.Context) error {
	start := time.Now()
	rc, err := h.resolve(c, "datasets:read")
	if err != nil {
		return err
	}
	var req queryRequest
	dec := json.NewDecoder(c.Request().Body)
	dec.UseNumber()
	if err := dec.Decode(&req); err != nil {
		return apierr.Field("body", "invalid_json", "the body is not a query request")
	}
	sqlText := strings.ReplaceAll(req.SQL, "${table}", rc.desc.Table.QueryName())
	bound, names, err := usersql.BindNames(sqlText, 1)
	if err != nil {
		return handlers.QueryError(err, nil, 0, 0)
	}
	args, err := queryArgs(names, req.Parameters)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	prep, err := h.mapQuery(ctx, rc, bound)
	if err != nil {
		return err
	}
	bound = prep.SQL
	timeout := defaultQueryTimeout
	if req.Options.Timeout != nil {
		timeout = time.Duration(*req.Options.Timeout) * time.Millisecond
	}
	key := ""
	if req.Options.Cache {
		pj, _ := json.Marshal(req.Parameters)
		sum := sha256.Sum256([]byte(rc.d.OrgID + "\x00" + rc.d.ID + "\x00" + bound + "\x00" + string(pj)))
		key = hex.EncodeToString(sum[:])
		if hit, ok := queryCache.Get(key); ok {
			return c.JSON(http.StatusOK, cachedAnswer(hit, start))
		}
	}
	if err := h.ensureQueryRole(ctx, rc.d.OrgID); err != nil {
		return err
	}
	maxBytes := h.Config.QueryResultBytes
	var res *usersql.QueryResult
	err = h.Store.OnReader(ctx, func(db *sqlx.DB) (err error) {
		res, err = usersql.RunQuery(ctx, db, rc.d.OrgID, bound, args, usersql.QueryOptions{Timeout: timeout, MaxRows: maxQueryRows,
			MaxBytes: maxBytes, MaxRowBytes: maxBytes, Slot: h.UserSlot(auth.FromContext(ctx).UserID)})
		return err
	})
	if err != nil {
		return handlers.QueryError(err, &bound, timeout, time.Since(start))
	}
	id := make([]byte, 10)
	_, _ = rand.Read(id)
	meta := map[string]any{"row_count": len(res.Rows), "execution_time_ms": time.Since(start).Milliseconds(), "cached": false,
		"query_id": "q_" + hex.EncodeToString(id), "truncated": res.Truncated}
	if res.TooLarge {
		meta["warnings"] = []string{handlers.CutWarning(len(res.Rows), maxBytes, "page with ORDER BY and LIMIT/OFFSET, select fewer or "+
			"shorter columns, or read every record through GET /api/v1/datasets/"+rc.d.ID+"/data/export")}
	}
	body := map[string]any{"data": res.Objects(), "schema": res.Columns, "meta": meta}
	if key != "" && !res.TooLarge && res.Bytes <= handlers.MaxCachedBytes {
		ttl := defaultCacheTTL
		if req.Options.CacheTTL != nil {
			ttl = time.Duration(*req.Options.CacheTTL) * time.Second
		}
		queryCache.Put(key, body, ttl)
	}
	return c.JSON(http.StatusOK, body)
}

// queryRequest is the body of a query over a dataset's records.
type queryRequest struct {
	SQL        string         `json:"sql"`
	Parameters map[string]any `json:"parameters"`
	Options    struct {
		Timeout  *int `json:"timeout"`
		Cache    bool `json:"cache"`
		CacheTTL *int `json:"cache_ttl"`
	} `json:"options"`
}

// queryArgs are the values of the query's named parameters, in the order of names: JSON
// numbers as their text, objects and arrays as their JSON.
func queryArgs(names []string, params map[string]any) ([]any, error) {
	args := make([]any, len(names))
	for i, n := range names {
		v, ok := params[n]
		if !ok {
			return nil, apierr.Field("body.parameters."+n, "required", "the query uses :"+n+" but parameters has no "+n)
		}
		switch x := v.(type) {
		case nil, string, bool:
			args[i] = x
		case json.Number:
			args[i] = x.String()
		default:
			b, _ := json.Marshal(x)
			args[i] = string(b)
		}
	}
	return args, nil
}

// cachedAnswer is a cached answer, its meta telling it is one and this request's time.
func cachedAnswer(hit map[string]any, start time.Time) map[string]any {
	out := map[string]any{"data": hit["data"], "schema": hit["schema"]}
	meta := map[string]any{}
	for k, v := range hit["meta"].(map[string]any) {
		meta[k] = v
	}
	meta["cached"], meta["execution_time_ms"] = true, time.Since(start).Milliseconds()
	out["meta"] = meta
	return out
}

// ensureQueryRole makes the organization's query role; a database user that may not is told
// as a 501.
func (h *Records) ensureQueryRole(ctx context.Context, orgID string) error {
	if err := datasets.EnsureQueryRole(ctx, h.Store.DB, orgID); err != nil {
		var pe *pq.Error
		if errors.As(err, &pe) && pe.Code == "42501" {
			return apierr.New(http.StatusNotImplemented, apierr.CodeNotSupported,
				"the platform's database user may not create the query role (it needs CREATEROLE): "+pe.Message)
		}
		return err
	}
	return nil
}

// mapQuery maps the relations of a record query's SQL (bound: ${table} and :name parameters
// replaced) onto what its caller may read, as project queries map theirs onto the project's
// datasets (queries.Map), and refuses it otherwise: its own dataset, and the datasets and
// saved views, by their table names (ds_..., vw_...), of the organization's projects the
// caller reaches with datasets:read. A relation out of reach, in any clause or as a row type,
// is refused as one that does not exist.
func (h *Records) mapQuery(ctx context.Context, rc *recordCtx, bound string) (*queries.Prepared, error) {
	tables, err := datasets.Tables(rc.d)
	if err != nil {
		return nil, err
	}
	sources := []queries.Source{{ID: rc.d.ID, Name: rc.d.ID, Tables: tables}}
	prep, err := queries.Map(bound, sources)
	var ue *queries.UnknownError
	if errors.As(err, &ue) { // it names more than its own table: what else the caller reads
		more, rerr := h.readable(ctx, rc.d.OrgID)
		if rerr != nil {
			return nil, rerr
		}
		for _, s := range more {
			if s.ID != rc.d.ID {
				sources = append(sources, s)
			}
		}
		prep, err = queries.Map(bound, sources)
	}
	if errors.As(err, &ue) {
		msg := fmt.Sprintf("%q is not a dataset or view you may read", ue.Name)
		if ue.Type {
			msg = fmt.Sprintf("%q is neither a built-in type nor a dataset or view you may read", ue.Name)
		}
		msg += fmt.Sprintf(" (line %d, column %d): ${table} is this dataset; the organization's other datasets and views are named by "+
			"their table names (ds_..., vw_...) and must be in a project you may read", ue.Line, ue.Column)
		return nil, apierr.New(http.StatusBadRequest, apierr.CodeInvalidQuery, msg).WithDetails(map[string]any{"line": ue.Line, "column": ue.Column,
			"message": msg})
	} else if err != nil {
		return nil, handlers.QueryError(err, nil, 0, 0)
	}
	return prep, nil
}

// readable are the sources of the organization's projects the caller reaches with
// datasets:read, named by their table names.
func (h *Records) readable(ctx context.Context, orgID string) ([]queries.Source, error) {
	p, err := auth.Caller(ctx)
	if err != nil {
		return nil, err
	}
	prjs, err := store.ReachableProjects(ctx, h.Store.DB, orgID, p.UserID)
	if err != nil {
		return nil, err
	}
	var ids []string
	for _, prj := range prjs {
		if auth.ReachAccess(p, orgID, prj.Reach).Has("datasets:read") {
			ids = append(ids, prj.ID)
		}
	}
	if len(ids) == 0 {
		return nil, nil
	}
	sources, err := queries.ProjectSources(ctx, h.Store.DB, ids...)
	return queries.ByTableName(sources), err
}
