package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/mail"
	"regexp"
	"strings"

	"dataplatform/handlers/apierr"
	"dataplatform/handlers/server/validation"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/labstack/echo/v4"
)

func init() {
	// kin-openapi leaves `email` unchecked unless told; use the standard library's RFC 5322
	// parser, and refuse display names ("Bob <bob@x>") and addresses without a dotless domain.
	openapi3.DefineStringFormatValidator("email", openapi3.NewCallbackValidator(func(v string) error {
		a, err := mail.ParseAddress(v)
		if err != nil || a.Address != v || a.Name != "" {
			return errors.New("not an email address")
		}
		return nil
	}))
	openapi3.DefineStringFormatValidator("uri", openapi3.NewCallbackValidator(func(v string) error {
		if !absURL.MatchString(v) {
			return errors.New("not an absolute http(s) URL")
		}
		return nil
	}))
}

var absURL = regexp.MustCompile(`^https?://[^\s/?#]+[^\s]*$`)

// validate checks the request against the operation of the published description: parameters,
// content type and body (with defaults applied, and the validated value kept so the handler
// binds exactly what was checked). Duplicate JSON keys are refused first: encoding/json would
// keep the last one silently.
// YAML bodies are text: the descriptions declare them `type: string` (the way users' tools,
// Prism among them, read a YAML document), so kin-openapi must not decode them into objects.
func init() { openapi3filter.RegisterBodyDecoder("application/yaml", openapi3filter.PlainBodyDecoder) }

func (s *Server) validate(c echo.Context, rt *route) error {
	req := c.Request()
	if err := malformedID(c, rt.kin.PathItem, rt.op); err != nil {
		return err
	}
	opts := &openapi3filter.Options{
		MultiError:         true,
		KeepValidatedValue: true,
		// The validator otherwise decodes every declared query parameter to find it absent.
		ExcludeRequestQueryParams: req.URL.RawQuery == "" && rt.query.optional,
	}
	if rt.multipart {
		// Uploads are streamed by the handler; kin-openapi would read the whole file into
		// memory to validate it. Only the content type is checked here.
		if ct, _, _ := mime.ParseMediaType(req.Header.Get("Content-Type")); ct != "multipart/form-data" {
			return apierr.Field("header.Content-Type", "content_type", "send the file as multipart/form-data")
		}
		opts.ExcludeRequestBody = true
	} else if req.Body != nil && req.Body != http.NoBody && rt.op.RequestBody != nil {
		body, err := io.ReadAll(req.Body)
		if err != nil {
			var mbe *http.MaxBytesError
			if errors.As(err, &mbe) {
				return echo.NewHTTPError(http.StatusRequestEntityTooLarge)
			}
			return apierr.Field("body", "invalid_body", "could not read the request body")
		}
		req.Body = io.NopCloser(bytes.NewReader(body))
		if ct, _, _ := mime.ParseMediaType(req.Header.Get("Content-Type")); len(body) > 0 && (ct == "application/json" || strings.HasSuffix(ct, "+json")) {
			if fe := checkJSON(body); fe != nil {
				return apierr.Validation(*fe)
			}
		}
	}
	if err := unknownQuery(req.URL.Query(), rt.query); err != nil {
		return err
	}
	params := make(map[string]string, len(c.ParamNames()))
	for i, n := range c.ParamNames() {
		params[n] = c.ParamValues()[i]
	}
	in := &openapi3filter.RequestValidationInput{
		Request:    req,
		PathParams: params,
		Route:      rt.kin,
		Options:    opts,
	}
	if err := openapi3filter.ValidateRequest(req.Context(), in); err != nil {
		return apierr.Validation(validation.FieldErrors(err, "request")...)
	}
	return nil
}

// notFoundIfMalformed marks a path parameter whose malformed value is answered 404, naming the
// kind of resource, rather than 400: the dashboard operations' ids (the dashboard routes
// know no 400 for them; a malformed id names no dashboard, as an unknown one does not).
const notFoundIfMalformed = "x-not-found-if-malformed"

// malformedID is 404 for a path parameter marked notFoundIfMalformed whose value its schema
// refuses. It runs before anything else is validated: there is no such resource to send a
// body to.
func malformedID(c echo.Context, item *openapi3.PathItem, op *openapi3.Operation) error {
	for _, ps := range []openapi3.Parameters{item.Parameters, op.Parameters} {
		for _, p := range ps {
			v := p.Value
			if v == nil || v.In != openapi3.ParameterInPath || v.Schema == nil || v.Schema.Value == nil {
				continue
			}
			kind, _ := v.Extensions[notFoundIfMalformed].(string)
			if kind == "" {
				continue
			}
			if val := c.Param(v.Name); v.Schema.Value.VisitJSON(val) != nil {
				return apierr.NotFound(kind, val)
			}
		}
	}
	return nil
}

