package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"dataplatform/handlers/apierr"
	recsql "dataplatform/store/records"

	"github.com/google/jsonschema-go/jsonschema"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Caps on what one result puts in a model's context (the REST API's own limits still apply).
const (
	defaultRows  = 100
	maxRows      = 1000
	defaultBytes = 64 << 10
	maxBytes     = 1 << 20
)

// build makes the SDK server of the read tools, and of the write tools too when writes.
func (s *Server) build(writes bool) *sdk.Server {
	srv := sdk.NewServer(&sdk.Implementation{Name: "dataplatform", Title: "Data platform", Version: "1.0.0"}, &sdk.ServerOptions{
		Instructions: "Datasets (uploaded files and connected databases) of the caller's organizations, each a table with a " +
			"REST API. Start with list_projects and list_datasets, read a dataset with describe_dataset, then answer with " +
			"query_sql (PostgreSQL SELECT over the project's datasets, each a table named by its dataset's table name) or ask " +
			"(plain English). Everything is limited to what the credential may see and do.",
		SchemaCache: sdk.NewSchemaCache(),
	})
	srv.AddReceivingMiddleware(s.auditCalls)
	s.readTools(srv)
	if writes {
		s.writeTools(srv)
	}
	s.resources(srv)
	s.prompts(srv)
	return srv
}

// schemaFor is T's JSON schema, adjusted (bounds, enums the struct tags cannot say).
func schemaFor[T any](adjust func(p map[string]*jsonschema.Schema)) *jsonschema.Schema {
	sc, err := jsonschema.For[T](nil)
	if err != nil {
		panic(err)
	}
	if adjust != nil {
		adjust(sc.Properties)
	}
	return sc
}

func bounds(p *jsonschema.Schema, lo, hi float64) {
	p.Minimum, p.Maximum = &lo, &hi
}

func boolp(b bool) *bool { return &b }

// pagination is the API's pagination object without its links (an agent pages with page).
type pagination struct {
	Page    int  `json:"page"`
	Limit   int  `json:"limit"`
	Total   int  `json:"total"`
	Pages   int  `json:"pages"`
	HasNext bool `json:"has_next"`
}

type pageIn struct {
	Page  int `json:"page,omitempty" jsonschema:"page number, from 1"`
	Limit int `json:"limit,omitempty" jsonschema:"items per page, 1 to 100 (default 20)"`
}

func (p pageIn) set(q url.Values) {
	if p.Page != 0 {
		q.Set("page", strconv.Itoa(p.Page))
	}
	if p.Limit != 0 {
		q.Set("limit", strconv.Itoa(p.Limit))
	}
}

func pageBounds(p map[string]*jsonschema.Schema) {
	bounds(p["page"], 1, 1e6)
	bounds(p["limit"], 1, 100)
}

func esc(s string) string { return url.PathEscape(s) }

// --- projects and datasets

type listProjectsIn struct {
	OrganizationID string `json:"organization_id,omitempty" jsonschema:"only the projects of this organization (org_...); default: every organization of the caller"`
	Search         string `json:"search,omitempty" jsonschema:"words of the project's name"`
	pageIn
}

type listProjectsOut struct {
	Projects   []map[string]any `json:"projects"`
	Pagination pagination       `json:"pagination"`
}

type listDatasetsIn struct {
	ProjectID string `json:"project_id" jsonschema:"the project (prj_...), from list_projects"`
	Search    string `json:"search,omitempty" jsonschema:"words of the dataset's name or description"`
	pageIn
}

type listDatasetsOut struct {
	Datasets   []map[string]any `json:"datasets"`
	Pagination pagination       `json:"pagination"`
}

type describeIn struct {
	ProjectID string `json:"project_id" jsonschema:"the dataset's project (prj_...)"`
	DatasetID string `json:"dataset_id" jsonschema:"the dataset (ds_...), from list_datasets"`
}

type describeOut struct {
	Dataset    map[string]any `json:"dataset" jsonschema:"the dataset: name, description, status, source, row and column counts, tables"`
	Schema     map[string]any `json:"schema" jsonschema:"columns with types, roles (role, role_source), the key, statistics and relationships"`
	DocsURL    string         `json:"docs_url" jsonschema:"the dataset's API reference page"`
	OpenAPIURL string         `json:"openapi_url" jsonschema:"the dataset's OpenAPI description (also the resource of that URI)"`
	RecordsURL string         `json:"records_url" jsonschema:"the dataset's record API"`
}

