package handlers

// The versions of a dataset's description: their history, changelog and compatibility, the
// deprecation headers of requests made against an old one, and the dry run of a schema change.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"dataplatform/gen/api"
	"dataplatform/handlers/apierr"
	"dataplatform/handlers/auth"
	"dataplatform/handlers/reqmeta"
	"dataplatform/store/ingest"
	"dataplatform/templates/apiversions"
	"dataplatform/templates/descriptions"

	"github.com/jmoiron/sqlx"
)

// descriptionAt is the dataset's description at version (nil: the current one) as JSON,
// its ETag, and the current description it comes from. An older version is rendered once per
// description and kept with it.
func (h *Datasets) descriptionAt(ctx context.Context, id string, table, version *string) ([]byte, string, *descriptions.Description, error) {
	desc, err := h.description(ctx, id, table)
	if err != nil {
		return nil, "", nil, err
	}
	if version == nil || *version == desc.Current() {
		raw, err := desc.JSON()
		return raw, desc.ETag, desc, err
	}
	raw, ok, err := h.Descriptions.Past(ctx, desc, id, *version)
	if !ok {
		return nil, "", nil, versionNotFound(*version, desc.Versions)
	} else if err != nil {
		return nil, "", nil, err
	}
	return raw, fmt.Sprintf(`"%s-v%s"`, id, *version), desc, nil
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
	out := api.GetDatasetVersions200JSONResponse{DatasetId: req.DatasetId, Current: desc.Current()}
	for _, v := range h.Descriptions.Listed(req.DatasetId, desc.Versions) {
		x := apiversions.Find(desc.Versions, v.Version)
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
		for i := len(desc.Versions) - 1; i >= 0; i-- {
			v := desc.Versions[i]
			fmt.Fprintf(&b, "\n## %s (%s) - %s\n\n", v.Version, v.Level, v.ReleasedAt.UTC().Format("2006-01-02"))
			if len(v.Changes) == 0 && i == 0 {
				b.WriteString("- first version\n")
			} else if len(v.Changes) == 0 {
				b.WriteString("- no change of the API itself (documentation only)\n")
			}
			for _, c := range v.Changes {
				fmt.Fprintf(&b, "- **%s** `%s %s`: %s\n", c.Level, c.Operation, c.Path, c.Text)
			}
		}
		return api.GetDatasetChangelog200TextmarkdownResponse{Body: strings.NewReader(b.String()), ContentLength: int64(b.Len())}, nil
	}
	out := api.GetDatasetChangelog200JSONResponse{DatasetId: req.DatasetId, Current: desc.Current()}
	for i := len(desc.Versions) - 1; i >= 0; i-- {
		v := desc.Versions[i]
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
	from, to := req.Params.From, desc.Current()
	if req.Params.To != nil {
		to = *req.Params.To
	}
	for _, v := range []string{from, to} {
		if apiversions.Find(desc.Versions, v) == nil {
			return nil, versionNotFound(v, desc.Versions)
		}
	}
	changes, err := apiversions.Between(desc.Versions, from, to)
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
	current := desc.Current()
	out := api.ValidateDatasetSchema200JSONResponse{CurrentVersion: current, Valid: true, BreakingChanges: []api.DescriptionChange{},
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
	next, err := desc.WithColumns(ctx, after)
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
	v, _ := apiversions.Parse(current)
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
