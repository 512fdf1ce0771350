package tests

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestDescriptionVersions: three schema changes (an optional column added, a column made
// required, a column dropped) release 1.0.0 → 1.1.0 → 2.0.0 → 3.0.0; the changelog names
// each change with its level; compatibility between 1.1.0 and 3.0.0 lists the breaking ones;
// older versions stay retrievable.
func TestDescriptionVersions(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	own := bearer(e.ownerToken)
	id := e.uploadAndCreate(e.ownerToken, "Customers", "c.csv", "name,email\nAnn,ann@example.com\nBob,\n")
	e.waitDataset(e.ownerToken, id)
	base := "/api/v1/datasets/" + id
	if d := e.do("GET", base+"/openapi.json", nil, own).status(200); d.str("info.version") != "1.0.0" || d.str("x-api-versions.0.status") != "current" {
		t.Fatalf("first version: %s", d.Body)
	}
	change := func(c map[string]any) {
		t.Helper()
		e.do("PUT", base+"/schema", map[string]any{"changes": []any{c}}, own).status(200)
	}
	change(map[string]any{"op": "add_column", "column": map[string]any{"name": "phone", "type": "text"}})
	e.do("PATCH", "/api/v1/datasets/"+id+"/data/2", map[string]any{"email": "bob@example.com"}, own).status(200)
	change(map[string]any{"op": "alter_column", "column": "email", "required": true})
	change(map[string]any{"op": "drop_column", "column": "phone"})

	v := e.do("GET", base+"/versions", nil, own).status(200)
	var got []string
	for i := 0; i < v.len("versions"); i++ {
		p := "versions." + string(rune('0'+i)) + "."
		got = append(got, v.str(p+"version")+"/"+v.str(p+"level")+"/"+v.str(p+"status"))
	}
	if strings.Join(got, " ") != "1.0.0/initial/deprecated 1.1.0/minor/deprecated 2.0.0/major/deprecated 3.0.0/major/current" || v.str("current") != "3.0.0" {
		t.Fatalf("versions: %v\n%s", got, v.Body)
	}
	if v.get("versions.0.sunset_at") == nil || v.get("versions.3.sunset_at") != nil || v.get("versions.1.deprecated_at") == nil {
		t.Fatalf("deprecation and sunset dates: %s", v.Body)
	}
	d := e.do("GET", base+"/openapi.json", nil, own).status(200)
	if d.str("info.version") != "3.0.0" || d.len("x-api-versions") != 4 {
		t.Fatalf("current description: %s", d.Body)
	}
	// Older versions are still served, as they were.
	old := e.do("GET", base+"/openapi.json?version=1.1.0", nil, own).status(200)
	if old.str("info.version") != "1.1.0" || !strings.Contains(string(old.Body), `"phone"`) || strings.Contains(string(d.Body), `"phone"`) {
		t.Fatalf("version 1.1.0: %s", old.Body)
	}
	if y := e.do("GET", base+"/openapi.yaml?version=1.0.0", nil, own).status(200); !strings.Contains(string(y.Body), "version: 1.0.0") {
		t.Fatalf("yaml 1.0.0: %s", y.Body)
	}
	e.do("GET", base+"/openapi.json?version=9.9.9", nil, own).apiError(404, "NOT_FOUND")
	e.do("GET", base+"/openapi.json?version=latest", nil, own).apiError(400, "VALIDATION_ERROR", "query.version", "pattern")

	// The changelog: newest first, every change with its level.
	c := e.do("GET", base+"/changelog", nil, own).status(200)
	body := string(c.Body)
	if c.str("versions.0.version") != "3.0.0" || c.str("versions.0.level") != "major" || !strings.Contains(body, `"level":"breaking"`) ||
		!strings.Contains(body, "removed the request property `phone`") || !strings.Contains(body, "became required") ||
		!strings.Contains(body, "added the new optional request property `phone`") {
		t.Fatalf("changelog: %s", body)
	}
	md := e.do("GET", base+"/changelog", nil, own, header{"Accept": "text/markdown"}).status(200)
	if !strings.HasPrefix(string(md.Body), "# Customers API changelog") || !strings.Contains(string(md.Body), "## 2.0.0 (major)") ||
		!strings.Contains(string(md.Body), "**breaking**") || !strings.HasPrefix(md.Header.Get("Content-Type"), "text/markdown") {
		t.Fatalf("markdown changelog: %s", md.Body)
	}
	if md := e.do("GET", base+"/changelog?format=markdown", nil, own).status(200); !strings.HasPrefix(string(md.Body), "# ") {
		t.Fatalf("format=markdown: %s", md.Body)
	}

	// Compatibility, as a CI gate.
	cp := e.do("GET", base+"/compatibility?from=1.1.0&to=3.0.0", nil, own).status(200)
	if cp.get("compatible") != false || cp.len("breaking_changes") == 0 || !strings.Contains(string(cp.Body), "became required") ||
		!strings.Contains(string(cp.Body), "removed the request property `phone`") {
		t.Fatalf("compatibility 1.1.0 → 3.0.0: %s", cp.Body)
	}
	if cp := e.do("GET", base+"/compatibility?from=1.0.0&to=1.1.0", nil, own).status(200); cp.get("compatible") != true || cp.len("changes") == 0 {
		t.Fatalf("compatibility 1.0.0 → 1.1.0: %s", cp.Body)
	}
	if cp := e.do("GET", base+"/compatibility?from=2.0.0", nil, own).status(200); cp.str("to") != "3.0.0" || cp.get("compatible") != false {
		t.Fatalf("compatibility to the current version: %s", cp.Body)
	}
	e.do("GET", base+"/compatibility?from=3.0.0&to=1.0.0", nil, own).apiError(400, "VALIDATION_ERROR", "query.from", "order")
	e.do("GET", base+"/compatibility?from=4.0.0", nil, own).apiError(404, "NOT_FOUND")
	e.do("GET", base+"/compatibility", nil, own).apiError(400, "VALIDATION_ERROR", "query.from", "required")
	stranger := newEnv(t)
	stranger.do("GET", base+"/versions", nil, bearer(stranger.ownerToken)).apiError(404, "DATASET_NOT_FOUND")
}

// TestDeprecatedVersionHeaders: a record request naming a deprecated version in
// X-API-Version is answered with Deprecation, Sunset and a successor-version link.
func TestDeprecatedVersionHeaders(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	own := bearer(e.ownerToken)
	id := e.uploadAndCreate(e.ownerToken, "Items", "i.csv", "name,size\npen,1\n")
	e.waitDataset(e.ownerToken, id)
	base := "/api/v1/datasets/" + id
	e.do("PUT", base+"/schema", map[string]any{"changes": []any{map[string]any{"op": "drop_column", "column": "size"}}}, own).status(200)
	r := e.do("GET", base+"/data", nil, own, header{"X-API-Version": "1.0.0"}).status(200)
	if !strings.HasPrefix(r.Header.Get("Deprecation"), "@") || r.Header.Get("Sunset") == "" || !strings.Contains(r.Header.Get("Link"), `rel="successor-version"`) {
		t.Fatalf("deprecated version headers: %v", r.Header)
	}
	if r := e.do("GET", base+"/data", nil, own, header{"X-API-Version": "2.0.0"}).status(200); r.Header.Get("Deprecation") != "" {
		t.Fatalf("the current version is not deprecated: %v", r.Header)
	}
	e.do("GET", base+"/data", nil, own, header{"X-API-Version": "7.0.0"}).apiError(400, "VALIDATION_ERROR", "header.X-API-Version", "enum")
}

// TestDatasetJSONSchema: a record as JSON Schema, nullable columns as null types, at any
// version.
func TestDatasetJSONSchema(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	own := bearer(e.ownerToken)
	id := e.uploadAndCreate(e.ownerToken, "Items", "i.csv", "name,size\npen,1\nbox,\n")
	e.waitDataset(e.ownerToken, id)
	base := "/api/v1/datasets/" + id
	s := e.do("GET", base+"/schema", nil, own).status(200)
	body := string(s.Body)
	if !strings.Contains(body, `"$schema":"https://json-schema.org/draft/2020-12/schema"`) || !strings.Contains(body, `"x-version":"1.0.0"`) || !strings.Contains(body, `"type":"object"`) ||
		!strings.Contains(body, `"size":{`) || !strings.Contains(body, `"null"`) || strings.Contains(body, `"nullable"`) ||
		!strings.Contains(body, `"$defs":{"ItemCreate"`) || !strings.HasPrefix(s.Header.Get("Content-Type"), "application/schema+json") {
		t.Fatalf("JSON Schema: %s", body)
	}
	e.do("PUT", base+"/schema", map[string]any{"changes": []any{map[string]any{"op": "drop_column", "column": "size"}}}, own).status(200)
	if s := e.do("GET", base+"/schema", nil, own).status(200); strings.Contains(string(s.Body), `"size"`) || !strings.Contains(string(s.Body), `"x-version":"2.0.0"`) {
		t.Fatalf("after the change: %s", s.Body)
	}
	if s := e.do("GET", base+"/schema?version=1.0.0", nil, own).status(200); !strings.Contains(string(s.Body), `"size"`) {
		t.Fatalf("version 1.0.0: %s", s.Body)
	}
}

// TestValidateSchemaChange: a dry run tells the version a change would release, its
// breaking changes and the rows that violate it, and changes nothing.
func TestValidateSchemaChange(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	own := bearer(e.ownerToken)
	id := e.uploadAndCreate(e.ownerToken, "People", "p.csv", "name,email,age\nAnn,ann@example.com,30\nBob,,41\n")
	e.waitDataset(e.ownerToken, id)
	url := "/api/v1/datasets/" + id + "/validate-schema"
	dry := func(c map[string]any) *resp {
		t.Helper()
		return e.do("POST", url, map[string]any{"changes": []any{c}}, own).status(200)
	}
	r := dry(map[string]any{"op": "alter_column", "column": "email", "required": true})
	if r.get("valid") != false || r.len("violations") != 1 || !strings.Contains(string(r.Body), "Bob") && !strings.Contains(string(r.Body), `"id":2`) || r.get("next_version") != nil {
		t.Fatalf("violated change: %s", r.Body)
	}
	r = dry(map[string]any{"op": "drop_column", "column": "age"})
	if r.get("valid") != true || r.str("current_version") != "1.0.0" || r.str("next_version") != "2.0.0" || r.str("level") != "major" ||
		r.len("breaking_changes") == 0 || !strings.Contains(string(r.Body), "removed the request property `age`") {
		t.Fatalf("breaking change: %s", r.Body)
	}
	r = dry(map[string]any{"op": "add_column", "column": map[string]any{"name": "city", "type": "text"}})
	if r.get("valid") != true || r.str("next_version") != "1.1.0" || r.str("level") != "minor" || r.len("breaking_changes") != 0 {
		t.Fatalf("additive change: %s", r.Body)
	}
	e.do("POST", url, map[string]any{"changes": []any{map[string]any{"op": "drop_column", "column": "nope"}}}, own).apiError(400, "VALIDATION_ERROR")
	// Nothing changed.
	if v := e.do("GET", "/api/v1/datasets/"+id+"/versions", nil, own).status(200); v.len("versions") != 1 {
		t.Fatalf("a dry run released a version: %s", v.Body)
	}
	if rec := e.do("GET", "/api/v1/datasets/"+id+"/data/1", nil, own).status(200); rec.num("age") != 30 {
		t.Fatalf("a dry run changed the table: %s", rec.Body)
	}
	_, viewer := e.member(e.orgID, "viewer")
	e.do("POST", url, map[string]any{"changes": []any{map[string]any{"op": "drop_column", "column": "age"}}}, bearer(viewer)).authError(403, "PERMISSION_DENIED")
}

// TestValidateOpenAPI: any description, JSON or YAML, is checked part by part, each error
// with its JSON pointer; the platform's own and a dataset's descriptions are valid.
func TestValidateOpenAPI(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	own := bearer(e.ownerToken)
	spec := e.do("GET", "/api/v1/openapi.json", nil).status(200)
	var doc map[string]any
	if err := json.Unmarshal(spec.Body, &doc); err != nil {
		t.Fatal(err)
	}
	if r := e.do("POST", "/api/v1/validate/openapi", doc, own).status(200); r.get("valid") != true || r.num("operations") < 50 {
		t.Fatalf("the platform's description: %s", r.Body)
	}
	yml := "openapi: 3.0.3\ninfo: {title: T, version: '1'}\npaths:\n  /a:\n    get:\n      responses: {}\n"
	r := e.do("POST", "/api/v1/validate/openapi", yml, own, header{"Content-Type": "application/yaml"}).status(200)
	if r.get("valid") != false || r.str("errors.0.path") != "/paths/~1a/get" {
		t.Fatalf("yaml with an operation without responses: %s", r.Body)
	}
	bad := map[string]any{"openapi": "3.0.3", "info": map[string]any{"title": "T"}, "paths": map[string]any{},
		"components": map[string]any{"schemas": map[string]any{"X": map[string]any{"type": "strin"}}}}
	r = e.do("POST", "/api/v1/validate/openapi", bad, own).status(200)
	body := string(r.Body)
	if r.get("valid") != false || !strings.Contains(body, `"path":"/info"`) || !strings.Contains(body, `"path":"/components/schemas/X"`) || !strings.Contains(body, `"path":"/paths"`) {
		t.Fatalf("several problems: %s", body)
	}
	e.do("POST", "/api/v1/validate/openapi", map[string]any{"openapi": "3.0.3"}).authError(401, "AUTH_REQUIRED")
	// A dataset's own description is valid too.
	id := e.uploadAndCreate(e.ownerToken, "Notes", "n.csv", "text\nhello\n")
	e.waitDataset(e.ownerToken, id)
	var dd map[string]any
	json.Unmarshal(e.do("GET", "/api/v1/datasets/"+id+"/openapi.json", nil, own).status(200).Body, &dd)
	if r := e.do("POST", "/api/v1/validate/openapi", dd, own).status(200); r.get("valid") != true {
		t.Fatalf("a dataset's description: %s", r.Body)
	}
}

// TestDescriptionExtensions: the x- extensions in a dataset's description:
// personal data found by name and by value, code samples on every operation, constraints,
// relationships, access control, the OAuth 2.0 scheme with the platform's scopes.
func TestDescriptionExtensions(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	own := bearer(e.ownerToken)
	c := e.uploadAndCreate(e.ownerToken, "Customers", "c.csv", "id,name,contact,phone,tier\n1,Ann,ann@example.com,+14155550101,gold\n2,Bob,bob@example.org,+442071838750,silver\n")
	e.waitDataset(e.ownerToken, c)
	o := e.uploadAndCreate(e.ownerToken, "Orders", "o.csv", "id,customer_id,amount\n10,1,5\n11,2,7\n")
	e.waitDataset(e.ownerToken, o)
	// Imported columns are nullable; a schema change makes name required (x-constraints).
	e.do("PUT", "/api/v1/datasets/"+c+"/schema", map[string]any{"changes": []any{
		map[string]any{"op": "alter_column", "column": "name", "required": true}}}, own).status(200)
	d := e.do("GET", "/api/v1/datasets/"+c+"/openapi.json", nil, own).status(200)
	body := string(d.Body)
	for _, want := range []string{
		`"x-pii":[{"category":"email","field":"contact"},{"category":"name","field":"name"},{"category":"phone","field":"phone"}]`,
		`"x-tagGroups":`, `"x-code-samples":[{"label":"curl"`, `"lang":"Python"`, `"lang":"Go"`, `"lang":"JavaScript"`,
		`"x-access-control":{"delete":["developer","admin","owner"],"read":["analyst","developer","admin","owner"]`,
		`"x-dataset-config":{"audit_trail":true,"encryption_at_rest":false,"row_level_security":true,"soft_delete":true}`,
		`"x-constraints":[{"name":"name_not_null","type":"not_null"}]`, `"x-display-name":"Customers"`, `"x-logo":{`, `"x-documentation":{`,
		`"x-generator-config":{`, `"x-encryption":{`, `"x-security":{`, `"x-validation":[]`, `"x-relationship":{"foreign_key":"customer_id"`,
		`"oauth2":{"description"`, `"authorizationCode":{"authorizationUrl":"http://dp.test/api/v1/auth/oauth/authorize"`, `"datasets:write":"create and change datasets and records"`,
		`"admin:billing"`, `"offline_access"`, `"x-dataset-id":"` + c + `"`, `"x-generated-at":"`, `"x-api-versions":[`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("the description lacks %s", want)
		}
	}
	if t.Failed() {
		t.Fatalf("%s", body)
	}
	// Every operation has its samples.
	var doc struct {
		Paths map[string]map[string]map[string]any `json:"paths"`
	}
	json.Unmarshal(d.Body, &doc)
	for p, ops := range doc.Paths {
		for m, op := range ops {
			if m == "parameters" {
				continue
			}
			if s, ok := op["x-code-samples"].([]any); !ok || len(s) != 4 {
				t.Errorf("%s %s has no code samples", m, p)
			}
		}
	}
}

