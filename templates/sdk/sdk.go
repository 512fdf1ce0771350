// Package sdk generates client packages of a dataset's description, each as a zip archive:
// Go with oapi-codegen's codegen package (at runtime) plus templated helpers, and TypeScript,
// JavaScript and Python from the templates beside this file (one folder per language).
package sdk

import (
	"archive/zip"
	"bytes"
	"embed"
	"encoding/json"
	"fmt"
	"go/format"
	"maps"
	"regexp"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"text/template"
	"time"
	"unicode"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/oapi-codegen/oapi-codegen/v2/pkg/codegen"
)

// files are the templates of the TypeScript, JavaScript and Python SDKs and the Go SDK's helpers,
// one folder per language beside this file.
//
//go:embed go python typescript javascript
var files embed.FS

// Languages are the SDK languages served.
var Languages = []string{"go", "typescript", "javascript", "python"}

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

// funcs are the encoders the templates write every value of a description with (see encode.go).
var funcs = template.FuncMap{
	"js":        jsString,
	"py":        pyString,
	"go":        goString,
	"comment":   comment,
	"docstring": docstring,
	"md":        mdLine,
	"ident":     ident,
	"pyident":   func(s string) string { return ident(snake(s)) },
	"jsparam":   jsParam,
	"jspath":    jsPath,
	"pypath":    pyPath,
	// key is a TypeScript property name: as is when it is an identifier, else a string literal.
	"key": func(name string) string {
		if isIdent(name) {
			return name
		}
		return jsString(name)
	},
}

// camel is dataset_id → datasetId.
func camel(s string) string {
	parts := strings.Split(s, "_")
	for i := 1; i < len(parts); i++ {
		if parts[i] != "" {
			parts[i] = strings.ToUpper(parts[i][:1]) + parts[i][1:]
		}
	}
	return strings.Join(parts, "")
}

// snake is listCustomers → list_customers.
func snake(s string) string {
	var b strings.Builder
	for i, r := range s {
		if r >= 'A' && r <= 'Z' {
			if i > 0 {
				b.WriteByte('_')
			}
			r += 'a' - 'A'
		}
		b.WriteRune(r)
	}
	return b.String()
}

// goPackage is the form of a package name: it names the Go package, the zip's folder and the
// npm package, so it is checked rather than encoded.
var goPackage = regexp.MustCompile(`^[a-z][a-z0-9]*$`)

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
	if !goPackage.MatchString(in.Package) {
		return nil, fmt.Errorf("package name %q is not a lower-case identifier", in.Package)
	}
	var files map[string][]byte
	var warnings []string
	var err error
	switch language {
	case "go":
		files, warnings, err = goSDK(in)
	case "typescript", "javascript", "python":
		files, err = templated(language, in)
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
	raw, warnings, err := goSafe(in.JSON)
	if err != nil {
		return nil, nil, err
	}
	doc, err := openapi3.NewLoader().LoadFromData(raw)
	if err != nil {
		return nil, nil, err
	}
	// oapi-codegen refuses names it cannot write as Go (quotes, backticks, control characters)
	// rather than emit them, and a path with a backslash it would write into a string literal
	// as is: the Go SDK of such a description is not made. Neither is one whose names collide
	// as Go names, or whose code does not compile (codegen formats it).
	if err := codegen.ValidateSpec(doc); err != nil {
		return nil, nil, &UnrepresentableError{Language: "go", Err: err}
	}
	for _, p := range doc.Paths.InMatchingOrder() {
		if strings.ContainsRune(p, '\\') {
			return nil, nil, &UnrepresentableError{Language: "go", Err: fmt.Errorf("path %q has a backslash", p)}
		}
	}
	codegenMu.Lock()
	code, err := codegen.Generate(doc, codegen.Configuration{PackageName: in.Package,
		Generate: codegen.GenerateOptions{Models: true, Client: true}})
	codegenMu.Unlock()
	if err != nil {
		return nil, nil, &UnrepresentableError{Language: "go", Err: fmt.Errorf("oapi-codegen: %w", err)}
	}
	module := "example.com/sdk/" + in.Package
	list := "List" + strings.TrimPrefix(operationID(in.Doc, "GET", "/api/v1/datasets/{dataset_id}/data"), "list")
	data := map[string]any{"Name": in.Name, "Package": in.Package, "Version": in.Version, "Module": module, "Server": in.Server,
		"DescriptionURL": in.DescriptionURL, "DatasetID": in.DatasetID, "List": list}
	files := map[string][]byte{"client.gen.go": []byte(code), "openapi.json": in.JSON}
	var helpers, readme bytes.Buffer
	if err := execute(&helpers, "go", "helpers.go.tmpl", data); err != nil {
		return nil, nil, err
	}
	h, err := format.Source(helpers.Bytes())
	if err != nil {
		return nil, nil, err
	}
	files["helpers.go"] = h
	if err := execute(&readme, "go", "README.md.tmpl", data); err != nil {
		return nil, nil, err
	}
	files["README.md"] = readme.Bytes()
	files["go.mod"] = []byte("module " + module + "\n\ngo 1.22\n\nrequire github.com/oapi-codegen/runtime " + runtimeVersion() + "\n")
	if strings.Contains(code, "interface{}") {
		warnings = append(warnings, "free-form objects (JSON columns, metadata) are map[string]interface{}")
	}
	return files, warnings, nil
}

