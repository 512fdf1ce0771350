package tests

import (
	"database/sql"
	"net/url"
	"strconv"

	"archive/zip"
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lib/pq"
)

// customers is an active dataset of the customer shape (one record: Ann).
func (e *env) customers() string {
	e.t.Helper()
	id := e.uploadAndCreateWith(e.ownerToken, "Customers", "c.csv", "id,name,email,phone,status,tags\n1,Ann,ann@example.com,+14155550101,active,\n",
		map[string]any{"schema": customerRecordSchema()})
	if d := e.waitDataset(e.ownerToken, id); d.str("status") != "active" {
		e.t.Fatalf("customers: %s", d.Body)
	}
	return id
}

// unzip writes an archive's files under dir.
func unzip(t *testing.T, archive []byte, dir string) {
	t.Helper()
	zr, err := zip.NewReader(bytes.NewReader(archive), int64(len(archive)))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range zr.File {
		p := filepath.Join(dir, filepath.FromSlash(f.Name))
		if !strings.HasPrefix(p, dir) {
			t.Fatalf("an archive entry escapes: %s", f.Name)
		}
		os.MkdirAll(filepath.Dir(p), 0o755)
		rc, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		b.ReadFrom(rc)
		rc.Close()
		if err := os.WriteFile(p, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

const goSDKProgram = `package main

import (
	"context"
	"fmt"
	"os"
	"strings"

	sdk "example.com/sdk/customersapi"
)

func main() {
	ctx := context.Background()
	ds := os.Args[2]
	c, err := sdk.NewAuthenticatedClient(os.Args[1], sdk.Options{Token: os.Getenv("TOKEN")})
	check(err)
	created, err := c.CreateCustomerWithResponse(ctx, ds, nil, sdk.CreateCustomerJSONRequestBody{Name: "Zed", Email: "zed@example.com"})
	check(err)
	if e := sdk.AsAPIError(created.HTTPResponse, created.Body); e != nil {
		panic(e)
	}
	id := *created.JSON201.Id
	fmt.Println("created", *created.JSON201.Name, *created.JSON201.Status)
	got, err := c.GetCustomerWithResponse(ctx, ds, id, nil)
	check(err)
	fmt.Println("read", *got.JSON200.Email)
	patched, err := c.PatchCustomerWithBodyWithResponse(ctx, ds, id, nil, "application/json", strings.NewReader(` + "`" + `{"status":"active"}` + "`" + `))
	check(err)
	fmt.Println("patched", *patched.JSON200.Status, *patched.JSON200.Version)
	n := 0
	check(sdk.Pages(ctx, func(ctx context.Context, page int) (bool, error) {
		limit := 1
		res, err := c.ListCustomersWithResponse(ctx, ds, &sdk.ListCustomersParams{Page: &page, Limit: &limit})
		if err != nil {
			return false, err
		}
		n += len(res.JSON200.Data)
		return res.JSON200.Pagination.HasNext != nil && *res.JSON200.Pagination.HasNext, nil
	}))
	fmt.Println("listed", n)
	del, err := c.DeleteCustomerWithResponse(ctx, ds, id, nil)
	check(err)
	fmt.Println("deleted", del.StatusCode())
	dup, err := c.CreateCustomerWithResponse(ctx, ds, nil, sdk.CreateCustomerJSONRequestBody{Name: "Ann", Email: "ann@example.com"})
	check(err)
	fmt.Println("error", sdk.AsAPIError(dup.HTTPResponse, dup.Body).Code)
}

func check(err error) {
	if err != nil {
		panic(err)
	}
}
`

// TestGoSDK: the Go SDK of the customer-shaped dataset compiles and lists, creates, reads,
// patches and deletes against the live server.
func TestGoSDK(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	own := bearer(e.ownerToken)
	id := e.customers()
	r := e.do("GET", "/api/v1/datasets/"+id+"/sdk/go", nil, own).status(200)
	if !strings.Contains(r.Header.Get("Content-Disposition"), "customersapi-go-1.0.0.zip") {
		t.Fatalf("archive name: %v", r.Header)
	}
	dir := t.TempDir()
	unzip(t, r.Body, dir)
	prog := filepath.Join(dir, "prog")
	os.MkdirAll(prog, 0o755)
	os.WriteFile(filepath.Join(prog, "main.go"), []byte(goSDKProgram), 0o644)
	os.WriteFile(filepath.Join(prog, "go.mod"), []byte("module prog\n\ngo 1.22\n\nrequire example.com/sdk/customersapi v0.0.0\n\nreplace example.com/sdk/customersapi => ../customersapi\n"), 0o644)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	run := func(name string, args ...string) string {
		t.Helper()
		cmd := exec.CommandContext(ctx, name, args...)
		cmd.Dir = prog
		// What the SDK needs is what this module builds with: the module cache, plus the
		// go.mod files of older dependencies that this module's pruned graph never loads,
		// through the Go module proxy as the project's own build gets its modules.
		cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOSUMDB=off", "TOKEN="+e.ownerToken)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s %v: %v\n%s", name, args, err, out)
		}
		return string(out)
	}
	run("go", "build", "-o", "prog", ".")
	out := run("./prog", e.ts.URL, id)
	for _, want := range []string{"created Zed pending", "read zed@example.com", "patched active 2", "listed 2", "deleted 200", "error CONFLICT"} {
		if !strings.Contains(out, want) {
			t.Fatalf("the program's output lacks %q:\n%s", want, out)
		}
	}
	logs := e.do("GET", "/api/v1/datasets/"+id+"/sdk/logs", nil, own).status(200)
	if logs.str("generations.0.language") != "go" || logs.str("generations.0.status") != "succeeded" || logs.str("generations.0.version") != "1.0.0" {
		t.Fatalf("logs: %s", logs.Body)
	}
	nf := e.do("GET", "/api/v1/datasets/"+id+"/sdk/cobol", nil, own).apiError(404, "NOT_FOUND")
	if !strings.Contains(string(nf.Body), `"supported_languages":["go"`) {
		t.Fatalf("unknown language: %s", nf.Body)
	}
}

const tsProgram = `import { Client, APIError, Customer } from "./customersapi/client";

// node's globals this program uses (no @types/node needed).
declare const process: { argv: string[]; env: Record<string, string | undefined>; exit(code: number): never };

async function main() {
  const [baseUrl, ds] = process.argv.slice(2);
  const c = new Client({ baseUrl, token: process.env.TOKEN });
  const created: Customer = await c.createCustomer(ds, { name: "Tia", email: "tia@example.com" });
  console.log("created", created.name, created.status);
  const id = created.id as number;
  const got = await c.getCustomer(ds, id);
  console.log("read", got.email);
  const patched = await c.patchCustomer(ds, id, { status: "active" });
  console.log("patched", patched.status, patched.version);
  let n = 0;
  for await (const r of c.pages((q) => c.listCustomers(ds, { ...q, limit: 1 }))) { n += r.id ? 1 : 0; }
  console.log("listed", n);
  await c.deleteCustomer(ds, id);
  console.log("deleted");
  try {
    await c.createCustomer(ds, { name: "Ann", email: "ann@example.com" });
  } catch (e) {
    if (e instanceof APIError) console.log("error", e.code, e.status);
  }
}
main().catch((e) => { console.error(e); process.exit(1); });
`

const jsProgram = `import { Client, APIError } from "./customersapi/client.mjs";

const [baseUrl, ds] = process.argv.slice(2);
const c = new Client({ baseUrl, token: process.env.TOKEN });
const created = await c.createCustomer(ds, { name: "Jo", email: "jo@example.com" });
console.log("created", created.name, created.status);
console.log("read", (await c.getCustomer(ds, created.id)).email);
const patched = await c.patchCustomer(ds, created.id, { status: "inactive" });
console.log("patched", patched.status, patched.version);
let n = 0;
for await (const r of c.cursor((q) => c.listCustomers(ds, { ...q, limit: 1, sort: "id" }))) n++;
console.log("listed", n);
await c.deleteCustomer(ds, created.id);
console.log("deleted");
try { await c.createCustomer(ds, { name: "Ann", email: "ann@example.com" }); } catch (e) { if (e instanceof APIError) console.log("error", e.code, e.status); }
`

const pyProgram = `import os, sys
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "customersapi"))
from client import Client, APIError

base_url, ds = sys.argv[1], sys.argv[2]
c = Client(base_url, token=os.environ["TOKEN"])
created = c.create_customer(ds, {"name": "Py", "email": "py@example.com"})
print("created", created["name"], created["status"])
print("read", c.get_customer(ds, created["id"])["email"])
patched = c.patch_customer(ds, created["id"], {"status": "active"})
print("patched", patched["status"], patched["version"])
print("listed", sum(1 for _ in c.pages(lambda query: c.list_customers(ds, query=query), limit=1)))
c.delete_customer(ds, created["id"])
print("deleted")
try:
    c.create_customer(ds, {"name": "Ann", "email": "ann@example.com"})
except APIError as e:
    print("error", e.code, e.status)
`

// TestTemplateSDKs: the TypeScript SDK type-checks (tsc --strict) and runs under node, the
// JavaScript one runs under node, the Python one under python3 (standard library only): each
// creates, reads, patches, lists (pages or cursor), deletes, and gets a typed error.
func TestTemplateSDKs(t *testing.T) {
	t.Parallel()
	tsc, err := filepath.Abs("../scripts/tools/sdk/node_modules/.bin/tsc")
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t)
	own := bearer(e.ownerToken)
	id := e.customers()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	for _, tc := range []struct {
		lang, file, program string
		run                 [][]string
	}{
		{"typescript", "main.ts", tsProgram, [][]string{{tsc, "--strict", "--target", "es2022", "--module", "commonjs", "--lib", "es2022,dom", "--outDir", "out", "main.ts"},
			{"node", "out/main.js"}}},
		{"javascript", "main.mjs", jsProgram, [][]string{{"node", "main.mjs"}}},
		{"python", "main.py", pyProgram, [][]string{{"python3", "main.py"}}},
	} {
		e.subtest(t, tc.lang, func(t *testing.T) {
			r := e.do("GET", "/api/v1/datasets/"+id+"/sdk/"+tc.lang, nil, own).status(200)
			dir := t.TempDir()
			unzip(t, r.Body, dir)
			if err := os.WriteFile(filepath.Join(dir, tc.file), []byte(tc.program), 0o644); err != nil {
				t.Fatal(err)
			}
			if tc.lang == "typescript" {
				// CommonJS output for node: the SDK's package.json says module.
				os.Remove(filepath.Join(dir, "customersapi", "package.json"))
			}
			var out string
			for _, args := range tc.run {
				bin := args[0]
				if len(tc.run) > 1 && bin == "node" || len(tc.run) == 1 {
					args = append(args, e.ts.URL, id)
				}
				cmd := exec.CommandContext(ctx, bin, args[1:]...)
				cmd.Dir = dir
				cmd.Env = append(os.Environ(), "TOKEN="+e.ownerToken)
				b, err := cmd.CombinedOutput()
				if err != nil {
					t.Fatalf("%v: %v\n%s", args, err, b)
				}
				out = string(b)
			}
			for _, want := range []string{"created", "read ", "patched ", "listed 2", "deleted", "error CONFLICT 409"} {
				if !strings.Contains(out, want) {
					t.Fatalf("output lacks %q:\n%s", want, out)
				}
			}
		})
	}
}

