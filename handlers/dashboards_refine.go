package handlers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strings"

	"dataplatform/gen/api"
	"dataplatform/handlers/apierr"
	"dataplatform/store"
	"dataplatform/store/dashboards"
	"dataplatform/store/queries"

	"github.com/jmoiron/sqlx"
)

// refineResponse is the refined dashboard with what changed.
type refineResponse struct{ dashboardResponse }

func (r refineResponse) VisitRefineDashboardResponse(w http.ResponseWriter) error { return r.write(w) }

func (h *Dashboards) RefineDashboard(ctx context.Context, req api.RefineDashboardRequestObject) (api.RefineDashboardResponseObject, error) {
	b := req.Body
	d, _, err := h.dashboard(ctx, req.DashboardId, "visualizations:create")
	if err != nil {
		return nil, err
	}
	var spec dashboards.Spec
	if err := json.Unmarshal(d.Spec, &spec); err != nil {
		return nil, err
	}
	scope, path := "dashboard", deref(b.TilePath)
	if b.Scope != nil {
		scope = string(*b.Scope)
	}
	switch {
	case scope == "tile" && path == "":
		return nil, apierr.Field("body.tile_path", "required", "scope tile names the tile: tile_path rows.<i>.items.<j>")
	case scope == "dashboard" && path != "":
		return nil, apierr.Field("body.tile_path", "unexpected", "tile_path goes with scope tile")
	case scope == "tile" && spec.Tile(path) == nil:
		return nil, apierr.Field("body.tile_path", "not_found", "the dashboard has no tile at "+path)
	}
	g, err := h.sourceOf(ctx, d)
	if err != nil {
		return nil, err
	}
	in, err := h.input(ctx, g)
	if err != nil {
		return nil, err
	}
	before := map[string]string{}
	for _, pt := range spec.Tiles() {
		before[pt.Tile.ID] = pt.Tile.Query.SQL
	}
	var warnings []string
	var ref *dashboards.Refinement
	if m := h.model(); m != nil {
		// The model's revision is a proposal: it passes the checks an edit passes and its
		// changed tiles run, or the built-in rules apply the prompt instead.
		revised, changes, err := dashboards.Revise(ctx, m.Chat, spec, b.UserPrompt, scope, path, in)
		if err == nil {
			err = h.acceptRevision(ctx, g.prj, revised, before)
		}
		if err == nil {
			spec, ref = *revised, &dashboards.Refinement{Changes: changes}
		} else if ctx.Err() != nil {
			return nil, ctx.Err()
		} else {
			msg := err.Error()
			var ae *apierr.Error
			if errors.As(err, &ae) {
				msg = ae.Message
			}
			warnings = append(warnings, "the model's edit could not be used ("+msg+"); the built-in rules applied the prompt")
		}
	}
	if ref == nil {
		var more []string
		if ref, more, err = h.refineByRules(ctx, g.prj, &spec, b.UserPrompt, scope, path, in, before); err != nil {
			return nil, err
		}
		warnings = append(warnings, more...)
	}
	raw, err := json.Marshal(spec)
	if err != nil {
		return nil, err
	}
	msg := b.UserPrompt
	if len(msg) > 200 {
		msg = msg[:200]
	}
	d, err = h.change(ctx, req.DashboardId, req.Params.IfMatch, func(tx *sqlx.Tx, d *store.Dashboard) error {
		d.Warnings = append(warnings, ref.Warnings...)
		if err := h.newVersion(ctx, tx, d, "refine", d.DisplayName, raw, &msg, nil); err != nil {
			return err
		}
		return h.audit(ctx, tx, d.OrgID, "dashboard.refine", "dashboard", d.ID, d.DisplayName,
			map[string]any{"version": d.Version, "prompt": b.UserPrompt, "changes": ref.Changes})
	})
	if err != nil {
		return nil, err
	}
	out := dashboardJSON(d, true, ptr(true))
	out.Changes = ref.Changes
	return refineResponse{dashboardResponse{http.StatusOK, d, out}}, nil
}

