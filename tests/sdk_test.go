package tests

import (
	"archive/zip"
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

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
	fmt.Println("created", created.JSON201.Name, created.JSON201.Status)
	got, err := c.GetCustomerWithResponse(ctx, ds, id, nil)
	check(err)
	fmt.Println("read", got.JSON200.Email)
	patched, err := c.PatchCustomerWithBodyWithResponse(ctx, ds, id, nil, "application/json", strings.NewReader(` + "`" + `{"status":"active"}` + "`" + `))
	check(err)
	fmt.Println("patched", patched.JSON200.Status, *patched.JSON200.Version)
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
	e := newEnv(t)
	own := bearer(e.ownerToken)
	id := e.uploadAndCreateWith(e.ownerToken, "Customers", "c.csv", "id,name,email,phone,status,tags\n1,Ann,ann@example.com,+14155550101,active,\n",
		map[string]any{"schema": customerRecordSchema()})
	e.waitDataset(e.ownerToken, id)
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
		// Offline: what the SDK needs is what this module builds with (the module cache).
		cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOPROXY=off", "GONOSUMDB=*", "GONOSUMCHECK=1", "GOSUMDB=off", "TOKEN="+e.ownerToken)
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
