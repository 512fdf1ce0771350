package queries

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"dataplatform/store/datasets"
	"dataplatform/store/usersql"
)

func TestPrepare(t *testing.T) {
	file := func(id, name string) Source {
		return Source{ID: id, Name: name, Tables: []datasets.TableDef{{Name: id, Schema: "org_a", Relation: id}}}
	}
	shop := Source{ID: "ds_shop", Name: "Shop DB", Tables: []datasets.TableDef{
		{Name: "customers", Schema: "ds_shop", Relation: "customers", Foreign: true},
		{Name: "orders", Schema: "ds_shop", Relation: "orders", Foreign: true},
	}}
	crm := Source{ID: "ds_crm", Name: "CRM", Tables: []datasets.TableDef{
		{Name: "customers", Schema: "ds_crm", Relation: "customers", Foreign: true},
		{Name: "notes", Schema: "ds_crm", Relation: "notes", Foreign: true},
	}}
	sources := []Source{file("ds_1", "Sales Data"), shop, crm}
	for _, tc := range []struct{ in, want string }{
		{`SELECT * FROM sales_data`, `SELECT * FROM "org_a"."ds_1" AS "sales_data"`},
		{`SELECT * FROM "Sales Data" s`, `SELECT * FROM "org_a"."ds_1" s`},
		{`SELECT * FROM DS_1`, `SELECT * FROM "org_a"."ds_1" AS "ds_1"`},
		{`SELECT * FROM shop_db.orders o JOIN sales_data ON true`, `SELECT * FROM "ds_shop"."orders" o JOIN "org_a"."ds_1" AS "sales_data" ON true`},
		{`SELECT * FROM orders`, `SELECT * FROM "ds_shop"."orders" AS "orders"`}, // the only table of that name
		{`SELECT * FROM crm.customers`, `SELECT * FROM "ds_crm"."customers" AS "customers"`},
		{`WITH orders AS (SELECT 1) SELECT * FROM orders`, `WITH orders AS (SELECT 1) SELECT * FROM orders`},
		{`SELECT * FROM sales_data WHERE x = {{v}} AND y = '{{v}}'`, `SELECT * FROM "org_a"."ds_1" AS "sales_data" WHERE x = $1 AND y = '{{v}}'`},
	} {
		p, err := Prepare(tc.in, sources)
		if err != nil {
			t.Fatalf("%s: %v", tc.in, err)
		}
		if p.SQL != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", tc.in, p.SQL, tc.want)
		}
	}
	// customers is in two connected datasets: it must be qualified.
	_, err := Prepare(`SELECT * FROM customers`, sources)
	var ue *UnknownError
	if !errors.As(err, &ue) || strings.Join(ue.Available, ",") != "crm.customers,crm.notes,sales_data,shop_db.customers,shop_db.orders" {
		t.Fatalf("ambiguous: %v %+v", err, ue)
	}
	p, err := Prepare(`SELECT count(*) FROM shop_db.orders o JOIN shop_db.customers c ON c.id = o.cid JOIN shop_db.orders o2 ON true`, sources)
	if err != nil || len(p.Used) != 1 || strings.Join(p.Used[0].Tables, ",") != "customers,orders" {
		t.Fatalf("used: %+v %v", p, err)
	}
	if _, err := Prepare(`SELECT * FROM sales_data; DROP TABLE x`, sources); !errors.As(err, new(*usersql.ForbiddenError)) {
		t.Fatalf("two statements: %v", err)
	}
}

func TestReadPlan(t *testing.T) {
	plan := `[{"Plan": {"Node Type": "Hash Join", "Plan Rows": 50000, "Total Cost": 9000.5, "Plans": [
		{"Node Type": "Seq Scan", "Relation Name": "ds_big", "Filter": "((city = 'name'::text) AND (amount > '5'::numeric))", "Plan Rows": 40000, "Total Cost": 8000},
		{"Node Type": "Hash", "Plan Rows": 100, "Total Cost": 10, "Plans": [
			{"Node Type": "Index Scan", "Relation Name": "ds_small", "Index Name": "ds_small_pkey", "Index Cond": "(id = 3)", "Plan Rows": 100, "Total Cost": 9}]}]}}]`
	facts := map[string]TableFacts{
		"ds_big":   {Label: "orders", Rows: 1_000_000, Columns: []string{"id", "city", "amount", "name"}, Indexed: map[string]bool{"amount": true}},
		"ds_small": {Label: "customers", Rows: 100, Columns: []string{"id"}},
	}
	root, a, err := ReadPlan(json.RawMessage(plan), facts)
	if err != nil {
		t.Fatal(err)
	}
	if root.Type != "Hash Join" || root.Plans[0].Table != "orders" || root.Plans[1].Plans[0].Index != "ds_small_pkey" || root.Plans[1].Plans[0].Filter != "(id = 3)" {
		t.Fatalf("plan: %+v", root)
	}
	want := Advice{
		Optimizations: []string{"Hash Join (no row-by-row lookups)", "Index Scan reads customers through the index ds_small_pkey"},
		Warnings:      []string{"reads all of orders (~1000000 rows) to keep ~40000 that match ((city = 'name'::text) AND (amount > '5'::numeric))"},
		// city only: amount has an index, and 'name' is a string, not the name column.
		Suggestions: []string{"an index on orders.city would let the filter skip the rest of the table", "the query returns ~50000 rows: add a LIMIT, or aggregate"},
	}
	if !reflect.DeepEqual(a, want) {
		t.Fatalf("advice:\n got %q\nwant %q", a, want)
	}
}

