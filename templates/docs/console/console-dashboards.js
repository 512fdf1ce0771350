// Dashboards: the project's list, generating one from a dataset with the stream's phases
// shown, and opening the dashboard page.
import { get, post, stream, state } from "./console-api.js";
import { h, clear, errorBox, table, when, toast, field } from "./console-ui.js";

export async function render(main) {
  const list = h("div", { id: "dashboard-list" });
  const pick = h("select", { id: "dashboard-dataset", "aria-label": "Dataset to build a dashboard of" });
  const go = h("button", { type: "submit", id: "generate" }, "Generate dashboard");
  const phases = h("ol", { id: "phases", class: "notes", "aria-live": "polite" });
  const out = h("div", { id: "generate-out" });
  main.append(h("h1", {}, "Dashboards"),
    h("form", { class: "card", onsubmit: (e) => { e.preventDefault(); generate(); } },
      h("h2", {}, "Generate from a dataset"), h("div", { class: "row" }, pick, go), phases, out), list);
  const [ds, vs] = await Promise.all([get("/api/v1/projects/" + state.projectId + "/datasets?limit=100"),
    get("/api/v1/projects/" + state.projectId + "/views?limit=100").catch(() => ({ views: [] }))]);
  const views = vs.views || [];
  clear(pick, h("optgroup", { label: "Datasets" }, ds.datasets.filter((d) => d.status === "active").map((d) => h("option", { value: "/api/v1/datasets/" + d.id }, d.name))),
    views.length ? h("optgroup", { label: "Saved views" }, views.map((v) => h("option", { value: "/api/v1/projects/" + state.projectId + "/views/" + v.id }, v.name))) : null);
  go.disabled = !pick.options.length;
  await drawList(list);

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

// versions lists a dashboard's versions (restore, pin) and refines it in words.
async function versions(box, d, list) {
  const base = "/api/v1/dashboards/" + d.id;
  const prompt = h("input", { type: "text", maxlength: 1000, autocomplete: "off", placeholder: "e.g. show the totals as a line chart" });
  const problem = h("div");
  const r = await get(base + "/versions");
  const act = (path) => async () => {
    try { await post(base + "/versions/" + path, {}); toast("Done"); versions(box, d, list); } catch (err) { clear(problem, errorBox(err)); }
  };
  clear(box, h("h2", {}, d.display_name + ": versions"), problem,
    h("form", { class: "filters", onsubmit: async (e) => {
      e.preventDefault();
      try { await post(base + "/refine", { user_prompt: prompt.value.trim() }); toast("Dashboard refined"); versions(box, d, list); } catch (err) { clear(problem, errorBox(err)); }
    } }, field("Refine in words", prompt), h("button", { type: "submit", class: "small" }, "Refine")),
    table(["#", "Kind", "Name", "When", ""], r.versions.map((v) => h("tr", {},
      h("td", {}, String(v.number), v.current ? " (current)" : ""), h("td", {}, v.kind), h("td", {}, v.display_name || v.message || ""), h("td", {}, when(v.created_at)),
      h("td", { class: "row-actions" },
        v.current ? null : h("button", { type: "button", class: "ghost small", onclick: act(v.id + "/restore") }, "Restore"),
        h("button", { type: "button", class: "ghost small", onclick: act(v.id + (v.pinned ? "/unpin" : "/pin")) }, v.pinned ? "Unpin" : "Pin")))),
    { caption: "Dashboard versions" }));
}