// TestDescriptionsPassLinters: the platform description and the customer-shaped dataset's
// description (current and an older version, JSON and YAML) have no error and no warning under
// `redocly lint` with the recommended rules and `spectral lint` with spectral:oas (@redocly/cli
// and @stoplight/spectral-cli, installed by scripts/ensure-node-tools.sh from scripts/tools/lint's
// lock file; the rules turned off are in its redocly.yaml and .spectral.yaml, each with its reason).
func TestDescriptionsPassLinters(t *testing.T) {
	t.Parallel()
	bin, spectral := lintTool(t, "redocly"), lintTool(t, "spectral")
	e := newEnv(t)
	own := bearer(e.ownerToken)
	c := e.customers()
	o := e.uploadAndCreate(e.ownerToken, "Orders", "o.csv", "id,customer_id,amount\n10,1,5\n")
	e.waitDataset(e.ownerToken, o)
	e.do("PUT", "/api/v1/datasets/"+c+"/schema", map[string]any{"changes": []any{map[string]any{"op": "drop_column", "column": "tags"}}}, own).status(200)
	dir := t.TempDir()
	for name, path := range map[string]string{
		"customers.json": "/api/v1/datasets/" + c + "/openapi.json", "customers.yaml": "/api/v1/datasets/" + c + "/openapi.yaml",
		"customers-1.0.0.json": "/api/v1/datasets/" + c + "/openapi.json?version=1.0.0", "orders.json": "/api/v1/datasets/" + o + "/openapi.json",
	} {
		r := e.do("GET", path, nil, own).status(200)
		if err := os.WriteFile(filepath.Join(dir, name), r.Body, 0o644); err != nil {
			t.Fatal(err)
		}
		redoclyClean(t, bin, filepath.Join(dir, name))
		spectralClean(t, spectral, filepath.Join(dir, name))
	}
	redoclyClean(t, bin, "../gen/spec/openapi.yaml")
	spectralClean(t, spectral, "../gen/spec/openapi.yaml")
}

