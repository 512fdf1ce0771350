package nlsql

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// TestRelatedRowsReadings pins the readings that were refused or, worse, answered without a
// word: a verb that is the related rows' name, a yes/no column asked as its WordNet opposite,
// entities ranked by an aggregate, two aggregates, the value of a row made of computed lines.
func TestRelatedRowsReadings(t *testing.T) {
	now := time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		s       Schema
		q       string
		sql     string // a part of the SQL
		refused string // a part of the reason
	}{
		{s: evalShop(), q: "customers who ordered", sql: `WHERE EXISTS (SELECT 1 FROM orders WHERE "orders"."customer_id" = "customers"."id")`},
		{s: evalShop(), q: "customers who never ordered", sql: `WHERE NOT EXISTS (SELECT 1 FROM orders`},
		{s: evalShop(), q: "customers that bought", refused: `"bought"`}, // to buy is not to order
		{s: wholesaleSchema(), q: "clients who purchased", sql: `WHERE EXISTS (SELECT 1 FROM purchases`},
		{s: wholesaleSchema(), q: "clients that bought", sql: `WHERE EXISTS (SELECT 1 FROM purchases`},
		{s: evalHR(), q: "departments that hired", refused: `"hired"`},
		{s: clinicSchema(), q: "how many nonsmoker patients", sql: `WHERE "patients"."is_smoker" = false`},
		{s: evalShop(), q: "customers by number of orders", sql: `FROM customers LEFT JOIN orders ON "orders"."customer_id" = "customers"."id" GROUP BY 1, 2 ORDER BY "count" DESC`},
		{s: evalShop(), q: "number of orders and total amount by channel", sql: `count(*) AS "count", sum("orders"."amount") AS "sum_amount" FROM orders GROUP BY 1`},
		{s: evalHR(), q: "average salary and total budget by department", refused: "ask for each on its own"},
		{s: evalShop(), q: "customers whose orders are over 100", sql: `AND "orders"."amount" > {{p1}})`},
		{s: evalShop(), q: "customers who spent more than 200", sql: `(SELECT coalesce(sum("orders"."amount"), 0) FROM orders WHERE`},
		{s: evalShop(), q: "orders with amount over 100 or quantity under 3", sql: `("orders"."amount" > {{p1}} OR "orders"."quantity" < {{p2}})`},
		{s: evalSchool(), q: "how many students per subject", sql: `count(DISTINCT "enrollments"."student_id")`},
		{s: wholesaleSchema(), q: "what is the largest purchase", sql: `GROUP BY 1 ORDER BY "sum_value" DESC NULLS LAST, 1 LIMIT 1`},
		{s: wholesaleSchema(), q: "average purchase value by channel", sql: `SELECT t."channel", avg(t."sum_value")`},
		{s: wholesaleSchema(), q: "average purchase value by product category", refused: "does not have one of"},
	} {
		a, err := Translate(tc.q, tc.s, now)
		var nu *NotUnderstood
		switch {
		case tc.refused != "":
			if !errors.As(err, &nu) || !strings.Contains(nu.Reason, tc.refused) {
				t.Errorf("%q: want a refusal naming %s, got %v %v", tc.q, tc.refused, a, err)
			}
		case err != nil:
			t.Errorf("%q: %v", tc.q, err)
		case !strings.Contains(a.SQL, tc.sql):
			t.Errorf("%q:\n got  %s\n want %s", tc.q, a.SQL, tc.sql)
		}
	}
}
