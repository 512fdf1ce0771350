package handlers

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"dataplatform/gen/api"
	"dataplatform/handlers/apierr"
	"dataplatform/handlers/auth"
	"dataplatform/store"
	"dataplatform/store/datasets"
	"dataplatform/store/nlsql"
	"dataplatform/store/queries"
	"dataplatform/store/usersql"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
)

// Project query limits.
const (
	defaultQueryLimit   = 1000
	maxConcurrentQuery  = 5 // running queries per user, across replicas
	projectQueryTimeout = 30 * time.Second
	projectCacheTTL     = 60 * time.Second
)

// Queries implements the project query endpoints.
type Queries struct{ *Handlers }

// executedResponse answers with a queries.Executed (the generated type is the same shape).
type executedResponse struct{ e *queries.Executed }

func (r executedResponse) write(w http.ResponseWriter) error {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	return json.NewEncoder(w).Encode(r.e)
}

func (r executedResponse) VisitExecuteQueryResponse(w http.ResponseWriter) error { return r.write(w) }
func (r executedResponse) VisitGetQueryResponse(w http.ResponseWriter) error     { return r.write(w) }
func (r executedResponse) VisitExecuteSavedQueryResponse(w http.ResponseWriter) error {
	return r.write(w)
}

// projectQueryCache keeps executed queries (options.cache) for projectCacheTTL: only small
// answers (MaxCachedBytes).
var projectQueryCache = NewTTLCache[queries.Executed](MaxCached)

func (h *Queries) ExecuteQuery(ctx context.Context, req api.ExecuteQueryRequestObject) (api.ExecuteQueryResponseObject, error) {
	prj, err := h.project(ctx, nil, req.ProjectId, "queries:execute")
	if err != nil {
		return nil, err
	}
	e, err := h.run(ctx, prj, req.Body, false)
	if err != nil {
		return nil, err
	}
	return executedResponse{e}, nil
}

// run executes a query and enters it in the history.
// run executes a query and writes it to the history; a private one (a run of a private saved
// query) is seen there by its author only.
func (h *Queries) run(ctx context.Context, prj *store.Project, b *api.ExecuteQueryRequest, private bool) (*queries.Executed, error) {
	start := time.Now()
	qr, e, err := h.newQuery(ctx, prj, typeOf((*string)(b.Type)), b.Query)
	if err != nil {
		return nil, err
	}
	qr.Private = private
	runErr := h.execute(ctx, prj, b, e, qr, start)
	if usersql.NotRun(runErr) {
		return nil, QueryError(runErr, nil, 0, 0) // refused, not run: not history
	}
	// The outcome is written even when the client went away.
	if err := h.recordQuery(context.WithoutCancel(ctx), qr, e, runErr, start, false); err != nil {
		return nil, err
	}
	return e, runErr
}

// argsJSON keeps the values bound to a query's SQL, so that an export can run it again.
func argsJSON(args []any) string {
	b, err := json.Marshal(args)
	if err != nil {
		return "[]"
	}
	return string(b)
}

// newQuery is a query of the caller's about to run: its history row and its answer.
func (h *Queries) newQuery(ctx context.Context, prj *store.Project, typ, text string) (*store.Query, *queries.Executed, error) {
	p, err := auth.Caller(ctx)
	if err != nil {
		return nil, nil, err
	}
	now := h.Now()
	if err := h.queryAllowance(ctx, prj.OrgID, now); err != nil {
		return nil, nil, err
	}
	qr := &store.Query{ID: store.NewID("q"), ProjectID: prj.ID, OrgID: prj.OrgID, UserID: &p.UserID, Type: typ, Query: text,
		DatasetIDs: pq.StringArray{}, CreatedAt: now}
	return qr, &queries.Executed{QueryID: qr.ID, Type: typ, OriginalQuery: text, CreatedAt: now}, nil
}

// projectFor is the project (the caller needing perm in it) and the caller.
func (h *Queries) projectFor(ctx context.Context, projectID, perm string) (*store.Project, *auth.Principal, error) {
	prj, err := h.project(ctx, nil, projectID, perm)
	if err != nil {
		return nil, nil, err
	}
	p, err := auth.Caller(ctx)
	return prj, p, err
}

