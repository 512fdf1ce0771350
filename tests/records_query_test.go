package tests

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"dataplatform/cmd/dataplatform/config"
	"dataplatform/store/datasets"
	"dataplatform/store/usersql"

	"github.com/lib/pq"
)

func TestRecordQuery(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	own := bearer(e.ownerToken)
	cust := e.uploadAndCreateWith(e.ownerToken, "Customers", "customers.json", customersJSON, map[string]any{"schema": customerRecordSchema()})
	e.waitDataset(e.ownerToken, cust)
	ord := e.uploadAndCreate(e.ownerToken, "Orders", "orders.csv", "id,customer_id,amount\n10,1,19.90\n11,1,5.10\n12,3,100\n")
	e.waitDataset(e.ownerToken, ord)
	path := "/api/v1/datasets/" + cust + "/data/query"
	query := func(sql string, params map[string]any, opts ...map[string]any) *resp {
		body := map[string]any{"sql": sql}
		if params != nil {
			body["parameters"] = params
		}
		if len(opts) > 0 {
			body["options"] = opts[0]
		}
		return e.do("POST", path, body, own)
	}
	r := query("SELECT status, count(*) AS n, sum(score) AS total FROM ${table} GROUP BY status ORDER BY status", nil).status(200)
	if r.num("meta.row_count") != 2 || r.str("data.0.status") != "active" || r.num("data.0.n") != 2 || r.num("data.0.total") != 135 ||
		r.str("schema.1.type") != "int8" || r.get("meta.cached") != false || !strings.HasPrefix(r.str("meta.query_id"), "q_") {
		t.Fatalf("query: %s", r.Body)
	}
	r = query("SELECT name FROM ${table} WHERE score >= :min AND status = :status ORDER BY name", map[string]any{"min": 50, "status": "active"}).status(200)
	if r.num("meta.row_count") != 2 || r.str("data.1.name") != "Cid" {
		t.Fatalf("parameters: %s", r.Body)
	}
	if r := query("SELECT name FROM ${table} WHERE name = :n", map[string]any{"n": "x' OR '1'='1"}).status(200); r.num("meta.row_count") != 0 {
		t.Fatalf("a parameter was spliced: %s", r.Body)
	}
	query("SELECT name FROM ${table} WHERE name = :n", nil).apiError(400, "VALIDATION_ERROR", "body.parameters.n", "required")
	// Joins with the organization's other datasets.
	j := query(fmt.Sprintf(`SELECT c.name, sum(o.amount) AS spent FROM ${table} c JOIN %q o ON o.customer_id = c.src_id GROUP BY 1 ORDER BY 2 DESC`, ord), nil).status(200)
	if j.num("meta.row_count") != 2 || j.str("data.0.name") != "Cid" || j.get("data.0.spent") != 100.0 {
		t.Fatalf("join: %s", j.Body)
	}
	// Soft-deleted records are invisible to SQL too (row-level security).
	e.do("DELETE", "/api/v1/datasets/"+cust+"/data/2", nil, own).status(200)
	if r := query("SELECT count(*) AS n FROM ${table}", nil).status(200); r.num("data.0.n") != 2 {
		t.Fatalf("row-level security: %s", r.Body)
	}

	for _, sql := range []string{"DELETE FROM ${table}", "SELECT 1; DELETE FROM ${table}", "WITH d AS (DELETE FROM ${table} RETURNING *) SELECT * FROM d",
		"SELECT * INTO stolen FROM ${table}", "SELECT * FROM ${table} FOR UPDATE", "SELECT set_config('role', 'postgres', true)",
		"SELECT pg_advisory_lock(42)", "SELECT pg_sleep(5)", "SELECT * FROM pg_catalog.pg_roles", "SELECT * FROM platform.users",
		"SET ROLE postgres", "UPDATE ${table} SET name = 'x'", "COPY (SELECT 1) TO PROGRAM 'id'"} {
		query(sql, nil).apiError(400, "FORBIDDEN_OPERATION")
	}
	bad := query("SELECT name\nFROM ${table}\nWHERE nmae = 1", nil).apiError(400, "INVALID_QUERY")
	if bad.num("error.details.line") != 3 || bad.get("error.details.message") == nil {
		t.Fatalf("invalid query: %s", bad.Body)
	}
	if syn := query("SELECT FROM WHERE", nil).apiError(400, "INVALID_QUERY"); syn.get("error.details.column") == nil {
		t.Fatalf("syntax: %s", syn.Body)
	}
	to := query("SELECT count(*) FROM generate_series(1, 100000) a, generate_series(1, 100000) b", nil, map[string]any{"timeout": 200}).apiError(408, "QUERY_TIMEOUT")
	if to.get("error.details.timeout_seconds") != 0.2 || to.get("error.details.suggestion") == nil {
		t.Fatalf("timeout: %s", to.Body)
	}
	c1 := query("SELECT count(*) AS n FROM ${table}", nil, map[string]any{"cache": true, "cache_ttl": 60}).status(200)
	c2 := query("SELECT count(*) AS n FROM ${table}", nil, map[string]any{"cache": true}).status(200)
	if c1.get("meta.cached") != false || c2.get("meta.cached") != true || c2.num("data.0.n") != 2 {
		t.Fatalf("cache: %s / %s", c1.Body, c2.Body)
	}
	_, viewer := e.member(e.orgID, "viewer")
	e.do("POST", path, map[string]any{"sql": "SELECT 1"}, bearer(viewer)).authError(403, "PERMISSION_DENIED")
}

