package handlers

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"

	"dataplatform/gen/api"
	"dataplatform/handlers/apierr"
	"dataplatform/handlers/auth"
	"dataplatform/store"
	"dataplatform/store/dashboards"
	"dataplatform/store/datasets"
	"dataplatform/store/ingest"
	"dataplatform/store/queries"
	"dataplatform/store/usersql"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
)

// The project form's limits, as its description publishes them.
const (
	maxDashboardDatasets = 12
	maxDashboardViews    = 6
	maxDashboardSources  = 18
)

// generation is one dashboard to generate: where from, and how.
type generation struct {
	prj      *store.Project
	source   map[string]any // the dashboard's source (type, ids, intent)
	kind     string         // dataset, view, project
	sets     []store.Dataset
	views    []*store.View
	name     string
	intent   string
	useAI    bool
	existing *store.Dashboard // regenerated as a new version (force)
}

// progress reports a phase of the generation (analyzing, metrics, validating, layout,
// finalizing) to a stream; nil for the plain operations.
type progress func(phase, message string)

func (h *Dashboards) GenerateDatasetDashboard(ctx context.Context, req api.GenerateDatasetDashboardRequestObject) (api.GenerateDatasetDashboardResponseObject, error) {
	g, err := h.datasetForm(ctx, req.DatasetId, req.Params.UseAi, req.Params.Force)
	if err != nil {
		return nil, err
	}
	return h.generated(ctx, g, deref(req.Params.Force))
}

func (h *Dashboards) GenerateProjectDashboard(ctx context.Context, req api.GenerateProjectDashboardRequestObject) (api.GenerateProjectDashboardResponseObject, error) {
	g, err := h.projectForm(ctx, req.ProjectId, req.Body)
	if err != nil {
		return nil, err
	}
	d, err := h.generate(ctx, g, nil)
	if err != nil {
		return nil, err
	}
	return dashboardResponse{http.StatusCreated, d, dashboardJSON(d, true, ptr(true))}, nil
}

func (h *Dashboards) GenerateViewDashboard(ctx context.Context, req api.GenerateViewDashboardRequestObject) (api.GenerateViewDashboardResponseObject, error) {
	g, err := h.viewForm(ctx, req.ProjectId, req.ViewId, req.Params.UseAi)
	if err != nil {
		return nil, err
	}
	return h.generated(ctx, g, deref(req.Params.Force))
}

// generated answers a dataset's or view's generation: its existing dashboard (200) unless
// force, then a new version of it (200), or a new dashboard (201).
func (h *Dashboards) generated(ctx context.Context, g *generation, force bool) (dashboardResponse, error) {
	if g.existing != nil && !force {
		return dashboardResponse{http.StatusOK, g.existing, dashboardJSON(g.existing, true, ptr(true))}, nil
	}
	d, err := h.generate(ctx, g, nil)
	if err != nil {
		return dashboardResponse{}, err
	}
	status := http.StatusCreated
	if g.existing != nil {
		status = http.StatusOK
	}
	return dashboardResponse{status, d, dashboardJSON(d, true, ptr(true))}, nil
}

// viewForm checks the view form: the caller generates in the project, the view runs; its
// existing dashboard, if any, is in g.existing.
func (h *Dashboards) viewForm(ctx context.Context, projectID, viewID string, useAI *bool) (*generation, error) {
	prj, err := h.project(ctx, nil, projectID, "visualizations:create")
	if err != nil {
		return nil, err
	}
	v, err := h.activeView(ctx, prj.ID, viewID)
	if err != nil {
		return nil, err
	}
	g := &generation{prj: prj, kind: "view", views: []*store.View{v}, name: v.Name, useAI: useAI == nil || *useAI,
		source: map[string]any{"type": "view", "view_id": v.ID}}
	g.existing, err = h.dashboardOf(ctx, "view", v.ID, prj.Reach)
	return g, err
}