// refineByRules applies prompt to spec with the built-in rules; a new filter lists its
// column's values. The warnings say what could not be done fully.
func (h *Dashboards) refineByRules(ctx context.Context, prj *store.Project, spec *dashboards.Spec, prompt, scope, path string, in dashboards.Input,
	before map[string]string) (*dashboards.Refinement, []string, error) {
	var warnings []string
	filters := len(spec.Filters)
	ref, err := dashboards.Refine(spec, prompt, scope, path, in)
	var nu *dashboards.NotUnderstood
	if errors.As(err, &nu) {
		return nil, nil, apierr.New(http.StatusBadRequest, apierr.CodePromptNotUnderstood, nu.Reason).WithDetails(map[string]any{"suggestions": nu.Suggestions})
	} else if err != nil {
		return nil, nil, err
	}
	if err := h.acceptRevision(ctx, prj, spec, before); err != nil {
		return nil, nil, err
	}
	if len(spec.Filters) > filters {
		ts, err := h.tiles(ctx, prj)
		if err != nil {
			return nil, nil, err
		}
		more, err := ts.options(ctx, spec.Filters[filters:])
		if err != nil {
			return nil, nil, err
		}
		warnings = more
	}
	return ref, warnings, nil
}

// acceptRevision holds a refined spec to what an edit must pass, and runs every tile whose
// query the refinement wrote (before holds each tile's SQL before it).
func (h *Dashboards) acceptRevision(ctx context.Context, prj *store.Project, spec *dashboards.Spec, before map[string]string) error {
	if len(spec.Rows) == 0 {
		return apierr.New(http.StatusBadRequest, apierr.CodePromptNotUnderstood, "that would leave the dashboard without tiles; delete the dashboard instead").
			WithDetails(map[string]any{"suggestions": []string{}})
	}
	if err := h.checkSpec(ctx, prj.ID, spec, "spec."); err != nil {
		return err
	}
	ts, err := h.tiles(ctx, prj)
	if err != nil {
		return err
	}
	for _, pt := range spec.Tiles() {
		if sql, ok := before[pt.Tile.ID]; ok && sql == pt.Tile.Query.SQL {
			continue
		}
		if _, err := ts.run(ctx, pt.Tile, nil, 1); err != nil {
			var ae *apierr.Error
			msg := err.Error()
			if errors.As(err, &ae) {
				msg = ae.Message
			}
			return apierr.New(http.StatusBadRequest, apierr.CodePromptNotUnderstood,
				fmt.Sprintf("the refined tile %q does not run: %s", pt.Tile.Title, msg)).WithDetails(map[string]any{"suggestions": []string{}})
		}
	}
	return nil
}

// sourceOf is the generation a dashboard came from: its datasets that are still active and
// its views that still run.
func (h *Dashboards) sourceOf(ctx context.Context, d *store.Dashboard) (*generation, error) {
	var src struct {
		DatasetID  string   `json:"dataset_id"`
		DatasetIDs []string `json:"dataset_ids"`
		ViewID     string   `json:"view_id"`
		ViewIDs    []string `json:"view_ids"`
		Intent     string   `json:"intent"`
	}
	if err := json.Unmarshal(d.Source, &src); err != nil {
		return nil, err
	}
	prj, err := h.project(ctx, nil, d.ProjectID, "visualizations:create")
	if err != nil {
		return nil, err
	}
	ids, vids := src.DatasetIDs, src.ViewIDs
	if src.DatasetID != "" {
		ids = []string{src.DatasetID}
	}
	if src.ViewID != "" {
		vids = []string{src.ViewID}
	}
	all, err := store.ProjectDatasets(ctx, h.Store.DB, d.ProjectID)
	if err != nil {
		return nil, err
	}
	g := &generation{prj: prj, kind: d.SourceType, name: d.DisplayName, intent: src.Intent}
	for _, ds := range all {
		if ds.Status == "active" && slices.Contains(ids, ds.ID) {
			g.sets = append(g.sets, ds)
		}
	}
	for _, id := range vids {
		if v, err := store.ViewByID(ctx, h.Store.DB, d.ProjectID, id, false); err == nil && v.Status == "active" {
			g.views = append(g.views, v)
		} else if err != nil && !errors.Is(err, store.ErrNotFound) {
			return nil, err
		}
	}
	return g, nil
}

type recommendResponse struct{ body any }

func (r recommendResponse) VisitRecommendDashboardIntentResponse(w http.ResponseWriter) error {
	return rawJSON{http.StatusOK, r.body}.write(w)
}
func (r recommendResponse) VisitRecommendDashboardDatasetsResponse(w http.ResponseWriter) error {
	return rawJSON{http.StatusOK, r.body}.write(w)
}

