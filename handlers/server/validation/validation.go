// Package validation turns kin-openapi's validation errors into the field details of a
// VALIDATION_ERROR: one entry per field, named like body.email or query.limit.
package validation

import (
	"errors"
	"regexp"
	"sort"
	"strings"

	"dataplatform/handlers/apierr"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
)

// Join names a field below path.
func Join(path, k string) string { return path + "." + k }

var unsupportedProp = regexp.MustCompile(`property "([^"]*)" is unsupported`)

// FieldErrors flattens kin-openapi's errors into one entry per field. It matches concrete
// types level by level (errors.As would skip a RequestError in favour of the MultiError it wraps
// and lose which parameter or body it was about).
func FieldErrors(err error, root string) []apierr.FieldError {
	var out []apierr.FieldError
	var walk func(prefix string, err error)
	walk = func(prefix string, err error) {
		switch e := err.(type) {
		case openapi3.MultiError:
			for _, x := range e {
				walk(prefix, x)
			}
		case *openapi3filter.RequestError:
			p := prefix
			if e.Parameter != nil {
				p = e.Parameter.In + "." + e.Parameter.Name
			} else if e.RequestBody != nil {
				p = "body"
			}
			msg := e.Reason
			if e.Err != nil {
				msg = e.Err.Error()
			}
			switch {
			case strings.Contains(msg, "Content-Type"):
				out = append(out, apierr.FieldError{Field: "header.Content-Type", Code: "content_type", Message: msg})
			case e.Err == nil:
				code := "invalid"
				if strings.Contains(e.Reason, "required") {
					code = "required"
				}
				out = append(out, apierr.FieldError{Field: p, Code: code, Message: e.Reason})
			default:
				walk(p, e.Err)
			}
		case *openapi3.SchemaError:
			field, code := prefix, e.SchemaField
			for _, k := range e.JSONPointer() {
				field = Join(field, k)
			}
			if m := unsupportedProp.FindStringSubmatch(e.Reason); m != nil {
				field, code = Join(field, m[1]), "unknown_field"
			} else if code == "" {
				code = "invalid"
			}
			out = append(out, apierr.FieldError{Field: field, Code: code, Message: e.Reason})
		case *openapi3filter.ParseError:
			code := "type"
			if prefix == "body" {
				code = "invalid_json"
			}
			out = append(out, apierr.FieldError{Field: prefix, Code: code, Message: e.Error()})
		default:
			if errors.Is(err, openapi3filter.ErrInvalidRequired) {
				out = append(out, apierr.FieldError{Field: prefix, Code: "required", Message: err.Error()})
				return
			}
			if u := errors.Unwrap(err); u != nil {
				walk(prefix, u)
				return
			}
			out = append(out, apierr.FieldError{Field: prefix, Code: "invalid", Message: err.Error()})
		}
	}
	walk(root, err)
	sort.SliceStable(out, func(i, j int) bool { return out[i].Field < out[j].Field })
	return out
}
