package handlers

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

	"dataplatform/apierr"
	"dataplatform/apiversions"
	"dataplatform/auth"
	"dataplatform/datasets"
	"dataplatform/docs"
	"dataplatform/gen/datasetapi"
	"dataplatform/ingest"
	"dataplatform/reqmeta"
	"dataplatform/sdk"
	"dataplatform/specgen"
	"dataplatform/store"

	"github.com/jmoiron/sqlx"
)

// history renders the dataset's description at each of its schema versions (the columns
// before the first change, then after each) and numbers them (apiversions). in is the
// current description's input; past ones differ in their columns. It also keeps, per past
// version, the input that renders it.
func (ds *Descriptions) history(ctx context.Context, d *store.Dataset, in specgen.Input) ([]apiversions.Version, map[string]specgen.Input, error) {
	changes, err := store.SchemaChanges(ctx, ds.h.Store.DB, d.ID)
	if err != nil {
		return nil, nil, err
	}
	inputs := []specgen.Input{}
	released := []store.SchemaChange{}
	first := in
	first.SchemaVersion, first.GeneratedAt = 1, d.CreatedAt
	if len(changes) > 0 {
		var cols []ingest.Column
		if err := json.Unmarshal([]byte(changes[0].ColumnsBefore), &cols); err != nil {
			return nil, nil, err
		}
		first.Table.Columns, first.SchemaVersion = cols, changes[0].SchemaVersion-1
	}
	inputs = append(inputs, first)
	released = append(released, store.SchemaChange{CreatedAt: d.CreatedAt, SchemaVersion: first.SchemaVersion})
	for i, c := range changes {
		x := in
		if i < len(changes)-1 {
			var cols []ingest.Column
			if err := json.Unmarshal([]byte(c.ColumnsAfter), &cols); err != nil {
				return nil, nil, err
			}
			x.Table.Columns = cols
		}
		x.SchemaVersion, x.GeneratedAt = c.SchemaVersion, c.CreatedAt
		inputs = append(inputs, x)
		released = append(released, c)
	}
	states := make([]apiversions.State, len(inputs))
	for i, x := range inputs {
		x.Version = "0.0.0" // the same in all: the number is what is being worked out
		doc, _, err := specgen.Render(ctx, x)
		if err != nil {
			return nil, nil, err
		}
		states[i] = apiversions.State{SchemaVersion: released[i].SchemaVersion, ReleasedAt: released[i].CreatedAt, Doc: doc}
	}
	versions, err := apiversions.History(states, ds.h.now())
	if err != nil {
		return nil, nil, err
	}
	byVersion := map[string]specgen.Input{}
	for i, v := range versions {
		x := inputs[i]
		x.Version = v.Version
		byVersion[v.Version] = x
	}
	return versions, byVersion, nil
}

// listed is x-api-versions: every version with its status and description URL.
func (ds *Descriptions) listed(datasetID string, versions []apiversions.Version) []specgen.APIVersion {
	out := make([]specgen.APIVersion, len(versions))
	for i, v := range versions {
		out[i] = specgen.APIVersion{Version: v.Version, Status: v.Status, ReleasedAt: v.ReleasedAt.UTC().Format("2006-01-02T15:04:05Z"),
			URL: ds.h.Config.BaseURL + "/api/v1/datasets/" + datasetID + "/openapi.json?version=" + v.Version}
		if v.SunsetAt != nil {
			out[i].SunsetAt = v.SunsetAt.UTC().Format("2006-01-02T15:04:05Z")
		}
	}
	return out
}

// descriptionAt is the dataset's description at version (nil: the current one) as JSON,
// and its ETag.
func (h *Datasets) descriptionAt(ctx context.Context, id string, version *string) ([]byte, string, error) {
	desc, err := h.description(ctx, id)
	if err != nil {
		return nil, "", err
	}
	current := desc.versions[len(desc.versions)-1].Version
	if version == nil || *version == current {
		return desc.JSON, desc.ETag, nil
	}
	in, ok := desc.inputs[*version]
	if !ok {
		return nil, "", versionNotFound(*version, desc.versions)
	}
	in.APIVersions = h.Descriptions().listed(id, desc.versions)
	_, raw, err := specgen.Render(ctx, in)
	return raw, fmt.Sprintf(`"%s-v%s"`, id, *version), err
}

