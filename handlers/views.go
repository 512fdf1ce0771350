package handlers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"dataplatform/gen/api"
	"dataplatform/handlers/apierr"
	"dataplatform/handlers/auth"
	"dataplatform/store"
	"dataplatform/store/datasets"
	"dataplatform/store/queries"
	"dataplatform/store/usersql"
	"dataplatform/store/views"

	"github.com/jmoiron/sqlx"
)

// Views implements the saved view endpoints. Reading a view's definition is reading the
// project's datasets' metadata (datasets:list), its rows reading their rows (datasets:read);
// making, changing and deleting views is building on the data (visualizations:create).
type Views struct{ *Handlers }

const (
	viewRead   = "datasets:list"
	viewRows   = "datasets:read"
	viewManage = "visualizations:create"
)

func viewOut(v *store.View) (api.View, error) {
	out := api.View{Id: v.ID, ProjectId: v.ProjectID, Name: v.Name, Description: v.Description, Sql: v.SQL, Datasets: []string(v.DatasetIDs),
		Status: api.ViewStatus(v.Status), Error: v.Error, CreatedAt: v.CreatedAt, UpdatedAt: v.UpdatedAt}
	if out.Datasets == nil {
		out.Datasets = []string{}
	}
	if v.CreatedBy != nil && v.CreatedByName != nil {
		out.CreatedBy = &struct {
			Id   string `json:"id"`
			Name string `json:"name"`
		}{*v.CreatedBy, *v.CreatedByName}
	}
	if err := json.Unmarshal([]byte(v.Definition), &out.Definition); err != nil {
		return out, err
	}
	return out, json.Unmarshal([]byte(v.Columns), &out.Columns)
}

// definitionOf is a request's definition in the store's terms (the same JSON).
func definitionOf(d api.ViewDefinition) (views.Definition, error) {
	var out views.Definition
	b, err := json.Marshal(d)
	if err == nil {
		err = json.Unmarshal(b, &out)
	}
	return out, err
}

// viewError maps what views.Create refuses to the errors project queries answer with.
func viewError(err error) error {
	var de *views.DefinitionError
	var ue *queries.UnknownError
	var be *queries.BrokenError
	var se *views.SQLError
	switch {
	case errors.As(err, &de) && de.Code == "unknown_dataset":
		return apierr.New(http.StatusBadRequest, apierr.CodeInvalidQuery, de.Message).WithDetails(map[string]any{"field": "body.definition." + de.Field,
			"message": de.Message, "available_datasets": de.Available})
	case errors.As(err, &de):
		field := "body.definition"
		if de.Field != "" {
			field += "." + de.Field
		}
		return apierr.Field(field, de.Code, de.Message)
	case errors.As(err, &ue):
		return apierr.New(http.StatusBadRequest, apierr.CodeInvalidQuery, ue.Error()).WithDetails(map[string]any{"line": ue.Line, "column": ue.Column,
			"message": ue.Error(), "available_datasets": ue.Available})
	case errors.As(err, &be):
		return viewBroken(be.ID, be.Reason, be.Error())
	case errors.As(err, &se):
		return QueryError(se.Err, &se.SQL, 0, 0)
	}
	return QueryError(err, nil, 0, 0)
}

