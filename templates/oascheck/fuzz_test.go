package oascheck

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
)

// FuzzCheck gives the OpenAPI validate endpoint's checker arbitrary JSON or YAML (the
// endpoint passes the body through as it came). Invariants: it answers, Valid exactly when it
// lists no problem, every problem's path is "" or a JSON pointer, and a document it calls
// valid is still valid after a round trip through kin-openapi's JSON form.
func FuzzCheck(f *testing.F) {
	for _, s := range []string{
		"openapi: 3.0.3\ninfo: {title: Shop, version: 1.0.0}\npaths:\n  /items:\n    get:\n      operationId: listItems\n      responses:\n        '200': {description: ok}\n",
		`{"openapi": "3.0.3", "info": {"title": "Shop"}, "paths": {"/items": {"get": {"responses": {}}}}, "components": {"schemas": {"Item": {"type": "object", "properties": {"n": {"type": "integr"}}}}}}`,
		"openapi: [",
		`{"openapi": "3.0.0", "info": {"title": "t", "version": "1"}, "paths": {}, "components": {"schemas": {"A": {"$ref": "#/components/schemas/B"}, "B": {"$ref": "#/components/schemas/A"}}}}`,
		`{"openapi": "3.0.0", "info": {"title": "t", "version": "1"}, "paths": {"/a": {"$ref": "#/paths/~1a"}}}`,
		"openapi: 3.0.0\ninfo: &i {title: t, version: '1'}\nx-a: [*i, *i, *i]\npaths: {}\n",
		`{"openapi": "3.1.0", "info": {"title": "t", "version": "1"}, "paths": {"/x": {"get": {"responses": {"200": {"$ref": "http://example.com/r.json"}}}}}}`,
		`{"openapi": "3.0.3", "info": {"title": "t", "version": "1"}, "paths": {"/p/{id}": {"parameters": [{"name": "id", "in": "path", "required": true, "schema": {"type": "string", "pattern": "(a+)+$"}}], "get": {"responses": {"default": {"description": "d"}}}}}}`,
	} {
		f.Add([]byte(s))
	}
	ctx := context.Background()
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 16<<10 {
			t.Skip()
		}
		r := Check(ctx, data)
		if r.Valid != (len(r.Errors) == 0) {
			t.Fatalf("valid %v with %d problems: %+v", r.Valid, len(r.Errors), r.Errors)
		}
		for _, p := range r.Errors {
			if p.Path != "" && p.Path[0] != '/' {
				t.Fatalf("problem path %q is not a JSON pointer", p.Path)
			}
		}
		if !r.Valid {
			return
		}
		loader := openapi3.NewLoader()
		loader.IsExternalRefsAllowed = false
		doc, err := loader.LoadFromData(data)
		if err != nil {
			t.Fatalf("valid, but does not load again: %v", err)
		}
		j, err := json.Marshal(doc)
		if err != nil {
			return
		}
		if r2 := Check(ctx, j); !r2.Valid {
			t.Fatalf("valid, but its JSON form %s is not: %+v", j, r2.Errors)
		}
	})
}