// activeView is a view of the project that runs: 404 when there is none, 409 when broken.
func (h *Dashboards) activeView(ctx context.Context, projectID, id string) (*store.View, error) {
	v, err := store.ViewByID(ctx, h.Store.DB, projectID, id, false)
	if errors.Is(err, store.ErrNotFound) {
		return nil, apierr.NotFound("view", id)
	} else if err != nil {
		return nil, err
	}
	if v.Status != "active" {
		return nil, viewBroken(v.ID, deref(v.Error), "view "+v.Name+" is broken: "+deref(v.Error))
	}
	return v, nil
}

// datasetForm checks the dataset form: the caller generates in the dataset's project, the
// dataset is active; its existing dashboard, if any, is in g.existing.
func (h *Dashboards) datasetForm(ctx context.Context, datasetID string, useAI, force *bool) (*generation, error) {
	p, err := auth.Caller(ctx)
	if err != nil {
		return nil, err
	}
	d, err := store.DatasetForUserAnyProject(ctx, h.Store.DB, datasetID, p.UserID)
	if errors.Is(err, store.ErrNotFound) {
		return nil, apierr.New(http.StatusNotFound, apierr.CodeDatasetNotFound, "no dataset "+datasetID).WithDetails(map[string]any{"dataset_id": datasetID})
	} else if err != nil {
		return nil, err
	}
	prj, err := h.project(ctx, nil, d.ProjectID, "visualizations:create")
	if err != nil {
		return nil, err
	}
	if d.Status != "active" {
		return nil, notReady(d)
	}
	g := &generation{prj: prj, kind: "dataset", sets: []store.Dataset{*d}, name: d.Name, useAI: useAI == nil || *useAI,
		source: map[string]any{"type": "dataset", "dataset_id": d.ID}}
	g.existing, err = h.dashboardOf(ctx, "dataset", d.ID, d.Reach)
	return g, err
}

// dashboardOf is the dashboard of a dataset or view (kind), nil if it has none; reach is the
// caller's reach of its project.
func (h *Dashboards) dashboardOf(ctx context.Context, kind, id string, reach store.Reach) (*store.Dashboard, error) {
	d, err := store.DashboardOf(ctx, h.Store.DB, kind, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	} else if err != nil {
		return nil, err
	}
	d.Reach = reach
	return d, nil
}

func notReady(d *store.Dataset) error {
	return apierr.New(http.StatusConflict, apierr.CodeDatasetNotReady, fmt.Sprintf("dataset %s is %s; a dashboard is made of an active dataset", d.ID, d.Status))
}

