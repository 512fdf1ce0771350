package queries

import (
	"encoding/json"
	"errors"
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
