package tests

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// consoleSchema is the part of a dataset's schema read the Schema tab's test checks.
type consoleSchema struct {
	SchemaVersion int `json:"schema_version"`
	Tables        []struct {
		Columns []struct {
			Name         string `json:"name"`
			IsPrimaryKey bool   `json:"is_primary_key"`
			Role         string `json:"role"`
			RoleSource   string `json:"role_source"`
			Semantics    *struct {
				Aliases            []string `json:"aliases"`
				Unit               string   `json:"unit"`
				DefaultAggregation string   `json:"default_aggregation"`
			} `json:"semantics"`
		} `json:"columns"`
	} `json:"tables"`
	Relationships []struct {
		Type        string `json:"type"`
		FromColumn  string `json:"from_column"`
		ToDatasetID string `json:"to_dataset_id"`
		ToColumn    string `json:"to_column"`
		Origin      string `json:"origin"`
	} `json:"relationships"`
}

// rels is the schema's relationships as "from->dataset.column (origin)", in order.
func (s consoleSchema) rels() []string {
	var out []string
	for _, r := range s.Relationships {
		out = append(out, fmt.Sprintf("%s->%s.%s (%s)", r.FromColumn, r.ToDatasetID, r.ToColumn, r.Origin))
	}
	return out
}

// TestConsoleSchemaTab corrects a dataset's data model from the console's Schema tab in
// headless Chromium, each change checked through the API: a new key (after a confirm that
// says it breaks record addresses), a declared relationship, a column's aliases, unit and
// default aggregation, a dropped relationship; and refusals (a relationship whose values are
// not all present, a too long alias) shown in words beside the form, with nothing changed.
// No console errors, no CSP refusals, no serious or critical axe-core violation.
func TestConsoleSchemaTab(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	own := bearer(e.ownerToken)
	axe := axeSource(t)

	// Two small datasets: depots keyed by their code, and hauls between depots, one of them to
	// a depot that is not in the depots file.
	depots := e.uploadAndCreateWith(e.ownerToken, "Depots", "depots.csv", "depot_code,town\nNRV,Narvik\nBDO,Bodo\nTOS,Tromso\n",
		map[string]any{"primary_key": "depot_code"})
	hauls := e.uploadAndCreateWith(e.ownerToken, "Hauls", "hauls.csv",
		"haul_ref,waybill,loaded_at,unloaded_at,tariff\nH-1,W7001,NRV,BDO,410.5\nH-2,W7002,BDO,TOS,380\nH-3,W7003,TOS,NRV,295.25\nH-4,W7004,NRV,ALT,120\n",
		map[string]any{"primary_key": "haul_ref"})
	for _, id := range []string{depots, hauls} {
		if d := e.waitDataset(e.ownerToken, id); d.str("status") != "active" {
			t.Fatalf("dataset %s: %s", id, d.Body)
		}
	}
	read := func() consoleSchema {
		t.Helper()
		var s consoleSchema
		r := e.do("GET", "/api/v1/projects/"+e.projectID+"/datasets/"+hauls+"/schema", nil, own).status(200)
		if err := json.Unmarshal(r.Body, &s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	before := read()
	if len(before.Relationships) != 0 {
		t.Fatalf("hauls start with relationships: %v", before.rels())
	}

	b := signedInConsole(t, e)
	b.run(`location.hash = "#/datasets/` + hauls + `/schema"; true`)
	b.waitFor("the schema tab", `document.body.dataset.ready === "true" && !!document.getElementById("relationship-form") &&
		!!document.querySelector('#column-meaning tr[data-col="tariff"] button[data-action="edit-column"]')`)
	if v := b.run(`document.getElementById("schema-version").textContent`); v != fmt.Sprintf("Schema version %d", before.SchemaVersion) {
		t.Fatalf("the version shown: %v, want %d", v, before.SchemaVersion)
	}
	b.accessible(axe, "the schema tab")
	b.shot("schema")
	// saved waits for the tab redrawn after a change made at version was, and checks that it
	// shows the version the API now reports.
	saved := func(what string, was int) consoleSchema {
		t.Helper()
		b.waitFor(what, fmt.Sprintf(`document.body.dataset.ready === "true" && !document.querySelector("dialog.modal") && !!document.getElementById("schema-saved") &&
			document.getElementById("dataset-panel").dataset.schemaVersion !== "%d"`, was))
		s := read()
		if v := b.run(`document.getElementById("schema-version").textContent + " / " + document.getElementById("schema-saved").textContent`); !strings.HasPrefix(fmt.Sprint(v), fmt.Sprintf("Schema version %d / ", s.SchemaVersion)) ||
			!strings.HasSuffix(fmt.Sprint(v), fmt.Sprintf("The schema is at version %d.", s.SchemaVersion)) {
			t.Fatalf("after %s the tab shows %v; the API says version %d", what, v, s.SchemaVersion)
		}
		return s
	}
	// declare fills and submits the relationship form.
	declare := func(column, dataset, target string) {
		t.Helper()
		b.run(`document.getElementById("rel-column").value = ` + js(column) + `; var d = document.getElementById("rel-dataset"); d.value = ` + js(dataset) + `;
			d.dispatchEvent(new Event("change")); true`)
		b.waitFor("the key columns of "+dataset, `!document.getElementById("rel-target").disabled && !!document.querySelector('#rel-target option[value="`+target+`"]')`)
		b.run(`document.getElementById("rel-target").value = ` + js(target) + `; document.getElementById("relationship-form").requestSubmit(); true`)
	}

	// 1. waybill becomes the key instead of haul_ref, after a confirm that says it is breaking.
	b.run(`document.querySelector('#schema-columns tr[data-col="waybill"] button[data-action="set-key"]').click(); true`)
	b.waitFor("the key confirmation", `!!document.querySelector("dialog.modal [data-confirm]")`)
	if v := fmt.Sprint(b.run(`document.querySelector("dialog.modal").textContent`)); !strings.Contains(v, "breaking change") || !strings.Contains(v, "address") {
		t.Fatalf("the key confirmation: %s", v)
	}
	b.accessible(axe, "the key confirmation")
	b.run(`document.querySelector("dialog.modal [data-confirm]").click(); true`)
	s := saved("the new key", before.SchemaVersion)
	if v := b.run(`Array.prototype.map.call(document.querySelectorAll('#schema-columns tr[data-key="true"]'), function (r) { return r.dataset.col; }).join(" ")`); v != "waybill" {
		t.Fatalf("the key shown: %v", v)
	}
	for _, c := range s.Tables[0].Columns {
		if c.IsPrimaryKey != (c.Name == "waybill") {
			t.Fatalf("after the change of key, %s is_primary_key=%v", c.Name, c.IsPrimaryKey)
		}
	}
	if r := e.do("GET", "/api/v1/datasets/"+hauls+"/data/W7002", nil, own).status(200); r.str("haul_ref") != "H-2" {
		t.Fatalf("haul H-2 by its new key: %s", r.Body)
	}

	// 2. A relationship declared through the form: loaded_at names a depot by its code.
	declare("loaded_at", depots, "depot_code")
	s = saved("the declared relationship", s.SchemaVersion)
	if got := strings.Join(s.rels(), " "); got != "loaded_at->"+depots+".depot_code (declared)" {
		t.Fatalf("relationships after declaring one: %s", got)
	}
	b.waitFor("the relationship listed", `!!document.querySelector('#schema-relationships tr[data-from="loaded_at"][data-origin="declared"] button[data-action="drop-relationship"]')`)
	if v := fmt.Sprint(b.run(`document.querySelector('#schema-relationships tr[data-from="loaded_at"]').textContent`)); !strings.Contains(v, "Depots.depot_code") {
		t.Fatalf("the relationship shown: %s", v)
	}

	// 3. tariff is taught its aliases, unit and default aggregation.
	b.run(`document.querySelector('#column-meaning tr[data-col="tariff"] button[data-action="edit-column"]').click(); true`)
	b.waitFor("the column form", `!!document.getElementById("column-form")`)
	b.accessible(axe, "the column form")
	// Where the schema read has roles (ColumnRole), the form offers them: tariff becomes a value.
	roles := false
	for _, c := range s.Tables[0].Columns {
		roles = roles || c.Role != ""
	}
	if v := b.run(`!!document.getElementById("col-role")`); v != roles {
		t.Fatalf("the role select shown: %v, the schema read has roles: %v", v, roles)
	}
	b.run(`document.getElementById("col-aliases").value = "revenue, haul price"; document.getElementById("col-unit").value = "NOK";
		document.getElementById("col-aggregation").value = "sum"; document.getElementById("col-description").value = "What the haul was billed";
		if (document.getElementById("col-role")) document.getElementById("col-role").value = "value";
		document.getElementById("column-form").requestSubmit(); true`)
	s = saved("the column's meaning", s.SchemaVersion)
	for _, c := range s.Tables[0].Columns {
		if c.Name != "tariff" {
			continue
		}
		if c.Semantics == nil || strings.Join(c.Semantics.Aliases, ",") != "revenue,haul price" || c.Semantics.Unit != "NOK" || c.Semantics.DefaultAggregation != "sum" {
			t.Fatalf("tariff's semantics: %+v", c.Semantics)
		}
		if roles && (c.Role != "value" || c.RoleSource != "set") {
			t.Fatalf("tariff's role: %q (%s)", c.Role, c.RoleSource)
		}
	}
	if v := fmt.Sprint(b.run(`document.querySelector('#column-meaning tr[data-col="tariff"]').textContent`)); !strings.Contains(v, "revenue, haul price") || !strings.Contains(v, "NOK") || !strings.Contains(v, "What the haul was billed") {
		t.Fatalf("tariff's meaning shown: %s", v)
	}
	// The next question reads the name it was taught.
	if q := e.do("POST", "/api/v1/projects/"+e.projectID+"/queries/execute", map[string]any{"query": "total revenue of hauls"}, own).status(200); q.get("results.rows.0.0") != 1205.75 {
		t.Fatalf("total revenue after teaching it: %s", q.Body)
	}
	// And the next dashboard refine: a chart of revenue by where hauls were loaded.
	dsh := e.do("POST", "/api/v1/datasets/"+hauls+"/dashboard/generate?use_ai=false", nil, own).status(201).str("id")
	e.do("POST", "/api/v1/dashboards/"+dsh+"/refine", map[string]any{"user_prompt": "add a chart of revenue by loaded at"}, own).status(200)
	want := map[string]float64{"NRV": 530.5, "BDO": 380, "TOS": 295.25}
	data, charted := e.do("GET", "/api/v1/dashboards/"+dsh+"/data", nil, own).status(200), false
	for i := 0; i < data.len("tiles"); i++ {
		p := fmt.Sprintf("tiles.%d.", i)
		if data.str(p+"columns.0.name") != "loaded_at" || !strings.Contains(data.str(p+"columns.1.name"), "tariff") {
			continue
		}
		charted = true
		for j := 0; j < data.len(p+"rows"); j++ {
			if v := data.get(fmt.Sprintf("%srows.%d.1", p, j)); v != want[data.str(fmt.Sprintf("%srows.%d.0", p, j))] {
				t.Errorf("revenue by loaded at: %s", data.Body)
			}
		}
	}
	if !charted {
		t.Fatalf("no tile of revenue by loaded at: %s", data.Body)
	}
	// A refused alias (longer than the API allows): the reason in words in the dialog, nothing saved.
	b.run(`document.querySelector('#column-meaning tr[data-col="tariff"] button[data-action="edit-column"]').click(); true`)
	b.waitFor("the column form again", `!!document.getElementById("column-form")`)
	b.run(`document.getElementById("col-aliases").value = "revenue, ` + strings.Repeat("x", 61) + `"; document.getElementById("column-form").requestSubmit(); true`)
	b.waitFor("the refused alias", `!!document.querySelector("#column-status .schema-problem")`)
	if v := fmt.Sprint(b.run(`document.querySelector("#column-status .schema-problem").textContent`)); !strings.Contains(v, "Nothing was changed") || !strings.Contains(v, "Aliases") || strings.ContainsAny(v, "{}") {
		t.Fatalf("the refused alias: %s", v)
	}
	b.accessible(axe, "a refused column change")
	b.shot("schema-column-refused")
	b.run(`document.querySelector("#column-form .actions button.ghost").click(); true`)
	if after := read(); after.SchemaVersion != s.SchemaVersion {
		t.Fatalf("a refused alias changed the schema: version %d, was %d", after.SchemaVersion, s.SchemaVersion)
	}

	// 4. unloaded_at names a depot (ALT) that depots lacks: refused in words, nothing changed.
	declare("unloaded_at", depots, "depot_code")
	b.waitFor("the refused relationship", `!!document.querySelector("#rel-status .schema-problem") && !document.getElementById("rel-declare").disabled`)
	msg := fmt.Sprint(b.run(`document.querySelector("#rel-status .schema-problem").textContent`))
	for _, want := range []string{"Nothing was changed", "unloaded_at", "not present in Depots.depot_code", "ALT", "W7004", "1 record"} {
		if !strings.Contains(msg, want) {
			t.Fatalf("the refusal does not say %q: %s", want, msg)
		}
	}
	if strings.ContainsAny(msg, "{}") || strings.Contains(msg, "violations") || strings.Contains(msg, depots) {
		t.Fatalf("the refusal is not in words: %s", msg)
	}
	b.accessible(axe, "a refused relationship")
	b.run(`document.getElementById("relationship-form").scrollIntoView(); true`)
	b.shot("schema-refused")
	if after := read(); after.SchemaVersion != s.SchemaVersion || strings.Join(after.rels(), " ") != strings.Join(s.rels(), " ") {
		t.Fatalf("a refused relationship changed the schema: version %d (was %d), %v", after.SchemaVersion, s.SchemaVersion, after.rels())
	}

	// 5. The declared relationship dropped: gone from the API and the tab.
	b.run(`document.querySelector('#schema-relationships tr[data-from="loaded_at"] button[data-action="drop-relationship"]').click(); true`)
	b.waitFor("the drop confirmation", `!!document.querySelector("dialog.modal [data-confirm]")`)
	b.run(`document.querySelector("dialog.modal [data-confirm]").click(); true`)
	s = saved("the dropped relationship", s.SchemaVersion)
	if len(s.Relationships) != 0 {
		t.Fatalf("relationships after the drop: %v", s.rels())
	}
	if v := b.run(`!!document.querySelector('#schema-relationships tr[data-from="loaded_at"]')`); v != false {
		t.Fatal("the dropped relationship is still shown")
	}
	// From depots' side nothing points at it any more either.
	if n := e.do("GET", "/api/v1/projects/"+e.projectID+"/datasets/"+depots+"/schema", nil, own).status(200).len("relationships"); n != 0 {
		t.Fatalf("depots has %d relationships after the drop", n)
	}

	if p := b.Problems(); len(p) > 0 {
		t.Fatalf("the console went wrong: %v", p)
	}
}