// lintTool is the path of a linter installed under scripts/tools/lint.
func lintTool(t *testing.T, name string) string {
	t.Helper()
	bin, err := filepath.Abs("../scripts/tools/lint/node_modules/.bin/" + name)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("%s is not installed: run scripts/ensure-node-tools.sh (go tool task test does): %v", name, err)
	}
	return bin
}

// spectralClean lints a description with the suite's Spectral ruleset and fails on any
// finding, whatever its severity (hints included).
func spectralClean(t *testing.T, bin, path string) {
	t.Helper()
	out, err := exec.Command(bin, "lint", "--ruleset", "../scripts/tools/lint/.spectral.yaml", "--fail-severity", "hint", "--format", "stylish", path).CombinedOutput()
	if err != nil || len(bytes.TrimSpace(out)) != 0 && !strings.Contains(string(out), "No results") {
		t.Errorf("spectral lint %s: %v\n%s", path, err, out)
	}
}

// lintWarning is a warning line of Redocly's summary ("warning <rule>: <count>").
var lintWarning = regexp.MustCompile(`(?m)^warning `)

// redoclyClean lints a description with the suite's Redocly configuration and fails on any
// error or warning.
func redoclyClean(t *testing.T, bin, path string) {
	t.Helper()
	out, err := exec.Command(bin, "lint", "--config", "../scripts/tools/lint/redocly.yaml", path, "--format=summary").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "Your API description is valid") || lintWarning.Match(out) {
		t.Errorf("redocly lint %s: %v\n%s", path, err, out)
	}
}

