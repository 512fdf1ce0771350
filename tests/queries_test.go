package tests

import (
	"bytes"
	"database/sql"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"dataplatform/cmd/dataplatform/config"

	"github.com/parquet-go/parquet-go"
	"github.com/xuri/excelize/v2"
)

// queryFixture is a project with customers and orders datasets (uploaded CSVs).
func queryFixture(t *testing.T) (e *env, customers, orders string) { return queryFixtureWith(t) }

func queryFixtureWith(t *testing.T, opts ...option) (e *env, customers, orders string) {
	e = newEnv(t, opts...)
	customers = e.uploadAndCreate(e.ownerToken, "Customers", "customers.csv",
		"customer_no,name,city,credit\n1,Ann,Berlin,120.5\n2,Bob,Paris,80\n3,Cid,Berlin,15\n4,Dee,Rome,\n")
	orders = e.uploadAndCreate(e.ownerToken, "Sales Orders", "orders.csv",
		"order_no,customer_ref,total,placed\n10,1,19.90,2024-03-01\n11,1,5.10,2024-03-02\n12,3,100,2024-04-10\n13,2,7.5,2024-05-01\n")
	for _, id := range []string{customers, orders} {
		if d := e.waitDataset(e.ownerToken, id); d.str("status") != "active" {
			t.Fatalf("dataset: %s", d.Body)
		}
	}
	return e, customers, orders
}

func (e *env) execute(body map[string]any, tok string) *resp {
	e.t.Helper()
	if _, ok := body["type"]; !ok {
		body["type"] = "sql"
	}
	return e.do("POST", "/api/v1/projects/"+e.projectID+"/queries/execute", body, bearer(tok))
}

// rows is results.rows as text, one line per row, values joined by |.
func rows(r *resp) string { return strings.Join(resultSet(r, true), "\n") }

func TestProjectSQLQuery(t *testing.T) {
	t.Parallel()
	e, customers, orders := queryFixture(t)
	// Datasets by name, quoted display name and identifier form; a join; grouping.
	for _, q := range []string{
		`SELECT c.name, sum(o.total) AS spent FROM customers c JOIN sales_orders o ON o.customer_ref = c.customer_no GROUP BY c.name ORDER BY spent DESC`,
		`SELECT c.name, sum(o.total) AS spent FROM "Customers" c JOIN "Sales Orders" o ON o.customer_ref = c.customer_no GROUP BY 1 ORDER BY 2 DESC`,
		`SELECT customers.name, sum(o.total) AS spent FROM ` + customers + ` AS customers JOIN ` + orders + ` o ON o.customer_ref = customers.customer_no GROUP BY 1 ORDER BY 2 DESC`,
	} {
		r := e.execute(map[string]any{"query": q}, e.ownerToken).status(200)
		if got := rows(r); got != "Cid|100\nAnn|25\nBob|7.5" {
			t.Fatalf("%s:\n%s\n%s", q, got, r.Body)
		}
		if r.str("status") != "completed" || r.str("type") != "sql" || r.str("original_query") != q || !strings.Contains(r.str("generated_sql"), `"`+e.orgID+`"."`+customers+`"`) ||
			r.num("results.row_count") != 3 || r.get("results.truncated") != false || r.str("results.columns.0.name") != "name" || r.str("results.columns.1.type") != "numeric" ||
			r.len("explanation.datasets_used") != 2 || r.get("metadata.cache_hit") != false || r.str("metadata.query_plan_hash") == "" || r.num("metadata.rows_scanned") == 0 {
			t.Fatalf("executed query: %s", r.Body)
		}
	}
	// A table named without an alias keeps its name for qualified columns.
	r := e.execute(map[string]any{"query": `SELECT customers.city, count(*) FROM customers GROUP BY customers.city ORDER BY 2 DESC, 1`}, e.ownerToken).status(200)
	if got := rows(r); got != "Berlin|2\nParis|1\nRome|1" {
		t.Fatalf("group by: %s", got)
	}
	// {{name}} placeholders are bound values, never text: an injection attempt is a value.
	q := `SELECT name FROM customers WHERE credit > {{min}} AND name <> {{who}} ORDER BY name`
	r = e.execute(map[string]any{"query": q, "parameters": map[string]any{"min": 10, "who": "x' OR '1'='1"}}, e.ownerToken).status(200)
	if got := rows(r); got != "Ann\nBob\nCid" || !strings.Contains(r.str("generated_sql"), "$1") {
		t.Fatalf("parameters: %s %s", got, r.Body)
	}
	e.execute(map[string]any{"query": q, "parameters": map[string]any{"min": 10}}, e.ownerToken).apiError(400, "VALIDATION_ERROR", "body.parameters.who", "required")
	e.execute(map[string]any{"query": q, "parameters": map[string]any{"min": []int{1}, "who": "a"}}, e.ownerToken).apiError(400, "VALIDATION_ERROR")
	// limit truncates; options are checked.
	r = e.execute(map[string]any{"query": `SELECT * FROM customers ORDER BY customer_no`, "options": map[string]any{"limit": 2, "explain": true}}, e.ownerToken).status(200)
	if r.num("results.row_count") != 2 || r.get("results.truncated") != true || r.get("explanation.query_plan") == nil {
		t.Fatalf("limit: %s", r.Body)
	}
	e.execute(map[string]any{"query": `SELECT 1`, "options": map[string]any{"limit": 0}}, e.ownerToken).apiError(400, "VALIDATION_ERROR", "body.options.limit", "minimum")
	e.execute(map[string]any{"query": `SELECT 1`, "options": map[string]any{"timeout_seconds": 121}}, e.ownerToken).apiError(400, "VALIDATION_ERROR", "body.options.timeout_seconds", "maximum")

	// Errors: unknown datasets (with what is available), syntax, missing columns, writes.
	r = e.execute(map[string]any{"query": "SELECT *\nFROM  nope"}, e.ownerToken).apiError(400, "INVALID_QUERY")
	if r.num("error.details.line") != 2 || r.num("error.details.column") != 7 || !strings.Contains(string(r.Body), `"customers"`) || !strings.Contains(string(r.Body), `"sales_orders"`) {
		t.Fatalf("unknown dataset: %s", r.Body)
	}
	r = e.execute(map[string]any{"query": "SELECT name FROM customers WHERE"}, e.ownerToken).apiError(400, "INVALID_QUERY")
	if r.num("error.details.line") != 1 || r.num("error.details.column") < 30 {
		t.Fatalf("syntax: %s", r.Body)
	}
	r = e.execute(map[string]any{"query": "SELECT\n  missing FROM customers"}, e.ownerToken).apiError(400, "INVALID_QUERY")
	if r.num("error.details.line") != 2 || !strings.Contains(r.str("error.details.message"), "missing") {
		t.Fatalf("missing column: %s", r.Body)
	}
	for _, q := range []string{
		"DELETE FROM customers",
		"WITH d AS (DELETE FROM customers RETURNING *) SELECT * FROM d",
		"SELECT * FROM customers FOR UPDATE",
		"SELECT set_config('role', 'postgres', true)",
		"SELECT * FROM pg_catalog.pg_roles",
		"SELECT 1; SELECT 2",
	} {
		e.execute(map[string]any{"query": q}, e.ownerToken).apiError(400, "FORBIDDEN_OPERATION")
	}
	// A statement past its timeout is cancelled: 408 with details.
	r = e.execute(map[string]any{"query": `SELECT count(*) FROM customers, generate_series(1, 10000000) a, generate_series(1, 1000) b`, "options": map[string]any{"timeout_seconds": 1}}, e.ownerToken).
		apiError(408, "QUERY_TIMEOUT")
	if r.num("error.details.timeout_seconds") != 1 {
		t.Fatalf("timeout: %s", r.Body)
	}
	// Natural language is the default type.
	if r := e.do("POST", "/api/v1/projects/"+e.projectID+"/queries/execute", map[string]any{"query": "how many customers live in berlin?"},
		bearer(e.ownerToken)).status(200); rows(r) != "2" || r.str("type") != "natural_language" || r.len("explanation.steps") < 3 {
		t.Fatalf("natural language: %s", r.Body)
	}
	r = e.do("POST", "/api/v1/projects/"+e.projectID+"/queries/execute", map[string]any{"query": "what is the weather like?"}, bearer(e.ownerToken)).
		apiError(400, "INVALID_QUERY")
	if r.len("error.details.suggestions") == 0 {
		t.Fatalf("refusal: %s", r.Body)
	}

	// datasets limits what the query may name.
	e.execute(map[string]any{"query": `SELECT * FROM customers`, "datasets": []string{orders}}, e.ownerToken).apiError(400, "INVALID_QUERY")
	e.execute(map[string]any{"query": `SELECT count(*) FROM sales_orders`, "datasets": []string{orders}}, e.ownerToken).status(200)
	e.execute(map[string]any{"query": `SELECT 1`, "datasets": []string{"ds_nope"}}, e.ownerToken).apiError(400, "VALIDATION_ERROR", "body.datasets.0", "not_found")

	// Soft-deleted records are invisible (row-level security).
	rec := e.do("GET", "/api/v1/datasets/"+customers+"/data?filter[name]=Dee", nil, bearer(e.ownerToken)).status(200)
	e.do("DELETE", fmt.Sprintf("/api/v1/datasets/%s/data/%d", customers, rec.num("data.0.customer_no")), nil, bearer(e.ownerToken)).status(200)
	if r := e.execute(map[string]any{"query": `SELECT count(*) FROM customers`}, e.ownerToken).status(200); rows(r) != "3" {
		t.Fatalf("soft-deleted rows counted: %s", rows(r))
	}

	// The cache answers the same query again.
	body := map[string]any{"query": `SELECT count(*) AS n FROM sales_orders`, "options": map[string]any{"cache": true}}
	e.execute(body, e.ownerToken).status(200)
	if r := e.execute(body, e.ownerToken).status(200); r.get("metadata.cache_hit") != true || rows(r) != "4" {
		t.Fatalf("cache: %s", r.Body)
	}
}