// TestPythonSDKReadmeRuns: the Python SDK is a package, and its README's example runs as
// pasted (only the server address changed to the test server's).
func TestPythonSDKReadmeRuns(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	id := e.customers()
	r := e.do("GET", "/api/v1/datasets/"+id+"/sdk/python", nil, bearer(e.ownerToken)).status(200)
	dir := t.TempDir()
	unzip(t, r.Body, dir)
	readme, err := os.ReadFile(filepath.Join(dir, "customersapi", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, example, ok := strings.Cut(string(readme), "```python\n")
	if example, _, _ = strings.Cut(example, "```"); !ok || example == "" {
		t.Fatalf("no Python example in the README:\n%s", readme)
	}
	example = strings.ReplaceAll(example, `"`+baseURL+`"`, `"`+e.ts.URL+`"`)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "python3", "-c", example)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "TOKEN="+e.ownerToken)
	out, err := cmd.CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "1" { // the one record's id
		t.Fatalf("the README's example:\n%s\n%v\n%s", example, err, out)
	}
}

const thirdPartyGo = `package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strings"

	"prog/gen"
)

func main() {
	ctx := context.Background()
	ds := os.Args[2]
	auth := gen.WithRequestEditorFn(func(ctx context.Context, req *http.Request) error {
		req.Header.Set("Authorization", "Bearer "+os.Getenv("TOKEN"))
		return nil
	})
	c, err := gen.NewClientWithResponses(os.Args[1], auth)
	check(err)
	created, err := c.CreateCustomerWithResponse(ctx, ds, nil, gen.CreateCustomerJSONRequestBody{Name: "Og", Email: "og@example.com"})
	check(err)
	id := *created.JSON201.Id
	got, err := c.GetCustomerWithResponse(ctx, ds, id, nil)
	check(err)
	patched, err := c.PatchCustomerWithBodyWithResponse(ctx, ds, id, nil, "application/json", strings.NewReader(` + "`" + `{"status":"active"}` + "`" + `))
	check(err)
	list, err := c.ListCustomersWithResponse(ctx, ds, nil)
	check(err)
	del, err := c.DeleteCustomerWithResponse(ctx, ds, id, nil)
	check(err)
	fmt.Println("go", created.StatusCode(), *got.JSON200.Email, *patched.JSON200.Status, len(list.JSON200.Data), del.StatusCode())
}

func check(err error) {
	if err != nil {
		panic(err)
	}
}
`