// The database is the wall: SQL the parser would refuse, run straight through the executor,
// is refused by PostgreSQL itself, and nothing outlives the rolled-back transaction.
func TestQueryWallWithoutTheParser(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	own := bearer(e.ownerToken)
	mine := e.uploadAndCreate(e.ownerToken, "Mine", "m.csv", "a\n1\n2\n")
	e.waitDataset(e.ownerToken, mine)
	other := e.do("POST", "/api/v1/organizations", map[string]any{"name": "Other org"}, own).status(201).str("id")
	prj := e.do("POST", "/api/v1/organizations/"+other+"/projects", map[string]any{"name": "P"}, own).status(201).str("id")
	e.projectID, prj = prj, e.projectID
	theirs := e.uploadAndCreate(e.ownerToken, "Theirs", "t.csv", "secret\nx\n")
	e.waitDataset(e.ownerToken, theirs)
	e.projectID = prj
	ctx := context.Background()
	if err := datasets.EnsureQueryRole(ctx, e.st.DB, e.orgID); err != nil {
		t.Fatal(err)
	}
	run := func(sql string) error {
		_, err := usersql.RunQuery(ctx, e.st.DB, e.orgID, sql, nil, usersql.QueryOptions{Timeout: 2 * time.Second, MaxRows: 10})
		return err
	}
	if err := run(fmt.Sprintf(`SELECT * FROM %q`, mine)); err != nil {
		t.Fatalf("own table: %v", err)
	}
	for _, sql := range []string{
		fmt.Sprintf(`SELECT * FROM %q.%q`, other, theirs),    // another organization's table
		`SELECT * FROM platform.users`,                       // the platform's tables
		`SELECT set_config('role', 'postgres', true)`,        // undoing SET LOCAL ROLE
		`SELECT set_config('search_path', 'platform', true)`, // rewriting settings
		`SELECT pg_advisory_lock(7)`,                         // locks that outlive the rollback
		`SELECT pg_try_advisory_lock(7)`,
		`SELECT pg_sleep(0.01)`,
		`SELECT pg_read_file('/etc/hostname')`,
		fmt.Sprintf(`DELETE FROM %q`, mine), // writes: read-only transaction, no grant
		fmt.Sprintf(`UPDATE %q SET a = 0`, mine),
		`CREATE TABLE x (a int)`,
		`SELECT * FROM pg_authid`,
		`RESET ROLE; SELECT 1`,
		`SELECT * FROM dblink('dbname=postgres', 'select 1') AS t(a int)`,
	} {
		err := run(sql)
		var pe *pq.Error
		if err == nil || !errors.As(err, &pe) {
			t.Errorf("%s: not refused by the database (%v)", sql, err)
		}
	}
	// Nothing leaked into the pooled connections: no advisory lock held, the role reset.
	var locks int
	// pg_locks is the whole cluster's: count this database's only (other tests run beside),
	// and those of idle connections: a leak outlives its transaction, while the server's own
	// background work (the webhook fan-out) holds a transaction's lock for a moment.
	e.st.DB.Get(&locks, `SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid WHERE l.locktype = 'advisory'
		AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database()) AND a.state = 'idle'`)
	var who string
	e.st.DB.Get(&who, `SELECT current_user`)
	if locks != 0 || strings.HasPrefix(who, "dp_query_") {
		t.Fatalf("leaked: %d advisory locks, current_user %s", locks, who)
	}
	var n int
	e.st.DB.Get(&n, fmt.Sprintf(`SELECT count(*) FROM %q.%q`, e.orgID, mine))
	if n != 2 {
		t.Fatal("a refused write changed the table")
	}
	// The role goes with its organization.
	e.do("DELETE", "/api/v1/organizations/"+e.orgID, map[string]any{"confirmation": "default"}, own).status(200)
	var roles int
	e.st.DB.Get(&roles, `SELECT count(*) FROM pg_roles WHERE rolname = $1`, datasets.QueryRole(e.orgID))
	if roles != 0 {
		t.Fatal("the query role outlived its organization")
	}
}