// projectForm checks the project form's body in the published order: name, sources, their count;
// then that every source is an active dataset of the project.
func (h *Dashboards) projectForm(ctx context.Context, projectID string, b *api.ProjectDashboardRequest) (*generation, error) {
	prj, err := h.project(ctx, nil, projectID, "visualizations:create")
	if err != nil {
		return nil, err
	}
	name := strings.TrimSpace(deref(b.Name))
	if name == "" {
		return nil, apierr.New(http.StatusBadRequest, apierr.CodeNameRequired, "the project form of generation needs a name")
	}
	ids, views := append([]string{}, deref(b.DatasetIds)...), append([]string{}, deref(b.ViewIds)...)
	if len(ids)+len(views) == 0 {
		return nil, apierr.New(http.StatusBadRequest, apierr.CodeNoSources, "name at least one dataset (dataset_ids) or view (view_ids)")
	}
	if len(ids) > maxDashboardDatasets || len(views) > maxDashboardViews || len(ids)+len(views) > maxDashboardSources {
		return nil, apierr.New(http.StatusBadRequest, apierr.CodeTooManyDatasets, fmt.Sprintf(
			"%d datasets and %d views: a dashboard takes at most %d datasets and %d views, %d sources in all",
			len(ids), len(views), maxDashboardDatasets, maxDashboardViews, maxDashboardSources))
	}
	all, err := store.ProjectDatasets(ctx, h.Store.DB, prj.ID)
	if err != nil {
		return nil, err
	}
	g := &generation{prj: prj, kind: "project", name: name, intent: deref(b.Intent), useAI: b.UseAi == nil || *b.UseAi}
	var bad []apierr.FieldError
	seen := map[string]bool{}
	for i, id := range ids {
		j := slices.IndexFunc(all, func(d store.Dataset) bool { return d.ID == id })
		switch {
		case seen[id]:
			bad = append(bad, apierr.FieldError{Field: "body.dataset_ids." + strconv.Itoa(i), Code: "duplicate", Message: id + " is named twice"})
		case j < 0:
			bad = append(bad, apierr.FieldError{Field: "body.dataset_ids." + strconv.Itoa(i), Code: "not_found", Message: "no dataset " + id + " in this project"})
		case all[j].Status != "active":
			bad = append(bad, apierr.FieldError{Field: "body.dataset_ids." + strconv.Itoa(i), Code: "not_ready",
				Message: fmt.Sprintf("dataset %s is %s", id, all[j].Status)})
		default:
			g.sets = append(g.sets, all[j])
		}
		seen[id] = true
	}
	for i, id := range views {
		v, err := store.ViewByID(ctx, h.Store.DB, prj.ID, id, false)
		switch {
		case errors.Is(err, store.ErrNotFound):
			bad = append(bad, apierr.FieldError{Field: "body.view_ids." + strconv.Itoa(i), Code: "not_found", Message: "no view " + id + " in this project"})
		case err != nil:
			return nil, err
		case seen[id]:
			bad = append(bad, apierr.FieldError{Field: "body.view_ids." + strconv.Itoa(i), Code: "duplicate", Message: id + " is named twice"})
		case v.Status != "active":
			bad = append(bad, apierr.FieldError{Field: "body.view_ids." + strconv.Itoa(i), Code: "view_broken", Message: "view " + v.Name + " is broken: " + deref(v.Error)})
		default:
			g.views = append(g.views, v)
		}
		seen[id] = true
	}
	if len(bad) > 0 {
		return nil, apierr.Validation(bad...)
	}
	g.source = map[string]any{"type": "project", "dataset_ids": ids, "view_ids": views}
	if g.intent != "" {
		g.source["intent"] = g.intent
	}
	return g, nil
}

