package tests

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// TestNamedMeasures: a dataset's named measures (a total and a duration) are defined through
// the schema API, listed by the schema, and give the same numbers — computed here from the
// rows, not by the service — in the record aggregate API, in plain English and in a tile
// refine adds; a measure that cannot be defined, or a column one is built on, is refused
// with nothing changed.
func TestNamedMeasures(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	own := bearer(e.ownerToken)
	r := rand.New(rand.NewPCG(5, 9))
	routes := []string{"North", "Harbour", "Islands"}
	takings, minutes, sailings := map[string]float64{}, map[string]float64{}, map[string]int{}
	var b strings.Builder
	b.WriteString("sailing_no,route,fare,departed_at,docked_at\n")
	start := time.Date(2025, 6, 1, 6, 0, 0, 0, time.UTC)
	for i, k := range r.Perm(240) {
		route := routes[r.IntN(len(routes))]
		fare := float64(300+r.IntN(4000)) / 100
		dep := start.Add(time.Duration(k) * 97 * time.Minute)
		dur := 20 + r.IntN(100)
		takings[route] += fare
		minutes[route] += float64(dur)
		sailings[route]++
		fmt.Fprintf(&b, "S-%04d,%s,%.2f,%s,%s\n", 5000+i*3, route, fare, dep.Format(time.RFC3339), dep.Add(time.Duration(dur)*time.Minute).Format(time.RFC3339))
	}
	id := e.uploadAndCreate(e.ownerToken, "Sailings", "sailings.csv", b.String())
	if d := e.waitDataset(e.ownerToken, id); d.str("status") != "active" {
		t.Fatalf("sailings: %s", d.Body)
	}
	schema := "/api/v1/datasets/" + id + "/schema"
	change := func(chs ...map[string]any) *resp { return e.do("PUT", schema, map[string]any{"changes": chs}, own) }
	version := e.do("GET", "/api/v1/projects/"+e.projectID+"/datasets/"+id+"/schema", nil, own).status(200).num("schema_version")

	// Refused, each naming its field; nothing changes.
	for field, m := range map[string]map[string]any{
		"body.changes[0].measure.name":        {"name": "fare", "aggregation": "sum", "column": "fare"},
		"body.changes[0].measure.column":      {"name": "takings", "aggregation": "sum", "column": "route"},
		"body.changes[0].measure.minus":       {"name": "crossing", "aggregation": "avg", "column": "docked_at", "minus": "fare"},
		"body.changes[0].measure.aggregation": {"name": "takings", "column": "fare"},
	} {
		change(map[string]any{"op": "add_measure", "measure": m}).apiError(400, "VALIDATION_ERROR", field)
	}
	change(map[string]any{"op": "drop_measure", "measure": map[string]any{"name": "takings"}}).apiError(400, "VALIDATION_ERROR", "body.changes[0].measure.name")

	change(map[string]any{"op": "add_measure", "measure": map[string]any{"name": "takings", "aggregation": "sum", "column": "fare"}},
		map[string]any{"op": "add_measure", "measure": map[string]any{"name": "crossing", "aggregation": "avg", "column": "docked_at", "minus": "departed_at"}}).status(200)
	s := e.do("GET", "/api/v1/projects/"+e.projectID+"/datasets/"+id+"/schema", nil, own).status(200)
	if s.num("schema_version") != version+1 || s.str("measures.0.expression") != "sum(fare)" || s.str("measures.1.expression") != "avg(docked_at - departed_at)" ||
		s.str("measures.1.unit") != "minutes" {
		t.Fatalf("measures: %s", s.Body)
	}
	// A column a measure is built on stays; renamed, the measure follows it.
	change(map[string]any{"op": "drop_column", "column": "departed_at"}).apiError(400, "VALIDATION_ERROR", "body.changes[0].column")
	change(map[string]any{"op": "rename_column", "column": "fare", "new_name": "ticket_price"}).status(200)
	if s := e.do("GET", "/api/v1/projects/"+e.projectID+"/datasets/"+id+"/schema", nil, own).status(200); s.str("measures.0.expression") != "sum(ticket_price)" {
		t.Fatalf("after a rename: %s", s.Body)
	}

	// The record aggregate API takes them by name.
	a := e.do("GET", "/api/v1/datasets/"+id+"/data/aggregate?group_by=route&agg=takings,crossing,count", nil, own).status(200)
	if a.len("data") != len(routes) {
		t.Fatalf("aggregate: %s", a.Body)
	}
	for i := 0; i < a.len("data"); i++ {
		route := a.str(fmt.Sprintf("data.%d.route", i))
		if !near(a.get(fmt.Sprintf("data.%d.takings", i)), takings[route]) || !near(a.get(fmt.Sprintf("data.%d.crossing", i)), minutes[route]/float64(sailings[route])) {
			t.Errorf("aggregate of %s: %s", route, a.Body)
		}
	}
	// Plain English reads them by name.
	q := e.do("POST", "/api/v1/projects/"+e.projectID+"/queries/execute", map[string]any{"query": "takings by route"}, own).status(200)
	if q.len("results.rows") != len(routes) {
		t.Fatalf("takings by route: %s", q.Body)
	}
	for i := 0; i < q.len("results.rows"); i++ {
		route := q.str(fmt.Sprintf("results.rows.%d.0", i))
		if !near(q.get(fmt.Sprintf("results.rows.%d.1", i)), takings[route]) {
			t.Errorf("takings of %s: %s", route, q.Body)
		}
	}
	// Refine charts one by name: the new tile's numbers are the rows'.
	dsh := e.do("POST", "/api/v1/datasets/"+id+"/dashboard/generate?use_ai=false", nil, own).status(201).str("id")
	rf := e.do("POST", "/api/v1/dashboards/"+dsh+"/refine", map[string]any{"user_prompt": "add a chart of crossing by route"}, own).status(200)
	if !strings.Contains(rf.str("changes.0"), "rossing") {
		t.Fatalf("refine: %s", rf.Body)
	}
	data := e.do("GET", "/api/v1/dashboards/"+dsh+"/data", nil, own).status(200)
	found := false
	for i := 0; i < data.len("tiles"); i++ {
		p := fmt.Sprintf("tiles.%d.", i)
		if data.len(p+"columns") != 2 || !strings.Contains(data.str(p+"columns.1.name"), "crossing") {
			continue
		}
		found = true
		for j := 0; j < data.len(p+"rows"); j++ {
			route := data.str(fmt.Sprintf("%srows.%d.0", p, j))
			if !near(data.get(fmt.Sprintf("%srows.%d.1", p, j)), minutes[route]/float64(sailings[route])) {
				t.Errorf("tile's crossing of %s: %s", route, data.Body)
			}
		}
	}
	if !found {
		t.Fatalf("no tile of crossing by route: %s", data.Body)
	}
}

// near reports whether a JSON number is want, to a millionth of it (numbers the service
// rounds to 6 decimals, or adds up in another order).
func near(got any, want float64) bool {
	f, ok := got.(float64)
	return ok && math.Abs(f-want) < 1e-6*math.Max(1, math.Abs(want))
}
