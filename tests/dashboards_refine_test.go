// Refining dashboards in words, recommendations, generation with a language model, and a
// generation stream whose client goes away.

package tests

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"dataplatform/cmd/dataplatform/config"
)

func TestDashboardRefine(t *testing.T) {
	t.Parallel()
	f := newDashboardFixture(t)
	e, own := f.env, bearer(f.ownerToken)
	r := e.do("POST", "/api/v1/datasets/"+f.orders+"/dashboard/generate?use_ai=false", nil, own).status(201)
	id := r.str("id")
	refine := "/api/v1/dashboards/" + id + "/refine"
	ask := func(body map[string]any) *resp {
		t.Helper()
		return e.do("POST", refine, body, own).status(200)
	}
	tileData := func(r *resp, tileID string, query string) *resp {
		t.Helper()
		p := tileByID(r, tileID)
		if p == "" {
			t.Fatalf("no tile %s in %s", tileID, r.Body)
		}
		return e.do("GET", "/api/v1/dashboards/"+id+"/tiles/"+p+"/data"+query, nil, own).status(200)
	}

	// Add a chart of a measure by a category.
	a := ask(map[string]any{"user_prompt": "Add a chart of average amount by status"})
	if a.num("version") != 2 || !strings.Contains(a.str("changes.0"), `added "Average amount by status"`) {
		t.Fatalf("add: %s", a.Body)
	}
	byStatus := map[string][2]float64{}
	for _, o := range f.rows {
		v := byStatus[o.status]
		byStatus[o.status] = [2]float64{v[0] + o.amount, v[1] + 1}
	}
	d := tileData(a, "average_amount_by_status", "")
	if d.len("rows") != 4 {
		t.Fatalf("average by status: %s", d.Body)
	}
	for _, row := range d.get("rows").([]any) {
		rr := row.([]any)
		v := byStatus[rr[0].(string)]
		var got float64
		fmt.Sscan(fmt.Sprint(rr[1]), &got)
		if diff := got - v[0]/v[1]; diff > 1e-6 || diff < -1e-6 {
			t.Fatalf("average amount of %v: %v, want %g", rr[0], rr[1], v[0]/v[1])
		}
	}
	if v := e.do("GET", "/api/v1/dashboards/"+id+"/versions", nil, own).status(200); v.str("versions.0.kind") != "refine" || v.str("versions.0.message") != "Add a chart of average amount by status" {
		t.Fatalf("version of the refine: %s", v.Body)
	}
	// A chart per a time grain.
	a = ask(map[string]any{"user_prompt": "add a chart of orders per quarter"})
	if d := tileData(a, "orders_per_quarter", ""); d.len("rows") != 8 {
		t.Fatalf("orders per quarter (two years of dates from 2023-01-04): %s", d.Body)
	}
	// One tile's type, grain, top N, sort and title.
	pie := tileByID(a, "count_by_status")
	a = ask(map[string]any{"user_prompt": "make it a bar chart", "scope": "tile", "tile_path": pie})
	if tiles(a)[pie]["type"] != "bar" {
		t.Fatalf("type: %s", a.Body)
	}
	// On the whole dashboard, a tile named by what it shows: one fits, or each is named back.
	a = ask(map[string]any{"user_prompt": "make the region orders chart a pie chart", "scope": "dashboard"})
	if tiles(a)[tileByID(a, "count_by_region")]["type"] != "pie" {
		t.Fatalf("the region orders chart: %s", a.Body)
	}
	if b := e.do("POST", refine, map[string]any{"user_prompt": "make the status chart a line chart", "scope": "dashboard"}, own).dashError(400, "prompt_not_understood"); !strings.Contains(b.str("message"), "Orders by status") ||
		len(b.get("suggestions").([]any)) < 2 {
		t.Fatalf("several tiles are about status: %s", b.Body)
	}
	a = ask(map[string]any{"user_prompt": "change the time grain to month"})
	if p := tileByID(a, "count_per_week"); tiles(a)[p]["title"] != "Orders per month" || !strings.Contains(fmt.Sprint(tiles(a)[p]["query"]), "date_trunc('month'") {
		t.Fatalf("grain: %v", tiles(a)[p])
	}
	region := tileByID(a, "count_by_region")
	a = ask(map[string]any{"user_prompt": "show the top 3", "scope": "tile", "tile_path": region})
	if d := tileData(a, "count_by_region", ""); d.len("rows") != 4 || d.str("rows.3.0") != "Other" || d.get("rows.3.1") != float64(96) {
		t.Fatalf("top 3 of five regions of 48 orders: %s", d.Body)
	}
	a = ask(map[string]any{"user_prompt": "sort ascending", "scope": "tile", "tile_path": tileByID(a, "total_amount_by_status")})
	d = tileData(a, "total_amount_by_status", "")
	prev := -1.0
	for _, row := range d.get("rows").([]any) {
		var v float64
		fmt.Sscan(fmt.Sprint(row.([]any)[1]), &v)
		if v < prev {
			t.Fatalf("not ascending: %s", d.Body)
		}
		prev = v
	}
	a = ask(map[string]any{"user_prompt": "rename it to \"Revenue mix\"", "scope": "tile", "tile_path": tileByID(a, "total_amount_by_status")})
	if tiles(a)[tileByID(a, "total_amount_by_status")]["title"] != "Revenue mix" {
		t.Fatalf("rename: %s", a.Body)
	}
	// A filter on a column, bound in the tiles that read the dataset.
	a = ask(map[string]any{"user_prompt": "add a filter on status"})
	if !strings.Contains(fmt.Sprint(a.get("spec.filters")), "f_status") {
		t.Fatalf("filter: %s", a.Body)
	}
	if d := tileData(a, "record_count", "?filters="+url.QueryEscape(`{"status":"shipped"}`)); d.get("rows.0.0") != float64(60) {
		t.Fatalf("shipped orders: %s", d.Body)
	}
	// Remove a tile by its title.
	n := len(tiles(a))
	a = ask(map[string]any{"user_prompt": "remove the Latest Orders tile"})
	if len(tiles(a)) != n-1 || tileByID(a, "latest_records") != "" {
		t.Fatalf("remove: %s", a.Body)
	}
	version := a.num("version")
	// What the rules cannot apply is refused with suggestions, and changes nothing.
	for _, bad := range []map[string]any{
		{"user_prompt": "make it sparkle"},
		{"user_prompt": "add a chart of colour by region"},
		{"user_prompt": "remove the Weather tile"},
		{"user_prompt": "make it a pie chart", "scope": "tile", "tile_path": tileByID(a, "record_count")},
	} {
		b := e.do("POST", refine, bad, own).dashError(400, "prompt_not_understood")
		if len(b.get("suggestions").([]any)) == 0 {
			t.Fatalf("no suggestions: %s", b.Body)
		}
	}
	e.do("POST", refine, map[string]any{"user_prompt": "sort ascending", "scope": "tile"}, own).dashError(400, "validation_error")
	e.do("POST", refine, map[string]any{"user_prompt": "sort ascending", "scope": "tile", "tile_path": "rows.99.items.0"}, own).dashError(400, "validation_error")
	e.do("POST", "/v1/api/dashboards/"+id+"/refine", map[string]any{"user_prompt": ""}, own).dashError(400, "validation_error")
	if g := e.do("GET", "/api/v1/dashboards/"+id, nil, own).status(200); g.num("version") != version {
		t.Fatalf("a refused prompt changed the dashboard: %s", g.Body)
	}
}

