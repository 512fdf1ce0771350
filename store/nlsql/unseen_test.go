package nlsql

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"dataplatform/store/ingest"
)

// clinicSchema and wholesaleSchema are shapes the engine was not developed on: keys of their
// own names, state codes and zip codes, a per-line price with no order total.
func clinicSchema() Schema {
	return Schema{Tables: []Table{
		{Ref: "doctors", Dataset: "Doctors", System: true, Columns: []Column{{Name: "doctor_id", Type: ingest.Text}, {Name: "full_name", Type: ingest.Text, Values: []string{"Dr. Maria Alvarez", "Dr. James Brooks"}},
			{Name: "specialty", Type: ingest.Text, Values: []string{"Cardiology", "Pediatrics", "Dermatology", "Orthopedics"}}, {Name: "hired_on", Type: ingest.Date}, {Name: "phone", Type: ingest.Text}, {Name: "created_at", Type: ingest.Timestamptz}}},
		{Ref: "patients", Dataset: "Patients", System: true, Columns: []Column{{Name: "patient_id", Type: ingest.Integer}, {Name: "patient_name", Type: ingest.Text},
			{Name: "state", Type: ingest.Text, Values: []string{"MA", "NY", "CA", "TX", "WA"}}, {Name: "city", Type: ingest.Text, Values: []string{"Boston", "Cambridge", "Albany", "Buffalo", "Fresno", "Austin", "Spokane"}},
			{Name: "zip", Type: ingest.Text, Values: []string{"02134", "02139", "12203", "14201", "93701", "73301", "99201"}}, {Name: "birth_date", Type: ingest.Date},
			{Name: "insurance", Type: ingest.Text, Values: []string{"Medicare", "Medicaid", "Private", "Uninsured"}}, {Name: "phone", Type: ingest.Text}, {Name: "is_smoker", Type: ingest.Boolean}, {Name: "created_at", Type: ingest.Timestamptz}}},
		{Ref: "visits", Dataset: "Visits", System: true, Columns: []Column{{Name: "visit_id", Type: ingest.Integer}, {Name: "patient_id", Type: ingest.Integer}, {Name: "doctor_id", Type: ingest.Text},
			{Name: "visit_date", Type: ingest.Date}, {Name: "fee", Type: ingest.Numeric}, {Name: "copay_rate", Type: ingest.Numeric}, {Name: "status", Type: ingest.Text, Values: []string{"completed", "cancelled", "no-show"}},
			{Name: "follow_up", Type: ingest.Boolean}, {Name: "duration_min", Type: ingest.Integer}, {Name: "notes", Type: ingest.Text, Values: []string{"bring records", "fasting", "interpreter needed"}}, {Name: "created_at", Type: ingest.Timestamptz}}},
	}, Relations: []Relation{{From: "visits", FromColumn: "patient_id", To: "patients", ToColumn: "patient_id"}, {From: "visits", FromColumn: "doctor_id", To: "doctors", ToColumn: "doctor_id"}}}
}

func wholesaleSchema() Schema {
	return Schema{Tables: []Table{
		{Ref: "clients", Dataset: "Clients", System: true, Columns: []Column{{Name: "client_id", Type: ingest.Text}, {Name: "company", Type: ingest.Text},
			{Name: "country", Type: ingest.Text, Values: []string{"United States", "Germany", "France", "Canada", "Japan"}}, {Name: "segment", Type: ingest.Text, Values: []string{"Retail", "Wholesale", "Government"}},
			{Name: "signed_on", Type: ingest.Date}, {Name: "email", Type: ingest.Text}, {Name: "is_key_account", Type: ingest.Boolean}, {Name: "created_at", Type: ingest.Timestamptz}}},
		{Ref: "purchases", Dataset: "Purchases", System: true, Columns: []Column{{Name: "purchase_id", Type: ingest.Integer}, {Name: "client_id", Type: ingest.Text},
			{Name: "purchased_on", Type: ingest.Date}, {Name: "channel", Type: ingest.Text, Values: []string{"web", "phone", "partner"}}, {Name: "shipped_on", Type: ingest.Date},
			{Name: "discount", Type: ingest.Integer}, {Name: "sales_rep", Type: ingest.Text, Values: []string{"Grace Hopper", "Alan Turing", "Ada Lovelace", "Linus Pauling"}}, {Name: "created_at", Type: ingest.Timestamptz}}},
		{Ref: "line_items", Dataset: "Line Items", System: true, Columns: []Column{{Name: "line_item_id", Type: ingest.Integer}, {Name: "purchase_id", Type: ingest.Integer},
			{Name: "sku", Type: ingest.Text}, {Name: "product_category", Type: ingest.Text, Values: []string{"Electronics", "Books", "Furniture", "Toys"}}, {Name: "unit_price", Type: ingest.Numeric}, {Name: "qty", Type: ingest.Integer}, {Name: "created_at", Type: ingest.Timestamptz}}},
	}, Relations: []Relation{{From: "purchases", FromColumn: "client_id", To: "clients", ToColumn: "client_id"}, {From: "line_items", FromColumn: "purchase_id", To: "purchases", ToColumn: "purchase_id"}}}
}

