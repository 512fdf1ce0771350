package handlers

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"

	"dataplatform/gen/api"
	"dataplatform/handlers/apierr"
	"dataplatform/store"
	"dataplatform/store/queries"
	"dataplatform/store/usersql"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
)

// maxSavedQueries is the saved queries a project may hold.
const maxSavedQueries = 1000

func paramErrors(prefix string, errs []queries.ParamError) error {
	fe := make([]apierr.FieldError, len(errs))
	for i, e := range errs {
		fe[i] = apierr.FieldError{Field: prefix + e.Name, Code: e.Code, Message: e.Message}
	}
	return apierr.Validation(fe...)
}

func savedOut(sq *store.SavedQuery) (api.SavedQuery, error) {
	out := api.SavedQuery{Id: sq.ID, Name: sq.Name, Description: sq.Description, Type: api.SavedQueryType(sq.Type), Query: sq.Query,
		Tags: []string(sq.Tags), Visibility: api.SavedQueryVisibility(sq.Visibility), UsageCount: sq.UsageCount, LastUsedAt: sq.LastUsedAt,
		SourceQueryId: sq.SourceQueryID, CreatedAt: sq.CreatedAt, Parameters: []api.SavedQueryParameter{}}
	if out.Tags == nil {
		out.Tags = []string{}
	}
	if sq.CreatedBy != nil && sq.CreatedByName != nil {
		out.CreatedBy = &struct {
			Id   string `json:"id"`
			Name string `json:"name"`
		}{*sq.CreatedBy, *sq.CreatedByName}
	}
	return out, json.Unmarshal([]byte(sq.Parameters), &out.Parameters)
}

func (h *Queries) SaveQuery(ctx context.Context, req api.SaveQueryRequestObject) (api.SaveQueryResponseObject, error) {
	prj, p, err := h.projectFor(ctx, req.ProjectId, "queries:execute")
	if err != nil {
		return nil, err
	}
	q, err := h.historyQuery(ctx, prj, req.QueryId)
	if err != nil {
		return nil, err
	}
	b := req.Body
	var params []queries.Param
	for _, sp := range deref(b.Parameters) {
		qp := queries.Param{Name: sp.Name, Type: string(sp.Type), Description: deref(sp.Description)}
		if sp.Default != nil {
			qp.Default = *sp.Default
		}
		params = append(params, qp)
	}
	_, used, err := usersql.BindBraces(q.Query, 1)
	if err != nil {
		return nil, QueryError(err, nil, 0, 0)
	}
	if errs := queries.Declare(params, used); len(errs) > 0 {
		return nil, paramErrors("body.parameters.", errs)
	}
	if params == nil {
		params = []queries.Param{}
	}
	pj, _ := json.Marshal(params)
	sq := &store.SavedQuery{ID: store.NewID("sq"), ProjectID: prj.ID, OrgID: prj.OrgID, SourceQueryID: &q.ID, Name: b.Name, Description: b.Description,
		Type: q.Type, Query: q.Query, Tags: pq.StringArray(deref(b.Tags)), Visibility: "project", Parameters: string(pj), CreatedBy: &p.UserID,
		CreatedAt: h.Now()}
	if sq.Tags == nil {
		sq.Tags = pq.StringArray{}
	}
	if b.Visibility != nil {
		sq.Visibility = string(*b.Visibility)
	}
	err = h.Store.Tx(ctx, func(tx *sqlx.Tx) error {
		if err := store.CreateSavedQuery(ctx, tx, sq, maxSavedQueries); err != nil {
			return err
		}
		if sq.Visibility == "private" { // its source leaves the others' history too (if it is the saver's own)
			if err := store.MakeQueryPrivate(ctx, tx, q.ID, p.UserID); err != nil {
				return err
			}
		}
		if err := h.audit(ctx, tx, prj.OrgID, "query.save", "saved_query", sq.ID, sq.Name, map[string]any{"query_id": q.ID}); err != nil {
			return err
		}
		return store.Emit(ctx, tx, "query.saved", prj.OrgID, map[string]any{"saved_query_id": sq.ID, "query_id": q.ID, "project_id": prj.ID,
			"name": sq.Name}, sq.CreatedAt)
	})
	switch {
	case errors.Is(err, store.ErrLimit):
		return nil, apierr.New(http.StatusUnprocessableEntity, apierr.CodeLimitExceeded, "a project holds at most 1000 saved queries").
			WithDetails(map[string]any{"limit": maxSavedQueries, "current": maxSavedQueries})
	case err != nil:
		return nil, conflictOn(err, "name", "a saved query of this project already has this name")
	}
	saved, err := store.SavedQueryFor(ctx, h.Store.DB, prj.ID, sq.ID, p.UserID)
	if err != nil {
		return nil, err
	}
	out, err := savedOut(saved)
	return api.SaveQuery201JSONResponse(out), err
}

