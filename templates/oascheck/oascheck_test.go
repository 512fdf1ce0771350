package oascheck

import (
	"context"
	"strings"
	"testing"
)

func TestCheck(t *testing.T) {
	good := `openapi: 3.0.3
info: {title: Shop, version: 1.0.0}
paths:
  /items:
    get:
      operationId: listItems
      responses:
        '200': {description: ok}
`
	if r := Check(context.Background(), []byte(good)); !r.Valid || r.Paths != 1 || r.Operations != 1 || r.Title != "Shop" {
		t.Fatalf("valid: %+v", r)
	}
	bad := `{"openapi": "3.0.3", "info": {"title": "Shop"},
 "paths": {"/items": {"get": {"responses": {}}}, "/x/{id}": {"get": {"parameters": [{"name": "id", "in": "path", "schema": {"type": "string"}}], "responses": {"200": {"description": "ok"}}}}},
 "components": {"schemas": {"Item": {"type": "object", "properties": {"n": {"type": "integr"}}}}}}`
	r := Check(context.Background(), []byte(bad))
	var paths []string
	for _, e := range r.Errors {
		paths = append(paths, e.Path)
	}
	got := strings.Join(paths, " ")
	for _, want := range []string{"/info", "/paths/~1items/get", "/paths/~1x~1{id}/get", "/components/schemas/Item"} {
		if !strings.Contains(" "+got+" ", " "+want+" ") {
			t.Errorf("no error at %s: %+v", want, r.Errors)
		}
	}
	if r.Valid {
		t.Fatal("an invalid document passed")
	}
	if r := Check(context.Background(), []byte("openapi: [")); r.Valid || r.Errors[0].Path != "" {
		t.Fatalf("syntax error: %+v", r)
	}
}