// TestUnseenShapes pins the readings of the classes of questions that fail on shapes other
// than customers and orders: places by name or code, values spoken as their column, presence
// ("no phone", "not shipped"), "by" naming who did it, dates as people write them, synonyms
// from the lexicon, and measures that must not be added up or stand for an order's value.
func TestUnseenShapes(t *testing.T) {
	now := time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		wholesale bool
		q, sql    string
		params    string // the parameters in order, as %v
		warning   string // a part of the warnings
		refused   string // a part of the reason
	}{
		{q: "how many patients live in Massachusetts", sql: `SELECT count(*) AS "count" FROM patients WHERE "patients"."state" = {{p1}}`, params: "[MA]"},
		{q: "patients in New York state", sql: `SELECT "patients".* FROM patients WHERE "patients"."state" = {{p1}} LIMIT 100`, params: "[NY]"},
		{q: "patients in zip 02134", sql: `SELECT "patients".* FROM patients WHERE "patients"."zip" = {{p1}} LIMIT 100`, params: "[02134]"},
		{q: "how many patients have no phone", sql: `SELECT count(*) AS "count" FROM patients WHERE ("patients"."phone" IS NULL OR "patients"."phone" = '')`, params: "[]"},
		{q: "how many visits have notes", sql: `SELECT count(*) AS "count" FROM visits WHERE "visits"."notes" <> ''`, params: "[]"},
		{q: "how many follow-up visits", sql: `SELECT count(*) AS "count" FROM visits WHERE "visits"."follow_up" = true`, params: "[]"},
		{q: "how many cardiology visits", sql: `SELECT count(*) AS "count" FROM visits JOIN doctors ON "doctors"."doctor_id" = "visits"."doctor_id" WHERE "doctors"."specialty" = {{p1}}`, params: "[Cardiology]"},
		{q: "how many visits were made by smokers with a follow-up", sql: `SELECT count(*) AS "count" FROM visits JOIN patients ON "patients"."patient_id" = "visits"."patient_id" WHERE "patients"."is_smoker" = true AND "visits"."follow_up" = true`, params: "[]"},
		{q: "how many physicians", sql: `SELECT count(*) AS "count" FROM doctors`, params: "[]", warning: `"physicians" means Doctors`},
		{q: "how many visits between March 1 and June 30, 2025", sql: `SELECT count(*) AS "count" FROM visits WHERE "visits"."visit_date" >= {{p1}} AND "visits"."visit_date" < {{p2}}`, params: "[2025-03-01 2025-07-01]"},
		{q: "how many visits on 3/14/2025", sql: `SELECT count(*) AS "count" FROM visits WHERE "visits"."visit_date" >= {{p1}} AND "visits"."visit_date" < {{p2}}`, params: "[2025-03-14 2025-03-15]"},
		{q: "how many visits in the first half of 2025", params: "[2025-01-01 2025-07-01]"},
		{q: "how many visits in Q3", params: "[2026-07-01 2026-10-01]"},
		{q: "how many visits since June", params: "[2025-06-01]"}, // the last June before the clock's March
		{q: "how many visits in the last 90 days", params: "[2025-12-11 2026-03-11]"},
		{q: "how many visits from March 1 to June 30, 2025", params: "[2025-03-01 2025-07-01]"},
		{q: "visits from 1/1/2025 through 3/31/2025", params: "[2025-01-01 2025-04-01]"},
		{q: "how many visits on the 1st of March 2025", params: "[2025-03-01 2025-03-02]"},
		{q: "how many visits in the third quarter of 2025", params: "[2025-07-01 2025-10-01]"},
		{q: "total copay rate", refused: "a value per unit or a rate"},
		{q: "how many visits were booked by insurance", refused: "reads two ways"},
		{wholesale: true, q: "how many customers", sql: `SELECT count(*) AS "count" FROM clients`, params: "[]", warning: `"customers" means Clients`},
		{wholesale: true, q: "how many purchases were not shipped", sql: `SELECT count(*) AS "count" FROM purchases WHERE "purchases"."shipped_on" IS NULL`, params: "[]"},
		{wholesale: true, q: "how many purchases have a discount", sql: `SELECT count(*) AS "count" FROM purchases WHERE "purchases"."discount" > 0`, params: "[]", warning: "discount above 0"},
		{wholesale: true, q: "how many purchases were made by key accounts", sql: `SELECT count(*) AS "count" FROM purchases JOIN clients ON "clients"."client_id" = "purchases"."client_id" WHERE "clients"."is_key_account" = true`, params: "[]"},
		{wholesale: true, q: "how many purchases did Japanese clients make", params: "[Japan]"},
		{wholesale: true, q: "total quantity sold", sql: `SELECT sum("line_items"."qty") AS "sum_qty" FROM line_items`, params: "[]", warning: `"quantity" means the column qty`},
		{wholesale: true, q: "average purchase value", sql: `SELECT avg(t."sum_value") AS "avg_purchase_value" FROM (SELECT "purchases"."purchase_id" AS "purchase_id", sum(("line_items"."unit_price" * "line_items"."qty")) AS "sum_value" FROM line_items JOIN purchases ON "purchases"."purchase_id" = "line_items"."purchase_id" GROUP BY 1 ORDER BY 1) t`, params: "[]", warning: "unit price × qty"},
		{wholesale: true, q: "sum of unit price", refused: "a value per unit or a rate"},
		{wholesale: true, q: "electronics purchases over 500 that were not shipped", refused: "not which number of them"},
		{wholesale: true, q: "how many purchases by sales rep were made by sales rep", refused: "reads two ways"},
		{wholesale: true, q: "total qty of line items of Japanese clients", sql: `SELECT sum("line_items"."qty") AS "sum_qty" FROM line_items JOIN purchases ON "purchases"."purchase_id" = "line_items"."purchase_id" JOIN clients ON "clients"."client_id" = "purchases"."client_id" WHERE "clients"."country" = {{p1}}`, params: "[Japan]"},
		{wholesale: true, q: "line items by client country", sql: `SELECT "clients"."country" AS "country", count(*) AS "count" FROM line_items JOIN purchases ON "purchases"."purchase_id" = "line_items"."purchase_id" JOIN clients ON "clients"."client_id" = "purchases"."client_id" GROUP BY 1 ORDER BY 1`, params: "[]"},
	} {
		s := clinicSchema()
		if tc.wholesale {
			s = wholesaleSchema()
		}
		a, err := Translate(tc.q, s, now)
		var nu *NotUnderstood
		if tc.refused != "" {
			if !errors.As(err, &nu) || !strings.Contains(nu.Reason, tc.refused) || len(nu.Suggestions) == 0 {
				t.Errorf("%q: want a refusal with %q and suggestions, got %v (%+v)", tc.q, tc.refused, err, a)
				continue
			}
			for _, sug := range nu.Suggestions {
				if _, err := Translate(sug, s, now); !strings.Contains(sug, `"`) && err != nil {
					t.Errorf("%q suggests %q, which is refused: %v", tc.q, sug, err)
				}
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", tc.q, err)
			continue
		}
		var ps []any
		for i := 1; i <= len(a.Params); i++ {
			ps = append(ps, a.Params[fmt.Sprintf("p%d", i)])
		}
		if tc.sql != "" && a.SQL != tc.sql || fmt.Sprint(ps) != tc.params {
			t.Errorf("%q:\n got %s %v\nwant %s %s", tc.q, a.SQL, ps, tc.sql, tc.params)
		}
		if !strings.Contains(strings.Join(a.Warnings, "; "), tc.warning) {
			t.Errorf("%q: want the warning %q, got %v", tc.q, tc.warning, a.Warnings)
		}
	}
}