// TestManyToManyRelationship: a junction dataset (order items pointing at orders and at
// products) makes orders and products many-to-many in their descriptions.
func TestManyToManyRelationship(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	own := bearer(e.ownerToken)
	o := e.uploadAndCreate(e.ownerToken, "Orders", "o.csv", "id,total\n1,10\n2,20\n")
	p := e.uploadAndCreate(e.ownerToken, "Products", "p.csv", "id,title\n7,pen\n8,ink\n")
	for _, id := range []string{o, p} {
		e.waitDataset(e.ownerToken, id)
	}
	j := e.uploadAndCreate(e.ownerToken, "Order items", "j.csv", "order_id,product_id,qty\n1,7,2\n2,8,1\n")
	e.waitDataset(e.ownerToken, j)
	d := e.do("GET", "/api/v1/datasets/"+o+"/openapi.json", nil, own).status(200)
	body := string(d.Body)
	want := `{"foreign_key":"product_id","junction_name":"Order items","junction_table":"` + j + `","local_key":"order_id","name":"products","target":"` + p + `","type":"many-to-many"}`
	if !strings.Contains(body, want) || !strings.Contains(body, `"type":"one-to-many"`) {
		t.Fatalf("orders lacks the many-to-many relationship %s:\n%s", want, body)
	}
	if d := e.do("GET", "/api/v1/datasets/"+p+"/openapi.json", nil, own).status(200); !strings.Contains(string(d.Body), `"target":"`+o+`","type":"many-to-many"`) {
		t.Fatalf("products lacks the many-to-many relationship: %s", d.Body)
	}
}