func TestProjectQueryIsolation(t *testing.T) {
	t.Parallel()
	e, customers, _ := queryFixture(t)
	own := bearer(e.ownerToken)
	// Another project of the same organization: its datasets cannot be named, by name or id.
	other := e.do("POST", "/api/v1/organizations/"+e.orgID+"/projects", map[string]any{"name": "Other"}, own).status(201).str("id")
	first := e.projectID
	e.projectID = other
	e.execute(map[string]any{"query": `SELECT * FROM customers`}, e.ownerToken).apiError(400, "INVALID_QUERY")
	e.execute(map[string]any{"query": `SELECT * FROM ` + customers}, e.ownerToken).apiError(400, "INVALID_QUERY")
	e.execute(map[string]any{"query": `SELECT * FROM "` + e.orgID + `"."` + customers + `"`}, e.ownerToken).apiError(400, "INVALID_QUERY")
	e.projectID = first
	// Roles: a viewer reads the history but may not execute; a stranger sees nothing.
	_, viewer := e.member(e.orgID, "viewer")
	e.execute(map[string]any{"query": `SELECT 1`}, viewer).authError(403, "PERMISSION_DENIED")
	e.do("GET", "/api/v1/projects/"+e.projectID+"/queries", nil, bearer(viewer)).status(200)
	_, analyst := e.member(e.orgID, "analyst")
	e.execute(map[string]any{"query": `SELECT count(*) FROM customers`}, analyst).status(200)
	stranger := newEnv(t)
	stranger.do("GET", "/api/v1/projects/"+e.projectID+"/queries", nil, bearer(stranger.ownerToken)).apiError(404, "NOT_FOUND")
}

func TestProjectQueryHistory(t *testing.T) {
	t.Parallel()
	e, customers, orders := queryFixture(t)
	own := bearer(e.ownerToken)
	base := "/api/v1/projects/" + e.projectID + "/queries"
	ok := e.execute(map[string]any{"query": `SELECT name FROM customers ORDER BY name`}, e.ownerToken).status(200)
	e.execute(map[string]any{"query": `SELECT total FROM sales_orders WHERE nope`}, e.ownerToken).apiError(400, "INVALID_QUERY")
	e.execute(map[string]any{"query": `SELECT 1 AS one`}, e.ownerToken).status(200)

	r := e.do("GET", base, nil, own).status(200)
	if r.num("pagination.total") != 3 || r.str("queries.0.query") != "SELECT 1 AS one" || r.str("queries.1.status") != "failed" ||
		r.str("queries.1.error_code") != "INVALID_QUERY" || r.str("queries.2.id") != ok.str("query_id") || r.num("queries.2.row_count") != 4 ||
		r.str("queries.2.created_by.name") == "" {
		t.Fatalf("history: %s", r.Body)
	}
	for q, want := range map[string]int{
		"?status=failed": 1, "?status=completed": 2, "?type=sql": 3, "?type=natural_language": 0,
		"?dataset_id=" + customers: 1, "?dataset_id=" + orders: 1, "?limit=1&page=2": 3,
		"?start_date=" + time.Now().UTC().Format(time.DateOnly): 3, "?end_date=2020-01-01": 0,
		"?start_date=" + time.Now().UTC().Add(time.Hour).Format(time.RFC3339): 0,
	} {
		if r := e.do("GET", base+q, nil, own).status(200); r.num("pagination.total") != want {
			t.Fatalf("%s: %s", q, r.Body)
		}
	}
	e.do("GET", base+"?start_date=yesterday", nil, own).apiError(400, "VALIDATION_ERROR")
	e.do("GET", base+"?status=lost", nil, own).apiError(400, "VALIDATION_ERROR", "query.status", "enum")

	// One query, with its results; a failed one with its error.
	g := e.do("GET", base+"/"+ok.str("query_id"), nil, own).status(200)
	if rows(g) != "Ann\nBob\nCid\nDee" || g.num("results.stored_row_count") != 4 || g.str("generated_sql") != ok.str("generated_sql") {
		t.Fatalf("get: %s", g.Body)
	}
	failed := e.do("GET", base+"?status=failed", nil, own).status(200).str("queries.0.id")
	if f := e.do("GET", base+"/"+failed, nil, own).status(200); f.str("status") != "failed" || f.str("error.code") != "INVALID_QUERY" {
		t.Fatalf("failed query: %s", f.Body)
	}
	e.do("GET", base+"/q_nope", nil, own).apiError(404, "NOT_FOUND")
	if e.countOutboxRows(e.orgID, "query.started") != 3 || e.countOutboxRows(e.orgID, "query.completed") != 2 || e.countOutboxRows(e.orgID, "query.failed") != 1 {
		t.Fatal("query events missing from the outbox")
	}
}

