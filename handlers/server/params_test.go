package server

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"dataplatform/handlers/apierr"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/routers"
	"github.com/labstack/echo/v4"
)

// TestMalformedQuery: every pair url.ParseQuery would drop is refused, named by its parameter;
// what it reads whole passes.
func TestMalformedQuery(t *testing.T) {
	for raw, want := range map[string][]string{
		"":                                   nil,
		"filter[city][eq]=Bos%3Bton&limit=2": nil,
		"a=%25&b=+x":                         nil,
		"filter[city][eq]=Bos;ton":           {"query.filter[city][eq]"},
		"limit=2&sort=a;page=3":              {"query.sort"},
		"filter%5Bcity%5D%5Beq%5D=Bos;ton":   {"query.filter[city][eq]"},
		"q=50%&x=%zz&ok=1":                   {"query.q", "query.x"},
		"%zz=1":                              {"query.%zz"},
	} {
		err := malformedQuery(raw)
		var ae *apierr.Error
		if want == nil {
			if err != nil {
				t.Errorf("%q: %v", raw, err)
			}
			continue
		}
		if !errors.As(err, &ae) || ae.Code != apierr.CodeValidationError {
			t.Errorf("%q: %v", raw, err)
			continue
		}
		fields := ae.Details.([]apierr.FieldError)
		if len(fields) != len(want) {
			t.Errorf("%q: %v", raw, fields)
			continue
		}
		for i, f := range fields {
			if f.Field != want[i] || f.Code != "malformed" {
				t.Errorf("%q: %v, want %v", raw, fields, want)
			}
		}
	}
}

// TestValidateWithoutQuery: a request with no query string skips the validator's query
// parameters only where that changes nothing: a required parameter is still missing, a
// default is still filled in, and a query string, when sent, is still validated.
func TestValidateWithoutQuery(t *testing.T) {
	doc, err := openapi3.NewLoader().LoadFromData([]byte(`openapi: 3.0.3
info: {title: t, version: "1"}
paths:
  /r:
    get:
      parameters: [{name: q, in: query, required: true, schema: {type: string}}]
      responses: {'200': {description: ok}}
  /d:
    get:
      parameters: [{name: n, in: query, schema: {type: integer, default: 5}}]
      responses: {'200': {description: ok}}
  /o:
    get:
      parameters: [{name: n, in: query, schema: {type: integer}}]
      responses: {'200': {description: ok}}
`))
	if err != nil {
		t.Fatal(err)
	}
	validate := func(path, query string) (*http.Request, error) {
		item := doc.Paths.Value(path)
		rt := &route{op: item.Get, query: queryParamsOf(item, item.Get),
			kin: &routers.Route{Spec: doc, Path: path, PathItem: item, Method: http.MethodGet, Operation: item.Get}}
		req := httptest.NewRequest(http.MethodGet, path+query, nil)
		return req, (&Server{}).validate(echo.New().NewContext(req, httptest.NewRecorder()), rt)
	}
	if _, err := validate("/r", ""); err == nil || !strings.Contains(fmt.Sprint(err), "query.q") {
		t.Errorf("required, missing: %v", err)
	}
	if req, err := validate("/d", ""); err != nil || req.URL.Query().Get("n") != "5" {
		t.Errorf("default: %v, query %q", err, req.URL.RawQuery)
	}
	if _, err := validate("/o", ""); err != nil {
		t.Errorf("optional, missing: %v", err)
	}
	if _, err := validate("/o", "?n=x"); err == nil || !strings.Contains(fmt.Sprint(err), "query.n") {
		t.Errorf("optional, not an integer: %v", err)
	}
}