// input describes the generation's datasets to the generator: each table with its columns
// and statistics, the relationships between them, and the intent's words.
func (h *Dashboards) input(ctx context.Context, g *generation) (dashboards.Input, error) {
	in := dashboards.Input{Title: g.name, Filter: g.kind != "project"}
	for _, w := range strings.FieldsFunc(strings.ToLower(g.intent), func(r rune) bool { return !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9') }) {
		if len(w) > 2 {
			in.Intent = append(in.Intent, w)
		}
	}
	// The project's search index ranks the datasets for the intent (names, descriptions,
	// columns, frequent values), as recommend-datasets does.
	var ranks map[string]float64
	if g.intent != "" && g.prj != nil {
		var err error
		if ranks, _, err = queries.RankDatasets(ctx, h.Store.DB, g.prj.ID, g.intent); err != nil {
			return in, err
		}
	}
	var rels []store.Relationship
	for i := range g.sets {
		r, err := store.Relationships(ctx, h.Store.DB, g.sets[i].ID)
		if err != nil {
			return in, err
		}
		rels = append(rels, r...)
	}
	refs := map[string]string{} // dataset id + "." + table → ref
	for i := range g.sets {
		srcs, err := datasetSources(&g.sets[i], ranks, in.Intent, refs)
		if err != nil {
			return in, err
		}
		in.Sources = append(in.Sources, srcs...)
	}
	var ts *tiles
	if len(g.views) > 0 {
		var err error
		if ts, err = h.tiles(ctx, g.prj); err != nil {
			return in, err
		}
	}
	for _, v := range g.views {
		src, err := h.viewSource(ctx, ts, v)
		if err != nil {
			return in, err
		}
		for _, w := range in.Intent {
			if strings.Contains(strings.ToLower(v.Name), w) {
				src.Rank++
			}
		}
		in.Sources = append(in.Sources, src)
	}
	relate(&in, rels, refs)
	// Sources the intent names lead.
	slices.SortStableFunc(in.Sources, func(a, b dashboards.Source) int {
		switch {
		case a.Rank > b.Rank:
			return -1
		case a.Rank < b.Rank:
			return 1
		}
		return 0
	})
	return in, nil
}

// datasetSources are a dataset's tables as sources of a generation, with their columns'
// statistics; refs gets each table's reference.
func datasetSources(d *store.Dataset, ranks map[string]float64, intent []string, refs map[string]string) ([]dashboards.Source, error) {
	tables, err := datasets.Tables(d)
	if err != nil {
		return nil, err
	}
	var st datasets.Statistics
	if d.Statistics != "" {
		if err := json.Unmarshal([]byte(d.Statistics), &st); err != nil {
			return nil, err
		}
	}
	var out []dashboards.Source
	for _, t := range tables {
		ref := queries.Identifier(d.Name)
		lbl := d.Name
		if len(tables) > 1 {
			ref += "." + t.Name
			lbl = t.Name
		}
		refs[d.ID+"."+t.Name] = ref
		src := dashboards.Source{Ref: ref, ID: d.ID, Label: lbl, Rank: ranks[d.ID]}
		ts := st.Tables[t.Name]
		if ts != nil {
			src.Rows = ts.RowCount
		}
		for _, w := range intent {
			if strings.Contains(strings.ToLower(lbl), w) {
				src.Rank++
			}
		}
		// the roles the schema API shows (relate marks the ends of relationships as keys)
		roles := datasets.ColumnRoles(t, ts, nil)
		for i, c := range t.Columns {
			col := dashboards.Column{Name: c.Name, Label: c.Original, Type: c.Type, Key: slices.Contains(t.PrimaryKey, c.Name), Role: roles[i]}
			if c.Semantics != nil {
				col.DefaultAgg, col.Aliases = c.Semantics.DefaultAggregation, c.Semantics.Aliases
			}
			if ts != nil {
				if cs := ts.Columns[c.Name]; cs != nil {
					col.Distinct, col.Nulls, col.Min, col.Max, col.Values = cs.DistinctCount, cs.NullCount, cs.Min, cs.Max, cs.SampleValues
				}
			}
			src.Columns = append(src.Columns, col)
		}
		for _, m := range ingest.Measures(t.Columns) {
			src.Measures = append(src.Measures, dashboards.Column{Name: m.Name, Label: m.Name, Type: ingest.Numeric, DefaultAgg: m.Aggregation, Role: m.Role(),
				Expr: ingest.MeasureValue(m, m.OfTimes(t.Columns), "")})
		}
		out = append(out, src)
	}
	return out, nil
}

// relate adds the relationships between in's sources (refs: dataset id + "." + table →
// ref), once each, and marks both ends' columns as keys (never summed).
func relate(in *dashboards.Input, rels []store.Relationship, refs map[string]string) {
	keys := map[string]bool{} // ref + "." + column: ends of relationships
	seen := map[string]bool{}
	for _, r := range rels {
		from, okF := refs[r.FromDataset+"."+r.FromTable]
		to, okT := refs[r.ToDataset+"."+r.ToTable]
		if !okF || !okT {
			continue
		}
		keys[from+"."+r.FromColumn], keys[to+"."+r.ToColumn] = true, true
		if k := from + "." + r.FromColumn + ">" + to; !seen[k] {
			seen[k] = true
			in.Relations = append(in.Relations, dashboards.Relation{From: from, FromColumn: r.FromColumn, To: to, ToColumn: r.ToColumn})
		}
	}
	for i := range in.Sources {
		for j := range in.Sources[i].Columns {
			if keys[in.Sources[i].Ref+"."+in.Sources[i].Columns[j].Name] {
				in.Sources[i].Columns[j].Key = true
			}
		}
	}
}

// generate builds the dashboard of g and keeps it: a new one, or a new version of
// g.existing. report, when set, hears each phase.
func (h *Dashboards) generate(ctx context.Context, g *generation, report progress) (*store.Dashboard, error) {
	if report == nil {
		report = func(string, string) {}
	}
	p, err := auth.Caller(ctx)
	if err != nil {
		return nil, err
	}
	report("analyzing", fmt.Sprintf("Reading the columns and statistics of %d dataset(s) and %d view(s)", len(g.sets), len(g.views)))
	in, err := h.input(ctx, g)
	if err != nil {
		return nil, err
	}
	var warnings []string
	var cands []dashboards.Candidate
	report("metrics", "Choosing measures, dimensions and time columns")
	if m := h.model(); g.useAI && m != nil {
		drafted, err := dashboards.Draft(ctx, m.Chat, in, g.intent)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			warnings = append(warnings, "the model's draft could not be used ("+err.Error()+"); the deterministic generator built the dashboard")
		}
		cands = drafted
	}
	proposed, filters := dashboards.Propose(in)
	cands = append(cands, proposed...)
	slices.SortStableFunc(cands, func(a, b dashboards.Candidate) int { return cmp.Compare(b.Score, a.Score) })
	report("validating", "Running "+strconv.Itoa(len(cands))+" candidate tiles")
	ts, err := h.tiles(ctx, g.prj)
	if err != nil {
		return nil, err
	}
	passed, results, dropped, err := h.validateTiles(ctx, ts, cands)
	if err != nil {
		return nil, err
	}
	warnings = append(warnings, dropped...)
	more, err := ts.options(ctx, filters)
	if err != nil {
		return nil, err
	}
	warnings = append(warnings, more...)
	generatedBy := "deterministic"
	for _, c := range passed {
		if strings.HasPrefix(c.Tile.ID, "model_") {
			generatedBy = "model"
		}
	}
	if len(passed) == 0 || onlyZeros(passed, results) {
		return nil, apierr.New(http.StatusConflict, apierr.CodeNothingToShow,
			"no tile could be made: the sources have no records, or every proposed tile's query failed or returned no rows")
	}
	report("layout", "Placing "+strconv.Itoa(min(len(passed), dashboards.MaxTiles))+" tiles on the grid")
	spec := dashboards.Layout(g.name, dashboards.Describe(in), passed, filters)
	raw, err := json.Marshal(spec)
	if err != nil {
		return nil, err
	}
	report("finalizing", "Saving the dashboard")
	d, err := h.saveGenerated(ctx, g, p.UserID, raw, generatedBy, warnings, len(spec.Tiles()))
	if err == nil {
		h.warmTiles(d, spec, passed, results)
	}
	if errors.Is(err, store.ErrDashboardExists) {
		// Another request made the dataset's dashboard meanwhile: that one is the answer.
		sourceID := d.DatasetID
		if g.kind == "view" {
			sourceID = d.ViewID
		}
		if cur, err := store.DashboardOf(ctx, h.Store.DB, g.kind, *sourceID); err == nil {
			cur.Reach = g.prj.Reach
			return cur, nil
		}
	}
	if err != nil {
		return nil, err
	}
	return d, nil
}