func versionNotFound(v string, versions []apiversions.Version) error {
	known := make([]string, len(versions))
	for i, x := range versions {
		known[i] = x.Version
	}
	return apierr.NotFound("version", v).WithDetails(map[string]any{"resource": "version", "id": v, "versions": known})
}

func (h *Datasets) GetDatasetVersions(ctx context.Context, req datasetapi.GetDatasetVersionsRequestObject) (datasetapi.GetDatasetVersionsResponseObject, error) {
	desc, err := h.description(ctx, req.DatasetId)
	if err != nil {
		return nil, err
	}
	out := datasetapi.GetDatasetVersions200JSONResponse{DatasetId: req.DatasetId, Current: desc.versions[len(desc.versions)-1].Version}
	for _, v := range h.Descriptions().listed(req.DatasetId, desc.versions) {
		x := apiversions.Find(desc.versions, v.Version)
		out.Versions = append(out.Versions, datasetapi.DescriptionVersion{Version: v.Version, Status: datasetapi.DescriptionVersionStatus(x.Status),
			Level: datasetapi.DescriptionVersionLevel(x.Level), SchemaVersion: x.SchemaVersion, ReleasedAt: x.ReleasedAt, DeprecatedAt: x.DeprecatedAt,
			SunsetAt: x.SunsetAt, ChangesCount: len(x.Changes), Url: v.URL})
	}
	return out, nil
}

func changesOut(cs []apiversions.Change) []datasetapi.DescriptionChange {
	out := make([]datasetapi.DescriptionChange, len(cs))
	for i, c := range cs {
		out[i] = datasetapi.DescriptionChange{Level: datasetapi.DescriptionChangeLevel(c.Level), Id: c.ID, Text: c.Text}
		if c.Operation != "" {
			out[i].Operation = ptr(c.Operation)
		}
		if c.Path != "" {
			out[i].Path = ptr(c.Path)
		}
	}
	return out
}

func (h *Datasets) GetDatasetChangelog(ctx context.Context, req datasetapi.GetDatasetChangelogRequestObject) (datasetapi.GetDatasetChangelogResponseObject, error) {
	desc, err := h.description(ctx, req.DatasetId)
	if err != nil {
		return nil, err
	}
	markdown := req.Params.Format != nil && *req.Params.Format == "markdown" ||
		req.Params.Format == nil && strings.Contains(reqmeta.From(ctx).Accept, "text/markdown")
	if markdown {
		var b strings.Builder
		fmt.Fprintf(&b, "# %s changelog\n", desc.Doc.Info.Title)
		for i := len(desc.versions) - 1; i >= 0; i-- {
			v := desc.versions[i]
			fmt.Fprintf(&b, "\n## %s (%s) - %s\n\n", v.Version, v.Level, v.ReleasedAt.UTC().Format("2006-01-02"))
			if len(v.Changes) == 0 {
				b.WriteString("- first version\n")
			}
			for _, c := range v.Changes {
				fmt.Fprintf(&b, "- **%s** `%s %s`: %s\n", c.Level, c.Operation, c.Path, c.Text)
			}
		}
		return datasetapi.GetDatasetChangelog200TextmarkdownResponse{Body: strings.NewReader(b.String()), ContentLength: int64(b.Len())}, nil
	}
	out := datasetapi.GetDatasetChangelog200JSONResponse{DatasetId: req.DatasetId, Current: desc.versions[len(desc.versions)-1].Version}
	for i := len(desc.versions) - 1; i >= 0; i-- {
		v := desc.versions[i]
		out.Versions = append(out.Versions, struct {
			Changes    []datasetapi.DescriptionChange                                 `json:"changes"`
			Level      datasetapi.GetDatasetChangelog200JSONResponseBodyVersionsLevel `json:"level"`
			ReleasedAt time.Time                                                      `json:"released_at"`
			Version    string                                                         `json:"version"`
		}{changesOut(v.Changes), datasetapi.GetDatasetChangelog200JSONResponseBodyVersionsLevel(v.Level), v.ReleasedAt, v.Version})
	}
	return out, nil
}

