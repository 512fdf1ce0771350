package tests

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// The record API of a database-connected dataset: each table of the connected database is
// served through its own description, reads and writes go to the database live (through
// postgres_fdw), the database's defaults, sequences and constraints apply.
func TestConnectedRecordAPI(t *testing.T) {
	t.Parallel()
	host, port, password := externalPostgres(t)
	e := newEnv(t)
	own := bearer(e.ownerToken)
	conn := map[string]any{"type": "postgresql", "host": host, "port": port, "database": "shop", "username": "postgres", "password": password, "ssl_mode": "disable"}
	c := e.do("POST", "/api/v1/projects/"+e.projectID+"/datasets/database", map[string]any{"name": "Shop", "connection": conn}, own).status(202)
	id := c.str("id")
	e.waitDataset(e.ownerToken, id)
	ext, err := sql.Open("postgres", fmt.Sprintf("postgres://postgres:%s@%s:%d/shop?sslmode=disable", url.QueryEscape(password), host, port))
	if err != nil {
		t.Fatal(err)
	}
	defer ext.Close()
	data := "/api/v1/datasets/" + id + "/data"
	customers := func(rest string) string { return data + rest + sep(rest) + "table=customers" }
	orders := func(rest string) string { return data + rest + sep(rest) + "table=orders" }

	// Each table has its own description, its operations named after it; the first table
	// (audit_log, no primary key) is the default and is read-only, with no record paths.
	d := e.do("GET", "/api/v1/datasets/"+id+"/openapi.json?table=customers", nil, own).status(200)
	if d.get("paths./api/v1/datasets/{dataset_id}/data/{id}.put.operationId") != "updateCustomer" ||
		d.get("paths./api/v1/datasets/{dataset_id}/data.get.operationId") != "listCustomers" ||
		d.get("paths./api/v1/datasets/{dataset_id}/data/stream.get.responses.200") != nil ||
		d.get("components.schemas.Customer.properties.id.readOnly") != true ||
		d.get("components.schemas.Customer.properties.created_at") != nil ||
		d.get("components.schemas.CustomerCreate.properties.id") != nil ||
		d.get("components.schemas.CustomerUpdate.properties.version") != nil ||
		d.str("components.schemas.CustomerCreate.required.0") != "name" || d.len("components.schemas.CustomerCreate.required") != 2 ||
		d.get("x-dataset-config.soft_delete") != false || d.get("x-dataset-config.connected_table.writable") != true {
		t.Fatalf("customers description: %s", d.Body)
	}
	a := e.do("GET", "/api/v1/datasets/"+id+"/openapi.json", nil, own).status(200)
	if a.get("info.title") != "audit_log API" || a.get("paths./api/v1/datasets/{dataset_id}/data/{id}") != nil ||
		a.get("paths./api/v1/datasets/{dataset_id}/data.post") != nil || a.get("paths./api/v1/datasets/{dataset_id}/data.get") == nil {
		t.Fatalf("audit_log description: %s", a.Body)
	}
	// A connected table's description (writable with a key; read-only without) lints clean too.
	dir := t.TempDir()
	for name, r := range map[string]*resp{"customers.json": d, "audit_log.json": a} {
		os.WriteFile(filepath.Join(dir, name), r.Body, 0o644)
		redoclyClean(t, lintTool(t, "redocly"), filepath.Join(dir, name))
		spectralClean(t, lintTool(t, "spectral"), filepath.Join(dir, name))
	}
	if y := e.do("GET", "/api/v1/datasets/"+id+"/openapi.yaml?table=orders", nil, own).status(200); !strings.Contains(string(y.Body), "operationId: createOrder") {
		t.Fatalf("orders YAML: %s", y.Body)
	}
	e.do("GET", "/api/v1/datasets/"+id+"/openapi.json?table=nope", nil, own).apiError(400, "VALIDATION_ERROR", "query.table", "not_found")
	e.do("GET", data+"?table=nope", nil, own).apiError(400, "VALIDATION_ERROR", "query.table", "not_found")
	e.do("POST", data, map[string]any{"id": 1}, own).apiError(405, "METHOD_NOT_ALLOWED")
	e.do("GET", data+"/1", nil, own).apiError(405, "METHOD_NOT_ALLOWED")
	e.do("GET", customers("/stream"), nil, own).apiError(405, "METHOD_NOT_ALLOWED")
	if l := e.do("GET", data, nil, own).status(200); l.len("data") != 0 || l.get("pagination.next_cursor") != nil {
		t.Fatalf("audit_log list: %s", l.Body)
	}
	e.do("GET", data+"?cursor=abc", nil, own).apiError(400, "VALIDATION_ERROR", "query.cursor", "invalid_cursor")

	// Reads: filters, sort, fields, keyset cursors over the key, links with the table.
	l := e.do("GET", customers("?filter[status]=active&sort=-age"), nil, own).status(200)
	if l.len("data") != 2 || l.str("data.0.name") != "Cid" || l.str("data.1.name") != "Ann" || l.get("data.0.created_at") != nil ||
		l.str("data.0._links.self") != "/api/v1/datasets/"+id+"/data/3?table=customers" || l.num("pagination.total") != 2 {
		t.Fatalf("list: %s", l.Body)
	}
	p1 := e.do("GET", customers("?limit=2"), nil, own).status(200)
	if p1.num("data.0.id") != 1 || p1.num("data.1.id") != 2 || p1.str("pagination.next_cursor") == "" {
		t.Fatalf("page 1 (by key): %s", p1.Body)
	}
	p2 := e.do("GET", customers("?limit=2&cursor="+p1.str("pagination.next_cursor")), nil, own).status(200)
	if p2.len("data") != 1 || p2.num("data.0.id") != 3 || p2.get("pagination.next_cursor") != nil {
		t.Fatalf("page 2: %s", p2.Body)
	}
	e.do("GET", orders("?cursor="+p1.str("pagination.next_cursor")), nil, own).apiError(400, "VALIDATION_ERROR", "query.cursor", "invalid_cursor")
	if f := e.do("GET", customers("?fields=name&filter[joined][gte]=2024-02-01"), nil, own).status(200); f.len("data") != 1 || f.str("data.0.name") != "Bob" || f.get("data.0.email") != nil || f.num("data.0.id") != 2 || f.str("data.0._links.self") == "" {
		t.Fatalf("fields (those and the key, with _links) and a date filter: %s", f.Body)
	}

	g := e.do("GET", customers("/1"), nil, own).status(200)
	tag := g.Header.Get("ETag")
	if g.str("name") != "Ann" || g.str("status") != "active" || tag == "" || g.str("_links.self") != "/api/v1/datasets/"+id+"/data/1?table=customers" {
		t.Fatalf("get: %s %v", g.Body, g.Header)
	}
	if r := e.do("GET", customers("/1"), nil, own, header{"If-None-Match": tag}); r.Code != 304 {
		t.Fatalf("If-None-Match: %d", r.Code)
	}
	if n := e.do("GET", customers("/1?fields=name"), nil, own).status(200); n.Header.Get("ETag") != tag || n.get("age") != nil || n.get("email") != nil || n.str("name") != "Ann" {
		t.Fatalf("a narrowed read keeps the record's ETag: %s %v", n.Body, n.Header)
	}
	// The database's foreign keys are links between its tables, both ways, and embed.
	if g.str("_links.orders") != "/api/v1/datasets/"+id+"/data?table=orders&filter%5Bcustomer_id%5D=1" {
		t.Fatalf("one-to-many link: %s", g.Body)
	}
	if l.str("data.1._links.orders") != g.str("_links.orders") {
		t.Fatalf("the list's links differ from the record's: %s", l.Body)
	}
	o10 := e.do("GET", orders("/10?expand=customer"), nil, own).status(200)
	if o10.str("_links.customer") != "/api/v1/datasets/"+id+"/data/1?table=customers" || o10.str("_embedded.customer.name") != "Ann" {
		t.Fatalf("many-to-one link and expand: %s", o10.Body)
	}
	if inc := e.do("GET", customers("/1?include=orders"), nil, own).status(200); inc.len("_embedded.orders") != 2 || inc.num("_embedded.orders.0.id") != 10 {
		t.Fatalf("include: %s", inc.Body)
	}
	if rel := e.do("GET", "/api/v1/datasets/"+id+"/openapi.json?table=orders", nil, own).status(200); rel.str("components.schemas.Order.properties._links.properties.customer.x-relationship.target_table") != "customers" {
		t.Fatalf("x-relationship: %s", rel.Body)
	}
	e.do("GET", customers("/abc"), nil, own).apiError(400, "VALIDATION_ERROR", "path.id")
	e.do("GET", customers("/99"), nil, own).apiError(404, "RECORD_NOT_FOUND")

	// Create: the database's sequence and defaults fill what the body leaves out.
	cr := e.do("POST", customers(""), map[string]any{"name": "Dee", "email": "dee@example.com"}, own).status(201)
	if cr.num("id") != 4 || cr.str("status") != "pending" || cr.Header.Get("Location") != "/api/v1/datasets/"+id+"/data/4?table=customers" {
		t.Fatalf("create: %s %v", cr.Body, cr.Header)
	}
	var status string
	if err := ext.QueryRow(`SELECT status FROM customers WHERE id = 4 AND name = 'Dee'`).Scan(&status); err != nil || status != "pending" {
		t.Fatalf("not in the database: %v %q", err, status)
	}
	e.do("POST", customers(""), map[string]any{"name": "Eve", "email": "dee@example.com"}, own).apiError(409, "CONFLICT", "email")
	e.do("POST", customers(""), map[string]any{"id": 9, "name": "Eve", "email": "eve@example.com"}, own).apiError(400, "VALIDATION_ERROR", "body.id")
	e.do("POST", customers(""), map[string]any{"name": "Eve", "email": "eve@example.com", "age": -1}, own).apiError(400, "VALIDATION_ERROR", "body.age", "minimum")
	e.do("POST", customers(""), map[string]any{"name": "Eve", "email": "eve@example.com", "status": "gone"}, own).apiError(400, "VALIDATION_ERROR", "body.status", "enum")
	var n int
	ext.QueryRow(`SELECT count(*) FROM customers`).Scan(&n)
	if n != 4 {
		t.Fatalf("refused creates wrote: %d customers", n)
	}
	// A table whose key has no default takes it from the body; a column renamed locally
	// (order_note ← "Order Note") writes the remote one; amount takes its default.
	o := e.do("POST", orders(""), map[string]any{"id": 20, "customer_id": 2, "order_note": "by phone"}, own).status(201)
	if o.num("id") != 20 || o.get("amount") != 0.0 || o.str("order_note") != "by phone" {
		t.Fatalf("order: %s", o.Body)
	}
	e.do("POST", orders(""), map[string]any{"id": 21, "customer_id": 77}, own).apiError(409, "CONFLICT")

	// Replace and patch, guarded by the ETag (a connected record has no version).
	cur := e.do("GET", customers("/4"), nil, own).status(200)
	etag4 := cur.Header.Get("ETag")
	put := e.do("PUT", customers("/4"), map[string]any{"name": "Dee D", "email": "dee@example.com", "age": 40}, own, header{"If-Match": etag4}).status(200)
	if put.str("name") != "Dee D" || put.num("age") != 40 || put.str("status") != "pending" || put.Header.Get("ETag") == etag4 {
		t.Fatalf("put: %s", put.Body)
	}
	e.do("PUT", customers("/4"), map[string]any{"name": "Stale", "email": "dee@example.com"}, own, header{"If-Match": etag4}).apiError(409, "OPTIMISTIC_LOCK_ERROR")
	e.do("PUT", customers("/4"), map[string]any{"name": "X", "email": "dee@example.com", "version": 1}, own).apiError(400, "VALIDATION_ERROR", "body.version")
	pt := e.do("PATCH", customers("/4"), map[string]any{"$inc": map[string]any{"age": 2}}, own).status(200)
	if pt.num("age") != 42 || pt.str("name") != "Dee D" {
		t.Fatalf("patch $inc: %s", pt.Body)
	}
	jp := e.do("PATCH", customers("/4"), `[{"op":"test","path":"/age","value":42},{"op":"replace","path":"/status","value":"inactive"}]`, own,
		header{"Content-Type": "application/json-patch+json"}).status(200)
	if jp.str("status") != "inactive" {
		t.Fatalf("json patch: %s", jp.Body)
	}
	ext.QueryRow(`SELECT status FROM customers WHERE id = 4`).Scan(&status)
	if status != "inactive" {
		t.Fatalf("patch not in the database: %q", status)
	}
	// Two writers with the same ETag: exactly one wins (the row is locked in the database).
	tag4 := e.do("GET", customers("/4"), nil, own).status(200).Header.Get("ETag")
	var wg sync.WaitGroup
	codes := make([]int, 2)
	for i := range codes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := e.do("PATCH", customers("/4"), map[string]any{"name": fmt.Sprintf("W%d", i)}, own, header{"If-Match": tag4})
			codes[i] = r.Code
		}()
	}
	wg.Wait()
	if codes[0]+codes[1] != 200+409 {
		t.Fatalf("concurrent writers with one ETag: %v", codes)
	}

	// Query, aggregate and export read the table.
	q := e.do("POST", orders("/query"), map[string]any{"sql": "SELECT customer_id, sum(amount) AS total FROM ${table} GROUP BY 1 ORDER BY 1"}, own).status(200)
	if q.num("meta.row_count") != 3 || q.num("data.0.customer_id") != 1 {
		t.Fatalf("query: %s", q.Body)
	}
	ag := e.do("GET", orders("/aggregate?group_by=customer_id&agg=count,sum(amount)&sort=customer_id"), nil, own).status(200)
	if ag.num("meta.groups") != 3 || ag.num("data.0.count") != 2 {
		t.Fatalf("aggregate: %s", ag.Body)
	}
	ex := e.do("GET", customers("/export?fields=id,name&filter[status]=active"), nil, own).status(200)
	if string(ex.Body) != "id,name\n1,Ann\n3,Cid\n" || ex.Header.Get("X-Total-Records") != "2" {
		t.Fatalf("export: %q %v", ex.Body, ex.Header)
	}

	// Bulk: atomic means nothing is written when one operation fails.
	b := e.do("POST", customers("/bulk"), map[string]any{"operations": []any{
		map[string]any{"method": "create", "data": map[string]any{"name": "Fay", "email": "fay@example.com"}},
		map[string]any{"method": "create", "data": map[string]any{"name": "Gus", "email": "ann@example.com"}},
	}}, own).status(200)
	if b.num("failed") != 2 || b.str("results.1.error.code") != "CONFLICT" {
		t.Fatalf("atomic bulk: %s", b.Body)
	}
	ext.QueryRow(`SELECT count(*) FROM customers WHERE name = 'Fay'`).Scan(&n)
	if n != 0 {
		t.Fatal("an atomic bulk with a failure wrote")
	}
	b = e.do("POST", customers("/bulk"), map[string]any{"operations": []any{
		map[string]any{"method": "create", "data": map[string]any{"name": "Fay", "email": "fay@example.com"}},
		map[string]any{"method": "update", "ids": []any{4}, "data": map[string]any{"age": 43}},
		map[string]any{"method": "delete", "filter": map[string]any{"name": "Fay"}, "soft": false},
	}}, own).status(200)
	if b.num("succeeded") != 3 || b.num("results.0.id") <= 4 || b.num("results.1.ids.0") != 4 || b.num("results.2.count") != 1 {
		t.Fatalf("bulk: %s", b.Body)
	}
	if b := e.do("POST", customers("/bulk"), map[string]any{"operations": []any{map[string]any{"method": "delete", "ids": []any{4}, "soft": true}}}, own).
		status(200); b.str("results.0.error.code") != "VALIDATION_ERROR" {
		t.Fatalf("a soft bulk delete of connected records: %s", b.Body)
	}

	// Delete is for good; the database's foreign keys answer for the records that others refer to.
	e.do("DELETE", customers("/4?soft=true"), nil, own).apiError(400, "VALIDATION_ERROR", "query.soft")
	e.do("DELETE", customers("/1"), nil, own).apiError(409, "CONFLICT")
	del := e.do("DELETE", customers("/4"), nil, own).status(200)
	if del.get("deleted") != true || del.num("id") != 4 || del.get("deleted_at") != nil {
		t.Fatalf("delete: %s", del.Body)
	}
	ext.QueryRow(`SELECT count(*) FROM customers WHERE id = 4`).Scan(&n)
	if n != 0 {
		t.Fatal("the record is still in the database")
	}
	e.do("DELETE", customers("/4"), nil, own).apiError(404, "RECORD_NOT_FOUND")

	// Roles hold as for uploaded datasets: an analyst reads, cannot write.
	_, analyst := e.member(e.orgID, "analyst")
	e.do("GET", customers("/1"), nil, bearer(analyst)).status(200)
	e.do("POST", customers(""), map[string]any{"name": "Hal", "email": "hal@example.com"}, bearer(analyst)).authError(403, "PERMISSION_DENIED")
}