// --- queries

type queryIn struct {
	ProjectID      string         `json:"project_id" jsonschema:"the project whose datasets the SQL reads (prj_...)"`
	SQL            string         `json:"sql" jsonschema:"one PostgreSQL SELECT (WITH allowed) over the project's datasets by their table names; {{name}} placeholders take parameters"`
	Parameters     map[string]any `json:"parameters,omitempty" jsonschema:"values of the {{name}} placeholders: strings, numbers, booleans or null"`
	Datasets       []string       `json:"datasets,omitempty" jsonschema:"only these datasets (ds_...) may be read; default every active dataset of the project"`
	TimeoutSeconds int            `json:"timeout_seconds,omitempty" jsonschema:"stop the query after this many seconds (the API's bounds)"`
	capIn
}

type capIn struct {
	MaxRows  int `json:"max_rows,omitempty" jsonschema:"rows returned at most, 1 to 1000 (default 100); truncated says when there were more"`
	MaxBytes int `json:"max_bytes,omitempty" jsonschema:"bytes of rows (as JSON) returned at most, 1024 to 1048576 (default 65536); truncated says when rows were cut"`
}

func capBounds(p map[string]*jsonschema.Schema) {
	bounds(p["max_rows"], 1, maxRows)
	bounds(p["max_bytes"], 1024, maxBytes)
}

func (c capIn) rows() int  { return cmpOr(c.MaxRows, defaultRows) }
func (c capIn) bytes() int { return cmpOr(c.MaxBytes, defaultBytes) }

func cmpOr(v, d int) int {
	if v == 0 {
		return d
	}
	return v
}

type queryOut struct {
	QueryID         string           `json:"query_id" jsonschema:"the query in the project's history"`
	Columns         []map[string]any `json:"columns" jsonschema:"name and type of each column"`
	Rows            [][]any          `json:"rows" jsonschema:"the rows, each an array in the order of columns"`
	RowCount        int              `json:"row_count" jsonschema:"rows returned here"`
	Truncated       bool             `json:"truncated" jsonschema:"true when the query had more rows than returned here"`
	TruncatedBy     string           `json:"truncated_by,omitempty" jsonschema:"what cut the rows: max_rows or max_bytes"`
	ExecutionTimeMS int64            `json:"execution_time_ms"`
	Warnings        []string         `json:"warnings,omitempty"`
}

type askIn struct {
	ProjectID string   `json:"project_id" jsonschema:"the project whose datasets answer (prj_...)"`
	Question  string   `json:"question" jsonschema:"the question in plain English, e.g. 'total revenue by region in 2024'"`
	Datasets  []string `json:"datasets,omitempty" jsonschema:"only these datasets (ds_...); default every active dataset of the project"`
	capIn
}

type askOut struct {
	Answer      queryOut `json:"answer" jsonschema:"the rows that answer the question"`
	SQL         string   `json:"sql" jsonschema:"the SQL the question was read as"`
	Summary     string   `json:"summary" jsonschema:"how the question was read"`
	Assumptions []string `json:"assumptions" jsonschema:"the choices made in reading it (columns, filters, periods): check them before trusting the answer"`
}

// executed is the API's answer of a query, as far as the tools use it.
type executed struct {
	QueryID      string `json:"query_id"`
	GeneratedSQL string `json:"generated_sql"`
	Results      *struct {
		Columns   []map[string]any `json:"columns"`
		Rows      [][]any          `json:"rows"`
		Truncated bool             `json:"truncated"`
	} `json:"results"`
	Explanation *struct {
		Summary string   `json:"summary"`
		Steps   []string `json:"steps"`
	} `json:"explanation"`
	Metadata *struct {
		ExecutionTimeMS int64 `json:"execution_time_ms"`
	} `json:"metadata"`
	Warnings []string `json:"warnings"`
}