// proposalHolds checks the columns and datasets a plan-views proposal sent as it is expects
// against what its definition produces now: the data may have changed since it was proposed.
func proposalHolds(b *api.CreateViewJSONRequestBody, v *store.View) error {
	if b.Columns != nil {
		var got []store.ViewColumn
		if err := json.Unmarshal([]byte(v.Columns), &got); err != nil {
			return err
		}
		want := *b.Columns
		for i := range max(len(want), len(got)) {
			switch {
			case i >= len(got):
				return apierr.Field("body.columns", "columns_changed", fmt.Sprintf("the definition produces no column %q now (%d columns)", want[i].Name, len(got)))
			case i >= len(want):
				return apierr.Field("body.columns", "columns_changed", fmt.Sprintf("the definition produces column %q too (%d columns, %d expected)", got[i].Name, len(got), len(want)))
			case want[i].Name != got[i].Name || want[i].Type != got[i].Type:
				return apierr.Field(fmt.Sprintf("body.columns[%d]", i), "columns_changed",
					fmt.Sprintf("the definition produces %s %s here now, not %s %s", got[i].Name, got[i].Type, want[i].Name, want[i].Type))
			}
		}
	}
	if b.DatasetIds != nil {
		want, got := slices.Sorted(slices.Values(*b.DatasetIds)), slices.Sorted(slices.Values([]string(v.DatasetIDs)))
		if !slices.Equal(slices.Compact(want), got) {
			return apierr.Field("body.dataset_ids", "datasets_changed", fmt.Sprintf("the definition reads %s, not %s", strings.Join(got, ", "), strings.Join(want, ", ")))
		}
	}
	return nil
}

// viewBroken is 409 VIEW_BROKEN for a view a change to what it reads broke.
func viewBroken(id, reason, message string) error {
	return apierr.New(http.StatusConflict, apierr.CodeViewBroken, message).WithDetails(map[string]any{"view_id": id, "error": reason})
}

// view is a view of the project, or 404; lock takes a row lock.
func (h *Views) view(ctx context.Context, q sqlx.QueryerContext, projectID, id string, lock bool) (*store.View, error) {
	v, err := store.ViewByID(ctx, q, projectID, id, lock)
	if errors.Is(err, store.ErrNotFound) {
		return nil, apierr.NotFound("view", id)
	}
	return v, err
}

// nameFree refuses (409) a name for a dataset or a view (view) that a view of the project
// other than exceptID, or for a view a dataset, answers to in SQL: its name, or its name as
// an identifier, in any case (datasets_project_name_key keeps datasets' names apart). It
// holds the project's naming lock until tx ends.
func (h *Handlers) nameFree(ctx context.Context, tx *sqlx.Tx, projectID, exceptID, name string, view bool) error {
	if err := store.LockNames(ctx, tx, projectID); err != nil {
		return err
	}
	forms := []string{strings.ToLower(name), queries.Identifier(name)}
	taken, err := store.ViewNamed(ctx, tx, projectID, exceptID, forms)
	if err != nil {
		return err
	}
	if taken {
		return apierr.Conflict("name", "a view of this project is named "+name+" in SQL already")
	}
	if !view {
		return nil
	}
	names, err := store.DatasetNames(ctx, tx, projectID)
	if err != nil {
		return err
	}
	for _, n := range names {
		if strings.EqualFold(n, name) || queries.Identifier(n) == forms[0] || queries.Identifier(n) == forms[1] {
			return apierr.Conflict("name", "the dataset "+n+" of this project is named "+name+" in SQL already")
		}
	}
	return nil
}

// queryRole makes the project's organization's query role before a transaction that changes
// views begins: making it grants on every table of the schema, which would wait for that
// transaction's dropped and created views.
func (h *Views) queryRole(ctx context.Context, projectID string) error {
	prj, err := h.project(ctx, nil, projectID, viewManage)
	if err != nil {
		return err
	}
	return datasets.EnsureQueryRole(ctx, h.Store.DB, prj.OrgID)
}

func (h *Views) ListViews(ctx context.Context, req api.ListViewsRequestObject) (api.ListViewsResponseObject, error) {
	prj, err := h.project(ctx, nil, req.ProjectId, viewRead)
	if err != nil {
		return nil, err
	}
	pg, limit, offset := page(req.Params.Page, req.Params.Limit)
	vs, total, err := store.ListViews(ctx, h.Store.DB, prj.ID, deref(req.Params.Query), limit, offset)
	if err != nil {
		return nil, err
	}
	out := api.ListViews200JSONResponse{Views: []api.View{}, Pagination: paginate(ctx, pg, limit, total)}
	for i := range vs {
		v, err := viewOut(&vs[i])
		if err != nil {
			return nil, err
		}
		out.Views = append(out.Views, v)
	}
	return out, nil
}