func sep(rest string) string {
	if strings.Contains(rest, "?") {
		return "&"
	}
	return "?"
}

// A connected PostgreSQL table whose columns have defaults of every kind: constants of the
// column's type (jsonb and json documents, arrays, text, enum labels, negative numbers,
// dates and timestamps) are the description's defaults, typed; expressions (now(),
// gen_random_uuid(), nextval, ARRAY[...]) are not defaults a client can know and are named
// in x-default-expression. The description is valid and the record API serves the table.
func TestConnectedDefaults(t *testing.T) {
	t.Parallel()
	c, _ := externalShop(t)
	admin, err := sql.Open("postgres", c.URL("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	if _, err := admin.Exec(`CREATE DATABASE defs`); err != nil {
		t.Fatal(err)
	}
	ext, err := sql.Open("postgres", c.URL("defs"))
	if err != nil {
		t.Fatal(err)
	}
	defer ext.Close()
	if _, err := ext.Exec(`
		CREATE TYPE mood AS ENUM ('happy', 'sad');
		CREATE SEQUENCE things_seq;
		CREATE TABLE things (
			id bigserial PRIMARY KEY,
			name text NOT NULL,
			doc jsonb NOT NULL DEFAULT '{}'::jsonb,
			obj jsonb DEFAULT '{"a":1}'::jsonb,
			list jsonb DEFAULT '[]',
			js json DEFAULT '{"b": [1, "x''s"]}',
			tags text[] DEFAULT '{}',
			nums integer[] DEFAULT '{1,-2}',
			words text[] DEFAULT '{"a b",c,"d\"e"}'::text[],
			labels text[] DEFAULT ARRAY['a', 'b'],
			none text[] DEFAULT ARRAY[]::text[],
			created timestamptz DEFAULT now(),
			uid uuid DEFAULT gen_random_uuid(),
			seq integer DEFAULT nextval('things_seq'),
			note text DEFAULT 'x'::text,
			mood mood DEFAULT 'happy',
			neg integer DEFAULT -1,
			amount numeric(10, 2) DEFAULT '-2.50',
			day date DEFAULT '2024-01-02',
			at timestamptz DEFAULT '2024-01-02 03:04:05+00',
			flag boolean DEFAULT false);
		INSERT INTO things (name) VALUES ('first');
		-- A back-reference: PostgreSQL's regular expressions have them, OpenAPI's (ECMA) do not
		-- in this form the description's validator compiles: the table cannot be described.
		CREATE TABLE zodd (id int PRIMARY KEY, code text CHECK (code ~ '^(a)\1$'));
		INSERT INTO zodd VALUES (1, 'aa');
		-- A describable table that refers to it.
		CREATE TABLE zref (id int PRIMARY KEY, zodd_id int REFERENCES zodd (id));
		INSERT INTO zref VALUES (1, 1);`); err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(c.URL("defs"))
	password, _ := u.User.Password()
	e := newEnv(t)
	own := bearer(e.ownerToken)
	conn := map[string]any{"type": "postgresql", "host": "127.0.0.1", "port": c.Port, "database": "defs", "username": "postgres", "password": password, "ssl_mode": "disable"}
	id := e.do("POST", "/api/v1/projects/"+e.projectID+"/datasets/database", map[string]any{"name": "Defaults", "connection": conn}, own).status(202).str("id")
	if d := e.waitDataset(e.ownerToken, id); d.str("status") != "active" {
		t.Fatalf("dataset: %s", d.Body)
	}

	d := e.do("GET", "/api/v1/datasets/"+id+"/openapi.json?table=things", nil, own).status(200)
	props := "components.schemas.ThingCreate.properties."
	for field, want := range map[string]string{
		"doc": `{}`, "obj": `{"a":1}`, "list": `[]`, "js": `{"b":[1,"x's"]}`, "tags": `[]`, "nums": `[1,-2]`,
		"words": `["a b","c","d\"e"]`, "note": `"x"`, "mood": `"happy"`, "neg": `-1`, "amount": `-2.5`,
		"day": `"2024-01-02"`, "at": `"2024-01-02T03:04:05Z"`, "flag": `false`,
	} {
		got, _ := json.Marshal(d.get(props + field + ".default"))
		if string(got) != want {
			t.Errorf("%s default = %s, want %s", field, got, want)
		}
	}
	for field, expr := range map[string]string{"labels": "ARRAY['a'::text, 'b'::text]", "none": "ARRAY[]::text[]", "created": "now()", "uid": "gen_random_uuid()"} {
		p := "components.schemas.Thing.properties." + field
		if d.get(p+".default") != nil || d.str(p+".x-default-expression") != expr {
			t.Errorf("%s: default %v, x-default-expression %q, want %q", field, d.get(p+".default"), d.str(p+".x-default-expression"), expr)
		}
	}
	e.do("GET", "/api/v1/datasets/"+id+"/openapi.yaml?table=things", nil, own).status(200)

	data := "/api/v1/datasets/" + id + "/data"
	l := e.do("GET", data+"?table=things", nil, own).status(200)
	if l.len("data") != 1 || l.str("data.0.name") != "first" || l.get("data.0.doc") == nil {
		t.Fatalf("list: %s", l.Body)
	}
	r := e.do("POST", data+"?table=things", map[string]any{"name": "second", "obj": map[string]any{"z": true}}, own).status(201)
	if r.str("name") != "second" || r.get("obj.z") != true || r.num("neg") != -1 || r.str("mood") != "happy" || r.len("nums") != 2 || r.str("created") == "" {
		t.Fatalf("create: %s", r.Body)
	}
	e.do("GET", data+"/"+fmt.Sprint(r.num("id"))+"?table=things", nil, own).status(200)

	// A table the renderer cannot describe is reported, not a 500.
	z := e.do("GET", "/api/v1/datasets/"+id+"/openapi.json?table=zodd", nil, own).apiError(409, "DESCRIPTION_UNAVAILABLE")
	if !strings.Contains(z.str("error.details.reason"), "regexp") {
		t.Errorf("reason: %s", z.Body)
	}
	// The record API answers the same (read directly: there is no description to check it by).
	req, _ := http.NewRequest("GET", e.ts.URL+data+"?table=zodd", nil)
	req.Header.Set("Authorization", "Bearer "+e.ownerToken)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 409 || !strings.Contains(string(b), `"DESCRIPTION_UNAVAILABLE"`) {
		t.Errorf("record API of zodd: %d %s", res.StatusCode, b)
	}
	// A table that refers to it is served; embedding its records answers the same 409.
	zr := data + "/1?table=zref"
	if g := e.do("GET", zr, nil, own).status(200); g.num("zodd_id") != 1 {
		t.Errorf("zref: %s", g.Body)
	}
	for _, q := range []string{"&include=zodd", "&expand=zodd"} {
		e.do("GET", zr+q, nil, own).apiError(409, "DESCRIPTION_UNAVAILABLE")
	}
}