// Bounds of a JSON body, checked before anything else reads it (before authentication, for the
// public operations): the check's work is linear in the body's size, and what kin-openapi and the
// handler decode afterwards is no deeper, no wider and has no longer keys than this.
const (
	maxJSONDepth  = 64    // nested objects and arrays
	maxJSONKeyLen = 1024  // bytes of one object key
	maxJSONKeys   = 10000 // keys of one object
)

// jsonLevel is one open object or array of the body being checked.
type jsonLevel struct {
	object  bool
	wantKey bool                // an object's next token is a key (or its end)
	key     string              // the object's current member
	n       int                 // the array's elements so far
	seen    map[string]struct{} // the object's keys so far
}

// checkJSON reports malformed JSON, duplicate object keys (encoding/json would keep the last one
// silently), NUL characters in strings and keys (a jsonb key is text) and bodies past the bounds
// above. It reads tokens one by one and keeps only the open levels; a path is formatted only for
// the error reported.
func checkJSON(b []byte) *apierr.FieldError {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var stack []*jsonLevel
	// at is the path of the value being read at the levels open, plus key when given.
	at := func(stack []*jsonLevel, key ...string) string {
		var sb strings.Builder
		sb.WriteString("body")
		for _, l := range stack {
			if l.object {
				sb.WriteString("." + l.key)
			} else {
				fmt.Fprintf(&sb, "[%d]", l.n)
			}
		}
		for _, k := range key {
			sb.WriteString("." + k)
		}
		return sb.String()
	}
	done := false // the top-level value has been read
	valueRead := func() {
		if len(stack) == 0 {
			done = true
			return
		}
		if top := stack[len(stack)-1]; top.object {
			top.wantKey = true
		} else {
			top.n++
		}
	}
	for {
		tok, err := dec.Token()
		if err == io.EOF && done {
			return nil
		} else if err != nil {
			return malformedJSON(err)
		}
		if done {
			return malformedJSON(errors.New("unexpected data after the JSON value"))
		}
		if n := len(stack); n > 0 && stack[n-1].object && stack[n-1].wantKey {
			top := stack[n-1]
			if tok == json.Delim('}') {
				stack = stack[:n-1]
				valueRead()
				continue
			}
			k, _ := tok.(string)
			switch {
			case len(k) > maxJSONKeyLen:
				return &apierr.FieldError{Field: at(stack[:n-1]), Code: "max_length", Message: fmt.Sprintf("an object key is longer than %d bytes", maxJSONKeyLen)}
			case len(top.seen) >= maxJSONKeys:
				return &apierr.FieldError{Field: at(stack[:n-1]), Code: "max_properties", Message: fmt.Sprintf("an object has more than %d keys", maxJSONKeys)}
			case strings.IndexByte(k, 0) >= 0: // a key of a jsonb value is text too
				return &apierr.FieldError{Field: at(stack[:n-1]), Code: "invalid_character", Message: "object keys may not contain the NUL character (\\u0000)"}
			}
			if _, dup := top.seen[k]; dup {
				return &apierr.FieldError{Field: at(stack[:n-1], k), Code: "duplicate", Message: "the key appears more than once"}
			}
			top.seen[k] = struct{}{}
			top.key, top.wantKey = k, false
			continue
		}
		switch tok {
		case json.Delim('{'), json.Delim('['):
			if len(stack) >= maxJSONDepth {
				return &apierr.FieldError{Field: at(stack), Code: "max_depth", Message: fmt.Sprintf("objects and arrays are nested deeper than %d levels", maxJSONDepth)}
			}
			l := &jsonLevel{object: tok == json.Delim('{'), wantKey: true}
			if l.object {
				l.seen = map[string]struct{}{}
			}
			stack = append(stack, l)
			continue
		case json.Delim(']'):
			stack = stack[:len(stack)-1]
			valueRead()
			continue
		}
		if s, ok := tok.(string); ok && strings.IndexByte(s, 0) >= 0 { // PostgreSQL cannot store NUL in text
			return &apierr.FieldError{Field: at(stack), Code: "invalid_character", Message: "strings may not contain the NUL character (\\u0000)"}
		}
		valueRead()
	}
}

func malformedJSON(err error) *apierr.FieldError {
	return &apierr.FieldError{Field: "body", Code: "invalid_json", Message: "malformed JSON: " + err.Error()}
}
