package tests

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// viewsPath is the project's views collection.
func (e *env) viewsPath() string { return "/api/v1/projects/" + e.projectID + "/views" }

func (e *env) createView(tok string, body map[string]any) *resp {
	e.t.Helper()
	return e.do("POST", e.viewsPath(), body, bearer(tok))
}

// previewRows is a preview's rows as text, one line per row, values joined by |.
func previewRows(r *resp) string {
	var lines []string
	for i := 0; i < r.len("rows"); i++ {
		var vals []string
		for j := 0; j < r.len(fmt.Sprintf("rows.%d", i)); j++ {
			vals = append(vals, fmt.Sprint(r.get(fmt.Sprintf("rows.%d.%d", i, j))))
		}
		lines = append(lines, strings.Join(vals, "|"))
	}
	return strings.Join(lines, "\n")
}

// settleJobs waits until no dataset job (analysis, search index) runs or is due on the
// server's clock: a dataset's table dropped while the search indexer builds an index on it
// can fail in PostgreSQL ("tuple concurrently updated"), which is not what these tests test.
// A job backing off after a deadlock with a schema change waits for a later time on the
// server's clock, which these tests do not move.
func (e *env) settleJobs() {
	e.t.Helper()
	for i := 0; i < 3000; i++ {
		var n int
		if err := e.st.DB.Get(&n, `SELECT count(*) FROM platform.jobs WHERE kind LIKE 'dataset.%' AND (status = 'running'
			OR (status = 'queued' AND run_at <= $1))`, e.clock.Now()); err != nil {
			e.t.Fatal(err)
		}
		if n == 0 {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	e.t.Fatal("background jobs did not settle")
}

func TestViewsCRUDAndQueries(t *testing.T) {
	t.Parallel()
	e, customers, orders := queryFixture(t)
	own := e.ownerToken
	// A view by SQL over datasets by name.
	big := e.createView(own, map[string]any{"name": "big_orders", "description": "Orders of 10 or more",
		"definition": map[string]any{"sql": "SELECT order_no, customer_ref, total FROM sales_orders WHERE total >= 10"}}).status(201)
	bigID := big.str("id")
	if !strings.HasPrefix(bigID, "vw_") || big.str("status") != "active" || big.get("error") != nil || big.len("columns") != 3 ||
		big.str("columns.2.name") != "total" || big.str("columns.2.type") != "numeric" || big.str("datasets.0") != orders ||
		!strings.Contains(big.str("sql"), e.orgID) || big.str("definition.sql") == "" || big.str("created_by.id") == "" ||
		big.Header.Get("Location") != e.viewsPath()+"/"+bigID {
		t.Fatalf("created view: %s", big.Body)
	}
	if e.countAuditRows(e.orgID, "view.create") != 1 {
		t.Fatal("no audit row for view.create")
	}
	// A view by a structured join, with the default columns (clashing names prefixed) ...
	j := e.createView(own, map[string]any{"name": "orders_with_customers", "definition": map[string]any{"join": map[string]any{
		"base": "Sales Orders", "joins": []any{map[string]any{"dataset": customers, "type": "left",
			"on": []any{map[string]any{"left": "sales_orders.customer_ref", "right": "customers.customer_no"}}}}}}}).status(201)
	var names []string
	for i := 0; i < j.len("columns"); i++ {
		names = append(names, j.str(fmt.Sprintf("columns.%d.name", i)))
	}
	if got := strings.Join(names, ","); got != "order_no,customer_ref,total,placed,customer_no,name,city,credit" || j.len("datasets") != 2 {
		t.Fatalf("join columns %s: %s", got, j.Body)
	}
	// ... and with picked, renamed columns; a view may read another view.
	pick := e.createView(own, map[string]any{"name": "spend", "definition": map[string]any{"join": map[string]any{
		"base": "big_orders", "joins": []any{map[string]any{"dataset": "customers", "type": "inner",
			"on": []any{map[string]any{"left": "big_orders.customer_ref", "right": "customers.customer_no"}}}},
		"columns": []any{map[string]any{"source": "customers.name", "as": "customer_name"}, map[string]any{"source": "big_orders.total"}}}}}).status(201)
	if pick.str("columns.0.name") != "customer_name" || pick.str("columns.1.name") != "total" || !strings.Contains(pick.str("sql"), bigID) || pick.len("datasets") != 2 {
		t.Fatalf("picked columns: %s", pick.Body)
	}
	// Preview runs through the sandbox.
	p := e.do("GET", e.viewsPath()+"/"+pick.str("id")+"/preview", nil, bearer(own)).status(200)
	if got := previewRows(p); p.num("row_count") != 2 || !strings.Contains(got, "Cid|100") || !strings.Contains(got, "Ann|19.9") {
		t.Fatalf("preview: %s", p.Body)
	}
	p = e.do("GET", e.viewsPath()+"/"+j.str("id")+"/preview?limit=1", nil, bearer(own)).status(200)
	if p.num("row_count") != 1 || p.get("truncated") != true || p.len("columns") != 8 {
		t.Fatalf("preview limit: %s", p.Body)
	}
	e.do("GET", e.viewsPath()+"/"+bigID+"/preview?limit=1001", nil, bearer(own)).apiError(400, "VALIDATION_ERROR", "query.limit", "maximum")

	// Named in project SQL like a dataset: execute, validate, explain.
	r := e.execute(map[string]any{"query": "SELECT customer_name, total FROM spend ORDER BY total DESC"}, own).status(200)
	if rows(r) != "Cid|100\nAnn|19.9" {
		t.Fatalf("execute over a view: %s", r.Body)
	}
	e.do("POST", "/api/v1/projects/"+e.projectID+"/queries/validate", map[string]any{"type": "sql", "query": "SELECT * FROM big_orders"}, bearer(own)).
		status(200)
	if v := e.do("POST", "/api/v1/projects/"+e.projectID+"/queries/validate", map[string]any{"type": "sql", "query": "SELECT * FROM big_orders"}, bearer(own)); v.get("valid") != true || v.str("datasets_required.0") != bigID {
		t.Fatalf("validate: %s", v.Body)
	}
	e.do("POST", "/api/v1/projects/"+e.projectID+"/queries/explain", map[string]any{"type": "sql", "query": "SELECT count(*) FROM big_orders"}, bearer(own)).status(200)
	// Saved queries over a view.
	q := e.execute(map[string]any{"query": "SELECT count(*) AS n FROM big_orders"}, own).status(200)
	s := e.do("POST", "/api/v1/projects/"+e.projectID+"/queries/"+q.str("query_id")+"/save", map[string]any{"name": "big count"}, bearer(own)).status(201)
	if r := e.do("POST", "/api/v1/projects/"+e.projectID+"/saved-queries/"+s.str("id")+"/execute", map[string]any{}, bearer(own)).status(200); rows(r) != "2" {
		t.Fatalf("saved query over a view: %s", r.Body)
	}
	// Natural language: a view is one more table.
	nl := e.do("POST", "/api/v1/projects/"+e.projectID+"/queries/execute", map[string]any{"query": "how many big orders are there?"}, bearer(own)).status(200)
	if rows(nl) != "2" || !strings.Contains(nl.str("generated_sql"), bigID) {
		t.Fatalf("natural language over a view: %s", nl.Body)
	}

	// Reads: list with search and pagination, get.
	l := e.do("GET", e.viewsPath()+"?limit=2", nil, bearer(own)).status(200)
	if l.len("views") != 2 || l.num("pagination.total") != 3 || l.str("views.0.name") != "big_orders" || l.get("pagination.has_next") != true {
		t.Fatalf("list: %s", l.Body)
	}
	if l := e.do("GET", e.viewsPath()+"?query=CUSTOMERS", nil, bearer(own)).status(200); l.len("views") != 1 || l.str("views.0.id") != j.str("id") {
		t.Fatalf("search: %s", l.Body)
	}
	if g := e.do("GET", e.viewsPath()+"/"+bigID, nil, bearer(own)).status(200); g.str("name") != "big_orders" || g.str("description") != "Orders of 10 or more" {
		t.Fatalf("get: %s", g.Body)
	}

	// PATCH: rename, describe, redefine; the view reading it follows.
	u := e.do("PATCH", e.viewsPath()+"/"+bigID, map[string]any{"name": "Large_Orders", "description": "",
		"definition": map[string]any{"sql": "SELECT order_no, customer_ref, total FROM sales_orders WHERE total >= 7"}}, bearer(own)).status(200)
	if u.str("name") != "Large_Orders" || u.get("description") != nil || !strings.Contains(u.str("definition.sql"), ">= 7") {
		t.Fatalf("patch: %s", u.Body)
	}
	if r := e.execute(map[string]any{"query": "SELECT count(*) FROM large_orders"}, own).status(200); rows(r) != "3" {
		t.Fatalf("after patch: %s", r.Body)
	}
	if r := e.execute(map[string]any{"query": "SELECT count(*) FROM spend"}, own).status(200); rows(r) != "3" {
		t.Fatalf("dependent view after patch: %s", r.Body)
	}
	if e.countAuditRows(e.orgID, "view.update") != 1 {
		t.Fatal("no audit row for view.update")
	}
	// A view cannot read a view that reads it.
	e.do("PATCH", e.viewsPath()+"/"+bigID, map[string]any{"definition": map[string]any{"sql": "SELECT * FROM spend"}}, bearer(own)).
		apiError(400, "INVALID_QUERY")

	// DELETE: the view reading it becomes broken, and says so.
	e.do("DELETE", e.viewsPath()+"/"+bigID, nil, bearer(own)).status(204)
	e.do("GET", e.viewsPath()+"/"+bigID, nil, bearer(own)).apiError(404, "NOT_FOUND")
	sp := e.do("GET", e.viewsPath()+"/"+pick.str("id"), nil, bearer(own)).status(200)
	if sp.str("status") != "broken" || sp.str("error") != "view Large_Orders was deleted" {
		t.Fatalf("dependent of a deleted view: %s", sp.Body)
	}
	if e.countAuditRows(e.orgID, "view.delete") != 1 {
		t.Fatal("no audit row for view.delete")
	}
}

func TestViewsErrors(t *testing.T) {
	t.Parallel()
	e, customers, _ := queryFixture(t)
	own := e.ownerToken
	sql := func(name, q string) *resp {
		return e.createView(own, map[string]any{"name": name, "definition": map[string]any{"sql": q}})
	}
	// SQL that does not parse, unknown datasets and columns, writes, placeholders.
	r := sql("v1", "SELECT *\nFROM nope").apiError(400, "INVALID_QUERY")
	if r.num("error.details.line") != 2 || !strings.Contains(string(r.Body), `"sales_orders"`) {
		t.Fatalf("unknown dataset: %s", r.Body)
	}
	if r := sql("v1", "SELECT name FROM customers WHERE").apiError(400, "INVALID_QUERY"); r.num("error.details.line") != 1 {
		t.Fatalf("syntax: %s", r.Body)
	}
	if r := sql("v1", "SELECT\n missing FROM customers").apiError(400, "INVALID_QUERY"); r.num("error.details.line") != 2 {
		t.Fatalf("missing column: %s", r.Body)
	}
	sql("v1", "DELETE FROM customers").apiError(400, "FORBIDDEN_OPERATION")
	sql("v1", "SELECT * FROM pg_catalog.pg_roles").apiError(400, "FORBIDDEN_OPERATION")
	sql("v1", "SELECT name FROM customers WHERE city = {{city}}").apiError(400, "VALIDATION_ERROR", "body.definition.sql", "placeholders")
	// Two columns of one name cannot make a view.
	sql("v1", "SELECT c.name, c.name FROM customers c").apiError(400, "INVALID_QUERY")
	// The definition is exactly one of sql and join; names are identifiers.
	e.createView(own, map[string]any{"name": "v1", "definition": map[string]any{}}).apiError(400, "VALIDATION_ERROR")
	e.createView(own, map[string]any{"name": "v1", "definition": map[string]any{"sql": "SELECT 1", "join": map[string]any{"base": "customers", "joins": []any{}}}}).
		apiError(400, "VALIDATION_ERROR")
	e.createView(own, map[string]any{"name": "has space", "definition": map[string]any{"sql": "SELECT 1"}}).apiError(400, "VALIDATION_ERROR", "body.name", "pattern")
	// Join errors name the field.
	join := func(j map[string]any) *resp {
		return e.createView(own, map[string]any{"name": "j1", "definition": map[string]any{"join": j}})
	}
	r = join(map[string]any{"base": "nope", "joins": []any{}}).apiError(400, "INVALID_QUERY")
	if r.str("error.details.field") != "body.definition.join.base" || r.len("error.details.available_datasets") != 2 {
		t.Fatalf("unknown join dataset: %s", r.Body)
	}
	join(map[string]any{"base": "customers", "joins": []any{map[string]any{"dataset": "sales_orders", "type": "inner",
		"on": []any{map[string]any{"left": "customers.nope", "right": "sales_orders.customer_ref"}}}}}).
		apiError(400, "VALIDATION_ERROR", "body.definition.join.joins[0].on[0].left", "not_found")
	join(map[string]any{"base": "customers", "joins": []any{}, "columns": []any{map[string]any{"source": "customers.name"}, map[string]any{"source": "customers.name"}}}).
		apiError(400, "VALIDATION_ERROR", "body.definition.join.columns[1]", "duplicate")
	join(map[string]any{"base": "customers", "joins": []any{map[string]any{"dataset": "customers", "type": "inner",
		"on": []any{map[string]any{"left": "customers.id", "right": "customers.id"}}}}}).apiError(400, "VALIDATION_ERROR", "body.definition.join.joins[0].dataset", "duplicate")
	// Nothing of the refused requests was kept.
	if l := e.do("GET", e.viewsPath(), nil, bearer(own)).status(200); l.num("pagination.total") != 0 || e.countAuditRows(e.orgID, "view.create") != 0 {
		t.Fatalf("refused views were kept: %s", l.Body)
	}
	// Names are unique among datasets and views, case-insensitively, as SQL names them.
	ok := sql("cheap", "SELECT * FROM sales_orders WHERE total < 10").status(201)
	sql("CHEAP", "SELECT 1 AS one").apiError(409, "CONFLICT", "name")
	sql("Customers", "SELECT 1 AS one").apiError(409, "CONFLICT", "name")
	sql("sales_orders", "SELECT 1 AS one").apiError(409, "CONFLICT", "name")
	e.do("PATCH", "/api/v1/projects/"+e.projectID+"/datasets/"+customers, map[string]any{"name": "Cheap"}, bearer(own)).apiError(409, "CONFLICT")

	// Roles: viewers read definitions but not rows; analysts manage views; others see nothing.
	_, viewer := e.member(e.orgID, "viewer")
	_, analyst := e.member(e.orgID, "analyst")
	e.do("GET", e.viewsPath(), nil, bearer(viewer)).status(200)
	e.do("GET", e.viewsPath()+"/"+ok.str("id"), nil, bearer(viewer)).status(200)
	e.do("GET", e.viewsPath()+"/"+ok.str("id")+"/preview", nil, bearer(viewer)).authError(403, "PERMISSION_DENIED")
	e.createView(viewer, map[string]any{"name": "nope", "definition": map[string]any{"sql": "SELECT 1 AS one"}}).authError(403, "PERMISSION_DENIED")
	e.do("DELETE", e.viewsPath()+"/"+ok.str("id"), nil, bearer(viewer)).authError(403, "PERMISSION_DENIED")
	a := e.createView(analyst, map[string]any{"name": "by_analyst", "definition": map[string]any{"sql": "SELECT city FROM customers"}}).status(201)
	e.do("GET", e.viewsPath()+"/"+a.str("id")+"/preview", nil, bearer(analyst)).status(200)
	e.do("DELETE", e.viewsPath()+"/"+a.str("id"), nil, bearer(analyst)).status(204)
	other := e.do("POST", "/api/v1/organizations", map[string]any{"name": "Other"}, bearer(own)).status(201).str("id")
	_, outsider := e.member(other, "admin")
	e.do("GET", e.viewsPath()+"/"+ok.str("id"), nil, bearer(outsider)).apiError(404, "NOT_FOUND")
	e.do("GET", e.viewsPath(), nil, bearer(outsider)).apiError(404, "NOT_FOUND")
	e.do("DELETE", e.viewsPath()+"/"+ok.str("id"), nil, bearer(outsider)).apiError(404, "NOT_FOUND")
	e.do("GET", e.viewsPath()+"/vw_nope", nil, bearer(own)).apiError(404, "NOT_FOUND")
}

func TestViewsSchemaChanges(t *testing.T) {
	t.Parallel()
	e, customers, orders := queryFixture(t)
	own := e.ownerToken
	change := func(id string, changes ...any) *resp {
		return e.do("PUT", "/api/v1/datasets/"+id+"/schema", map[string]any{"changes": changes}, bearer(own))
	}
	mk := func(name, q string) string {
		return e.createView(own, map[string]any{"name": name, "definition": map[string]any{"sql": q}}).status(201).str("id")
	}
	view := func(id string) *resp { return e.do("GET", e.viewsPath()+"/"+id, nil, bearer(own)).status(200) }
	totals := mk("totals", "SELECT order_no, total FROM sales_orders")
	places := mk("places", "SELECT order_no, placed FROM sales_orders")
	onTotals := mk("on_totals", "SELECT sum(total) AS s FROM totals")
	cities := mk("cities", "SELECT DISTINCT city FROM customers")

	// A change that touches none of a view's columns keeps it active (and readable).
	change(orders, map[string]any{"op": "add_column", "column": map[string]any{"name": "note", "type": "text"}}).status(200)
	change(orders, map[string]any{"op": "rename_column", "column": "customer_ref", "new_name": "cust"}).status(200)
	for _, id := range []string{totals, places, onTotals} {
		if v := view(id); v.str("status") != "active" {
			t.Fatalf("untouched view: %s", v.Body)
		}
	}
	if r := e.execute(map[string]any{"query": "SELECT s FROM on_totals"}, own).status(200); rows(r) != "132.5" {
		t.Fatalf("view of a view after a change: %s", r.Body)
	}
	// Dropping a column a view reads breaks it (and the view reading it) instead of failing.
	change(orders, map[string]any{"op": "drop_column", "column": "total"}).status(200)
	if v := view(totals); v.str("status") != "broken" || v.str("error") != "column total of dataset Sales Orders was dropped" {
		t.Fatalf("dropped column: %s", v.Body)
	}
	if v := view(onTotals); v.str("status") != "broken" || v.str("error") != "the view totals it reads is broken" {
		t.Fatalf("view of a broken view: %s", v.Body)
	}
	if v := view(places); v.str("status") != "active" {
		t.Fatalf("untouched view after a drop: %s", v.Body)
	}
	// A broken view answers queries and previews with VIEW_BROKEN.
	if v := e.do("POST", "/api/v1/projects/"+e.projectID+"/queries/validate", map[string]any{"type": "sql", "query": "SELECT * FROM totals"}, bearer(own)).status(200); v.get("valid") != false || v.str("errors.0.code") != "VIEW_BROKEN" {
		t.Fatalf("validate of a broken view: %s", v.Body)
	}
	r := e.execute(map[string]any{"query": "SELECT * FROM totals"}, own).apiError(409, "VIEW_BROKEN")
	if r.str("error.details.view_id") != totals || !strings.Contains(r.str("error.details.error"), "total") {
		t.Fatalf("query of a broken view: %s", r.Body)
	}
	e.do("GET", e.viewsPath()+"/"+totals+"/preview", nil, bearer(own)).apiError(409, "VIEW_BROKEN")
	// Renaming a column a view reads breaks it, saying so.
	change(orders, map[string]any{"op": "rename_column", "column": "placed", "new_name": "placed_on"}).status(200)
	if v := view(places); v.str("status") != "broken" || v.str("error") != "column placed of dataset Sales Orders was renamed to placed_on" {
		t.Fatalf("renamed column: %s", v.Body)
	}
	// PATCHing the definition fixes it; the view reading it comes back with the next change.
	f := e.do("PATCH", e.viewsPath()+"/"+places, map[string]any{"definition": map[string]any{"sql": "SELECT order_no, placed_on FROM sales_orders"}}, bearer(own)).status(200)
	if f.str("status") != "active" || f.get("error") != nil {
		t.Fatalf("fixed view: %s", f.Body)
	}
	e.do("PATCH", e.viewsPath()+"/"+totals, map[string]any{"definition": map[string]any{"sql": "SELECT order_no, 1::numeric AS total FROM sales_orders"}}, bearer(own)).status(200)
	if v := view(onTotals); v.str("status") != "active" {
		t.Fatalf("view of a fixed view: %s", v.Body)
	}
	// Deleting a dataset a view reads breaks the view; the deletion is not blocked.
	e.settleJobs()
	e.do("DELETE", "/api/v1/projects/"+e.projectID+"/datasets/"+customers, nil, bearer(own)).status(200)
	if v := view(cities); v.str("status") != "broken" || v.str("error") != "dataset Customers was deleted" {
		t.Fatalf("deleted dataset: %s", v.Body)
	}
	// Deleting the project removes its views with its datasets.
	e.settleJobs()
	e.do("DELETE", "/api/v1/projects/"+e.projectID, nil, bearer(own)).status(204)
	var n int
	if err := e.st.DB.Get(&n, `SELECT count(*) FROM platform.views WHERE project_id = $1`, e.projectID); err != nil || n != 0 {
		t.Fatalf("views of a deleted project: %d %v", n, err)
	}
	if err := e.st.DB.Get(&n, `SELECT count(*) FROM pg_class c JOIN pg_namespace s ON s.oid = c.relnamespace WHERE s.nspname = $1 AND c.relkind = 'v'`, e.orgID); err != nil || n != 0 {
		t.Fatalf("PostgreSQL views of a deleted project: %d %v", n, err)
	}
}

func TestViewsSecurityInvokerAndOrganizationMove(t *testing.T) {
	t.Parallel()
	e, customers, _ := queryFixture(t)
	own := e.ownerToken
	v := e.createView(own, map[string]any{"name": "berliners", "definition": map[string]any{"sql": "SELECT name FROM customers WHERE city = 'Berlin' ORDER BY name"}}).status(201)
	id := v.str("id")
	if n := e.countRows(`SELECT count(*) FROM pg_class WHERE relname = '` + id + `' AND relkind = 'v' AND 'security_invoker=true' = ANY (reloptions)`); n != 1 {
		t.Fatal("the view is not a security_invoker view")
	}
	// The reader's row-level security applies through the view: a soft-deleted record is gone
	// (with the orders that refer to it).
	e.do("DELETE", "/api/v1/datasets/"+customers+"/data/1?cascade=true", nil, bearer(own)).status(200)
	if p := e.do("GET", e.viewsPath()+"/"+id+"/preview", nil, bearer(own)).status(200); previewRows(p) != "Cid" {
		t.Fatalf("preview after a soft delete: %s", p.Body)
	}
	// A dry run of a schema change over a column a view reads is not blocked by the view, and
	// changes nothing.
	if r := e.do("POST", "/api/v1/datasets/"+customers+"/validate-schema", map[string]any{"changes": []any{map[string]any{"op": "drop_column", "column": "city"}}},
		bearer(own)).status(200); r.get("valid") != true {
		t.Fatalf("dry run: %s", r.Body)
	}
	if g := e.do("GET", e.viewsPath()+"/"+id, nil, bearer(own)).status(200); g.str("status") != "active" {
		t.Fatalf("view after a dry run: %s", g.Body)
	}
	// Handing the organization's projects to another organization moves the views with the
	// tables they read, readable under the receiving organization's role.
	old := e.orgID
	target := e.do("POST", "/api/v1/organizations", map[string]any{"name": "Target"}, bearer(own)).status(201).str("id")
	e.settleJobs()
	e.do("DELETE", "/api/v1/organizations/"+old, map[string]any{"confirmation": "default", "transfer_to": target}, bearer(own)).status(200)
	g := e.do("GET", e.viewsPath()+"/"+id, nil, bearer(own)).status(200)
	if g.str("status") != "active" || !strings.Contains(g.str("sql"), target) || strings.Contains(g.str("sql"), old) {
		t.Fatalf("moved view: %s", g.Body)
	}
	if r := e.execute(map[string]any{"query": "SELECT count(*) FROM berliners"}, own).status(200); rows(r) != "1" {
		t.Fatalf("query of a moved view: %s", r.Body)
	}
	// ... and it is still recreated over a later schema change.
	e.do("PUT", "/api/v1/datasets/"+customers+"/schema", map[string]any{"changes": []any{map[string]any{"op": "add_column",
		"column": map[string]any{"name": "zip", "type": "text"}}}}, bearer(own)).status(200)
	if p := e.do("GET", e.viewsPath()+"/"+id+"/preview", nil, bearer(own)).status(200); previewRows(p) != "Cid" {
		t.Fatalf("preview after the move and a change: %s", p.Body)
	}
	// Deleting the receiving organization removes its views.
	e.settleJobs()
	e.do("DELETE", "/api/v1/organizations/"+target, map[string]any{"confirmation": "target"}, bearer(own)).status(200)
	if n := e.countRows(`SELECT count(*) FROM platform.views WHERE id = '` + id + `'`); n != 0 {
		t.Fatal("the view outlived its organization")
	}
}

// TestViewsOverConnectedDatasets: a view reads a connected database's tables (through their
// views, as queries do); the join form names single tables only; deleting the dataset breaks
// the view.
func TestViewsOverConnectedDatasets(t *testing.T) {
	t.Parallel()
	host, port, password := externalPostgres(t)
	e := newEnv(t)
	own := e.ownerToken
	conn := map[string]any{"type": "postgresql", "host": host, "port": port, "database": "shop", "username": "postgres", "password": password, "ssl_mode": "disable"}
	id := e.do("POST", "/api/v1/projects/"+e.projectID+"/datasets/database", map[string]any{"name": "Shop", "connection": conn,
		"options": map[string]any{"exclude_tables": []string{"audit_*"}}}, bearer(own)).status(202).str("id")
	if d := e.waitDataset(own, id); d.str("status") != "active" {
		t.Fatalf("connected dataset: %s", d.Body)
	}
	v := e.createView(own, map[string]any{"name": "spenders", "definition": map[string]any{"sql": "SELECT c.name, sum(o.amount) AS spent FROM shop.customers c " +
		"JOIN shop.orders o ON o.customer_id = c.id GROUP BY c.name ORDER BY spent DESC"}}).status(201)
	if p := e.do("GET", e.viewsPath()+"/"+v.str("id")+"/preview", nil, bearer(own)).status(200); previewRows(p) != "Cid|100\nAnn|25" {
		t.Fatalf("preview over a connected dataset: %s", p.Body)
	}
	e.createView(own, map[string]any{"name": "j", "definition": map[string]any{"join": map[string]any{"base": "shop", "joins": []any{}}}}).
		apiError(400, "VALIDATION_ERROR", "body.definition.join.base", "not_supported")
	e.settleJobs()
	e.do("DELETE", "/api/v1/projects/"+e.projectID+"/datasets/"+id, nil, bearer(own)).status(200)
	if g := e.do("GET", e.viewsPath()+"/"+v.str("id"), nil, bearer(own)).status(200); g.str("status") != "broken" || g.str("error") != "dataset Shop was deleted" {
		t.Fatalf("view of a deleted connected dataset: %s", g.Body)
	}
}
