// Dashboards and views: the project's dashboards, generating one from a dataset or view with
// the stream's phases shown, opening the dashboard page, refining it in words, its versions
// (restore, pin); the project's saved views, and views proposed by plan-views saved in a click.
import { get, post, stream, state, ApiError } from "./console-api.js";
import { h, clear, errorBox, table, when, toast, field, num } from "./console-ui.js";

export async function render(main) {
  const list = h("div", { id: "dashboard-list" });
  const pick = h("select", { id: "dashboard-dataset", "aria-label": "Dataset to build a dashboard of" });
  const go = h("button", { type: "submit", id: "generate" }, "Generate dashboard");
  const phases = h("ol", { id: "phases", class: "notes", "aria-live": "polite" });
  const out = h("div", { id: "generate-out" });
  const viewBox = h("div", { id: "views" });
  main.append(h("h1", {}, "Dashboards and views"),
    h("form", { class: "card", onsubmit: (e) => { e.preventDefault(); generate(); } },
      h("h2", {}, "Generate from a dataset"), h("div", { class: "row" }, pick, go), phases, out), list, viewBox);
  await fillPick();
  await drawList(list);
  await drawViews(viewBox, fillPick);

  // fillPick lists the project's active datasets and saved views as sources to generate from.
  async function fillPick() {
    const [ds, vs] = await Promise.all([get("/api/v1/projects/" + state.projectId + "/datasets?limit=100"),
      get("/api/v1/projects/" + state.projectId + "/views?limit=100").catch(() => ({ views: [] }))]);
    const views = vs.views || [];
    const was = pick.value;
    clear(pick, h("optgroup", { label: "Datasets" }, ds.datasets.filter((d) => d.status === "active").map((d) => h("option", { value: "/api/v1/datasets/" + d.id }, d.name))),
      views.length ? h("optgroup", { label: "Saved views" }, views.map((v) => h("option", { value: "/api/v1/projects/" + state.projectId + "/views/" + v.id }, v.name))) : null);
    if (was && Array.prototype.some.call(pick.options, (o) => o.value === was)) pick.value = was;
    go.disabled = !pick.options.length;
  }

  async function generate() {
    go.disabled = true;
    clear(phases); clear(out);
    try {
      let done = null;
      await stream(pick.value + "/dashboard/generate/stream?use_ai=false&force=true", undefined, (ev) => {
        if (ev.type === "progress") phases.append(h("li", { dataset: { phase: (ev.data && ev.data.phase) || "" } }, (ev.data && ev.data.phase ? ev.data.phase + ": " : "") + (ev.message || "")));
        else if (ev.type === "complete") done = ev.data;
        else if (ev.type === "error") throw new Error((ev.data && (ev.data.message || (ev.data.error && ev.data.error.message))) || ev.message || "generation failed");
      });
      if (done) {
        clear(out, h("p", {}, "Ready: ", h("a", { href: "/dashboards/" + done.id, id: "open-dashboard" }, "open " + (done.display_name || done.id))));
        toast("Dashboard generated");
        await drawList(list);
      }
    } catch (err) { clear(out, errorBox(err)); }
    go.disabled = false;
  }
}

async function drawList(list) {
  try {
    const r = await get("/api/v1/projects/" + state.projectId + "/dashboards?limit=100");
    const detail = h("div", { id: "dashboard-detail" });
    clear(list, h("h2", {}, "Dashboards of the project"), table(["Name", "Source", "Changed", ""], r.dashboards.map((d) => h("tr", {},
      h("td", {}, h("a", { href: "/dashboards/" + d.id }, d.display_name)), h("td", {}, d.source ? d.source.type : ""),
      h("td", {}, when(d.updated_at)), h("td", { class: "row-actions" }, h("a", { href: "/dashboards/" + d.id, class: "button small" }, "Open"), " ",
        h("button", { type: "button", class: "ghost small", onclick: () => versions(detail, d, list) }, "Versions and refine")))),
    { empty: "No dashboards yet.", caption: "Dashboards" }), detail);
  } catch (err) { clear(list, errorBox(err)); }
}

