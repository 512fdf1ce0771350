package tests

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"dataplatform/store/datasets"
	"dataplatform/store/usersql"

	"github.com/lib/pq"
)

// A password read through user SQL: an analyst ran
// ts_stat($$SELECT array_to_string(umoptions,' ')::tsvector FROM pg_user_mappings$$) through
// the project query API and the record API's query, and read the connected database's
// password. Now the guard refuses it, the database refuses it without the guard, the query
// role holds no user mapping at all, and the connected tables still answer SQL.
func TestConnectedPasswordNotReadable(t *testing.T) {
	t.Parallel()
	e, own, id, password := connectedShop(t)
	leak := `SELECT * FROM ts_stat($$SELECT array_to_string(umoptions,' ')::tsvector FROM pg_user_mappings$$)`
	for _, probe := range []string{leak,
		`SELECT * FROM ts_stat($$SELECT to_tsvector(array_to_string(srvoptions, ' ')) FROM pg_foreign_server$$)`,
		`SELECT umoptions FROM pg_user_mappings`,
		`SELECT query_to_xml('select umoptions from pg_user_mappings', true, true, '')`} {
		r := e.do("POST", "/api/v1/projects/"+e.projectID+"/queries/execute", map[string]any{"type": "sql", "query": probe}, own)
		if r.Code == 200 || strings.Contains(string(r.Body), password) || strings.Contains(string(r.Body), "shop") && strings.Contains(string(r.Body), "hostaddr") {
			t.Fatalf("project query %s answered %d: %s", probe, r.Code, r.Body)
		}
		r.apiError(400, "FORBIDDEN_OPERATION")
		r = e.do("POST", "/api/v1/datasets/"+id+"/data/query?table=customers", map[string]any{"sql": probe}, own)
		if r.Code == 200 || strings.Contains(string(r.Body), password) {
			t.Fatalf("record query %s answered %d: %s", probe, r.Code, r.Body)
		}
	}

	// Behind the guard: the database refuses the same as the query role.
	ctx := context.Background()
	for _, sql := range []string{leak, `SELECT umoptions FROM pg_user_mappings`, `SELECT srvoptions FROM pg_foreign_server`} {
		res, err := usersql.RunQuery(ctx, e.st.DB, e.orgID, sql, nil, usersql.QueryOptions{Timeout: 2 * time.Second, MaxRows: 100})
		var pe *pq.Error
		if !errors.As(err, &pe) || res != nil && strings.Contains(fmt.Sprint(res.Rows), password) {
			t.Fatalf("%s as the query role: %v %v", sql, res, err)
		}
	}
	// And even where the catalogs could not be revoked (a managed database), the query role
	// has no credentials to read: no user mapping of its own, no use of the server.
	role := datasets.QueryRole(e.orgID)
	var mappings int
	var usage bool
	if err := e.st.DB.Get(&mappings, `SELECT count(*) FROM pg_user_mapping m JOIN pg_roles r ON r.oid = m.umuser WHERE r.rolname = $1`, role); err != nil {
		t.Fatal(err)
	}
	if err := e.st.DB.Get(&usage, `SELECT has_server_privilege($1, $2, 'USAGE')`, role, datasets.ServerName(id)); err != nil {
		t.Fatal(err)
	}
	if mappings != 0 || usage {
		t.Fatalf("the query role holds %d user mappings, server usage %v", mappings, usage)
	}

	// The connected tables still answer SQL, through views the service role owns.
	q := e.do("POST", "/api/v1/projects/"+e.projectID+"/queries/execute", map[string]any{"type": "sql",
		"query": `SELECT count(*) AS n FROM shop.customers c JOIN shop.orders o ON o.customer_id = c.id`}, own).status(200)
	if got := rows(q); got != "3" {
		t.Fatalf("project query over the connected tables: %s", q.Body)
	}
	r := e.do("POST", "/api/v1/datasets/"+id+"/data/query?table=customers", map[string]any{"sql": `SELECT name FROM ${table} ORDER BY name LIMIT 1`}, own).status(200)
	if r.str("data.0.name") != "Ann" {
		t.Fatalf("record query over a connected table: %s", r.Body)
	}
}