// saveGenerated keeps a generation's spec: a new version of the dashboard it regenerates, or
// a new dashboard (store.ErrDashboardExists when another request made the source's meanwhile).
func (h *Dashboards) saveGenerated(ctx context.Context, g *generation, userID string, raw []byte, generatedBy string, warnings []string, tiles int) (*store.Dashboard, error) {
	now := h.Now()
	source, _ := json.Marshal(g.source)
	d := g.existing
	err := h.Store.Tx(ctx, func(tx *sqlx.Tx) error {
		if d != nil {
			cur, err := store.LockDashboard(ctx, tx, d.ID)
			if err != nil {
				return err
			}
			cur.Reach, cur.GeneratedBy, cur.Warnings = d.Reach, generatedBy, warnings
			d = cur
			if err := h.newVersion(ctx, tx, d, "generate", d.DisplayName, raw, nil, nil); err != nil {
				return err
			}
			return h.audit(ctx, tx, d.OrgID, "dashboard.regenerate", "dashboard", d.ID, d.DisplayName, map[string]any{"version": d.Version})
		}
		d = &store.Dashboard{ID: store.NewID("dsh"), OrgID: g.prj.OrgID, ProjectID: g.prj.ID, SourceType: g.kind, Source: source,
			DisplayName: g.name, Spec: raw, Version: 1, GeneratedBy: generatedBy, Warnings: warnings, CreatedBy: &userID,
			CreatedAt: now, UpdatedAt: now, Reach: g.prj.Reach}
		switch g.kind {
		case "dataset":
			d.DatasetID = &g.sets[0].ID
		case "view":
			d.ViewID = &g.views[0].ID
		}
		v := &store.DashboardVersion{ID: store.NewID("dshv"), DashboardID: d.ID, Number: 1, Kind: "generate", DisplayName: d.DisplayName,
			Spec: raw, CreatedBy: &userID, CreatedAt: now}
		if err := store.CreateDashboard(ctx, tx, d, v); err != nil {
			return err
		}
		return h.audit(ctx, tx, d.OrgID, "dashboard.create", "dashboard", d.ID, d.DisplayName, map[string]any{"source": g.source, "tiles": tiles})
	})
	return d, err
}

