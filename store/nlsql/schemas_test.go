package nlsql

import (
	"errors"
	"strings"
	"testing"
	"time"

	"dataplatform/store/ingest"
)

// The schemas of the evaluation (tests/testdata/nl), as the engine sees them.

func evalShop() Schema {
	return Schema{Tables: []Table{
		{Ref: "customers", Dataset: "Customers", System: true, Columns: []Column{{Name: "id", Type: ingest.BigInt}, {Name: "name", Type: ingest.Text},
			{Name: "email", Type: ingest.Text}, {Name: "city", Type: ingest.Text, Values: []string{"Austin", "Boston", "Seattle", "Dallas", "Portland"}},
			{Name: "state", Type: ingest.Text, Values: []string{"Texas", "Massachusetts", "Washington", "Oregon"}}, {Name: "is_vip", Type: ingest.Boolean},
			{Name: "status", Type: ingest.Text, Values: []string{"active", "inactive", "pending"}}, {Name: "signup_date", Type: ingest.Date},
			{Name: "credit", Type: ingest.Integer}, {Name: "created_at", Type: ingest.Timestamptz}}},
		{Ref: "orders", Dataset: "Orders", System: true, Rank: 1, Columns: []Column{{Name: "id", Type: ingest.BigInt}, {Name: "customer_id", Type: ingest.BigInt},
			{Name: "amount", Type: ingest.Numeric}, {Name: "quantity", Type: ingest.Integer}, {Name: "channel", Type: ingest.Text, Values: []string{"web", "store", "phone"}},
			{Name: "category", Type: ingest.Text, Values: []string{"books", "games", "music", "toys"}}, {Name: "order_date", Type: ingest.Date},
			{Name: "created_at", Type: ingest.Timestamptz}}},
	}, Relations: []Relation{{From: "orders", FromColumn: "customer_id", To: "customers", ToColumn: "id"}}}
}

func evalHR() Schema {
	return Schema{Tables: []Table{
		{Ref: "departments", Dataset: "Departments", System: true, Columns: []Column{{Name: "id", Type: ingest.BigInt}, {Name: "name", Type: ingest.Text, Values: []string{"Engineering", "Sales", "Marketing", "Finance", "Legal"}},
			{Name: "location", Type: ingest.Text, Values: []string{"London", "Berlin", "Paris"}}, {Name: "budget", Type: ingest.Integer}, {Name: "created_at", Type: ingest.Timestamptz}}},
		{Ref: "employees", Dataset: "Employees", System: true, Rank: 1, Columns: []Column{{Name: "id", Type: ingest.BigInt}, {Name: "department_id", Type: ingest.BigInt},
			{Name: "full_name", Type: ingest.Text}, {Name: "job_title", Type: ingest.Text, Values: []string{"Engineer", "Manager", "Sales Rep", "Designer", "Accountant"}},
			{Name: "salary", Type: ingest.Integer}, {Name: "hire_date", Type: ingest.Date}, {Name: "is_remote", Type: ingest.Boolean},
			{Name: "level", Type: ingest.Text, Values: []string{"senior", "junior", "mid"}}, {Name: "created_at", Type: ingest.Timestamptz}}},
	}, Relations: []Relation{{From: "employees", FromColumn: "department_id", To: "departments", ToColumn: "id"}}}
}

func evalSchool() Schema {
	return Schema{Tables: []Table{
		{Ref: "students", Dataset: "Students", System: true, Columns: []Column{{Name: "id", Type: ingest.BigInt}, {Name: "name", Type: ingest.Text, Values: []string{"Ana", "Ben", "Cal", "Dia", "Eli"}},
			{Name: "grade", Type: ingest.Integer}, {Name: "is_scholarship", Type: ingest.Boolean}}},
		{Ref: "courses", Dataset: "Courses", System: true, Columns: []Column{{Name: "id", Type: ingest.BigInt}, {Name: "title", Type: ingest.Text, Values: []string{"Algebra", "Geometry", "Poetry", "Chemistry", "Latin"}},
			{Name: "subject", Type: ingest.Text, Values: []string{"Math", "English", "Science", "Languages"}}, {Name: "credits", Type: ingest.Integer}}},
		{Ref: "enrollments", Dataset: "Enrollments", System: true, Columns: []Column{{Name: "id", Type: ingest.BigInt}, {Name: "student_id", Type: ingest.BigInt},
			{Name: "course_id", Type: ingest.BigInt}, {Name: "score", Type: ingest.Integer}, {Name: "enrolled_on", Type: ingest.Date}}},
	}, Relations: []Relation{{From: "enrollments", FromColumn: "student_id", To: "students", ToColumn: "id"}, {From: "enrollments", FromColumn: "course_id", To: "courses", ToColumn: "id"}}}
}

