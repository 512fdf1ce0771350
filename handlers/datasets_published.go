package handlers

// The published forms of a dataset's description besides the description itself: its
// record as JSON Schema, the documentation pages and the SDKs.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"dataplatform/gen/api"
	"dataplatform/handlers/apierr"
	"dataplatform/handlers/auth"
	"dataplatform/store"
	"dataplatform/store/ingest"
	"dataplatform/templates/docs"
	"dataplatform/templates/sdk"
)

// GetDatasetJSONSchema is a record of the dataset (at a version) as JSON Schema 2020-12.
func (h *Datasets) GetDatasetJSONSchema(ctx context.Context, req api.GetDatasetJSONSchemaRequestObject) (api.GetDatasetJSONSchemaResponseObject, error) {
	raw, _, desc, err := h.descriptionAt(ctx, req.DatasetId, req.Params.Table, req.Params.Version)
	if err != nil {
		return nil, err
	}
	var doc struct {
		Info struct {
			Title   string `json:"title"`
			Version string `json:"version"`
		} `json:"info"`
		Components struct {
			Schemas map[string]any `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		return nil, err
	}
	record, ok := doc.Components.Schemas[desc.Singular].(map[string]any)
	if !ok {
		return nil, fmt.Errorf("the description has no %s schema", desc.Singular)
	}
	out := jsonSchema(record).(map[string]any)
	out["$schema"] = "https://json-schema.org/draft/2020-12/schema"
	out["$id"] = h.Config.BaseURL + "/api/v1/datasets/" + req.DatasetId + "/schema?version=" + doc.Info.Version
	out["title"] = desc.Singular
	out["x-version"] = doc.Info.Version
	defs := map[string]any{}
	for _, kind := range []string{"Create", "Update"} {
		if s, ok := doc.Components.Schemas[desc.Singular+kind]; ok {
			defs[desc.Singular+kind] = jsonSchema(s)
		}
	}
	out["$defs"] = defs
	return api.GetDatasetJSONSchema200ApplicationSchemaPlusJSONResponse(out), nil
}

// jsonSchema turns an OpenAPI 3.0 schema into JSON Schema 2020-12: nullable becomes a null
// type (or a null alternative), local component references point into $defs, and the
// OpenAPI-only keywords go.
func jsonSchema(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, val := range x {
			switch k {
			case "nullable", "discriminator", "xml", "externalDocs", "example":
			case "$ref":
				if s, ok := val.(string); ok {
					out[k] = strings.Replace(s, "#/components/schemas/", "#/$defs/", 1)
				}
			default:
				out[k] = jsonSchema(val)
			}
		}
		if x["nullable"] == true {
			if t, ok := out["type"].(string); ok {
				out["type"] = []any{t, "null"}
			} else if _, ok := out["type"]; !ok {
				return map[string]any{"anyOf": []any{out, map[string]any{"type": "null"}}}
			}
			if e, ok := out["enum"].([]any); ok {
				out["enum"] = append(e, nil)
			}
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = jsonSchema(e)
		}
		return out
	}
	return v
}

// docsPage answers a documentation page of the dataset's current description.
type docsPage struct {
	kind, title, csrf string
	spec              any
}

func (p docsPage) write(w http.ResponseWriter) error {
	return docs.Render(w, p.kind, p.title, p.spec, p.csrf)
}

func (p docsPage) VisitGetDatasetDocsResponse(w http.ResponseWriter) error  { return p.write(w) }
func (p docsPage) VisitGetDatasetRedocResponse(w http.ResponseWriter) error { return p.write(w) }

func (h *Datasets) docsPage(ctx context.Context, id string, table *string, kind string) (docsPage, error) {
	desc, err := h.description(ctx, id, table)
	if err != nil {
		return docsPage{}, err
	}
	raw, err := desc.JSON()
	if err != nil {
		return docsPage{}, err
	}
	var spec any
	if err := json.Unmarshal(raw, &spec); err != nil {
		return docsPage{}, err
	}
	page := docsPage{kind: kind, title: desc.Doc.Info.Title, spec: spec}
	if p := auth.FromContext(ctx); p != nil {
		page.csrf = p.CSRF // signed in with the session cookie: the page's requests carry its token
	}
	return page, nil
}

func (h *Datasets) GetDatasetDocs(ctx context.Context, req api.GetDatasetDocsRequestObject) (api.GetDatasetDocsResponseObject, error) {
	return h.docsPage(ctx, req.DatasetId, req.Params.Table, docs.Swagger)
}

func (h *Datasets) GetDatasetRedoc(ctx context.Context, req api.GetDatasetRedocRequestObject) (api.GetDatasetRedocResponseObject, error) {
	return h.docsPage(ctx, req.DatasetId, req.Params.Table, docs.Redoc)
}

// GetDatasetSDK generates a client package of the dataset's description at a version (the
// current one by default), named as that version was.
func (h *Datasets) GetDatasetSDK(ctx context.Context, req api.GetDatasetSDKRequestObject) (api.GetDatasetSDKResponseObject, error) {
	desc, err := h.description(ctx, req.DatasetId, req.Params.Table)
	if err != nil {
		return nil, err
	}
	if !slices.Contains(sdk.Languages, req.Language) {
		return nil, apierr.NotFound("sdk language", req.Language).WithDetails(map[string]any{"resource": "sdk language", "id": req.Language,
			"supported_languages": sdk.Languages})
	}
	version := desc.Current()
	if req.Params.Version != nil {
		version = *req.Params.Version
	}
	doc, raw, ok, err := h.Descriptions.At(ctx, desc, req.DatasetId, version)
	if !ok {
		return nil, versionNotFound(version, desc.Versions)
	} else if err != nil {
		return nil, err
	}
	descURL := h.Config.BaseURL + "/api/v1/datasets/" + req.DatasetId + "/openapi.json"
	if req.Params.Version != nil {
		descURL += "?version=" + version
	}
	pkg := strings.ReplaceAll(ingest.Identifiers([]string{doc.Info.Title})[0], "_", "")
	if pkg == "" || pkg[0] >= '0' && pkg[0] <= '9' {
		pkg = "dataset" + pkg
	}
	res, genErr := sdk.Generate(req.Language, sdk.Input{DatasetID: req.DatasetId, Name: doc.Info.Title, Package: pkg, Version: version,
		Server: h.Config.BaseURL, DescriptionURL: descURL, Doc: doc, JSON: raw})
	g := &store.SDKGeneration{ID: store.NewID("sdk"), DatasetID: req.DatasetId, Language: req.Language, Version: version, Status: "succeeded",
		Warnings: "[]", CreatedAt: h.Now()}
	if p := auth.FromContext(ctx); p != nil {
		g.UserID = &p.UserID
	}
	if genErr != nil {
		g.Status, g.Error = "failed", ptr(genErr.Error())
	} else {
		g.DurationMS, g.SizeBytes = res.Duration.Milliseconds(), ptr(int64(len(res.Archive)))
		w, _ := json.Marshal(append([]string{}, res.Warnings...))
		g.Warnings = string(w)
	}
	if err := store.LogSDKGeneration(ctx, h.Store.DB, g); err != nil {
		return nil, err
	}
	if genErr != nil {
		if u := (*sdk.UnrepresentableError)(nil); errors.As(genErr, &u) {
			return nil, apierr.New(http.StatusConflict, apierr.CodeConflict, u.Error()).WithDetails(map[string]any{"language": u.Language})
		}
		return nil, genErr
	}
	name := fmt.Sprintf("%s-%s-%s.zip", pkg, req.Language, version)
	return api.GetDatasetSDK200ApplicationzipResponse{Body: bytes.NewReader(res.Archive), ContentLength: int64(len(res.Archive)),
		Headers: api.GetDatasetSDK200ResponseHeaders{ContentDisposition: `attachment; filename="` + name + `"`}}, nil
}

func (h *Datasets) GetDatasetSDKLogs(ctx context.Context, req api.GetDatasetSDKLogsRequestObject) (api.GetDatasetSDKLogsResponseObject, error) {
	if _, err := h.description(ctx, req.DatasetId, nil); err != nil {
		return nil, err
	}
	gens, err := store.SDKGenerations(ctx, h.Store.DB, req.DatasetId, 100)
	if err != nil {
		return nil, err
	}
	out := api.GetDatasetSDKLogs200JSONResponse{DatasetId: req.DatasetId}
	type gen = struct {
		CreatedAt  time.Time                                                 `json:"created_at"`
		DurationMs int                                                       `json:"duration_ms"`
		Error      *string                                                   `json:"error,omitempty"`
		Id         string                                                    `json:"id"`
		Language   string                                                    `json:"language"`
		SizeBytes  *int                                                      `json:"size_bytes,omitempty"`
		Status     api.GetDatasetSDKLogs200JSONResponseBodyGenerationsStatus `json:"status"`
		Version    string                                                    `json:"version"`
		Warnings   []string                                                  `json:"warnings"`
	}
	out.Generations = []gen{}
	for _, g := range gens {
		x := gen{CreatedAt: g.CreatedAt, DurationMs: int(g.DurationMS), Error: g.Error, Id: g.ID, Language: g.Language, Version: g.Version,
			Status: api.GetDatasetSDKLogs200JSONResponseBodyGenerationsStatus(g.Status), Warnings: []string{}}
		if g.SizeBytes != nil {
			x.SizeBytes = ptr(int(*g.SizeBytes))
		}
		_ = json.Unmarshal([]byte(g.Warnings), &x.Warnings)
		out.Generations = append(out.Generations, x)
	}
	return out, nil
}