// onlyZeros says whether the tiles are all KPIs of zero: counts of sources that have no
// records, a dashboard with nothing to show.
func onlyZeros(passed []dashboards.Candidate, results []*usersql.QueryResult) bool {
	for i, c := range passed {
		if c.Tile.Type != "kpi" || fmt.Sprint(results[i].Rows[0][0]) != "0" {
			return false
		}
	}
	return true
}

// validateTiles runs the queries of the candidates the layout wants (a few at a time,
// within the caller's query slots) and keeps those that answer rows; a candidate that fails
// or answers nothing is named in dropped and the next best of its group is tried instead.
// The answers are returned too, to serve the new dashboard's first drawing.
func (h *Dashboards) validateTiles(ctx context.Context, ts *tiles, cands []dashboards.Candidate) (passed []dashboards.Candidate, results []*usersql.QueryResult, dropped []string, err error) {
	refused := make([]bool, len(cands))
	res := make([]*usersql.QueryResult, len(cands))
	for {
		wanted := dashboards.Wanted(cands, refused)
		var todo []int
		for _, i := range wanted {
			if res[i] == nil {
				todo = append(todo, i)
			}
		}
		if len(todo) == 0 {
			for _, i := range wanted {
				passed, results = append(passed, cands[i]), append(results, res[i])
			}
			return passed, results, dropped, nil
		}
		why := make([]string, len(cands))
		errs := make([]error, len(cands))
		sem := make(chan struct{}, tileConcurrency)
		var wg sync.WaitGroup
		for _, i := range todo {
			wg.Add(1)
			sem <- struct{}{}
			go func() {
				defer func() { <-sem; wg.Done() }()
				r, err := ts.run(ctx, &cands[i].Tile, nil, tileRows)
				switch {
				case usersql.NotRun(err) || ctx.Err() != nil:
					errs[i] = err
				case err != nil:
					why[i] = err.Error()
				case len(r.Rows) == 0:
					why[i] = "no rows"
				case cands[i].Tile.Type == "kpi" && (len(r.Rows[0]) == 0 || r.Rows[0][0] == nil):
					why[i] = "no value"
				default:
					res[i] = r
				}
			}()
		}
		wg.Wait()
		for _, i := range todo {
			if errs[i] != nil {
				if usersql.NotRun(errs[i]) {
					return nil, nil, nil, QueryError(errs[i], nil, 0, 0)
				}
				return nil, nil, nil, errs[i]
			}
			if res[i] == nil {
				refused[i] = true
				dropped = append(dropped, fmt.Sprintf("tile %q left out: %s", cands[i].Tile.Title, why[i]))
			}
		}
	}
}

