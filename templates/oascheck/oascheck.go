// Package oascheck validates an OpenAPI 3.0 description and says where each problem is, as a
// JSON pointer: kin-openapi validates each part (info, each path's operations, each
// component) on its own, so one problem does not hide the others.
package oascheck

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
)

// Problem is one thing wrong with a description.
type Problem struct {
	Path    string `json:"path"` // JSON pointer into the document ("" for the whole)
	Message string `json:"message"`
}

// Result is what Check found.
type Result struct {
	Valid      bool      `json:"valid"`
	Errors     []Problem `json:"errors"`
	OpenAPI    string    `json:"openapi,omitempty"`
	Title      string    `json:"title,omitempty"`
	Version    string    `json:"version,omitempty"`
	Paths      int       `json:"paths"`
	Operations int       `json:"operations"`
}

// pointer escapes a JSON pointer segment.
func pointer(segs ...string) string {
	var b strings.Builder
	for _, s := range segs {
		b.WriteString("/" + strings.NewReplacer("~", "~0", "/", "~1").Replace(s))
	}
	return b.String()
}

// Check loads data (JSON or YAML) as an OpenAPI 3.0 description and validates it.
func Check(ctx context.Context, data []byte) Result {
	r := Result{Errors: []Problem{}}
	loader := openapi3.NewLoader()
	loader.IsExternalRefsAllowed = false
	doc, err := loader.LoadFromData(data)
	if err != nil {
		r.Errors = append(r.Errors, Problem{Path: "", Message: "not a loadable OpenAPI document: " + err.Error()})
		return r
	}
	r.OpenAPI = doc.OpenAPI
	add := func(path string, err error) {
		if err != nil {
			r.Errors = append(r.Errors, Problem{Path: path, Message: err.Error()})
		}
	}
	if !strings.HasPrefix(doc.OpenAPI, "3.0") {
		add("/openapi", fmt.Errorf("the openapi field must be a 3.0.x version, got %q", doc.OpenAPI))
	}
	if doc.Info == nil {
		add("/info", errors.New("info is required"))
	} else {
		r.Title, r.Version = doc.Info.Title, doc.Info.Version
		add("/info", doc.Info.Validate(ctx))
	}
	if doc.Paths == nil || doc.Paths.Len() == 0 {
		add("/paths", errors.New("paths is required (it may be empty in 3.1, not in 3.0)"))
	} else {
		keys := doc.Paths.InMatchingOrder()
		sort.Strings(keys)
		for _, p := range keys {
			item := doc.Paths.Value(p)
			r.Paths++
			if !strings.HasPrefix(p, "/") {
				add(pointer("paths", p), errors.New("a path must begin with /"))
			}
			for method, op := range item.Operations() {
				r.Operations++
				add(pointer("paths", p, strings.ToLower(method)), op.Validate(ctx))
			}
			for i, prm := range item.Parameters {
				add(pointer("paths", p, "parameters", fmt.Sprint(i)), prm.Validate(ctx))
			}
		}
	}
	c := doc.Components
	if c != nil {
		for _, name := range sortedKeys(c.Schemas) {
			add(pointer("components", "schemas", name), c.Schemas[name].Validate(ctx))
		}
		for _, name := range sortedKeys(c.Parameters) {
			add(pointer("components", "parameters", name), c.Parameters[name].Validate(ctx))
		}
		for _, name := range sortedKeys(c.Responses) {
			add(pointer("components", "responses", name), c.Responses[name].Validate(ctx))
		}
		for _, name := range sortedKeys(c.RequestBodies) {
			add(pointer("components", "requestBodies", name), c.RequestBodies[name].Validate(ctx))
		}
		for _, name := range sortedKeys(c.SecuritySchemes) {
			add(pointer("components", "securitySchemes", name), c.SecuritySchemes[name].Validate(ctx))
		}
	}
	// What the parts do not catch (operation ids used twice, security requirements naming
	// no scheme, ...): the whole document, reported once.
	if len(r.Errors) == 0 {
		add("", doc.Validate(ctx))
	}
	r.Valid = len(r.Errors) == 0
	return r
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
