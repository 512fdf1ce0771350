package views

import (
	"errors"
	"strings"
	"testing"

	"dataplatform/store/datasets"
	"dataplatform/store/ingest"
	"dataplatform/store/queries"
)

func source(id, name string, cols ...string) queries.Source {
	t := datasets.TableDef{Name: id, Schema: "org_x", Relation: id}
	for _, c := range cols {
		t.Columns = append(t.Columns, ingest.Column{Name: c, Type: ingest.Text})
	}
	return queries.Source{ID: id, Name: name, Tables: []datasets.TableDef{t}}
}

func TestCompileJoin(t *testing.T) {
	sources := []queries.Source{source("ds_o", "Sales Orders", "order_no", "customer_id", "name"), source("ds_c", "customers", "name", "city"),
		source("ds_v1.2", "v1.2 data", "x")}
	on := []JoinOn{{Left: "sales_orders.customer_id", Right: "customers.id"}}
	// Every column by default; names several datasets have are prefixed.
	sql, err := compileJoin(&Join{Base: "Sales Orders", Joins: []JoinStep{{Dataset: "ds_c", Type: "left", On: on}}}, sources)
	if err != nil {
		t.Fatal(err)
	}
	want := `SELECT "sales_orders"."order_no" AS "order_no", "sales_orders"."customer_id" AS "customer_id", "sales_orders"."name" AS "sales_orders_name", ` +
		`"customers"."name" AS "customers_name", "customers"."city" AS "city" FROM ds_o AS "sales_orders" LEFT JOIN ds_c AS "customers" ON ` +
		`"sales_orders"."customer_id" = "customers"."id"`
	if sql != want {
		t.Fatalf("got  %s\nwant %s", sql, want)
	}
	// Picked columns; a dataset name with a dot is matched whole.
	sql, err = compileJoin(&Join{Base: "v1.2 data", Joins: []JoinStep{{Dataset: "customers", Type: "inner", On: []JoinOn{{Left: "v1.2 data.x", Right: "customers.city"}}}},
		Columns: []JoinColumn{{Source: "v1.2 data.x", As: "ex"}, {Source: "CUSTOMERS.city"}}}, sources)
	if err != nil || !strings.HasPrefix(sql, `SELECT "v1_2_data"."x" AS "ex", "customers"."city" AS "city" FROM ds_v1.2 AS "v1_2_data" JOIN`) {
		t.Fatalf("picked: %s %v", sql, err)
	}
	for _, c := range []struct {
		j           Join
		field, code string
	}{
		{Join{Base: "nope"}, "join.base", "unknown_dataset"},
		{Join{Base: "customers", Joins: []JoinStep{{Dataset: "customers", Type: "inner", On: on}}}, "join.joins[0].dataset", "duplicate"},
		{Join{Base: "customers", Joins: []JoinStep{{Dataset: "ds_o", Type: "outer", On: on}}}, "join.joins[0].type", "enum"},
		{Join{Base: "customers", Joins: []JoinStep{{Dataset: "ds_o", Type: "inner"}}}, "join.joins[0].on", "required"},
		{Join{Base: "customers", Joins: []JoinStep{{Dataset: "ds_o", Type: "inner", On: []JoinOn{{Left: "customers.zip", Right: "sales_orders.name"}}}}}, "join.joins[0].on[0].left", "not_found"},
		{Join{Base: "customers", Joins: []JoinStep{{Dataset: "ds_o", Type: "inner", On: []JoinOn{{Left: "other.zip", Right: "sales_orders.name"}}}}}, "join.joins[0].on[0].left", "not_found"},
		{Join{Base: "customers", Columns: []JoinColumn{{Source: "customers.city"}, {Source: "customers.name", As: "city"}}}, "join.columns[1]", "duplicate"},
	} {
		_, err := compileJoin(&c.j, sources)
		var de *DefinitionError
		if !errors.As(err, &de) || de.Field != c.field || de.Code != c.code {
			t.Errorf("%+v: %v", c.j, err)
		}
	}
}