// warmTiles keeps the answers validation read as the new dashboard's tile data (its default
// time range and filters): its first drawing does not run every query again.
func (h *Dashboards) warmTiles(d *store.Dashboard, spec dashboards.Spec, passed []dashboards.Candidate, results []*usersql.QueryResult) {
	byID := map[string]*usersql.QueryResult{}
	for i, c := range passed {
		byID[c.Tile.ID] = results[i]
	}
	binds, err := defaultBinds(&spec, h.Now())
	if err != nil || len(binds) > 0 {
		return // the default view binds values validation did not: nothing to reuse
	}
	for _, pt := range spec.Tiles() {
		if r := byID[pt.Tile.ID]; r != nil {
			td := newTileData(&spec, pt, binds)
			td.fill(pt.Tile, r)
			tileCache.Put(tileKey(d, pt, binds), td, tileTTL)
		}
	}
}

// tileConcurrency is how many tile queries of one request run at once (each takes one of the
// user's query slots).
const tileConcurrency = 3

// tiles runs tiles' queries for one request: the project's datasets and views are read once
// and its query role made sure of once, whatever the number of tiles.
type tiles struct {
	h       *Dashboards
	prj     *store.Project
	sources []queries.Source
}

func (h *Dashboards) tiles(ctx context.Context, prj *store.Project) (*tiles, error) {
	if err := datasets.EnsureQueryRole(ctx, h.Store.DB, prj.OrgID); err != nil {
		return nil, err
	}
	sources, err := queries.ProjectSources(ctx, h.Store.DB, prj.ID)
	if err != nil {
		return nil, err
	}
	return &tiles{h: h, prj: prj, sources: sources}, nil
}

// options lists every value of each category filter's column, sorted, when there are at most
// dashboards.MaxOptions of them (more keep the sample's few; the page takes typed values too).
// A listing that fails leaves the sample and says so in a warning; a query not run (no slot,
// the request's end) is the error.
func (ts *tiles) options(ctx context.Context, filters []dashboards.Filter) (warnings []string, err error) {
	for i := range filters {
		f := &filters[i]
		t := dashboards.OptionsTile(*f)
		if t == nil {
			continue
		}
		r, err := ts.run(ctx, t, nil, dashboards.MaxOptions+1)
		switch {
		case err != nil && (usersql.NotRun(err) || ctx.Err() != nil):
			return nil, err
		case err != nil:
			warnings = append(warnings, fmt.Sprintf("filter %q offers the values seen in a sample: listing its values failed (%v)", f.Label, err))
		case len(r.Rows) <= dashboards.MaxOptions:
			f.Options = make([]any, 0, len(r.Rows))
			for _, row := range r.Rows {
				f.Options = append(f.Options, row[0])
			}
		}
	}
	return warnings, nil
}

// prepare maps a tile's query onto the project's datasets and views and binds its
// parameters (missing ones are NULL).
func (ts *tiles) prepare(ctx context.Context, sql string, params map[string]*any) (*prepared, error) {
	return (&Queries{ts.h.Handlers}).prepareOver(ctx, ts.prj, ts.sources, "sql", sql, nil, &params, true)
}