// capped is a query's answer within the row and byte caps.
func capped(e *executed, c capIn) queryOut {
	out := queryOut{QueryID: e.QueryID, Columns: []map[string]any{}, Rows: [][]any{}, Warnings: e.Warnings}
	if e.Metadata != nil {
		out.ExecutionTimeMS = e.Metadata.ExecutionTimeMS
	}
	if e.Results == nil {
		return out
	}
	out.Columns = e.Results.Columns
	rows := e.Results.Rows
	if e.Results.Truncated || len(rows) > c.rows() {
		out.Truncated, out.TruncatedBy = true, "max_rows"
		rows = rows[:min(len(rows), c.rows())]
	}
	size := 2
	for i, r := range rows {
		b, _ := json.Marshal(r)
		if size += len(b) + 1; size > c.bytes() {
			rows, out.Truncated, out.TruncatedBy = rows[:i], true, "max_bytes"
			break
		}
	}
	out.Rows, out.RowCount = rows, len(rows)
	return out
}

type savedIn struct {
	ProjectID string `json:"project_id" jsonschema:"the project (prj_...)"`
	Tag       string `json:"tag,omitempty" jsonschema:"only saved queries with this tag"`
	pageIn
}

type savedOut struct {
	SavedQueries []map[string]any `json:"saved_queries"`
	Pagination   pagination       `json:"pagination"`
}

type runSavedIn struct {
	ProjectID    string         `json:"project_id" jsonschema:"the project (prj_...)"`
	SavedQueryID string         `json:"saved_query_id" jsonschema:"the saved query, from list_saved_queries"`
	Parameters   map[string]any `json:"parameters,omitempty" jsonschema:"values of its {{name}} placeholders"`
	capIn
}

// --- records

type filterIn struct {
	Field    string `json:"field" jsonschema:"a column (a JSON column's path as column.path)"`
	Operator string `json:"operator,omitempty" jsonschema:"the comparison (default eq); in and nin take a list, between two values, is null/notnull/true/false"`
	Value    any    `json:"value" jsonschema:"the value compared with: a string, number, boolean, null, or a list for in, nin and between"`
}

type listRecordsIn struct {
	DatasetID string     `json:"dataset_id" jsonschema:"the dataset (ds_...)"`
	Table     string     `json:"table,omitempty" jsonschema:"the table, for a dataset with several (a connected database); default its main one"`
	Filters   []filterIn `json:"filters,omitempty" jsonschema:"conditions all records must meet"`
	Search    string     `json:"search,omitempty" jsonschema:"words searched in the text columns"`
	Sort      string     `json:"sort,omitempty" jsonschema:"columns to sort by, comma separated, - before one for descending: -amount,name"`
	Fields    []string   `json:"fields,omitempty" jsonschema:"only these columns"`
	Cursor    string     `json:"cursor,omitempty" jsonschema:"next_cursor of the previous call, for the next records"`
	Limit     int        `json:"limit,omitempty" jsonschema:"records per call, 1 to 100 (default 20)"`
}

type listRecordsOut struct {
	Records    []map[string]any `json:"records"`
	Total      int              `json:"total" jsonschema:"records that match (estimated when total_estimated)"`
	Estimated  bool             `json:"total_estimated"`
	NextCursor string           `json:"next_cursor,omitempty" jsonschema:"pass as cursor for the next records; absent on the last page"`
}

type recordIn struct {
	DatasetID string   `json:"dataset_id" jsonschema:"the dataset (ds_...)"`
	Table     string   `json:"table,omitempty" jsonschema:"the table of a dataset with several"`
	ID        string   `json:"id" jsonschema:"the record's key"`
	Fields    []string `json:"fields,omitempty" jsonschema:"only these columns"`
}

type recordOut struct {
	Record map[string]any `json:"record"`
}

type createIn struct {
	DatasetID string         `json:"dataset_id" jsonschema:"the dataset (ds_...)"`
	Table     string         `json:"table,omitempty" jsonschema:"the table of a dataset with several"`
	Record    map[string]any `json:"record" jsonschema:"the new record's fields, as its describe_dataset schema says"`
}