func (h *Views) GetView(ctx context.Context, req api.GetViewRequestObject) (api.GetViewResponseObject, error) {
	prj, err := h.project(ctx, nil, req.ProjectId, viewRead)
	if err != nil {
		return nil, err
	}
	v, err := h.view(ctx, h.Store.DB, prj.ID, req.ViewId, false)
	if err != nil {
		return nil, err
	}
	out, err := viewOut(v)
	return api.GetView200JSONResponse(out), err
}

func (h *Views) CreateView(ctx context.Context, req api.CreateViewRequestObject) (api.CreateViewResponseObject, error) {
	p, err := auth.Caller(ctx)
	if err != nil {
		return nil, err
	}
	b := req.Body
	def, err := definitionOf(b.Definition)
	if err != nil {
		return nil, err
	}
	if err := h.queryRole(ctx, req.ProjectId); err != nil {
		return nil, err
	}
	var v *store.View
	err = h.Store.Tx(ctx, func(tx *sqlx.Tx) error {
		prj, err := h.project(ctx, tx, req.ProjectId, viewManage)
		if err != nil {
			return err
		}
		if err := h.nameFree(ctx, tx, prj.ID, "", b.Name, true); err != nil {
			return err
		}
		now := h.Now()
		v = &store.View{ID: store.NewID("vw"), ProjectID: prj.ID, OrgID: prj.OrgID, Name: b.Name, Description: b.Description, CreatedBy: &p.UserID,
			CreatedAt: now, UpdatedAt: now}
		if err := views.Create(ctx, h.Store.DB, tx, v, def); err != nil {
			return viewError(err)
		}
		if err := proposalHolds(b, v); err != nil {
			return err
		}
		if err := store.InsertView(ctx, tx, v); err != nil {
			return conflictOn(err, "name", "a view of this project is named "+v.Name+" already")
		}
		return h.audit(ctx, tx, prj.OrgID, "view.create", "view", v.ID, v.Name, map[string]any{"project_id": prj.ID, "datasets": []string(v.DatasetIDs)})
	})
	if err != nil {
		return nil, err
	}
	if v, err = h.view(ctx, h.Store.DB, v.ProjectID, v.ID, false); err != nil {
		return nil, err
	}
	out, err := viewOut(v)
	return api.CreateView201JSONResponse{Body: out, Headers: api.CreateView201ResponseHeaders{Location: "/api/v1/projects/" + v.ProjectID + "/views/" + v.ID}}, err
}

func (h *Views) UpdateView(ctx context.Context, req api.UpdateViewRequestObject) (api.UpdateViewResponseObject, error) {
	b := req.Body
	if err := h.queryRole(ctx, req.ProjectId); err != nil {
		return nil, err
	}
	var v *store.View
	err := h.Store.Tx(ctx, func(tx *sqlx.Tx) error {
		prj, err := h.project(ctx, tx, req.ProjectId, viewManage)
		if err != nil {
			return err
		}
		if v, err = h.view(ctx, tx, prj.ID, req.ViewId, true); err != nil {
			return err
		}
		changes := map[string]any{}
		if b.Name != nil && *b.Name != v.Name {
			if err := h.nameFree(ctx, tx, prj.ID, v.ID, *b.Name, true); err != nil {
				return err
			}
			changes["name"], v.Name = *b.Name, *b.Name
		}
		patchText(changes, "description", b.Description, &v.Description)
		now := h.Now()
		if b.Definition != nil {
			def, err := definitionOf(*b.Definition)
			if err != nil {
				return err
			}
			// The views reading this one are recreated over its new definition.
			err = views.Around(ctx, tx, now, []views.Subject{views.ViewSubject(v)}, func() error {
				if err := views.Drop(ctx, tx, v); err != nil {
					return err
				}
				return views.Create(ctx, h.Store.DB, tx, v, def)
			})
			if err != nil {
				return viewError(err)
			}
			changes["definition"] = json.RawMessage(v.Definition)
		}
		v.UpdatedAt = now
		if err := store.UpdateView(ctx, tx, v); err != nil {
			return conflictOn(err, "name", "a view of this project is named "+v.Name+" already")
		}
		return h.audit(ctx, tx, prj.OrgID, "view.update", "view", v.ID, v.Name, map[string]any{"project_id": prj.ID, "changes": changes})
	})
	if err != nil {
		return nil, err
	}
	if v, err = h.view(ctx, h.Store.DB, v.ProjectID, v.ID, false); err != nil {
		return nil, err
	}
	out, err := viewOut(v)
	return api.UpdateView200JSONResponse(out), err
}