func evalSensors() Schema {
	return Schema{Tables: []Table{
		{Ref: "sensors", Dataset: "Sensors", System: true, Columns: []Column{{Name: "id", Type: ingest.BigInt}, {Name: "label", Type: ingest.Text, Values: []string{"S-North", "S-South", "S-Roof", "S-Lab", "S-Spare"}},
			{Name: "location", Type: ingest.Text, Values: []string{"Warehouse", "Roof", "Lab"}}, {Name: "kind", Type: ingest.Text, Values: []string{"thermometer", "hygrometer"}}, {Name: "installed_on", Type: ingest.Date}, {Name: "created_at", Type: ingest.Timestamptz}}},
		{Ref: "readings", Dataset: "Readings", System: true, Columns: []Column{{Name: "id", Type: ingest.BigInt}, {Name: "sensor_id", Type: ingest.BigInt},
			{Name: "temperature", Type: ingest.Numeric}, {Name: "humidity", Type: ingest.Integer}, {Name: "battery", Type: ingest.Integer}, {Name: "recorded_at", Type: ingest.Timestamptz}, {Name: "is_alert", Type: ingest.Boolean}, {Name: "created_at", Type: ingest.Timestamptz}}},
	}, Relations: []Relation{{From: "readings", FromColumn: "sensor_id", To: "sensors", ToColumn: "id"}}}
}

// TestRefusalSuggestions: a refusal says what it did not understand and suggests what to
// ask instead; every suggestion that is a question (not a hint about a word) is one the
// engine answers on that schema.
func TestRefusalSuggestions(t *testing.T) {
	now := time.Date(2024, 6, 15, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		s         Schema
		questions []string
	}{
		{evalShop(), []string{"average weight of orders", "orders by colour", "how many customers have a pet", "customers with amount over 200",
			"average number of orders", "percentage of customers",
			"total amount per order", "what is the weather in Austin", "average amnt of orders by channel", "orders over 100 or 200",
			"top 5 customers by loyalty"}},
		{evalHR(), []string{"salary by department", "average age of employees", "departments with salary over 100000", "employees who like pizza",
			"budget per employee"}},
		{evalSensors(), []string{"humidity by sensor", "sensors by colour", "readings from Mars", "which sensor has the lowest battery",
			"number of readings per hour", "share of temperature"}},
		{evalSchool(), []string{"students by teacher", "average grade per subject", "average attendance per course"}},
	} {
		for _, q := range tc.questions {
			_, err := Translate(q, tc.s, now)
			var nu *NotUnderstood
			if !errors.As(err, &nu) {
				t.Errorf("%q: want a refusal, got %v", q, err)
				continue
			}
			if nu.Reason == "" || len(nu.Suggestions) == 0 {
				t.Errorf("%q: a refusal without reason or suggestions: %+v", q, nu)
			}
			for _, s := range nu.Suggestions {
				if strings.Contains(s, `"`) {
					continue // a hint about a word of the question
				}
				if _, err := Translate(s, tc.s, now); err != nil {
					t.Errorf("%q suggests %q, which is refused: %v", q, s, err)
				}
			}
		}
	}
}

// TestAggregateAliasApart: a grouped column named like the aggregate ("count") does not make
// ORDER BY "count" ambiguous.
func TestAggregateAliasApart(t *testing.T) {
	s := Schema{Tables: []Table{{Ref: "votes", Dataset: "Votes", Columns: []Column{
		{Name: "count", Type: ingest.Text, Values: []string{"first", "recount"}}, {Name: "region", Type: ingest.Text, Values: []string{"north", "south"}}}}}}
	a, err := Translate("which count has the most votes", s, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if want := `SELECT "votes"."count" AS "count", count(*) AS "count_value" FROM votes GROUP BY 1 ORDER BY "count_value" DESC NULLS LAST, 1 LIMIT 1`; a.SQL != want {
		t.Errorf("got  %s\nwant %s", a.SQL, want)
	}
}