type updateIn struct {
	DatasetID string         `json:"dataset_id" jsonschema:"the dataset (ds_...)"`
	Table     string         `json:"table,omitempty" jsonschema:"the table of a dataset with several"`
	ID        string         `json:"id" jsonschema:"the record's key"`
	Changes   map[string]any `json:"changes" jsonschema:"the fields to change and their new values; others are kept"`
	Version   int            `json:"version,omitempty" jsonschema:"the version read: the update is refused if the record changed since"`
}

type deleteIn struct {
	DatasetID string `json:"dataset_id" jsonschema:"the dataset (ds_...)"`
	Table     string `json:"table,omitempty" jsonschema:"the table of a dataset with several"`
	ID        string `json:"id" jsonschema:"the record's key"`
}

type deleteOut struct {
	Deleted bool   `json:"deleted"`
	ID      string `json:"id"`
}

// --- dashboards

type generateIn struct {
	DatasetID  string   `json:"dataset_id,omitempty" jsonschema:"generate the dashboard of this dataset (ds_...); or give project_id"`
	ProjectID  string   `json:"project_id,omitempty" jsonschema:"generate a dashboard over several datasets of this project (prj_...); needs name"`
	Name       string   `json:"name,omitempty" jsonschema:"the dashboard's name (project form)"`
	Intent     string   `json:"intent,omitempty" jsonschema:"what the dashboard is for, in plain words (project form)"`
	DatasetIDs []string `json:"dataset_ids,omitempty" jsonschema:"the datasets to use (project form; default chosen by intent)"`
	Regenerate bool     `json:"regenerate,omitempty" jsonschema:"make the dataset's dashboard again even when it exists (dataset form)"`
}

type dashboardOut struct {
	Dashboard map[string]any `json:"dashboard" jsonschema:"the dashboard: id, name, source, version and its spec of tiles"`
	PageURL   string         `json:"page_url" jsonschema:"the dashboard's page, for a person to open"`
}

type getDashboardIn struct {
	DashboardID string `json:"dashboard_id" jsonschema:"the dashboard (dsh_...)"`
}

func (s *Server) pageURL(id string) string { return s.d.BaseURL + "/dashboards/" + esc(id) }

func (s *Server) readTools(srv *sdk.Server) {
	ro := &sdk.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: boolp(false)}
	s.catalogTools(srv, ro)
	s.queryTools(srv, ro)
	s.recordTools(srv, ro)
	s.savedQueryTools(srv, ro)
}

// catalogTools are the read tools that find and describe projects and datasets.
func (s *Server) catalogTools(srv *sdk.Server, ro *sdk.ToolAnnotations) {
	addTool(s, srv, &sdk.Tool{Name: "list_projects", Annotations: ro, InputSchema: schemaFor[listProjectsIn](pageBounds),
		Description: "List the projects the caller can see, across their organizations or in one. A project holds datasets; " +
			"every other tool takes a project_id or dataset_id found from here."},
		func(ctx context.Context, _ *sdk.CallToolRequest, in listProjectsIn) (listProjectsOut, error) {
			q := url.Values{}
			if in.OrganizationID != "" {
				q.Set("organization_id", in.OrganizationID)
			}
			if in.Search != "" {
				q.Set("search", in.Search)
			}
			in.set(q)
			var out listProjectsOut
			err := s.call(ctx, http.MethodGet, "/api/v1/projects?"+q.Encode(), nil, &out)
			return out, err
		})

	addTool(s, srv, &sdk.Tool{Name: "list_datasets", Annotations: ro, InputSchema: schemaFor[listDatasetsIn](pageBounds),
		Description: "List a project's datasets (uploaded files and connected databases) with their status, size and " +
			"description; search narrows by name or description."},
		func(ctx context.Context, _ *sdk.CallToolRequest, in listDatasetsIn) (listDatasetsOut, error) {
			q := url.Values{}
			if in.Search != "" {
				q.Set("search", in.Search)
			}
			in.set(q)
			var out listDatasetsOut
			err := s.call(ctx, http.MethodGet, "/api/v1/projects/"+esc(in.ProjectID)+"/datasets?"+q.Encode(), nil, &out)
			return out, err
		})

	addTool(s, srv, &sdk.Tool{Name: "describe_dataset", Annotations: ro, InputSchema: schemaFor[describeIn](nil),
		Description: "Describe a dataset before querying it: its columns with types, its key, column statistics, " +
			"relationships to other datasets, its description, and the URLs of its API docs and OpenAPI description. " +
			"Each column has a role: identifier (keys, references), category (few values that group rows), time, " +
			"amount (a number that adds up over rows: sum it), value (a number that does not add up, such as a unit price " +
			"beside a quantity, a rate or a score: average it, never sum it), count (a number of things per row: sum it) " +
			"or text; role_source says whether a person set it or it was inferred. Named measures (revenue = sum(price), " +
			"a duration of two times) are listed with how they are computed; ask and the aggregate API take them by name."},
		func(ctx context.Context, _ *sdk.CallToolRequest, in describeIn) (describeOut, error) {
			base := "/api/v1/projects/" + esc(in.ProjectID) + "/datasets/" + esc(in.DatasetID)
			out := describeOut{DocsURL: s.d.BaseURL + "/api/v1/datasets/" + esc(in.DatasetID) + "/docs",
				OpenAPIURL: s.d.BaseURL + "/api/v1/datasets/" + esc(in.DatasetID) + "/openapi.json",
				RecordsURL: s.d.BaseURL + "/api/v1/datasets/" + esc(in.DatasetID) + "/data"}
			if err := s.call(ctx, http.MethodGet, base, nil, &out.Dataset); err != nil {
				return out, err
			}
			err := s.call(ctx, http.MethodGet, base+"/schema", nil, &out.Schema)
			return out, err
		})
}

