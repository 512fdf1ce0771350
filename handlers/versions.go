package handlers

// The versions of a dataset's description: their history, changelog and compatibility, the
// deprecation headers of requests made against an old one, and the dry run of a schema change.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"time"

	"dataplatform/gen/api"
	"dataplatform/handlers/apierr"
	"dataplatform/handlers/auth"
	"dataplatform/handlers/reqmeta"
	"dataplatform/store"
	"dataplatform/store/datasets"
	"dataplatform/store/ingest"
	"dataplatform/templates/apiversions"
	"dataplatform/templates/specgen"

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
	// A state is the served table as it was: an uploaded dataset's changes keep its columns;
	// a connected dataset's keep all its tables (a table that did not exist yet has no state).
	at := func(raw string, x *specgen.Input) (bool, error) {
		if !in.Table.Foreign {
			var cols []ingest.Column // a new slice: x shares in's
			err := json.Unmarshal([]byte(raw), &cols)
			x.Table.Columns = cols
			return true, err
		}
		var ts []datasets.TableDef
		if err := json.Unmarshal([]byte(raw), &ts); err != nil {
			return false, err
		}
		for _, t := range ts {
			if t.Name == in.Table.Name {
				x.Table = t
				return true, nil
			}
		}
		return false, nil
	}
	first := in
	first.SchemaVersion, first.GeneratedAt = 1, d.CreatedAt
	keep := true
	if len(changes) > 0 {
		var err error
		if keep, err = at(changes[0].ColumnsBefore, &first); err != nil {
			return nil, nil, err
		}
		first.SchemaVersion = changes[0].SchemaVersion - 1
	}
	if keep {
		inputs = append(inputs, first)
		released = append(released, store.SchemaChange{CreatedAt: d.CreatedAt, SchemaVersion: first.SchemaVersion})
	}
	for i, c := range changes {
		x := in
		if i < len(changes)-1 {
			ok, err := at(c.ColumnsAfter, &x)
			if err != nil {
				return nil, nil, err
			}
			if !ok {
				continue
			}
		}
		if in.Table.Foreign && len(inputs) > 0 && reflect.DeepEqual(inputs[len(inputs)-1].Table, x.Table) {
			continue // another table of the database changed: this one's description did not
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
// its ETag, and the current description it comes from. An older version is rendered once per
// description and kept with it.
func (h *Datasets) descriptionAt(ctx context.Context, id string, table, version *string) ([]byte, string, *Description, error) {
	desc, err := h.description(ctx, id, table)
	if err != nil {
		return nil, "", nil, err
	}
	current := desc.versions[len(desc.versions)-1].Version
	if version == nil || *version == current {
		return desc.JSON, desc.ETag, desc, nil
	}
	in, ok := desc.inputs[*version]
	if !ok {
		return nil, "", nil, versionNotFound(*version, desc.versions)
	}
	etag := fmt.Sprintf(`"%s-v%s"`, id, *version)
	desc.pastMu.Lock()
	defer desc.pastMu.Unlock()
	if raw, ok := desc.past[*version]; ok {
		return raw, etag, desc, nil
	}
	in.APIVersions = h.Descriptions().listed(id, desc.versions)
	_, raw, err := specgen.Render(ctx, in)
	if err != nil {
		return nil, "", nil, err
	}
	if desc.past == nil {
		desc.past = map[string][]byte{}
	}
	desc.past[*version] = raw
	return raw, etag, desc, nil
}

func versionNotFound(v string, versions []apiversions.Version) error {
	known := make([]string, len(versions))
	for i, x := range versions {
		known[i] = x.Version
	}
	return apierr.NotFound("version", v).WithDetails(map[string]any{"resource": "version", "id": v, "versions": known})
}

func (h *Datasets) GetDatasetVersions(ctx context.Context, req api.GetDatasetVersionsRequestObject) (api.GetDatasetVersionsResponseObject, error) {
	desc, err := h.description(ctx, req.DatasetId, req.Params.Table)
	if err != nil {
		return nil, err
	}
	out := api.GetDatasetVersions200JSONResponse{DatasetId: req.DatasetId, Current: desc.versions[len(desc.versions)-1].Version}
	for _, v := range h.Descriptions().listed(req.DatasetId, desc.versions) {
		x := apiversions.Find(desc.versions, v.Version)
		out.Versions = append(out.Versions, api.DescriptionVersion{Version: v.Version, Status: api.DescriptionVersionStatus(x.Status),
			Level: api.DescriptionVersionLevel(x.Level), SchemaVersion: x.SchemaVersion, ReleasedAt: x.ReleasedAt, DeprecatedAt: x.DeprecatedAt,
			SunsetAt: x.SunsetAt, ChangesCount: len(x.Changes), Url: v.URL})
	}
	return out, nil
}

func changesOut(cs []apiversions.Change) []api.DescriptionChange {
	out := make([]api.DescriptionChange, len(cs))
	for i, c := range cs {
		out[i] = api.DescriptionChange{Level: api.DescriptionChangeLevel(c.Level), Id: c.ID, Text: c.Text}
		if c.Operation != "" {
			out[i].Operation = ptr(c.Operation)
		}
		if c.Path != "" {
			out[i].Path = ptr(c.Path)
		}
	}
	return out
}

func (h *Datasets) GetDatasetChangelog(ctx context.Context, req api.GetDatasetChangelogRequestObject) (api.GetDatasetChangelogResponseObject, error) {
	desc, err := h.description(ctx, req.DatasetId, req.Params.Table)
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
		return api.GetDatasetChangelog200TextmarkdownResponse{Body: strings.NewReader(b.String()), ContentLength: int64(b.Len())}, nil
	}
	out := api.GetDatasetChangelog200JSONResponse{DatasetId: req.DatasetId, Current: desc.versions[len(desc.versions)-1].Version}
	for i := len(desc.versions) - 1; i >= 0; i-- {
		v := desc.versions[i]
		out.Versions = append(out.Versions, struct {
			Changes    []api.DescriptionChange                                 `json:"changes"`
			Level      api.GetDatasetChangelog200JSONResponseBodyVersionsLevel `json:"level"`
			ReleasedAt time.Time                                               `json:"released_at"`
			Version    string                                                  `json:"version"`
		}{changesOut(v.Changes), api.GetDatasetChangelog200JSONResponseBodyVersionsLevel(v.Level), v.ReleasedAt, v.Version})
	}
	return out, nil
}

func (h *Datasets) GetDatasetCompatibility(ctx context.Context, req api.GetDatasetCompatibilityRequestObject) (api.GetDatasetCompatibilityResponseObject, error) {
	desc, err := h.description(ctx, req.DatasetId, req.Params.Table)
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
	out := api.GetDatasetCompatibility200JSONResponse{From: from, To: to, Changes: changesOut(changes), BreakingChanges: []api.DescriptionChange{}}
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

// errDryRun rolls a dry run's transaction back.
var errDryRun = errors.New("dry run")

// ValidateDatasetSchema applies a schema change in a transaction it rolls back, and says
// what the change would release.
func (h *Datasets) ValidateDatasetSchema(ctx context.Context, req api.ValidateDatasetSchemaRequestObject) (api.ValidateDatasetSchemaResponseObject, error) {
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
	desc, derr := h.description(ctx, req.DatasetId, nil)
	if derr != nil {
		return nil, derr
	}
	current := desc.versions[len(desc.versions)-1]
	out := api.ValidateDatasetSchema200JSONResponse{CurrentVersion: current.Version, Valid: true, BreakingChanges: []api.DescriptionChange{},
		Changes: []api.DescriptionChange{}, Violations: []map[string]any{}}
	var ae *apierr.Error
	switch {
	case errors.As(err, &ae) && ae.Code == apierr.CodeSchemaViolation:
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
	out.NextVersion, out.Level = ptr(v.Bump(level).String()), ptr(api.ValidateDatasetSchema200JSONResponseBodyLevel(level))
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
