package nlsql

import (
	"errors"
	"slices"
	"testing"
	"time"

	"dataplatform/store/ingest"
	"dataplatform/store/usersql"
)

// fuzzSchema is a shop of two related tables, with text values, numbers, dates, a boolean
// and a name that is also a value (the questions' raw material).
func fuzzSchema() Schema {
	return Schema{
		Tables: []Table{
			{Ref: "customers", DatasetID: "ds_c", Dataset: "Customers", Name: "ds_c", System: true, Columns: []Column{
				{Name: "customer_id", Type: ingest.Integer}, {Name: "name", Type: ingest.Text},
				{Name: "city", Type: ingest.Text, Values: []string{"Berlin", "Paris", "New York", "Rome", "Orders"}},
				{Name: "status", Type: ingest.Text, Values: []string{"active", "inactive", "pending"}},
				{Name: "credit", Type: ingest.Numeric}, {Name: "signup_date", Label: "Signup Date", Type: ingest.Date}, {Name: "vip", Type: ingest.Boolean},
			}},
			{Ref: "orders", DatasetID: "ds_o", Dataset: "Orders", Name: "ds_o", System: true, Columns: []Column{
				{Name: "order_id", Type: ingest.Integer}, {Name: "customer_id", Type: ingest.Integer}, {Name: "amount", Type: ingest.Numeric},
				{Name: "category", Type: ingest.Text, Values: []string{"books", "games", "music"}},
				{Name: "placed_at", Type: ingest.Timestamptz}, {Name: "tags", Type: ingest.TextArray},
			}},
		},
		Relations: []Relation{{From: "orders", FromColumn: "customer_id", To: "customers", ToColumn: "customer_id"}},
	}
}

// FuzzTranslate gives the built-in natural-language engine arbitrary questions. Invariants:
// it answers or refuses with a *NotUnderstood; an answer's SQL has a value for each of its
// {{pN}} placeholders and no other, reads only the schema's tables, and passes the query guard
// (usersql.Check) like any user SQL.
func FuzzTranslate(f *testing.F) {
	for _, q := range []string{
		"How many customers are there?",
		"How many customers live in Berlin?",
		"total revenue by category",
		"average credit per city",
		"orders over 100",
		"number of orders by month",
		"top 3 cities by revenue",
		"which customer has the highest credit",
		"total amount of orders in 2024 by customer city",
		"customers with more than 1 order",
		"orders last month",
		"orders between march and may",
		"orders from 2024-01-01 to 2024-02-30",
		"vip customers not in Paris",
		"how many customers in berln",
		"orders in the last 3 weeks where amount >= 1,000.50",
		"customers in orders",
		"what is the weather in Paris",
		"",
	} {
		f.Add(q)
	}
	now := time.Date(2024, 6, 15, 12, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, question string) {
		if len(question) > 1024 {
			t.Skip()
		}
		s := fuzzSchema()
		a, err := Translate(question, s, now)
		if err != nil {
			var nu *NotUnderstood
			if !errors.As(err, &nu) {
				t.Fatalf("%q: %v (%T)", question, err, err)
			}
			return
		}
		bound, names, err := usersql.BindBraces(a.SQL, 1)
		if err != nil {
			t.Fatalf("%q: the SQL %s does not bind: %v", question, a.SQL, err)
		}
		for _, n := range names {
			if _, ok := a.Params[n]; !ok {
				t.Fatalf("%q: %s has {{%s}} without a value (%v)", question, a.SQL, n, a.Params)
			}
		}
		for n := range a.Params {
			if !slices.Contains(names, n) {
				t.Fatalf("%q: %s has a value for %s but no {{%s}}", question, a.SQL, n, n)
			}
		}
		for _, ref := range a.Tables {
			if s.table(ref) == nil {
				t.Fatalf("%q: reads %q, not a table of the schema", question, ref)
			}
		}
		if err := usersql.Check(bound); err != nil {
			t.Fatalf("%q: the guard refuses %s: %v", question, a.SQL, err)
		}
	})
}