// TestUniqueConstraintIsBreaking: a schema change that makes a column unique narrows which
// writes succeed (409 where 201 was), so it is a major version, listed in the changelog and
// the compatibility report with the property it concerns.
func TestUniqueConstraintIsBreaking(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	own := bearer(e.ownerToken)
	id := e.uploadAndCreate(e.ownerToken, "Customers", "c.csv", "name,email\nAnn,ann@example.com\nBob,bob@example.com\n")
	e.waitDataset(e.ownerToken, id)
	base := "/api/v1/datasets/" + id
	e.do("PUT", base+"/schema", map[string]any{"changes": []any{map[string]any{"op": "alter_column", "column": "email", "unique": true}}}, own).status(200)
	if d := e.do("GET", base+"/openapi.json", nil, own).status(200); d.str("info.version") != "2.0.0" {
		t.Fatalf("a unique constraint is a major version: %s", d.str("info.version"))
	}
	c := e.do("GET", base+"/changelog", nil, own).status(200)
	if c.str("versions.0.level") != "major" || !strings.Contains(string(c.Body), `"id":"request-property-unique-added"`) ||
		!strings.Contains(string(c.Body), "'email' became unique (x-unique)") {
		t.Fatalf("changelog: %s", c.Body)
	}
	cp := e.do("GET", base+"/compatibility?from=1.0.0&to=2.0.0", nil, own).status(200)
	if !strings.Contains(string(cp.Body), "request-property-unique-added") || cp.get("compatible") != false {
		t.Fatalf("compatibility: %s", cp.Body)
	}
	e.do("POST", base+"/data", map[string]any{"name": "Twin", "email": "ann@example.com"}, own).apiError(409, "CONFLICT")
}
