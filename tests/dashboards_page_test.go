package tests

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"image/png"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestDashboardPageInBrowser: a person signs in from the dashboard page's redirect and sees
// every tile drawn with data (ECharts on canvas, numbers, a table), without console errors or
// CSP refusals; picking a filter draws again. A screenshot of the page is taken and checked
// to hold a drawn page (kept in $DP_SCREENSHOT_DIR when set).
func TestDashboardPageInBrowser(t *testing.T) {
	t.Parallel()
	f := newDashboardFixture(t)
	e, own := f.env, bearer(f.ownerToken)
	r := e.do("POST", "/api/v1/datasets/"+f.orders+"/dashboard/generate?use_ai=false", nil, own).status(201)
	id := r.str("id")
	page := "/dashboards/" + id
	// Without credentials a browser goes to sign in; a program gets the dashboard error shape.
	e.do("GET", page, nil, header{"Accept": "text/html"}).status(303)
	e.do("GET", page, nil).dashError(401, "auth_required")
	e.do("GET", "/dashboards/dsh_nosuchdashboard", nil, own).dashError(404, "not_found")
	email, _ := e.member(e.orgID, "viewer")

	b := newBrowser(t)
	b.call(b.session, "Emulation.setDeviceMetricsOverride", map[string]any{"width": 1280, "height": 2400, "deviceScaleFactor": 1, "mobile": false}, nil)
	b.open(e.ts.URL + page)
	b.waitFor("the sign-in page", `location.pathname === "/sign-in" && document.readyState === "complete"`)
	if _, err := b.eval(fmt.Sprintf(`(function () { document.getElementById("email").value = %q; document.getElementById("password").value = "password-viewer";
		document.getElementById("sign-in").requestSubmit(); return true; })()`, email)); err != nil {
		t.Fatal(err)
	}
	b.waitFor("the dashboard, drawn", `location.pathname === "`+page+`" && document.body.getAttribute("data-ready") === "true"`)
	tileCount := len(tiles(r))
	drawn, err := b.eval(`(function () {
  var boxes = document.querySelectorAll("section.tile");
  var out = {tiles: boxes.length, drawn: 0, canvases: 0, problems: [], kpis: []};
  boxes.forEach(function (b) {
    if (b.getAttribute("data-drawn") === "true") out.drawn++;
    if (b.querySelector("canvas")) out.canvases++;
    var p = b.querySelector(".problem"); if (p) out.problems.push(p.textContent);
    var k = b.querySelector(".kpi"); if (k) out.kpis.push(b.querySelector("h2").textContent + "=" + k.textContent);
  });
  out.rows = document.querySelectorAll("section.tile table tr").length;
  out.title = document.getElementById("title").textContent;
  return out;
})()`)
	if err != nil {
		t.Fatal(err)
	}
	got := drawn.(map[string]any)
	charts := 0
	for _, tile := range tiles(r) {
		if tile["type"] != "kpi" && tile["type"] != "table" {
			charts++
		}
	}
	if got["tiles"] != float64(tileCount) || got["drawn"] != float64(tileCount) || got["canvases"] != float64(charts) || len(got["problems"].([]any)) != 0 ||
		got["rows"] != float64(11) || got["title"] != "Orders" || !strings.Contains(fmt.Sprint(got["kpis"]), "Number of Orders=240") {
		t.Fatalf("drawn: %v (want %d tiles, %d charts)", got, tileCount, charts)
	}
	// A time series whose last period the data stops in says so under the chart.
	var lastDay time.Time
	for _, o := range f.rows {
		lastDay = later(lastDay, o.date)
	}
	partial := lastDay.Weekday() != time.Sunday // weekly series: a week ends on a Sunday
	if v, err := b.eval(`document.querySelectorAll('section.tile .note.partial').length`); err != nil || (v.(float64) > 0) != partial {
		t.Fatalf("partial-period notes: %v %v (the data ends %s)", v, err, lastDay)
	}
	// The region filter offers every region, sorted; picking one draws the tiles again with
	// the filter.
	var regions []string
	for _, o := range f.rows {
		if !slices.Contains(regions, o.region) {
			regions = append(regions, o.region)
		}
	}
	slices.Sort(regions)
	if v, err := b.eval(`Array.from(document.querySelectorAll('#' + document.querySelector('input[data-filter="region"]').getAttribute('list') + ' option')).map(function (o) { return o.value; }).join(',')`); err != nil ||
		v != strings.Join(regions, ",") {
		t.Fatalf("the region filter offers %v (%v), want %v", v, err, regions)
	}
	pick := func(value string) {
		t.Helper()
		if _, err := b.eval(`(function () { var s = document.querySelector('input[data-filter="region"]'); s.value = ` + strconv.Quote(value) + `;
		document.body.removeAttribute("data-ready"); s.dispatchEvent(new Event("change")); return true; })()`); err != nil {
			t.Fatal(err)
		}
	}
	pick("Nowhere")
	b.waitFor("the dashboard drawn for a region typed that no order has", `document.body.getAttribute("data-ready") === "true"`)
	if v, err := b.eval(`document.querySelector('section.tile .kpi').textContent`); err != nil || v != "0" {
		t.Fatalf("the count for Nowhere: %v %v", v, err)
	}
	pick("North")
	b.waitFor("the dashboard drawn for North", `document.body.getAttribute("data-ready") === "true"`)
	north := 0
	for _, o := range f.rows {
		if o.region == "North" {
			north++
		}
	}
	if v, err := b.eval(`document.querySelector('section.tile .kpi').textContent`); err != nil || v != fmt.Sprint(north) {
		t.Fatalf("the count for North: %v %v (want %d)", v, err, north)
	}
	// A time range with no data: each chart says so in its tile, none fails with a script
	// error; Enter in a filter box applies it (the page is not reloaded, the value stays).
	if _, err := b.eval(`(function () { var s = document.getElementById("time-range"); s.value = "last_30_days";
		document.body.removeAttribute("data-ready"); s.dispatchEvent(new Event("change")); return true; })()`); err != nil {
		t.Fatal(err)
	}
	b.waitFor("the dashboard drawn for a range with no data", `document.body.getAttribute("data-ready") === "true"`)
	if v, err := b.eval(`(function () { var out = {problems: document.querySelectorAll("section.tile .problem").length, empty: 0, charts: 0};
		document.querySelectorAll("section.tile").forEach(function (b) { if (!b.querySelector(".kpi") && !b.querySelector("table")) { out.charts++;
		if (b.querySelector(".note.empty") && /No data in this range/.test(b.textContent)) out.empty++; } }); return out; })()`); err != nil ||
		v.(map[string]any)["problems"] != float64(0) || v.(map[string]any)["empty"] != v.(map[string]any)["charts"] || v.(map[string]any)["charts"] == float64(0) {
		t.Fatalf("a range with no data: %v %v", v, err)
	}
	if _, err := b.eval(`(function () { var s = document.getElementById("time-range"); s.value = "all"; var f = document.querySelector('input[data-filter="region"]');
		f.value = "Nowhere"; document.body.removeAttribute("data-ready"); window.dpNotReloaded = true;
		f.dispatchEvent(new KeyboardEvent("keydown", {key: "Enter", bubbles: true, cancelable: true})); return true; })()`); err != nil {
		t.Fatal(err)
	}
	b.waitFor("the dashboard drawn after Enter in the filter box", `document.body.getAttribute("data-ready") === "true"`)
	if v, err := b.eval(`window.dpNotReloaded === true && document.querySelector('input[data-filter="region"]').value === "Nowhere" && document.querySelector('section.tile .kpi').textContent === "0"`); err != nil || v != true {
		t.Fatalf("Enter in the filter box: %v %v", v, err)
	}
	if p := b.Problems(); len(p) > 0 {
		t.Fatalf("the page went wrong: %v", p)
	}
	// The screenshot shows a drawn page: charts in many colours, not a blank or an error.
	var shot struct {
		Data string `json:"data"`
	}
	b.call(b.session, "Page.captureScreenshot", map[string]any{"format": "png", "captureBeyondViewport": true}, &shot)
	raw, err := base64.StdEncoding.DecodeString(shot.Data)
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	colours := map[[3]uint32]bool{}
	bounds := img.Bounds()
	for y := bounds.Min.Y; y < bounds.Max.Y; y += 3 {
		for x := bounds.Min.X; x < bounds.Max.X; x += 3 {
			r, g, b, _ := img.At(x, y).RGBA()
			colours[[3]uint32{r >> 12, g >> 12, b >> 12}] = true
		}
	}
	if bounds.Dx() < 1000 || len(colours) < 40 {
		t.Fatalf("the screenshot is %v with %d colours: not a drawn dashboard", bounds, len(colours))
	}
	if dir := os.Getenv("DP_SCREENSHOT_DIR"); dir != "" {
		if err := os.WriteFile(filepath.Join(dir, "dashboard.png"), raw, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