func (h *Datasets) GetDatasetCompatibility(ctx context.Context, req datasetapi.GetDatasetCompatibilityRequestObject) (datasetapi.GetDatasetCompatibilityResponseObject, error) {
	desc, err := h.description(ctx, req.DatasetId)
	if err != nil {
		return nil, err
	}
	from, to := req.Params.From, desc.versions[len(desc.versions)-1].Version
	if req.Params.To != nil {
		to = *req.Params.To
	}
	for _, v := range []string{from, to} {
		if apiversions.Find(desc.versions, v) == nil {
			return nil, versionNotFound(v, desc.versions)
		}
	}
	changes, err := apiversions.Between(desc.versions, from, to)
	if err != nil {
		return nil, apierr.Field("query.from", "order", "from must be a version before to")
	}
	out := datasetapi.GetDatasetCompatibility200JSONResponse{From: from, To: to, Changes: changesOut(changes), BreakingChanges: []datasetapi.DescriptionChange{}}
	for _, c := range out.Changes {
		if c.Level == "breaking" {
			out.BreakingChanges = append(out.BreakingChanges, c)
		}
	}
	out.Compatible = len(out.BreakingChanges) == 0
	return out, nil
}

// VersionHeaders are the response headers of a record request made against version (the
// client's X-API-Version): Deprecation (RFC 9745), Sunset (RFC 8594) and a successor-version
// link when it is not the current one; none when version is empty or current. An unknown
// version is a validation error.
func (d *Description) VersionHeaders(datasetID, baseURL, version string) (map[string]string, error) {
	if version == "" {
		return nil, nil
	}
	v := apiversions.Find(d.versions, version)
	if v == nil {
		known := make([]string, len(d.versions))
		for i, x := range d.versions {
			known[i] = x.Version
		}
		return nil, apierr.Field("header.X-API-Version", "enum", "no version "+version+" of this dataset's API; versions: "+strings.Join(known, ", "))
	}
	if v.DeprecatedAt == nil {
		return nil, nil
	}
	h := map[string]string{
		"Deprecation": fmt.Sprintf("@%d", v.DeprecatedAt.Unix()),
		"Link":        fmt.Sprintf(`<%s/api/v1/datasets/%s/openapi.json>; rel="successor-version"`, baseURL, datasetID),
	}
	if v.SunsetAt != nil {
		h["Sunset"] = v.SunsetAt.UTC().Format(http.TimeFormat)
	}
	return h, nil
}