// queryTools answer with SQL or a question in plain English.
func (s *Server) queryTools(srv *sdk.Server, ro *sdk.ToolAnnotations) {
	addTool(s, srv, &sdk.Tool{Name: "query_sql", Annotations: ro, InputSchema: schemaFor[queryIn](capBounds),
		Description: "Run one read-only PostgreSQL SELECT over a project's datasets (each a table named by its table name, " +
			"see describe_dataset) in the sandbox, with the caller's permissions and query limits. Returns at most max_rows " +
			"rows and max_bytes of them; truncated says when there were more. Aggregate in SQL rather than reading many rows."},
		func(ctx context.Context, _ *sdk.CallToolRequest, in queryIn) (queryOut, error) {
			body := map[string]any{"query": in.SQL, "type": "sql", "options": queryOptions(in.capIn, in.TimeoutSeconds)}
			if in.Parameters != nil {
				body["parameters"] = in.Parameters
			}
			if in.Datasets != nil {
				body["datasets"] = in.Datasets
			}
			var e executed
			if err := s.call(ctx, http.MethodPost, "/api/v1/projects/"+esc(in.ProjectID)+"/queries/execute", body, &e); err != nil {
				return queryOut{}, err
			}
			return capped(&e, in.capIn), nil
		})

	addTool(s, srv, &sdk.Tool{Name: "ask", Annotations: ro, InputSchema: schemaFor[askIn](capBounds),
		Description: "Answer a question in plain English over a project's datasets: returns the answer's rows, the SQL it " +
			"was read as and the assumptions made. A question that cannot be answered is an error whose details give the " +
			"reason and suggestions; rephrase with them, or write the SQL with query_sql."},
		func(ctx context.Context, _ *sdk.CallToolRequest, in askIn) (askOut, error) {
			body := map[string]any{"query": in.Question, "type": "natural_language", "options": queryOptions(in.capIn, 0)}
			if in.Datasets != nil {
				body["datasets"] = in.Datasets
			}
			var e executed
			if err := s.call(ctx, http.MethodPost, "/api/v1/projects/"+esc(in.ProjectID)+"/queries/execute", body, &e); err != nil {
				return askOut{}, err
			}
			out := askOut{Answer: capped(&e, in.capIn), SQL: e.GeneratedSQL, Assumptions: []string{}}
			if e.Explanation != nil {
				out.Summary = e.Explanation.Summary
				if e.Explanation.Steps != nil {
					out.Assumptions = e.Explanation.Steps
				}
			}
			return out, nil
		})
}

