package tests

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// js is v as a JavaScript literal.
func js(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// run evaluates expression in the page and fails the test when it throws.
func (b *browser) run(expression string) any {
	b.t.Helper()
	v, err := b.eval(expression)
	if err != nil {
		b.t.Fatalf("in the page: %v\n%s", err, expression)
	}
	return v
}

// shot keeps a screenshot of the page as name.png under $DP_SCREENSHOT_DIR, when set.
func (b *browser) shot(name string) {
	b.t.Helper()
	dir := os.Getenv("DP_SCREENSHOT_DIR")
	if dir == "" {
		return
	}
	var s struct {
		Data string `json:"data"`
	}
	b.call(b.session, "Page.captureScreenshot", map[string]any{"format": "png"}, &s)
	raw, err := base64.StdEncoding.DecodeString(s.Data)
	if err != nil {
		b.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "console-"+name+".png"), raw, 0o644); err != nil {
		b.t.Fatal(err)
	}
}

// axeSource is axe-core from the console's pinned npm tools (scripts/ensure-node-tools.sh).
func axeSource(t *testing.T) string {
	t.Helper()
	raw, err := os.ReadFile("../scripts/tools/console/node_modules/axe-core/axe.min.js")
	if err != nil {
		t.Fatalf("axe-core is not installed: run scripts/ensure-node-tools.sh (go tool task test does): %v", err)
	}
	return string(raw)
}

// accessible runs axe-core on the page as it is and fails on serious or critical violations.
func (b *browser) accessible(axe, where string) {
	b.t.Helper()
	if v := b.run(`typeof axe`); v != "object" {
		b.run(axe + ";true")
	}
	out := b.run(`axe.run(document, {resultTypes: ["violations"]}).then(function (r) {
  return r.violations.filter(function (v) { return v.impact === "serious" || v.impact === "critical"; })
    .map(function (v) { return v.id + " (" + v.impact + "): " + v.help + " at " + v.nodes.slice(0, 3).map(function (n) { return n.target.join(" "); }).join(" | "); });
})`)
	if l, _ := out.([]any); len(l) > 0 {
		b.t.Errorf("accessibility of %s: %v", where, l)
	}
}

// keyCodes are the Windows virtual key codes Chromium needs to act on a key.
var keyCodes = map[string]int{"Enter": 13, "Escape": 27, "Tab": 9, "Home": 36, "End": 35, "ArrowLeft": 37, "ArrowUp": 38, "ArrowRight": 39, "ArrowDown": 40}

// key presses and releases a key in the page, as a keyboard would.
func (b *browser) key(name string) {
	b.t.Helper()
	for _, typ := range []string{"rawKeyDown", "keyUp"} {
		p := map[string]any{"type": typ, "key": name, "code": name, "windowsVirtualKeyCode": keyCodes[name]}
		if name == "Enter" && typ == "rawKeyDown" {
			b.call(b.session, "Input.dispatchKeyEvent", map[string]any{"type": "keyDown", "key": name, "code": name, "windowsVirtualKeyCode": 13, "text": "\r"}, nil)
			continue
		}
		b.call(b.session, "Input.dispatchKeyEvent", p, nil)
	}
}

// consoleCustomers is a CSV of n customers keyed by customer_id, in four regions.
func consoleCustomers(n int) string {
	var s strings.Builder
	s.WriteString("customer_id,name,region,amount,signup\n")
	regions := []string{"North", "South", "East", "West"}
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&s, "%d,Customer %d,%s,%.2f,2024-%02d-%02d\n", i, i, regions[i%4], float64(i)*1.5, 1+i%12, 1+i%28)
	}
	return s.String()
}