// GetDatasetJSONSchema is a record of the dataset (at a version) as JSON Schema 2020-12.
func (h *Datasets) GetDatasetJSONSchema(ctx context.Context, req datasetapi.GetDatasetJSONSchemaRequestObject) (datasetapi.GetDatasetJSONSchemaResponseObject, error) {
	raw, _, err := h.descriptionAt(ctx, req.DatasetId, req.Params.Version)
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
	desc, err := h.description(ctx, req.DatasetId)
	if err != nil {
		return nil, err
	}
	record, ok := doc.Components.Schemas[desc.singular].(map[string]any)
	if !ok {
		return nil, fmt.Errorf("the description has no %s schema", desc.singular)
	}
	out := jsonSchema(record).(map[string]any)
	out["$schema"] = "https://json-schema.org/draft/2020-12/schema"
	out["$id"] = h.Config.BaseURL + "/api/v1/datasets/" + req.DatasetId + "/schema?version=" + doc.Info.Version
	out["title"] = desc.singular
	out["x-version"] = doc.Info.Version
	defs := map[string]any{}
	for _, kind := range []string{"Create", "Update"} {
		if s, ok := doc.Components.Schemas[desc.singular+kind]; ok {
			defs[desc.singular+kind] = jsonSchema(s)
		}
	}
	out["$defs"] = defs
	return datasetapi.GetDatasetJSONSchema200ApplicationSchemaPlusJSONResponse(out), nil
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

// errDryRun rolls a dry run's transaction back.
var errDryRun = errors.New("dry run")

// ValidateDatasetSchema applies a schema change in a transaction it rolls back, and says
// what the change would release.
func (h *Datasets) ValidateDatasetSchema(ctx context.Context, req datasetapi.ValidateDatasetSchemaRequestObject) (datasetapi.ValidateDatasetSchemaResponseObject, error) {
	p, err := auth.Caller(ctx)
	if err != nil {
		return nil, err
	}
	var after []ingest.Column
	err = h.Store.Tx(ctx, func(tx *sqlx.Tx) error {
		var err error
		if _, _, after, err = h.alterSchema(ctx, tx, p, req.DatasetId, req.Body); err != nil {
			return err
		}
		return errDryRun
	})
	desc, derr := h.description(ctx, req.DatasetId)
	if derr != nil {
		return nil, derr
	}
	current := desc.versions[len(desc.versions)-1]
	out := datasetapi.ValidateDatasetSchema200JSONResponse{CurrentVersion: current.Version, Valid: true, BreakingChanges: []datasetapi.DescriptionChange{},
		Changes: []datasetapi.DescriptionChange{}, Violations: []map[string]any{}}
	var ae *apierr.Error
	switch {
	case errors.As(err, &ae) && ae.Code == "SCHEMA_VIOLATION":
		out.Valid = false
		b, _ := json.Marshal(ae.Details.(map[string]any)["violations"])
		if err := json.Unmarshal(b, &out.Violations); err != nil {
			return nil, err
		}
		return out, nil
	case !errors.Is(err, errDryRun):
		return nil, busy(err)
	}
	in := desc.inputs[current.Version]
	in.Table.Columns, in.Version, in.SchemaVersion = after, "0.0.0", in.SchemaVersion+1
	next, _, err := specgen.Render(ctx, in)
	if err != nil {
		return nil, err
	}
	changes, changed, err := apiversions.Compare(desc.Doc, next)
	if err != nil {
		return nil, err
	}
	level := apiversions.Level(changes, changed)
	if level == "" {
		level = "patch"
	}
	v, _ := apiversions.Parse(current.Version)
	out.NextVersion, out.Level = ptr(v.Bump(level).String()), ptr(datasetapi.ValidateDatasetSchema200JSONResponseBodyLevel(level))
	out.Changes = changesOut(changes)
	for _, c := range out.Changes {
		if c.Level == "breaking" {
			out.BreakingChanges = append(out.BreakingChanges, c)
		}
	}
	cols := columnsOut(after)
	out.Columns = &cols
	return out, nil
}

// samples are the sample values of a table's columns from the dataset's last analysis, as
// text (the description marks columns that hold personal data with them).
func (ds *Descriptions) samples(ctx context.Context, datasetID, table string) (map[string][]string, error) {
	raw, err := store.DatasetStatistics(ctx, ds.h.Store.DB, datasetID)
	if err != nil {
		return nil, err
	}
	var st datasets.Statistics
	if json.Unmarshal([]byte(raw), &st) != nil || st.Tables[table] == nil {
		return nil, nil
	}
	out := map[string][]string{}
	for col, cs := range st.Tables[table].Columns {
		for _, v := range cs.SampleValues {
			if s, ok := v.(string); ok {
				out[col] = append(out[col], s)
			}
		}
	}
	return out, nil
}

// docsPage answers a documentation page of the dataset's current description.
type docsPage struct {
	kind, title string
	spec        any
}

func (p docsPage) write(w http.ResponseWriter) error { return docs.Render(w, p.kind, p.title, p.spec) }

func (p docsPage) VisitGetDatasetDocsResponse(w http.ResponseWriter) error  { return p.write(w) }
func (p docsPage) VisitGetDatasetRedocResponse(w http.ResponseWriter) error { return p.write(w) }

func (h *Datasets) docsPage(ctx context.Context, id, kind string) (docsPage, error) {
	desc, err := h.description(ctx, id)
	if err != nil {
		return docsPage{}, err
	}
	var spec any
	if err := json.Unmarshal(desc.JSON, &spec); err != nil {
		return docsPage{}, err
	}
	return docsPage{kind: kind, title: desc.Doc.Info.Title, spec: spec}, nil
}

func (h *Datasets) GetDatasetDocs(ctx context.Context, req datasetapi.GetDatasetDocsRequestObject) (datasetapi.GetDatasetDocsResponseObject, error) {
	return h.docsPage(ctx, req.DatasetId, docs.Swagger)
}

func (h *Datasets) GetDatasetRedoc(ctx context.Context, req datasetapi.GetDatasetRedocRequestObject) (datasetapi.GetDatasetRedocResponseObject, error) {
	return h.docsPage(ctx, req.DatasetId, docs.Redoc)
}

// GetDatasetSDK generates a client package of the dataset's current description.
func (h *Datasets) GetDatasetSDK(ctx context.Context, req datasetapi.GetDatasetSDKRequestObject) (datasetapi.GetDatasetSDKResponseObject, error) {
	desc, err := h.description(ctx, req.DatasetId)
	if err != nil {
		return nil, err
	}
	if !slices.Contains(sdk.Languages, req.Language) {
		return nil, apierr.NotFound("sdk language", req.Language).WithDetails(map[string]any{"resource": "sdk language", "id": req.Language,
			"supported_languages": sdk.Languages})
	}
	version := desc.versions[len(desc.versions)-1].Version
	pkg := strings.ReplaceAll(ingest.Identifiers([]string{desc.Doc.Info.Title})[0], "_", "")
	if pkg == "" || pkg[0] >= '0' && pkg[0] <= '9' {
		pkg = "dataset" + pkg
	}
	res, genErr := sdk.Generate(req.Language, sdk.Input{DatasetID: req.DatasetId, Name: desc.Doc.Info.Title, Package: pkg, Version: version,
		Server: h.Config.BaseURL, DescriptionURL: h.Config.BaseURL + "/api/v1/datasets/" + req.DatasetId + "/openapi.json", Doc: desc.Doc, JSON: desc.JSON})
	g := &store.SDKGeneration{ID: store.NewID("sdk"), DatasetID: req.DatasetId, Language: req.Language, Version: version, Status: "succeeded",
		Warnings: "[]", CreatedAt: h.now()}
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
		return nil, genErr
	}
	name := fmt.Sprintf("%s-%s-%s.zip", pkg, req.Language, version)
	return datasetapi.GetDatasetSDK200ApplicationzipResponse{Body: bytes.NewReader(res.Archive), ContentLength: int64(len(res.Archive)),
		Headers: datasetapi.GetDatasetSDK200ResponseHeaders{ContentDisposition: `attachment; filename="` + name + `"`}}, nil
}

