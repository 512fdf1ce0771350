package specgen

import (
	"encoding/json"
	"sync"

	"github.com/getkin/kin-openapi/openapi3"
)

// leafSchemas are schemas without subschemas, by their JSON, that documents share: a
// dataset's description holds a few hundred schemas, most of them the same few dozen
// leaves ({type: string, nullable: true} and the like), and kin-openapi's schema is 768
// bytes; shared, a description takes about half the memory, so the cache keeps twice as many.
var leafSchemas = struct {
	sync.Mutex
	m map[string]*openapi3.Schema
}{m: map[string]*openapi3.Schema{}}

// maxLeafSchemas bounds the shared leaves (their keys may hold users' text).
const maxLeafSchemas = 8192

// shareSchemas replaces each leaf schema of doc with the equal one that documents share.
// It is the last step of a render: a rendered document is never changed (validation,
// encoding and comparison only read it), so no document sees another's through a leaf.
func shareSchemas(doc *openapi3.T) {
	seen := map[*openapi3.SchemaRef]bool{}
	var visit func(r *openapi3.SchemaRef)
	visitAll := func(rs openapi3.SchemaRefs) {
		for _, r := range rs {
			visit(r)
		}
	}
	visit = func(r *openapi3.SchemaRef) {
		if r == nil || r.Value == nil || seen[r] {
			return
		}
		seen[r] = true
		s := r.Value
		for _, p := range s.Properties {
			visit(p)
		}
		visitAll(s.AllOf)
		visitAll(s.AnyOf)
		visitAll(s.OneOf)
		visit(s.Not)
		visit(s.Items)
		visit(s.AdditionalProperties.Schema)
		if !leaf(s) {
			return
		}
		b, err := json.Marshal(s)
		if err != nil {
			return
		}
		leafSchemas.Lock()
		defer leafSchemas.Unlock()
		if c := leafSchemas.m[string(b)]; c != nil {
			r.Value = c
		} else if len(leafSchemas.m) < maxLeafSchemas {
			leafSchemas.m[string(b)] = s
		}
	}
	eachSchemaRef(doc, visit)
}

func leaf(s *openapi3.Schema) bool {
	return len(s.Properties) == 0 && len(s.AllOf) == 0 && len(s.AnyOf) == 0 && len(s.OneOf) == 0 && s.Not == nil && s.Items == nil &&
		s.AdditionalProperties.Schema == nil && len(s.PatternProperties) == 0 && len(s.PrefixItems) == 0 && s.Contains == nil &&
		len(s.DependentSchemas) == 0 && s.PropertyNames == nil && s.If == nil && s.Then == nil && s.Else == nil && len(s.Defs) == 0 &&
		s.ContentSchema == nil && s.UnevaluatedItems.Schema == nil && s.UnevaluatedProperties.Schema == nil
}

// eachSchemaRef calls visit with every schema reference of doc's components and operations.
func eachSchemaRef(doc *openapi3.T, visit func(*openapi3.SchemaRef)) {
	content := func(c openapi3.Content) {
		for _, m := range c {
			if m != nil {
				visit(m.Schema)
			}
		}
	}
	params := func(ps openapi3.Parameters) {
		for _, p := range ps {
			if p.Value != nil {
				visit(p.Value.Schema)
				content(p.Value.Content)
			}
		}
	}
	headers := func(hs openapi3.Headers) {
		for _, h := range hs {
			if h.Value != nil {
				visit(h.Value.Schema)
			}
		}
	}
	responses := func(rs map[string]*openapi3.ResponseRef) {
		for _, r := range rs {
			if r.Value != nil {
				content(r.Value.Content)
				headers(r.Value.Headers)
			}
		}
	}
	if c := doc.Components; c != nil {
		for _, s := range c.Schemas {
			visit(s)
		}
		for _, p := range c.Parameters {
			params(openapi3.Parameters{p})
		}
		headers(c.Headers)
		responses(c.Responses)
		for _, b := range c.RequestBodies {
			if b.Value != nil {
				content(b.Value.Content)
			}
		}
	}
	for _, item := range doc.Paths.Map() {
		params(item.Parameters)
		for _, op := range item.Operations() {
			params(op.Parameters)
			if op.RequestBody != nil && op.RequestBody.Value != nil {
				content(op.RequestBody.Value.Content)
			}
			if op.Responses != nil {
				responses(op.Responses.Map())
			}
		}
	}
}
