package handlers

import (
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