// versions lists a dashboard's versions (restore, pin) and refines it in words: the result
// (what changed, warnings) or the refusal with its reason and suggestions stays shown.
async function versions(box, d, list, outcome) {
  const base = "/api/v1/dashboards/" + d.id;
  const prompt = h("input", { type: "text", id: "refine-prompt", maxlength: 1000, autocomplete: "off", placeholder: "e.g. add a chart of amount by region" });
  const refineBtn = h("button", { type: "submit", class: "small", id: "refine" }, "Refine");
  const result = h("div", { id: "refine-out", "aria-live": "polite" }, outcome || null);
  let r;
  try { r = await get(base + "/versions?limit=100"); } catch (err) { clear(box, errorBox(err)); return; }
  const again = (o) => versions(box, d, list, o);
  const act = (v, what) => async () => {
    try {
      await post(base + "/versions/" + v.id + "/" + what);
      toast(what === "restore" ? "Version " + v.number + " restored" : "Version " + v.number + (what === "pin" ? " pinned" : " unpinned"));
      again(null);
    } catch (err) { clear(result, errorBox(err)); }
  };
  const refine = async (text) => {
    if (!text) return;
    refineBtn.disabled = true;
    clear(result, h("p", { class: "muted" }, "Refining…"));
    try {
      const x = await post(base + "/refine", { user_prompt: text });
      toast("Dashboard refined");
      again(h("div", { id: "refine-result" }, h("p", {}, "Refined to version " + x.version + ": ", h("a", { href: "/dashboards/" + d.id }, "open")),
        (x.changes || []).length ? h("ul", { class: "notes", id: "refine-changes" }, x.changes.map((c) => h("li", {}, c))) : null,
        (x.warnings || []).length ? h("ul", { class: "notes warn" }, x.warnings.map((w) => h("li", {}, w))) : null));
    } catch (err) {
      // The dashboard error shape is flat: {code, error, message, suggestions}.
      const b = err instanceof ApiError ? err.body || {} : {};
      const sug = [b.suggestions, b.error && b.error.details && b.error.details.suggestions, err.details && err.details.suggestions].find(Array.isArray) || [];
      clear(result, h("div", { class: "conflict-box", id: "refine-refusal", role: "alert" }, h("strong", {}, "Not refined: "), err.message,
        sug.length ? [h("p", {}, "Try:"), h("ul", {}, sug.map((s) => {
          const t = typeof s === "string" ? s : s.prompt || s.text || JSON.stringify(s);
          return h("li", {}, h("button", { type: "button", class: "ghost small", onclick: () => { prompt.value = t; refine(t); } }, t));
        }))] : null));
      refineBtn.disabled = false;
    }
  };
  clear(box, h("h2", {}, d.display_name + ": versions"),
    h("form", { class: "filters", id: "refine-form", onsubmit: (e) => { e.preventDefault(); refine(prompt.value.trim()); } },
      field("Refine in words", prompt), refineBtn), result,
    table(["#", "Kind", "Name", "When", ""], r.versions.map((v) => h("tr", { dataset: { number: String(v.number), id: v.id, current: String(!!v.current), pinned: String(!!v.pinned) } },
      h("td", {}, String(v.number), v.current ? " (current)" : "", v.pinned ? " · pinned" : ""), h("td", {}, v.kind + (v.restored_from ? " of #" + v.restored_from : "")),
      h("td", {}, v.message || v.display_name || ""), h("td", {}, when(v.created_at)),
      h("td", { class: "row-actions" },
        v.current ? null : h("button", { type: "button", class: "ghost small", "data-action": "restore", onclick: act(v, "restore") }, "Restore"), " ",
        h("button", { type: "button", class: "ghost small", "data-action": v.pinned ? "unpin" : "pin", onclick: act(v, v.pinned ? "unpin" : "pin") }, v.pinned ? "Unpin" : "Pin")))),
    { caption: "Dashboard versions" }));
}