// run runs a tile's query in the query sandbox with its parameters: the tile's own, then
// binds (the time range and filters).
func (ts *tiles) run(ctx context.Context, t *dashboards.Tile, binds map[string]any, maxRows int) (*usersql.QueryResult, error) {
	params := map[string]*any{}
	for k, v := range t.Query.Parameters {
		params[k] = &v
	}
	for k, v := range binds {
		params[k] = &v
	}
	pp, err := ts.prepare(ctx, t.Query.SQL, params)
	if err != nil {
		return nil, err
	}
	p, err := auth.Caller(ctx)
	if err != nil {
		return nil, err
	}
	// Reads of the datasets: a standby (DATABASE_READ_URL) serves them when it can.
	var res *usersql.QueryResult
	err = ts.h.Store.OnReader(ctx, func(db *sqlx.DB) (err error) {
		res, err = usersql.RunQuery(ctx, db, ts.prj.OrgID, pp.SQL, pp.args, usersql.QueryOptions{Timeout: projectQueryTimeout, MaxRows: maxRows,
			MaxBytes: ts.h.Config.QueryResultBytes, MaxRowBytes: ts.h.Config.QueryResultBytes, Slot: ts.h.UserSlot(p.UserID)})
		return err
	})
	return res, err
}

// viewSource describes a saved view to the generator. A view keeps no statistics: they are
// read from it (rows, distinct values, empty values, ranges) through the sandbox, as the
// caller, in one query per viewChunk columns (a select list holds at most 1,664 entries).
func (h *Dashboards) viewSource(ctx context.Context, ts *tiles, v *store.View) (dashboards.Source, error) {
	var cols []store.ViewColumn
	if err := json.Unmarshal([]byte(v.Columns), &cols); err != nil {
		return dashboards.Source{}, err
	}
	src := dashboards.Source{Ref: v.Name, ID: v.ID, Label: v.Name}
	for lo := 0; lo == 0 || lo < len(cols); lo += viewChunk {
		chunk := cols[lo:min(lo+viewChunk, len(cols))]
		sel := []string{"count(*) AS n"}
		type read struct{ distinct, count, lo, hi int }
		reads := make([]read, len(chunk))
		for i, c := range chunk {
			q := pq.QuoteIdentifier(c.Name)
			r := read{-1, -1, -1, -1}
			switch t := ingest.Type(c.Type); t {
			case ingest.Integer, ingest.BigInt, ingest.Numeric, ingest.Date, ingest.Timestamptz:
				r = read{len(sel), len(sel) + 1, len(sel) + 2, len(sel) + 3}
				sel = append(sel, "count(DISTINCT "+q+")", "count("+q+")", "min("+q+")::text", "max("+q+")::text")
			case ingest.Text, ingest.Boolean, ingest.UUID:
				r.distinct, r.count = len(sel), len(sel)+1
				sel = append(sel, "count(DISTINCT "+q+")", "count("+q+")")
			}
			reads[i] = r
		}
		res, err := ts.run(ctx, &dashboards.Tile{Query: dashboards.Query{SQL: "SELECT " + strings.Join(sel, ", ") + " FROM " + v.Name}}, nil, 1)
		if err != nil {
			return src, err
		}
		row := res.Rows[0]
		count := func(i int) int64 {
			if i < 0 {
				return 0
			}
			n, _ := strconv.ParseInt(fmt.Sprint(row[i]), 10, 64)
			return n
		}
		text := func(i int) json.RawMessage {
			if i < 0 || row[i] == nil {
				return nil
			}
			b, _ := json.Marshal(fmt.Sprint(row[i]))
			return b
		}
		src.Rows = count(0)
		for i, c := range chunk {
			r := reads[i]
			src.Columns = append(src.Columns, dashboards.Column{Name: c.Name, Label: c.Name, Type: ingest.Type(c.Type), Distinct: count(r.distinct),
				Nulls: src.Rows - count(r.count), Min: text(r.lo), Max: text(r.hi)})
		}
	}
	return src, nil
}

// viewChunk is how many of a view's columns one statistics query reads (4 entries each).
const viewChunk = 300