func (h *Views) DeleteView(ctx context.Context, req api.DeleteViewRequestObject) (api.DeleteViewResponseObject, error) {
	err := h.Store.Tx(ctx, func(tx *sqlx.Tx) error {
		prj, err := h.project(ctx, tx, req.ProjectId, viewManage)
		if err != nil {
			return err
		}
		v, err := h.view(ctx, tx, prj.ID, req.ViewId, true)
		if err != nil {
			return err
		}
		// The views reading this one become broken ("view ... was deleted").
		err = views.Around(ctx, tx, h.Now(), []views.Subject{views.ViewSubject(v)}, func() error {
			if err := views.Drop(ctx, tx, v); err != nil {
				return err
			}
			return store.DeleteView(ctx, tx, v.ID)
		})
		if err != nil {
			return err
		}
		return h.audit(ctx, tx, prj.OrgID, "view.delete", "view", v.ID, v.Name, map[string]any{"project_id": prj.ID})
	})
	if err != nil {
		return nil, err
	}
	return api.DeleteView204Response{}, nil
}

// defaultViewPreview is a preview's rows when the request does not say (at most 1000).
const defaultViewPreview = 20

func (h *Views) PreviewView(ctx context.Context, req api.PreviewViewRequestObject) (api.PreviewViewResponseObject, error) {
	prj, p, err := (&Queries{h.Handlers}).projectFor(ctx, req.ProjectId, viewRows)
	if err != nil {
		return nil, err
	}
	v, err := h.view(ctx, h.Store.DB, prj.ID, req.ViewId, false)
	if err != nil {
		return nil, err
	}
	if v.Status == "broken" {
		return nil, viewBroken(v.ID, deref(v.Error), "the view "+v.Name+" is broken: "+deref(v.Error)+"; fix its definition (PATCH .../views/"+v.ID+")")
	}
	limit := defaultViewPreview
	if req.Params.Limit != nil {
		limit = *req.Params.Limit
	}
	if err := datasets.EnsureQueryRole(ctx, h.Store.DB, prj.OrgID); err != nil {
		return nil, err
	}
	sql := `SELECT * FROM ` + views.Relation(v.OrgID, v.ID)
	res, err := usersql.RunQuery(ctx, h.Store.DB, prj.OrgID, sql, nil, usersql.QueryOptions{Timeout: projectQueryTimeout, MaxRows: limit,
		MaxBytes: h.Config.QueryResultBytes, MaxRowBytes: h.Config.QueryResultBytes, Slot: h.UserSlot(p.UserID)})
	if err != nil {
		return nil, QueryError(err, nil, projectQueryTimeout, 0)
	}
	out := api.PreviewView200JSONResponse{ViewId: v.ID, Rows: res.Rows, RowCount: len(res.Rows), Truncated: res.Truncated}
	if err := json.Unmarshal([]byte(v.Columns), &out.Columns); err != nil {
		return nil, err
	}
	return out, nil
}
