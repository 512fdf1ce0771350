package handlers

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	"dataplatform/gen/api"
	"dataplatform/handlers/apierr"
	"dataplatform/store"
	"dataplatform/store/dashboards"
	"dataplatform/store/usersql"
)

// tileRows is the most rows a tile is drawn with.
const tileRows = 10000

// tileTTL is how long a tile's answer is kept for the same dashboard state and filters.
const tileTTL = 30 * time.Second

// tileCache keeps tiles' answers briefly: a dashboard opened by several people, or redrawn,
// queries the database once per state, tile and filter values.
var tileCache = NewTTLCache[tileData](MaxCached)

// tileData is one tile's answer.
type tileData struct {
	Path           string                `json:"path"`
	TileID         string                `json:"tile_id"`
	Columns        []usersql.QueryColumn `json:"columns,omitempty"`
	Rows           [][]any               `json:"rows,omitempty"`
	Truncated      bool                  `json:"truncated"`
	PartialPeriod  any                   `json:"partial_period,omitempty"`
	FiltersApplied []string              `json:"filters_applied"`
	Cached         bool                  `json:"cached"`
	ExecutionMS    int64                 `json:"execution_time_ms"`
	Error          *tileError            `json:"error,omitempty"`
}

type tileError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

func (h *Dashboards) GetDashboardData(ctx context.Context, req api.GetDashboardDataRequestObject) (api.GetDashboardDataResponseObject, error) {
	d, spec, ts, binds, err := h.dataRequest(ctx, req.DashboardId, req.Params.TimeRange, req.Params.Filters)
	if err != nil {
		return nil, err
	}
	pts := spec.Tiles()
	out := make([]tileData, len(pts))
	sem := make(chan struct{}, tileConcurrency)
	var wg sync.WaitGroup
	var failed error
	var once sync.Once
	for i := range pts {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			var err error
			out[i], err = h.tileData(ctx, d, spec, ts, pts[i], binds)
			if err != nil {
				once.Do(func() { failed = err })
			}
		}()
	}
	wg.Wait()
	if failed != nil {
		return nil, failed
	}
	return rawJSON{http.StatusOK, map[string]any{"dashboard_id": d.ID, "tiles": out}}, nil
}

func (h *Dashboards) GetDashboardTileData(ctx context.Context, req api.GetDashboardTileDataRequestObject) (api.GetDashboardTileDataResponseObject, error) {
	d, spec, ts, binds, err := h.dataRequest(ctx, req.DashboardId, req.Params.TimeRange, req.Params.Filters)
	if err != nil {
		return nil, err
	}
	t := spec.Tile(req.TilePath)
	if t == nil {
		return nil, apierr.NotFound("tile", req.TilePath)
	}
	td, err := h.tileData(ctx, d, spec, ts, dashboards.PathTile{Path: req.TilePath, Tile: t}, binds)
	if err != nil {
		return nil, err
	}
	return rawJSON{http.StatusOK, td}, nil
}

// dataRequest loads the dashboard for drawing and reads the time range and filter values
// into the placeholders' values. An unknown filter id, a filter value of the wrong kind or a
// time range that cannot be read is refused, never ignored.
func (h *Dashboards) dataRequest(ctx context.Context, id string, timeRange, filters *string) (*store.Dashboard, *dashboards.Spec, *tiles, map[string]any, error) {
	d, _, err := h.dashboard(ctx, id, "dashboards:view")
	if err != nil {
		return nil, nil, nil, nil, err
	}
	var spec dashboards.Spec
	if err := json.Unmarshal(d.Spec, &spec); err != nil {
		return nil, nil, nil, nil, err
	}
	prj, err := h.project(ctx, nil, d.ProjectID, "dashboards:view")
	if err != nil {
		return nil, nil, nil, nil, err
	}
	tr := ""
	if timeRange != nil {
		tr = *timeRange
	}
	binds, err := timeBinds(&spec, tr, h.Now())
	if err != nil {
		return nil, nil, nil, nil, apierr.Field("query.time_range", "invalid_format", err.Error())
	}
	values := map[string]any{}
	if filters != nil && *filters != "" {
		if err := json.Unmarshal([]byte(*filters), &values); err != nil {
			return nil, nil, nil, nil, apierr.Field("query.filters", "invalid_json", "filters is a JSON object of filter id to value: "+err.Error())
		}
	}
	var bad []apierr.FieldError
	known := map[string]bool{}
	for _, f := range spec.Filters {
		known[f.ID] = true
		v, ok := values[f.ID]
		if !ok {
			v = f.Default
		}
		switch v.(type) {
		case nil:
			continue
		case string, float64, bool:
		default:
			bad = append(bad, apierr.FieldError{Field: "query.filters." + f.ID, Code: "type", Message: "a filter's value is one string, number or boolean"})
			continue
		}
		binds[f.Parameter] = v
	}
	for k := range values {
		if !known[k] {
			var ids []string
			for id := range known {
				ids = append(ids, id)
			}
			sort.Strings(ids)
			bad = append(bad, apierr.FieldError{Field: "query.filters." + k, Code: "unknown_field",
				Message: "the dashboard has no filter " + k + " (its filters: " + strings.Join(ids, ", ") + ")"})
		}
	}
	if len(bad) > 0 {
		sort.Slice(bad, func(i, j int) bool { return bad[i].Field < bad[j].Field })
		return nil, nil, nil, nil, apierr.Validation(bad...)
	}
	ts, err := h.tiles(ctx, prj)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	return d, &spec, ts, binds, nil
}

