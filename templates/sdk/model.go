package sdk

import (
	"sort"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
)

// operation is an operation of the description as the template SDKs call it.
type operation struct {
	ID, Method, Path, Summary string
	PathParams                []string
	Query                     []string
	Body                      string // the JSON body's type name ("" without one; "unknown" for free-form)
	Response                  string // the 2xx JSON answer's type name ("" without one)
	Success                   int
}

// model is an object schema as a typed model.
type model struct {
	Name  string
	Props []prop
}

type prop struct {
	Name, TS, Py string
	Required     bool
	ReadOnly     bool
}

// refName is the identifier of the model a schema refers to ("" for none).
func refName(r *openapi3.SchemaRef) string {
	if r != nil && r.Ref != "" {
		return ident(r.Ref[strings.LastIndex(r.Ref, "/")+1:])
	}
	return ""
}

// tsType is a schema's TypeScript type, made of identifiers and string literals only (so it
// is also safe inside a JSDoc comment).
func tsType(r *openapi3.SchemaRef) string {
	if n := refName(r); n != "" {
		return n
	}
	if r == nil || r.Value == nil {
		return "unknown"
	}
	s := r.Value
	t := "unknown"
	switch {
	case s.Type.Is("string"):
		t = "string"
		if len(s.Enum) > 0 {
			var vs []string
			for _, e := range s.Enum {
				if v, ok := e.(string); ok {
					vs = append(vs, jsString(v))
				}
			}
			if len(vs) > 0 {
				t = strings.Join(vs, " | ")
			}
		}
	case s.Type.Is("integer"), s.Type.Is("number"):
		t = "number"
	case s.Type.Is("boolean"):
		t = "boolean"
	case s.Type.Is("array"):
		t = tsType(s.Items) + "[]"
		if strings.Contains(t, "|") {
			t = "(" + tsType(s.Items) + ")[]"
		}
	case s.Type.Is("object"):
		t = "Record<string, unknown>"
	}
	if s.Nullable {
		t += " | null"
	}
	return t
}

// pyType is a schema's Python type hint.
func pyType(r *openapi3.SchemaRef) string {
	if n := refName(r); n != "" {
		return pyString(n)
	}
	if r == nil || r.Value == nil {
		return "Any"
	}
	s := r.Value
	t := "Any"
	switch {
	case s.Type.Is("string"):
		t = "str"
	case s.Type.Is("integer"):
		t = "int"
	case s.Type.Is("number"):
		t = "float"
	case s.Type.Is("boolean"):
		t = "bool"
	case s.Type.Is("array"):
		t = "List[" + pyType(s.Items) + "]" // a model as a forward reference: it may come later
	case s.Type.Is("object"):
		t = "Dict[str, Any]"
	}
	if s.Nullable {
		t = "Optional[" + t + "]"
	}
	return t
}

// describe reads the operations and object models of a description.
func describe(doc *openapi3.T) ([]operation, []model) {
	var ops []operation
	paths := doc.Paths.InMatchingOrder()
	sort.Strings(paths)
	for _, p := range paths {
		item := doc.Paths.Value(p)
		methods := make([]string, 0)
		for m := range item.Operations() {
			methods = append(methods, m)
		}
		sort.Strings(methods)
		for _, m := range methods {
			o := item.GetOperation(m)
			if o.OperationID == "" || strings.HasSuffix(p, "/ws") || strings.HasSuffix(p, "/stream") || strings.HasSuffix(p, "/export") {
				continue // streams and files are read with fetch directly (see the README)
			}
			op := operation{ID: o.OperationID, Method: m, Path: p, Summary: o.Summary, Success: 200}
			for _, prm := range append(append(openapi3.Parameters{}, item.Parameters...), o.Parameters...) {
				if prm.Value == nil {
					continue
				}
				switch prm.Value.In {
				case "path":
					op.PathParams = append(op.PathParams, prm.Value.Name)
				case "query":
					op.Query = append(op.Query, prm.Value.Name)
				}
			}
			if o.RequestBody != nil && o.RequestBody.Value != nil {
				if mt := o.RequestBody.Value.Content.Get("application/json"); mt != nil {
					op.Body = tsType(mt.Schema)
					if op.Body == "Record<string, unknown>" {
						op.Body = "unknown"
					}
				}
			}
			for _, code := range []int{200, 201} {
				if r := o.Responses.Status(code); r != nil && r.Value != nil {
					op.Success = code
					if mt := r.Value.Content.Get("application/json"); mt != nil {
						op.Response = tsType(mt.Schema)
					}
					break
				}
			}
			ops = append(ops, op)
		}
	}
	var models []model
	names := make([]string, 0, len(doc.Components.Schemas))
	for n := range doc.Components.Schemas {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		s := doc.Components.Schemas[n].Value
		if s == nil || !s.Type.Is("object") || len(s.Properties) == 0 {
			continue
		}
		mdl := model{Name: ident(n)}
		props := make([]string, 0, len(s.Properties))
		for p := range s.Properties {
			props = append(props, p)
		}
		sort.Strings(props)
		for _, p := range props {
			ps := s.Properties[p]
			mdl.Props = append(mdl.Props, prop{Name: p, TS: tsType(ps), Py: pyType(ps), Required: contains(s.Required, p),
				ReadOnly: ps.Value != nil && ps.Value.ReadOnly})
		}
		models = append(models, mdl)
	}
	return ops, models
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