const thirdPartyTS = `import createClient from "openapi-fetch";
import type { paths } from "./schema.js";

declare const process: { argv: string[]; env: Record<string, string | undefined>; exit(code: number): never };

const [baseUrl, ds] = process.argv.slice(2);
const client = createClient<paths>({ baseUrl, headers: { Authorization: "Bearer " + process.env.TOKEN } });
const path = { dataset_id: ds };
const created = await client.POST("/api/v1/datasets/{dataset_id}/data", { params: { path }, body: { name: "Ts", email: "ts@example.com" } });
if (!created.data) throw new Error(JSON.stringify(created.error));
const id = created.data.id as number;
const got = await client.GET("/api/v1/datasets/{dataset_id}/data/{id}", { params: { path: { ...path, id } } });
const patched = await client.PATCH("/api/v1/datasets/{dataset_id}/data/{id}", { params: { path: { ...path, id } }, body: { status: "active" } });
const list = await client.GET("/api/v1/datasets/{dataset_id}/data", { params: { path, query: { limit: 10 } } });
const del = await client.DELETE("/api/v1/datasets/{dataset_id}/data/{id}", { params: { path: { ...path, id } } });
console.log("ts", created.response.status, got.data?.email, patched.data?.status, list.data?.data.length, del.response.status);
`

