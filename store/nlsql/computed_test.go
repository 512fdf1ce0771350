package nlsql

import (
	"strings"
	"testing"
	"time"

	"dataplatform/store/ingest"
)

// workOrdersSchema is a shape none of the evaluation sets has: work orders with a unit cost
// and a quantity (no amount), a status one of whose values is also a date column's participle
// (closed, closed_on), and the sites they are for.
func workOrdersSchema() Schema {
	return Schema{Tables: []Table{
		{Ref: "sites", Dataset: "Sites", Columns: []Column{{Name: "site_code", Type: ingest.Text}, {Name: "site_name", Type: ingest.Text},
			{Name: "region", Type: ingest.Text, Values: []string{"North", "South"}}}},
		{Ref: "work_orders", Dataset: "Work Orders", Columns: []Column{{Name: "wo_number", Type: ingest.Text}, {Name: "site_code", Type: ingest.Text},
			{Name: "opened_on", Type: ingest.Date}, {Name: "closed_on", Type: ingest.Date}, {Name: "approved_on", Type: ingest.Date}, {Name: "status", Type: ingest.Text, Values: []string{"open", "closed", "cancelled"}},
			{Name: "unit_cost", Type: ingest.Numeric}, {Name: "quantity", Type: ingest.Integer}, {Name: "weekly_slot", Type: ingest.Integer}}},
	}, Relations: []Relation{{From: "work_orders", FromColumn: "site_code", To: "sites", ToColumn: "site_code"}}}
}

// TestComputedValuesAndTwoReadings pins, on a shape of its own, the classes the held-out
// domains found: a value computed from a unit cost and a quantity (said to be computed), the
// value of another table's row (totalled per row, then averaged), a participle that is a
// status value too (refused with both readings, each answered), a comparison with the
// average, a column whose name holds a time unit, and the noun of a date's participle
// ("approval date" of approved_on).
func TestComputedValuesAndTwoReadings(t *testing.T) {
	now := time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct{ q, sql, warning, refused string }{
		{q: "total value of work orders in 2025", warning: "unit cost × quantity",
			sql: `SELECT sum(("work_orders"."unit_cost" * "work_orders"."quantity")) AS "sum_value" FROM work_orders WHERE "work_orders"."opened_on" >= {{p1}} AND "work_orders"."opened_on" < {{p2}}`},
		{q: "average site value", warning: "unit cost × quantity",
			sql: `SELECT avg(t."sum_value") AS "avg_site_value" FROM (SELECT "sites"."site_code" AS "site_code", "sites"."site_name" AS "site_name", sum(("work_orders"."unit_cost" * "work_orders"."quantity")) AS "sum_value" FROM work_orders JOIN sites ON "sites"."site_code" = "work_orders"."site_code" GROUP BY 1, 2 ORDER BY 1, 2) t`},
		{q: "average value per site", warning: "unit cost × quantity",
			sql: `SELECT avg(t."sum_value") AS "avg_site_value" FROM (SELECT "sites"."site_code" AS "site_code", "sites"."site_name" AS "site_name", sum(("work_orders"."unit_cost" * "work_orders"."quantity")) AS "sum_value" FROM work_orders JOIN sites ON "sites"."site_code" = "work_orders"."site_code" GROUP BY 1, 2 ORDER BY 1, 2) t`},
		{q: "how many work orders were closed", refused: `"closed" reads two ways`},
		{q: "work orders with a unit cost above the average",
			sql: `SELECT "work_orders".* FROM work_orders WHERE "work_orders"."unit_cost" > (SELECT avg("unit_cost") FROM work_orders) LIMIT 100`},
		{q: "average weekly slot", sql: `SELECT avg("work_orders"."weekly_slot") AS "avg_weekly_slot" FROM work_orders`},
		{q: "sum of unit cost", refused: "a value per unit"},
		{q: "how many work orders have no approval date", sql: `SELECT count(*) AS "count" FROM work_orders WHERE "work_orders"."approved_on" IS NULL`},
	} {
		a, err := Translate(tc.q, workOrdersSchema(), now)
		if tc.refused != "" {
			nu, ok := err.(*NotUnderstood)
			if !ok || !strings.Contains(nu.Reason, tc.refused) || len(nu.Suggestions) == 0 {
				t.Errorf("%q: want a refusal with %q, got %v %v", tc.q, tc.refused, a, err)
				continue
			}
			// the first suggestion is a rephrasing the engine answers
			if _, err := Translate(nu.Suggestions[0], workOrdersSchema(), now); err != nil {
				t.Errorf("%q: its suggestion %q is refused: %v", tc.q, nu.Suggestions[0], err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", tc.q, err)
			continue
		}
		if a.SQL != tc.sql || !strings.Contains(strings.Join(a.Warnings, "; "), tc.warning) {
			t.Errorf("%q:\n got %s (%v)\nwant %s (warning %q)", tc.q, a.SQL, a.Warnings, tc.sql, tc.warning)
		}
	}
}

// TestComputedValueYieldsToAnAmount: order lines with a unit price and a quantity get no
// computed value when the orders they belong to have an amount: "average order value" is
// that amount.
func TestComputedValueYieldsToAnAmount(t *testing.T) {
	s := Schema{Tables: []Table{
		{Ref: "orders", Dataset: "Orders", Columns: []Column{{Name: "order_id", Type: ingest.Integer}, {Name: "amount", Type: ingest.Numeric}}},
		{Ref: "order_lines", Dataset: "Order Lines", Columns: []Column{{Name: "line_id", Type: ingest.Integer}, {Name: "order_id", Type: ingest.Integer},
			{Name: "unit_price", Type: ingest.Numeric}, {Name: "quantity", Type: ingest.Integer}}},
	}, Relations: []Relation{{From: "order_lines", FromColumn: "order_id", To: "orders", ToColumn: "order_id"}}}
	a, err := Translate("average order value", s, time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC))
	if err != nil || a.SQL != `SELECT avg("orders"."amount") AS "avg_amount" FROM orders` {
		t.Errorf("got %+v %v", a, err)
	}
}