// recordTools read a dataset's records and a dashboard.
func (s *Server) recordTools(srv *sdk.Server, ro *sdk.ToolAnnotations) {
	addTool(s, srv, &sdk.Tool{Name: "list_records", Annotations: ro, InputSchema: schemaFor[listRecordsIn](func(p map[string]*jsonschema.Schema) {
		bounds(p["limit"], 1, 100)
		ops := make([]any, len(recsql.Operators))
		for i, o := range recsql.Operators {
			ops[i] = o
		}
		p["filters"].Items.Properties["operator"].Enum = ops
	}),
		Description: "List a dataset's records through its API, with filters (the record API's operators), search, " +
			"sort, chosen fields and a cursor for the next page. For totals and groupings use query_sql instead."},
		func(ctx context.Context, _ *sdk.CallToolRequest, in listRecordsIn) (listRecordsOut, error) {
			q := url.Values{}
			for _, f := range in.Filters {
				op := cmpOrS(f.Operator, "eq")
				q.Add("filter["+f.Field+"]["+op+"]", filterValue(f.Value))
			}
			for k, v := range map[string]string{"search": in.Search, "sort": in.Sort, "fields": strings.Join(in.Fields, ","),
				"cursor": in.Cursor, "table": in.Table} {
				if v != "" {
					q.Set(k, v)
				}
			}
			if in.Limit != 0 {
				q.Set("limit", strconv.Itoa(in.Limit))
			}
			var r struct {
				Data       []map[string]any `json:"data"`
				Pagination struct {
					Total          int     `json:"total"`
					NextCursor     *string `json:"next_cursor"`
					TotalEstimated bool    `json:"total_estimated"`
				} `json:"pagination"`
			}
			if err := s.call(ctx, http.MethodGet, "/api/v1/datasets/"+esc(in.DatasetID)+"/data?"+q.Encode(), nil, &r); err != nil {
				return listRecordsOut{}, err
			}
			out := listRecordsOut{Records: r.Data, Total: r.Pagination.Total, Estimated: r.Pagination.TotalEstimated}
			if out.Records == nil {
				out.Records = []map[string]any{}
			}
			if r.Pagination.NextCursor != nil {
				out.NextCursor = *r.Pagination.NextCursor
			}
			return out, nil
		})

	addTool(s, srv, &sdk.Tool{Name: "get_record", Annotations: ro, InputSchema: schemaFor[recordIn](nil),
		Description: "Read one record of a dataset by its key."},
		func(ctx context.Context, _ *sdk.CallToolRequest, in recordIn) (recordOut, error) {
			q := url.Values{}
			if len(in.Fields) > 0 {
				q.Set("fields", strings.Join(in.Fields, ","))
			}
			if in.Table != "" {
				q.Set("table", in.Table)
			}
			var out recordOut
			err := s.call(ctx, http.MethodGet, recordPath(in.DatasetID, in.ID)+query(q), nil, &out.Record)
			return out, err
		})

	addTool(s, srv, &sdk.Tool{Name: "get_dashboard", Annotations: ro, InputSchema: schemaFor[getDashboardIn](nil),
		Description: "Read a dashboard: its tiles (each a query and a chart) and the URL of its page to give a person."},
		func(ctx context.Context, _ *sdk.CallToolRequest, in getDashboardIn) (dashboardOut, error) {
			out := dashboardOut{PageURL: s.pageURL(in.DashboardID)}
			err := s.call(ctx, http.MethodGet, "/api/v1/dashboards/"+esc(in.DashboardID), nil, &out.Dashboard)
			return out, err
		})
}