// tileData answers one tile: from the cache, or by running its query. A query that fails is
// the tile's error (the other tiles answer); the caller's concurrency limit is the request's.
func (h *Dashboards) tileData(ctx context.Context, d *store.Dashboard, spec *dashboards.Spec, ts *tiles, pt dashboards.PathTile, binds map[string]any) (tileData, error) {
	td := newTileData(spec, pt, binds)
	used := usedBinds(pt.Tile, binds)
	key := tileKey(d, pt, binds)
	if c, ok := tileCache.Get(key); ok {
		c.Cached = true
		return c, nil
	}
	start := time.Now()
	res, err := ts.run(ctx, pt.Tile, used, tileRows)
	td.ExecutionMS = time.Since(start).Milliseconds()
	switch {
	case usersql.NotRun(err):
		return td, QueryError(err, nil, 0, 0)
	case ctx.Err() != nil:
		return td, ctx.Err()
	case err != nil:
		var ae *apierr.Error
		if !errors.As(err, &ae) {
			errors.As(QueryError(err, &pt.Tile.Query.SQL, projectQueryTimeout, time.Since(start)), &ae)
		}
		if ae == nil || ae.Status >= 500 {
			return td, err
		}
		td.Error = &tileError{Code: strings.ToLower(string(ae.Code)), Message: ae.Message}
		return td, nil
	}
	td.fill(pt.Tile, res)
	tileCache.Put(key, td, tileTTL)
	return td, nil
}

// timeBinds are the time range's placeholder values: tr, or the spec's default.
func timeBinds(spec *dashboards.Spec, tr string, now time.Time) (map[string]any, error) {
	if tr == "" {
		tr = "all"
		if spec.TimeRange != nil {
			tr = spec.TimeRange.Default
		}
	}
	from, to, err := dashboards.ParseTimeRange(tr, now)
	if err != nil {
		return nil, err
	}
	binds := map[string]any{}
	if from != nil {
		binds[dashboards.TimeFrom] = from.Format(time.RFC3339)
	}
	if to != nil {
		binds[dashboards.TimeTo] = to.Format(time.RFC3339)
	}
	return binds, nil
}

// defaultBinds are the placeholder values of the dashboard as it opens: the default time
// range and the filters' defaults.
func defaultBinds(spec *dashboards.Spec, now time.Time) (map[string]any, error) {
	binds, err := timeBinds(spec, "", now)
	if err != nil {
		return nil, err
	}
	for _, f := range spec.Filters {
		if f.Default != nil {
			binds[f.Parameter] = f.Default
		}
	}
	return binds, nil
}

// usedBinds are the values of binds that the tile's query takes.
func usedBinds(t *dashboards.Tile, binds map[string]any) map[string]any {
	used := map[string]any{}
	for name, v := range binds {
		if dashboards.Uses(t.Query.SQL, name) {
			used[name] = v
		}
	}
	return used
}

// tileKey identifies a tile's answer: the dashboard's state, the tile, the values it takes.
func tileKey(d *store.Dashboard, pt dashboards.PathTile, binds map[string]any) string {
	key, _ := json.Marshal([]any{d.ID, dashboardETag(d), pt.Path, usedBinds(pt.Tile, binds)})
	return string(key)
}

// fill sets a tile's answer from its query's result.
func (td *tileData) fill(t *dashboards.Tile, res *usersql.QueryResult) {
	td.Columns, td.Rows, td.Truncated = res.Columns, res.Rows, res.Truncated
	names := make([]string, len(res.Columns))
	for i, c := range res.Columns {
		names[i] = c.Name
	}
	td.PartialPeriod = dashboards.PartialPeriod(t, names, res.Rows)
}

// newTileData is a tile's answer before its rows: which filters it takes.
func newTileData(spec *dashboards.Spec, pt dashboards.PathTile, binds map[string]any) tileData {
	td := tileData{Path: pt.Path, TileID: pt.Tile.ID, FiltersApplied: []string{}}
	used := usedBinds(pt.Tile, binds)
	_, usesFrom := used[dashboards.TimeFrom]
	_, usesTo := used[dashboards.TimeTo]
	if usesFrom || usesTo {
		td.FiltersApplied = append(td.FiltersApplied, "time_range")
	}
	for _, f := range spec.Filters {
		if _, ok := used[f.Parameter]; ok {
			td.FiltersApplied = append(td.FiltersApplied, f.ID)
		}
	}
	return td
}
