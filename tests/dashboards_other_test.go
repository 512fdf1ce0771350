package tests

import (
	"fmt"
	"math"
	"math/rand/v2"
	"net/url"
	"sort"
	"strings"
	"testing"
)

// TestDashboardOtherBucket: a generated breakdown of a long tail of categories puts the
// categories past the tenth in Other, and Other's number is computed from those rows — an
// average of their values, a total of their amounts — not by adding up the groups' numbers;
// checked against values computed here from the file.
func TestDashboardOtherBucket(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	own := bearer(e.ownerToken)
	r := rand.New(rand.NewPCG(21, 4))
	type line struct {
		shop      string
		unitPrice float64
		qty       int
	}
	var lines []line
	var b strings.Builder
	b.WriteString("line_no,shop,unit_price,quantity\n")
	for i := range 600 {
		shop := fmt.Sprintf("Shop %02d", int(math.Floor(math.Pow(r.Float64(), 2)*24))) // skewed: many of a few, few of many
		l := line{shop, float64(100+r.IntN(9000)) / 100, 1 + r.IntN(6)}
		lines = append(lines, l)
		fmt.Fprintf(&b, "L%04d,%s,%.2f,%d\n", 7000+i*7, l.shop, l.unitPrice, l.qty)
	}
	id := e.uploadAndCreate(e.ownerToken, "Order lines", "lines.csv", b.String())
	if d := e.waitDataset(e.ownerToken, id); d.str("status") != "active" {
		t.Fatalf("lines: %s", d.Body)
	}
	// What each tile of shop must show: the 10 largest by the tile's number, then Other.
	expect := func(value func(ls []line) float64) map[string]float64 {
		by := map[string][]line{}
		for _, l := range lines {
			by[l.shop] = append(by[l.shop], l)
		}
		var shops []string
		for s := range by {
			shops = append(shops, s)
		}
		sort.Slice(shops, func(i, j int) bool {
			vi, vj := value(by[shops[i]]), value(by[shops[j]])
			return vi > vj || vi == vj && shops[i] < shops[j]
		})
		out := map[string]float64{}
		var rest []line
		for i, s := range shops {
			if i < 10 {
				out[s] = value(by[s])
			} else {
				rest = append(rest, by[s]...)
			}
		}
		out["Other"] = value(rest)
		return out
	}
	avg := expect(func(ls []line) float64 {
		var s float64
		for _, l := range ls {
			s += l.unitPrice
		}
		return s / float64(len(ls))
	})
	total := expect(func(ls []line) float64 {
		var s float64
		for _, l := range ls {
			s += float64(l.qty)
		}
		return s
	})
	dsh := e.do("POST", "/api/v1/datasets/"+id+"/dashboard/generate?use_ai=false", nil, own).status(201).str("id")
	e.do("POST", "/api/v1/dashboards/"+dsh+"/refine", map[string]any{"user_prompt": "add a chart of average unit price by shop"}, own).status(200)
	e.do("POST", "/api/v1/dashboards/"+dsh+"/refine", map[string]any{"user_prompt": "add a chart of total quantity by shop"}, own).status(200)
	data := e.do("GET", "/api/v1/dashboards/"+dsh+"/data", nil, own).status(200)
	checked := map[string]bool{}
	for i := 0; i < data.len("tiles"); i++ {
		p := fmt.Sprintf("tiles.%d.", i)
		if data.str(p+"columns.0.name") != "shop" || data.len(p+"columns") != 2 {
			continue
		}
		col := data.str(p + "columns.1.name")
		want := map[string]map[string]float64{"average_unit_price": avg, "total_quantity": total}[col]
		if want == nil {
			continue
		}
		checked[col] = true
		if data.len(p+"rows") != 11 {
			t.Errorf("%s: %d rows, want the 10 largest and Other", col, data.len(p+"rows"))
		}
		for j := 0; j < data.len(p+"rows"); j++ {
			shop := data.str(fmt.Sprintf("%srows.%d.0", p, j))
			if w, known := want[shop]; !known || !near(data.get(fmt.Sprintf("%srows.%d.1", p, j)), w) {
				t.Errorf("%s of %s: %v, want %v", col, shop, data.get(fmt.Sprintf("%srows.%d.1", p, j)), want[shop])
			}
		}
	}
	if !checked["average_unit_price"] || !checked["total_quantity"] {
		t.Fatalf("tiles checked %v: %s", checked, data.Body)
	}
}

// TestRefinedTileTakesTheFilter: a tile refine adds takes the dashboard's category filter as
// the generated tiles do, and says so (filters_applied).
func TestRefinedTileTakesTheFilter(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	own := bearer(e.ownerToken)
	r := rand.New(rand.NewPCG(8, 3))
	want := map[string]map[string]float64{} // channel → depot → kilos
	var b strings.Builder
	b.WriteString("parcel_no,channel,depot,kilos\n")
	for i := range 300 {
		ch, depot, kg := []string{"courier", "locker", "counter"}[r.IntN(3)], fmt.Sprintf("Depot %d", r.IntN(5)), 1+r.IntN(30)
		if want[ch] == nil {
			want[ch] = map[string]float64{}
		}
		want[ch][depot] += float64(kg)
		fmt.Fprintf(&b, "P%05d,%s,%s,%d\n", 40000+i*3, ch, depot, kg)
	}
	id := e.uploadAndCreate(e.ownerToken, "Parcels", "parcels.csv", b.String())
	if d := e.waitDataset(e.ownerToken, id); d.str("status") != "active" {
		t.Fatalf("parcels: %s", d.Body)
	}
	d := e.do("POST", "/api/v1/datasets/"+id+"/dashboard/generate?use_ai=false", nil, own).status(201)
	filter := ""
	for i := 0; i < d.len("spec.filters"); i++ {
		if strings.HasSuffix(d.str(fmt.Sprintf("spec.filters.%d.column", i)), ".channel") {
			filter = d.str(fmt.Sprintf("spec.filters.%d.id", i))
		}
	}
	if filter == "" {
		t.Fatalf("no filter on channel: %s", d.Body)
	}
	e.do("POST", "/api/v1/dashboards/"+d.str("id")+"/refine", map[string]any{"user_prompt": "add a chart of total kilos by depot"}, own).status(200)
	data := e.do("GET", "/api/v1/dashboards/"+d.str("id")+"/data?filters="+url.QueryEscape(`{"`+filter+`":"locker"}`), nil, own).status(200)
	found := false
	for i := 0; i < data.len("tiles"); i++ {
		p := fmt.Sprintf("tiles.%d.", i)
		if data.str(p+"columns.0.name") != "depot" || data.str(p+"columns.1.name") != "total_kilos" {
			continue
		}
		found = true
		if !strings.Contains(fmt.Sprint(data.get(p+"filters_applied")), filter) {
			t.Errorf("the refined tile does not say it took the filter: %v", data.get(p+"filters_applied"))
		}
		for j := 0; j < data.len(p+"rows"); j++ {
			depot := data.str(fmt.Sprintf("%srows.%d.0", p, j))
			if got := data.get(fmt.Sprintf("%srows.%d.1", p, j)); got != want["locker"][depot] {
				t.Errorf("kilos of %s by locker: %v, want %v", depot, got, want["locker"][depot])
			}
		}
	}
	if !found {
		t.Fatalf("no refined tile: %s", data.Body)
	}
}