func TestDashboardRecommendations(t *testing.T) {
	t.Parallel()
	f := newDashboardFixture(t)
	e, own := f.env, bearer(f.ownerToken)
	base := "/api/v1/projects/" + e.projectID + "/dashboards/"
	r := e.do("POST", base+"recommend-intent", map[string]any{}, own).status(200)
	found := false
	for _, s := range r.get("suggestions").([]any) {
		m := s.(map[string]any)
		if m["intent"] == "Total amount by customer country" && len(m["dataset_ids"].([]any)) == 2 {
			found = true
		}
	}
	if !found {
		t.Fatalf("no intent across the relationship: %s", r.Body)
	}
	if r := e.do("POST", "/v1/api/projects/"+e.projectID+"/dashboards/recommend-intent", map[string]any{"dataset_ids": []string{f.customers}, "limit": 2}, own).status(200); r.len("suggestions") > 2 ||
		strings.Contains(string(r.Body), f.orders) {
		t.Fatalf("narrowed to customers: %s", r.Body)
	}
	e.do("POST", base+"recommend-intent", map[string]any{"dataset_ids": []string{"ds_nosuchdataset"}}, own).dashError(400, "validation_error")

	d := e.do("POST", base+"recommend-datasets", map[string]any{"intent": "customers by segment"}, own).status(200)
	if d.str("ranked_by") != "search" || d.str("datasets.0.id") != f.customers || !strings.Contains(d.str("datasets.0.reason"), "segment") {
		t.Fatalf("ranked for the intent: %s", d.Body)
	}
	d = e.do("POST", base+"recommend-datasets", map[string]any{"intent": "zzxq vvkw"}, own).status(200)
	if d.str("ranked_by") != "row_count" || d.str("datasets.0.id") != f.orders || !strings.Contains(d.str("datasets.0.reason"), "by size") {
		t.Fatalf("ranked by size: %s", d.Body)
	}
	e.do("POST", base+"recommend-datasets", map[string]any{}, own).dashError(400, "validation_error")
	_, viewer := e.member(e.orgID, "viewer")
	e.do("POST", base+"recommend-datasets", map[string]any{"intent": "x"}, bearer(viewer)).dashError(403, "permission_denied")
}