// historyQuery is a query of the project's history the caller may see, or 404.
func (h *Queries) historyQuery(ctx context.Context, prj *store.Project, id string) (*store.Query, error) {
	p, err := auth.Caller(ctx)
	if err != nil {
		return nil, err
	}
	q, err := store.QueryByID(ctx, h.Store.DB, prj.ID, id, p.UserID)
	if errors.Is(err, store.ErrNotFound) {
		return nil, apierr.NotFound("query", id)
	}
	return q, err
}

// UserSlot is a user's share of running queries (across replicas): project queries, their
// streams, the record API's SQL, dashboard tiles and views draw on the same slots, on their
// organization's share of user SQL (DP_QUERY_CONCURRENCY_PER_ORG) and on the database's
// (DP_QUERY_CONCURRENCY).
func (h *Handlers) UserSlot(userID string) *usersql.Slot {
	return &usersql.Slot{Key: "queries." + userID, Max: maxConcurrentQuery,
		Shared: &usersql.SharedSlot{Max: h.Config.QueryConcurrency, PerOrg: h.Config.OrgQueryShare(), Wait: h.Config.QueryQueueWait}}
}

// planFacts keeps what the planner said of a query's SQL for a minute, so that repeating a
// query does not pay for its EXPLAIN each time.
var planFacts = NewTTLCache[cachedPlan](MaxCached)

type cachedPlan struct {
	rows, bytes int64
	hash        string
}

// prepared is a project query mapped onto its datasets, with its bound values.
type prepared struct {
	*queries.Prepared
	summary  string   // what a question was read as
	warnings []string // what went wrong on the way (the model's SQL refused, say)
	args     []any
	missing  []string // placeholders without a value (bound as NULL when allowed)
	sources  []queries.Source
}

// prepare maps query onto the project's datasets (or those of only) and binds its
// placeholders from params; a placeholder without a value is an error unless allowMissing.
func (h *Queries) prepare(ctx context.Context, prj *store.Project, typ, query string, only *[]string, params *map[string]*any, allowMissing bool) (*prepared, error) {
	sources, err := queries.ProjectSources(ctx, h.Store.DB, prj.ID)
	if err != nil {
		return nil, err
	}
	return h.prepareOver(ctx, prj, sources, typ, query, only, params, allowMissing)
}

