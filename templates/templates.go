// Package templates holds the files the service renders at runtime, embedded in the binary:
// the per-dataset OpenAPI description (dataset.openapi.yaml.tmpl), and later SDKs and docs.
package templates

import "embed"

//go:embed *.tmpl
var FS embed.FS