// joinSQL writes a join definition as the SELECT it stands for.
function joinSQL(def) {
  if (def && def.sql) return def.sql;
  const j = def && def.join;
  if (!j) return JSON.stringify(def);
  const cols = (j.columns || []).length ? j.columns.map((c) => c.source + (c.as ? " AS " + c.as : "")).join(", ") : "*";
  return "SELECT " + cols + " FROM " + j.base + (j.joins || []).map((s) => " " + s.type.toUpperCase() + " JOIN " + s.dataset + " ON " +
    s.on.map((o) => o.left + " = " + o.right).join(" AND ")).join("");
}

// drawViews lists the project's saved views and proposes joins of its datasets as views
// (plan-views), each saved through the views API with one click.
async function drawViews(box, changed) {
  const base = "/api/v1/projects/" + state.projectId;
  const listBox = h("div", { id: "view-list" });
  const intent = h("input", { type: "text", id: "plan-intent", maxlength: 1000, autocomplete: "off", placeholder: "optional: what the views are for" });
  const propose = h("button", { type: "submit", id: "propose-views" }, "Propose views");
  const proposals = h("div", { id: "proposals", "aria-live": "polite" });
  clear(box, h("section", { class: "card" }, h("h2", {}, "Saved views"), listBox,
    h("form", { class: "filters", onsubmit: (e) => { e.preventDefault(); plan(); } }, field("Propose views of the project's joins", intent), propose), proposals));
  await drawSaved();

  async function drawSaved() {
    try {
      const r = await get(base + "/views?limit=100");
      clear(listBox, table(["Name", "Status", "Columns", "SQL"], r.views.map((v) => h("tr", { dataset: { id: v.id, name: v.name } },
        h("td", {}, v.name, v.description ? h("div", { class: "muted" }, v.description) : null),
        h("td", {}, h("span", { class: "badge " + (v.status === "active" ? "active" : "failed") }, v.status), v.error ? " " + v.error : ""),
        h("td", { class: "num" }, num((v.columns || []).length)), h("td", {}, h("code", {}, (v.sql || joinSQL(v.definition)).slice(0, 200))))),
      { empty: "No saved views: save a SELECT from the queries page, or propose views below.", caption: "Saved views" }));
    } catch (err) { clear(listBox, errorBox(err)); }
  }

  async function plan() {
    propose.disabled = true;
    clear(proposals, h("p", { class: "muted" }, "Looking for joins…"));
    try {
      const t = intent.value.trim();
      const r = await post(base + "/dashboards/plan-views", t ? { intent: t } : {});
      clear(proposals, table(["Name", "SQL", "Why", ""], r.views.map((p) => {
        const problem = h("div");
        const saveBtn = h("button", { type: "button", class: "small", "data-action": "save-view", onclick: async () => {
          saveBtn.disabled = true;
          try {
            const v = await post(base + "/views", { name: p.name, ...(p.description ? { description: p.description } : {}), definition: p.definition });
            clear(problem, h("span", { class: "badge active" }, "saved"));
            toast("View " + v.name + " saved");
            await drawSaved();
            if (changed) await changed();
          } catch (err) { clear(problem, errorBox(err)); saveBtn.disabled = false; }
        } }, "Save");
        return h("tr", { dataset: { name: p.name } }, h("td", {}, p.name), h("td", {}, h("code", {}, joinSQL(p.definition))),
          h("td", {}, p.description, h("div", { class: "muted" }, p.reason)), h("td", { class: "row-actions" }, saveBtn, problem));
      }), { empty: "No joins to propose: the project's datasets have no relationships between them.", caption: "Proposed views" }),
      (r.rejected || []).length ? h("ul", { class: "notes warn", id: "rejected" }, r.rejected.map((x) => h("li", {}, x.name + ": " + x.error))) : null);
    } catch (err) { clear(proposals, errorBox(err)); }
    propose.disabled = false;
  }
}