// TestRecordQueryByteCap: the audit's SELECT repeat('x', 10000000) FROM generate_series(1, 20)
// through /data/query, scaled to rows of 1 MB against the default limit of 10 MiB: the answer
// stops at the limit with meta.truncated and a warning, the cache does not keep it, and a
// single row larger than the limit is refused.
func TestRecordQueryByteCap(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	own := bearer(e.ownerToken)
	id := e.uploadAndCreate(e.ownerToken, "Small", "s.csv", "a\n1\n")
	e.waitDataset(e.ownerToken, id)
	path := "/api/v1/datasets/" + id + "/data/query"
	body := map[string]any{"sql": `SELECT repeat('x', 1000000) AS v FROM generate_series(1, 20)`, "options": map[string]any{"cache": true}}
	for i, what := range []string{"query", "query again (not from the cache)"} {
		r := e.do("POST", path, body, own).status(200)
		if len(r.Body) > 11<<20 || r.num("meta.row_count") != 10 || r.len("data") != 10 || r.get("meta.truncated") != true || r.get("meta.cached") != false ||
			!strings.Contains(r.str("meta.warnings.0"), "cut after 10 row(s)") || !strings.Contains(r.str("meta.warnings.0"), "/api/v1/datasets/"+id+"/data/export") {
			t.Fatalf("%s (%d): %d bytes, meta %v", what, i, len(r.Body), r.get("meta.row_count"))
		}
	}
	big := e.do("POST", path, map[string]any{"sql": `SELECT string_agg(repeat('x', 1000000), '') AS v FROM generate_series(1, 20)`}, own).apiError(400, "INVALID_QUERY")
	if big.num("error.details.max_row_bytes") != 10<<20 || big.num("error.details.row_bytes") < 20_000_000 {
		t.Fatalf("huge row: %s", big.Body)
	}
}

