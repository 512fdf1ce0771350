package handlers

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strings"

	"dataplatform/gen/api"
	"dataplatform/handlers/apierr"
	"dataplatform/store"
	"dataplatform/store/queries"
	"dataplatform/store/views"
)

type planResponse struct{ body any }

func (r planResponse) VisitPlanDashboardViewsResponse(w http.ResponseWriter) error {
	return rawJSON{http.StatusOK, r.body}.write(w)
}

// planned is a proposed view.
type planned struct {
	Name        string           `json:"name"`
	Description string           `json:"description"`
	Definition  views.Definition `json:"definition"`
	Columns     []views.Column   `json:"columns"`
	DatasetIDs  []string         `json:"dataset_ids"`
	Reason      string           `json:"reason"`
	score       int
}

// PlanDashboardViews proposes a join per relationship between the project's datasets (or,
// for a pair without one, per column named after another dataset's key), each checked as
// creating the view would check it.
func (h *Dashboards) PlanDashboardViews(ctx context.Context, req api.PlanDashboardViewsRequestObject) (api.PlanDashboardViewsResponseObject, error) {
	prj, err := h.project(ctx, nil, req.ProjectId, "visualizations:create")
	if err != nil {
		return nil, err
	}
	var only []string
	var intent string
	if b := req.Body; b != nil {
		only, intent = deref(b.DatasetIds), strings.ToLower(deref(b.Intent))
	}
	all, err := store.ProjectDatasets(ctx, h.Store.DB, prj.ID)
	if err != nil {
		return nil, err
	}
	byID := map[string]*store.Dataset{}
	for i := range all {
		if all[i].Status == "active" {
			byID[all[i].ID] = &all[i]
		}
	}
	var bad []apierr.FieldError
	for i, id := range only {
		if byID[id] == nil {
			bad = append(bad, apierr.FieldError{Field: fmt.Sprintf("body.dataset_ids.%d", i), Code: "not_found", Message: "no active dataset " + id + " in this project"})
		}
	}
	if len(bad) > 0 {
		return nil, apierr.Validation(bad...)
	}
	in := func(id string) bool { return byID[id] != nil && (len(only) == 0 || slices.Contains(only, id)) }
	// The joins: the dataset relationships (inferred or declared), which every consumer follows.
	type link struct{ from, fromCol, to, toCol, why string }
	var links []link
	for id := range byID {
		if !in(id) {
			continue
		}
		rels, err := store.Relationships(ctx, h.Store.DB, id)
		if err != nil {
			return nil, err
		}
		for _, r := range rels {
			if r.FromDataset != id || !in(r.ToDataset) || r.FromDataset == r.ToDataset {
				continue
			}
			links = append(links, link{r.FromDataset, r.FromColumn, r.ToDataset, r.ToColumn, "a relationship the analysis found (" + r.Origin + ")"})
		}
	}
	out := []planned{}
	rejected := []map[string]string{}
	taken := map[string]bool{}
	sources, err := queries.ProjectSources(ctx, h.Store.DB, prj.ID)
	if err != nil {
		return nil, err
	}
	for _, s := range sources {
		taken[strings.ToLower(queries.Identifier(s.Name))] = true
	}
	sort.Slice(links, func(i, j int) bool {
		a, b := links[i], links[j]
		return byID[a.from].Name+byID[a.to].Name+a.fromCol < byID[b.from].Name+byID[b.to].Name+b.fromCol
	})
	for _, l := range links {
		from, to := byID[l.from], byID[l.to]
		fi, ti := queries.Identifier(from.Name), queries.Identifier(to.Name)
		name := fi + "_with_" + ti
		for n := 2; taken[name]; n++ {
			name = fmt.Sprintf("%s_with_%s_%d", fi, ti, n)
		}
		def := views.Definition{Join: &views.Join{Base: fi, Joins: []views.JoinStep{{Dataset: ti, Type: "left",
			On: []views.JoinOn{{Left: fi + "." + l.fromCol, Right: ti + "." + l.toCol}}}}}}
		_, cols, err := views.Check(ctx, h.Store.DB, prj.OrgID, prj.ID, def)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			rejected = append(rejected, map[string]string{"name": name, "error": viewError(err).Error()})
			continue
		}
		taken[name] = true
		p := planned{Name: name, Definition: def, Columns: cols, DatasetIDs: []string{from.ID, to.ID},
			Description: fmt.Sprintf("%s with their %s (%s.%s refers to %s.%s)", from.Name, strings.ToLower(to.Name), fi, l.fromCol, ti, l.toCol),
			Reason:      l.why}
		for _, w := range strings.Fields(intent) {
			if len(w) > 2 && (strings.Contains(strings.ToLower(from.Name), w) || strings.Contains(strings.ToLower(to.Name), w)) {
				p.score++
			}
		}
		out = append(out, p)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].score > out[j].score })
	return planResponse{map[string]any{"views": out, "rejected": rejected}}, nil
}
