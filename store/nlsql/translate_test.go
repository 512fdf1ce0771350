package nlsql

import (
	"errors"
	"strings"
	"testing"
	"time"

	"dataplatform/store/ingest"
	"dataplatform/store/usersql"
)

func shop() Schema {
	return Schema{
		Tables: []Table{
			{Ref: "customers", DatasetID: "ds_c", Dataset: "Customers", Name: "ds_c", System: true, Columns: []Column{
				{Name: "customer_id", Type: ingest.Integer}, {Name: "name", Type: ingest.Text},
				{Name: "city", Type: ingest.Text, Values: []string{"Berlin", "Paris", "New York", "Rome"}},
				{Name: "status", Type: ingest.Text, Values: []string{"active", "inactive", "pending"}},
				{Name: "credit", Type: ingest.Numeric}, {Name: "signup_date", Type: ingest.Date}, {Name: "vip", Type: ingest.Boolean},
			}},
			{Ref: "orders", DatasetID: "ds_o", Dataset: "Orders", Name: "ds_o", System: true, Columns: []Column{
				{Name: "order_id", Type: ingest.Integer}, {Name: "customer_id", Type: ingest.Integer}, {Name: "amount", Type: ingest.Numeric},
				{Name: "category", Type: ingest.Text, Values: []string{"books", "games", "music"}},
				{Name: "placed_at", Type: ingest.Date},
			}},
		},
		Relations: []Relation{{From: "orders", FromColumn: "customer_id", To: "customers", ToColumn: "customer_id"}},
	}
}

func TestTranslateShapes(t *testing.T) {
	now := time.Date(2024, 6, 15, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct{ q, want string }{
		{"How many customers are there?", `SELECT count(*) AS "count" FROM customers`},
		{"How many customers live in Berlin?", `SELECT count(*) AS "count" FROM customers WHERE "customers"."city" = {{p1}}`},
		{"total revenue by category", `SELECT "orders"."category" AS "category", sum("orders"."amount") AS "sum_amount" FROM orders GROUP BY 1 ORDER BY 1`},
		{"average credit per city", `SELECT "customers"."city" AS "city", avg("customers"."credit") AS "avg_credit" FROM customers GROUP BY 1 ORDER BY 1`},
		{"orders over 100", `SELECT "orders".* FROM orders WHERE "orders"."amount" > {{p1}} LIMIT 100`},
		{"number of orders by month", `SELECT date_trunc('month', "orders"."placed_at")::date AS "month", count(*) AS "count" FROM orders GROUP BY 1 ORDER BY 1`},
		{"top 3 cities by revenue", ``},
		{"which city has the most customers", `SELECT "customers"."city" AS "city", count(*) AS "count" FROM customers GROUP BY 1 ORDER BY "count" DESC NULLS LAST, 1 LIMIT 1`},
		{"which customer has the highest credit", `SELECT "customers".* FROM customers ORDER BY "customers"."credit" DESC NULLS LAST LIMIT 1`},
		{"total amount of orders in 2024 by customer city", ``},
		{"how many distinct cities do customers live in", `SELECT count(DISTINCT "customers"."city") AS "distinct_city" FROM customers`},
		{"customers with more than 1 order", ``},
		{"orders last month", ``},
		{"orders between march and may", ``},
		{"vip customers not in Paris", ``},
		{"average order amount for active customers", ``},
		{"how many customers in berln", ``},
	} {
		a, err := Translate(tc.q, shop(), now)
		if err != nil {
			t.Errorf("%s: %v", tc.q, err)
			continue
		}
		// What nlsql writes goes through the query guard's allow-list like any user SQL.
		if bound, _, err := usersql.BindBraces(a.SQL, 1); err != nil {
			t.Errorf("%s: %v", a.SQL, err)
		} else if err := usersql.Check(bound); err != nil {
			t.Errorf("%s: the guard refuses %s: %v", tc.q, a.SQL, err)
		}
		if tc.want != "" && a.SQL != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", tc.q, a.SQL, tc.want)
		}
		t.Logf("%s\n  %s %v\n  %s", tc.q, a.SQL, a.Params, strings.Join(a.Steps, "; "))
	}
	for _, q := range []string{"what is the weather in Paris", "tell me a joke", "", "average amount of orders by colour"} {
		_, err := Translate(q, shop(), now)
		var nu *NotUnderstood
		if !errors.As(err, &nu) || len(nu.Suggestions) == 0 {
			t.Errorf("%q: want NotUnderstood with suggestions, got %v", q, err)
		} else {
			t.Logf("%q refused: %s; %v", q, nu.Reason, nu.Suggestions)
		}
	}
}
