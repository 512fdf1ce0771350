package dashboards

import (
	"encoding/json"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"dataplatform/store/ingest"
)

func raw(v any) json.RawMessage { b, _ := json.Marshal(v); return b }

func TestRoles(t *testing.T) {
	rows := int64(1000)
	for _, c := range []struct {
		col  Column
		want string
	}{
		{Column{Name: "order_id", Type: ingest.BigInt, Distinct: 1000}, roleKey},
		{Column{Name: "CustomerID", Type: ingest.Integer, Distinct: 50}, roleKey},
		{Column{Name: "zip", Type: ingest.Integer, Distinct: 300}, roleKey},
		{Column{Name: "postal_code", Type: ingest.Text, Distinct: 30}, roleKey},
		{Column{Name: "ref", Type: ingest.Integer, Distinct: 1000}, roleKey}, // unique integers identify
		{Column{Name: "fiscal_year", Type: ingest.Integer, Distinct: 3, Min: raw(2021), Max: raw(2023)}, roleOther},
		{Column{Name: "season", Type: ingest.Integer, Distinct: 20, Min: raw(1990), Max: raw(2010)}, roleOther}, // year-like values
		{Column{Name: "month", Type: ingest.Integer, Distinct: 12, Min: raw(1), Max: raw(12)}, roleOther},
		{Column{Name: "amount", Type: ingest.Numeric, Distinct: 800, Min: raw("1.5"), Max: raw("990")}, roleMeasure},
		{Column{Name: "quantity", Type: ingest.Integer, Distinct: 1000, Min: raw(1), Max: raw(1000)}, roleMeasure}, // a measure word
		{Column{Name: "constant", Type: ingest.Integer, Distinct: 1}, roleOther},
		{Column{Name: "status", Type: ingest.Text, Distinct: 4}, roleCategory},
		{Column{Name: "email", Type: ingest.Text, Distinct: 990}, roleOther},
		{Column{Name: "name", Type: ingest.Text, Distinct: 1000}, roleOther}, // every row its own
		{Column{Name: "paid", Type: ingest.Boolean, Distinct: 2}, roleBoolean},
		{Column{Name: "order_date", Type: ingest.Date, Distinct: 300, Min: raw("2023-01-01"), Max: raw("2024-06-30")}, roleTime},
		{Column{Name: "birth_date", Type: ingest.Date, Distinct: 300, Min: raw("1950-01-01"), Max: raw("2004-06-30")}, roleOther},
		{Column{Name: "signup", Type: ingest.Timestamptz, Distinct: 1, Min: raw("2023-01-01T00:00:00Z"), Max: raw("2023-01-01T00:00:00Z")}, roleOther},
	} {
		if got := role(c.col, rows); got != c.want {
			t.Errorf("%s: %s, want %s", c.col.Name, got, c.want)
		}
	}
}

func TestGrain(t *testing.T) {
	day := 24 * time.Hour
	for span, want := range map[time.Duration]string{2 * day: "hour", 60 * day: "day", 400 * day: "week", 5 * 365 * day: "month",
		20 * 365 * day: "quarter", 60 * 365 * day: "year"} {
		if got := Grain(span); got != want {
			t.Errorf("%v: %s, want %s", span, got, want)
		}
	}
}

