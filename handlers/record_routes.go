package handlers

import (
	"context"
	"log/slog"
	"net/http"

	"dataplatform/store"
	"dataplatform/templates/descriptions"

	"github.com/labstack/echo/v4"
)

// Route is an operation served outside the generated interface: the record API, whose
// operations each dataset's own description publishes at Template. The server mounts the routes
// it is given, validates each request against the dataset's description at Template, and leaves
// the resolved dataset for Handler (RecordTargetOf).
type Route struct {
	Method   string
	Template string // the OpenAPI path template, e.g. /api/v1/datasets/{dataset_id}/data/{id}
	Category string // the rate-limit category
	Handler  echo.HandlerFunc
}

// RecordTarget is what the server's validation resolved for a record API request.
type RecordTarget struct {
	Dataset     *store.Dataset
	Description *descriptions.Description
}

const recordTargetKey = "record_dataset"

// WithRecordTarget leaves t in c for the record handler.
func WithRecordTarget(c echo.Context, t *RecordTarget) { c.Set(recordTargetKey, t) }

// RecordTargetOf is the RecordTarget the server left in c.
func RecordTargetOf(c echo.Context) (*RecordTarget, bool) {
	t, ok := c.Get(recordTargetKey).(*RecordTarget)
	return t, ok
}

// Dispatch runs the API operation at method and target (path and query) in process for the
// caller already authenticated in ctx, with the routing, rate limits, validation and handler
// of the REST call; the answer is written to w, a refusal returned as the *apierr.Error the
// API would render.
type Dispatch func(ctx context.Context, method, target string, body []byte, w http.ResponseWriter) error

// Agents is a protocol served beside the API whose operations run through Dispatch (the MCP
// server): Handler at Path for GET, POST and DELETE behind the API's authentication and body
// limit, in its own rate-limit category; Metadata at each MetadataPaths entry, public; 401s
// name MetadataPaths[0] as their resource_metadata.
type Agents struct {
	Path          string
	Category      string
	Handler       http.Handler
	Metadata      http.Handler
	MetadataPaths []string
}

// AgentsFunc builds the Agents over the handlers, the dispatcher and the server's logger.
type AgentsFunc func(h *Handlers, d Dispatch, log *slog.Logger) Agents
