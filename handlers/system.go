package handlers

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"time"

	"dataplatform/gen/spec"
	"dataplatform/gen/systemapi"
	"dataplatform/handlers/apierr"
	"dataplatform/templates/docs"
	"dataplatform/templates/oascheck"

	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// System serves health, metrics, keys and the published description.
type System struct{ *Handlers }

var _ systemapi.ServerInterface = (*System)(nil)

var metricsHandler = promhttp.Handler()

func (s *System) Healthz(c echo.Context) error {
	return c.JSON(http.StatusOK, systemapi.Health{Status: systemapi.Ok})
}

func (s *System) Readyz(c echo.Context) error {
	ctx, cancel := context.WithTimeout(c.Request().Context(), 2*time.Second)
	defer cancel()
	if err := s.Store.DB.PingContext(ctx); err != nil {
		checks := map[string]string{"database": "unavailable"}
		return c.JSON(http.StatusServiceUnavailable, systemapi.Health{Status: systemapi.Unavailable, Checks: &checks})
	}
	checks := map[string]string{"database": "ok"}
	return c.JSON(http.StatusOK, systemapi.Health{Status: systemapi.Ok, Checks: &checks})
}

func (s *System) Metrics(c echo.Context) error {
	metricsHandler.ServeHTTP(c.Response(), c.Request())
	return nil
}

func (s *System) Jwks(c echo.Context) error {
	c.Response().Header().Set("Cache-Control", "public, max-age=300")
	return c.JSON(http.StatusOK, s.Keys.PublicSet())
}

func (s *System) GetOpenAPIJSON(c echo.Context) error {
	return c.Blob(http.StatusOK, echo.MIMEApplicationJSON, spec.JSON)
}

func (s *System) GetOpenAPIYAML(c echo.Context) error {
	return c.Blob(http.StatusOK, "application/yaml", spec.YAML)
}

func (s *System) GetErrorDoc(c echo.Context, code string) error {
	code = strings.ToUpper(code)
	d, ok := apierr.Catalog[code]
	if !ok {
		return apierr.NotFound("error code", code)
	}
	return c.JSON(http.StatusOK, map[string]any{"code": code, "status": d.Status, "title": d.Title, "description": d.Description})
}

// ValidateOpenAPI checks any description sent as JSON or YAML (oascheck).
func (s *System) ValidateOpenAPI(c echo.Context) error {
	data, err := io.ReadAll(c.Request().Body)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, oascheck.Check(c.Request().Context(), data))
}

// platformSpec is this service's description as a value the docs pages embed.
var platformSpec = func() any {
	var v any
	if err := json.Unmarshal(spec.JSON, &v); err != nil {
		panic(err)
	}
	return v
}()

func (s *System) GetPlatformDocs(c echo.Context) error {
	return docs.Render(c.Response(), docs.Swagger, "Data Platform API", platformSpec)
}

func (s *System) GetPlatformRedoc(c echo.Context) error {
	return docs.Render(c.Response(), docs.Redoc, "Data Platform API", platformSpec)
}

func (s *System) GetDocsAsset(c echo.Context, file string) error {
	if !docs.Asset(c.Response(), c.Request(), file) {
		return apierr.NotFound("asset", file)
	}
	return nil
}
