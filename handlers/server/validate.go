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
func (s *Server) validate(c echo.Context, rt *route) error {
	req := c.Request()
	opts := &openapi3filter.Options{
		MultiError:         true,
		KeepValidatedValue: true,
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

// checkJSON reports malformed JSON and duplicate object keys.
func checkJSON(b []byte) *apierr.FieldError {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var walk func(path string) error
	walk = func(path string) error {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		d, ok := tok.(json.Delim)
		if !ok {
			if s, isStr := tok.(string); isStr && strings.IndexByte(s, 0) >= 0 {
				return nulErr{path} // PostgreSQL cannot store NUL in text
			}
			return nil
		}
		switch d {
		case '{':
			seen := map[string]bool{}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return err
				}
				k := kt.(string)
				if seen[k] {
					return dupErr{validation.Join(path, k)}
				}
				seen[k] = true
				if err := walk(validation.Join(path, k)); err != nil {
					return err
				}
			}
		case '[':
			for i := 0; dec.More(); i++ {
				if err := walk(fmt.Sprintf("%s[%d]", path, i)); err != nil {
					return err
				}
			}
		}
		_, err = dec.Token() // closing delimiter
		return err
	}
	err := walk("body")
	if err == nil {
		if _, err2 := dec.Token(); err2 != io.EOF {
			err = errors.New("unexpected data after the JSON value")
		}
	}
	if err == nil {
		return nil
	}
	var de dupErr
	if errors.As(err, &de) {
		return &apierr.FieldError{Field: de.path, Code: "duplicate", Message: "the key appears more than once"}
	}
	var ne nulErr
	if errors.As(err, &ne) {
		return &apierr.FieldError{Field: ne.path, Code: "invalid_character", Message: "strings may not contain the NUL character (\\u0000)"}
	}
	return &apierr.FieldError{Field: "body", Code: "invalid_json", Message: "malformed JSON: " + err.Error()}
}

type dupErr struct{ path string }

type nulErr struct{ path string }

func (n nulErr) Error() string { return "NUL character in " + n.path }

func (d dupErr) Error() string { return "duplicate key " + d.path }