// TestProjectQueryConcurrency: a user runs at most five queries at once, counted with
// advisory locks in the database (so across replicas) that each query's transaction holds.
func TestProjectQueryConcurrency(t *testing.T) {
	t.Parallel()
	e, _, _ := queryFixture(t)
	var user string
	if err := e.st.DB.Get(&user, `SELECT id FROM platform.users WHERE email = $1`, adminEmail); err != nil {
		t.Fatal(err)
	}
	// Five queries of this user, running elsewhere.
	var held []*sql.Tx
	for s := 0; s < 5; s++ {
		tx, err := e.st.DB.Begin()
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback()
		if _, err := tx.Exec(`SELECT pg_advisory_xact_lock(hashtext('platform.slot.queries.' || $1), $2)`, user, s); err != nil {
			t.Fatal(err)
		}
		held = append(held, tx)
	}
	r := e.execute(map[string]any{"query": `SELECT 1`}, e.ownerToken).apiError(429, "RATE_LIMIT_EXCEEDED")
	if r.num("error.details.concurrent_limit") != 5 || r.Header.Get("Retry-After") != "1" || r.Header.Get("X-RateLimit-Limit") != "100" {
		t.Fatalf("concurrency: %v %s", r.Header, r.Body)
	}
	e.do("POST", "/api/v1/projects/"+e.projectID+"/queries/stream", map[string]any{"type": "sql", "query": `SELECT 1`}, bearer(e.ownerToken)).
		apiError(429, "RATE_LIMIT_EXCEEDED")
	// Another user is not held back.
	_, analyst := e.member(e.orgID, "analyst")
	e.execute(map[string]any{"query": `SELECT 1`}, analyst).status(200)
	// One finishes: the next query runs.
	held[2].Rollback()
	e.execute(map[string]any{"query": `SELECT 1`}, e.ownerToken).status(200)
	if h := e.do("GET", "/api/v1/projects/"+e.projectID+"/queries", nil, bearer(e.ownerToken)).status(200); h.num("pagination.total") != 2 {
		t.Fatalf("refused queries entered the history: %s", h.Body)
	}
}

// TestUserSQLBounds: user SQL past the database's share (DP_QUERY_CONCURRENCY, counted with
// advisory locks, so across replicas and whoever runs it) waits DP_QUERY_QUEUE_WAIT for a slot,
// then is refused with 503 and Retry-After, entering no history; a size that repeat or
// generate_series would make past its bound is 422 LIMIT_EXCEEDED naming the bound, in project
// queries and in a dataset's record SQL alike.
func TestUserSQLBounds(t *testing.T) {
	t.Parallel()
	e, customers, _ := queryFixtureWith(t, func(c *config.Config) { c.QueryConcurrency, c.QueryQueueWait = 2, 300*time.Millisecond })
	own := bearer(e.ownerToken)
	for _, q := range []struct{ sql, limit, unit string }{
		{`SELECT length(repeat('x', 400000000))`, "1048576", "bytes"},
		{`SELECT count(*) FROM customers, generate_series(1, 20000000)`, "10000000", "rows"},
	} {
		r := e.execute(map[string]any{"query": q.sql}, e.ownerToken).apiError(422, "LIMIT_EXCEEDED")
		if r.str("error.details.unit") != q.unit || strconv.Itoa(int(r.num("error.details.limit"))) != q.limit || !strings.Contains(r.str("error.message"), "user SQL may make at most") {
			t.Fatalf("%s: %s", q.sql, r.Body)
		}
		e.do("POST", "/api/v1/datasets/"+customers+"/data/query", map[string]any{"sql": strings.ReplaceAll(q.sql, "customers", "${table}")}, own).
			apiError(422, "LIMIT_EXCEEDED")
	}
	e.execute(map[string]any{"query": `SELECT pg_catalog.repeat('x', 3)`}, e.ownerToken).apiError(400, "FORBIDDEN_OPERATION")

	// Both of the database's slots taken by other work.
	for s := 0; s < 2; s++ {
		tx, err := e.st.DB.Begin()
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback()
		if _, err := tx.Exec(`SELECT pg_advisory_xact_lock(hashtext('platform.slot.user-sql'), $1)`, s); err != nil {
			t.Fatal(err)
		}
		if s == 1 {
			start := time.Now()
			r := e.execute(map[string]any{"query": `SELECT 1`}, e.ownerToken).apiError(503, "SERVICE_UNAVAILABLE")
			if r.Header.Get("Retry-After") != "1" || time.Since(start) < 300*time.Millisecond {
				t.Fatalf("busy after %s: %v %s", time.Since(start), r.Header, r.Body)
			}
			e.do("POST", "/api/v1/datasets/"+customers+"/data/query", map[string]any{"sql": `SELECT count(*) FROM ${table}`}, own).
				apiError(503, "SERVICE_UNAVAILABLE")
			// One is freed while the next query waits: it runs.
			go func() { time.Sleep(100 * time.Millisecond); tx.Rollback() }()
			if r := e.execute(map[string]any{"query": `SELECT count(*) AS n FROM customers`}, e.ownerToken).status(200); rows(r) != "4" {
				t.Fatalf("after the wait: %s", r.Body)
			}
		}
	}
	// The organization's share (a quarter of 2: 1) taken by its other work: 429 after the
	// wait, naming the share; the database's slots stay free for other tenants meanwhile.
	tx, err := e.st.DB.Begin()
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	if _, err := tx.Exec(`SELECT pg_advisory_xact_lock(hashtext('platform.slot.org.' || $1), 0)`, e.orgID); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	r := e.execute(map[string]any{"query": `SELECT 1`}, e.ownerToken).apiError(429, "RATE_LIMIT_EXCEEDED")
	if r.Header.Get("Retry-After") != "1" || r.num("error.details.organization_concurrent_limit") != 1 || time.Since(start) < 300*time.Millisecond ||
		!strings.Contains(r.str("error.message"), "organization") {
		t.Fatalf("organization busy after %s: %v %s", time.Since(start), r.Header, r.Body)
	}
	e.do("POST", "/api/v1/datasets/"+customers+"/data/query", map[string]any{"sql": `SELECT count(*) FROM ${table}`}, own).
		apiError(429, "RATE_LIMIT_EXCEEDED")
	tx.Rollback()
	if h := e.do("GET", "/api/v1/projects/"+e.projectID+"/queries", nil, own).status(200); h.num("pagination.total") != 4 {
		t.Fatalf("history: want the two refused sizes, the forbidden call and the query that waited, got %s", h.Body)
	}
}