// TestThirdPartyClients: clients generated from the published description by third-party
// tools — oapi-codegen's CLI for Go, openapi-typescript with openapi-fetch for TypeScript —
// toolRunner runs a user's client tool (a generator, a compiler, the built client) in a
// directory, with the module settings of TestGoSDK and the token in TOKEN; its output, or the
// test fails with it.
func toolRunner(ctx context.Context, token string) func(t testing.TB, dir, name string, args ...string) string {
	return func(t testing.TB, dir, name string, args ...string) string {
		t.Helper()
		cmd := exec.CommandContext(ctx, name, args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOSUMDB=off", "TOKEN="+token)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s %v: %v\n%s", name, args, err, out)
		}
		return string(out)
	}
}

// compile and list, create, read, patch and delete against the server.
func TestThirdPartyClients(t *testing.T) {
	t.Parallel()
	bin, _ := filepath.Abs("../scripts/tools/sdk/node_modules/.bin")
	modules, _ := filepath.Abs("../scripts/tools/sdk/node_modules")
	root, _ := filepath.Abs("..")
	e := newEnv(t)
	own := bearer(e.ownerToken)
	id := e.customers()
	spec := e.do("GET", "/api/v1/datasets/"+id+"/openapi.json", nil, own).status(200).Body
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	tool := toolRunner(ctx, e.ownerToken)
	run := func(dir, name string, args ...string) string { t.Helper(); return tool(t, dir, name, args...) }

	goDir := t.TempDir()
	os.MkdirAll(filepath.Join(goDir, "gen"), 0o755)
	os.WriteFile(filepath.Join(goDir, "openapi.json"), spec, 0o644)
	// oapi-codegen is a tool of this module: run it from here, on the published file.
	run(root, "go", "tool", "oapi-codegen", "-generate", "types,client", "-package", "gen", "-o", filepath.Join(goDir, "gen", "client.go"), filepath.Join(goDir, "openapi.json"))
	os.WriteFile(filepath.Join(goDir, "main.go"), []byte(thirdPartyGo), 0o644)
	os.WriteFile(filepath.Join(goDir, "go.mod"), []byte("module prog\n\ngo 1.22\n\nrequire github.com/oapi-codegen/runtime v1.8.0\n"), 0o644)
	run(goDir, "go", "build", "-o", "prog", ".")
	if out := run(goDir, "./prog", e.ts.URL, id); !strings.Contains(out, "go 201 og@example.com active 2 200") {
		t.Fatalf("oapi-codegen client: %s", out)
	}

	tsDir := t.TempDir()
	os.WriteFile(filepath.Join(tsDir, "openapi.json"), spec, 0o644)
	os.Symlink(modules, filepath.Join(tsDir, "node_modules"))
	os.WriteFile(filepath.Join(tsDir, "package.json"), []byte(`{"type": "module"}`), 0o644)
	// --default-non-nullable=false: openapi-typescript otherwise makes every property with a
	// default required, also in request bodies (status defaults to pending and may be left out).
	run(tsDir, filepath.Join(bin, "openapi-typescript"), "openapi.json", "-o", "schema.d.ts", "--default-non-nullable=false")
	os.WriteFile(filepath.Join(tsDir, "main.ts"), []byte(thirdPartyTS), 0o644)
	run(tsDir, filepath.Join(bin, "tsc"), "--strict", "--target", "es2022", "--module", "nodenext", "--moduleResolution", "nodenext", "--lib", "es2022,dom", "--skipLibCheck", "main.ts")
	if out := run(tsDir, "node", "main.js", e.ts.URL, id); !strings.Contains(out, "ts 201 ts@example.com active 2 200") {
		t.Fatalf("openapi-fetch client: %s", out)
	}
}

