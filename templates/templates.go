// Package templates holds the files the service renders or serves at runtime, embedded in
// the binary: the per-dataset OpenAPI description (dataset.openapi.yaml.tmpl) and the
// documentation pages with their front-end files (docs/: Swagger UI and Redoc, copied from
// the npm packages pinned in tools/docs by scripts/docs-assets.sh).
package templates

import "embed"

//go:embed *.tmpl
var FS embed.FS

//go:embed docs
var Docs embed.FS

//go:embed sdk
var SDK embed.FS