func (h *Datasets) GetDatasetSDKLogs(ctx context.Context, req datasetapi.GetDatasetSDKLogsRequestObject) (datasetapi.GetDatasetSDKLogsResponseObject, error) {
	if _, err := h.description(ctx, req.DatasetId); err != nil {
		return nil, err
	}
	gens, err := store.SDKGenerations(ctx, h.Store.DB, req.DatasetId, 100)
	if err != nil {
		return nil, err
	}
	out := datasetapi.GetDatasetSDKLogs200JSONResponse{DatasetId: req.DatasetId}
	type gen = struct {
		CreatedAt  time.Time                                                        `json:"created_at"`
		DurationMs int                                                              `json:"duration_ms"`
		Error      *string                                                          `json:"error,omitempty"`
		Id         string                                                           `json:"id"`
		Language   string                                                           `json:"language"`
		SizeBytes  *int                                                             `json:"size_bytes,omitempty"`
		Status     datasetapi.GetDatasetSDKLogs200JSONResponseBodyGenerationsStatus `json:"status"`
		Version    string                                                           `json:"version"`
		Warnings   []string                                                         `json:"warnings"`
	}
	out.Generations = []gen{}
	for _, g := range gens {
		x := gen{CreatedAt: g.CreatedAt, DurationMs: int(g.DurationMS), Error: g.Error, Id: g.ID, Language: g.Language, Version: g.Version,
			Status: datasetapi.GetDatasetSDKLogs200JSONResponseBodyGenerationsStatus(g.Status), Warnings: []string{}}
		if g.SizeBytes != nil {
			x.SizeBytes = ptr(int(*g.SizeBytes))
		}
		_ = json.Unmarshal([]byte(g.Warnings), &x.Warnings)
		out.Generations = append(out.Generations, x)
	}
	return out, nil
}
