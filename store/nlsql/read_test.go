package nlsql

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"dataplatform/store/ingest"
)

// richShop is shop with more columns and tables: one with no relationship to the others, one
// with two numbers, one named in two words, connected and ranked ones (the search index's
// pick).
func richShop() Schema {
	s := shop()
	s.Tables[0].Columns = append(s.Tables[0].Columns,
		Column{Name: "tier", Type: ingest.Text, Values: []string{"gold", "silver"}},
		Column{Name: "country", Type: ingest.Text, Values: []string{"Germany", "France"}},
		Column{Name: "active", Type: ingest.Boolean})
	s.Tables[1].Columns = append(s.Tables[1].Columns, Column{Name: "status", Type: ingest.Text, Values: []string{"pending", "shipped", "cancelled"}})
	s.Tables = append(s.Tables,
		Table{Ref: "notes", DatasetID: "ds_n", Dataset: "Notes", Name: "ds_n", Columns: []Column{{Name: "body", Type: ingest.Text}, {Name: "weight", Type: ingest.Numeric}}},
		Table{Ref: "shop.items", DatasetID: "ds_s", Dataset: "Shop", Name: "items", Rank: 0.5, Columns: []Column{{Name: "item_id", Type: ingest.Integer}, {Name: "price", Type: ingest.Numeric}, {Name: "added_at", Type: ingest.Timestamptz}}},
		Table{Ref: "stock", DatasetID: "ds_k", Dataset: "Stock", Name: "ds_k", Columns: []Column{{Name: "on_hand", Type: ingest.Integer}, {Name: "reserved", Type: ingest.Integer}}},
		Table{Ref: "visits", DatasetID: "ds_w", Dataset: "Site Visits", Name: "ds_w", Columns: []Column{{Name: "duration", Type: ingest.Numeric}, {Name: "started", Type: ingest.Date}}},
		Table{Ref: "events", DatasetID: "ds_e", Dataset: "Purchases", Name: "ds_e", Rank: 0.8, Columns: []Column{{Name: "qty", Type: ingest.Integer}, {Name: "happened", Type: ingest.Date}, {Name: "kind", Type: ingest.Text, Values: []string{"web", "store"}}}},
	)
	return s
}