// savedQueryTools list and run a project's saved queries.
func (s *Server) savedQueryTools(srv *sdk.Server, ro *sdk.ToolAnnotations) {
	addTool(s, srv, &sdk.Tool{Name: "list_saved_queries", Annotations: ro, InputSchema: schemaFor[savedIn](pageBounds),
		Description: "List a project's saved queries (named SQL or questions people keep), with their parameters; run one with run_saved_query."},
		func(ctx context.Context, _ *sdk.CallToolRequest, in savedIn) (savedOut, error) {
			q := url.Values{}
			if in.Tag != "" {
				q.Set("tag", in.Tag)
			}
			in.set(q)
			var out savedOut
			err := s.call(ctx, http.MethodGet, "/api/v1/projects/"+esc(in.ProjectID)+"/saved-queries?"+q.Encode(), nil, &out)
			return out, err
		})

	addTool(s, srv, &sdk.Tool{Name: "run_saved_query", Annotations: ro, InputSchema: schemaFor[runSavedIn](capBounds),
		Description: "Run a saved query with values for its parameters; the answer is capped as query_sql's."},
		func(ctx context.Context, _ *sdk.CallToolRequest, in runSavedIn) (queryOut, error) {
			body := map[string]any{"options": queryOptions(in.capIn, 0)}
			if in.Parameters != nil {
				body["parameters"] = in.Parameters
			}
			var e executed
			if err := s.call(ctx, http.MethodPost, "/api/v1/projects/"+esc(in.ProjectID)+"/saved-queries/"+esc(in.SavedQueryID)+"/execute", body, &e); err != nil {
				return queryOut{}, err
			}
			return capped(&e, in.capIn), nil
		})
}

func (s *Server) writeTools(srv *sdk.Server) {
	addTool(s, srv, &sdk.Tool{Name: "create_record", InputSchema: schemaFor[createIn](nil),
		Annotations: &sdk.ToolAnnotations{DestructiveHint: boolp(false), OpenWorldHint: boolp(false)},
		Description: "Create a record in a dataset; its fields are checked against the dataset's schema. Returns the record as stored."},
		func(ctx context.Context, _ *sdk.CallToolRequest, in createIn) (recordOut, error) {
			var out recordOut
			err := s.call(ctx, http.MethodPost, "/api/v1/datasets/"+esc(in.DatasetID)+"/data"+tableQuery(in.Table), in.Record, &out.Record)
			return out, err
		})

	addTool(s, srv, &sdk.Tool{Name: "update_record", InputSchema: schemaFor[updateIn](func(p map[string]*jsonschema.Schema) { bounds(p["version"], 1, 1<<31) }),
		Annotations: &sdk.ToolAnnotations{DestructiveHint: boolp(true), IdempotentHint: true, OpenWorldHint: boolp(false)},
		Description: "Change fields of a record (the others are kept). Give the version read to refuse the change if someone changed the record since."},
		func(ctx context.Context, _ *sdk.CallToolRequest, in updateIn) (recordOut, error) {
			body := map[string]any{}
			for k, v := range in.Changes {
				body[k] = v
			}
			if in.Version != 0 {
				body["version"] = in.Version
			}
			var out recordOut
			err := s.call(ctx, http.MethodPatch, recordPath(in.DatasetID, in.ID)+tableQuery(in.Table), body, &out.Record)
			return out, err
		})

	addTool(s, srv, &sdk.Tool{Name: "delete_record", InputSchema: schemaFor[deleteIn](nil),
		Annotations: &sdk.ToolAnnotations{DestructiveHint: boolp(true), IdempotentHint: true, OpenWorldHint: boolp(false)},
		Description: "Delete a record of a dataset by its key."},
		func(ctx context.Context, _ *sdk.CallToolRequest, in deleteIn) (deleteOut, error) {
			err := s.call(ctx, http.MethodDelete, recordPath(in.DatasetID, in.ID)+tableQuery(in.Table), nil, nil)
			return deleteOut{Deleted: err == nil, ID: in.ID}, err
		})

	addTool(s, srv, &sdk.Tool{Name: "generate_dashboard", InputSchema: schemaFor[generateIn](nil),
		Annotations: &sdk.ToolAnnotations{DestructiveHint: boolp(false), OpenWorldHint: boolp(false)},
		Description: "Generate and save a dashboard, of one dataset (dataset_id) or of several datasets of a project " +
			"(project_id, name, intent). It takes a while: send a progress token to hear its phases (analyzing, metrics, " +
			"validating, layout, finalizing). Returns the dashboard and the URL of its page."},
		s.generateDashboard)
}