func TestProjectQueryValidateAndExplain(t *testing.T) {
	t.Parallel()
	e, customers, orders := queryFixture(t)
	own := bearer(e.ownerToken)
	base := "/api/v1/projects/" + e.projectID + "/queries/"
	v := e.do("POST", base+"validate", map[string]any{"type": "sql", "query": `SELECT name FROM customers WHERE credit > {{min}}`,
		"parameters": map[string]any{"min": 5}}, own).status(200)
	if v.get("valid") != true || v.str("datasets_required.0") != customers || !strings.Contains(v.str("generated_sql"), "$1") || v.num("estimated_rows") < 1 ||
		v.len("errors") != 0 {
		t.Fatalf("valid: %s", v.Body)
	}
	v = e.do("POST", base+"validate", map[string]any{"type": "sql", "query": `SELECT name FROM customers WHERE credit > {{min}}`}, own).status(200)
	if v.get("valid") != false || v.str("errors.0.field") != "body.parameters" || !strings.Contains(v.str("warnings.0"), "{{min}}") {
		t.Fatalf("missing parameter: %s", v.Body)
	}
	for q, code := range map[string]string{
		"SELECT name FROM customers WHERE":   "INVALID_QUERY",
		"SELECT nope FROM customers":         "INVALID_QUERY", // found by the planner's dry run
		"SELECT * FROM nowhere":              "INVALID_QUERY",
		"UPDATE customers SET name = 'x'":    "FORBIDDEN_OPERATION",
		"SELECT * FROM customers FOR UPDATE": "FORBIDDEN_OPERATION",
	} {
		v := e.do("POST", base+"validate", map[string]any{"type": "sql", "query": q}, own).status(200)
		if v.get("valid") != false || v.str("errors.0.code") != code || (code == "INVALID_QUERY" && v.num("errors.0.line") != 1) {
			t.Fatalf("%s: %s", q, v.Body)
		}
	}
	e.do("POST", base+"validate", map[string]any{"type": "sql", "query": "SELECT 1", "datasets": []string{"ds_gone"}}, own).status(200)
	if v := e.do("POST", base+"validate", map[string]any{"query": "average credit by city"}, own).status(200); v.get("valid") != true ||
		!strings.Contains(v.str("generated_sql"), "avg(") {
		t.Fatalf("validate a question: %s", v.Body)
	}

	x := e.do("POST", base+"explain", map[string]any{"type": "sql",
		"query":      `SELECT c.name, o.total FROM customers c JOIN sales_orders o ON o.customer_ref = c.customer_no WHERE c.city = {{city}}`,
		"parameters": map[string]any{"city": "Berlin"}}, own).status(200)
	body := string(x.Body)
	if !strings.Contains(body, `"table":"customers"`) || !strings.Contains(body, `"table":"sales_orders"`) || x.str("explanation.query_plan.type") == "" ||
		x.get("explanation.optimizations") == nil || x.get("explanation.suggestions") == nil || !strings.Contains(x.str("explanation.summary"), "rows") {
		t.Fatalf("explain: %s", body)
	}
	e.do("POST", base+"explain", map[string]any{"type": "sql", "query": "DELETE FROM customers"}, own).apiError(400, "FORBIDDEN_OPERATION")
	e.do("POST", base+"explain", map[string]any{"type": "sql", "query": "SELECT x FROM " + orders}, own).apiError(400, "INVALID_QUERY")
	_, viewer := e.member(e.orgID, "viewer")
	e.do("POST", base+"explain", map[string]any{"type": "sql", "query": "SELECT 1"}, bearer(viewer)).authError(403, "PERMISSION_DENIED")
}