// TestConnectedDatasetUpgrade: a connected dataset made the old way (foreign tables the query
// role reads with a user mapping of its own, holding the password) is moved by migration
// 00018 to the new one, and keeps answering.
func TestConnectedDatasetUpgrade(t *testing.T) {
	t.Parallel()
	e, own, id, password := connectedShop(t)
	role, fdw, srv := pq.QuoteIdentifier(datasets.QueryRole(e.orgID)), pq.QuoteIdentifier(datasets.ForeignSchema(id)), pq.QuoteIdentifier(datasets.ServerName(id))
	// Back to the layout before: foreign tables in the dataset's schema, the query role's mapping.
	for _, q := range []string{
		`DROP VIEW ` + pq.QuoteIdentifier(id) + `.customers, ` + pq.QuoteIdentifier(id) + `.orders, ` + pq.QuoteIdentifier(id) + `.audit_log`,
		`ALTER FOREIGN TABLE ` + fdw + `.customers SET SCHEMA ` + pq.QuoteIdentifier(id),
		`ALTER FOREIGN TABLE ` + fdw + `.orders SET SCHEMA ` + pq.QuoteIdentifier(id),
		`ALTER FOREIGN TABLE ` + fdw + `.audit_log SET SCHEMA ` + pq.QuoteIdentifier(id),
		`DROP SCHEMA ` + fdw,
		`GRANT SELECT ON ALL TABLES IN SCHEMA ` + pq.QuoteIdentifier(id) + ` TO ` + role,
		`GRANT USAGE ON FOREIGN SERVER ` + srv + ` TO ` + role,
		`CREATE USER MAPPING FOR ` + role + ` SERVER ` + srv + ` OPTIONS (user 'postgres', password ` + pq.QuoteLiteral(password) + `)`,
		`UPDATE platform.datasets SET tables = (SELECT jsonb_agg(jsonb_set(e, '{schema}', to_jsonb(id))) FROM jsonb_array_elements(tables) e) WHERE id = '` + id + `'`,
	} {
		if _, err := e.st.DB.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	// The migration's upgrade block, run again.
	src, err := os.ReadFile("../store/migrations/00018_sandbox_wall.sql")
	if err != nil {
		t.Fatal(err)
	}
	blocks := strings.Split(string(src), "-- +goose StatementBegin")
	upgrade := strings.Split(blocks[2], "-- +goose StatementEnd")[0]
	if _, err := e.st.DB.Exec(upgrade); err != nil {
		t.Fatalf("upgrade: %v", err)
	}
	var mappings int
	e.st.DB.Get(&mappings, `SELECT count(*) FROM pg_user_mapping m JOIN pg_roles r ON r.oid = m.umuser WHERE r.rolname = $1`, datasets.QueryRole(e.orgID))
	if mappings != 0 {
		t.Fatal("the query role kept its user mapping")
	}
	q := e.do("POST", "/api/v1/projects/"+e.projectID+"/queries/execute", map[string]any{"type": "sql",
		"query": `SELECT count(*) AS n FROM shop.customers c JOIN shop.orders o ON o.customer_id = c.id`}, own).status(200)
	if got := rows(q); got != "3" {
		t.Fatalf("project query after the upgrade: %s", q.Body)
	}
	if l := e.do("GET", "/api/v1/datasets/"+id+"/data?table=customers", nil, own).status(200); l.len("data") != 3 {
		t.Fatalf("record API after the upgrade: %s", l.Body)
	}
}

// connectedShop is an environment with the external PostgreSQL's shop database connected as
// a dataset: the owner's header, the dataset id and the database's password.
func connectedShop(t *testing.T) (*env, header, string, string) {
	host, port, password := externalPostgres(t)
	e := newEnv(t)
	own := bearer(e.ownerToken)
	conn := map[string]any{"type": "postgresql", "host": host, "port": port, "database": "shop", "username": "postgres", "password": password, "ssl_mode": "disable"}
	id := e.do("POST", "/api/v1/projects/"+e.projectID+"/datasets/database", map[string]any{"name": "Shop", "connection": conn}, own).status(202).str("id")
	e.waitDataset(e.ownerToken, id)
	return e, own, id, password
}