// TestSDKsOfHostileSchemaRunNothing: a dataset whose name, column descriptions, enum values
// and defaults are the audit's code injections (a JavaScript comment break that writes a file
// on import, a TypeScript type-literal break, a Python docstring break, a Go comment break)
// still gets all four SDKs; each imports or compiles (node, tsc and node, python3, go vet), and
// none of them writes its marker file.
func TestSDKsOfHostileSchemaRunNothing(t *testing.T) {
	t.Parallel()
	tsc, _ := filepath.Abs("../scripts/tools/sdk/node_modules/.bin/tsc")
	e := newEnv(t)
	own := bearer(e.ownerToken)
	m, err := os.MkdirTemp("", "sdkm")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(m) })
	js := func(tag string) string {
		return "*/ import('node:fs').then(f=>f.writeFileSync('" + m + "/" + tag + "','pwned')); /*"
	}
	ts := func(tag string) string {
		return `a"; }; import('node:fs').then(f=>f.writeFileSync('` + m + "/" + tag + `','pwned')); interface Z { z: "`
	}
	// The name ends a // comment (JavaScript runs the import, the rest of the line in /* */),
	// a Python docstring and a Go comment.
	name := "Evil\nimport('node:fs').then(f=>f.writeFileSync('" + m + "/name','pwned')); /*\n\"\"\"\nopen('" + m + "/py','w').write('pwned')\n\"\"\"\nfunc init() { panic(`pwned`) }\n//"
	schema := map[string]any{"columns": []any{
		map[string]any{"name": "status", "type": "text", "description": js("desc") + "\n\"\"\"\n",
			"enum": []string{"a", js("enum"), ts("ts-enum"), "\"\"\" + open('" + m + "/py-enum','w').write('x') + \"\"\"", "\n//go:generate touch " + m + "/go\n"}},
		map[string]any{"name": "note", "type": "text", "description": "`${import('node:fs')}` \u2028 */ x", "default": js("default")},
	}}
	id := e.uploadAndCreateWith(e.ownerToken, name, "h.csv", "status,note\na,hi\n", map[string]any{"schema": schema, "description": js("dataset")})
	if d := e.waitDataset(e.ownerToken, id); d.str("status") != "active" {
		t.Fatalf("dataset: %s", d.Body)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	for _, tc := range []struct {
		lang, file, program string
		run                 [][]string
	}{
		{"javascript", "main.mjs", `import * as sdk from "./PKG/client.mjs"; console.log("loaded", typeof sdk.Client);`, [][]string{{"node", "main.mjs"}}},
		{"typescript", "main.ts", `import { Client } from "./PKG/client"; console.log("loaded", typeof Client);`,
			[][]string{{tsc, "--strict", "--target", "es2022", "--module", "commonjs", "--lib", "es2022,dom", "--outDir", "out", "main.ts"}, {"node", "out/main.js"}}},
		{"python", "main.py", "import sys\nsys.path.insert(0, 'PKG')\nimport client\nprint('loaded', client.Client.__name__)\n", [][]string{{"python3", "main.py"}}},
		{"go", "", "", [][]string{{"go", "vet", "./PKG/..."}}},
	} {
		e.subtest(t, tc.lang, func(t *testing.T) {
			r := e.do("GET", "/api/v1/datasets/"+id+"/sdk/"+tc.lang, nil, own).status(200)
			dir := t.TempDir()
			unzip(t, r.Body, dir)
			entries, _ := os.ReadDir(dir)
			if len(entries) != 1 {
				t.Fatalf("archive folders: %v", entries)
			}
			pkg := entries[0].Name()
			if tc.file != "" {
				os.WriteFile(filepath.Join(dir, tc.file), []byte(strings.ReplaceAll(tc.program, "PKG", pkg)), 0o644)
			}
			switch tc.lang {
			case "typescript":
				os.Remove(filepath.Join(dir, pkg, "package.json")) // CommonJS output for node, as TestTemplateSDKs
			case "go":
				os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module prog\n\ngo 1.22\n\nrequire github.com/oapi-codegen/runtime v1.8.0\n"), 0o644)
				os.Remove(filepath.Join(dir, pkg, "go.mod"))
			}
			var out []byte
			for _, args := range tc.run {
				for i := range args {
					args[i] = strings.ReplaceAll(args[i], "PKG", pkg)
				}
				cmd := exec.CommandContext(ctx, args[0], args[1:]...)
				cmd.Dir = dir
				cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOSUMDB=off") // as TestGoSDK
				b, err := cmd.CombinedOutput()
				if err != nil {
					t.Fatalf("%v: %v\n%s", args, err, b)
				}
				out = b
			}
			if tc.lang != "go" && !strings.Contains(string(out), "loaded") {
				t.Fatalf("output: %s", out)
			}
			// node exits only after the imports and writes a module started have finished.
			if written, _ := os.ReadDir(m); len(written) > 0 {
				t.Fatalf("importing the %s SDK ran code: it wrote %v", tc.lang, written)
			}
		})
	}
	logs := e.do("GET", "/api/v1/datasets/"+id+"/sdk/logs", nil, own).status(200)
	if !strings.Contains(string(logs.Body), "typed as a plain string") {
		t.Fatalf("the Go SDK's warnings do not say that the enum is left out: %s", logs.Body)
	}
}