// TestRecordQueryConcurrency: user SQL through /data/query holds none of the record API's
// shared admission slots and one of its user's five query slots (as project queries do):
// while one analyst's slow queries run, another organization's record API answers (before
// they end), and the analyst's sixth query is refused with 429.
func TestRecordQueryConcurrency(t *testing.T) {
	t.Parallel()
	// Four admission slots, fewer than a user's five query slots, whatever the machine's cores;
	// the database's share of user SQL is not what is tested here (TestUserSQLBounds does).
	e := newEnv(t, func(c *config.Config) { c.RecordConcurrency, c.QueryConcurrency = 4, 20 })
	own := bearer(e.ownerToken)
	mine := e.uploadAndCreate(e.ownerToken, "Mine", "m.csv", "a\n1\n")
	e.waitDataset(e.ownerToken, mine)
	other := e.do("POST", "/api/v1/organizations", map[string]any{"name": "Other org"}, own).status(201).str("id")
	prj := e.do("POST", "/api/v1/organizations/"+other+"/projects", map[string]any{"name": "P"}, own).status(201).str("id")
	e.projectID, prj = prj, e.projectID
	theirs := e.uploadAndCreate(e.ownerToken, "Theirs", "t.csv", "b\n2\n")
	e.waitDataset(e.ownerToken, theirs)
	e.projectID = prj
	_, analyst := e.member(e.orgID, "analyst")

	// Slow queries of the analyst (the guard refuses pg_sleep: a long count). They end when the
	// test does (the server cancels a query whose client went away).
	type answer struct {
		req *http.Request
		r   *resp
	}
	ctx, cancel := context.WithCancel(context.Background())
	answers := make(chan answer, 6)
	var wg sync.WaitGroup
	slow, _ := json.Marshal(map[string]any{"sql": `SELECT count(*) AS slow_marker FROM generate_series(1, 100000) a, generate_series(1, 100000) b`,
		"options": map[string]any{"timeout": 30000}})
	start := func(n int) {
		for i := 0; i < n; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				req, _ := http.NewRequestWithContext(ctx, "POST", e.ts.URL+"/api/v1/datasets/"+mine+"/data/query", bytes.NewReader(slow))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Authorization", "Bearer "+analyst)
				res, err := http.DefaultClient.Do(req)
				if err != nil {
					return // cancelled at the end
				}
				defer res.Body.Close()
				b, _ := io.ReadAll(res.Body)
				r := &resp{t: e.t, Code: res.StatusCode, Header: res.Header, Body: b, req: "POST /data/query"}
				json.Unmarshal(b, &r.json)
				answers <- answer{req, r}
			}()
		}
	}
	// At the end they are cancelled in the database, and their clients go away.
	defer func() {
		e.st.DB.Exec(`SELECT pg_cancel_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND query LIKE '%slow_marker%'
			AND pid <> pg_backend_pid()`)
		cancel()
		wg.Wait()
	}()
	// waitRunning waits until n of them run in the database: executing, not being parsed (a
	// cancel between the two is lost).
	waitRunning := func(n int) {
		for running := 0; running < n; {
			time.Sleep(10 * time.Millisecond)
			if err := e.st.DB.Get(&running, `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND state = 'active'
				AND clock_timestamp() - state_change > interval '200 ms' AND query LIKE '%slow_marker%' AND pid <> pg_backend_pid()`); err != nil {
				t.Fatal(err)
			}
		}
	}
	// Four running: as many as the record API admits at once.
	start(4)
	waitRunning(4)
	// Another organization's record API is answered while they run.
	if r := e.do("GET", "/api/v1/datasets/"+theirs+"/data", nil, own).status(200); r.len("data") != 1 {
		t.Fatalf("other organization's records: %s", r.Body)
	}
	select {
	case a := <-answers:
		t.Fatalf("a slow query ended before the other organization was answered: %d %s", a.r.Code, a.r.Body)
	default:
	}
	// Two more: the first answer of all is a refusal, five of the analyst's are running.
	start(2)
	first := <-answers
	e.validate(first.req, first.r)
	first.r.apiError(429, "RATE_LIMIT_EXCEEDED")
	if first.r.num("error.details.concurrent_limit") != 5 || first.r.Header.Get("Retry-After") != "1" {
		t.Fatalf("sixth query: %v %s", first.r.Header, first.r.Body)
	}
	waitRunning(5)
}