func TestParseTimeRange(t *testing.T) {
	now := time.Date(2024, 3, 15, 13, 0, 0, 0, time.UTC)
	day := func(s string) string { return s }
	for in, want := range map[string][2]string{
		"all":                         {"", ""},
		"last_7_days":                 {day("2024-03-09T00:00:00Z"), ""},
		"last_3_months":               {day("2023-12-16T00:00:00Z"), ""},
		"this_year":                   {day("2024-01-01T00:00:00Z"), ""},
		"2024-01-01..2024-01-31":      {day("2024-01-01T00:00:00Z"), "2024-02-01T00:00:00Z"},
		"..2024-01-31":                {"", "2024-02-01T00:00:00Z"},
		"2024-01-01T10:00:00+02:00..": {"2024-01-01T08:00:00Z", ""},
	} {
		from, to, err := ParseTimeRange(in, now)
		if err != nil {
			t.Fatalf("%s: %v", in, err)
		}
		f, u := "", ""
		if from != nil {
			f = from.Format(time.RFC3339)
		}
		if to != nil {
			u = to.Format(time.RFC3339)
		}
		if f != want[0] || u != want[1] {
			t.Errorf("%s: [%s, %s), want [%s, %s)", in, f, u, want[0], want[1])
		}
	}
	for _, bad := range []string{"yesterday", "last_0_days", "2024-02-01..2024-01-01", "2024-13-01..", "last_days"} {
		if _, _, err := ParseTimeRange(bad, now); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
}

func TestCheck(t *testing.T) {
	s := Spec{Version: 1, Title: "x", TimeRange: &TimeRange{Default: "soon"}, Filters: []Filter{{ID: "a", Parameter: "time_from"}, {ID: "a", Parameter: "p"}},
		Rows: []Row{{Items: []Tile{
			{ID: "k", Title: "K", Type: "kpi", Width: 8, Query: Query{SQL: "SELECT 1"}},
			{ID: "k", Title: "B", Type: "bar", Width: 6, Encoding: Encoding{X: "x"}, Query: Query{SQL: "SELECT 1", Parameters: map[string]any{"time_to": 1}}},
		}}}}
	var got []string
	for _, p := range s.Check("spec.") {
		got = append(got, p.Field+" "+p.Code)
	}
	want := "spec.rows.0.items.0.encoding.value required,spec.rows.0.items.1.id duplicate,spec.rows.0.items.1.encoding.y required," +
		"spec.rows.0.items.1.query.parameters.time_to reserved,spec.rows.0 maximum,spec.filters.0.parameter duplicate,spec.filters.1.id duplicate," +
		"spec.time_range.default invalid_format"
	if strings.Join(got, ",") != want {
		t.Fatalf("problems:\n%s\nwant\n%s", strings.Join(got, ","), want)
	}
}

func TestUses(t *testing.T) {
	if !Uses("WHERE x = {{ f_region }}", "f_region") || Uses("WHERE x = {{f_regions}}", "f_region") || Uses("{{", "a") {
		t.Fatal("Uses")
	}
}

// ordersInput is one source like the end-to-end fixture's orders.
func ordersInput() Input {
	return Input{Title: "Orders", Filter: true, Sources: []Source{{Ref: "orders", ID: "ds_o", Label: "Orders", Rows: 240, Columns: []Column{
		{Name: "order_id", Type: ingest.Integer, Distinct: 240, Min: raw(1001), Max: raw(1240)},
		{Name: "customer_id", Type: ingest.Integer, Distinct: 30, Key: true},
		{Name: "order_date", Type: ingest.Date, Distinct: 240, Min: raw("2023-01-04"), Max: raw("2024-12-24")},
		{Name: "amount", Type: ingest.Numeric, Distinct: 50, Min: raw("10"), Max: raw("132.5")},
		{Name: "status", Type: ingest.Text, Distinct: 4},
		{Name: "region", Type: ingest.Text, Distinct: 5, Values: []any{"North", "South"}},
	}}}}
}

func TestProposeAndLayout(t *testing.T) {
	cands, filters := Propose(ordersInput())
	refused := make([]bool, len(cands))
	var picked []Candidate
	for _, i := range Wanted(cands, refused) {
		picked = append(picked, cands[i])
	}
	s := Layout("Orders", "", picked, filters)
	if p := s.Check(""); len(p) > 0 {
		t.Fatalf("the layout's spec has problems: %v", p)
	}
	ids := map[string]bool{}
	for _, pt := range s.Tiles() {
		ids[pt.Tile.ID] = true
		if strings.Contains(pt.Tile.Query.SQL, `sum("order_id")`) || strings.Contains(pt.Tile.Query.SQL, `sum("customer_id")`) {
			t.Errorf("%s sums a key", pt.Tile.ID)
		}
	}
	for _, want := range []string{"record_count", "sum_amount", "count_per_week", "count_by_region", "total_amount_by_status", "distribution_amount", "latest_records"} {
		if !ids[want] {
			t.Errorf("no %s in %v", want, ids)
		}
	}
	if s.Rows[0].Items[0].Type != "kpi" || s.Rows[len(s.Rows)-1].Items[0].Type != "table" || len(s.Filters) != 1 || s.Filters[0].Parameter != "f_region" {
		t.Fatalf("layout: %+v", s)
	}
	// A refused tile gives its place to the next of its group.
	first := Wanted(cands, refused)
	refused[first[0]] = true
	again := Wanted(cands, refused)
	if slices.Contains(again, first[0]) || len(again) < len(first)-1 {
		t.Fatalf("refusing %d: %v then %v", first[0], first, again)
	}
}

func TestRefine(t *testing.T) {
	base := func() *Spec {
		cands, filters := Propose(ordersInput())
		var picked []Candidate
		for _, i := range Wanted(cands, make([]bool, len(cands))) {
			picked = append(picked, cands[i])
		}
		s := Layout("Orders", "", picked, filters)
		return &s
	}
	path := func(s *Spec, id string) string {
		for _, pt := range s.Tiles() {
			if pt.Tile.ID == id {
				return pt.Path
			}
		}
		return ""
	}
	s := base()
	if _, err := Refine(s, "add a chart of total amount by region", "dashboard", "", ordersInput()); err != nil {
		t.Fatal(err)
	}
	if path(s, "total_amount_by_region_2") == "" {
		t.Fatalf("no new tile: %v", s.Tiles())
	}
	s = base()
	n := len(s.Tiles())
	if _, err := Refine(s, "Remove the Latest Orders tile.", "dashboard", "", ordersInput()); err != nil || len(s.Tiles()) != n-1 {
		t.Fatalf("remove: %v", err)
	}
	s = base()
	p := path(s, "count_by_status")
	if _, err := Refine(s, "turn it into a bar chart", "tile", p, ordersInput()); err != nil || s.Tile(p).Type != "bar" || s.Tile(p).Encoding.Y[0] != "count" {
		t.Fatalf("type: %v %+v", err, s.Tile(p))
	}
	p = path(s, "record_count")
	if _, err := Refine(s, "make it a pie chart", "tile", p, ordersInput()); err == nil {
		t.Fatal("a KPI became a pie")
	}
	// On the whole dashboard a chart-type edit applies to the one tile its words describe, and
	// asks back naming each when several fit.
	s = base()
	p = path(s, "total_amount_by_region")
	if _, err := Refine(s, "Make the amounts by region chart a pie chart", "dashboard", "", ordersInput()); err != nil || s.Tile(p).Type != "pie" {
		t.Fatalf("the amount by region chart: %v %+v", err, s.Tile(p))
	}
	s = base()
	before, _ := json.Marshal(s)
	_, err := Refine(s, "make the region chart a pie chart", "dashboard", "", ordersInput())
	var nu *NotUnderstood
	if after, _ := json.Marshal(s); !asNotUnderstood(err, &nu) || len(nu.Suggestions) != 2 || string(before) != string(after) ||
		!strings.Contains(nu.Reason, s.Tile(path(s, "count_by_region")).Title) || !strings.Contains(nu.Reason, s.Tile(p).Title) {
		t.Fatalf("two tiles are about region: %v %+v", err, nu)
	}
	if _, err := Refine(s, "remove the count by region chart", "dashboard", "", ordersInput()); err != nil || path(s, "count_by_region") != "" || path(s, "total_amount_by_region") == "" {
		t.Fatalf("remove by description: %v", err)
	}
	for _, bad := range []string{"make it sparkle", "add a chart of status by region", "make the weather chart a pie chart", "show the top 0", "sort", "add a filter on nothing"} {
		s := base()
		before, _ := json.Marshal(s)
		_, err := Refine(s, bad, "dashboard", "", ordersInput())
		var nu *NotUnderstood
		after, _ := json.Marshal(s)
		if err == nil || !asNotUnderstood(err, &nu) || len(nu.Suggestions) == 0 || string(before) != string(after) {
			t.Errorf("%q: %v (changed: %v)", bad, err, string(before) != string(after))
		}
	}
}

func asNotUnderstood(err error, nu **NotUnderstood) bool {
	x, ok := err.(*NotUnderstood)
	*nu = x
	return ok
}

// TestTileTypesAgree: the tile types of TileTypes are the description's enum, and the
// dashboard page draws each of them: one vocabulary, checked where it is copied.
func TestTileTypesAgree(t *testing.T) {
	desc, err := os.ReadFile("../../openapi/dashboards.yaml")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^\s+type: \{type: string, enum: \[(kpi[^\]]*)\]\}`).FindSubmatch(desc)
	if m == nil {
		t.Fatal("openapi/dashboards.yaml: the Tile schema's type enum is not where it was")
	}
	if enum := strings.Split(strings.ReplaceAll(string(m[1]), " ", ""), ","); !slices.Equal(enum, TileTypes) {
		t.Errorf("the description's tile types %v, the code's %v", enum, TileTypes)
	}
	page, err := os.ReadFile("../../templates/docs/dashboard.js")
	if err != nil {
		t.Fatal(err)
	}
	for _, typ := range TileTypes {
		if !strings.Contains(string(page), "'"+typ+"'") {
			t.Errorf("the dashboard page does not draw %s tiles", typ)
		}
	}
}

func TestPartialPeriod(t *testing.T) {
	series := func(grain string) *Tile {
		return &Tile{Type: "line", Encoding: Encoding{X: "period", Y: []string{"n"}, TimeGrain: grain, Latest: "latest"}}
	}
	cols := []string{"period", "n", "latest"}
	for _, c := range []struct {
		grain, start, latest string
		partial              bool
	}{
		{"month", "2024-12-01T00:00:00Z", "2024-12-24", true},
		{"month", "2024-12-01T00:00:00Z", "2024-12-31", false},
		{"month", "2024-02-01T00:00:00Z", "2024-02-29", false},
		{"month", "2024-12-01T00:00:00Z", "2024-12-31T08:00:00Z", false},
		{"month", "2024-12-01T00:00:00Z", "2024-12-30T23:59:00Z", true},
		{"quarter", "2024-07-01T00:00:00Z", "2024-09-01", true},
		{"week", "2024-12-23T00:00:00Z", "2024-12-29", false},
		{"week", "2024-12-23T00:00:00Z", "2024-12-28", true},
		{"day", "2024-12-23T00:00:00Z", "2024-12-23", false},
		{"day", "2024-12-23T00:00:00Z", "2024-12-23T13:00:00Z", true},
		{"hour", "2024-12-23T10:00:00Z", "2024-12-23T10:59:30Z", false},
		{"year", "2024-01-01T00:00:00Z", "2024-06-30", true},
	} {
		got := PartialPeriod(series(c.grain), cols, [][]any{{"2024-01-01T00:00:00Z", 3, "2024-01-31"}, {c.start, 1, c.latest}})
		if (got != nil) != c.partial || got != nil && got != c.start {
			t.Errorf("%s from %s, data to %s: partial %v, want %v", c.grain, c.start, c.latest, got, c.partial)
		}
	}
	if PartialPeriod(&Tile{Encoding: Encoding{X: "period", TimeGrain: "month"}}, cols, [][]any{{"2024-12-01T00:00:00Z", 1, "2024-12-02"}}) != nil {
		t.Error("a series without latest has no partial period")
	}
}