func TestSavedQueries(t *testing.T) {
	t.Parallel()
	e, _, _ := queryFixture(t)
	own := bearer(e.ownerToken)
	base := "/api/v1/projects/" + e.projectID + "/"
	q := e.execute(map[string]any{"query": `SELECT name FROM customers WHERE city = {{city}} AND credit >= {{min}} AND {{on}} ORDER BY name`,
		"parameters": map[string]any{"city": "Berlin", "min": 0, "on": true}}, e.ownerToken).status(200)
	if rows(q) != "Ann\nCid" {
		t.Fatalf("query: %s", q.Body)
	}
	save := base + "queries/" + q.str("query_id") + "/save"
	params := []any{
		map[string]any{"name": "city", "type": "string", "default": "Berlin", "description": "where they live"},
		map[string]any{"name": "min", "type": "integer"},
		map[string]any{"name": "on", "type": "boolean", "default": true},
	}
	// Declarations must match the placeholders, defaults their types.
	e.do("POST", save, map[string]any{"name": "By city", "parameters": params[:2]}, own).apiError(400, "VALIDATION_ERROR", "body.parameters.on", "required")
	e.do("POST", save, map[string]any{"name": "By city", "parameters": append(params, map[string]any{"name": "extra", "type": "date"})}, own).
		apiError(400, "VALIDATION_ERROR", "body.parameters.extra", "unknown_field")
	e.do("POST", save, map[string]any{"name": "By city", "parameters": []any{params[0], map[string]any{"name": "min", "type": "integer", "default": 1.5}, params[2]}}, own).
		apiError(400, "VALIDATION_ERROR", "body.parameters.min", "type")
	e.do("POST", save, map[string]any{"name": "By city", "parameters": []any{params[0], map[string]any{"name": "min", "type": "money"}, params[2]}}, own).
		apiError(400, "VALIDATION_ERROR")
	s := e.do("POST", save, map[string]any{"name": "By city", "description": "customers of a city", "tags": []string{"crm"}, "parameters": params}, own).status(201)
	if s.str("query") != q.str("original_query") || s.num("usage_count") != 0 || s.get("last_used_at") != nil || s.str("visibility") != "project" ||
		s.str("source_query_id") != q.str("query_id") || s.str("parameters.1.type") != "integer" || s.str("created_by.name") == "" {
		t.Fatalf("saved: %s", s.Body)
	}
	e.do("POST", save, map[string]any{"name": "By city", "parameters": params}, own).apiError(409, "CONFLICT")
	e.do("POST", base+"queries/q_nope/save", map[string]any{"name": "x"}, own).apiError(404, "NOT_FOUND")
	if e.countOutboxRows(e.orgID, "query.saved") != 1 || e.countAuditRows(e.orgID, "query.save") != 1 {
		t.Fatal("query.saved event or audit entry missing")
	}

	// Execution: defaults fill in, values are checked against their types.
	run := base + "saved-queries/" + s.str("id") + "/execute"
	r := e.do("POST", run, map[string]any{"parameters": map[string]any{"min": 50}}, own).status(200)
	if rows(r) != "Ann" || r.str("status") != "completed" {
		t.Fatalf("run with defaults: %s", r.Body)
	}
	r = e.do("POST", run, map[string]any{"parameters": map[string]any{"min": 0, "city": "Paris", "on": false}}, own).status(200)
	if rows(r) != "" {
		t.Fatalf("run with values: %s", r.Body)
	}
	e.do("POST", run, map[string]any{}, own).apiError(400, "VALIDATION_ERROR", "body.parameters.min", "required")
	e.do("POST", run, map[string]any{"parameters": map[string]any{"min": "ten"}}, own).apiError(400, "VALIDATION_ERROR", "body.parameters.min", "type")
	e.do("POST", run, map[string]any{"parameters": map[string]any{"min": 1, "nope": 1}}, own).apiError(400, "VALIDATION_ERROR", "body.parameters.nope", "unknown_field")
	e.do("POST", base+"saved-queries/sq_nope/execute", map[string]any{}, own).apiError(404, "NOT_FOUND")

	// A date parameter, and a private query its author alone sees.
	d := e.execute(map[string]any{"query": `SELECT count(*) FROM sales_orders WHERE placed >= {{since}}`, "parameters": map[string]any{"since": "2024-04-01"}}, e.ownerToken).status(200)
	if rows(d) != "2" {
		t.Fatalf("date: %s", d.Body)
	}
	p := e.do("POST", base+"queries/"+d.str("query_id")+"/save", map[string]any{"name": "Recent", "visibility": "private",
		"parameters": []any{map[string]any{"name": "since", "type": "date", "default": "2024-01-01"}}}, own).status(201)
	if r := e.do("POST", base+"saved-queries/"+p.str("id")+"/execute", nil, own).status(200); rows(r) != "4" {
		t.Fatalf("date default: %s", r.Body)
	}
	e.do("POST", base+"saved-queries/"+p.str("id")+"/execute", map[string]any{"parameters": map[string]any{"since": "April"}}, own).
		apiError(400, "VALIDATION_ERROR", "body.parameters.since", "type")
	_, analyst := e.member(e.orgID, "analyst")
	if l := e.do("GET", base+"saved-queries", nil, bearer(analyst)).status(200); l.num("pagination.total") != 1 {
		t.Fatalf("the analyst sees the private query: %s", l.Body)
	}
	e.do("POST", base+"saved-queries/"+p.str("id")+"/execute", nil, bearer(analyst)).apiError(404, "NOT_FOUND")

	// The list: most used first, with use counts; tag filter.
	l := e.do("GET", base+"saved-queries", nil, own).status(200)
	if l.num("pagination.total") != 2 || l.str("saved_queries.0.name") != "By city" || l.num("saved_queries.0.usage_count") != 2 ||
		l.get("saved_queries.0.last_used_at") == nil || l.num("saved_queries.1.usage_count") != 1 {
		t.Fatalf("list: %s", l.Body)
	}
	if l := e.do("GET", base+"saved-queries?tag=crm", nil, own).status(200); l.num("pagination.total") != 1 {
		t.Fatalf("tag: %s", l.Body)
	}

	// Nor its text and rows through the history: neither its runs nor the query it
	// was saved from are listed, read or exported for the analyst; its author sees them all.
	priv := e.do("POST", base+"saved-queries/"+p.str("id")+"/execute", nil, own).status(200).str("query_id")
	for _, id := range []string{priv, d.str("query_id")} {
		e.do("GET", base+"queries/"+id, nil, bearer(analyst)).apiError(404, "NOT_FOUND")
		e.do("GET", base+"queries/"+id, nil, own).status(200)
		e.do("POST", base+"queries/"+id+"/export", map[string]any{"format": "csv"}, bearer(analyst)).apiError(404, "NOT_FOUND")
	}
	x := e.do("POST", base+"queries/"+priv+"/export", map[string]any{"format": "csv"}, own).status(202)
	e.do("GET", base+"queries/"+priv+"/exports/"+x.str("export_id"), nil, bearer(analyst)).apiError(404, "NOT_FOUND")
	if h := e.do("GET", base+"queries?limit=100", nil, bearer(analyst)).status(200); strings.Contains(string(h.Body), "sales_orders WHERE placed") {
		t.Fatalf("the analyst's history shows the private query: %s", h.Body)
	}
	if h := e.do("GET", base+"queries?limit=100", nil, own).status(200); strings.Count(string(h.Body), "sales_orders WHERE placed") != 3 {
		t.Fatalf("the author's history misses private runs: %s", h.Body)
	}
}

// TestSavedQueryLimit: a project holds at most 1,000 saved queries.
func TestSavedQueryLimit(t *testing.T) {
	t.Parallel()
	e, _, _ := queryFixture(t)
	own := bearer(e.ownerToken)
	q := e.execute(map[string]any{"query": `SELECT 1`}, e.ownerToken).status(200).str("query_id")
	if _, err := e.st.DB.Exec(`INSERT INTO platform.saved_queries (id, project_id, organization_id, name, type, query, visibility, created_at)
		SELECT 'sq_' || i, $1, $2, 'q' || i, 'sql', 'SELECT 1', 'project', now() FROM generate_series(1, 999) i`, e.projectID, e.orgID); err != nil {
		t.Fatal(err)
	}
	save := "/api/v1/projects/" + e.projectID + "/queries/" + q + "/save"
	e.do("POST", save, map[string]any{"name": "the thousandth"}, own).status(201)
	e.do("POST", save, map[string]any{"name": "one too many"}, own).apiError(422, "LIMIT_EXCEEDED")
}

// sseEvents splits a text/event-stream body into (event, data) pairs.
func sseEvents(t *testing.T, body []byte) (names []string, data []map[string]any) {
	t.Helper()
	for _, block := range strings.Split(strings.TrimSpace(string(body)), "\n\n") {
		var name, payload string
		for _, line := range strings.Split(block, "\n") {
			if v, ok := strings.CutPrefix(line, "event: "); ok {
				name = v
			} else if v, ok := strings.CutPrefix(line, "data: "); ok {
				payload = v
			}
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(payload), &m); err != nil {
			t.Fatalf("event %s: %v: %q", name, err, payload)
		}
		names = append(names, name)
		data = append(data, m)
	}
	return names, data
}

