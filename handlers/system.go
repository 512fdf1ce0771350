package handlers

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"dataplatform/gen/api"
	"dataplatform/gen/spec"
	"dataplatform/handlers/apierr"
	"dataplatform/handlers/reqmeta"
	"dataplatform/templates/docs"
	"dataplatform/templates/oascheck"

	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// System serves health, metrics, keys and the published description.
type System struct{ *Handlers }

// raw answers a strict operation by writing the response itself: documents served as they are,
// the metrics handler, conditional file answers.
type raw func(w http.ResponseWriter) error

func (f raw) VisitJwksResponse(w http.ResponseWriter) error             { return f(w) }
func (f raw) VisitMetricsResponse(w http.ResponseWriter) error          { return f(w) }
func (f raw) VisitGetOpenAPIJSONResponse(w http.ResponseWriter) error   { return f(w) }
func (f raw) VisitGetOpenAPIYAMLResponse(w http.ResponseWriter) error   { return f(w) }
func (f raw) VisitGetErrorDocResponse(w http.ResponseWriter) error      { return f(w) }
func (f raw) VisitValidateOpenAPIResponse(w http.ResponseWriter) error  { return f(w) }
func (f raw) VisitGetPlatformDocsResponse(w http.ResponseWriter) error  { return f(w) }
func (f raw) VisitGetPlatformRedocResponse(w http.ResponseWriter) error { return f(w) }
func (f raw) VisitGetDocsAssetResponse(w http.ResponseWriter) error     { return f(w) }

// jsonAnswer is v as JSON with status.
func jsonAnswer(status int, v any) raw {
	return func(w http.ResponseWriter) error {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		return json.NewEncoder(w).Encode(v)
	}
}

// blob is a stored document with its content type.
// document answers a fixed document with its entity tag, and 304 to a client that has it
// (If-None-Match), so tools that poll the description download it once.
func document(ctx context.Context, contentType string, b []byte, tag string) raw {
	return func(w http.ResponseWriter) error {
		w.Header().Set("Content-Type", contentType)
		w.Header().Set("ETag", tag)
		w.Header().Set("Cache-Control", "no-cache") // revalidate: a new release changes it
		http.ServeContent(w, request(ctx, ""), "", time.Time{}, bytes.NewReader(b))
		return nil
	}
}

// entityTag is a strong entity tag of b.
func entityTag(b []byte) string {
	sum := sha256.Sum256(b)
	return `"` + hex.EncodeToString(sum[:12]) + `"`
}

var (
	specJSONTag = sync.OnceValue(func() string { return entityTag(spec.JSON) })
	specYAMLTag = sync.OnceValue(func() string { return entityTag(spec.YAML) })
)

// request is a GET of path with the current request's headers, for the handlers that negotiate
// (metrics) or answer conditionally (docs assets).
func request(ctx context.Context, path string) *http.Request {
	r, _ := http.NewRequestWithContext(ctx, http.MethodGet, path, nil)
	if h := reqmeta.From(ctx).Header; h != nil {
		r.Header = h
	}
	return r
}

// MetricsHandler serves Prometheus' exposition of this process's metrics.
var MetricsHandler = promhttp.Handler()

func (s *System) Healthz(context.Context, api.HealthzRequestObject) (api.HealthzResponseObject, error) {
	return api.Healthz200JSONResponse(api.Health{Status: api.Ok}), nil
}

func (s *System) Readyz(ctx context.Context, _ api.ReadyzRequestObject) (api.ReadyzResponseObject, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if err := s.Store.DB.PingContext(ctx); err != nil {
		checks := map[string]string{"database": "unavailable"}
		return api.Readyz503JSONResponse(api.Health{Status: api.Unavailable, Checks: &checks}), nil
	}
	checks := map[string]string{"database": "ok"}
	return api.Readyz200JSONResponse(api.Health{Status: api.Ok, Checks: &checks}), nil
}