// UnrepresentableError is a description that a language's SDK cannot be made of.
type UnrepresentableError struct {
	Language string
	Err      error
}

func (e *UnrepresentableError) Error() string {
	return "the " + e.Language + " SDK cannot represent this description: " + e.Err.Error()
}

func (e *UnrepresentableError) Unwrap() error { return e.Err }

// goComments are the keys whose string values oapi-codegen writes into Go comments.
var goComments = map[string]bool{"description": true, "summary": true, "title": true, "example": true, "default": true}

// goSafe is a description as the Go SDK is made of it: the strings it writes into comments
// (descriptions, summaries, titles, examples, defaults) on one line without control characters, and the enums left out that
// oapi-codegen cannot write as Go constants (a value with a quote, a backtick or a control
// character): those fields are typed as plain strings, which the warnings say; the server
// still checks the values.
func goSafe(raw []byte) ([]byte, []string, error) {
	var doc any
	if err := json.Unmarshal(raw, &doc); err != nil {
		return nil, nil, err
	}
	var warnings []string
	var walk func(path string, v any)
	walk = func(path string, v any) {
		switch v := v.(type) {
		case map[string]any:
			if enum, ok := v["enum"].([]any); ok && slices.ContainsFunc(enum, func(e any) bool {
				s, ok := e.(string)
				return ok && strings.ContainsFunc(s, func(r rune) bool { return r == '"' || r == '`' || unicode.IsControl(r) })
			}) {
				delete(v, "enum")
				warnings = append(warnings, path+": enum values with quotes, backticks or control characters: typed as a plain string")
			}
			for _, k := range slices.Sorted(maps.Keys(v)) {
				if s, ok := v[k].(string); ok && goComments[k] {
					v[k] = comment(s)
				}
				walk(path+"/"+k, v[k])
			}
		case []any:
			for i, e := range v {
				walk(fmt.Sprintf("%s/%d", path, i), e)
			}
		}
	}
	walk("#", doc)
	out, err := json.Marshal(doc)
	return out, warnings, err
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

// execute runs a language's template (templates with the same file name exist per language).
func execute(w *bytes.Buffer, language, name string, data any) error {
	t, err := template.New(name).Funcs(funcs).ParseFS(files, language+"/"+name)
	if err != nil {
		return err
	}
	return t.Execute(w, data)
}

// examples are the README examples per language.
var examples = map[string]string{
	"typescript": "```ts\nimport { Client, APIError } from \"./client\";\n\nconst c = new Client({ baseUrl: \"%[1]s\", token: process.env.TOKEN });\nconst page = await c.%[2]s(\"%[3]s\", { limit: 20 });\nfor await (const r of c.pages((q) => c.%[2]s(\"%[3]s\", q))) console.log(r.id);\n```",
	"javascript": "```js\nimport { Client, APIError } from \"./client.mjs\";\n\nconst c = new Client({ baseUrl: \"%[1]s\", apiKey: process.env.API_KEY });\nconst page = await c.%[2]s(\"%[3]s\", { limit: 20 });\n```",
	"python":     "```python\n# from the directory that holds the %[5]s/ folder of this zip\nimport os\n\nfrom %[5]s import Client, APIError\n\nc = Client(\"%[1]s\", token=os.environ[\"TOKEN\"])\npage = c.%[4]s(\"%[3]s\", query={\"limit\": 20})\nfor r in c.pages(lambda query: c.%[4]s(\"%[3]s\", query=query)): print(r[\"id\"])\n```",
}

// templated makes a TypeScript, JavaScript or Python SDK from its templates.
func templated(language string, in Input) (map[string][]byte, error) {
	ops, models := describe(in.Doc)
	list := operationID(in.Doc, "GET", "/api/v1/datasets/{dataset_id}/data")
	data := map[string]any{"Name": in.Name, "Version": in.Version, "Ops": ops, "Models": models, "Language": language,
		"DescriptionURL": in.DescriptionURL,
		"Example":        fmt.Sprintf(examples[language], mdLine(in.Server), ident(list), mdLine(in.DatasetID), ident(snake(list)), in.Package)}
	client := map[string]string{"typescript": "client.ts", "javascript": "client.mjs", "python": "client.py"}[language]
	files := map[string][]byte{"openapi.json": in.JSON}
	for name, tname := range map[string]string{client: client + ".tmpl", "README.md": "README.md.tmpl"} {
		var b bytes.Buffer
		if err := execute(&b, language, tname, data); err != nil {
			return nil, err
		}
		files[name] = b.Bytes()
	}
	switch language {
	case "python":
		// A package, so that `from <package> import Client` works from the folder above it.
		files["__init__.py"] = []byte("\"\"\"Client of the " + docstring(in.Name) + " dataset's record API.\"\"\"\n\n" +
			"from .client import *  # noqa: F401,F403 (the models)\nfrom .client import Client, APIError  # noqa: F401\n")
	case "typescript", "javascript":
		pkg := map[string]any{"name": in.Package + "-client", "version": in.Version, "private": true, "type": "module"}
		if language == "typescript" {
			pkg["main"], pkg["types"] = "client.ts", "client.ts"
		} else {
			pkg["main"] = "client.mjs"
		}
		b, _ := json.MarshalIndent(pkg, "", "  ")
		files["package.json"] = b
	}
	return files, nil
}