// TestDashboardWithAModel: with DP_LLM_* set and use_ai, a model server (started here, speaking
// the chat completions API) drafts the tiles; each passes the checks and a run, what it gets
// wrong is replaced by the generator's, and a model that is down or answers nonsense gives
// the deterministic dashboard with a warning.
func TestDashboardWithAModel(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	answer := ""
	var prompts []string
	var slow time.Duration
	model := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Messages []struct{ Role, Content string } `json:"messages"`
		}
		if r.URL.Path != "/v1/chat/completions" || json.NewDecoder(r.Body).Decode(&req) != nil || len(req.Messages) != 2 {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		mu.Lock()
		prompts = append(prompts, req.Messages[1].Content)
		a, wait := answer, slow
		mu.Unlock()
		time.Sleep(wait)
		if a == "" {
			http.Error(w, "overloaded", http.StatusServiceUnavailable)
			return
		}
		json.NewEncoder(w).Encode(map[string]any{"choices": []any{map[string]any{"message": map[string]any{"content": a}}}})
	}))
	defer model.Close()
	f := newDashboardFixture(t, func(c *config.Config) { c.LLMBaseURL, c.LLMModel = model.URL+"/v1", "dash-model" })
	e, own := f.env, bearer(f.ownerToken)
	gen := "/api/v1/datasets/" + f.orders + "/dashboard/generate?force=true"
	say := func(a string) {
		mu.Lock()
		answer = a
		mu.Unlock()
	}
	say("```json\n" + `{"title": "Orders", "tiles": [
		{"title": "Paid orders", "type": "kpi", "sql": "SELECT count(*) AS value FROM orders WHERE paid", "encoding": {"value": "value"}},
		{"title": "Broken", "type": "bar", "sql": "SELECT nope, count(*) AS n FROM orders GROUP BY 1", "encoding": {"x": "nope", "y": ["n"]}},
		{"title": "Sneaky", "type": "table", "sql": "DELETE FROM orders", "encoding": {}},
		{"title": "Nothing", "type": "kpi", "sql": "SELECT count(*) AS value FROM orders WHERE amount < 0 HAVING count(*) > 0", "encoding": {"value": "value"}},
		{"title": "Wheel", "type": "radar", "sql": "SELECT 1", "encoding": {}}]}` + "\n```")
	r := e.do("POST", gen, nil, own).status(201)
	id := r.str("id")
	paid := 0
	for _, o := range f.rows {
		if o.paid {
			paid++
		}
	}
	p := tileByID(r, "model_1")
	if r.str("generated_by") != "model" || p == "" || tiles(r)[p]["title"] != "Paid orders" {
		t.Fatalf("the model's tile: %s", r.Body)
	}
	if d := e.do("GET", "/api/v1/dashboards/"+id+"/tiles/"+p+"/data", nil, own).status(200); d.get("rows.0.0") != float64(paid) {
		t.Fatalf("paid orders: %s", d.Body)
	}
	for _, gone := range []string{"model_2", "model_3", "model_4", "model_5"} {
		if tileByID(r, gone) != "" {
			t.Fatalf("%s was kept: %s", gone, r.Body)
		}
	}
	if w := fmt.Sprint(r.get("warnings")); !strings.Contains(w, `"Broken" left out`) || !strings.Contains(w, `"Sneaky" left out`) || !strings.Contains(w, `"Nothing" left out: no rows`) {
		t.Fatalf("warnings: %s", w)
	}
	if n := len(tiles(r)); n < 8 || n > 15 || tileByID(r, "record_count") == "" {
		t.Fatalf("the generator fills the rest: %d tiles", n)
	}
	mu.Lock()
	prompt := prompts[0]
	mu.Unlock()
	for _, want := range []string{"orders (\"Orders\", 240 rows)", "amount numeric", "region text, 5 distinct"} {
		if !strings.Contains(prompt, want) {
			t.Fatalf("the prompt lacks %q:\n%s", want, prompt)
		}
	}
	// A model that is down, or answers nonsense: the deterministic dashboard, with a warning.
	for _, a := range []string{"", "I would love to help with dashboards!"} {
		say(a)
		r := e.do("POST", gen, nil, own).status(200)
		if r.str("generated_by") != "deterministic" || !strings.Contains(r.str("warnings.0"), "deterministic generator built the dashboard") || tileByID(r, "model_1") != "" {
			t.Fatalf("model answer %q: %s", a, r.Body)
		}
	}
	// use_ai=false does not ask.
	mu.Lock()
	n := len(prompts)
	mu.Unlock()
	cur := e.do("POST", gen+"&use_ai=false", nil, own).status(200)
	mu.Lock()
	if len(prompts) != n {
		t.Fatalf("use_ai=false asked the model")
	}
	mu.Unlock()

	// Refine with the model: its revision passes the checks and is kept; one that does not
	// is replaced by the built-in rules' reading, with a warning.
	var spec map[string]any
	_ = json.Unmarshal(mustJSON(cur.get("spec")), &spec)
	spec["title"] = "Orders, revised"
	revised, _ := json.Marshal(map[string]any{"spec": spec, "changes": []string{"retitled the dashboard"}})
	say(string(revised))
	rf := e.do("POST", "/api/v1/dashboards/"+id+"/refine", map[string]any{"user_prompt": "call the dashboard Orders, revised"}, own).status(200)
	if rf.str("spec.title") != "Orders, revised" || rf.str("changes.0") != "retitled the dashboard" || rf.get("warnings") != nil {
		t.Fatalf("the model's refinement: %s", rf.Body)
	}
	spec["rows"].([]any)[0].(map[string]any)["items"].([]any)[0].(map[string]any)["query"] = map[string]any{"sql": "DROP TABLE orders"}
	bad, _ := json.Marshal(map[string]any{"spec": spec})
	for _, a := range []string{string(bad), "no JSON here", ""} {
		say(a)
		rf := e.do("POST", "/api/v1/dashboards/"+id+"/refine", map[string]any{"user_prompt": "show the top 3", "scope": "tile",
			"tile_path": tileByID(rf, "count_by_region")}, own).status(200)
		if !strings.Contains(rf.str("warnings.0"), "the built-in rules applied the prompt") || !strings.Contains(rf.str("changes.0"), "top 3") {
			t.Fatalf("model answer %.40q: %s", a, rf.Body)
		}
	}

	// A model that takes its time: the stream sends heartbeats meanwhile.
	say(`{"tiles": []}`)
	mu.Lock()
	slow = 5 * time.Second
	mu.Unlock()
	st := e.do("POST", "/api/v1/datasets/"+f.orders+"/dashboard/generate/stream?force=true", nil, own).status(200)
	_, evs := sseEvents(t, st.Body)
	beats := 0
	for _, ev := range evs {
		if ev["type"] == "heartbeat" && ev["data"].(map[string]any)["phase"] == "metrics" {
			beats++
		}
	}
	if beats == 0 || evs[len(evs)-1]["type"] != "complete" {
		t.Fatalf("no heartbeat while the model thought: %s", st.Body)
	}
}

