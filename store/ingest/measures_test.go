package ingest

import (
	"strings"
	"testing"
)

func TestCheckMeasure(t *testing.T) {
	t.Parallel()
	cols := []Column{{Name: "fare", Type: Numeric}, {Name: "zone", Type: Text}, {Name: "boarded", Type: Timestamptz}, {Name: "alighted", Type: Timestamptz},
		{Name: "booked_on", Type: Date}, {Name: "travel_on", Type: Date}, {Name: "seats", Type: Integer,
			Semantics: &Semantics{Measures: []Measure{{Name: "seats_sold", Aggregation: "sum", Column: "seats"}}}}}
	for _, tc := range []struct {
		m     Measure
		field string // "" when it is accepted
	}{
		{Measure{Name: "takings", Aggregation: "sum", Column: "fare"}, ""},
		{Measure{Name: "ride_time", Aggregation: "avg", Column: "alighted", Minus: "boarded", Unit: "hours"}, ""},
		{Measure{Name: "lead_days", Aggregation: "max", Column: "travel_on", Minus: "booked_on"}, ""},
		{Measure{Name: "Takings", Aggregation: "sum", Column: "fare"}, "name"},
		{Measure{Name: "fare", Aggregation: "sum", Column: "fare"}, "name"},
		{Measure{Name: "seats_sold", Aggregation: "sum", Column: "fare"}, "name"},
		{Measure{Name: "count", Aggregation: "sum", Column: "fare"}, "name"},
		{Measure{Name: "takings", Aggregation: "median", Column: "fare"}, "aggregation"},
		{Measure{Name: "takings", Aggregation: "sum", Column: "zone"}, "column"},
		{Measure{Name: "takings", Aggregation: "sum", Column: "nope"}, "column"},
		{Measure{Name: "takings", Aggregation: "sum", Column: "fare", Unit: "hours"}, "unit"},
		{Measure{Name: "ride_time", Aggregation: "avg", Column: "alighted", Minus: "booked_on"}, "minus"},
		{Measure{Name: "ride_time", Aggregation: "avg", Column: "alighted", Minus: "boarded", Unit: "weeks"}, "unit"},
		{Measure{Name: "lead_days", Aggregation: "avg", Column: "travel_on", Minus: "booked_on", Unit: "hours"}, "unit"},
	} {
		err := CheckMeasure(tc.m, cols)
		me, _ := err.(*MeasureError)
		if tc.field == "" && err != nil || tc.field != "" && (me == nil || me.Field != tc.field) {
			t.Errorf("%+v: %v, want a refusal of %q", tc.m, err, tc.field)
		}
	}
	if got := MeasureValue(Measure{Name: "ride_time", Aggregation: "avg", Column: "alighted", Minus: "boarded", Unit: "hours"}, true, `"t".`); got != `(extract(epoch FROM ("t"."alighted" - "t"."boarded")) / 3600)` {
		t.Errorf("ride time: %s", got)
	}
	if got := MeasureValue(Measure{Column: "travel_on", Minus: "booked_on"}, false, ""); got != `("travel_on" - "booked_on")` {
		t.Errorf("lead days: %s", got)
	}
	if ms := Measures(cols); len(ms) != 1 || MeasureExpression(ms[0]) != "sum(seats)" || !strings.Contains(MeasureUnit(Measure{Column: "alighted", Minus: "boarded"}, cols), "minutes") {
		t.Errorf("measures %+v", ms)
	}
}