func (s *Server) generateDashboard(ctx context.Context, req *sdk.CallToolRequest, in generateIn) (dashboardOut, error) {
	var path string
	var body any
	switch {
	case (in.DatasetID == "") == (in.ProjectID == ""):
		return dashboardOut{}, apierr.Field("arguments", "required", "give dataset_id (a dataset's dashboard) or project_id (a project's), not both")
	case in.DatasetID != "":
		if in.Name != "" || in.Intent != "" || in.DatasetIDs != nil {
			return dashboardOut{}, apierr.Field("arguments", "invalid_value", "name, intent and dataset_ids are of the project form (project_id)")
		}
		path = "/api/v1/datasets/" + esc(in.DatasetID) + "/dashboard/generate/stream"
		if in.Regenerate {
			path += "?force=true"
		}
	default:
		if in.Regenerate {
			return dashboardOut{}, apierr.Field("arguments.regenerate", "invalid_value", "regenerate is of the dataset form (dataset_id)")
		}
		b := map[string]any{}
		for k, v := range map[string]string{"name": in.Name, "intent": in.Intent} {
			if v != "" {
				b[k] = v
			}
		}
		if in.DatasetIDs != nil {
			b["dataset_ids"] = in.DatasetIDs
		}
		path, body = "/api/v1/projects/"+esc(in.ProjectID)+"/dashboards/generate/stream", b
	}
	token := req.Params.GetProgressToken()
	var pending strings.Builder
	var done map[string]any
	var failed error
	step := 0
	ev := func(raw string) {
		var e struct {
			Type    string          `json:"type"`
			Message string          `json:"message"`
			Data    json.RawMessage `json:"data"`
		}
		if json.Unmarshal([]byte(strings.TrimPrefix(raw, "data: ")), &e) != nil {
			return
		}
		switch e.Type {
		case "progress":
			step++
			if token != nil {
				_ = req.Session.NotifyProgress(ctx, &sdk.ProgressNotificationParams{ProgressToken: token, Progress: float64(step),
					Total: 5, Message: e.Message})
			}
		case "complete":
			_ = json.Unmarshal(e.Data, &done)
		case "error":
			var d struct {
				Code    int    `json:"code"`
				Error   string `json:"error"`
				Message string `json:"message"`
			}
			_ = json.Unmarshal(e.Data, &d)
			failed = apierr.New(d.Code, apierr.Code(strings.ToUpper(d.Error)), d.Message)
		}
	}
	a := &answer{onWrite: func(b []byte) {
		pending.Write(b)
		for {
			all := pending.String()
			i := strings.Index(all, "\n\n")
			if i < 0 {
				return
			}
			pending.Reset()
			pending.WriteString(all[i+2:])
			ev(all[:i])
		}
	}}
	var raw []byte
	if body != nil {
		raw, _ = json.Marshal(body)
	}
	if err := s.d.Dispatch(ctx, http.MethodPost, path, raw, a); err != nil {
		return dashboardOut{}, err
	}
	if ctx.Err() != nil {
		return dashboardOut{}, ctx.Err()
	}
	if failed != nil {
		return dashboardOut{}, failed
	}
	if done == nil {
		return dashboardOut{}, fmt.Errorf("dashboard generation ended without its dashboard")
	}
	id, _ := done["id"].(string)
	return dashboardOut{Dashboard: done, PageURL: s.pageURL(id)}, nil
}

// queryOptions are the API's query options for a tool's caps: the API returns max_rows rows
// at most and says itself whether there were more.
func queryOptions(c capIn, timeout int) map[string]any {
	o := map[string]any{"limit": c.rows()}
	if timeout != 0 {
		o["timeout_seconds"] = timeout
	}
	return o
}

func recordPath(datasetID, id string) string {
	return "/api/v1/datasets/" + esc(datasetID) + "/data/" + esc(id)
}

func tableQuery(table string) string {
	if table == "" {
		return ""
	}
	return "?table=" + url.QueryEscape(table)
}

func query(q url.Values) string {
	if len(q) == 0 {
		return ""
	}
	return "?" + q.Encode()
}

func cmpOrS(v, d string) string {
	if v == "" {
		return d
	}
	return v
}

// filterValue writes a filter's value as the record API reads it: lists comma separated,
// null as null.
func filterValue(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case string:
		return x
	case []any:
		parts := make([]string, len(x))
		for i, e := range x {
			parts[i] = filterValue(e)
		}
		return strings.Join(parts, ",")
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	case json.Number:
		return x.String()
	}
	return fmt.Sprint(v)
}