// prepareOver is prepare over sources read already (a dashboard's tiles share one reading).
func (h *Queries) prepareOver(ctx context.Context, prj *store.Project, sources []queries.Source, typ, query string, only *[]string,
	params *map[string]*any, allowMissing bool) (*prepared, error) {
	byID := map[string]int{}
	for i, s := range sources {
		byID[s.ID] = i
	}
	if only != nil && len(*only) > 0 {
		var picked []queries.Source
		var bad []apierr.FieldError
		for i, id := range *only {
			if j, ok := byID[id]; ok {
				picked = append(picked, sources[j])
			} else {
				bad = append(bad, apierr.FieldError{Field: "body.datasets." + strconv.Itoa(i), Code: "not_found",
					Message: "no active dataset or view " + id + " in this project"})
			}
		}
		if len(bad) > 0 {
			return nil, apierr.Validation(bad...)
		}
		sources = picked
	}
	var nl *nlsql.Answer
	var warnings []string
	if typ == "natural_language" {
		schema, err := queries.NLSchema(ctx, h.Store.DB, prj.ID, query, sources)
		if err != nil {
			return nil, err
		}
		if m := h.model(); m != nil {
			out, err := h.askModel(ctx, m, prj, query, schema, sources)
			if err == nil {
				return out, nil
			}
			warnings = append(warnings, err.Error()+"; the built-in engine answered instead")
		}
		nl, err = nlsql.Translate(query, schema, h.Now())
		var nu *nlsql.NotUnderstood
		if errors.As(err, &nu) {
			return nil, apierr.New(http.StatusBadRequest, apierr.CodeInvalidQuery, nu.Error()).WithDetails(map[string]any{"reason": nu.Reason,
				"suggestions": nu.Suggestions})
		} else if err != nil {
			return nil, err
		}
		query = nl.SQL
		given := map[string]*any{}
		for k, v := range nl.Params {
			given[k] = &v
		}
		params = &given
	}
	prep, err := queries.Prepare(query, sources)
	var ue *queries.UnknownError
	var be *queries.BrokenError
	if errors.As(err, &be) {
		return nil, viewBroken(be.ID, be.Reason, be.Error())
	} else if err != nil && nl != nil {
		return nil, engineFailure("the engine's SQL failed the parser check")
	} else if errors.As(err, &ue) {
		return nil, apierr.New(http.StatusBadRequest, apierr.CodeInvalidQuery, ue.Error()).WithDetails(map[string]any{"line": ue.Line, "column": ue.Column,
			"message": ue.Error(), "available_datasets": ue.Available})
	} else if err != nil {
		return nil, QueryError(err, nil, 0, 0)
	}
	out := &prepared{Prepared: prep, args: make([]any, len(prep.Params)), sources: sources}
	if nl != nil {
		out.summary = nl.Summary
		out.Steps = append(append(nl.Steps, "Wrote SQL: "+nl.SQL), prep.Steps...)
		out.warnings = append(warnings, nl.Warnings...)
	}
	var values map[string]*any
	if params != nil {
		values = *params
	}
	for i, n := range prep.Params {
		v, ok := values[n]
		if !ok {
			if allowMissing {
				out.missing = append(out.missing, n)
				continue
			}
			return nil, apierr.Field("body.parameters."+n, "required", "the query uses {{"+n+"}} but parameters has no "+n)
		}
		if v != nil {
			switch x := (*v).(type) {
			case float64:
				out.args[i] = strconv.FormatFloat(x, 'f', -1, 64)
			default:
				out.args[i] = x
			}
		}
	}
	if nl != nil {
		if err := h.dryRunNL(ctx, prj, out); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// dryRunNL holds the SQL the built-in engine wrote to what user SQL must pass before it is
// answered: the parser check (in queries.Prepare) and a planner dry run. SQL of the engine's
// that PostgreSQL rejects is the engine's failure, said so: the user did not write it, and
// PostgreSQL's message about it would mislead.
func (h *Queries) dryRunNL(ctx context.Context, prj *store.Project, pp *prepared) error {
	_, err := h.plan(ctx, prj, pp)
	var ae *apierr.Error
	if err == nil || !errors.As(err, &ae) || ae.Status != http.StatusBadRequest {
		return err
	}
	return engineFailure("the engine's SQL failed the planner's dry run")
}

// engineFailure refuses a question whose SQL, written by the built-in engine, did not pass a
// check: the engine's failure, not the question's.
func engineFailure(reason string) error {
	return apierr.New(http.StatusBadRequest, apierr.CodeInvalidQuery, "the question could not be answered: the built-in engine wrote SQL that did not pass "+
		"the checks, which is the engine's failure, not the question's").WithDetails(map[string]any{"reason": reason,
		"suggestions": []string{"ask it more simply, one measure and one grouping at a time", "or write the query as SQL (type: sql)"}})
}

// model is the configured language model, or nil.
func (h *Handlers) model() *nlsql.Model {
	if h.Config.LLMBaseURL == "" {
		return nil
	}
	return &nlsql.Model{BaseURL: h.Config.LLMBaseURL, APIKey: h.Config.LLMAPIKey, Name: h.Config.LLMModel}
}

// askModel has the model write a question's SQL, then holds it to what user SQL must pass:
// the names mapped, one SELECT by the parser, and a planner dry run under the organization's
// role. Any failure is an error, so that the built-in engine answers instead.
func (h *Queries) askModel(ctx context.Context, m *nlsql.Model, prj *store.Project, question string, schema nlsql.Schema, sources []queries.Source) (*prepared, error) {
	sql, err := m.SQL(ctx, question, schema)
	if err != nil {
		return nil, fmt.Errorf("the model %s did not answer (%v)", m.Name, err)
	}
	prep, err := queries.Prepare(sql, sources)
	if err == nil && len(prep.Params) > 0 {
		err = fmt.Errorf("it has placeholders")
	}
	if err != nil {
		return nil, fmt.Errorf("the model's SQL was refused (%v)", err)
	}
	out := &prepared{Prepared: prep, args: []any{}, sources: sources, summary: "the model " + m.Name + "'s SQL over " + usedNames(prep.Used)}
	if _, err := h.plan(ctx, prj, out); err != nil {
		return nil, fmt.Errorf("the model's SQL failed the planner's dry run (%v)", err)
	}
	out.Steps = append([]string{"Asked the model " + m.Name + " with the schema, known values and relationships", "It wrote: " + sql,
		"Dry run: PostgreSQL planned it"}, prep.Steps...)
	return out, nil
}

// describe is the explanation's summary: what a question was read as, or the datasets SQL reads.
func (pp *prepared) describe() string {
	if pp.summary != "" {
		return pp.summary
	}
	return "SQL over " + usedNames(pp.Used)
}

// typeOf is a request's query type: natural_language unless it says sql.
func typeOf(t *string) string {
	if t != nil && *t == "sql" {
		return "sql"
	}
	return "natural_language"
}

// execute prepares and runs a SQL query into e.
func (h *Queries) execute(ctx context.Context, prj *store.Project, b *api.ExecuteQueryRequest, e *queries.Executed, qr *store.Query, start time.Time) error {
	pp, err := h.prepare(ctx, prj, e.Type, b.Query, b.Datasets, b.Parameters, false)
	if err != nil {
		return err
	}
	prep, args := pp.Prepared, pp.args
	qr.Args = argsJSON(args)
	e.GeneratedSQL = prep.SQL
	limit, timeout, explain, cache := defaultQueryLimit, projectQueryTimeout, false, false
	if o := b.Options; o != nil {
		if o.Limit != nil {
			limit = *o.Limit
		}
		if o.TimeoutSeconds != nil {
			timeout = time.Duration(*o.TimeoutSeconds) * time.Second
		}
		explain, cache = deref(o.Explain), deref(o.Cache)
	}
	e.Explanation = &queries.Explanation{Summary: pp.describe(), Steps: prep.Steps, DatasetsUsed: prep.Used}
	e.Warnings = pp.warnings
	key := ""
	if cache {
		aj, _ := json.Marshal(args)
		sum := sha256.Sum256([]byte(prj.OrgID + "\x00" + prep.SQL + "\x00" + string(aj) + "\x00" + strconv.Itoa(limit) + "\x00" + strconv.FormatBool(explain)))
		key = hex.EncodeToString(sum[:])
		if hit, ok := projectQueryCache.Get(key); ok {
			e.Results, e.Metadata = hit.Results, ptr(*hit.Metadata)
			e.Explanation.QueryPlan = hit.Explanation.QueryPlan
			e.Metadata.CacheHit, e.Metadata.ExecutionTimeMS = true, time.Since(start).Milliseconds()
			e.Explanation.Steps = append(e.Explanation.Steps, "Answered from the cache: the same query ran less than a minute ago")
			return nil
		}
	}
	if err := datasets.EnsureQueryRole(ctx, h.Store.DB, prj.OrgID); err != nil {
		return err
	}
	planKey := prj.OrgID + "\x00" + prep.SQL
	known, fresh := planFacts.Get(planKey)
	maxBytes := h.Config.QueryResultBytes
	var res *usersql.QueryResult
	err = h.Store.OnReader(ctx, func(db *sqlx.DB) (err error) {
		res, err = usersql.RunQuery(ctx, db, prj.OrgID, prep.SQL, args, usersql.QueryOptions{Timeout: timeout, MaxRows: limit,
			MaxBytes: maxBytes, MaxRowBytes: maxBytes, Plan: explain || !fresh, Slot: h.UserSlot(*qr.UserID)})
		return err
	})
	if usersql.NotRun(err) {
		return err
	} else if err != nil {
		return QueryError(err, &prep.SQL, timeout, time.Since(start))
	}
	if res.Plan != nil {
		var plan json.RawMessage
		plan, known.rows, known.bytes, known.hash = queries.PlanFacts(res.Plan)
		if explain {
			e.Explanation.QueryPlan = plan
		}
		planFacts.Put(planKey, known, time.Minute)
	}
	e.Results = &queries.Results{Columns: res.Columns, Rows: res.Rows, RowCount: len(res.Rows), Truncated: res.Truncated}
	if e.Results.Columns == nil {
		e.Results.Columns = []usersql.QueryColumn{}
	}
	e.Metadata = &queries.Metadata{ExecutionTimeMS: time.Since(start).Milliseconds(), RowsScanned: known.rows, BytesScanned: known.bytes,
		QueryPlanHash: known.hash}
	step := fmt.Sprintf("Ran read-only with a %s timeout: %d row(s)", timeout, len(res.Rows))
	switch {
	case res.TooLarge:
		step += fmt.Sprintf(" (more were cut at the limit of %s)", ByteSize(maxBytes))
		e.Warnings = append(e.Warnings, CutWarning(len(res.Rows), maxBytes, "POST /api/v1/projects/"+prj.ID+
			"/queries/stream streams every row, POST /api/v1/projects/"+prj.ID+"/queries/"+e.QueryID+"/export writes them to a file"))
	case res.Truncated:
		step += fmt.Sprintf(" (more were cut at the limit of %d)", limit)
	}
	e.Explanation.Steps = append(e.Explanation.Steps, step)
	if key != "" && !res.TooLarge && res.Bytes <= MaxCachedBytes {
		projectQueryCache.Put(key, *e, projectCacheTTL)
	}
	return nil
}

// recordQuery writes the outcome of a query to the history with its events: a new entry
// (with query.started), or the running entry of a stream (inserted).
func (h *Queries) recordQuery(ctx context.Context, qr *store.Query, e *queries.Executed, runErr error, start time.Time, inserted bool) error {
	took := time.Since(start).Milliseconds()
	qr.ExecutionTimeMS, qr.FinishedAt = &took, ptr(h.Now())
	event := "query.completed"
	e.Status = "completed"
	if runErr != nil {
		event, e.Status = "query.failed", "failed"
		f := &queries.Failure{Code: string(apierr.CodeInternalError), Message: "the query failed"}
		var ae *apierr.Error
		if errors.As(runErr, &ae) {
			f.Code, f.Message = string(ae.Code), ae.Message
			if d, ok := ae.Details.(map[string]any); ok {
				f.Details = d
			} else if ae.Details != nil {
				f.Details = map[string]any{"errors": ae.Details}
			}
		}
		e.Error, qr.ErrorCode = f, &f.Code
	} else {
		qr.RowCount = &e.Results.RowCount
	}
	qr.Status = e.Status
	if e.Explanation != nil {
		for _, u := range e.Explanation.DatasetsUsed {
			qr.DatasetIDs = append(qr.DatasetIDs, u.ID)
		}
	}
	body, err := json.Marshal(e.ForHistory())
	if err != nil {
		return err
	}
	qr.Body = ptr(string(body))
	return h.Store.Tx(ctx, func(tx *sqlx.Tx) error {
		// History is not worth a disk flush per query.
		if err := store.NoFlushOnCommit(ctx, tx); err != nil {
			return err
		}
		if inserted {
			if err := store.FinishQuery(ctx, tx, qr); err != nil {
				return err
			}
		} else {
			if err := store.InsertQuery(ctx, tx, qr); err != nil {
				return err
			}
			if err := emitStarted(ctx, tx, qr); err != nil {
				return err
			}
		}
		return store.Emit(ctx, tx, event, qr.OrgID, map[string]any{"query_id": qr.ID, "project_id": qr.ProjectID, "type": qr.Type,
			"status": qr.Status, "row_count": qr.RowCount, "execution_time_ms": took, "error_code": qr.ErrorCode, "dataset_ids": qr.DatasetIDs}, *qr.FinishedAt)
	})
}

func emitStarted(ctx context.Context, tx *sqlx.Tx, qr *store.Query) error {
	return store.Emit(ctx, tx, "query.started", qr.OrgID, map[string]any{"query_id": qr.ID, "project_id": qr.ProjectID, "type": qr.Type,
		"user_id": qr.UserID}, qr.CreatedAt)
}

func (h *Queries) ListQueries(ctx context.Context, req api.ListQueriesRequestObject) (api.ListQueriesResponseObject, error) {
	prj, p, err := h.projectFor(ctx, req.ProjectId, "queries:read")
	if err != nil {
		return nil, err
	}
	pr := req.Params
	pg, limit, offset := page(pr.Page, pr.Limit)
	f := store.QueryFilter{ProjectID: prj.ID, Viewer: p.UserID, Type: string(deref(pr.Type)), Status: string(deref(pr.Status)), DatasetID: deref(pr.DatasetId),
		Limit: limit, Offset: offset}
	if f.From, err = dateBound("start_date", pr.StartDate, false); err != nil {
		return nil, err
	}
	if f.To, err = dateBound("end_date", pr.EndDate, true); err != nil {
		return nil, err
	}
	qs, total, err := store.ListQueries(ctx, h.Store.DB, f)
	if err != nil {
		return nil, err
	}
	out := api.ListQueries200JSONResponse{Queries: []api.QueryHistoryItem{}, Pagination: paginate(ctx, pg, limit, total)}
	for _, q := range qs {
		it := api.QueryHistoryItem{Id: q.ID, Type: api.QueryHistoryItemType(q.Type), Query: q.Query, Status: api.QueryHistoryItemStatus(q.Status),
			RowCount: q.RowCount, DatasetIds: ptr([]string(q.DatasetIDs)), ErrorCode: q.ErrorCode, CreatedAt: q.CreatedAt}
		if q.ExecutionTimeMS != nil {
			it.ExecutionTimeMs = ptr(int(*q.ExecutionTimeMS))
		}
		if q.UserID != nil && q.CreatedByName != nil {
			it.CreatedBy = &struct {
				Id   string `json:"id"`
				Name string `json:"name"`
			}{*q.UserID, *q.CreatedByName}
		}
		out.Queries = append(out.Queries, it)
	}
	return out, nil
}

// dateBound reads a start_date or end_date filter: a date (an end date includes its whole
// day) or a date-time.
func dateBound(name string, v *string, end bool) (*time.Time, error) {
	if v == nil {
		return nil, nil
	}
	if t, err := time.Parse(time.RFC3339, *v); err == nil {
		return &t, nil
	}
	t, err := time.Parse(time.DateOnly, *v)
	if err != nil {
		return nil, apierr.Field("query."+name, "format", name+" must be a date (2024-01-31) or a date-time (2024-01-31T12:00:00Z)")
	}
	if end {
		t = t.AddDate(0, 0, 1)
	}
	return &t, nil
}

func (h *Queries) GetQuery(ctx context.Context, req api.GetQueryRequestObject) (api.GetQueryResponseObject, error) {
	prj, err := h.project(ctx, nil, req.ProjectId, "queries:read", "datasets:read") // results are rows
	if err != nil {
		return nil, err
	}
	q, err := h.historyQuery(ctx, prj, req.QueryId)
	if err != nil {
		return nil, err
	}
	e := &queries.Executed{QueryID: q.ID, Status: q.Status, Type: q.Type, OriginalQuery: q.Query, CreatedAt: q.CreatedAt}
	if q.Body != nil && q.Status != "running" {
		if err := json.Unmarshal([]byte(*q.Body), e); err != nil {
			return nil, err
		}
	}
	return executedResponse{e}, nil
}

// plan runs the planner (no execution) over a prepared query under the organization's role.
func (h *Queries) plan(ctx context.Context, prj *store.Project, pp *prepared) (json.RawMessage, error) {
	if err := datasets.EnsureQueryRole(ctx, h.Store.DB, prj.OrgID); err != nil {
		return nil, err
	}
	res, err := usersql.RunQuery(ctx, h.Store.DB, prj.OrgID, pp.SQL, pp.args, usersql.QueryOptions{Timeout: projectQueryTimeout, PlanOnly: true})
	if err != nil {
		return nil, QueryError(err, &pp.SQL, projectQueryTimeout, 0)
	}
	return res.Plan, nil
}

func (h *Queries) ValidateQuery(ctx context.Context, req api.ValidateQueryRequestObject) (api.ValidateQueryResponseObject, error) {
	prj, err := h.project(ctx, nil, req.ProjectId, "queries:execute")
	if err != nil {
		return nil, err
	}
	b := req.Body
	out := api.ValidateQuery200JSONResponse{DatasetsRequired: []string{}, Warnings: []string{}, Errors: []api.QueryValidationError{}}
	// A query that would fail is a verdict here, not an error of this request.
	verdict := func(err error) (api.ValidateQueryResponseObject, error) {
		var ae *apierr.Error
		if !errors.As(err, &ae) || (ae.Status != http.StatusBadRequest && ae.Code != apierr.CodeViewBroken) {
			return nil, err
		}
		if fields, ok := ae.Details.([]apierr.FieldError); ok && ae.Code == apierr.CodeValidationError {
			for _, f := range fields {
				out.Errors = append(out.Errors, api.QueryValidationError{Code: string(ae.Code), Message: f.Message, Field: ptr(f.Field)})
			}
			return out, nil
		}
		e := api.QueryValidationError{Code: string(ae.Code), Message: ae.Message}
		if d, ok := ae.Details.(map[string]any); ok {
			if l, ok := d["line"].(int); ok {
				e.Line = &l
			}
			if c, ok := d["column"].(int); ok {
				e.Column = &c
			}
		}
		out.Errors = append(out.Errors, e)
		return out, nil
	}
	pp, err := h.prepare(ctx, prj, typeOf((*string)(b.Type)), b.Query, b.Datasets, b.Parameters, true)
	if err != nil {
		return verdict(err)
	}
	out.GeneratedSql = &pp.SQL
	for _, u := range pp.Used {
		out.DatasetsRequired = append(out.DatasetsRequired, u.ID)
	}
	for _, n := range pp.missing {
		out.Warnings = append(out.Warnings, "{{"+n+"}} has no value in parameters: it was planned as NULL, and running the query needs one")
	}
	plan, err := h.plan(ctx, prj, pp)
	if err != nil {
		return verdict(err)
	}
	root, advice, err := queries.ReadPlan(plan, nil)
	if err != nil {
		return nil, err
	}
	out.Valid = len(pp.missing) == 0
	if !out.Valid {
		out.Errors = append(out.Errors, api.QueryValidationError{Code: string(apierr.CodeValidationError), Message: "parameters lacks values for the query's placeholders",
			Field: ptr("body.parameters")})
	}
	out.EstimatedRows = ptr(int(root.EstimatedRows))
	out.EstimatedTimeMs = ptr(int(root.EstimatedCost*0.01) + 1)
	out.Warnings = append(out.Warnings, advice.Warnings...)
	return out, nil
}

// explainedResponse answers with the plan in the API's words.
type explainedResponse struct {
	SQL         string `json:"generated_sql"`
	Explanation struct {
		Summary   string            `json:"summary"`
		QueryPlan *queries.PlanNode `json:"query_plan"`
		queries.Advice
	} `json:"explanation"`
}

func (r *explainedResponse) VisitExplainQueryResponse(w http.ResponseWriter) error {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	return json.NewEncoder(w).Encode(r)
}

func (h *Queries) ExplainQuery(ctx context.Context, req api.ExplainQueryRequestObject) (api.ExplainQueryResponseObject, error) {
	prj, err := h.project(ctx, nil, req.ProjectId, "queries:execute")
	if err != nil {
		return nil, err
	}
	b := req.Body
	pp, err := h.prepare(ctx, prj, typeOf((*string)(b.Type)), b.Query, b.Datasets, b.Parameters, true)
	if err != nil {
		return nil, err
	}
	plan, err := h.plan(ctx, prj, pp)
	if err != nil {
		return nil, err
	}
	facts, err := queries.Facts(ctx, h.Store.DB, pp.sources, pp.Used)
	if err != nil {
		return nil, err
	}
	root, advice, err := queries.ReadPlan(plan, facts)
	if err != nil {
		return nil, err
	}
	out := &explainedResponse{SQL: pp.SQL}
	out.Explanation.QueryPlan, out.Explanation.Advice = root, advice
	out.Explanation.Summary = fmt.Sprintf("%s: ~%d rows at an estimated cost of %.0f", root.Type, root.EstimatedRows, root.EstimatedCost)
	if root.Table != "" {
		out.Explanation.Summary = fmt.Sprintf("%s of %s: ~%d rows at an estimated cost of %.0f", root.Type, root.Table, root.EstimatedRows, root.EstimatedCost)
	}
	return out, nil
}

// InterruptedAfter is how long a query may stay running before it counts as interrupted (a
// stream whose server died).
const InterruptedAfter = time.Hour

// FailInterruptedQueries marks queries running for longer than InterruptedAfter failed.
func (h *Handlers) FailInterruptedQueries(ctx context.Context) (int64, error) {
	now := h.Now()
	return store.FailInterruptedQueries(ctx, h.Store.DB, now, now.Add(-InterruptedAfter))
}

// queryAllowance refuses a query past the monthly queries of the organization's plan.
func (h *Queries) queryAllowance(ctx context.Context, orgID string, now time.Time) error {
	tier, err := store.PlanTier(ctx, h.Store.DB, orgID)
	if err != nil {
		return err
	}
	first := time.Date(now.Year(), now.Month(), 1, 0, 0, 0, 0, time.UTC)
	used, err := store.UsageBetween(ctx, h.Store.DB, orgID, first, now)
	if err != nil {
		return err
	}
	if p := planOf(tier); used.Queries >= int64(p.QueriesMonthly) {
		return p.limitExceeded("queries", used.Queries, int64(p.QueriesMonthly), fmt.Sprintf("allows %d queries a month", p.QueriesMonthly))
	}
	return nil
}
