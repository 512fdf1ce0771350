package tests

import (
	"strings"
	"testing"
)

const rentalsCSV = "rental_ref,bike_serial,rented_at,status,price\n" +
	"R-01,B-7,2024-03-01T09:00:00Z,returned,12.50\n" +
	"R-02,B-3,2024-03-01T11:30:00Z,returned,8.00\n" +
	"R-03,B-7,2024-03-02T08:15:00Z,returned,15.00\n" +
	"R-04,B-9,2024-03-03T17:45:00Z,open,9.50\n" +
	"R-05,B-3,2024-03-05T10:00:00Z,returned,22.00\n" +
	"R-06,B-1,2024-03-08T12:00:00Z,returned,6.50\n" +
	"R-07,B-9,2024-03-09T14:20:00Z,open,11.00\n" +
	"R-08,B-1,2024-03-12T07:50:00Z,returned,18.00\n"

const orderLinesCSV = "line_id,order_no,product,unit_price,quantity\n" +
	"1,O-1,bell,4.50,2\n" +
	"2,O-1,lamp,12.00,1\n" +
	"3,O-2,bell,4.50,5\n" +
	"4,O-3,lock,19.90,1\n" +
	"5,O-3,lamp,12.00,3\n" +
	"6,O-4,bell,4.25,4\n"

// TestSchemaColumnRoles: every column of the schema has a role, inferred (a rental's price is
// an amount; a unit price beside a quantity a value) or set through alter_column, which the
// schema, the dataset's description, questions and dashboards follow; `inferred` goes back
// to inference, and a role that does not fit the column's type is refused.
func TestSchemaColumnRoles(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	own := bearer(e.ownerToken)
	rentals := e.uploadAndCreate(e.ownerToken, "Rentals", "rentals.csv", rentalsCSV)
	e.waitDataset(e.ownerToken, rentals)
	lines := e.uploadAndCreate(e.ownerToken, "Order Lines", "order_lines.csv", orderLinesCSV)
	e.waitDataset(e.ownerToken, lines)
	schema := func(id string) *resp {
		return e.do("GET", "/api/v1/projects/"+e.projectID+"/datasets/"+id+"/schema", nil, own).status(200)
	}
	role := func(s *resp, col, want, source string) {
		t.Helper()
		p := s.column(col)
		if s.str(p+"role") != want || s.str(p+"role_source") != source {
			t.Errorf("%s: role %q (%s), want %q (%s)", col, s.str(p+"role"), s.str(p+"role_source"), want, source)
		}
	}
	s := schema(rentals)
	role(s, "rental_ref", "identifier", "inferred")
	role(s, "rented_at", "time", "inferred")
	role(s, "status", "category", "inferred")
	role(s, "price", "amount", "inferred")
	s = schema(lines)
	role(s, "unit_price", "value", "inferred")
	role(s, "quantity", "count", "inferred")
	role(s, "order_no", "identifier", "inferred")

	ask := func(q string) *resp {
		return e.do("POST", "/api/v1/projects/"+e.projectID+"/queries/execute", map[string]any{"query": q}, own)
	}
	if a := ask("total price of rentals").status(200); !strings.Contains(a.str("generated_sql"), "sum(") || a.get("results.rows.0.0") != "102.50" && a.get("results.rows.0.0") != 102.5 {
		t.Errorf("total price of rentals: %s", a.Body)
	}
	ask("total unit price of order lines").apiError(400, "INVALID_QUERY")

	// Dashboards total the rental's price and average the unit price.
	d := e.do("POST", "/api/v1/datasets/"+rentals+"/dashboard/generate?use_ai=false", nil, own).status(201)
	if p := tileByID(d, "sum_price"); p == "" || tiles(d)[p]["title"] != "Total price" {
		t.Errorf("no Total price tile on the rentals dashboard: %s", d.Body)
	}
	d = e.do("POST", "/api/v1/datasets/"+lines+"/dashboard/generate?use_ai=false", nil, own).status(201)
	if tileByID(d, "avg_unit_price") == "" || tileByID(d, "sum_unit_price") != "" {
		t.Errorf("the unit price is not averaged on the order lines dashboard: %s", d.Body)
	}

	// Set by a person: the schema, the description and questions follow.
	path := "/api/v1/datasets/" + rentals + "/schema"
	e.do("PUT", path, map[string]any{"changes": []any{map[string]any{"op": "alter_column", "column": "price", "role": "value"}}}, own).status(200)
	s = schema(rentals)
	role(s, "price", "value", "set")
	if p := s.column("price"); s.str(p+"semantics.role") != "value" {
		t.Errorf("the semantics do not show the role set: %s", s.Body)
	}
	if b := string(e.do("GET", "/api/v1/datasets/"+rentals+"/openapi.json", nil, own).status(200).Body); !strings.Contains(b, `"x-role":"value"`) ||
		!strings.Contains(b, `"x-role":"identifier"`) {
		t.Errorf("the description does not show the columns' roles")
	}
	ask("total price of rentals").apiError(400, "INVALID_QUERY")

	// Back to inference.
	e.do("PUT", path, map[string]any{"changes": []any{map[string]any{"op": "alter_column", "column": "price", "role": "inferred"}}}, own).status(200)
	s = schema(rentals)
	role(s, "price", "amount", "inferred")
	if p := s.column("price"); s.get(p+"semantics") != nil {
		t.Errorf("semantics left after the role went back to inference: %s", s.Body)
	}
	if b := string(e.do("GET", "/api/v1/datasets/"+rentals+"/openapi.json", nil, own).status(200).Body); !strings.Contains(b, `"x-role":"amount"`) {
		t.Errorf("the description does not show the inferred role again")
	}

	// Roles that do not fit the column, and ones that do not exist.
	e.do("PUT", path, map[string]any{"changes": []any{map[string]any{"op": "alter_column", "column": "status", "role": "amount"}}}, own).
		apiError(400, "VALIDATION_ERROR", "body.changes[0].role", "not_applicable")
	e.do("PUT", path, map[string]any{"changes": []any{map[string]any{"op": "alter_column", "column": "price", "role": "money"}}}, own).
		apiError(400, "VALIDATION_ERROR", "body.changes.0.role", "enum")
}
