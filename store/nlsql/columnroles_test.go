package nlsql

import (
	"errors"
	"strings"
	"testing"
	"time"

	"dataplatform/store/ingest"
)

// rentalsAndLines are a table whose price is what each rental earned (no quantity beside it)
// and order lines with a price per unit beside a quantity, and items with a bare price beside
// a quantity.
func rentalsAndLines() Schema {
	return Schema{Tables: []Table{
		{Ref: "rentals", Dataset: "Rentals", Columns: []Column{{Name: "rental_ref", Type: ingest.Text}, {Name: "bike_serial", Type: ingest.Text},
			{Name: "rented_at", Type: ingest.Timestamptz}, {Name: "status", Type: ingest.Text, Values: []string{"returned", "open"}},
			{Name: "price", Type: ingest.Numeric}}},
		{Ref: "order_lines", Dataset: "Order Lines", Columns: []Column{{Name: "line_no", Type: ingest.Integer}, {Name: "product", Type: ingest.Text, Values: []string{"bell", "lamp"}},
			{Name: "unit_price", Type: ingest.Numeric}, {Name: "quantity", Type: ingest.Integer}}},
	}}
}

func itemsWithQuantity() Schema {
	return Schema{Tables: []Table{{Ref: "items", Dataset: "Items", Columns: []Column{{Name: "item_id", Type: ingest.Integer},
		{Name: "category", Type: ingest.Text, Values: []string{"tools", "toys"}}, {Name: "price", Type: ingest.Numeric}, {Name: "quantity", Type: ingest.Integer}}}}}
}

// TestPriceRoles: a rental's price adds up (its role is an amount), so its total is answered;
// a unit price beside a quantity, or a price beside a quantity, is a value per unit and its
// total is refused. A role a person set, and a default aggregation, win over the inferred one.
func TestPriceRoles(t *testing.T) {
	now := time.Date(2024, 6, 15, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		q       string
		s       Schema
		sql     string
		refused string
	}{
		{q: "total price of rentals", s: rentalsAndLines(), sql: `SELECT sum("rentals"."price") AS "sum_price" FROM rentals`},
		{q: "what is the total price", s: rentalsAndLines(), sql: `SELECT sum("rentals"."price") AS "sum_price" FROM rentals`},
		{q: "total price of rentals by status", s: rentalsAndLines(),
			sql: `SELECT "rentals"."status" AS "status", sum("rentals"."price") AS "sum_price" FROM rentals GROUP BY 1 ORDER BY 1`},
		{q: "total unit price", s: rentalsAndLines(), refused: "a value per unit or a rate"},
		{q: "total unit price of order lines", s: rentalsAndLines(), refused: "a value per unit or a rate"},
		{q: "total price of items", s: itemsWithQuantity(), refused: "a value per unit or a rate"},
		{q: "average price of items", s: itemsWithQuantity(), sql: `SELECT avg("items"."price") AS "avg_price" FROM items`},
	} {
		a, err := Translate(tc.q, tc.s, now)
		var nu *NotUnderstood
		switch {
		case tc.refused != "":
			if !errors.As(err, &nu) || !strings.Contains(nu.Reason, tc.refused) {
				t.Errorf("%q: want a refusal with %q, got %+v %v", tc.q, tc.refused, a, err)
			}
		case err != nil:
			t.Errorf("%q: %v", tc.q, err)
		case a.SQL != tc.sql:
			t.Errorf("%q:\n got %s\nwant %s", tc.q, a.SQL, tc.sql)
		}
	}

	// set by a person: the rental's price as a value, the unit price as an amount
	s := rentalsAndLines()
	s.Tables[0].Columns[4].Role = ingest.RoleValue
	s.Tables[1].Columns[2].Role = ingest.RoleAmount
	var nu *NotUnderstood
	if _, err := Translate("total price of rentals", s, now); !errors.As(err, &nu) {
		t.Errorf("a price set as a value is totalled: %v", err)
	}
	if a, err := Translate("total unit price", s, now); err != nil || a.SQL != `SELECT sum("order_lines"."unit_price") AS "sum_unit_price" FROM order_lines` {
		t.Errorf("a unit price set as an amount: got %+v %v", a, err)
	}
	// the owner's default aggregation wins over the role
	s = itemsWithQuantity()
	s.Tables[0].Columns[2].DefaultAgg = "sum"
	if a, err := Translate("total price of items", s, now); err != nil || a.SQL != `SELECT sum("items"."price") AS "sum_price" FROM items` {
		t.Errorf("a price whose default aggregation is sum: got %+v %v", a, err)
	}
}
