package handlers

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"

	"dataplatform/gen/api"
	"dataplatform/handlers/apierr"
	"dataplatform/handlers/auth"
	"dataplatform/store"
	"dataplatform/templates/descriptions"

	"gopkg.in/yaml.v3"
)

func (h *Datasets) GetDatasetDescription(ctx context.Context, req api.GetDatasetDescriptionRequestObject) (api.GetDatasetDescriptionResponseObject, error) {
	raw, etag, _, err := h.descriptionAt(ctx, req.DatasetId, req.Params.Table, req.Params.Version)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, err
	}
	return api.GetDatasetDescription200JSONResponse{Body: m, Headers: api.GetDatasetDescription200ResponseHeaders{ETag: &etag}}, nil
}

func (h *Datasets) GetDatasetDescriptionYAML(ctx context.Context, req api.GetDatasetDescriptionYAMLRequestObject) (api.GetDatasetDescriptionYAMLResponseObject, error) {
	raw, etag, _, err := h.descriptionAt(ctx, req.DatasetId, req.Params.Table, req.Params.Version)
	if err != nil {
		return nil, err
	}
	var node yaml.Node // keeps the JSON document's key order
	if err := yaml.Unmarshal(raw, &node); err != nil {
		return nil, err
	}
	blockStyle(&node)
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(&node); err != nil {
		return nil, err
	}
	return api.GetDatasetDescriptionYAML200ApplicationyamlResponse{Body: &buf, ContentLength: int64(buf.Len()),
		Headers: api.GetDatasetDescriptionYAML200ResponseHeaders{ETag: &etag}}, nil
}

// blockStyle turns a node parsed from JSON (flow style, quoted strings) into ordinary YAML.
func blockStyle(n *yaml.Node) {
	if n.Kind == yaml.ScalarNode && n.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle) != 0 {
		n.Style = 0 // the encoder quotes again where YAML needs it
	} else if n.Kind != yaml.ScalarNode {
		n.Style = 0
	}
	for _, c := range n.Content {
		blockStyle(c)
	}
}

func (h *Datasets) description(ctx context.Context, id string, table *string) (*descriptions.Description, error) {
	d, desc, err := h.ResolveRecords(ctx, id, deref(table))
	if err != nil {
		return nil, err
	}
	_, err = h.Allow(ctx, d.OrgID, d.Reach, "datasets:list")
	return desc, err
}

// ResolveRecords finds a dataset the caller is a member of and the description of one of its tables
// (table "": the first; a connected database's dataset has one per table): 404 otherwise, 409
// while it does not serve its rows (before its first load; an import does not stop them), 400
// for a table it does not have.
func (h *Handlers) ResolveRecords(ctx context.Context, datasetID, table string) (*store.Dataset, *descriptions.Description, error) {
	p, err := auth.Caller(ctx)
	if err != nil {
		return nil, nil, err
	}
	d, err := h.Store.DatasetForRecords(ctx, datasetID, p.UserID)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil, apierr.New(http.StatusNotFound, apierr.CodeDatasetNotFound, "dataset not found").WithDetails(map[string]any{"dataset_id": datasetID})
	} else if err != nil {
		return nil, nil, err
	}
	if err := serving(d, "its API is served"); err != nil {
		return nil, nil, err
	}
	desc, err := h.Descriptions.Describe(ctx, d, table)
	return d, desc, err
}
