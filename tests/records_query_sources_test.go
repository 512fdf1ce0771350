package tests

import (
	"fmt"
	"strings"
	"testing"
)

// TestRecordQueryReachesOnlyCallersSources: the audit's finding that a dataset's record SQL
// read every dataset and saved view of the organization. An analyst kept out of a private
// project (its API answers 404), or a user API key with only datasets:read of a member kept
// out of it, reads neither its datasets nor its views through another dataset's
// /data/query, by any spelling or position, nor their columns through a row type; the
// refusal is the one a relation that does not exist gets. The record SQL still reads its own
// table and joins what the caller may read; the owner, who reaches the private project,
// joins it.
func TestRecordQueryReachesOnlyCallersSources(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	own := bearer(e.ownerToken)
	pub := e.projectID
	mine := e.uploadAndCreate(e.ownerToken, "Mine", "m.csv", "a,code\n1,x\n2,y\n")
	e.waitDataset(e.ownerToken, mine)
	ord := e.uploadAndCreate(e.ownerToken, "Orders", "o.csv", "order_no,a,amount\n10,1,5\n11,2,7\n")
	e.waitDataset(e.ownerToken, ord)
	pubView := e.do("POST", "/api/v1/projects/"+pub+"/views", map[string]any{"name": "big_orders",
		"definition": map[string]any{"sql": "SELECT a, amount FROM orders WHERE amount > 6"}}, own).status(201).str("id")

	secret := e.do("POST", "/api/v1/organizations/"+e.orgID+"/projects", map[string]any{"name": "Secret", "visibility": "private"}, own).status(201).str("id")
	e.projectID = secret
	priv := e.uploadAndCreate(e.ownerToken, "People", "p.csv", "a,pin_code\n1,hunter2\n")
	e.waitDataset(e.ownerToken, priv)
	privView := e.do("POST", "/api/v1/projects/"+secret+"/views", map[string]any{"name": "pins",
		"definition": map[string]any{"sql": "SELECT a, pin_code FROM people"}}, own).status(201).str("id")
	e.projectID = pub

	_, anaTok := e.member(e.orgID, "analyst")
	e.do("GET", "/api/v1/projects/"+secret, nil, bearer(anaTok)).apiError(404, "NOT_FOUND")
	// A developer (who may mint keys), kept out of the project too, with a key that only reads.
	_, devTok := e.member(e.orgID, "developer")
	e.do("GET", "/api/v1/projects/"+secret, nil, bearer(devTok)).apiError(404, "NOT_FOUND")
	key := e.do("POST", "/api/v1/api-keys", map[string]any{"name": "reader", "permissions": []string{"datasets:read"}}, bearer(devTok)).status(201).str("key")
	query := func(sql string, h header) *resp {
		return e.do("POST", "/api/v1/datasets/"+mine+"/data/query", map[string]any{"sql": sql}, h)
	}

	// %[1]s is the relation, %[2]s the organization's schema.
	probes := []string{
		`SELECT pin_code FROM %[1]s`,
		`SELECT pin_code FROM "%[2]s"."%[1]s"`,
		`SELECT pin_code FROM %[2]s.%[1]s`,
		`TABLE %[1]s`,
		`WITH s AS (SELECT pin_code FROM %[1]s) SELECT * FROM s`,
		`SELECT x.pin_code FROM ${table} m, LATERAL (SELECT pin_code FROM %[1]s LIMIT 1) x`,
		`SELECT a FROM ${table} WHERE EXISTS (SELECT 1 FROM %[1]s WHERE pin_code = 'hunter2')`,
		`SELECT a FROM ${table} WHERE a IN (SELECT a FROM %[1]s)`,
		`SELECT (SELECT max(pin_code) FROM %[1]s) AS p`,
		`SELECT * FROM (WITH %[1]s AS (SELECT 1) SELECT * FROM %[1]s) w, %[1]s p`,
		`SELECT row_to_json(json_populate_record(NULL::%[1]s, '{}'))::text AS cols`,
		`SELECT CAST(NULL AS "%[2]s"."%[1]s")::text AS cols`,
	}
	// refused checks that sql (with the relation rel) is refused as if rel did not exist.
	refused := func(who string, h header, probe, rel, nothing string, run func(string, header) *resp) {
		t.Helper()
		got := run(fmt.Sprintf(probe, rel, e.orgID), h)
		if got.Code == 200 || strings.Contains(string(got.Body), "hunter2") || strings.Contains(string(got.Body), "pin_code") && !strings.Contains(probe, "pin_code") {
			t.Fatalf("%s read %s with %s: %d %s", who, rel, probe, got.Code, got.Body)
		}
		got.apiError(400, "INVALID_QUERY")
		none := run(fmt.Sprintf(probe, nothing, e.orgID), h).apiError(400, "INVALID_QUERY")
		a := strings.ReplaceAll(fmt.Sprint(got.get("error.message"), got.get("error.details")), rel, "X")
		b := strings.ReplaceAll(fmt.Sprint(none.get("error.message"), none.get("error.details")), nothing, "X")
		if a != b {
			t.Fatalf("%s, %s: the answer tells a private relation from a missing one:\n%s\n%s", who, probe, a, b)
		}
	}
	for _, c := range []struct {
		who string
		h   header
	}{{"analyst", bearer(anaTok)}, {"a datasets:read key", apiKey(key)}} {
		for _, probe := range probes {
			refused(c.who, c.h, probe, priv, "ds_"+strings.Repeat("z", 20), query)
			refused(c.who, c.h, probe, privView, "vw_"+strings.Repeat("z", 20), query)
		}
		// What the caller may read still answers: its own table (by ${table}, qualified
		// columns, its row type), a dataset and a saved view of a project it reaches.
		for sql, want := range map[string]string{
			`SELECT count(*) AS n FROM ${table}`:                                                                                                        "2",
			`SELECT ${table}.code FROM ${table} ORDER BY 1`:                                                                                             "x",
			`SELECT row_to_json(json_populate_record(NULL::${table}, '{}'))::text AS cols`:                                                              `"code":null`,
			fmt.Sprintf(`SELECT m.code, o.amount FROM ${table} m JOIN %s o ON o.a = m.a ORDER BY 2`, ord):                                               "x",
			fmt.Sprintf(`SELECT o.amount FROM "%s"."%s" o ORDER BY 1`, e.orgID, ord):                                                                    "5",
			fmt.Sprintf(`WITH o AS (SELECT * FROM %s) SELECT m.code FROM ${table} m, LATERAL (SELECT amount FROM o WHERE o.a = m.a) l ORDER BY 1`, ord): "x",
			fmt.Sprintf(`SELECT amount FROM %s`, pubView):                                                                                               "7",
		} {
			r := query(sql, c.h).status(200)
			if got := fmt.Sprint(r.get("data.0")); !strings.Contains(got, want) {
				t.Fatalf("%s: %s: %s", c.who, sql, r.Body)
			}
		}
	}
	// The owner reaches the private project: the same join answers.
	if r := query(fmt.Sprintf(`SELECT m.code, p.pin_code FROM ${table} m JOIN %s p USING (a)`, priv), own).status(200); r.str("data.0.pin_code") != "hunter2" {
		t.Fatalf("owner's join with the private project: %s", r.Body)
	}
	if r := query(fmt.Sprintf(`SELECT pin_code FROM %s`, privView), own).status(200); r.str("data.0.pin_code") != "hunter2" {
		t.Fatalf("owner's read of the private view: %s", r.Body)
	}
	// A broken saved view the caller may read answers VIEW_BROKEN, as in project queries.
	dep := e.do("POST", "/api/v1/projects/"+pub+"/views", map[string]any{"name": "bigger",
		"definition": map[string]any{"sql": "SELECT amount FROM big_orders"}}, own).status(201).str("id")
	e.do("DELETE", "/api/v1/projects/"+pub+"/views/"+pubView, nil, own).status(204)
	if r := query(`SELECT * FROM `+dep, bearer(anaTok)).apiError(409, "VIEW_BROKEN"); r.str("error.details.view_id") != dep {
		t.Fatalf("broken view: %s", r.Body)
	}
}

