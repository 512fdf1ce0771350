package nlsql

import (
	"strings"
	"testing"
	"time"

	"dataplatform/store/ingest"
)

// ferries is a shape with two named measures, as the schema API gives them to questions:
// takings = sum(fare), crossing = avg(docked_at − departed_at) in minutes.
func ferries() Schema {
	takings := ingest.Measure{Name: "takings", Aggregation: "sum", Column: "fare"}
	crossing := ingest.Measure{Name: "crossing", Aggregation: "avg", Column: "docked_at", Minus: "departed_at"}
	return Schema{Tables: []Table{{Ref: "sailings", Dataset: "Sailings", Columns: []Column{{Name: "sailing_no", Type: ingest.Text},
		{Name: "route", Type: ingest.Text, Values: []string{"North", "Harbour"}}, {Name: "fare", Type: ingest.Numeric},
		{Name: "departed_at", Type: ingest.Timestamptz}, {Name: "docked_at", Type: ingest.Timestamptz},
		{Name: "takings", Label: "takings", Type: ingest.Numeric, DefaultAgg: "sum", Role: takings.Role(), Measure: &takings},
		{Name: "crossing", Label: "crossing", Type: ingest.Numeric, DefaultAgg: "avg", Role: crossing.Role(), Measure: &crossing, MeasureOfTimes: true}}}}}
}

// TestNamedMeasures: a named measure is read by its name, combined as defined when the
// question does not say, and written as its value per row wherever the SQL needs it; a
// column named in the plural without a grouping is listed, not totalled.
func TestNamedMeasures(t *testing.T) {
	now := time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC)
	crossing := `(extract(epoch FROM ("sailings"."docked_at" - "sailings"."departed_at")) / 60)`
	for _, tc := range []struct{ q, sql string }{
		{"takings", `SELECT sum("sailings"."fare") AS "sum_takings" FROM sailings`},
		{"takings by route", `SELECT "sailings"."route" AS "route", sum("sailings"."fare") AS "sum_takings" FROM sailings GROUP BY 1 ORDER BY 1`},
		{"takings of North sailings", `SELECT sum("sailings"."fare") AS "sum_takings" FROM sailings WHERE "sailings"."route" = {{p1}}`},
		{"crossing per month", `SELECT date_trunc('month', "sailings"."departed_at")::date AS "month", avg(` + crossing + `) AS "avg_crossing" FROM sailings GROUP BY 1 ORDER BY 1`},
		{"the sailing with the longest crossing", `SELECT "sailings".* FROM sailings ORDER BY ` + crossing + ` DESC NULLS LAST LIMIT 1`},
		// a number named in the plural with nothing to group by: its values, listed, not a total
		{"what are the fares of North sailings", `SELECT "sailings".* FROM sailings WHERE "sailings"."route" = {{p1}} LIMIT 100`},
		{"sailings with a crossing above 90", `SELECT "sailings".* FROM sailings WHERE ` + crossing + ` > {{p1}} LIMIT 100`},
	} {
		a, err := Translate(tc.q, ferries(), now)
		if err != nil {
			t.Errorf("%q: %v", tc.q, err)
			continue
		}
		if strings.TrimSpace(a.SQL) != tc.sql {
			t.Errorf("%q:\n got %s\nwant %s", tc.q, a.SQL, tc.sql)
		}
	}
	// Without the table the plural asks for the set of values, which a listing of rows is
	// not: refused as before.
	if a, err := Translate("what are the fares", ferries(), now); err == nil {
		t.Errorf("what are the fares: %s", a.SQL)
	}
}