// TestPrepareReachesOnlySources: every relation the SQL names, in any position and as a row
// type too, is one of the sources or the query is refused, with the same error whether the
// relation exists elsewhere or not at all.
func TestPrepareReachesOnlySources(t *testing.T) {
	file := func(id, name string) Source {
		return Source{ID: id, Name: name, Tables: []datasets.TableDef{{Name: id, Schema: "org_a", Relation: id}}}
	}
	shop := Source{ID: "ds_shop", Name: "Shop DB", Tables: []datasets.TableDef{
		{Name: "orders", Schema: "fdw_ds_shop", Relation: "orders", Foreign: true},
	}}
	view := Source{ID: "vw_1", Name: "Big orders", Tables: []datasets.TableDef{{Name: "vw_1", Schema: "org_a", Relation: "vw_1", View: true}}}
	sources := []Source{file("ds_1", "Sales Data"), file("ds_2", "Date"), shop, view}
	for _, tc := range []struct{ in, want string }{
		// A relation's real name stays as written (its columns may be qualified by it).
		{`SELECT "org_a"."ds_1".amount FROM "org_a"."ds_1"`, `SELECT "org_a"."ds_1".amount FROM "org_a"."ds_1"`},
		{`SELECT * FROM org_a.ds_1 s`, `SELECT * FROM org_a.ds_1 s`},
		{`SELECT * FROM "ds_shop"."orders"`, `SELECT * FROM "ds_shop"."orders"`},
		{`SELECT * FROM vw_1`, `SELECT * FROM "org_a"."vw_1" AS "vw_1"`},
		// Row types of sources: mapped like the tables, without an alias.
		{`SELECT json_populate_record(NULL::ds_1, '{}')`, `SELECT json_populate_record(NULL::"org_a"."ds_1", '{}')`},
		{`SELECT NULL::sales_data[]`, `SELECT NULL::"org_a"."ds_1"[]`},
		{`SELECT CAST(NULL AS "org_a"."ds_1")`, `SELECT CAST(NULL AS "org_a"."ds_1")`},
		// A built-in type stays built-in, even when a dataset has its name.
		{`SELECT now()::date, NULL::ds_2`, `SELECT now()::date, NULL::"org_a"."ds_2"`},
	} {
		p, err := Prepare(tc.in, sources)
		if err != nil {
			t.Fatalf("%s: %v", tc.in, err)
		}
		if p.SQL != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", tc.in, p.SQL, tc.want)
		}
	}
	// ds_secret exists in another project; ds_none nowhere: the same refusal, naming what
	// was written and where.
	for _, q := range []string{
		`SELECT secret FROM %s`,
		`SELECT secret FROM org_a.%s`,
		`SELECT secret FROM "org_a"."%s"`,
		`TABLE %s`,
		`WITH s AS (SELECT secret FROM %s) SELECT * FROM s`,
		`SELECT x.secret FROM ds_1 m, LATERAL (SELECT secret FROM %s LIMIT 1) x`,
		`SELECT * FROM ds_1 WHERE EXISTS (SELECT 1 FROM %s WHERE secret = 'x')`,
		`SELECT * FROM (WITH %[1]s AS (SELECT 1) SELECT * FROM %[1]s) a, %[1]s b`,
		`SELECT row_to_json(json_populate_record(NULL::%s, '{}'))::text`,
		`SELECT CAST(NULL AS org_a.%s)`,
		`SELECT NULL::%s[]`,
		`SELECT NULL::_%s`,
		`SELECT * FROM json_to_record('{}') AS t(r %s)`,
	} {
		var errs []string
		for _, rel := range []string{"ds_secret", "ds_nonexx"} {
			sql := fmt.Sprintf(q, rel)
			_, err := Prepare(sql, sources)
			var ue *UnknownError
			if !errors.As(err, &ue) || !strings.Contains(ue.Name, rel) {
				t.Errorf("%s: %v, want unknown", sql, err)
				continue
			}
			errs = append(errs, strings.ReplaceAll(err.Error(), rel, "X"))
		}
		if len(errs) == 2 && errs[0] != errs[1] {
			t.Errorf("%s: the refusal tells the two apart: %q / %q", q, errs[0], errs[1])
		}
	}
	// Map is the mapping alone: $n parameters (bound by the caller) and braces are left as they are.
	p, err := Map(`SELECT * FROM ds_1 WHERE a = $1 AND b = '{{x}}'`, sources)
	if err != nil || p.SQL != `SELECT * FROM "org_a"."ds_1" AS "ds_1" WHERE a = $1 AND b = '{{x}}'` || len(p.Params) != 0 || len(p.Used) != 1 {
		t.Fatalf("map: %+v %v", p, err)
	}
}