func (h *Dashboards) RecommendDashboardIntent(ctx context.Context, req api.RecommendDashboardIntentRequestObject) (api.RecommendDashboardIntentResponseObject, error) {
	prj, err := h.project(ctx, nil, req.ProjectId, "visualizations:create")
	if err != nil {
		return nil, err
	}
	limit := 8
	var only []string
	if b := req.Body; b != nil {
		if b.Limit != nil {
			limit = *b.Limit
		}
		only = deref(b.DatasetIds)
	}
	all, err := store.ProjectDatasets(ctx, h.Store.DB, prj.ID)
	if err != nil {
		return nil, err
	}
	g := &generation{prj: prj, kind: "project"}
	var bad []apierr.FieldError
	for i, id := range only {
		if !slices.ContainsFunc(all, func(d store.Dataset) bool { return d.ID == id && d.Status == "active" }) {
			bad = append(bad, apierr.FieldError{Field: fmt.Sprintf("body.dataset_ids.%d", i), Code: "not_found", Message: "no active dataset " + id + " in this project"})
		}
	}
	if len(bad) > 0 {
		return nil, apierr.Validation(bad...)
	}
	for _, d := range all {
		if d.Status == "active" && (len(only) == 0 || slices.Contains(only, d.ID)) {
			g.sets = append(g.sets, d)
		}
	}
	in, err := h.input(ctx, g)
	if err != nil {
		return nil, err
	}
	ids := map[string]string{} // ref → dataset id
	for _, s := range in.Sources {
		ids[s.Ref] = s.ID
	}
	out := []map[string]any{}
	for _, s := range dashboards.Suggest(in) {
		if len(out) == limit {
			break
		}
		var dids []string
		for _, r := range s.Refs {
			if id := ids[r]; !slices.Contains(dids, id) {
				dids = append(dids, id)
			}
		}
		out = append(out, map[string]any{"intent": s.Intent, "dataset_ids": dids, "reason": s.Reason})
	}
	return recommendResponse{map[string]any{"suggestions": out}}, nil
}

func (h *Dashboards) RecommendDashboardDatasets(ctx context.Context, req api.RecommendDashboardDatasetsRequestObject) (api.RecommendDashboardDatasetsResponseObject, error) {
	prj, err := h.project(ctx, nil, req.ProjectId, "visualizations:create")
	if err != nil {
		return nil, err
	}
	limit := 12
	if req.Body.Limit != nil {
		limit = *req.Body.Limit
	}
	all, err := store.ProjectDatasets(ctx, h.Store.DB, prj.ID)
	if err != nil {
		return nil, err
	}
	score, matched, err := queries.RankDatasets(ctx, h.Store.DB, prj.ID, req.Body.Intent)
	if err != nil {
		return nil, err
	}
	type ranked struct {
		d     *store.Dataset
		score float64
	}
	var rs []ranked
	byScore := false
	for i := range all {
		if all[i].Status != "active" {
			continue
		}
		rs = append(rs, ranked{&all[i], score[all[i].ID]})
		byScore = byScore || score[all[i].ID] > 0
	}
	rows := func(d *store.Dataset) int64 { return deref(d.RowCount) }
	sort.SliceStable(rs, func(i, j int) bool {
		if rs[i].score != rs[j].score {
			return rs[i].score > rs[j].score
		}
		return rows(rs[i].d) > rows(rs[j].d)
	})
	rankedBy := "search"
	if !byScore {
		rankedBy = "row_count"
	}
	out := []map[string]any{}
	for _, r := range rs {
		if len(out) == limit {
			break
		}
		reason := fmt.Sprintf("%d records", rows(r.d))
		m := matched[r.d.ID]
		switch {
		case !byScore:
			reason = "nothing in the intent matched the project's datasets: ranked by size (" + reason + ")"
		case len(m) > 0:
			reason = "its name, description or columns match " + strings.Join(m, ", ")
		case r.score > 0:
			reason = "its values or near spellings match the intent"
		default:
			reason = "nothing in the intent matched it"
		}
		out = append(out, map[string]any{"id": r.d.ID, "name": r.d.Name, "row_count": r.d.RowCount, "score": r.score,
			"matched": append([]string{}, m...), "reason": reason})
	}
	return recommendResponse{map[string]any{"datasets": out, "ranked_by": rankedBy}}, nil
}
