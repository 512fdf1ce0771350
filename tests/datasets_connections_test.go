package tests

import (
	"context"
	"database/sql"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"dataplatform/cmd/dataplatform/config"
	"dataplatform/store/pgembed"

	_ "github.com/go-sql-driver/mysql"
)

// externalPostgres starts a second PostgreSQL cluster, the "customer's database", with a
// shop schema: customers and orders linked by a foreign key, constraints of every kind, a
// table in another schema and one the options leave out.
func externalPostgres(t *testing.T) (host string, port int, password string) {
	c, _ := externalShop(t)
	u, _ := url.Parse(c.URL("shop"))
	p, _ := u.User.Password()
	return "127.0.0.1", c.Port, p
}

// externalShop starts the external cluster with its shop database and answers it with its
// data directory.
func externalShop(t *testing.T) (*pgembed.Cluster, string) {
	t.Helper()
	dir := t.TempDir()
	// The cluster runs as the postgres user when the tests run as root: it must reach dir.
	os.Chmod(dir, 0o711)
	os.Chmod(filepath.Dir(dir), 0o711)
	ctx := context.Background()
	c, err := pgembed.Start(ctx, filepath.Join(dir, "pg"), filepath.Join(dir, "password"), pgembed.Options{Ephemeral: true})
	if err != nil {
		t.Fatalf("external cluster: %v", err)
	}
	t.Cleanup(func() { c.Stop() })
	db, err := sql.Open("postgres", c.URL("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, q := range []string{
		`CREATE DATABASE shop`,
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	shop, err := sql.Open("postgres", c.URL("shop"))
	if err != nil {
		t.Fatal(err)
	}
	defer shop.Close()
	_, err = shop.Exec(`
		CREATE TYPE customer_status AS ENUM ('active', 'inactive', 'pending');
		CREATE TABLE customers (
			id serial PRIMARY KEY,
			name varchar(100) NOT NULL,
			email text NOT NULL UNIQUE,
			status customer_status NOT NULL DEFAULT 'pending',
			age integer CHECK (age >= 0),
			joined date);
		CREATE TABLE orders (
			id bigint PRIMARY KEY,
			customer_id integer NOT NULL REFERENCES customers (id),
			amount numeric(10, 2) NOT NULL DEFAULT 0,
			"Order Note" text,
			placed_at timestamptz);
		CREATE TABLE audit_log (id int);
		CREATE SCHEMA sales;
		CREATE TABLE sales.targets (region text, goal int);
		INSERT INTO customers (name, email, status, age, joined) VALUES
			('Ann', 'ann@example.com', 'active', 34, '2024-01-05'),
			('Bob', 'bob@example.com', 'inactive', NULL, '2024-02-10'),
			('Cid', 'cid@example.com', 'active', 51, NULL);
		INSERT INTO orders VALUES (10, 1, 19.90, 'gift', '2024-03-01T10:00:00Z'), (11, 1, 5.10, NULL, NULL), (12, 3, 100, 'rush', NULL);`)
	if err != nil {
		t.Fatal(err)
	}
	return c, filepath.Join(dir, "pg")
}

func TestPostgresConnectedDataset(t *testing.T) {
	t.Parallel()
	host, port, password := externalPostgres(t)
	e := newEnv(t)
	own := bearer(e.ownerToken)
	base := "/api/v1/projects/" + e.projectID + "/datasets/"
	conn := map[string]any{"type": "postgresql", "host": host, "port": port, "database": "shop", "username": "postgres", "password": password, "ssl_mode": "disable"}
	opts := map[string]any{"exclude_tables": []string{"audit_*"}, "sample_rows": 2}

	r := e.do("POST", base+"database/test", map[string]any{"connection": conn, "options": opts}, own).status(200)
	if r.get("success") != true || r.num("details.table_count") != 2 || !strings.HasPrefix(r.str("details.version"), "1") ||
		r.str("details.accessible_tables.0") != "public.customers" {
		t.Fatalf("test: %s", r.Body)
	}
	if !strings.Contains(string(r.Body), `"sales"`) {
		t.Fatalf("schemas_found lacks sales: %s", r.Body)
	}
	// Failures answer success false with the driver's reason, quickly.
	bad := map[string]any{}
	for k, v := range conn {
		bad[k] = v
	}
	bad["password"] = "wrong"
	r = e.do("POST", base+"database/test", map[string]any{"connection": bad}, own).status(200)
	if r.get("success") != false || !strings.Contains(r.str("message"), "password authentication failed") {
		t.Fatalf("wrong password: %s", r.Body)
	}
	unreachable := map[string]any{"type": "postgres", "host": "10.255.255.1", "database": "x", "username": "u", "password": "p"}
	// The connection attempt gives up on its own timeout and says it could not connect (no
	// wall-clock bound here: a loaded machine stretches any).
	r = e.do("POST", base+"database/test", map[string]any{"connection": unreachable}, own).status(200)
	if r.get("success") != false || !strings.Contains(r.str("message"), "could not connect to postgresql at 10.255.255.1") {
		t.Fatalf("unreachable host: %s", r.Body)
	}
	closed := freeTCPPort(t)
	r = e.do("POST", base+"database/test", map[string]any{"connection": map[string]any{"type": "postgresql", "host": "127.0.0.1", "port": closed,
		"database": "x", "username": "u", "password": "p", "ssl_mode": "disable"}}, own).status(200)
	if r.get("success") != false || !strings.Contains(r.str("message"), "refused") {
		t.Fatalf("closed port: %s", r.Body)
	}
	e.do("POST", base+"database/test", map[string]any{"connection": map[string]any{"type": "oracle", "host": "h", "database": "d", "username": "u", "password": "p"}}, own).
		apiError(400, "VALIDATION_ERROR", "body.connection.type", "enum")

	// Creating one reads the tables live through foreign tables.
	e.do("POST", base+"database", map[string]any{"name": "Shop", "connection": bad}, own).apiError(400, "CONNECTION_FAILED")
	c := e.do("POST", base+"database", map[string]any{"name": "Shop", "connection": conn, "options": opts}, own).status(202)
	id := c.str("id")
	d := e.waitDataset(e.ownerToken, id)
	if d.str("status") != "active" || d.str("type") != "database" || d.str("source.type") != "postgresql" || d.len("schema.tables") != 2 {
		t.Fatalf("dataset: %s", d.Body)
	}
	if d.str("source.connection.host") != host || d.num("source.connection.port") != port || strings.Contains(string(d.Body), password) {
		t.Fatalf("connection shown, password hidden: %s", d.Body)
	}
	var enc []byte
	e.st.DB.Get(&enc, `SELECT password_enc FROM platform.dataset_connections WHERE dataset_id = $1`, id)
	if len(enc) == 0 || strings.Contains(string(enc), password) {
		t.Fatal("the password is not stored encrypted")
	}
	s := e.do("GET", base+id+"/schema", nil, own).status(200)
	if s.str("tables.0.name") != "customers" || s.str("tables.0.type") != "foreign_table" || s.num("tables.0.row_count") != 3 {
		t.Fatalf("schema: %s", s.Body)
	}
	name, email, status, age := s.column("name"), s.column("email"), s.column("status"), s.column("age")
	if s.get(name+"nullable") != false || s.num(name+"constraints.max_length") != 100 || s.get(email+"constraints.unique") != true ||
		s.str(status+"constraints.default") != "pending" || s.len(status+"constraints.enum") != 3 || s.get(s.column("id")+"is_primary_key") != true ||
		s.str(age+"type") != "integer" || s.get(age+"constraints.minimum") != 0.0 {
		t.Fatalf("introspected constraints: %s", s.Body)
	}
	if s.get(age+"statistics.distinct_estimated") != true || s.num(age+"statistics.null_count") != 1 {
		t.Fatalf("statistics over sample_rows=2: %s", s.Body)
	}
	rel := false
	for i := 0; i < s.len("relationships"); i++ {
		p := fmt.Sprintf("relationships.%d.", i)
		if s.str(p+"from_table") == "orders" && s.str(p+"from_column") == "customer_id" && s.str(p+"to_table") == "customers" &&
			s.str(p+"to_column") == "id" && s.str(p+"origin") == "foreign_key" {
			rel = true
		}
	}
	if !rel {
		t.Fatalf("the foreign key is not a relationship: %s", s.Body)
	}
	p := e.do("GET", base+id+"/preview?table=orders&limit=2", nil, own).status(200)
	if p.str("table") != "orders" || p.num("total_rows") != 3 || p.row(0, "order_note") != "gift" || p.rawCell(1, "amount") != "5.10" {
		t.Fatalf("preview: %s", p.Body)
	}
	e.do("GET", base+id+"/preview?table=audit_log", nil, own).apiError(400, "VALIDATION_ERROR", "query.table", "not_found")
	// SQL over an uploaded dataset can join the connected tables (under the query role).
	up := e.uploadAndCreate(e.ownerToken, "Targets", "targets.csv", "customer,target\n1,50\n3,20\n")
	e.waitDataset(e.ownerToken, up)
	q := e.do("POST", "/api/v1/datasets/"+up+"/data/query", map[string]any{"sql": fmt.Sprintf(
		`SELECT c.name, t.target FROM ${table} t JOIN %q.customers c ON c.id = t.customer ORDER BY c.name`, id)}, own).status(200)
	if q.num("meta.row_count") != 2 || q.str("data.0.name") != "Ann" || q.num("data.1.target") != 20 {
		t.Fatalf("join with a connected table: %s", q.Body)
	}
	// A project query names both by name: the connected tables as dataset.table.
	pq := e.do("POST", "/api/v1/projects/"+e.projectID+"/queries/execute", map[string]any{"type": "sql",
		"query": `SELECT c.name, t.target, count(o.id) AS orders FROM targets t JOIN shop.customers c ON c.id = t.customer
			LEFT JOIN orders o ON o.customer_id = c.id GROUP BY 1, 2 ORDER BY c.name`}, own).status(200)
	if got := rows(pq); got != "Ann|50|2\nCid|20|1" || pq.len("explanation.datasets_used") != 2 {
		t.Fatalf("project query over connected and uploaded datasets: %s", pq.Body)
	}
	// The list tells the two kinds apart.
	if l := e.do("GET", base[:len(base)-1]+"?type=database", nil, own).status(200); l.num("pagination.total") != 1 || l.str("datasets.0.id") != id {
		t.Fatalf("type=database: %s", l.Body)
	}
	if l := e.do("GET", base[:len(base)-1]+"?type=file", nil, own).status(200); l.num("pagination.total") != 1 || l.str("datasets.0.id") != up {
		t.Fatalf("type=file: %s", l.Body)
	}
	// The data stays there: a change in the database shows at once.
	ext, _ := sql.Open("postgres", fmt.Sprintf("postgres://postgres:%s@%s:%d/shop?sslmode=disable", url.QueryEscape(password), host, port))
	defer ext.Close()
	if _, err := ext.Exec(`INSERT INTO orders VALUES (13, 2, 1, 'new', NULL)`); err != nil {
		t.Fatal(err)
	}
	if p := e.do("GET", base+id+"/preview?table=orders", nil, own).status(200); p.num("total_rows") != 4 {
		t.Fatalf("not live: %s", p.Body)
	}
	e.do("PUT", "/api/v1/datasets/"+id+"/schema", map[string]any{"changes": []any{map[string]any{"op": "drop_column", "column": "age"}}}, own).apiError(409, "CONFLICT")
	// Refresh reads the database again: a new column appears, as a new schema version.
	r = e.do("POST", base+id+"/refresh", nil, own).status(202)
	e.waitJob(e.ownerToken, r.str("job_id"))
	if s := e.do("GET", base+id+"/schema", nil, own).status(200); s.num("schema_version") != 1 {
		t.Fatalf("an unchanged database made a new version: %s", s.Body)
	}
	if _, err := ext.Exec(`ALTER TABLE customers ADD COLUMN tier text NOT NULL DEFAULT 'basic'`); err != nil {
		t.Fatal(err)
	}
	r = e.do("POST", base+id+"/refresh", nil, own).status(202)
	e.waitJob(e.ownerToken, r.str("job_id"))
	s = e.do("GET", base+id+"/schema", nil, own).status(200)
	if s.num("schema_version") != 2 || s.str(s.column("tier")+"constraints.default") != "basic" || s.str(s.column("tier")+"sample_values.0") != "basic" {
		t.Fatalf("after the database changed: %s", s.Body)
	}
	// Each table's description keeps its versions: customers gained an optional field (minor);
	// orders did not change.
	if v := e.do("GET", "/api/v1/datasets/"+id+"/versions?table=customers", nil, own).status(200); v.len("versions") != 2 ||
		v.str("current") != "1.1.0" || v.str("versions.1.level") != "minor" {
		t.Fatalf("customers versions: %s", v.Body)
	}
	if v := e.do("GET", "/api/v1/datasets/"+id+"/versions?table=orders", nil, own).status(200); v.str("current") != "1.0.0" {
		t.Fatalf("orders versions: %s", v.Body)
	}
	if old := e.do("GET", "/api/v1/datasets/"+id+"/openapi.json?table=customers&version=1.0.0", nil, own).status(200); old.get("components.schemas.Customer.properties.tier") != nil ||
		old.get("components.schemas.Customer.properties.name") == nil {
		t.Fatalf("customers 1.0.0: %s", old.Body)
	}
	if r := e.do("GET", "/api/v1/datasets/"+id+"/data/1?table=customers", nil, own).status(200); r.str("tier") != "basic" {
		t.Fatalf("the new column reads: %s", r.Body)
	}

	// Deleting it drops the foreign tables and the server with its credentials.
	e.do("DELETE", base+id, nil, own).status(200)
	var left int
	e.st.DB.Get(&left, `SELECT (SELECT count(*) FROM pg_foreign_server WHERE srvname = $1) + (SELECT count(*) FROM pg_namespace WHERE nspname = $2)`, "srv_"+id, id)
	if left != 0 {
		t.Fatal("the foreign server or schema survived the dataset")
	}
}

// row reads a preview row's value by column name.
func (r *resp) row(i int, column string) any {
	r.t.Helper()
	for j := 0; j < r.len("columns"); j++ {
		if r.str(fmt.Sprintf("columns.%d", j)) == column {
			return r.get(fmt.Sprintf("rows.%d.%d", i, j))
		}
	}
	r.t.Fatalf("no column %s in %s", column, r.Body)
	return nil
}

func freeTCPPort(t *testing.T) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// MariaDB (or MySQL) at 127.0.0.1:3306 as root without a password, as on the CI machine.
func TestMySQLConnectedDataset(t *testing.T) {
	t.Parallel()
	const addr = "127.0.0.1:3306"
	admin, err := sql.Open("mysql", "root@tcp("+addr+")/?timeout=2s&multiStatements=true")
	if err == nil {
		err = admin.Ping()
	}
	if err != nil {
		t.Skipf("no MySQL/MariaDB reachable as root at %s: %v", addr, err)
	}
	defer admin.Close()
	dbName := "dp_test_" + strconv.FormatInt(time.Now().UnixNano(), 36)
	if _, err := admin.Exec(`CREATE DATABASE ` + dbName); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Exec(`DROP DATABASE ` + dbName) })
	_, err = admin.Exec(`USE ` + dbName + `;
		CREATE TABLE customers (id INT AUTO_INCREMENT PRIMARY KEY, name VARCHAR(100) NOT NULL, email VARCHAR(255) NOT NULL UNIQUE,
			status ENUM('active','inactive','pending') NOT NULL DEFAULT 'pending', vip TINYINT(1) NOT NULL DEFAULT 0,
			age INT CHECK (age >= 0), joined DATE, meta JSON);
		CREATE TABLE orders (id BIGINT PRIMARY KEY, customer_id INT NOT NULL, amount DECIMAL(10,2) NOT NULL,
			placed_at DATETIME, FOREIGN KEY (customer_id) REFERENCES customers (id));
		INSERT INTO customers (name, email, status, vip, age, joined, meta) VALUES
			('Ann', 'ann@example.com', 'active', 1, 34, '2024-01-05', '{"a": 1}'), ('Bob', 'bob@example.com', 'inactive', 0, NULL, NULL, NULL);
		INSERT INTO orders VALUES (10, 1, 19.90, '2024-03-01 10:00:00'), (11, 2, 5.10, NULL);`)
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t)
	own := bearer(e.ownerToken)
	base := "/api/v1/projects/" + e.projectID + "/datasets/"
	conn := map[string]any{"type": "mariadb", "host": "127.0.0.1", "database": dbName, "username": "root", "password": "", "ssl_mode": "disable"}
	r := e.do("POST", base+"database/test", map[string]any{"connection": conn}, own).status(200)
	if r.get("success") != true || r.num("details.table_count") != 2 || !strings.Contains(r.str("details.version"), "MariaDB") && !strings.HasPrefix(r.str("details.version"), "8") {
		t.Fatalf("test: %s", r.Body)
	}
	bad := map[string]any{"type": "mysql", "host": "127.0.0.1", "database": dbName, "username": "nobody", "password": "x", "ssl_mode": "disable"}
	if r := e.do("POST", base+"database/test", map[string]any{"connection": bad}, own).status(200); r.get("success") != false || !strings.Contains(r.str("message"), "denied") {
		t.Fatalf("bad user: %s", r.Body)
	}
	c := e.do("POST", base+"database", map[string]any{"name": "Maria shop", "connection": conn}, own)
	if c.Code == 501 {
		t.Skipf("mysql_fdw is not installed on this machine's PostgreSQL: %s", c.Body)
	}
	id := c.status(202).str("id")
	d := e.waitDataset(e.ownerToken, id)
	if d.str("status") != "active" || d.str("source.type") != "mysql" {
		t.Fatalf("dataset: %s", d.Body)
	}
	s := e.do("GET", base+id+"/schema", nil, own).status(200)
	status, vip := s.column("status"), s.column("vip")
	if s.str(vip+"type") != "boolean" || s.len(status+"constraints.enum") != 3 || s.str(status+"constraints.default") != "pending" ||
		s.get(s.column("email")+"constraints.unique") != true || s.num(s.column("name")+"constraints.max_length") != 100 ||
		s.get(vip+"constraints.default") != false || s.str(s.column("placed_at")+"type") != "timestamptz" ||
		s.get(s.column("age")+"constraints.minimum") != 0.0 {
		t.Fatalf("introspection: %s", s.Body)
	}
	// MariaDB's JSON is longtext (text here); MySQL's is a type of its own.
	if meta := s.str(s.column("meta") + "type"); meta != "jsonb" && !(meta == "text" && strings.Contains(r.str("details.version"), "MariaDB")) {
		t.Fatalf("meta column: %s", meta)
	}
	if s.num("tables.0.row_count") != 2 || s.len("relationships") != 1 {
		t.Fatalf("rows and relationships: %s", s.Body)
	}
	p := e.do("GET", base+id+"/preview?table=customers", nil, own).status(200)
	if p.row(0, "name") != "Ann" || p.row(0, "vip") != true || p.row(1, "age") != nil {
		t.Fatalf("preview: %s", p.Body)
	}
	// The record API reads MySQL tables (mysql_fdw does not write them back: read-only).
	data := "/api/v1/datasets/" + id + "/data"
	if l := e.do("GET", data+"?table=customers&filter[vip]=true", nil, own).status(200); l.len("data") != 1 || l.str("data.0.name") != "Ann" ||
		l.str("data.0._links.self") != "/api/v1/datasets/"+id+"/data/1?table=customers" {
		t.Fatalf("list: %s", l.Body)
	}
	if g := e.do("GET", data+"/2?table=customers", nil, own).status(200); g.str("email") != "bob@example.com" || g.get("vip") != false {
		t.Fatalf("get: %s", g.Body)
	}
	if d := e.do("GET", "/api/v1/datasets/"+id+"/openapi.json?table=customers", nil, own).status(200); d.get("components.schemas.Customer.properties.id.readOnly") != true ||
		d.get("paths./api/v1/datasets/{dataset_id}/data.post") != nil || d.get("paths./api/v1/datasets/{dataset_id}/data/{id}.put") != nil {
		t.Fatalf("read-only description: %s", d.Body)
	}
	// User SQL reads them through the views the service role owns (mysql_fdw then connects
	// with the service role's mapping: the query role has none).
	if q := e.do("POST", "/api/v1/projects/"+e.projectID+"/queries/execute", map[string]any{"type": "sql",
		"query": `SELECT c.name, sum(o.amount) AS total FROM maria_shop.customers c JOIN maria_shop.orders o ON o.customer_id = c.id GROUP BY 1 ORDER BY 1`}, own).
		status(200); rows(q) != "Ann|19.9\nBob|5.1" {
		t.Fatalf("SQL over the MySQL tables: %s", q.Body)
	}
	e.do("POST", data+"?table=customers", map[string]any{"name": "Cid", "email": "cid@example.com"}, own).apiError(405, "METHOD_NOT_ALLOWED")
	e.do("DELETE", data+"/1?table=customers", nil, own).apiError(405, "METHOD_NOT_ALLOWED")
	e.do("DELETE", base+id, nil, own).status(200)
}