// TestConnectedHostileEnumSDKs: a connected PostgreSQL table whose ENUM labels and column
// names are code injections (a comment break, a quote, a newline). Every SDK downloads (the
// Go one leaves out the enum it cannot spell), and the JavaScript one imports without running
// the label.
func TestConnectedHostileEnumSDKs(t *testing.T) {
	t.Parallel()
	c, _ := externalShop(t)
	u, _ := url.Parse(c.URL("shop"))
	password, _ := u.User.Password()
	m, err := os.MkdirTemp("", "sdkm")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(m) })
	shop, err := sql.Open("postgres", c.URL("shop"))
	if err != nil {
		t.Fatal(err)
	}
	defer shop.Close()
	// Labels are at most 63 bytes: this one imports a module beside the SDK that writes the marker.
	label := "*/ import('../p.mjs'); /*"
	if _, err := shop.Exec(`CREATE TYPE evil AS ENUM ('a', ` + pq.QuoteLiteral(label) + `, 'x"y', E'new\nline');
		CREATE TABLE hostile (id int PRIMARY KEY, s evil, "col */ import('node:fs') /*" text, "q""uote" text)`); err != nil {
		t.Fatal(err)
	}
	e := newEnv(t)
	own := bearer(e.ownerToken)
	conn := map[string]any{"type": "postgresql", "host": "127.0.0.1", "port": c.Port, "database": "shop", "username": "postgres", "password": password, "ssl_mode": "disable"}
	id := e.do("POST", "/api/v1/projects/"+e.projectID+"/datasets/database", map[string]any{"name": "Shop", "connection": conn}, own).status(202).str("id")
	if d := e.waitDataset(e.ownerToken, id); d.str("status") != "active" {
		t.Fatalf("dataset: %s", d.Body)
	}
	sdk := "/api/v1/datasets/" + id + "/sdk/"
	r := e.do("GET", sdk+"javascript?table=hostile", nil, own).status(200)
	dir := t.TempDir()
	unzip(t, r.Body, dir)
	entries, _ := os.ReadDir(dir)
	os.WriteFile(filepath.Join(dir, "p.mjs"), []byte(`import { writeFileSync } from "node:fs"; writeFileSync(`+strconv.Quote(m+"/enum")+`, "pwned");`), 0o644)
	os.WriteFile(filepath.Join(dir, "main.mjs"), []byte(`import * as sdk from "./`+entries[0].Name()+`/client.mjs"; console.log("loaded", typeof sdk.Client);`), 0o644)
	cmd := exec.Command("node", "main.mjs")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), "loaded") {
		t.Fatalf("node: %v\n%s", err, out)
	}
	if written, _ := os.ReadDir(m); len(written) > 0 {
		t.Fatalf("importing the JavaScript SDK ran an ENUM label: it wrote %v", written)
	}
	for _, lang := range []string{"typescript", "python", "go"} {
		e.do("GET", sdk+lang+"?table=hostile", nil, own).status(200)
	}
}