func TestProjectQueryStream(t *testing.T) {
	t.Parallel()
	e, _, _ := queryFixture(t)
	own := bearer(e.ownerToken)
	url := "/api/v1/projects/" + e.projectID + "/queries/stream"
	r := e.do("POST", url, map[string]any{"type": "sql", "query": `SELECT name, credit FROM customers WHERE credit > {{min}} ORDER BY name`,
		"parameters": map[string]any{"min": 10}}, own).status(200)
	names, data := sseEvents(t, r.Body)
	if strings.Join(names, ",") != "status,sql,status,schema,row,row,row,complete" || data[0]["status"] != "parsing" || data[2]["status"] != "executing" ||
		!strings.Contains(data[1]["sql"].(string), "$1") || fmt.Sprint(data[3]["columns"]) == "" || fmt.Sprint(data[4]["values"]) != "[Ann 120.5]" ||
		data[7]["row_count"] != 3.0 || r.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("stream: %v\n%s", names, r.Body)
	}
	// The history keeps it.
	h := e.do("GET", "/api/v1/projects/"+e.projectID+"/queries/"+data[7]["query_id"].(string), nil, own).status(200)
	if h.str("status") != "completed" || h.num("results.row_count") != 3 {
		t.Fatalf("history: %s", h.Body)
	}
	// Many rows arrive in batches through the cursor; limit cuts them.
	r = e.do("POST", url, map[string]any{"type": "sql", "query": `SELECT g, md5(g::text) FROM generate_series(1, 25000) g`}, own).status(200)
	names, data = sseEvents(t, r.Body)
	if len(names) != 25005 || names[25004] != "complete" || data[25004]["row_count"] != 25000.0 || fmt.Sprint(data[25003]["values"].([]any)[0]) != "25000" {
		t.Fatalf("25,000 rows: %d events, last %v", len(names), data[len(data)-1])
	}
	r = e.do("POST", url, map[string]any{"type": "sql", "query": `SELECT g FROM generate_series(1, 5000) g`, "options": map[string]any{"limit": 1500}}, own).status(200)
	names, data = sseEvents(t, r.Body)
	if len(names) != 1505 || data[1504]["truncated"] != true || data[1504]["row_count"] != 1500.0 {
		t.Fatalf("limit: %d events, last %v", len(names), data[len(data)-1])
	}
	// Refusals before anything runs are JSON errors; failures while running end the stream.
	e.do("POST", url, map[string]any{"type": "sql", "query": `DELETE FROM customers`}, own).apiError(400, "FORBIDDEN_OPERATION")
	e.do("POST", url, map[string]any{"type": "sql", "query": `SELECT * FROM nowhere`}, own).apiError(400, "INVALID_QUERY")
	r = e.do("POST", url, map[string]any{"type": "sql", "query": `SELECT 1 / (g - 3) FROM generate_series(1, 5) g`}, own).status(200)
	names, data = sseEvents(t, r.Body)
	if names[len(names)-1] != "error" || data[len(data)-1]["code"] != "INVALID_QUERY" {
		t.Fatalf("failure mid-stream: %v %v", names, data[len(data)-1])
	}
	r = e.do("POST", url, map[string]any{"type": "sql", "query": `SELECT count(*) FROM generate_series(1, 10000000) a, generate_series(1, 1000) b`, "options": map[string]any{"timeout_seconds": 1}}, own).status(200)
	if names, data = sseEvents(t, r.Body); names[len(names)-1] != "error" || data[len(data)-1]["code"] != "QUERY_TIMEOUT" {
		t.Fatalf("timeout: %v %v", names, data[len(data)-1])
	}
	if f := e.do("GET", "/api/v1/projects/"+e.projectID+"/queries?status=failed", nil, own).status(200); f.num("pagination.total") != 4 {
		t.Fatalf("failed streams in the history: %s", f.Body)
	}
}