// TestTranslateReadings pins how questions are read, phase by phase (the mentions of tables,
// columns and values, intent words, "by" a number, the main table, groups, ordering, filters,
// time phrases, superlatives, the measure), with the SQL, its parameters and the steps, or
// the reason of a refusal.
func TestTranslateReadings(t *testing.T) {
	now := time.Date(2024, 6, 15, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		q       string
		rich    bool // richShop rather than shop
		sql     string
		params  []any // p1, p2, ...
		steps   string
		refused string
	}{
		{q: "average amount of orders by colour", rich: false, refused: `it groups by "colour", which is no column of the datasets it reads`},
		{q: "average weight of notes by city", rich: false, refused: `it does not understand "weight", "notes" in the question, and answering without it would answer a different question`},
		{q: "bottom 2 categories by revenue", rich: false, sql: `SELECT "orders"."category" AS "category", sum("orders"."amount") AS "sum_amount" FROM orders GROUP BY 1 ORDER BY "sum_amount" ASC NULLS LAST, 1 LIMIT 2`,
			params: []any{}, steps: "Dataset: Orders; Assumed the total (sum) of amount for each group: the question names it without saying how to combine it; Grouped by category; Limit: 2"},
		{q: "customers in Germany sorted by credit descending", rich: false, refused: `it does not understand "germany" in the question, and answering without it would answer a different question`},
		{q: "customers with credit above 100", rich: false, sql: `SELECT "customers".* FROM customers WHERE "customers"."credit" > {{p1}} LIMIT 100`,
			params: []any{"100"}, steps: "Dataset: Customers; Filter: credit > 100; Rows: at most 100"},
		{q: "first 5 orders", rich: false, sql: `SELECT "orders".* FROM orders LIMIT 5`,
			params: []any{}, steps: "Dataset: Orders; Limit: 5"},
		{q: "for each tier, the average credit", rich: false, refused: `it groups by "tier", which is no column of the datasets it reads`},
		{q: "count customers from New York", rich: false, sql: `SELECT count(*) AS "count" FROM customers WHERE "customers"."city" = {{p1}}`,
			params: []any{"New York"}, steps: "Dataset: Customers; Filter: city is New York"},
		{q: "how many customers in berln", rich: false, sql: `SELECT count(*) AS "count" FROM customers WHERE "customers"."city" = {{p1}}`,
			params: []any{"Berlin"}, steps: "Dataset: Customers; Filter: city is Berlin"},
		{q: "how many different countries", rich: false, refused: `it names no dataset, column or value of this project; it does not know "countries"`},
		{q: "how many orders between march and may", rich: false, sql: `SELECT count(*) AS "count" FROM orders WHERE extract(month FROM "orders"."placed_at") BETWEEN {{p1}} AND {{p2}}`,
			params: []any{3, 5}, steps: "Dataset: Orders; Time: placed at between March and May (any year)"},
		{q: "how many orders this year", rich: false, sql: `SELECT count(*) AS "count" FROM orders WHERE "orders"."placed_at" >= {{p1}} AND "orders"."placed_at" < {{p2}}`,
			params: []any{"2024-01-01", "2024-06-16"}, steps: "Dataset: Orders; Time: placed at this year"},
		{q: "how many unique statuses of orders", rich: false, refused: `it does not understand "orders" in the question, and answering without it would answer a different question`},
		{q: "min amount", rich: false, sql: `SELECT min("orders"."amount") AS "min_amount" FROM orders`,
			params: []any{}, steps: "Measure: min of amount; Dataset: Orders"},
		{q: "monthly revenue in 2024", rich: false, sql: `SELECT date_trunc('month', "orders"."placed_at")::date AS "month", sum("orders"."amount") AS "sum_amount" FROM orders WHERE "orders"."placed_at" >= {{p1}} AND "orders"."placed_at" < {{p2}} GROUP BY 1 ORDER BY 1`,
			params: []any{"2024-01-01", "2025-01-01"}, steps: "Dataset: Orders; Grouped by month of placed at; Time: placed at in 2024; Assumed the total (sum) of amount: the question names it without saying how to combine it"},
		{q: "orders after March 2024", rich: false, sql: `SELECT "orders".* FROM orders WHERE "orders"."placed_at" >= {{p1}} LIMIT 100`,
			params: []any{"2024-04-01"}, steps: "Dataset: Orders; Time: placed at after march 2024; Rows: at most 100"},
		{q: "orders before 2024", rich: false, sql: `SELECT "orders".* FROM orders WHERE "orders"."placed_at" < {{p1}} LIMIT 100`,
			params: []any{"2024-01-01"}, steps: "Dataset: Orders; Time: placed at before 2024; Rows: at most 100"},
		{q: "orders between 2024-01-01 and 2024-02-15", rich: false, sql: `SELECT "orders".* FROM orders WHERE "orders"."placed_at" >= {{p1}} AND "orders"."placed_at" < {{p2}} LIMIT 100`,
			params: []any{"2024-01-01", "2024-02-16"}, steps: "Dataset: Orders; Time: placed at between 2024-01-01 and 2024-02-15; Rows: at most 100"},
		{q: "orders between March and May 2024", rich: false, sql: `SELECT "orders".* FROM orders WHERE "orders"."placed_at" >= {{p1}} AND "orders"."placed_at" < {{p2}} LIMIT 100`,
			params: []any{"2024-03-01", "2024-06-01"}, steps: "Dataset: Orders; Time: placed at between March and May 2024; Rows: at most 100"},
		{q: "orders by customer signup year", rich: false, sql: `SELECT date_trunc('year', "customers"."signup_date")::date AS "year", count(*) AS "count" FROM orders JOIN customers ON "customers"."customer_id" = "orders"."customer_id" GROUP BY 1 ORDER BY 1`,
			params: []any{}, steps: "Dataset: Orders; Joined Customers along its relationship; Grouped by year of signup date"},
		{q: "orders during june", rich: false, sql: `SELECT "orders".* FROM orders WHERE extract(month FROM "orders"."placed_at") BETWEEN {{p1}} AND {{p2}} LIMIT 100`,
			params: []any{6, 6}, steps: "Dataset: Orders; Time: placed at in June (any year); Rows: at most 100"},
		{q: "orders in mar 2024 by category", rich: false, sql: `SELECT "orders"."category" AS "category", count(*) AS "count" FROM orders WHERE "orders"."placed_at" >= {{p1}} AND "orders"."placed_at" < {{p2}} GROUP BY 1 ORDER BY 1`,
			params: []any{"2024-03-01", "2024-04-01"}, steps: "Dataset: Orders; Grouped by category; Time: placed at in March 2024"},
		{q: "orders last 1 year", rich: false, sql: `SELECT "orders".* FROM orders WHERE "orders"."placed_at" >= {{p1}} AND "orders"."placed_at" < {{p2}} LIMIT 100`,
			params: []any{"2023-06-16", "2024-06-16"}, steps: "Dataset: Orders; Time: placed at the last 1 year; Rows: at most 100"},
		{q: "orders last 10 days", rich: false, sql: `SELECT "orders".* FROM orders WHERE "orders"."placed_at" >= {{p1}} AND "orders"."placed_at" < {{p2}} LIMIT 100`,
			params: []any{"2024-06-06", "2024-06-16"}, steps: "Dataset: Orders; Time: placed at the last 10 days; Rows: at most 100"},
		{q: "orders last 2 weeks", rich: false, sql: `SELECT "orders".* FROM orders WHERE "orders"."placed_at" >= {{p1}} AND "orders"."placed_at" < {{p2}} LIMIT 100`,
			params: []any{"2024-06-02", "2024-06-16"}, steps: "Dataset: Orders; Time: placed at the last 2 weeks; Rows: at most 100"},
		{q: "orders last quarter", rich: false, sql: `SELECT "orders".* FROM orders WHERE "orders"."placed_at" >= {{p1}} AND "orders"."placed_at" < {{p2}} LIMIT 100`,
			params: []any{"2024-01-01", "2024-04-01"}, steps: "Dataset: Orders; Time: placed at the previous quarter; Rows: at most 100"},
		{q: "orders last week", rich: false, sql: `SELECT "orders".* FROM orders WHERE "orders"."placed_at" >= {{p1}} AND "orders"."placed_at" < {{p2}} LIMIT 100`,
			params: []any{"2024-06-03", "2024-06-10"}, steps: "Dataset: Orders; Time: placed at the previous week; Rows: at most 100"},
		{q: "orders last year", rich: false, sql: `SELECT "orders".* FROM orders WHERE "orders"."placed_at" >= {{p1}} AND "orders"."placed_at" < {{p2}} LIMIT 100`,
			params: []any{"2023-01-01", "2024-01-01"}, steps: "Dataset: Orders; Time: placed at the previous year; Rows: at most 100"},
		{q: "orders past 2 quarters", rich: false, sql: `SELECT "orders".* FROM orders WHERE "orders"."placed_at" >= {{p1}} AND "orders"."placed_at" < {{p2}} LIMIT 100`,
			params: []any{"2023-12-16", "2024-06-16"}, steps: "Dataset: Orders; Time: placed at the last 2 quarters; Rows: at most 100"},
		{q: "orders past 3 months", rich: false, sql: `SELECT "orders".* FROM orders WHERE "orders"."placed_at" >= {{p1}} AND "orders"."placed_at" < {{p2}} LIMIT 100`,
			params: []any{"2024-03-16", "2024-06-16"}, steps: "Dataset: Orders; Time: placed at the last 3 months; Rows: at most 100"},
		{q: "orders previous day", rich: false, sql: `SELECT "orders".* FROM orders WHERE "orders"."placed_at" >= {{p1}} AND "orders"."placed_at" < {{p2}} LIMIT 100`,
			params: []any{"2024-06-14", "2024-06-15"}, steps: "Dataset: Orders; Time: placed at the previous day; Rows: at most 100"},
		{q: "orders since 2024-04-01", rich: false, sql: `SELECT "orders".* FROM orders WHERE "orders"."placed_at" >= {{p1}} LIMIT 100`,
			params: []any{"2024-04-01"}, steps: "Dataset: Orders; Time: placed at since 2024-04-01; Rows: at most 100"},
		{q: "orders this day", rich: false, sql: `SELECT "orders".* FROM orders WHERE "orders"."placed_at" >= {{p1}} AND "orders"."placed_at" < {{p2}} LIMIT 100`,
			params: []any{"2024-06-15", "2024-06-16"}, steps: "Dataset: Orders; Time: placed at this day; Rows: at most 100"},
		{q: "orders this month", rich: false, sql: `SELECT "orders".* FROM orders WHERE "orders"."placed_at" >= {{p1}} AND "orders"."placed_at" < {{p2}} LIMIT 100`,
			params: []any{"2024-06-01", "2024-06-16"}, steps: "Dataset: Orders; Time: placed at this month; Rows: at most 100"},
		{q: "orders this quarter", rich: false, sql: `SELECT "orders".* FROM orders WHERE "orders"."placed_at" >= {{p1}} AND "orders"."placed_at" < {{p2}} LIMIT 100`,
			params: []any{"2024-04-01", "2024-06-16"}, steps: "Dataset: Orders; Time: placed at this quarter; Rows: at most 100"},
		{q: "orders this week", rich: false, sql: `SELECT "orders".* FROM orders WHERE "orders"."placed_at" >= {{p1}} AND "orders"."placed_at" < {{p2}} LIMIT 100`,
			params: []any{"2024-06-10", "2024-06-16"}, steps: "Dataset: Orders; Time: placed at this week; Rows: at most 100"},
		{q: "orders today", rich: false, sql: `SELECT "orders".* FROM orders WHERE "orders"."placed_at" >= {{p1}} AND "orders"."placed_at" < {{p2}} LIMIT 100`,
			params: []any{"2024-06-15", "2024-06-16"}, steps: "Dataset: Orders; Time: placed at today; Rows: at most 100"},
		{q: "orders until March 2024", rich: false, sql: `SELECT "orders".* FROM orders WHERE "orders"."placed_at" < {{p1}} LIMIT 100`,
			params: []any{"2024-04-01"}, steps: "Dataset: Orders; Time: placed at until march 2024; Rows: at most 100"},
		{q: "orders with more than 2 widgets", rich: false, refused: `it compares more than 2 with "widgets", which is no dataset or column`},
		{q: "orders yesterday", rich: false, sql: `SELECT "orders".* FROM orders WHERE "orders"."placed_at" >= {{p1}} AND "orders"."placed_at" < {{p2}} LIMIT 100`,
			params: []any{"2024-06-14", "2024-06-15"}, steps: "Dataset: Orders; Time: placed at yesterday; Rows: at most 100"},
		{q: "revenue by category and month", rich: false, sql: `SELECT "orders"."category" AS "category", date_trunc('month', "orders"."placed_at")::date AS "month", sum("orders"."amount") AS "sum_amount" FROM orders GROUP BY 1, 2 ORDER BY 1, 2`,
			params: []any{}, steps: "Dataset: Orders; Grouped by category; Grouped by month of placed at; Assumed the total (sum) of amount: the question names it without saying how to combine it"},
		{q: "total number of orders", rich: false, sql: `SELECT count(*) AS "count" FROM orders`,
			params: []any{}, steps: "Dataset: Orders"},
		{q: "what is the highest customer", rich: false, refused: "it asks for the highest but names no number"},
		{q: "what is the lowest credit", rich: false, sql: `SELECT min("customers"."credit") AS "min_credit" FROM customers`,
			params: []any{}, steps: "Dataset: Customers; Measure: min of credit"},
		{q: "what is the weather in Paris", rich: false, refused: `only values were recognised (Paris), not what to compute or list; it does not know "weather"`},
		{q: "which category has the highest revenue", rich: false, sql: `SELECT "orders"."category" AS "category", sum("orders"."amount") AS "sum_amount" FROM orders GROUP BY 1 ORDER BY "sum_amount" DESC NULLS LAST, 1 LIMIT 1`,
			params: []any{}, steps: "Dataset: Orders; Grouped by category; Assumed the total (sum) of amount for each group: the question names it without saying how to combine it; Limit: 1"},
		{q: "which customers have the highest amount", rich: false, sql: `SELECT "customers"."customer_id" AS "customer_id", "customers"."name" AS "name", sum("orders"."amount") AS "sum_amount" FROM orders JOIN customers ON "customers"."customer_id" = "orders"."customer_id" GROUP BY 1, 2 ORDER BY "sum_amount" DESC NULLS LAST, 1, 2 LIMIT 1`,
			params: []any{}, steps: "Dataset: Customers; Measured Orders per customer instead; Joined Customers along its relationship; Assumed the total (sum) of amount for each customer: the question names it without saying how to combine it; Limit: 1"},
		{q: "highest", rich: true, refused: "it asks for the highest but names no number to order by"},
		{q: "How many active customers?", rich: true, sql: `SELECT count(*) AS "count" FROM customers WHERE "customers"."active" = true`,
			params: []any{}, steps: "Dataset: Customers; Filter: active is true"},
		{q: "how many orders by status", rich: true, sql: `SELECT "orders"."status" AS "status", count(*) AS "count" FROM orders GROUP BY 1 ORDER BY 1`,
			params: []any{}, steps: "Dataset: Orders; Grouped by status"},
		{q: "how many customers by kind", rich: true, refused: "Customers and Purchases have no known relationship"},
		{q: "how many orders in web", rich: true, refused: "Orders and Purchases have no known relationship"},
		{q: "how many pending customers", rich: true, sql: `SELECT count(*) AS "count" FROM customers WHERE "customers"."status" = {{p1}}`,
			params: []any{"pending"}, steps: "Dataset: Customers; Filter: status is pending"},
		{q: "how many visits", rich: true, sql: `SELECT count(*) AS "count" FROM visits`,
			params: []any{}, steps: "Dataset: Site Visits"},
		{q: "max of stock", rich: true, refused: "it asks for a maximum but does not say of which number"},
		{q: "notes by month", rich: true, refused: "it groups by month but no dataset it reads has a date column"},
		{q: "notes happened in 2024", rich: true, refused: "Notes and Purchases have no known relationship"},
		{q: "notes in 2024", rich: true, refused: "it names a time (in 2024) but no dataset it reads has a date column"},
		{q: "orders sorted by body", rich: true, refused: "Orders and Notes have no known relationship"},
		{q: "orders with weight", rich: true, refused: "Orders and Notes have no known relationship"},
		{q: "site visits in 2024", rich: true, sql: `SELECT "visits".* FROM visits WHERE "visits"."started" >= {{p1}} AND "visits"."started" < {{p2}} LIMIT 100`,
			params: []any{"2024-01-01", "2025-01-01"}, steps: "Dataset: Site Visits; Time: started in 2024; Rows: at most 100"},
		{q: "top 3 body of orders", rich: true, refused: "Orders and Notes have no known relationship"},
		{q: "total qty last month", rich: true, sql: `SELECT sum("events"."qty") AS "sum_qty" FROM events WHERE "events"."happened" >= {{p1}} AND "events"."happened" < {{p2}}`,
			params: []any{"2024-05-01", "2024-06-01"}, steps: "Measure: sum of qty; Dataset: Purchases; Time: happened the previous month"},
	} {
		s := shop()
		if tc.rich {
			s = richShop()
		}
		a, err := Translate(tc.q, s, now)
		if tc.refused != "" {
			var nu *NotUnderstood
			if !errors.As(err, &nu) || nu.Reason != tc.refused {
				t.Errorf("%q (rich %v): got %v, want refusal %q", tc.q, tc.rich, err, tc.refused)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q (rich %v): %v", tc.q, tc.rich, err)
			continue
		}
		params := map[string]any{}
		for i, v := range tc.params {
			params[fmt.Sprintf("p%d", i+1)] = v
		}
		if steps := strings.Join(a.Steps, "; "); a.SQL != tc.sql || !reflect.DeepEqual(a.Params, params) || steps != tc.steps {
			t.Errorf("%q (rich %v):\n got %s %v\n     %s\nwant %s %v\n     %s", tc.q, tc.rich, a.SQL, a.Params, steps, tc.sql, params, tc.steps)
		}
	}
}