// TestDashboardStreamClientGone: a client that goes away while its dashboard is generated
// cancels the work: the tile queries stop on their backends and nothing is kept.
func TestDashboardStreamClientGone(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *config.Config) { c.RateLimits = "queries=100000-M" })
	var csv strings.Builder
	csv.WriteString("day,amount,status,region\n")
	for i := 0; i < 300000; i++ {
		fmt.Fprintf(&csv, "2024-%02d-%02d,%d.5,%s,%s\n", 1+i%12, 1+i%28, i%977, dashStatuses[i%4], dashRegions[i%5])
	}
	id := e.uploadAndCreate(e.ownerToken, "Big", "big.csv", csv.String())
	if d := e.waitDataset(e.ownerToken, id); d.str("status") != "active" {
		t.Fatalf("big: %s", d.Body)
	}
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "POST", e.ts.URL+"/api/v1/datasets/"+id+"/dashboard/generate/stream?use_ai=false", nil)
	req.Header.Set("Authorization", "Bearer "+e.ownerToken)
	res, err := http.DefaultClient.Do(req)
	if err != nil || res.StatusCode != 200 {
		t.Fatalf("stream: %v %v", err, res)
	}
	// Read until the tiles' queries run.
	rd := bufio.NewReader(res.Body)
	for {
		line, err := rd.ReadString('\n')
		if err != nil {
			t.Fatalf("the stream ended before validating: %v", err)
		}
		if strings.Contains(line, `"phase":"validating"`) {
			break
		}
	}
	type stmt struct {
		PID   int       `db:"pid"`
		Start time.Time `db:"query_start"`
	}
	var running []stmt
	for len(running) == 0 {
		if err := e.st.DB.Select(&running, `SELECT pid, query_start FROM pg_stat_activity WHERE state = 'active' AND pid <> pg_backend_pid()
			AND query LIKE '%`+id+`%' AND backend_type = 'client backend' AND query NOT LIKE 'autovacuum%'`); err != nil {
			t.Fatal(err)
		}
		if len(running) == 0 {
			if n := e.countRows(`SELECT count(*) FROM platform.dashboards`); n > 0 {
				t.Skip("the generation finished before a tile query could be seen (a fast machine)")
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	cancel()
	res.Body.Close()
	for _, s := range running {
		for {
			var n int
			if err := e.st.DB.Get(&n, `SELECT count(*) FROM pg_stat_activity WHERE pid = $1 AND query_start = $2 AND state <> 'idle'`, s.PID, s.Start); err != nil {
				t.Fatal(err)
			}
			if n == 0 {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	// The handler ends with its work: nothing kept, the abandonment logged, the server serves on.
	for !strings.Contains(e.logs.String(), "dashboard generation abandoned by its client") {
		time.Sleep(20 * time.Millisecond)
	}
	if n := e.countRows(`SELECT count(*) FROM platform.dashboards`); n != 0 {
		t.Fatalf("%d dashboards kept after the client left", n)
	}
	e.do("GET", "/api/v1/projects/"+e.projectID+"/dashboards", nil, bearer(e.ownerToken)).status(200)
}