// TestConsoleInBrowser walks the web console's main flows in headless Chromium as a person
// would: sign in at /, create a project, drop a file and watch it become active, open the
// grid, sort, filter, edit a cell (and lose a conflict without overwriting), create and delete
// a row, run SQL and a plain-English question with a chart, generate and open a dashboard,
// create an API key, invite a member, add a webhook and see its test delivery; with no console
// errors, no CSP refusals and no serious or critical axe-core violation, light and dark, wide
// and narrow.
func TestConsoleInBrowser(t *testing.T) {
	t.Parallel()
	e := newEnv(t, webhookNetworks)
	own := bearer(e.ownerToken)
	axe := axeSource(t)

	// Without a session, / sends a browser to sign in and back.
	// (/ is a page outside the description: asked for directly, not through e.do's validation.)
	req, _ := http.NewRequest("GET", e.ts.URL+"/", nil)
	req.Header.Set("Accept", "text/html")
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	r, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	r.Body.Close()
	if r.StatusCode != http.StatusSeeOther || r.Header.Get("Location") != "/sign-in?next=%2F" {
		t.Fatalf("GET / without a session: %d %s", r.StatusCode, r.Header.Get("Location"))
	}
	var hooks atomic.Int64
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		hooks.Add(1)
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(hook.Close)

	b := signedInConsole(t, e)
	if v := b.run(`document.getElementById("project").value`); v != e.projectID {
		t.Fatalf("the project switcher shows %v, want %s", v, e.projectID)
	}
	b.accessible(axe, "the datasets list")
	// The page's own policy: scripts and styles of this service only, nothing inline, no eval.
	hs := b.run(`fetch("/", {credentials: "same-origin", headers: {Accept: "text/html"}}).then(function (r) {
		return [r.status, r.headers.get("content-security-policy"), r.headers.get("x-frame-options"), r.headers.get("cache-control")].join("\n"); })`).(string)
	if want := "200\ndefault-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'\nDENY\nno-store"; hs != want {
		t.Fatalf("the console's headers:\n%s\nwant\n%s", hs, want)
	}

	// 1. A new project, chosen at once.
	b.run(`document.getElementById("new-project").click(); true`)
	b.waitFor("the new-project dialog", `!!document.querySelector("dialog.modal input")`)
	b.run(`document.querySelector("dialog.modal input").value = "Console Project"; document.querySelector("dialog.modal form").requestSubmit(); true`)
	b.waitFor("the new project chosen", `document.getElementById("project").selectedOptions[0].textContent === "Console Project" && document.body.dataset.ready === "true"`)
	project := b.run(`document.getElementById("project").value`).(string)
	if e.do("GET", "/api/v1/projects/"+project, nil, own).status(200).str("name") != "Console Project" {
		t.Fatal("the project is not there")
	}

	// A database connection is tested before a dataset is made of it (here: a refused password).
	{
		u, err := url.Parse(e.dbURL)
		if err != nil {
			t.Fatal(err)
		}
		b.run(`document.getElementById("connect-db").click(); true`)
		b.waitFor("the connection form", `!!document.getElementById("connect-form")`)
		b.run(fmt.Sprintf(`(function () { var f = document.getElementById("connect-form"), i = f.querySelectorAll("input, select");
			var v = [%s, "postgresql", %s, %s, %s, %s, "wrong-password", "disable"];
			i.forEach(function (el, k) { el.value = v[k]; }); f.querySelector(".actions button.ghost:nth-child(2)").click(); return true; })()`,
			js("Platform"), js(u.Hostname()), js(u.Port()), js(strings.TrimPrefix(u.Path, "/")), js(u.User.Username())))
		b.waitFor("the connection test", `document.getElementById("connection-test").textContent.length > 0 && document.getElementById("connection-test").textContent !== "Testing…"`)
		if v := b.run(`document.querySelector('#connect-form button[type="submit"]').disabled`); v != true {
			t.Fatalf("a failed connection test lets the dataset be created: %v", b.run(`document.getElementById("connection-test").textContent`))
		}
		b.accessible(axe, "the connection form")
		b.run(`document.querySelector("#connect-form .actions button").click(); true`)
	}

	// 2. Drop a file, name the key column, watch the bytes and the phases until active.
	b.waitFor("the drop zone", `!!document.getElementById("drop")`)
	b.run(fmt.Sprintf(`(function () { var dt = new DataTransfer(); dt.items.add(new File([%s], "customers.csv", {type: "text/csv"}));
		document.getElementById("drop").dispatchEvent(new DragEvent("drop", {dataTransfer: dt, bubbles: true, cancelable: true})); return true; })()`, js(consoleCustomers(500))))
	b.waitFor("the upload form", `!!document.querySelector("form.upload .upload-key")`)
	b.run(`document.querySelector("form.upload .upload-name").value = "Customers"; document.querySelector("form.upload .upload-key").value = "customer_id";
		document.querySelector("form.upload").requestSubmit(); true`)
	b.waitFor("the dataset active", `!!document.querySelector('.phase[data-status="active"]')`)
	if v := b.run(`document.querySelector("form.upload progress").value === document.querySelector("form.upload progress").max`); v != true {
		t.Fatal("the byte progress bar did not reach the end")
	}
	b.shot("upload")
	list := e.do("GET", "/api/v1/projects/"+project+"/datasets", nil, own).status(200)
	ds := list.str("datasets.0.id")
	if list.str("datasets.0.status") != "active" || list.num("datasets.0.source.row_count") != 500 {
		t.Fatalf("the dataset: %s", list.Body)
	}
	sch := e.do("GET", "/api/v1/projects/"+project+"/datasets/"+ds+"/schema", nil, own).status(200)
	if sch.str("tables.0.columns.0.name") != "customer_id" || sch.get("tables.0.columns.0.is_primary_key") != true {
		t.Fatalf("the key column is not customer_id: %s", sch.Body)
	}

	// 3. The grid: sort by clicking a column, filter, edit, conflict, new and deleted rows.
	b.run(`location.hash = "#/datasets/` + ds + `/records"; true`)
	grid := `document.getElementById("dataset-panel")`
	b.waitFor("the grid", grid+` && `+grid+`.dataset.loaded === "true" && !!document.getElementById("cell-0-0")`)
	const cellOf = `function cellOf(r, col) { var i = Array.prototype.findIndex.call(document.querySelectorAll(".g-head button.sort"), function (b) { return b.dataset.col === col; });
		var c = document.getElementById("cell-" + r + "-" + i); return c ? c.textContent : null; }`
	b.accessible(axe, "the records grid")
	b.run(`document.querySelector('.g-head button.sort[data-col="amount"]').click(); true`)
	b.waitFor("ascending amounts", `(function () { `+cellOf+` return `+grid+`.dataset.loaded === "true" && cellOf(0, "amount") === "1.5"; })()`)
	b.run(`document.querySelector('.g-head button.sort[data-col="amount"]').click(); true`)
	b.waitFor("descending amounts", `(function () { `+cellOf+` return `+grid+`.dataset.loaded === "true" && cellOf(0, "amount") === "750"; })()`)
	b.run(`document.getElementById("filter-column").value = "region"; document.getElementById("filter-op").value = "eq";
		document.getElementById("filter-value").value = "North"; document.getElementById("filter-value").form.requestSubmit(); true`)
	b.waitFor("only North", `(function () { `+cellOf+` if (`+grid+`.dataset.loaded !== "true" || !document.querySelector(".chip")) return false;
		for (var r = 0; r < 10; r++) { if (cellOf(r, "region") !== "North") return false; } return cellOf(0, "amount") === "750"; })()`)
	if v := b.run(`document.getElementById("grid-count").textContent`); !strings.HasPrefix(fmt.Sprint(v), "125 rows") {
		t.Fatalf("the count of North: %v", v)
	}
	b.run(`document.getElementById("grid-search").value = "Customer 496"; document.getElementById("grid-search").dispatchEvent(new Event("input")); true`)
	b.waitFor("the search", `(function () { `+cellOf+` return `+grid+`.dataset.loaded === "true" && cellOf(0, "customer_id") === "496" && !document.getElementById("cell-1-0"); })()`)
	b.shot("grid")
	// Edit the name of customer 496 in place.
	edit := func(value string) {
		b.run(`(function () { ` + cellOf + ` var i = Array.prototype.findIndex.call(document.querySelectorAll(".g-head button.sort"), function (b) { return b.dataset.col === "name"; });
			document.getElementById("cell-0-" + i).dispatchEvent(new MouseEvent("dblclick", {bubbles: true})); return true; })()`)
		b.waitFor("the cell editor", `!!document.querySelector(".cell-input")`)
		b.run(`var i = document.querySelector(".cell-input"); i.value = ` + js(value) + `; i.dispatchEvent(new KeyboardEvent("keydown", {key: "Enter", bubbles: true})); true`)
	}
	rec := "/api/v1/datasets/" + ds + "/data/496"
	edit("Edited In Grid")
	b.waitFor("the edit saved", `!document.querySelector(".cell-input") && !document.getElementById("conflict")`)
	for i := 0; e.do("GET", rec, nil, own).status(200).str("name") != "Edited In Grid"; i++ {
		if i > 50 {
			t.Fatal("the edit did not reach the record")
		}
		b.run(`new Promise(function (r) { setTimeout(r, 100); })`)
	}
	// Someone else changes the record; the grid's edit of the old version is refused and shown.
	cur := e.do("GET", rec, nil, own).status(200)
	e.do("PATCH", rec, map[string]any{"name": "Changed Elsewhere", "version": cur.num("version")}, own).status(200)
	edit("Stale Edit")
	b.waitFor("the conflict shown", `!!document.getElementById("conflict")`)
	if got := e.do("GET", rec, nil, own).status(200).str("name"); got != "Changed Elsewhere" {
		t.Fatalf("the conflicting edit overwrote the record: %q", got)
	}
	b.shot("conflict")
	b.run(`document.querySelector("#conflict button").click(); true`)
	b.waitFor("the current row loaded", `(function () { `+cellOf+` return !document.getElementById("conflict") && cellOf(0, "name") === "Changed Elsewhere"; })()`)
	// The keyboard alone: into the grid, one cell right, Enter edits, Enter saves.
	b.run(`document.getElementById("records-grid").focus(); true`)
	b.key("Home")
	b.key("ArrowRight")
	b.key("Enter")
	b.waitFor("the keyboard's cell editor", `document.activeElement && document.activeElement.classList.contains("cell-input")`)
	b.run(`document.activeElement.select(); true`)
	b.call(b.session, "Input.insertText", map[string]any{"text": "Typed Name"}, nil)
	b.key("Enter")
	b.waitFor("the typed edit saved", `!document.querySelector(".cell-input") && document.activeElement.id === "records-grid"`)
	for i := 0; e.do("GET", rec, nil, own).status(200).str("name") != "Typed Name"; i++ {
		if i > 50 {
			t.Fatal("the keyboard edit did not reach the record")
		}
		b.run(`new Promise(function (r) { setTimeout(r, 100); })`)
	}
	// A new row, then deleted.
	b.run(`document.getElementById("new-row").click(); true`)
	b.waitFor("the new-record dialog", `!!document.querySelector("form.new-record")`)
	b.run(`(function () { var v = {customer_id: "9001", name: "Newcomer", region: "North", amount: "12.5", signup: "2025-01-02"};
		document.querySelectorAll("form.new-record input").forEach(function (i) { i.value = v[i.dataset.col] || ""; });
		document.querySelector("form.new-record").requestSubmit(); return true; })()`)
	b.waitFor("the new row first", `(function () { `+cellOf+` return !document.querySelector("dialog.modal") && cellOf(0, "customer_id") === "9001"; })()`)
	if e.do("GET", "/api/v1/datasets/"+ds+"/data/9001", nil, own).status(200).str("name") != "Newcomer" {
		t.Fatal("the new record is not there")
	}
	b.run(`document.getElementById("cell-0-1").click(); document.getElementById("delete-row").click(); true`)
	b.waitFor("the delete confirmation", `!!document.querySelector("dialog.modal [data-confirm]")`)
	b.accessible(axe, "the delete confirmation")
	b.run(`document.querySelector("dialog.modal [data-confirm]").click(); true`)
	b.waitFor("the row gone", `(function () { `+cellOf+` return !document.querySelector("dialog.modal") && cellOf(0, "customer_id") === "496"; })()`)
	e.do("GET", "/api/v1/datasets/"+ds+"/data/9001", nil, own).status(404)
	// Schema with statistics and the API panel.
	b.run(`location.hash = "#/datasets/` + ds + `/schema"; true`)
	b.waitFor("the schema", `document.body.dataset.ready === "true" && !!document.querySelector("#dataset-panel meter")`)
	b.accessible(axe, "the schema")
	b.run(`location.hash = "#/datasets/` + ds + `/api"; true`)
	b.waitFor("the API panel", `document.body.dataset.ready === "true" && !!document.getElementById("curl") && document.querySelectorAll("#dataset-panel table").length > 0`)
	if v := b.run(`document.getElementById("curl").textContent`); !strings.Contains(fmt.Sprint(v), "/api/v1/datasets/"+ds+"/data") {
		t.Fatalf("curl: %v", v)
	}
	b.accessible(axe, "the API panel")

	// Relationships click through: an order's customer_id opens that customer.
	{
		body, h := multipartBody(t, "orders.csv", []byte("order_id,customer_id,total\n1,7,10\n2,7,20\n3,12,5\n"), nil)
		up := e.do("POST", "/api/v1/projects/"+project+"/datasets/upload", body, own, h).status(201)
		orders := e.do("POST", "/api/v1/projects/"+project+"/datasets", map[string]any{"name": "Orders", "source": map[string]any{"file_id": up.str("file_id")}}, own).status(202).str("id")
		related := func() bool {
			r := e.do("GET", "/api/v1/projects/"+project+"/datasets/"+orders+"/schema", nil, own)
			l, _ := r.get("relationships").([]any)
			return r.Code == 200 && len(l) > 0
		}
		for i := 0; !related(); i++ {
			if i > 300 {
				t.Fatal("no relationship inferred from orders to customers")
			}
			b.run(`new Promise(function (r) { setTimeout(r, 100); })`)
		}
		b.run(`location.hash = "#/datasets/` + orders + `/records"; true`)
		b.waitFor("the orders grid", grid+` && `+grid+`.dataset.loaded === "true" && !!document.getElementById("cell-0-0")`)
		b.run(`(function () { var i = Array.prototype.findIndex.call(document.querySelectorAll(".g-head button.sort"), function (b) { return b.dataset.col === "customer_id"; });
			document.getElementById("cell-0-" + i).click(); return true; })()`)
		b.waitFor("the related button", `!document.getElementById("open-related").disabled`)
		b.run(`document.getElementById("open-related").click(); true`)
		b.waitFor("customer 7", `(function () { `+cellOf+` return location.hash.indexOf("#/datasets/`+ds+`/records?customer_id=7") === 0 && `+grid+` && `+grid+`.dataset.loaded === "true" && cellOf(0, "customer_id") === "7" && !document.getElementById("cell-1-0"); })()`)
	}

	// Re-import (upsert) into Customers, then delete Orders, from the datasets list.
	b.run(`location.hash = "#/datasets"; true`)
	b.waitFor("the datasets list", `document.body.dataset.ready === "true" && document.querySelectorAll("#datasets tbody tr").length === 2`)
	b.run(`document.querySelector('#datasets tr[data-id="` + ds + `"] .row-actions button').click(); true`)
	b.waitFor("the re-import dialog", `!!document.querySelector('dialog.modal input[type="file"]')`)
	b.run(`(function () { var dt = new DataTransfer(); dt.items.add(new File(["customer_id,name,region,amount,signup\n1,Renamed One,South,1.5,2024-02-02\n"], "fix.csv", {type: "text/csv"}));
		var d = document.querySelector("dialog.modal"); d.querySelector('input[type="file"]').files = dt.files; d.querySelector("select").value = "upsert";
		d.querySelector("form").requestSubmit(); return true; })()`)
	b.waitFor("the import done", `!!document.querySelector('dialog.modal .phase[data-status="active"]')`)
	if got := e.do("GET", "/api/v1/datasets/"+ds+"/data/1", nil, own).status(200).str("name"); got != "Renamed One" {
		t.Fatalf("the upsert: %q", got)
	}
	b.accessible(axe, "the re-import dialog")
	b.run(`document.querySelector("dialog.modal .actions button").click(); true`)
	b.waitFor("the dialog closed", `!document.querySelector("dialog.modal")`)
	b.run(`document.querySelector('#datasets tr:not([data-id="` + ds + `"]) .row-actions .danger-text').click(); true`)
	b.waitFor("the delete confirmation", `!!document.querySelector("dialog.modal [data-confirm]")`)
	b.run(`document.querySelector("dialog.modal [data-confirm]").click(); true`)
	b.waitFor("Orders gone", `!document.querySelector("dialog.modal") && document.querySelectorAll("#datasets tbody tr").length === 1`)
	if l := e.do("GET", "/api/v1/projects/"+project+"/datasets", nil, own).status(200).len("datasets"); l != 1 {
		t.Fatalf("%d datasets after the delete", l)
	}

	// 4. Queries: SQL in the editor, results and chart; a plain-English question.
	b.run(`location.hash = "#/queries"; true`)
	b.waitFor("the SQL editor", `document.body.dataset.ready === "true" && !!window.consoleEditor && !!document.getElementById("sql-editor").shadowRoot.querySelector(".cm-content")`)
	if v := b.run(`window.consoleEditor.state.doc.toString()`); !strings.Contains(fmt.Sprint(v), "FROM customers") {
		t.Fatalf("the editor's first query: %v", v)
	}
	b.run(`window.consoleEditor.dispatch({changes: {from: 0, to: window.consoleEditor.state.doc.length,
		insert: "SELECT region, sum(amount) AS total FROM customers GROUP BY region ORDER BY region"}}); document.getElementById("run-sql").click(); true`)
	b.waitFor("the results and chart", `!!document.getElementById("result-meta") && document.querySelectorAll("table.results tbody tr").length === 4 && document.getElementById("chart") && document.getElementById("chart").dataset.drawn === "true"`)
	b.accessible(axe, "the queries page")
	b.shot("sql")
	b.run(`document.getElementById("explain").click(); true`)
	b.waitFor("the plan", `!!document.getElementById("plan-summary")`)
	b.waitFor("the history", `document.querySelectorAll("#history tbody tr").length >= 1 && document.getElementById("history").textContent.indexOf("GROUP BY region") >= 0`)
	b.run(`document.getElementById("run-sql").click(); true`)
	b.waitFor("the results again", `document.querySelectorAll("table.results tbody tr").length === 4`)
	// Exported, with a download link once the job is done.
	b.run(`document.getElementById("export").click(); true`)
	b.waitFor("the export link", `!!document.getElementById("export-link")`)
	if v := b.run(`fetch(document.getElementById("export-link").href, {credentials: "same-origin"}).then(function (r) { return r.text(); })`); !strings.HasPrefix(fmt.Sprint(v), "region,total") {
		t.Fatalf("the export: %.200v", v)
	}
	// Saved, then run from the saved list.
	b.run(`document.getElementById("save-query").click(); true`)
	b.waitFor("the save dialog", `!!document.querySelector("dialog.modal input")`)
	b.run(`document.querySelector("dialog.modal input").value = "Totals by region"; document.querySelector("dialog.modal form").requestSubmit(); true`)
	b.waitFor("the saved query listed", `!document.querySelector("dialog.modal") && document.getElementById("saved").textContent.indexOf("Totals by region") >= 0`)
	b.run(`document.querySelector("table.results").remove(); document.querySelector("#saved tbody button").click(); true`)
	b.waitFor("the saved query's results", `document.querySelectorAll("table.results tbody tr").length === 4`)
	// The editor's SELECT saved as a view.
	b.run(`document.getElementById("save-view").click(); true`)
	b.waitFor("the view dialog", `!!document.querySelector("dialog.modal input")`)
	b.run(`document.querySelector("dialog.modal input").value = "region_totals"; document.querySelector("dialog.modal form").requestSubmit(); true`)
	b.waitFor("the view saved", `!document.querySelector("dialog.modal")`)
	if !strings.Contains(string(e.do("GET", "/api/v1/projects/"+project+"/views", nil, own).status(200).Body), "region_totals") {
		t.Fatal("the view is not there")
	}
	b.run(`document.getElementById("question").value = "how many customers are there"; document.getElementById("question").form.requestSubmit(); true`)
	b.waitFor("the generated SQL", `!!document.getElementById("generated-sql") || !!document.getElementById("nl-refusal")`)
	if v := b.run(`document.getElementById("generated-sql") ? document.getElementById("generated-sql").textContent : document.getElementById("nl-refusal").textContent`); !strings.Contains(strings.ToLower(fmt.Sprint(v)), "count") {
		t.Fatalf("the plain-English answer: %v", v)
	}
	b.waitFor("its result", `document.querySelectorAll("table.results tbody tr").length === 1`)
	b.run(`document.getElementById("question").value = "zzqx florp"; document.getElementById("question").form.requestSubmit(); true`)
	b.waitFor("the refusal", `!!document.getElementById("nl-refusal")`)
	b.shot("nl")
	// A query with {{placeholders}} written in the editor: running it asks for their values;
	// saving it declares each as a typed parameter (its value the default unless cleared). Run
	// from the saved list, the prompt asks for each parameter with its default filled in.
	{
		sql := "SELECT count(*) AS n FROM customers WHERE region = {{region}} AND amount >= {{min_amount}}"
		b.run(`window.consoleEditor.dispatch({changes: {from: 0, to: window.consoleEditor.state.doc.length, insert: ` + js(sql) + `}}); document.getElementById("run-sql").click(); true`)
		b.waitFor("the placeholder prompt", `document.querySelectorAll("dialog.modal form input").length === 2`)
		b.accessible(axe, "the placeholder prompt")
		b.run(`var ins = document.querySelectorAll("dialog.modal form input"); ins[0].value = "North"; ins[1].value = "0"; document.querySelector("dialog.modal form").requestSubmit(); true`)
		north := e.do("POST", "/api/v1/projects/"+project+"/queries/execute", map[string]any{"type": "sql", "query": sql,
			"parameters": map[string]any{"region": "North", "min_amount": 0}}, own).status(200).get("results.rows.0.0")
		b.waitFor("the results with the values", `!document.querySelector("dialog.modal") && document.querySelectorAll("table.results tbody tr").length === 1 &&
			document.querySelector("table.results tbody td").textContent === `+js(fmt.Sprint(north)))
		b.run(`document.getElementById("save-query").click(); true`)
		b.waitFor("the save dialog with the parameters", `document.querySelectorAll("dialog.modal select").length === 2`)
		if v := b.run(`Array.prototype.map.call(document.querySelectorAll("dialog.modal select"), function (s) { return s.dataset.param + ":" + s.value; }).join(" ")`); v != "region:string min_amount:integer" {
			t.Fatalf("the parameters' types as guessed: %v", v)
		}
		b.accessible(axe, "the save dialog")
		b.run(`document.querySelector("dialog.modal input[type=text]").value = "Customers of a region";
			document.querySelector('dialog.modal select[data-param="min_amount"]').value = "number";
			document.querySelector('dialog.modal input[data-param-default="region"]').value = "";
			document.querySelector('dialog.modal input[data-param-default="min_amount"]').value = "100";
			document.querySelector("dialog.modal form").requestSubmit(); true`)
		b.waitFor("the saved query listed", `!document.querySelector("dialog.modal") && document.getElementById("saved").textContent.indexOf("Customers of a region") >= 0`)
		var list struct {
			SavedQueries []struct {
				ID, Name   string
				Parameters []map[string]any `json:"parameters"`
			} `json:"saved_queries"`
		}
		if err := json.Unmarshal(e.do("GET", "/api/v1/projects/"+project+"/saved-queries?limit=100", nil, own).status(200).Body, &list); err != nil {
			t.Fatal(err)
		}
		sq := ""
		for _, q := range list.SavedQueries {
			if q.Name == "Customers of a region" {
				sq = q.ID
				if got := fmt.Sprint(q.Parameters); got != "[map[name:region type:string] map[default:100 name:min_amount type:number]]" {
					t.Fatalf("the saved parameters: %s", got)
				}
			}
		}
		if sq == "" {
			t.Fatal("the query saved from the console is not listed")
		}
		want := e.do("POST", "/api/v1/projects/"+project+"/saved-queries/"+sq+"/execute", map[string]any{"parameters": map[string]any{"region": "West", "min_amount": 100}}, own).status(200).get("results.rows.0.0")
		b.run(`location.hash = "#/datasets"; true`)
		b.waitFor("the datasets list", `document.body.dataset.ready === "true" && !!document.getElementById("datasets")`)
		b.run(`location.hash = "#/queries"; true`)
		b.waitFor("the saved query with parameters", `document.body.dataset.ready === "true" && !!document.querySelector('#saved tr[data-id="`+sq+`"] button')`)
		b.run(`document.querySelector('#saved tr[data-id="` + sq + `"] button').click(); true`)
		b.waitFor("the parameter prompt", `document.querySelectorAll("dialog.modal form input").length === 2`)
		if v := b.run(`Array.prototype.map.call(document.querySelectorAll("dialog.modal form input"), function (i) { return i.type + "=" + i.value + (i.required ? "!" : ""); }).join(" ")`); v != "text=! number=100" {
			t.Fatalf("the parameter prompt's inputs: %v", v)
		}
		b.accessible(axe, "the parameter prompt")
		b.shot("parameters")
		b.run(`document.querySelector("dialog.modal form input").value = "West"; document.querySelector("dialog.modal form").requestSubmit(); true`)
		b.waitFor("the parameterized results", `!document.querySelector("dialog.modal") && document.querySelectorAll("table.results tbody tr").length === 1 &&
			document.querySelector("table.results tbody td").textContent === `+js(fmt.Sprint(want)))
		var saved struct {
			SavedQueries []struct {
				ID         string `json:"id"`
				UsageCount int    `json:"usage_count"`
			} `json:"saved_queries"`
		}
		if err := json.Unmarshal(e.do("GET", "/api/v1/projects/"+project+"/saved-queries?limit=100", nil, own).status(200).Body, &saved); err != nil {
			t.Fatal(err)
		}
		runs := -1
		for _, s := range saved.SavedQueries {
			if s.ID == sq {
				runs = s.UsageCount
			}
		}
		if runs != 2 {
			t.Fatalf("the saved query ran %d times (-1: not listed)", runs)
		}
	}

	// 5. Dashboards: generate with the stream's phases, then open the page.
	// Orders again (with its relationship to customers), for the views plan-views proposes.
	var orders2 string
	{
		body, h := multipartBody(t, "orders.csv", []byte("order_id,customer_id,total\n1,7,10\n2,7,20\n3,12,5\n"), nil)
		up := e.do("POST", "/api/v1/projects/"+project+"/datasets/upload", body, own, h).status(201)
		orders2 = e.do("POST", "/api/v1/projects/"+project+"/datasets", map[string]any{"name": "Orders", "source": map[string]any{"file_id": up.str("file_id")}}, own).status(202).str("id")
		ready := func() bool {
			if e.do("GET", "/api/v1/projects/"+project+"/datasets/"+orders2, nil, own).str("status") != "active" {
				return false
			}
			r := e.do("GET", "/api/v1/projects/"+project+"/datasets/"+orders2+"/schema", nil, own)
			l, _ := r.get("relationships").([]any)
			return r.Code == 200 && len(l) > 0
		}
		for i := 0; !ready(); i++ {
			if i > 300 {
				t.Fatal("no relationship inferred from the new orders to customers")
			}
			b.run(`new Promise(function (r) { setTimeout(r, 100); })`)
		}
	}
	b.run(`location.hash = "#/dashboards"; true`)
	b.waitFor("the dashboards page", `document.body.dataset.ready === "true" && !document.getElementById("generate").disabled &&
		Array.prototype.some.call(document.querySelectorAll("#dashboard-dataset option"), function (o) { return o.textContent === "region_totals"; })`)
	// Saved views: region_totals is listed; plan-views proposes orders joined with customers,
	// and Save keeps it through the views API.
	b.waitFor("the saved views", `!!document.querySelector('#view-list tr[data-name="region_totals"]')`)
	b.run(`document.getElementById("propose-views").click(); true`)
	b.waitFor("the proposals", `!!document.querySelector('#proposals tr[data-name="orders_with_customers"] button[data-action="save-view"]')`)
	if v := fmt.Sprint(b.run(`document.querySelector('#proposals tr[data-name="orders_with_customers"]').textContent`)); !strings.Contains(v, "LEFT JOIN customers ON orders.customer_id = customers.customer_id") || !strings.Contains(v, "relationship") {
		t.Fatalf("the proposal: %s", v)
	}
	b.accessible(axe, "the proposed views")
	b.run(`document.querySelector('#proposals tr[data-name="orders_with_customers"] button[data-action="save-view"]').click(); true`)
	b.waitFor("the proposed view saved and listed", `!!document.querySelector('#view-list tr[data-name="orders_with_customers"]') &&
		Array.prototype.some.call(document.querySelectorAll("#dashboard-dataset option"), function (o) { return o.textContent === "orders_with_customers"; })`)
	{
		r := e.do("GET", "/api/v1/projects/"+project+"/views?query=orders_with_customers", nil, own).status(200)
		l, _ := r.get("views").([]any)
		if len(l) != 1 || !strings.Contains(string(r.Body), `"join"`) {
			t.Fatalf("the saved proposal: %s", r.Body)
		}
		q := e.do("POST", "/api/v1/projects/"+project+"/queries/execute", map[string]any{"type": "sql", "query": "SELECT count(*) AS n FROM orders_with_customers WHERE region IS NOT NULL"}, own).status(200)
		if fmt.Sprint(q.get("results.rows.0.0")) != "3" {
			t.Fatalf("reading the saved proposal: %s", q.Body)
		}
	}
	b.run(`document.getElementById("dashboard-dataset").value = "/api/v1/datasets/` + ds + `"; document.getElementById("generate").click(); true`)
	b.waitFor("the dashboard generated", `!!document.getElementById("open-dashboard")`)
	if v := b.run(`document.querySelectorAll("#phases li").length`); v.(float64) < 1 {
		t.Fatal("no phases shown")
	}
	b.waitFor("the dashboard listed", `!!document.querySelector("#dashboard-list .row-actions button")`)
	b.run(`document.querySelector("#dashboard-list .row-actions button").click(); true`)
	b.waitFor("the dashboard's versions", `document.querySelectorAll("#dashboard-detail tbody tr").length === 1 && !!document.getElementById("refine-prompt")`)
	dash := strings.TrimPrefix(fmt.Sprint(b.run(`document.getElementById("open-dashboard").getAttribute("href")`)), "/dashboards/")
	// Refined in words: what changed is shown, and a second version is current.
	b.run(`document.getElementById("refine-prompt").value = "add a chart of amount by region"; document.getElementById("refine-form").requestSubmit(); true`)
	b.waitFor("the refinement", `!!document.getElementById("refine-result") && document.querySelectorAll("#dashboard-detail tbody tr").length === 2 &&
		document.querySelector('#dashboard-detail tr[data-number="2"]').dataset.current === "true"`)
	if v := fmt.Sprint(b.run(`document.getElementById("refine-result").textContent`)); !strings.Contains(v, "version 2") || b.run(`document.querySelectorAll("#refine-changes li").length`).(float64) < 1 {
		t.Fatalf("the refinement shown: %s", v)
	}
	// A prompt the rules cannot apply: the refusal with its reason, and nothing changed.
	b.run(`document.getElementById("refine-prompt").value = "zzqx florp"; document.getElementById("refine-form").requestSubmit(); true`)
	b.waitFor("the refine refusal", `!!document.getElementById("refine-refusal") && document.querySelectorAll("#refine-refusal li button").length > 0`)
	if n := e.do("GET", "/api/v1/dashboards/"+dash+"/versions", nil, own).status(200).len("versions"); n != 2 {
		t.Fatalf("%d versions after a refused refinement", n)
	}
	b.accessible(axe, "the dashboards page")
	b.shot("dashboard-versions")
	// Version 1 restored (a third version, current), then pinned.
	b.run(`document.querySelector('#dashboard-detail tr[data-number="1"] button[data-action="restore"]').click(); true`)
	b.waitFor("the restore", `document.querySelectorAll("#dashboard-detail tbody tr").length === 3 && document.querySelector('#dashboard-detail tr[data-number="3"]').dataset.current === "true"`)
	{
		r := e.do("GET", "/api/v1/dashboards/"+dash+"/versions", nil, own).status(200)
		if v := fmt.Sprintf("%v %v", r.get("versions.0.kind"), r.get("versions.0.restored_from")); v != "restore 1" {
			t.Fatalf("the restored version: %s", r.Body)
		}
		now, _ := json.Marshal(e.do("GET", "/api/v1/dashboards/"+dash, nil, own).status(200).get("spec"))
		was, _ := json.Marshal(e.do("GET", "/api/v1/dashboards/"+dash+"/versions/"+r.str("versions.2.id"), nil, own).status(200).get("spec"))
		if string(now) != string(was) {
			t.Fatalf("the restored spec\n%s\nis not version 1's\n%s", now, was)
		}
	}
	b.run(`document.querySelector('#dashboard-detail tr[data-number="1"] button[data-action="pin"]').click(); true`)
	b.waitFor("the pin", `document.querySelector('#dashboard-detail tr[data-number="1"]').dataset.pinned === "true" && !!document.querySelector('#dashboard-detail tr[data-number="1"] button[data-action="unpin"]')`)
	if !strings.Contains(string(e.do("GET", "/api/v1/dashboards/"+dash+"/versions", nil, own).status(200).Body), `"pinned":true`) {
		t.Fatal("no version pinned")
	}
	b.run(`document.querySelector('#dashboard-detail tr[data-number="2"] button[data-action="pin"]').click(); true`)
	b.waitFor("the second pin", `document.querySelector('#dashboard-detail tr[data-number="2"]').dataset.pinned === "true"`)
	b.run(`document.querySelector('#dashboard-detail tr[data-number="2"] button[data-action="unpin"]').click(); true`)
	b.waitFor("the unpin", `document.querySelector('#dashboard-detail tr[data-number="2"]').dataset.pinned === "false" && document.querySelector('#dashboard-detail tr[data-number="1"]').dataset.pinned === "true"`)
	b.run(`document.getElementById("open-dashboard").click(); true`)
	b.waitFor("the dashboard page drawn", `location.pathname.indexOf("/dashboards/dsh_") === 0 && document.body.getAttribute("data-ready") === "true"`)
	b.shot("dashboard")

	// 6. The organization: an API key shown once, an invitation, a webhook and its delivery.
	b.open(e.ts.URL + "/#/org/keys")
	b.waitFor("the API keys", `document.body.dataset.ready === "true" && !!document.getElementById("key-name")`)
	b.run(`document.getElementById("key-name").value = "console key"; document.getElementById("key-name").form.requestSubmit(); true`)
	b.waitFor("the new key", `!!document.getElementById("new-key")`)
	key := b.run(`document.getElementById("new-key").textContent`).(string)
	e.do("GET", "/api/v1/projects/"+project+"/datasets", nil, apiKey(key)).status(200)
	b.accessible(axe, "the API keys")
	b.run(`location.hash = "#/org/members"; true`)
	b.waitFor("the members", `document.body.dataset.ready === "true" && !!document.getElementById("invite-email")`)
	b.run(`document.getElementById("invite-email").value = "newcomer@example.com"; document.getElementById("invite-email").form.requestSubmit(); true`)
	b.waitFor("the invitation", `document.getElementById("invite-out").textContent.indexOf("newcomer@example.com") >= 0`)
	if !strings.Contains(string(e.do("GET", "/api/v1/organizations/"+e.orgID+"/users", nil, own).status(200).Body), "newcomer@example.com") {
		t.Fatal("the invitation is not listed")
	}
	b.accessible(axe, "the members")
	b.run(`location.hash = "#/org/webhooks"; true`)
	b.waitFor("the webhooks", `document.body.dataset.ready === "true" && !!document.getElementById("webhook-url")`)
	b.run(`document.getElementById("webhook-url").value = ` + js(hook.URL+"/hook") + `; document.getElementById("webhook-url").form.requestSubmit(); true`)
	b.waitFor("the webhook listed", `!!document.querySelector('#webhooks button[data-action="ping"]')`)
	b.run(`document.querySelector('#webhooks button[data-action="ping"]').click(); true`)
	b.waitFor("the delivery succeeded", `!!document.querySelector('#deliveries tr[data-status="succeeded"]')`)
	if hooks.Load() == 0 {
		t.Fatal("the webhook endpoint heard nothing")
	}
	b.accessible(axe, "the webhooks")
	b.shot("webhooks")
	for _, tab := range []string{"teams", "settings", "usage", "audit"} {
		b.run(`location.hash = "#/org/` + tab + `"; true`)
		b.waitFor("the "+tab, `document.body.dataset.ready === "true" && document.getElementById("tab-`+tab+`").getAttribute("aria-current") === "page" &&
			document.querySelectorAll("#org-panel form, #org-panel table").length > 0`)
		if v := b.run(`document.querySelector("#main .error") ? document.querySelector("#main .error").textContent : ""`); v != "" {
			t.Fatalf("the %s tab: %v", tab, v)
		}
		b.accessible(axe, "the "+tab)
	}
	// The plan changes from the usage tab, as the billing API says it did.
	b.run(`location.hash = "#/org/usage"; true`)
	b.waitFor("the plan", `document.body.dataset.ready === "true" && !!document.getElementById("billing-plan")`)
	before := e.do("GET", "/api/v1/organizations/"+e.orgID+"/billing", nil, own).status(200).str("billing_cycle")
	want := map[string]string{"monthly": "yearly", "yearly": "monthly"}[before]
	b.run(`document.getElementById("billing-cycle").value = ` + js(want) + `; document.getElementById("billing-change").click(); true`)
	b.waitFor("the changed cycle", `document.getElementById("billing-current").textContent.indexOf("billed `+want+`") >= 0`)
	if got := e.do("GET", "/api/v1/organizations/"+e.orgID+"/billing", nil, own).status(200).str("billing_cycle"); got != want {
		t.Fatalf("the billing cycle after the change: %s, want %s", got, want)
	}

	// Dark mode and a narrow window.
	b.call(b.session, "Emulation.setEmulatedMedia", map[string]any{"features": []map[string]string{{"name": "prefers-color-scheme", "value": "dark"}}}, nil)
	b.run(`location.hash = "#/datasets"; true`)
	b.waitFor("the datasets list, dark", `document.body.dataset.ready === "true" && !!document.getElementById("datasets")`)
	b.accessible(axe, "the datasets list in dark mode")
	b.shot("dark")
	b.call(b.session, "Emulation.setDeviceMetricsOverride", map[string]any{"width": 390, "height": 800, "deviceScaleFactor": 1, "mobile": true}, nil)
	b.run(`location.hash = "#/datasets/` + ds + `/records"; true`)
	b.waitFor("the grid, narrow", grid+` && `+grid+`.dataset.loaded === "true" && !!document.getElementById("cell-0-0")`)
	if v := b.run(`document.documentElement.scrollWidth <= window.innerWidth + 1`); v != true {
		t.Errorf("the narrow window scrolls sideways: %v", b.run(`document.documentElement.scrollWidth`))
	}
	b.accessible(axe, "the grid in a narrow window")
	b.shot("narrow")

	if p := b.Problems(); len(p) > 0 {
		t.Fatalf("the console went wrong: %v", p)
	}
}

// signedInConsole is a browser at 1280×800 signed in to the console as the first owner, with
// the console drawn.
func signedInConsole(t *testing.T, e *env) *browser {
	t.Helper()
	b := newBrowser(t)
	b.call(b.session, "Emulation.setDeviceMetricsOverride", map[string]any{"width": 1280, "height": 800, "deviceScaleFactor": 1, "mobile": false}, nil)
	b.open(e.ts.URL + "/")
	b.waitFor("the sign-in page", `location.pathname === "/sign-in" && document.readyState === "complete"`)
	b.run(fmt.Sprintf(`document.getElementById("email").value = %s; document.getElementById("password").value = %s;
		document.getElementById("sign-in").requestSubmit(); true`, js(adminEmail), js(adminPassword)))
	b.waitFor("the console", `location.pathname === "/" && document.body.dataset.ready === "true" && !!document.getElementById("datasets")`)
	return b
}