const platformGo = `package main

import (
	"context"
	"fmt"
	"net/http"
	"os"

	"prog/gen"
)

func main() {
	ctx := context.Background()
	auth := gen.WithRequestEditorFn(func(ctx context.Context, req *http.Request) error {
		req.Header.Set("Authorization", "Bearer "+os.Getenv("TOKEN"))
		return nil
	})
	c, err := gen.NewClientWithResponses(os.Args[1], auth)
	if err != nil {
		panic(err)
	}
	orgs, err := c.ListOrganizationsWithResponse(ctx, &gen.ListOrganizationsParams{})
	if err != nil {
		panic(err)
	}
	fmt.Println("go", orgs.StatusCode(), orgs.JSON200.Organizations[0].Id)
}
`

const platformTS = `import createClient from "openapi-fetch";
import type { paths } from "./schema.js";

declare const process: { argv: string[]; env: Record<string, string | undefined>; exit(code: number): never };

const [baseUrl] = process.argv.slice(2);
const client = createClient<paths>({ baseUrl, headers: { Authorization: "Bearer " + process.env.TOKEN } });
const orgs = await client.GET("/api/v1/organizations", { params: { query: { limit: 10 } } });
if (!orgs.data) throw new Error(JSON.stringify(orgs.error));
console.log("ts", orgs.response.status, orgs.data.organizations[0].id);
`