// TestTaughtColumns: what a dataset's owner says about a column (other names, a unit, how
// it combines) is how questions read it.
func TestTaughtColumns(t *testing.T) {
	now := time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC)
	s := wholesaleSchema()
	li := &s.Tables[2]
	li.Columns[4].Aliases, li.Columns[4].Unit, li.Columns[4].DefaultAgg = []string{"list price"}, "USD", "avg"
	li.Columns[5].Aliases = []string{"units sold"}
	s.Tables[1].Columns[5].DefaultAgg = "none" // discount: a code here
	for _, tc := range []struct{ q, sql, step, refused string }{
		{q: "list price of books", sql: `SELECT avg("line_items"."unit_price") AS "avg_unit_price" FROM line_items WHERE "line_items"."product_category" = {{p1}}`,
			step: `Read "list price" as unit price of Line Items`},
		{q: "average list price", sql: `SELECT avg("line_items"."unit_price") AS "avg_unit_price" FROM line_items`, step: "Measure: avg of unit price (USD)"},
		{q: "total units sold by product category", sql: `SELECT "line_items"."product_category" AS "product_category", sum("line_items"."qty") AS "sum_qty" FROM line_items GROUP BY 1 ORDER BY 1`},
		{q: "total list price", refused: "a value per unit or a rate"},
		{q: "average discount", refused: "does not combine"},
	} {
		a, err := Translate(tc.q, s, now)
		var nu *NotUnderstood
		if tc.refused != "" {
			if !errors.As(err, &nu) || !strings.Contains(nu.Reason, tc.refused) {
				t.Errorf("%q: want a refusal with %q, got %v", tc.q, tc.refused, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", tc.q, err)
			continue
		}
		if a.SQL != tc.sql || !strings.Contains(strings.Join(a.Steps, "; "), tc.step) {
			t.Errorf("%q:\n got %s (%v)\nwant %s (%s)", tc.q, a.SQL, a.Steps, tc.sql, tc.step)
		}
	}
}

// TestValueOfAnOrder: "order value" is the order's total when it has one, whatever order its
// columns come in; with only a price per unit and a quantity it is their product, said to be
// computed; with only a price per unit it is refused, naming it.
func TestValueOfAnOrder(t *testing.T) {
	now := time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC)
	price := Column{Name: "unit_price", Type: ingest.Numeric}
	total := Column{Name: "order_total", Type: ingest.Numeric}
	for _, cols := range [][]Column{{price, total}, {total, price}} {
		s := Schema{Tables: []Table{{Ref: "orders", Dataset: "Orders", Columns: append([]Column{{Name: "order_id", Type: ingest.Integer}}, cols...)}}}
		a, err := Translate("average order value", s, now)
		if err != nil || a.SQL != `SELECT avg("orders"."order_total") AS "avg_order_total" FROM orders` {
			t.Errorf("%v: got %v %v", cols, a, err)
		}
	}
	s := Schema{Tables: []Table{{Ref: "orders", Dataset: "Orders", Columns: []Column{{Name: "order_id", Type: ingest.Integer}, price, {Name: "quantity", Type: ingest.Integer}}}}}
	if a, err := Translate("average order value", s, now); err != nil || a.SQL != `SELECT avg(("orders"."unit_price" * "orders"."quantity")) AS "avg_value" FROM orders` ||
		!strings.Contains(strings.Join(a.Warnings, "; "), "unit price × quantity") {
		t.Errorf("average order value over unit prices and quantities: got %+v %v", a, err)
	}
	s.Tables[0].Columns = s.Tables[0].Columns[:2]
	var nu *NotUnderstood
	if _, err := Translate("average order value", s, now); !errors.As(err, &nu) || !strings.Contains(nu.Reason, "unit price") {
		t.Errorf("average order value over unit prices: want a refusal naming unit price, got %v", err)
	}
}

// TestLargestOrder: "the largest order" orders the rows by their value, said as an assumption.
func TestLargestOrder(t *testing.T) {
	now := time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC)
	for q, want := range map[string]string{
		"what is the largest order": `SELECT max("orders"."amount") AS "max_amount" FROM orders`,
		"show the largest order":    `SELECT "orders".* FROM orders ORDER BY "orders"."amount" DESC NULLS LAST LIMIT 1`,
	} {
		a, err := Translate(q, evalShop(), now)
		if err != nil || a.SQL != want || !strings.Contains(strings.Join(a.Warnings, "; "), "amount of Orders is meant") {
			t.Errorf("%q: got %+v %v, want %s with the assumption", q, a, err, want)
		}
	}
}
