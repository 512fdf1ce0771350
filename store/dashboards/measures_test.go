package dashboards

import (
	"fmt"
	"strings"
	"testing"

	"dataplatform/store/ingest"
)

// TestMeasureAggregates: a unit price or a rate is averaged, never totalled; a column named
// total is not titled "Total total"; what the owner set as the default aggregation wins; a
// mostly empty text column is no category.
func TestMeasureAggregates(t *testing.T) {
	for _, tc := range []struct {
		c         Column
		fn, title string
	}{
		{Column{Name: "unit_price", Type: ingest.Numeric}, "avg", "Average unit price"},
		{Column{Name: "copay_rate", Type: ingest.Numeric}, "avg", "Average copay rate"},
		{Column{Name: "total", Type: ingest.Numeric}, "sum", "Total"},
		{Column{Name: "amount", Type: ingest.Numeric}, "sum", "Total amount"},
		{Column{Name: "amount", Type: ingest.Numeric, DefaultAgg: "max"}, "max", "Highest amount"},
		{Column{Name: "score", Type: ingest.Numeric, DefaultAgg: "sum"}, "sum", "Total score"},
	} {
		if fn, title, _ := aggregate(tc.c); fn != tc.fn || title != tc.title {
			t.Errorf("%s: got %s %q, want %s %q", tc.c.Name, fn, title, tc.fn, tc.title)
		}
	}
	notes := Column{Name: "notes", Type: ingest.Text, Distinct: 3, Nulls: 836}
	if r := role(notes, 1000); r == roleCategory {
		t.Errorf("a text column empty in 84%% of rows is a category")
	}
	if r := role(Column{Name: "code", Type: ingest.Integer, Distinct: 20, DefaultAgg: "none"}, 1000); r == roleMeasure {
		t.Errorf("a number its owner said does not combine is a measure")
	}
}

// TestMeasureAggregatesByRole: tiles total a rental's price (an amount: nothing beside it
// counts units) and average a price beside a quantity (per unit); a role set by a person wins.
func TestMeasureAggregatesByRole(t *testing.T) {
	kpis := func(cols ...Column) map[string]string {
		out := map[string]string{}
		cands, _ := Propose(Input{Sources: []Source{{Ref: "s", Label: "Things", Rows: 100, Columns: cols}}})
		for _, c := range cands {
			if c.Group == "kpi" {
				out[c.Tile.ID] = c.Tile.Title
			}
		}
		return out
	}
	price := Column{Name: "price", Type: ingest.Numeric, Distinct: 40, Min: raw(2), Max: raw(90)}
	qty := Column{Name: "quantity", Type: ingest.Integer, Distinct: 9, Min: raw(1), Max: raw(9)}
	if k := kpis(price); k["sum_price"] != "Total price" {
		t.Errorf("a price with no quantity beside it: %v", k)
	}
	if k := kpis(price, qty); k["avg_price"] != "Average price" || k["sum_quantity"] != "Total quantity" || k["sum_price"] != "" {
		t.Errorf("a price beside a quantity: %v", k)
	}
	set := price
	set.Role = ingest.RoleValue
	if k := kpis(set); k["avg_price"] != "Average price" {
		t.Errorf("a price set as a value: %v", k)
	}
}

// TestTilesNameTheRoleTheyJoinBy: with two relationships from trips to depots (origin and
// destination), each breakdown by a depot's category names the role it joined by, on its own
// tile; with one, the tile is named after the dataset.
func TestTilesNameTheRoleTheyJoinBy(t *testing.T) {
	depots := Source{Ref: "depots", Label: "Depots", Rows: 6, Columns: []Column{{Name: "depot_code", Type: ingest.Text, Key: true, Distinct: 6},
		{Name: "district", Type: ingest.Text, Distinct: 3, Values: []any{"Hill", "Port", "Mill"}}}}
	trips := Source{Ref: "trips", Label: "Trips", Rows: 300, Columns: []Column{{Name: "trip_no", Type: ingest.Text, Key: true, Distinct: 300},
		{Name: "origin_depot", Type: ingest.Text, Distinct: 6}, {Name: "destination_depot", Type: ingest.Text, Distinct: 6},
		{Name: "fare", Type: ingest.Numeric, Distinct: 120, Min: raw(2), Max: raw(40)}}}
	titles := func(rels ...Relation) map[string]string {
		out := map[string]string{}
		cands, _ := Propose(Input{Sources: []Source{trips, depots}, Relations: rels})
		for _, c := range cands {
			if strings.Contains(c.Tile.Title, "district") {
				if _, dup := out[c.Tile.ID]; dup {
					t.Errorf("two tiles %s", c.Tile.ID)
				}
				out[c.Tile.ID] = c.Tile.Title
			}
		}
		return out
	}
	origin := Relation{From: "trips", FromColumn: "origin_depot", To: "depots", ToColumn: "depot_code"}
	dest := Relation{From: "trips", FromColumn: "destination_depot", To: "depots", ToColumn: "depot_code"}
	got := titles(origin, dest)
	want := map[string]string{"trips_by_origin_depot_district": "Trips by origin depot district", "trips_by_destination_depot_district": "Trips by destination depot district",
		"total_fare_by_origin_depot_district": "Total fare by origin depot district", "total_fare_by_destination_depot_district": "Total fare by destination depot district",
		"depots_count_by_district": "Depots by district"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("two roles: %v, want %v", got, want)
	}
	if got := titles(origin); got["trips_by_depots_district"] != "Trips by depot district" {
		t.Errorf("one relationship: %v", got)
	}
}
