package nlsql

import (
	"strings"
	"testing"
	"time"

	"dataplatform/store/ingest"
)

// depotTrips is a shape with two relationships from one table to another: each trip leaves
// from one depot and arrives at another.
func depotTrips() Schema {
	return Schema{Tables: []Table{
		{Ref: "depots", Dataset: "Depots", Columns: []Column{{Name: "depot_code", Type: ingest.Text}, {Name: "depot_name", Type: ingest.Text},
			{Name: "district", Type: ingest.Text, Values: []string{"Riverside", "Hilltop"}}}},
		{Ref: "trips", Dataset: "Trips", Columns: []Column{{Name: "trip_no", Type: ingest.Text}, {Name: "origin_depot", Type: ingest.Text},
			{Name: "destination_depot", Type: ingest.Text}, {Name: "fare", Type: ingest.Numeric}}},
	}, Relations: []Relation{{From: "trips", FromColumn: "origin_depot", To: "depots", ToColumn: "depot_code"},
		{From: "trips", FromColumn: "destination_depot", To: "depots", ToColumn: "depot_code"}}}
}

// TestTwoRelationshipsToOneTable: a question that needs the two tables together and does not
// say which relationship is refused naming both, each offered as a question that is answered
// along its own column; a question that names one is answered along it.
func TestTwoRelationshipsToOneTable(t *testing.T) {
	now := time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC)
	for _, q := range []string{"how many trips in Riverside", "number of trips per depot", "which depot has the most trips"} {
		a, err := Translate(q, depotTrips(), now)
		nu, ok := err.(*NotUnderstood)
		if !ok || !strings.Contains(nu.Reason, "origin_depot, destination_depot") {
			t.Fatalf("%q: want a refusal naming both, got %+v %v", q, a, err)
		}
		joined := map[string]bool{}
		for _, s := range nu.Suggestions {
			a, err := Translate(s, depotTrips(), now)
			if err != nil {
				continue
			}
			for _, col := range []string{"origin_depot", "destination_depot"} {
				if strings.Contains(a.SQL, `"trips"."`+col+`" = `) || strings.Contains(a.SQL, `= "trips"."`+col+`"`) {
					joined[col] = true
				}
			}
		}
		if len(joined) != 2 {
			t.Errorf("%q: suggestions %q answer along %v, want along each relationship", q, nu.Suggestions, joined)
		}
	}
	a, err := Translate("how many trips with destination depot in Hilltop", depotTrips(), now)
	if err != nil || !strings.Contains(a.SQL, `"destination_depot"`) || strings.Contains(a.SQL, `"origin_depot"`) {
		t.Fatalf("named relationship: %+v %v", a, err)
	}
}