// TestPlatformThirdPartyClients: clients generated the way users make them from the
// platform's own description (GET /api/v1/openapi.json, the bundled gen/spec) compile with
// the tools' default options — oapi-codegen `-generate types,client` and `go build`,
// openapi-typescript and `tsc --strict` — and call the server. A schema named like one of
// the types oapi-codegen derives from an operation (`<OperationId>Response`, `...Params`,
// `...JSONBody`, `...JSONRequestBody`) breaks the Go client; the description has none.
func TestPlatformThirdPartyClients(t *testing.T) {
	t.Parallel()
	bin, _ := filepath.Abs("../scripts/tools/sdk/node_modules/.bin")
	modules, _ := filepath.Abs("../scripts/tools/sdk/node_modules")
	root, _ := filepath.Abs("..")
	e := newEnv(t)
	spec := e.do("GET", "/api/v1/openapi.json", nil).status(200).Body
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	run := toolRunner(ctx, e.ownerToken)

	e.subtest(t, "go", func(t *testing.T) {
		goDir := t.TempDir()
		os.MkdirAll(filepath.Join(goDir, "gen"), 0o755)
		os.WriteFile(filepath.Join(goDir, "openapi.json"), spec, 0o644)
		run(t, root, "go", "tool", "oapi-codegen", "-generate", "types,client", "-package", "gen", "-o", filepath.Join(goDir, "gen", "client.go"), filepath.Join(goDir, "openapi.json"))
		os.WriteFile(filepath.Join(goDir, "main.go"), []byte(platformGo), 0o644)
		os.WriteFile(filepath.Join(goDir, "go.mod"), []byte("module prog\n\ngo 1.22\n\nrequire github.com/oapi-codegen/runtime v1.8.0\n"), 0o644)
		run(t, goDir, "go", "build", "-o", "prog", ".")
		if out := run(t, goDir, "./prog", e.ts.URL); !strings.Contains(out, "go 200 "+e.orgID) {
			t.Fatalf("oapi-codegen client: %s", out)
		}
	})
	e.subtest(t, "typescript", func(t *testing.T) {
		tsDir := t.TempDir()
		os.WriteFile(filepath.Join(tsDir, "openapi.json"), spec, 0o644)
		os.Symlink(modules, filepath.Join(tsDir, "node_modules"))
		os.WriteFile(filepath.Join(tsDir, "package.json"), []byte(`{"type": "module"}`), 0o644)
		run(t, tsDir, filepath.Join(bin, "openapi-typescript"), "openapi.json", "-o", "schema.d.ts")
		os.WriteFile(filepath.Join(tsDir, "main.ts"), []byte(platformTS), 0o644)
		run(t, tsDir, filepath.Join(bin, "tsc"), "--strict", "--target", "es2022", "--module", "nodenext", "--moduleResolution", "nodenext", "--lib", "es2022,dom", "--skipLibCheck", "main.ts")
		if out := run(t, tsDir, "node", "main.js", e.ts.URL); !strings.Contains(out, "ts 200 "+e.orgID) {
			t.Fatalf("openapi-fetch client: %s", out)
		}
	})
}