// TestProjectQueryRowTypeOfOtherProject: project SQL named a private project's dataset as a
// type (json_populate_record(NULL::ds_...)) and answered its column names. A type naming a
// relation outside the project's sources is refused as an unknown dataset is; the project's
// own datasets' row types still answer.
func TestProjectQueryRowTypeOfOtherProject(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	own := bearer(e.ownerToken)
	pub := e.projectID
	ord := e.uploadAndCreate(e.ownerToken, "Orders", "o.csv", "order_no,a,amount\n10,1,5\n")
	e.waitDataset(e.ownerToken, ord)
	secret := e.do("POST", "/api/v1/organizations/"+e.orgID+"/projects", map[string]any{"name": "Secret", "visibility": "private"}, own).status(201).str("id")
	e.projectID = secret
	priv := e.uploadAndCreate(e.ownerToken, "People", "p.csv", "a,pin_code\n1,hunter2\n")
	e.waitDataset(e.ownerToken, priv)
	e.projectID = pub
	_, anaTok := e.member(e.orgID, "analyst")
	run := func(sql string, h header) *resp {
		return e.do("POST", "/api/v1/projects/"+pub+"/queries/execute", map[string]any{"type": "sql", "query": sql}, h)
	}
	nothing := "ds_" + strings.Repeat("z", 20)
	for _, probe := range []string{
		`SELECT row_to_json(json_populate_record(NULL::%[1]s, '{}'))::text AS cols`,
		`SELECT row_to_json(CAST(NULL AS %[1]s))::text AS cols`,
		`SELECT array_to_json(NULL::%[1]s[])::text AS cols`,
		`SELECT row_to_json(json_populate_record(NULL::"%[2]s"."%[1]s", '{}'))::text AS cols`,
		`SELECT array_to_json('{}'::_%[1]s)::text AS cols`,
		`SELECT row_to_json(t.r)::text AS cols FROM json_to_record('{"r": null}') AS t(r %[1]s)`,
		`SELECT pin_code FROM %[1]s`,
		// A WITH query's name hides a relation only in its own statement.
		`SELECT * FROM (WITH %[1]s AS (SELECT 1 AS a) SELECT * FROM %[1]s) w, %[1]s p`,
	} {
		got := run(fmt.Sprintf(probe, priv, e.orgID), bearer(anaTok))
		if got.Code == 200 || strings.Contains(string(got.Body), "hunter2") || strings.Contains(string(got.Body), "pin_code") && !strings.Contains(probe, "pin_code") {
			t.Fatalf("%s: %d %s", probe, got.Code, got.Body)
		}
		got.apiError(400, "INVALID_QUERY")
		none := run(fmt.Sprintf(probe, nothing, e.orgID), bearer(anaTok)).apiError(400, "INVALID_QUERY")
		a := strings.ReplaceAll(fmt.Sprint(got.get("error.message"), got.get("error.details")), priv, "X")
		b := strings.ReplaceAll(fmt.Sprint(none.get("error.message"), none.get("error.details")), nothing, "X")
		if a != b {
			t.Fatalf("%s: the answer tells a private dataset from a missing one:\n%s\n%s", probe, a, b)
		}
	}
	// The project's own dataset: by id and by name, as a row type.
	for _, sql := range []string{
		fmt.Sprintf(`SELECT row_to_json(json_populate_record(NULL::%s, '{}'))::text AS cols`, ord),
		`SELECT row_to_json(json_populate_record(NULL::orders, '{}'))::text AS cols`,
	} {
		if r := run(sql, bearer(anaTok)).status(200); !strings.Contains(rows(r), `"amount":null`) {
			t.Fatalf("%s: %s", sql, r.Body)
		}
	}
}