func TestQueryExport(t *testing.T) {
	t.Parallel()
	e, customers, _ := queryFixture(t)
	own := bearer(e.ownerToken)
	q := e.execute(map[string]any{"query": `SELECT customer_no, name, credit, city = 'Berlin' AS local FROM customers WHERE credit > {{min}} ORDER BY customer_no`,
		"parameters": map[string]any{"min": 10}}, e.ownerToken).status(200)
	base := "/api/v1/projects/" + e.projectID + "/queries/" + q.str("query_id")
	export := func(body map[string]any) (*resp, []byte) {
		t.Helper()
		x := e.do("POST", base+"/export", body, own).status(202)
		if x.str("status") != "processing" || x.get("download_url") != nil {
			t.Fatalf("export: %s", x.Body)
		}
		e.waitJob(e.ownerToken, x.str("job_id"))
		x = e.do("GET", base+"/exports/"+x.str("export_id"), nil, own).status(200)
		if x.str("status") != "completed" || x.num("row_count") != 3 || x.num("size_bytes") == 0 {
			t.Fatalf("export after its job: %s", x.Body)
		}
		d := e.do("GET", strings.TrimPrefix(x.str("download_url"), baseURL), nil).status(200)
		if !strings.Contains(d.Header.Get("Content-Disposition"), "attachment") || len(d.Body) != x.num("size_bytes") {
			t.Fatalf("download: %v", d.Header)
		}
		return x, d.Body
	}
	if _, b := export(map[string]any{"format": "csv"}); string(b) != "customer_no,name,credit,local\n1,Ann,120.5,true\n2,Bob,80,false\n3,Cid,15,true\n" {
		t.Fatalf("csv:\n%s", b)
	}
	if _, b := export(map[string]any{"format": "csv", "options": map[string]any{"include_headers": false, "delimiter": "tab"}}); string(b) != "1\tAnn\t120.5\ttrue\n2\tBob\t80\tfalse\n3\tCid\t15\ttrue\n" {
		t.Fatalf("tsv:\n%q", b)
	}
	_, b := export(map[string]any{"format": "json"})
	var objs []map[string]any
	if err := json.Unmarshal(b, &objs); err != nil || len(objs) != 3 || objs[0]["name"] != "Ann" || objs[2]["credit"] != 15.0 || objs[1]["local"] != false {
		t.Fatalf("json: %v %s", err, b)
	}
	_, b = export(map[string]any{"format": "excel"})
	xf, err := excelize.OpenReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	if rows, _ := xf.GetRows("Sheet1"); len(rows) != 4 || rows[0][1] != "name" || rows[2][1] != "Bob" || rows[1][2] != "120.5" {
		t.Fatalf("excel: %v", rows)
	}
	_, b = export(map[string]any{"format": "parquet"})
	type row struct {
		CustomerNo *int32   `parquet:"customer_no,optional"`
		Name       *string  `parquet:"name,optional"`
		Credit     *float64 `parquet:"credit,optional"`
		Local      *bool    `parquet:"local,optional"`
	}
	got, err := parquet.Read[row](bytes.NewReader(b), int64(len(b)))
	if err != nil || len(got) != 3 || *got[0].Name != "Ann" || *got[0].CustomerNo != 1 || *got[1].Credit != 80 || !*got[2].Local {
		t.Fatalf("parquet: %v %+v", err, got)
	}

	// Every row, not only the 1,000 the history keeps.
	big := e.execute(map[string]any{"query": `SELECT g FROM generate_series(1, 2500) g`}, e.ownerToken).status(200)
	x := e.do("POST", "/api/v1/projects/"+e.projectID+"/queries/"+big.str("query_id")+"/export", map[string]any{"format": "csv"}, own).status(202)
	e.waitJob(e.ownerToken, x.str("job_id"))
	x = e.do("GET", "/api/v1/projects/"+e.projectID+"/queries/"+big.str("query_id")+"/exports/"+x.str("export_id"), nil, own).status(200)
	link := strings.TrimPrefix(x.str("download_url"), baseURL)
	if d := e.do("GET", link, nil).status(200); strings.Count(string(d.Body), "\n") != 2501 {
		t.Fatalf("big export: %d lines", strings.Count(string(d.Body), "\n"))
	}
	// The link is signed and expires.
	e.do("GET", strings.Replace(link, "signature=", "signature=x", 1), nil).authError(403, "PERMISSION_DENIED")
	e.do("GET", strings.Replace(link, "expires=", "expires=1", 1), nil).authError(403, "PERMISSION_DENIED")
	e.clock.Advance(25 * time.Hour)
	e.do("GET", link, nil).authError(403, "PERMISSION_DENIED")
	e.clock.Advance(-25 * time.Hour)

	// Only completed queries; a dataset gone since makes the export fail, readably.
	failed := e.execute(map[string]any{"query": `SELECT nope FROM customers`}, e.ownerToken)
	_ = failed
	fid := e.do("GET", "/api/v1/projects/"+e.projectID+"/queries?status=failed", nil, own).status(200).str("queries.0.id")
	e.do("POST", "/api/v1/projects/"+e.projectID+"/queries/"+fid+"/export", map[string]any{"format": "csv"}, own).apiError(409, "CONFLICT")
	e.do("POST", "/api/v1/projects/"+e.projectID+"/queries/q_nope/export", map[string]any{"format": "csv"}, own).apiError(404, "NOT_FOUND")
	e.do("POST", base+"/export", map[string]any{"format": "xml"}, own).apiError(400, "VALIDATION_ERROR", "body.format", "enum")
	e.do("DELETE", "/api/v1/projects/"+e.projectID+"/datasets/"+customers, nil, own).status(200)
	x = e.do("POST", base+"/export", map[string]any{"format": "csv"}, own).status(202)
	for i := 0; i < 500 && x.str("status") == "processing"; i++ {
		time.Sleep(20 * time.Millisecond)
		x = e.do("GET", base+"/exports/"+x.str("export_id"), nil, own).status(200)
	}
	if x.str("status") != "failed" || !strings.Contains(x.str("error"), "does not exist") {
		t.Fatalf("export of a deleted dataset: %s", x.Body)
	}
	e.do("GET", "/api/v1/projects/"+e.projectID+"/queries/"+big.str("query_id")+"/exports/"+x.str("export_id"), nil, own).apiError(404, "NOT_FOUND")
}

// TestExplainSuggestsAnIndex: a filter on a column no index leads with, over a table of
// more than 10,000 rows, is read in full; explain says so and suggests the index. (The
// search-index job indexes the first 32 filterable columns; the 34th is left without.)
func TestExplainSuggestsAnIndex(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	var b strings.Builder
	for c := 1; c <= 34; c++ {
		if c > 1 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, "c%d", c)
	}
	b.WriteString("\n")
	for r := 0; r < 12000; r++ {
		for c := 1; c <= 34; c++ {
			if c > 1 {
				b.WriteString(",")
			}
			fmt.Fprintf(&b, "%d", (r*c)%997)
		}
		b.WriteString("\n")
	}
	id := e.uploadAndCreate(e.ownerToken, "Wide", "wide.csv", b.String())
	if d := e.waitDataset(e.ownerToken, id); d.str("status") != "active" {
		t.Fatalf("wide: %s", d.Body)
	}
	// Wait for the index job, so that what has an index is settled.
	for i := 0; i < 500; i++ {
		var n int
		e.st.DB.Get(&n, `SELECT count(*) FROM platform.jobs WHERE status IN ('queued', 'running')`)
		if n == 0 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	x := e.do("POST", "/api/v1/projects/"+e.projectID+"/queries/explain", map[string]any{"type": "sql", "query": "SELECT * FROM wide WHERE c34 = 5"},
		bearer(e.ownerToken)).status(200)
	body := string(x.Body)
	if !strings.Contains(body, "an index on wide.c34") || !strings.Contains(body, "reads all of wide") {
		t.Fatalf("explain of a filter on an unindexed column: %s", body)
	}
	// An indexed column: the plan uses the index, and nothing is suggested for it.
	x = e.do("POST", "/api/v1/projects/"+e.projectID+"/queries/explain", map[string]any{"type": "sql", "query": "SELECT * FROM wide WHERE c2 = 5"},
		bearer(e.ownerToken)).status(200)
	if strings.Contains(string(x.Body), "an index on wide.c2") || x.len("explanation.optimizations") == 0 {
		t.Fatalf("explain of a filter on an indexed column: %s", x.Body)
	}
}

// TestProjectQueryRateLimit: executions count against the queries category (100 a minute by
// default; 3 here), with the rate-limit headers.
func TestProjectQueryRateLimit(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *config.Config) { c.RateLimits = "queries=3-M" })
	for i := 0; i < 3; i++ {
		r := e.execute(map[string]any{"query": "SELECT 1"}, e.ownerToken).status(200)
		if r.Header.Get("X-RateLimit-Limit") != "3" || r.Header.Get("X-RateLimit-Remaining") != fmt.Sprint(2-i) {
			t.Fatalf("headers: %v", r.Header)
		}
	}
	r := e.execute(map[string]any{"query": "SELECT 1"}, e.ownerToken).apiError(429, "RATE_LIMIT_EXCEEDED")
	if r.Header.Get("Retry-After") == "" || r.str("error.details.category") != "queries" {
		t.Fatalf("429: %v %s", r.Header, r.Body)
	}
	// Reads of the history are not executions.
	e.do("GET", "/api/v1/projects/"+e.projectID+"/queries", nil, bearer(e.ownerToken)).status(200)
}