// TestConnectionNetworks: by default a connection reaches public addresses only. Loopback,
// names that resolve to it, the cloud metadata address and Unix sockets are refused before a
// byte is sent, and nothing is created.
func TestConnectionNetworks(t *testing.T) {
	t.Parallel()
	host, port, password := externalPostgres(t)
	e := newEnv(t, func(c *config.Config) { c.ConnectionNetworks = nil })
	own := bearer(e.ownerToken)
	base := "/api/v1/projects/" + e.projectID + "/datasets/"
	conn := func(host string) map[string]any {
		return map[string]any{"type": "postgresql", "host": host, "port": port, "database": "shop", "username": "postgres", "password": password, "ssl_mode": "disable"}
	}
	for _, h := range []string{host, "localhost", "169.254.169.254", "10.0.0.1", "/var/run/postgresql"} {
		r := e.do("POST", base+"database/test", map[string]any{"connection": conn(h)}, own).status(200)
		if r.get("success") != false || !strings.Contains(r.str("message"), "refused address") {
			t.Fatalf("%s: %s", h, r.Body)
		}
	}
	my := map[string]any{"type": "mysql", "host": "127.0.0.1", "database": "test", "username": "root", "password": "", "ssl_mode": "disable"}
	if r := e.do("POST", base+"database/test", map[string]any{"connection": my}, own).status(200); r.get("success") != false ||
		!strings.Contains(r.str("message"), "refused address") {
		t.Fatalf("mysql on loopback: %s", r.Body)
	}
	e.do("POST", base+"database", map[string]any{"name": "Shop", "connection": conn(host)}, own).apiError(400, "CONNECTION_FAILED")
	if r := e.do("GET", "/api/v1/projects/"+e.projectID+"/datasets", nil, own).status(200); r.num("pagination.total") != 0 {
		t.Fatalf("a refused connection left a dataset: %s", r.Body)
	}
}

