package tests

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

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
	to := query("SELECT count(*) FROM generate_series(1, 1000000000)", nil, map[string]any{"timeout": 200}).apiError(408, "QUERY_TIMEOUT")
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
	// pg_locks is the whole cluster's: count this database's only (other tests run beside).
	e.st.DB.Get(&locks, `SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`)
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
