package tests

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"dataplatform/cmd/dataplatform/config"
)

// dashError checks the dashboard error shape: {code: <status>, error, message}.
func (r *resp) dashError(status int, code string) *resp {
	r.t.Helper()
	r.status(status)
	if r.get("code") != float64(status) || r.get("error") != code || r.str("message") == "" {
		r.t.Fatalf("%s: want the dashboard error shape with %d %s, got\n%s", r.req, status, code, r.Body)
	}
	return r
}

// dashboardFixture is a project with customers and their orders (orders.customer_id refers
// to customers.id): ids, a year-like number and a code that must never be summed, measures,
// dates over two years, categories and a boolean.
type dashboardFixture struct {
	*env
	customers, orders string
	rows              []order
}

type order struct {
	id, customer int
	date         time.Time
	amount       float64
	quantity     int
	status       string
	region       string
	paid         bool
}

var dashRegions = []string{"North", "South", "East", "West", "Central"}
var dashStatuses = []string{"shipped", "pending", "cancelled", "returned"}
var dashSegments = []string{"retail", "wholesale", "online"}

func newDashboardFixture(t *testing.T, opts ...option) *dashboardFixture {
	e := newEnv(t, append(opts, func(c *config.Config) { c.RateLimits = "queries=100000-M" })...)
	f := &dashboardFixture{env: e}
	var cb strings.Builder
	cb.WriteString("id,name,segment,country\n")
	for i := 1; i <= 30; i++ {
		fmt.Fprintf(&cb, "%d,Customer %d,%s,%s\n", i, i, dashSegments[i%3], []string{"Germany", "France", "Italy"}[i%3])
	}
	f.customers = e.uploadAndCreate(e.ownerToken, "Customers", "customers.csv", cb.String())
	if d := e.waitDataset(e.ownerToken, f.customers); d.str("status") != "active" {
		t.Fatalf("customers: %s", d.Body)
	}
	var ob strings.Builder
	ob.WriteString("order_id,customer_id,order_date,amount,quantity,status,region,paid,fiscal_year,postal_code\n")
	start := time.Date(2023, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := 1; i <= 240; i++ {
		o := order{id: 1000 + i, customer: 1 + i%30, date: start.AddDate(0, 0, i*3), amount: float64(i%50)*2.5 + 10, quantity: 1 + i%7,
			status: dashStatuses[i%4], region: dashRegions[i%5], paid: i%3 != 0}
		f.rows = append(f.rows, o)
		fmt.Fprintf(&ob, "%d,%d,%s,%.2f,%d,%s,%s,%t,%d,%05d\n", o.id, o.customer, o.date.Format(time.DateOnly), o.amount, o.quantity, o.status,
			o.region, o.paid, 2023+i%2, 10000+i*7)
	}
	f.orders = e.uploadAndCreate(e.ownerToken, "Orders", "orders.csv", ob.String())
	if d := e.waitDataset(e.ownerToken, f.orders); d.str("status") != "active" {
		t.Fatalf("orders: %s", d.Body)
	}
	return f
}

// tiles lists a dashboard's tiles (path → tile) from its spec.
func tiles(r *resp) map[string]map[string]any {
	out := map[string]map[string]any{}
	rows, _ := r.get("spec.rows").([]any)
	for i, row := range rows {
		for j, it := range row.(map[string]any)["items"].([]any) {
			out[fmt.Sprintf("rows.%d.items.%d", i, j)] = it.(map[string]any)
		}
	}
	return out
}

// tileByID finds a tile's path by its id.
func tileByID(r *resp, id string) string {
	for p, t := range tiles(r) {
		if t["id"] == id {
			return p
		}
	}
	return ""
}

// tileValue is the first value of a tile's data.
func tileValue(t *testing.T, d *resp, path string) any {
	t.Helper()
	for _, td := range d.get("tiles").([]any) {
		m := td.(map[string]any)
		if m["path"] == path {
			if m["error"] != nil {
				t.Fatalf("tile %s failed: %v", path, m["error"])
			}
			return m["rows"].([]any)[0].([]any)[0]
		}
	}
	t.Fatalf("no tile %s in\n%s", path, d.Body)
	return nil
}

func TestDashboardGenerateFromDataset(t *testing.T) {
	t.Parallel()
	f := newDashboardFixture(t)
	e, own := f.env, bearer(f.ownerToken)
	gen := "/api/v1/datasets/" + f.orders + "/dashboard/generate"
	r := e.do("POST", gen+"?use_ai=false", nil, own).status(201)
	id, etag := r.str("id"), r.Header.Get("ETag")
	if !strings.HasPrefix(id, "dsh_") || !strings.HasPrefix(etag, `"`) || r.num("version") != 1 || r.get("can_edit") != true ||
		r.str("source.type") != "dataset" || r.str("source.dataset_id") != f.orders {
		t.Fatalf("generate: %s", r.Body)
	}
	ts := tiles(r)
	if len(ts) < 8 || len(ts) > 15 {
		t.Fatalf("%d tiles (want 8 to 15): %s", len(ts), r.Body)
	}
	byType := map[string]int{}
	for p, tile := range ts {
		byType[tile["type"].(string)]++
		sql := tile["query"].(map[string]any)["sql"].(string)
		// Never a measure of ids, keys, codes or year-like numbers.
		for _, never := range []string{"order_id", "customer_id", "fiscal_year", "postal_code"} {
			for _, agg := range []string{"sum(", "avg("} {
				if strings.Contains(sql, agg+`"`+never+`"`) {
					t.Errorf("tile %s (%s) aggregates %s: %s", p, tile["title"], never, sql)
				}
			}
		}
		if w := tile["width"].(float64); w < 1 || w > 12 {
			t.Errorf("tile %s width %v", p, w)
		}
	}
	for _, want := range []string{"kpi", "line", "table"} {
		if byType[want] == 0 {
			t.Errorf("no %s tile: %v", want, byType)
		}
	}
	if byType["bar"]+byType["pie"]+byType["donut"] < 2 || byType["histogram"] == 0 {
		t.Errorf("breakdowns and distributions: %v", byType)
	}
	// The time series: two years of dates by week.
	line := ts[tileByID(r, "count_per_week")]
	if line == nil || line["encoding"].(map[string]any)["time_grain"] != "week" {
		t.Fatalf("no weekly line of orders: %s", r.Body)
	}
	// Titles in plain English.
	if p := tileByID(r, "record_count"); ts[p]["title"] != "Number of Orders" {
		t.Errorf("count tile: %v", ts[p])
	}
	if p := tileByID(r, "sum_amount"); p == "" || ts[p]["title"] != "Total amount" {
		t.Errorf("no Total amount KPI: %s", r.Body)
	}

	// Read it back: the same ETag, under both prefixes.
	g := e.do("GET", "/api/v1/dashboards/"+id, nil, own).status(200)
	if g.Header.Get("ETag") != etag || g.num("version") != 1 {
		t.Fatalf("get: %s %s", g.Header.Get("ETag"), g.Body)
	}
	if g2 := e.do("GET", "/v1/api/dashboards/"+id, nil, own).status(200); g2.Header.Get("ETag") != etag || g2.str("id") != id {
		t.Fatalf("get under /v1/api: %s", g2.Body)
	}
	// Without force the existing dashboard is the answer; with force a new version of it.
	if again := e.do("POST", "/v1/api/datasets/"+f.orders+"/dashboard/generate?use_ai=false", nil, own).status(200); again.str("id") != id || again.num("version") != 1 {
		t.Fatalf("generate again: %s", again.Body)
	}
	if forced := e.do("POST", gen+"?force=true&use_ai=false", nil, own).status(200); forced.str("id") != id || forced.num("version") != 2 || forced.Header.Get("ETag") == etag {
		t.Fatalf("force: %s", forced.Body)
	}
	e.do("POST", gen+"?force=maybe", nil, own).dashError(400, "validation_error")
	e.do("POST", gen+"?colour=red", nil, own).dashError(400, "validation_error")
	e.do("POST", "/api/v1/datasets/ds_nosuchdataset/dashboard/generate", nil, own).dashError(404, "dataset_not_found")
	// A dataset that is not active (still loading, say) has no dashboard made of it.
	if _, err := e.st.DB.Exec(`UPDATE platform.datasets SET status = 'processing' WHERE id = $1`, f.customers); err != nil {
		t.Fatal(err)
	}
	e.do("POST", "/api/v1/datasets/"+f.customers+"/dashboard/generate", nil, own).dashError(409, "dataset_not_ready")
	e.do("POST", "/api/v1/projects/"+e.projectID+"/dashboards/generate", map[string]any{"name": "x", "dataset_ids": []string{f.customers}}, own).
		dashError(400, "validation_error")

	// Every tile draws; the numbers are the data's.
	data := e.do("GET", "/api/v1/dashboards/"+id+"/data", nil, own).status(200)
	for _, td := range data.get("tiles").([]any) {
		m := td.(map[string]any)
		if m["error"] != nil || len(m["rows"].([]any)) == 0 {
			t.Errorf("tile %v: %v", m["path"], m)
		}
	}
	countPath := tileByID(r, "record_count")
	if v := tileValue(t, data, countPath); v != float64(240) {
		t.Fatalf("record count %v, want 240", v)
	}
	total := 0.0
	north, jan := 0, 0
	for _, o := range f.rows {
		total += o.amount
		if o.region == "North" {
			north++
		}
		if o.date.Year() == 2023 && o.date.Month() == time.January {
			jan++
		}
	}
	if v := tileValue(t, data, tileByID(r, "sum_amount")); fmt.Sprint(v) != fmt.Sprintf("%g", total) {
		t.Fatalf("total amount %v, want %g", v, total)
	}
	// The breakdown by status: four statuses of 60 orders.
	bp := tileByID(r, "count_by_status")
	td := e.do("GET", "/api/v1/dashboards/"+id+"/tiles/"+bp+"/data", nil, own).status(200)
	if td.len("rows") != 4 || fmt.Sprint(td.get("rows.0")) != "[cancelled 60]" && !strings.HasSuffix(fmt.Sprint(td.get("rows.0")), " 60]") {
		t.Fatalf("orders by status: %s", td.Body)
	}
	// The distribution: 10 equal ranges from the smallest amount to the largest, every order in one.
	hist := e.do("GET", "/api/v1/dashboards/"+id+"/tiles/"+tileByID(r, "distribution_amount")+"/data", nil, own).status(200)
	lo, hi, n := 1e9, -1e9, 0.0
	for _, o := range f.rows {
		lo, hi = min(lo, o.amount), max(hi, o.amount)
	}
	for _, row := range hist.get("rows").([]any) {
		var c float64
		fmt.Sscan(fmt.Sprint(row.([]any)[2]), &c)
		n += c
	}
	if hist.len("rows") != 10 || n != 240 || hist.get("rows.0.0") != lo || hist.get("rows.9.1") != hi {
		t.Fatalf("distribution of amount (%g to %g): %s", lo, hi, hist.Body)
	}
	if td2 := e.do("GET", "/api/v1/dashboards/"+id+"/tiles/"+bp+"/data", nil, own).status(200); td2.get("cached") != true {
		t.Fatalf("the second read is not from the cache: %s", td2.Body)
	}
	// Filters: the region filter and the time range narrow the tiles that take them.
	if r.str("spec.filters.0.id") != "region" {
		t.Fatalf("filters: %v", r.get("spec.filters"))
	}
	fq := url.QueryEscape(`{"region":"North"}`)
	fd := e.do("GET", "/api/v1/dashboards/"+id+"/tiles/"+countPath+"/data?filters="+fq, nil, own).status(200)
	if fd.get("rows.0.0") != float64(north) || !strings.Contains(fmt.Sprint(fd.get("filters_applied")), "region") {
		t.Fatalf("north: %s (want %d)", fd.Body, north)
	}
	jd := e.do("GET", "/v1/api/dashboards/"+id+"/tiles/"+countPath+"/data?time_range=2023-01-01..2023-01-31", nil, own).status(200)
	if jd.get("rows.0.0") != float64(jan) || !strings.Contains(fmt.Sprint(jd.get("filters_applied")), "time_range") {
		t.Fatalf("january: %s (want %d)", jd.Body, jan)
	}
	// What cannot be applied is refused, never ignored.
	e.do("GET", "/api/v1/dashboards/"+id+"/data?filters="+url.QueryEscape(`{"colour":"red"}`), nil, own).dashError(400, "validation_error")
	e.do("GET", "/api/v1/dashboards/"+id+"/data?filters=notjson", nil, own).dashError(400, "validation_error")
	e.do("GET", "/api/v1/dashboards/"+id+"/data?filters="+url.QueryEscape(`{"region":["North"]}`), nil, own).dashError(400, "validation_error")
	e.do("GET", "/api/v1/dashboards/"+id+"/data?time_range=yesterdayish", nil, own).dashError(400, "validation_error")
	e.do("GET", "/api/v1/dashboards/"+id+"/tiles/rows.40.items.0/data", nil, own).dashError(404, "not_found")
	e.do("GET", "/api/v1/dashboards/"+id+"/tiles/row0/data", nil, own).dashError(400, "validation_error")

	// Lists, under both prefixes.
	l := e.do("GET", "/api/v1/dashboards?query=orders", nil, own).status(200)
	if l.len("dashboards") != 1 || l.str("dashboards.0.id") != id || l.get("dashboards.0.spec") != nil {
		t.Fatalf("list: %s", l.Body)
	}
	if l := e.do("GET", "/v1/api/projects/"+e.projectID+"/dashboards", nil, own).status(200); l.num("pagination.total") != 1 {
		t.Fatalf("project list: %s", l.Body)
	}
	if n := e.countAuditRows(e.orgID, "dashboard.create"); n != 1 {
		t.Fatalf("%d audit rows of dashboard.create", n)
	}
	// A dataset still loading cannot have one.
	e.do("DELETE", "/api/v1/dashboards/"+id, nil, own).status(204)
	e.do("GET", "/api/v1/dashboards/"+id, nil, own).dashError(404, "not_found")
	e.do("GET", "/api/v1/dashboards/"+id+"/versions", nil, own).dashError(404, "not_found")
}

func TestDashboardEditsAndVersions(t *testing.T) {
	t.Parallel()
	f := newDashboardFixture(t, func(c *config.Config) { c.DashboardVersionsKept = 3 })
	e, own := f.env, bearer(f.ownerToken)
	r := e.do("POST", "/api/v1/datasets/"+f.customers+"/dashboard/generate?use_ai=false", nil, own).status(201)
	id, etag := r.str("id"), r.Header.Get("ETag")
	var spec map[string]any
	_ = json.Unmarshal(mustJSON(r.get("spec")), &spec)
	first := r.str("spec.rows.0.items.0.title")

	// An edit with the current ETag; a stale one is 412 and changes nothing.
	spec["title"] = "Customer overview"
	put := e.do("PUT", "/api/v1/dashboards/"+id, map[string]any{"spec": spec, "display_name": "Customers at a glance"}, own, header{"If-Match": etag}).status(200)
	if put.num("version") != 2 || put.str("display_name") != "Customers at a glance" || put.str("spec.title") != "Customer overview" || put.Header.Get("ETag") == etag {
		t.Fatalf("put: %s", put.Body)
	}
	e.do("PUT", "/api/v1/dashboards/"+id, map[string]any{"spec": spec}, own, header{"If-Match": etag}).dashError(412, "dashboard_modified")
	e.do("DELETE", "/api/v1/dashboards/"+id, nil, own, header{"If-Match": etag}).dashError(412, "dashboard_modified")
	if g := e.do("GET", "/api/v1/dashboards/"+id, nil, own).status(200); g.num("version") != 2 {
		t.Fatalf("after 412: %s", g.Body)
	}
	// Bad specs are refused with the field, and change nothing.
	bad := func(mutate func(m map[string]any), field, code string) {
		t.Helper()
		var s map[string]any
		_ = json.Unmarshal(mustJSON(spec), &s)
		mutate(s)
		b := e.do("PUT", "/api/v1/dashboards/"+id, map[string]any{"spec": s}, own).dashError(400, "validation_error")
		found := false
		for _, d := range b.get("details").([]any) {
			m := d.(map[string]any)
			found = found || m["field"] == field && m["code"] == code
		}
		if !found {
			t.Fatalf("want %s %s in %s", field, code, b.Body)
		}
	}
	item := func(s map[string]any) map[string]any {
		return s["rows"].([]any)[0].(map[string]any)["items"].([]any)[0].(map[string]any)
	}
	bad(func(s map[string]any) { item(s)["width"] = 13 }, "body.spec.rows.0.items.0.width", "maximum")
	bad(func(s map[string]any) { item(s)["type"] = "radar" }, "body.spec.rows.0.items.0.type", "enum")
	bad(func(s map[string]any) { item(s)["query"] = map[string]any{"sql": "SELECT nope FROM no_such_dataset"} }, "body.spec.rows.0.items.0.query.sql", "invalid_query")
	bad(func(s map[string]any) { item(s)["query"] = map[string]any{"sql": "DELETE FROM customers"} }, "body.spec.rows.0.items.0.query.sql", "invalid_query")
	bad(func(s map[string]any) {
		rows := s["rows"].([]any)
		rows[0].(map[string]any)["items"] = append(rows[0].(map[string]any)["items"].([]any), item(s))
	}, "body.spec.rows.0.items.1.id", "duplicate")
	bad(func(s map[string]any) { s["time_range"] = map[string]any{"default": "whenever"} }, "body.spec.time_range.default", "invalid_format")
	bad(func(s map[string]any) { s["colour"] = "red" }, "body.spec.colour", "unknown_field")
	if g := e.do("GET", "/api/v1/dashboards/"+id, nil, own).status(200); g.num("version") != 2 {
		t.Fatalf("a refused edit changed the dashboard: %s", g.Body)
	}

	// Versions: newest first, without spec; one with it.
	vs := e.do("GET", "/api/v1/dashboards/"+id+"/versions", nil, own).status(200)
	if vs.len("versions") != 2 || vs.num("versions.0.number") != 2 || vs.str("versions.0.kind") != "edit" || vs.get("versions.0.current") != true ||
		vs.str("versions.1.kind") != "generate" || vs.get("versions.0.spec") != nil {
		t.Fatalf("versions: %s", vs.Body)
	}
	v1 := vs.str("versions.1.id")
	if v := e.do("GET", "/v1/api/dashboards/"+id+"/versions/"+v1, nil, own).status(200); v.str("spec.rows.0.items.0.title") != first || v.str("spec.title") == "Customer overview" {
		t.Fatalf("version 1: %s", v.Body)
	}
	// Name it, clear the name; pin it.
	if v := e.do("PATCH", "/api/v1/dashboards/"+id+"/versions/"+v1, map[string]any{"message": "as generated"}, own).status(200); v.str("message") != "as generated" {
		t.Fatalf("rename: %s", v.Body)
	}
	if v := e.do("PATCH", "/api/v1/dashboards/"+id+"/versions/"+v1, map[string]any{"message": nil}, own).status(200); v.get("message") != nil {
		t.Fatalf("clear: %s", v.Body)
	}
	e.do("PATCH", "/api/v1/dashboards/"+id+"/versions/"+v1, map[string]any{}, own).dashError(400, "validation_error")
	if v := e.do("POST", "/api/v1/dashboards/"+id+"/versions/"+v1+"/pin", nil, own).status(200); v.get("pinned") != true {
		t.Fatalf("pin: %s", v.Body)
	}
	// Restore version 1: a new version with its spec and name.
	cur := e.do("GET", "/api/v1/dashboards/"+id, nil, own).status(200).Header.Get("ETag")
	e.do("POST", "/api/v1/dashboards/"+id+"/versions/"+v1+"/restore", nil, own, header{"If-Match": etag}).dashError(412, "dashboard_modified")
	res := e.do("POST", "/api/v1/dashboards/"+id+"/versions/"+v1+"/restore", nil, own, header{"If-Match": cur}).status(200)
	if res.num("version") != 3 || res.str("spec.title") == "Customer overview" || res.str("display_name") != "Customers" {
		t.Fatalf("restore: %s", res.Body)
	}
	// Cleanup keeps 3 unpinned versions and every pinned one.
	for i := 0; i < 4; i++ {
		spec["title"] = fmt.Sprint("Edit ", i)
		e.do("PUT", "/api/v1/dashboards/"+id, map[string]any{"spec": spec}, own).status(200)
	}
	vs = e.do("GET", "/api/v1/dashboards/"+id+"/versions?limit=100", nil, own).status(200)
	var numbers []string
	for _, v := range vs.get("versions").([]any) {
		numbers = append(numbers, fmt.Sprint(v.(map[string]any)["number"]))
	}
	if strings.Join(numbers, ",") != "7,6,5,1" {
		t.Fatalf("kept versions %v, want 7,6,5 and the pinned 1", numbers)
	}
	if v := e.do("POST", "/api/v1/dashboards/"+id+"/versions/"+v1+"/unpin", nil, own).status(200); v.get("pinned") != false {
		t.Fatalf("unpin: %s", v.Body)
	}
	e.do("GET", "/api/v1/dashboards/"+id+"/versions/dshv_nosuchversion", nil, own).dashError(404, "not_found")
	if n := e.countAuditRows(e.orgID, "dashboard.update"); n != 5 {
		t.Fatalf("%d audit rows of dashboard.update", n)
	}
}

func mustJSON(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}

func TestDashboardProjectForm(t *testing.T) {
	t.Parallel()
	f := newDashboardFixture(t)
	e, own := f.env, bearer(f.ownerToken)
	gen := "/api/v1/projects/" + e.projectID + "/dashboards/generate"
	e.do("POST", gen, map[string]any{"dataset_ids": []string{f.orders}}, own).dashError(400, "name_required")
	e.do("POST", "/v1/api/projects/"+e.projectID+"/dashboards/generate", map[string]any{"name": "Sales"}, own).dashError(400, "no_sources")
	var many []string
	for i := 0; i < 13; i++ {
		many = append(many, fmt.Sprintf("ds_x%d", i))
	}
	e.do("POST", gen, map[string]any{"name": "Sales", "dataset_ids": many}, own).dashError(400, "too_many_datasets")
	e.do("POST", gen, map[string]any{"name": "Sales", "dataset_ids": []string{f.orders, "ds_nosuchdataset"}}, own).dashError(400, "validation_error")
	e.do("POST", gen, map[string]any{"name": "Sales", "dataset_ids": []string{f.orders}, "colour": "red"}, own).dashError(400, "validation_error")
	if n := e.countRows(`SELECT count(*) FROM platform.dashboards`); n != 0 {
		t.Fatalf("refused requests kept %d dashboards", n)
	}

	r := e.do("POST", gen, map[string]any{"name": "Sales by segment", "intent": "amount by customer segment",
		"dataset_ids": []string{f.customers, f.orders}, "use_ai": false}, own).status(201)
	id := r.str("id")
	if r.str("source.type") != "project" || r.str("display_name") != "Sales by segment" || len(tiles(r)) > 15 {
		t.Fatalf("project form: %s", r.Body)
	}
	// Across the relationship: the orders' amount by the customers' segment, and right.
	p := tileByID(r, "total_amount_by_customers_segment")
	if p == "" {
		t.Fatalf("no amount by customer segment: %s", r.Body)
	}
	td := e.do("GET", "/api/v1/dashboards/"+id+"/tiles/"+p+"/data", nil, own).status(200)
	want := map[string]float64{}
	for _, o := range f.rows {
		want[dashSegments[o.customer%3]] += o.amount
	}
	if td.len("rows") != 3 {
		t.Fatalf("segments: %s", td.Body)
	}
	for _, row := range td.get("rows").([]any) {
		rr := row.([]any)
		if fmt.Sprint(rr[1]) != fmt.Sprintf("%g", want[rr[0].(string)]) {
			t.Fatalf("segment %v: %v, want %g", rr[0], rr[1], want[rr[0].(string)])
		}
	}
	// The intent's words lead: the first breakdown is the one the intent asked for.
	if ts := tiles(r); ts["rows.0.items.0"]["type"] != "kpi" {
		t.Fatalf("KPIs first: %s", r.Body)
	}
}

func TestDashboardPermissions(t *testing.T) {
	t.Parallel()
	f := newDashboardFixture(t)
	e, own := f.env, bearer(f.ownerToken)
	r := e.do("POST", "/api/v1/datasets/"+f.orders+"/dashboard/generate?use_ai=false", nil, own).status(201)
	id := r.str("id")
	_, viewer := e.member(e.orgID, "viewer")
	g := e.do("GET", "/api/v1/dashboards/"+id, nil, bearer(viewer)).status(200)
	if g.get("can_edit") != false {
		t.Fatalf("viewer can_edit: %s", g.Body)
	}
	e.do("GET", "/api/v1/dashboards/"+id+"/data", nil, bearer(viewer)).status(200)
	e.do("PUT", "/api/v1/dashboards/"+id, map[string]any{"spec": r.get("spec")}, bearer(viewer)).dashError(403, "permission_denied")
	e.do("DELETE", "/api/v1/dashboards/"+id, nil, bearer(viewer)).dashError(403, "permission_denied")
	e.do("POST", "/api/v1/datasets/"+f.orders+"/dashboard/generate", nil, bearer(viewer)).dashError(403, "permission_denied")
	e.do("POST", "/api/v1/dashboards/"+id+"/versions/"+e.do("GET", "/api/v1/dashboards/"+id+"/versions", nil, bearer(viewer)).status(200).str("versions.0.id")+"/pin", nil,
		bearer(viewer)).dashError(403, "permission_denied")
	_, analyst := e.member(e.orgID, "analyst")
	if g := e.do("GET", "/api/v1/dashboards/"+id, nil, bearer(analyst)).status(200); g.get("can_edit") != true {
		t.Fatalf("analyst can_edit: %s", g.Body)
	}
	// Another organization's member sees nothing of it.
	outsider, outsiderTok := e.member(e.orgID, "viewer")
	e.do("POST", "/api/v1/organizations", map[string]any{"name": "Elsewhere"}, bearer(outsiderTok)).status(201)
	e.do("DELETE", "/api/v1/organizations/"+e.orgID+"/users/"+e.userIDOf(outsider), nil, own).status(204)
	e.do("GET", "/api/v1/dashboards/"+id, nil, bearer(outsiderTok)).dashError(404, "not_found")
	e.do("GET", "/api/v1/dashboards/"+id+"/data", nil, bearer(outsiderTok)).dashError(404, "not_found")
	if l := e.do("GET", "/api/v1/dashboards", nil, bearer(outsiderTok)).status(200); l.len("dashboards") != 0 {
		t.Fatalf("outsider's list: %s", l.Body)
	}
	e.do("GET", "/api/v1/dashboards/"+id, nil).dashError(401, "auth_required")
}

func TestDashboardGenerationStream(t *testing.T) {
	t.Parallel()
	f := newDashboardFixture(t)
	e, own := f.env, bearer(f.ownerToken)
	r := e.do("POST", "/api/v1/datasets/"+f.orders+"/dashboard/generate/stream?use_ai=false", nil, own).status(200)
	_, events := sseEvents(t, r.Body)
	var phases []string
	for _, ev := range events[:len(events)-1] {
		if ev["type"] == "progress" {
			phases = append(phases, ev["data"].(map[string]any)["phase"].(string))
		} else if ev["type"] != "heartbeat" {
			t.Fatalf("event %v", ev)
		}
	}
	last := events[len(events)-1]
	if strings.Join(phases, ",") != "analyzing,metrics,validating,layout,finalizing" || last["type"] != "complete" {
		t.Fatalf("phases %v, last %v", phases, last)
	}
	done := last["data"].(map[string]any)
	if !strings.HasPrefix(fmt.Sprint(done["id"]), "dsh_") || done["spec"] == nil {
		t.Fatalf("complete: %v", done)
	}
	if g := e.do("GET", "/api/v1/dashboards/"+done["id"].(string), nil, own).status(200); g.num("version") != 1 {
		t.Fatalf("kept: %s", g.Body)
	}
	// Refused before the stream starts: the dashboard error shape, not an event.
	e.do("POST", "/v1/api/projects/"+e.projectID+"/dashboards/generate/stream", map[string]any{"dataset_ids": []string{f.orders}}, own).dashError(400, "name_required")
	// The project form streams too.
	pr := e.do("POST", "/v1/api/projects/"+e.projectID+"/dashboards/generate/stream", map[string]any{"name": "Both", "dataset_ids": []string{f.orders, f.customers}, "use_ai": false}, own).status(200)
	_, events = sseEvents(t, pr.Body)
	if events[len(events)-1]["type"] != "complete" {
		t.Fatalf("project stream: %s", pr.Body)
	}
}

// TestDashboardFromViews: plan-views proposes the join of orders with their customers as a
// checked view definition; saved, the view gets a dashboard of its own (its statistics read
// from it) and serves as a source of the project form; a broken view is refused.
func TestDashboardFromViews(t *testing.T) {
	t.Parallel()
	f := newDashboardFixture(t)
	e, own := f.env, bearer(f.ownerToken)
	plan := e.do("POST", "/v1/api/projects/"+e.projectID+"/dashboards/plan-views", map[string]any{"intent": "orders by segment"}, own).status(200)
	if plan.len("views") != 1 || plan.str("views.0.name") != "orders_with_customers" || plan.len("rejected") != 0 ||
		!strings.Contains(fmt.Sprint(plan.get("views.0.columns")), "segment") || plan.str("views.0.definition.join.base") != "orders" {
		t.Fatalf("plan: %s", plan.Body)
	}
	e.do("POST", "/api/v1/projects/"+e.projectID+"/dashboards/plan-views", map[string]any{"dataset_ids": []string{"ds_nosuchdataset"}}, own).dashError(400, "validation_error")
	// A proposal saves as it is; one whose columns or datasets no longer match what its
	// definition produces is refused on that field and keeps nothing.
	proposal := plan.get("views.0").(map[string]any)
	stale := maps.Clone(proposal)
	cols := slices.Clone(proposal["columns"].([]any))
	first := maps.Clone(cols[0].(map[string]any))
	first["type"] = "jsonb"
	stale["columns"] = append([]any{first}, cols[1:]...)
	if r := e.do("POST", "/api/v1/projects/"+e.projectID+"/views", stale, own).apiError(400, "VALIDATION_ERROR"); r.str("error.details.0.field") != "body.columns[0]" ||
		r.str("error.details.0.code") != "columns_changed" {
		t.Fatalf("stale columns: %s", r.Body)
	}
	stale = maps.Clone(proposal)
	stale["dataset_ids"] = []string{proposal["dataset_ids"].([]any)[0].(string)}
	e.do("POST", "/api/v1/projects/"+e.projectID+"/views", stale, own).apiError(400, "VALIDATION_ERROR")
	if l := e.do("GET", "/api/v1/projects/"+e.projectID+"/views", nil, own).status(200); l.len("views") != 0 {
		t.Fatalf("a refused proposal was kept: %s", l.Body)
	}
	v := e.do("POST", "/api/v1/projects/"+e.projectID+"/views", proposal, own).status(201)
	vid := v.str("id")
	if v.str("name") != plan.str("views.0.name") || v.len("columns") != len(cols) {
		t.Fatalf("saved proposal: %s", v.Body)
	}
	// After saving it, the same join is proposed under another name.
	if again := e.do("POST", "/api/v1/projects/"+e.projectID+"/dashboards/plan-views", nil, own).status(200); again.str("views.0.name") != "orders_with_customers_2" {
		t.Fatalf("plan again: %s", again.Body)
	}

	gen := "/api/v1/projects/" + e.projectID + "/views/" + vid + "/dashboard/generate"
	r := e.do("POST", gen+"?use_ai=false", nil, own).status(201)
	id := r.str("id")
	if r.str("source.type") != "view" || r.str("source.view_id") != vid || tileByID(r, "count_by_segment") == "" || tileByID(r, "sum_amount") == "" {
		t.Fatalf("view dashboard: %s", r.Body)
	}
	d := e.do("GET", "/api/v1/dashboards/"+id+"/data", nil, own).status(200)
	if v := tileValue(t, d, tileByID(r, "record_count")); v != float64(240) {
		t.Fatalf("rows of the view: %v", v)
	}
	if a := e.do("POST", "/v1/api/projects/"+e.projectID+"/views/"+vid+"/dashboard/generate", nil, own).status(200); a.str("id") != id {
		t.Fatalf("again: %s", a.Body)
	}
	s := e.do("POST", gen+"/stream?force=true&use_ai=false", nil, own).status(200)
	if _, evs := sseEvents(t, s.Body); evs[len(evs)-1]["type"] != "complete" {
		t.Fatalf("stream: %s", s.Body)
	}
	e.do("POST", "/api/v1/projects/"+e.projectID+"/views/vw_nosuchview/dashboard/generate", nil, own).dashError(404, "not_found")

	// The project form takes views.
	p := e.do("POST", "/api/v1/projects/"+e.projectID+"/dashboards/generate", map[string]any{"name": "From the view", "view_ids": []string{vid}, "use_ai": false}, own).status(201)
	if p.str("source.view_ids.0") != vid || len(tiles(p)) < 5 {
		t.Fatalf("project form with a view: %s", p.Body)
	}
	e.do("POST", "/api/v1/projects/"+e.projectID+"/dashboards/generate", map[string]any{"name": "x", "view_ids": []string{"vw_nosuchview"}}, own).dashError(400, "validation_error")
	// Refining the view's dashboard reads the view's columns.
	if rf := e.do("POST", "/api/v1/dashboards/"+id+"/refine", map[string]any{"user_prompt": "add a chart of amount by country"}, own).status(200); !strings.Contains(rf.str("changes.0"), "by country") {
		t.Fatalf("refine over the view: %s", rf.Body)
	}

	// A view broken by its dataset's deletion is refused, by its code.
	e.settleJobs()
	e.do("DELETE", "/api/v1/projects/"+e.projectID+"/datasets/"+f.customers, nil, own).status(200)
	e.do("POST", gen+"?force=true", nil, own).dashError(409, "view_broken")
	e.do("POST", "/api/v1/projects/"+e.projectID+"/dashboards/generate", map[string]any{"name": "x", "view_ids": []string{vid}}, own).dashError(400, "validation_error")
}

// TestDashboardPathsUnderBothPrefixes: every read the description publishes under the second
// /v1/api prefix answers as its /api/v1 twin (the same handler), and a path it does not
// publish there is not served there.
func TestDashboardPathsUnderBothPrefixes(t *testing.T) {
	t.Parallel()
	f := newDashboardFixture(t)
	e, own := f.env, bearer(f.ownerToken)
	r := e.do("POST", "/api/v1/datasets/"+f.orders+"/dashboard/generate?use_ai=false", nil, own).status(201)
	vid := e.do("POST", "/api/v1/projects/"+e.projectID+"/views", map[string]any{"name": "paid_orders", "definition": map[string]any{"sql": "SELECT * FROM orders WHERE paid"}}, own).status(201).str("id")
	version := e.do("GET", "/api/v1/dashboards/"+r.str("id")+"/versions", nil, own).status(200).str("versions.0.id")
	values := strings.NewReplacer("{project_id}", e.projectID, "{dashboard_id}", r.str("id"), "{version_id}", version, "{tile_path}", "rows.0.items.0",
		"{view_id}", vid, "{dataset_id}", f.orders)
	gets := 0
	for path, item := range doc.Paths.Map() {
		rest, ok := strings.CutPrefix(path, "/v1/api/")
		if !ok || item.Get == nil {
			continue
		}
		gets++
		a := e.do("GET", values.Replace("/api/v1/"+rest), nil, own)
		b := e.do("GET", values.Replace(path), nil, own)
		if a.Code != 200 || b.Code != a.Code || len(b.Body) == 0 {
			t.Errorf("GET %s: %d, its /api/v1 twin %d", path, b.Code, a.Code)
		}
	}
	if gets < 8 {
		t.Fatalf("only %d reads published under /v1/api", gets)
	}
	e.do("GET", "/v1/api/organizations/"+e.orgID, nil, own).status(404)
	e.do("GET", "/v1/api/projects/"+e.projectID+"/datasets", nil, own).status(404)
}

// A dataset whose every record was deleted has nothing to draw: generation answers 409
// nothing_to_show in the dashboard error shape, and no dashboard is made.
func TestDashboardNothingToShow(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	own := bearer(e.ownerToken)
	id := e.uploadAndCreate(e.ownerToken, "Gone", "gone.csv", "city,amount,day\nParis,10,2024-01-05\nRome,20,2024-02-05\n")
	if d := e.waitDataset(e.ownerToken, id); d.str("status") != "active" {
		t.Fatalf("dataset: %s", d.Body)
	}
	for _, rec := range []string{"1", "2"} {
		e.do("DELETE", "/api/v1/datasets/"+id+"/data/"+rec, nil, own).status(200)
	}
	e.do("POST", "/api/v1/datasets/"+id+"/dashboard/generate?use_ai=false", nil, own).dashError(409, "nothing_to_show")
	if l := e.do("GET", "/api/v1/projects/"+e.projectID+"/dashboards", nil, own).status(200); l.len("dashboards") != 0 {
		t.Fatalf("a dashboard was made: %s", l.Body)
	}
}

// TestDashboardMalformedIDs: a malformed dashboard or version id names no dashboard: every
// operation that takes one answers 404 not_found, as for an id that does not exist (a 400
// would be an answer the description does not declare for some of them), under both
// prefixes.
func TestDashboardMalformedIDs(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	own := bearer(e.ownerToken)
	ops := 0
	for path, item := range doc.Paths.Map() {
		if !strings.Contains(path, "{dashboard_id}") {
			continue
		}
		for method, op := range item.Operations() {
			ops++
			if op.Responses.Status(404) == nil {
				t.Errorf("%s %s: no 404 declared", method, path)
			}
			for _, ids := range [][2]string{{"not-a-dashboard", "dshv_x1"}, {"DSH_UPPER", "dshv_x1"}, {"dsh_nothere", "not-a-version"}, {"dsh_nothere", "dsh_wrongkind"}} {
				if ids[1] != "dshv_x1" && !strings.Contains(path, "{version_id}") {
					continue
				}
				p := strings.NewReplacer("{dashboard_id}", ids[0], "{version_id}", ids[1], "{tile_path}", "rows.0.items.0").Replace(path)
				e.do(method, p, nil, own).dashError(404, "not_found")
			}
		}
	}
	if ops < 20 {
		t.Fatalf("only %d operations take a dashboard id", ops)
	}
}

// TestDashboardFilterOptions: a generated category filter lists every value of its column,
// sorted, not the analysis' few samples (inspections across nine states, the file in no
// order); a value not listed still filters.
func TestDashboardFilterOptions(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	states := []string{"WA", "CA", "TX", "NY", "OR", "MA", "FL", "IL", "AZ"}
	var b strings.Builder
	b.WriteString("inspection_ref,state,score,inspected_on\n")
	count := map[string]int{}
	for i := range 180 {
		st := states[(i*7+i/9)%len(states)]
		count[st]++
		fmt.Fprintf(&b, "INS-%04d,%s,%d,2024-%02d-%02d\n", (i*37)%1000+1000, st, 50+(i*13)%50, 1+i%12, 1+i%28)
	}
	ds := e.uploadAndCreate(e.ownerToken, "Inspections", "inspections.csv", b.String())
	if d := e.waitDataset(e.ownerToken, ds); d.str("status") != "active" {
		t.Fatalf("dataset: %s", d.Body)
	}
	own := bearer(e.ownerToken)
	r := e.do("POST", "/api/v1/datasets/"+ds+"/dashboard/generate?use_ai=false", nil, own).status(201)
	want := slices.Sorted(maps.Keys(count))
	if r.str("spec.filters.0.id") != "state" || fmt.Sprint(r.get("spec.filters.0.options")) != fmt.Sprint(want) {
		t.Fatalf("the state filter offers %v, want %v", r.get("spec.filters.0.options"), want)
	}
	// The last week of the series is partial when the inspections stop before it ends,
	// worked out here from the file's dates.
	var lastDay time.Time
	for i := range 180 {
		lastDay = later(lastDay, time.Date(2024, time.Month(1+i%12), 1+i%28, 0, 0, 0, 0, time.UTC))
	}
	weekStart := lastDay.AddDate(0, 0, -((int(lastDay.Weekday()) + 6) % 7))
	week := tileByID(r, "count_per_week")
	wd := e.do("GET", "/api/v1/dashboards/"+r.str("id")+"/tiles/"+week+"/data", nil, own).status(200)
	wantPartial := any(nil)
	if lastDay.Before(weekStart.AddDate(0, 0, 6)) {
		wantPartial = weekStart.Format(time.RFC3339)
	}
	if week == "" || wd.get("partial_period") != wantPartial || wd.get("rows."+strconv.Itoa(wd.len("rows")-1)+".0") != weekStart.Format(time.RFC3339) {
		t.Fatalf("the last week (from %s, data to %s): %s", weekStart, lastDay, wd.Body)
	}
	countPath := tileByID(r, "record_count")
	for _, st := range []string{"TX", "NV"} {
		fq := url.QueryEscape(`{"state":"` + st + `"}`)
		d := e.do("GET", "/api/v1/dashboards/"+r.str("id")+"/tiles/"+countPath+"/data?filters="+fq, nil, own).status(200)
		if d.get("rows.0.0") != float64(count[st]) {
			t.Fatalf("inspections in %s: %s (want %d)", st, d.Body, count[st])
		}
	}
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
