package mcp

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"regexp"
	"strings"

	"dataplatform/handlers/apierr"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Each dataset's OpenAPI description and JSON schema are resources, at the URLs the REST API
// serves them: one template each, read with the caller's permissions.
func (s *Server) resources(srv *sdk.Server) {
	srv.AddReceivingMiddleware(s.listDatasetResources)
	for _, r := range []struct{ name, file, api, desc string }{
		{"dataset-openapi", "openapi.json", "openapi.json",
			"The OpenAPI description of a dataset's record API: its paths, filters, fields and record schema."},
		{"dataset-schema", "schema", "schema",
			"The JSON schema of a dataset's records: each field with its type, format and constraints."},
	} {
		tmpl := s.d.BaseURL + "/api/v1/datasets/{dataset_id}/" + r.file
		pattern := regexp.MustCompile("^" + regexp.QuoteMeta(s.d.BaseURL+"/api/v1/datasets/") + `([^/?#]+)/` + regexp.QuoteMeta(r.file) + "$")
		api := r.api
		srv.AddResourceTemplate(&sdk.ResourceTemplate{Name: r.name, URITemplate: tmpl, MIMEType: "application/json", Description: r.desc},
			func(ctx context.Context, req *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
				uri := req.Params.URI
				m := pattern.FindStringSubmatch(uri)
				if m == nil {
					return nil, sdk.ResourceNotFoundError(uri)
				}
				id, err := url.PathUnescape(m[1])
				if err != nil {
					return nil, sdk.ResourceNotFoundError(uri)
				}
				a := &answer{}
				if err := s.d.Dispatch(ctx, http.MethodGet, "/api/v1/datasets/"+esc(id)+"/"+api, nil, a); err != nil {
					var ae *apierr.Error
					if errors.As(err, &ae) && ae.Status == http.StatusNotFound {
						return nil, sdk.ResourceNotFoundError(uri) // what the caller cannot see does not exist
					}
					return nil, s.refusal(ctx, err)
				}
				return &sdk.ReadResourceResult{Contents: []*sdk.ResourceContents{{URI: uri, MIMEType: "application/json", Text: a.body.String()}}}, nil
			})
	}
}

// listDatasetResources answers resources/list with the two resources of each dataset the
// caller can see (of its first 100 projects, 100 datasets each; the templates reach any).
func (s *Server) listDatasetResources(next sdk.MethodHandler) sdk.MethodHandler {
	return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
		res, err := next(ctx, method, req)
		out, ok := res.(*sdk.ListResourcesResult)
		if method != "resources/list" || err != nil || !ok || out.NextCursor != "" {
			return res, err
		}
		var prj struct {
			Projects []struct {
				ID string `json:"id"`
			} `json:"projects"`
		}
		if err := s.call(ctx, http.MethodGet, "/api/v1/projects?limit=100", nil, &prj); err != nil {
			return nil, err
		}
		for _, p := range prj.Projects {
			var ds struct {
				Datasets []struct {
					ID, Name string
				} `json:"datasets"`
			}
			if s.call(ctx, http.MethodGet, "/api/v1/projects/"+esc(p.ID)+"/datasets?limit=100", nil, &ds) != nil {
				continue // a project the caller may list but not read the datasets of
			}
			for _, d := range ds.Datasets {
				base := s.d.BaseURL + "/api/v1/datasets/" + esc(d.ID) + "/"
				out.Resources = append(out.Resources,
					&sdk.Resource{URI: base + "openapi.json", Name: d.ID + "-openapi", Title: d.Name + ": OpenAPI description", MIMEType: "application/json"},
					&sdk.Resource{URI: base + "schema", Name: d.ID + "-schema", Title: d.Name + ": record schema", MIMEType: "application/json"})
			}
		}
		return out, nil
	}
}

func (s *Server) prompts(srv *sdk.Server) {
	text := func(role sdk.Role, t string) *sdk.PromptMessage {
		return &sdk.PromptMessage{Role: role, Content: &sdk.TextContent{Text: t}}
	}
	srv.AddPrompt(&sdk.Prompt{Name: "explore_dataset", Title: "Explore a dataset",
		Description: "Get to know a dataset: what it holds, its columns and their values, and what questions it can answer.",
		Arguments: []*sdk.PromptArgument{
			{Name: "project_id", Description: "the dataset's project (prj_...)", Required: true},
			{Name: "dataset_id", Description: "the dataset (ds_...)", Required: true},
		}},
		func(_ context.Context, req *sdk.GetPromptRequest) (*sdk.GetPromptResult, error) {
			a := req.Params.Arguments
			if a["project_id"] == "" || a["dataset_id"] == "" {
				return nil, errors.New("project_id and dataset_id are required")
			}
			return &sdk.GetPromptResult{Description: "Explore dataset " + a["dataset_id"], Messages: []*sdk.PromptMessage{text("user",
				"Explore dataset "+a["dataset_id"]+" of project "+a["project_id"]+".\n"+
					"1. Call describe_dataset to learn its columns, types, key, statistics and relationships.\n"+
					"2. Call list_records with limit 5 to see typical records.\n"+
					"3. With query_sql, count the rows and look at the distribution of the most telling columns "+
					"(GROUP BY with counts, MIN/MAX of dates and amounts); keep max_rows small.\n"+
					"4. Summarize what the dataset holds, its quality (missing values, odd values) and five questions it can answer, "+
					"each with the SQL that answers it.")}}, nil
		})
	srv.AddPrompt(&sdk.Prompt{Name: "answer_with_sql", Title: "Answer a question with SQL",
		Description: "Answer a question about a project's data by writing and checking SQL, showing the query used.",
		Arguments: []*sdk.PromptArgument{
			{Name: "project_id", Description: "the project whose datasets answer (prj_...)", Required: true},
			{Name: "question", Description: "the question, in plain words", Required: true},
		}},
		func(_ context.Context, req *sdk.GetPromptRequest) (*sdk.GetPromptResult, error) {
			a := req.Params.Arguments
			if a["project_id"] == "" || strings.TrimSpace(a["question"]) == "" {
				return nil, errors.New("project_id and question are required")
			}
			return &sdk.GetPromptResult{Description: "Answer with SQL", Messages: []*sdk.PromptMessage{text("user",
				"Answer this question from the data of project "+a["project_id"]+": "+a["question"]+"\n"+
					"1. Call list_datasets and describe_dataset for the datasets that may hold the answer.\n"+
					"2. Write one PostgreSQL SELECT over their tables and run it with query_sql; aggregate in SQL.\n"+
					"3. If it fails, read the error's message and details, fix the SQL and run it again.\n"+
					"4. Answer in a sentence or a small table, then show the SQL and every assumption you made "+
					"(which columns, filters and periods). Say so if truncated is true.")}}, nil
		})
}