// Metrics answers on the public listener only to the operator's token: route names, request
// counts and runtime figures are reconnaissance for anyone else.
func (s *System) Metrics(ctx context.Context, _ api.MetricsRequestObject) (api.MetricsResponseObject, error) {
	if s.Config.MetricsToken == "" {
		return nil, apierr.New(http.StatusNotFound, apierr.CodeNotFound,
			"metrics are not served on this listener: set DP_METRICS_ADDR (a listener of their own) or DP_METRICS_TOKEN")
	}
	var given string
	if h := reqmeta.From(ctx).Header; h != nil {
		given, _ = strings.CutPrefix(h.Get("Authorization"), "Bearer ")
	}
	if subtle.ConstantTimeCompare([]byte(given), []byte(s.Config.MetricsToken)) != 1 {
		return nil, apierr.AuthRequired("send the metrics token: Authorization: Bearer <DP_METRICS_TOKEN>")
	}
	return raw(func(w http.ResponseWriter) error {
		MetricsHandler.ServeHTTP(w, request(ctx, "/metrics"))
		return nil
	}), nil
}

func (s *System) Jwks(context.Context, api.JwksRequestObject) (api.JwksResponseObject, error) {
	set := s.Keys.PublicSet()
	return raw(func(w http.ResponseWriter) error {
		w.Header().Set("Cache-Control", "public, max-age=300")
		return jsonAnswer(http.StatusOK, set)(w)
	}), nil
}

func (s *System) GetOpenAPIJSON(ctx context.Context, _ api.GetOpenAPIJSONRequestObject) (api.GetOpenAPIJSONResponseObject, error) {
	return document(ctx, "application/json", spec.JSON, specJSONTag()), nil
}

func (s *System) GetOpenAPIYAML(ctx context.Context, _ api.GetOpenAPIYAMLRequestObject) (api.GetOpenAPIYAMLResponseObject, error) {
	return document(ctx, "application/yaml", spec.YAML, specYAMLTag()), nil
}

func (s *System) GetErrorDoc(_ context.Context, r api.GetErrorDocRequestObject) (api.GetErrorDocResponseObject, error) {
	code := strings.ToUpper(r.Code)
	d, ok := apierr.Catalog[apierr.Code(code)]
	if !ok {
		return nil, apierr.NotFound("error code", code)
	}
	return jsonAnswer(http.StatusOK, map[string]any{"code": code, "status": d.Status, "title": d.Title, "description": d.Description}), nil
}

// ValidateOpenAPI checks any description sent as JSON or YAML (oascheck).
func (s *System) ValidateOpenAPI(ctx context.Context, r api.ValidateOpenAPIRequestObject) (api.ValidateOpenAPIResponseObject, error) {
	var data []byte
	var err error
	switch {
	case r.JSONBody != nil:
		data, err = json.Marshal(*r.JSONBody)
	case r.Body != nil:
		data, err = io.ReadAll(r.Body)
	}
	if err != nil {
		return nil, err
	}
	return jsonAnswer(http.StatusOK, oascheck.Check(ctx, data)), nil
}

// platformSpec is this service's description as a value the docs pages embed.
var platformSpec = func() any {
	var v any
	if err := json.Unmarshal(spec.JSON, &v); err != nil {
		panic(err)
	}
	return v
}()

func (s *System) GetPlatformDocs(context.Context, api.GetPlatformDocsRequestObject) (api.GetPlatformDocsResponseObject, error) {
	return raw(func(w http.ResponseWriter) error {
		return docs.Render(w, docs.Swagger, "Data Platform API", platformSpec, "")
	}), nil
}

func (s *System) GetPlatformRedoc(context.Context, api.GetPlatformRedocRequestObject) (api.GetPlatformRedocResponseObject, error) {
	return raw(func(w http.ResponseWriter) error {
		return docs.Render(w, docs.Redoc, "Data Platform API", platformSpec, "")
	}), nil
}

func (s *System) GetDocsAsset(ctx context.Context, r api.GetDocsAssetRequestObject) (api.GetDocsAssetResponseObject, error) {
	if !docs.Exists(r.File) {
		return nil, apierr.NotFound("asset", r.File)
	}
	return raw(func(w http.ResponseWriter) error {
		docs.Asset(w, request(ctx, "/api/v1/docs/assets/"+r.File), r.File)
		return nil
	}), nil
}