// TestInterruptedQueries: a query left running by a server that died is failed after an hour.
func TestInterruptedQueries(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, age := range []string{"2 hours", "5 minutes"} {
		if _, err := e.st.DB.Exec(`INSERT INTO platform.queries (id, project_id, organization_id, type, query, status, created_at)
			VALUES ('q_' || md5(random()::text), $1, $2, 'sql', 'SELECT 1', 'running', $3::timestamptz - $4::interval)`, e.projectID, e.orgID, e.clock.Now(), age); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := e.srv.H.FailInterruptedQueries(t.Context()); err != nil || n != 1 {
		t.Fatalf("failed %d, %v", n, err)
	}
	r := e.do("GET", "/api/v1/projects/"+e.projectID+"/queries?status=failed", nil, bearer(e.ownerToken)).status(200)
	if r.num("pagination.total") != 1 || r.str("queries.0.error_code") != "INTERRUPTED" {
		t.Fatalf("history: %s", r.Body)
	}
}

// TestViewerReadsNoRows: a viewer (queries:read, no datasets:read) sees what was asked in the
// history but not the rows: neither a query's results nor an export's download URL.
func TestViewerReadsNoRows(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	own := bearer(e.ownerToken)
	q := e.execute(map[string]any{"query": `SELECT g FROM generate_series(1, 3) g`}, e.ownerToken).status(200)
	x := e.do("POST", "/api/v1/projects/"+e.projectID+"/queries/"+q.str("query_id")+"/export", map[string]any{"format": "csv"}, own).status(202)
	e.waitJob(e.ownerToken, x.str("job_id"))
	_, viewer := e.member(e.orgID, "viewer")
	_, analyst := e.member(e.orgID, "analyst")
	base := "/api/v1/projects/" + e.projectID + "/queries/"
	if h := e.do("GET", strings.TrimSuffix(base, "/"), nil, bearer(viewer)).status(200); !strings.Contains(string(h.Body), q.str("query_id")) {
		t.Fatalf("the viewer's history: %s", h.Body)
	}
	e.do("GET", base+q.str("query_id"), nil, bearer(viewer)).authError(403, "PERMISSION_DENIED")
	e.do("GET", base+q.str("query_id")+"/exports/"+x.str("export_id"), nil, bearer(viewer)).authError(403, "PERMISSION_DENIED")
	if r := e.do("GET", base+q.str("query_id"), nil, bearer(analyst)).status(200); !strings.Contains(string(r.Body), `"rows"`) {
		t.Fatalf("the analyst's results: %s", r.Body)
	}
	e.do("GET", base+q.str("query_id")+"/exports/"+x.str("export_id"), nil, bearer(analyst)).status(200)
}

// TestQueryResultByteCap: the audit's SELECT repeat('x', 10000000) FROM generate_series(1, 20)
// (200 MB answered and kept whole by the result cache), scaled to rows of 1 MB against the
// default limit of 10 MiB: executions, saved query runs and the history answer at most that
// much, with results.truncated and a warning saying how many rows came and how to get them
// all; the cache keeps no such answer; a single row larger than the limit is refused.
func TestQueryResultByteCap(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	own := bearer(e.ownerToken)
	const audit = `SELECT repeat('x', 1000000) AS v FROM generate_series(1, 20)`
	cut := func(what string, r *resp) {
		t.Helper()
		if len(r.Body) > 11<<20 || r.num("results.row_count") != 10 || r.len("results.rows") != 10 || r.get("results.truncated") != true ||
			!strings.Contains(r.str("warnings.0"), "cut after 10 row(s)") || !strings.Contains(r.str("warnings.0"), "/queries/stream") ||
			!strings.Contains(r.str("warnings.0"), "/queries/"+r.str("query_id")+"/export") {
			t.Fatalf("%s: %d bytes, row_count %d, truncated %v, warnings %v", what, len(r.Body), r.num("results.row_count"), r.get("results.truncated"), r.get("warnings"))
		}
	}
	r := e.execute(map[string]any{"query": audit, "options": map[string]any{"cache": true}}, e.ownerToken).status(200)
	cut("execute", r)
	// Not cached: the same query runs again.
	again := e.execute(map[string]any{"query": audit, "options": map[string]any{"cache": true}}, e.ownerToken).status(200)
	cut("execute again", again)
	if again.get("metadata.cache_hit") != false {
		t.Fatal("a 10 MB answer was kept in the result cache")
	}
	// A small answer is.
	e.execute(map[string]any{"query": "SELECT 1 AS n", "options": map[string]any{"cache": true}}, e.ownerToken).status(200)
	if s := e.execute(map[string]any{"query": "SELECT 1 AS n", "options": map[string]any{"cache": true}}, e.ownerToken).status(200); s.get("metadata.cache_hit") != true {
		t.Fatalf("a small answer was not cached: %s", s.Body)
	}
	// The history keeps at most 1 MiB of rows, and says so.
	base := "/api/v1/projects/" + e.projectID + "/queries/"
	g := e.do("GET", base+r.str("query_id"), nil, own).status(200)
	if len(g.Body) > 2<<20 || g.num("results.stored_row_count") != 1 || g.num("results.row_count") != 10 || g.get("results.truncated") != true ||
		!strings.Contains(string(g.Body), "cut after 10 row(s)") || !strings.Contains(string(g.Body), "the history keeps the first 1 of the 10 row(s)") {
		t.Fatalf("history: %d bytes, stored %d, warnings %v", len(g.Body), g.num("results.stored_row_count"), g.get("warnings"))
	}
	// A saved query's run is cut the same way.
	sq := e.do("POST", base+r.str("query_id")+"/save", map[string]any{"name": "big"}, own).status(201).str("id")
	cut("saved query", e.do("POST", "/api/v1/projects/"+e.projectID+"/saved-queries/"+sq+"/execute", map[string]any{}, own).status(200))
	// A stream sends every row; its history keeps 1 MiB of them.
	st := e.do("POST", base+"stream", map[string]any{"type": "sql", "query": audit}, own).status(200)
	if n := strings.Count(string(st.Body), "event: row"); n != 20 {
		t.Fatalf("stream: %d rows", n)
	}
	id := e.do("GET", strings.TrimSuffix(base, "/")+"?limit=1", nil, own).status(200).str("queries.0.id")
	if h := e.do("GET", base+id, nil, own).status(200); h.num("results.stored_row_count") != 1 || h.num("results.row_count") != 20 {
		t.Fatalf("stream's history: stored %d of %d", h.num("results.stored_row_count"), h.num("results.row_count"))
	}
	// The audit's single huge value (500 MB), scaled: the database refuses to send the row.
	big := e.execute(map[string]any{"query": `SELECT string_agg(repeat('x', 1000000), '') AS v FROM generate_series(1, 20)`}, e.ownerToken).apiError(400, "INVALID_QUERY")
	if big.num("error.details.max_row_bytes") != 10<<20 || big.num("error.details.row_bytes") < 20_000_000 {
		t.Fatalf("huge row: %s", big.Body)
	}
}