func (h *Queries) ListSavedQueries(ctx context.Context, req api.ListSavedQueriesRequestObject) (api.ListSavedQueriesResponseObject, error) {
	prj, p, err := h.projectFor(ctx, req.ProjectId, "queries:read")
	if err != nil {
		return nil, err
	}
	pg, limit, offset := page(req.Params.Page, req.Params.Limit)
	sqs, total, err := store.ListSavedQueries(ctx, h.Store.DB, prj.ID, p.UserID, deref(req.Params.Tag), limit, offset)
	if err != nil {
		return nil, err
	}
	out := api.ListSavedQueries200JSONResponse{SavedQueries: []api.SavedQuery{}, Pagination: paginate(ctx, pg, limit, total)}
	for i := range sqs {
		s, err := savedOut(&sqs[i])
		if err != nil {
			return nil, err
		}
		out.SavedQueries = append(out.SavedQueries, s)
	}
	return out, nil
}

func (h *Queries) ExecuteSavedQuery(ctx context.Context, req api.ExecuteSavedQueryRequestObject) (api.ExecuteSavedQueryResponseObject, error) {
	prj, p, err := h.projectFor(ctx, req.ProjectId, "queries:execute")
	if err != nil {
		return nil, err
	}
	sq, err := store.SavedQueryFor(ctx, h.Store.DB, prj.ID, req.SavedQueryId, p.UserID)
	if errors.Is(err, store.ErrNotFound) {
		return nil, apierr.NotFound("saved_query", req.SavedQueryId)
	} else if err != nil {
		return nil, err
	}
	var params []queries.Param
	if err := json.Unmarshal([]byte(sq.Parameters), &params); err != nil {
		return nil, err
	}
	var given map[string]*any
	b := req.Body
	if b != nil && b.Parameters != nil {
		given = *b.Parameters
	}
	values, errs := queries.Values(params, given)
	if len(errs) > 0 {
		return nil, paramErrors("body.parameters.", errs)
	}
	typ := api.ExecuteQueryRequestType(sq.Type)
	run := &api.ExecuteQueryRequest{Query: sq.Query, Type: &typ, Parameters: &values}
	if b != nil && b.Options != nil {
		run.Options = &struct {
			Cache          *bool `json:"cache,omitempty"`
			Explain        *bool `json:"explain,omitempty"`
			Limit          *int  `json:"limit,omitempty"`
			TimeoutSeconds *int  `json:"timeout_seconds,omitempty"`
		}{Cache: b.Options.Cache, Limit: b.Options.Limit, TimeoutSeconds: b.Options.TimeoutSeconds}
	}
	e, err := h.run(ctx, prj, run, sq.Visibility == "private")
	if err != nil {
		return nil, err
	}
	if err := store.UseSavedQuery(context.WithoutCancel(ctx), h.Store.DB, sq.ID, h.Now()); err != nil {
		return nil, err
	}
	return executedResponse{e}, nil
}
