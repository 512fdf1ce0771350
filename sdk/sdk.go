// Package sdk generates client packages of a dataset's description: Go with oapi-codegen's
// codegen package (at runtime) plus hand-written helpers; each as a zip archive.
package sdk

import (
	"archive/zip"
	"bytes"
	"fmt"
	"go/format"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"text/template"
	"time"

	"dataplatform/templates"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/oapi-codegen/oapi-codegen/v2/pkg/codegen"
)

// Languages are the SDK languages served.
var Languages = []string{"go"}

// Input is what an SDK is generated from.
type Input struct {
	DatasetID, Name, Package, Version string
	Server, DescriptionURL            string
	Doc                               *openapi3.T // the description (not changed)
	JSON                              []byte      // the description as JSON
}

// Result is a generated SDK.
type Result struct {
	Archive  []byte
	Files    []string
	Warnings []string
	Duration time.Duration
}

var tmpl = template.Must(template.New("").ParseFS(templates.SDK, "sdk/*/*.tmpl"))

// codegenMu serialises oapi-codegen: its codegen package keeps global state.
var codegenMu sync.Mutex

// runtimeVersion is the version of oapi-codegen's runtime this binary is built with: the
// generated Go code needs it, and requiring the same one keeps the SDK buildable offline
// wherever this service builds.
func runtimeVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == "github.com/oapi-codegen/runtime" {
				return d.Version
			}
		}
	}
	return runtimeModuleVersion
}

// runtimeModuleVersion is go.mod's oapi-codegen/runtime, for binaries without module
// information (test binaries); a test keeps it equal to go.mod's.
const runtimeModuleVersion = "v1.8.0"

// Generate makes the SDK of language.
func Generate(language string, in Input) (*Result, error) {
	start := time.Now()
	var files map[string][]byte
	var warnings []string
	var err error
	switch language {
	case "go":
		files, warnings, err = goSDK(in)
	default:
		return nil, fmt.Errorf("unknown language %q", language)
	}
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	r := &Result{Warnings: warnings}
	for _, name := range sortedNames(files) {
		w, err := zw.Create(in.Package + "/" + name)
		if err != nil {
			return nil, err
		}
		if _, err := w.Write(files[name]); err != nil {
			return nil, err
		}
		r.Files = append(r.Files, name)
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	r.Archive, r.Duration = buf.Bytes(), time.Since(start)
	return r, nil
}

func goSDK(in Input) (map[string][]byte, []string, error) {
	// A fresh copy: codegen changes the spec it is given (it prunes and filters).
	doc, err := openapi3.NewLoader().LoadFromData(in.JSON)
	if err != nil {
		return nil, nil, err
	}
	codegenMu.Lock()
	code, err := codegen.Generate(doc, codegen.Configuration{PackageName: in.Package,
		Generate: codegen.GenerateOptions{Models: true, Client: true}})
	codegenMu.Unlock()
	if err != nil {
		return nil, nil, fmt.Errorf("oapi-codegen: %w", err)
	}
	module := "example.com/sdk/" + in.Package
	list := "List" + strings.TrimPrefix(operationID(in.Doc, "GET", "/api/v1/datasets/{dataset_id}/data"), "list")
	data := map[string]any{"Name": in.Name, "Package": in.Package, "Version": in.Version, "Module": module, "Server": in.Server,
		"DescriptionURL": in.DescriptionURL, "DatasetID": in.DatasetID, "List": list}
	files := map[string][]byte{"client.gen.go": []byte(code), "openapi.json": in.JSON}
	var helpers, readme bytes.Buffer
	if err := tmpl.ExecuteTemplate(&helpers, "helpers.go.tmpl", data); err != nil {
		return nil, nil, err
	}
	h, err := format.Source(helpers.Bytes())
	if err != nil {
		return nil, nil, err
	}
	files["helpers.go"] = h
	if err := tmpl.ExecuteTemplate(&readme, "README.md.tmpl", data); err != nil {
		return nil, nil, err
	}
	files["README.md"] = readme.Bytes()
	files["go.mod"] = []byte("module " + module + "\n\ngo 1.22\n\nrequire github.com/oapi-codegen/runtime " + runtimeVersion() + "\n")
	var warnings []string
	if strings.Contains(code, "interface{}") {
		warnings = append(warnings, "free-form objects (JSON columns, metadata) are map[string]interface{}")
	}
	return files, warnings, nil
}

func operationID(doc *openapi3.T, method, path string) string {
	if item := doc.Paths.Value(path); item != nil {
		if op := item.GetOperation(method); op != nil {
			return op.OperationID
		}
	}
	return ""
}

func sortedNames(m map[string][]byte) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
