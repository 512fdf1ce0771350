package server

import (
	"net/url"
	"sort"
	"strings"

	"dataplatform/handlers/apierr"

	"github.com/getkin/kin-openapi/openapi3"
)

// malformedQuery refuses a raw query string that url.ParseQuery would drop pairs of: a pair
// with a semicolon (no longer a separator, so Go drops the whole pair) or with a broken
// percent-escape. Dropped silently, `filter[city][eq]=Bos;ton` would answer every row. Each
// such pair is one detail, named by its parameter.
func malformedQuery(raw string) error {
	if raw == "" {
		return nil
	}
	if _, err := url.ParseQuery(raw); err == nil {
		return nil
	}
	var bad []apierr.FieldError
	for _, pair := range strings.Split(raw, "&") {
		key, value, _ := strings.Cut(pair, "=")
		name := key
		if k, err := url.QueryUnescape(key); err == nil {
			name = k
		}
		switch {
		case strings.Contains(pair, ";"):
			bad = append(bad, apierr.FieldError{Field: "query." + name, Code: "malformed",
				Message: "the query parameter " + name + " contains a semicolon, which is not a separator: separate parameters with &, and write a semicolon in a value as %3B"})
		default:
			_, kerr := url.QueryUnescape(key)
			_, verr := url.QueryUnescape(value)
			if kerr != nil || verr != nil {
				bad = append(bad, apierr.FieldError{Field: "query." + name, Code: "malformed",
					Message: "the query parameter " + name + " has an invalid percent-escape: % must be followed by two hexadecimal digits (write % itself as %25)"})
			}
		}
	}
	if len(bad) == 0 { // url.ParseQuery found something this loop does not know: say so rather than drop it
		return apierr.Field("query", "malformed", "the query string is malformed")
	}
	return apierr.Validation(bad...)
}

// queryParams are the query parameters an operation declares (and api_key), and whether
// some are filters (filter[...]); made once per route.
type queryParams struct {
	names   map[string]bool
	filters bool
	// optional: none is required or has a default, so a request with no query string has
	// nothing in it to validate (nor a default for the validator to fill in).
	optional bool
}

func queryParamsOf(item *openapi3.PathItem, op *openapi3.Operation) *queryParams {
	kp := &queryParams{names: map[string]bool{"api_key": true}, optional: true}
	for _, ps := range []openapi3.Parameters{item.Parameters, op.Parameters} {
		for _, p := range ps {
			if p.Value != nil && p.Value.In == openapi3.ParameterInQuery {
				kp.names[p.Value.Name] = true
				kp.filters = kp.filters || strings.HasPrefix(p.Value.Name, "filter[")
				kp.optional = kp.optional && !p.Value.Required && (p.Value.Schema == nil || p.Value.Schema.Value == nil || p.Value.Schema.Value.Default == nil)
			}
		}
	}
	return kp
}

// unknownQuery refuses query parameters the operation does not declare: a filter or a field
// list the server would ignore answers with data that was not asked for. api_key (a
// credential) is always known; filter[...] keys are known where the operation declares
// filters (the handler checks their fields and operators).
func unknownQuery(q url.Values, kp *queryParams) error {
	if len(q) == 0 {
		return nil
	}
	known, filters := kp.names, kp.filters
	var bad []apierr.FieldError
	for k, vs := range q {
		if known[k] || filters && strings.HasPrefix(k, "filter[") {
			continue
		}
		bad = append(bad, apierr.FieldError{Field: "query." + k, Code: "unknown_field", Message: hint(k, vs, known)})
	}
	if len(bad) == 0 {
		return nil
	}
	sort.Slice(bad, func(i, j int) bool { return bad[i].Field < bad[j].Field })
	return apierr.Validation(bad...)
}

// hint says what an unknown parameter probably meant, in this API's words (PostgREST's
// habits above all: city=eq.Berlin, select=, order=).
func hint(k string, vs []string, known map[string]bool) string {
	msg := "unknown query parameter " + k
	v := ""
	if len(vs) > 0 {
		v = vs[0]
	}
	switch {
	case k == "select" && known["fields"]:
		return msg + ": choose fields with fields=" + v
	case k == "order" && known["sort"]:
		return msg + ": sort with sort=field or sort=-field"
	case k == "offset" && known["page"]:
		return msg + ": page with page= and limit=, or cursor="
	case known["filter["+k+"]"]:
		if op, val, ok := strings.Cut(v, "."); ok && !strings.Contains(op, " ") && op != "" {
			return msg + ": filter with filter[" + k + "][" + op + "]=" + val
		}
		return msg + ": filter with filter[" + k + "]=" + v
	}
	return msg
}