// TestConnectionErrorsKeepTheServerNetwork: a failed connection says what is wrong with the
// host the caller gave (it does not resolve; its address is not allowed), never which
// resolver the server asked or what a name resolved to.
func TestConnectionErrorsKeepTheServerNetwork(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *config.Config) { c.ConnectionNetworks = nil })
	own := bearer(e.ownerToken)
	base := "/api/v1/projects/" + e.projectID + "/datasets/"
	leak := regexp.MustCompile(`\d+\.\d+\.\d+\.\d+|::1|lookup| on |:53\b`)
	for _, tc := range []struct{ typ, host, says string }{
		{"postgresql", "0x7f000001", "does not resolve"},
		{"mysql", "0x7f000001", "does not resolve"},
		{"postgresql", "nothing-here.invalid", "does not resolve"},
		{"postgresql", "localhost", "refused address"},
		{"mysql", "localhost", "refused address"},
	} {
		conn := map[string]any{"type": tc.typ, "host": tc.host, "database": "shop", "username": "u", "password": "p", "ssl_mode": "disable"}
		// A resolver that does not answer in time (this machine's network may not) is a
		// timeout rather than "does not resolve": either way nothing of the server's network.
		says := func(m string) bool { return strings.Contains(m, tc.says) || strings.Contains(m, "no answer within") }
		r := e.do("POST", base+"database/test", map[string]any{"connection": conn}, own).status(200)
		if m := r.str("message"); r.get("success") != false || !says(m) || leak.MatchString(m) {
			t.Fatalf("%s at %s: %s", tc.typ, tc.host, r.Body)
		}
		c := e.do("POST", base+"database", map[string]any{"name": "Shop", "connection": conn}, own).apiError(400, "CONNECTION_FAILED")
		if m := c.str("error.message") + " " + c.str("error.details.reason"); !says(m) || leak.MatchString(m) {
			t.Fatalf("%s at %s: %s", tc.typ, tc.host, c.Body)
		}
	}
}
