// Queries: a SQL editor (CodeMirror 6, completing dataset and column names), a plain-English
// box that shows the SQL it wrote with its assumptions, warnings and refusals, the results
// as a grid and a chart (ECharts), and saved queries.
import { get, post, state, ApiError, pathOf } from "./console-api.js";
import { h, clear, toast, errorBox, cell, table, num, modal, field, when } from "./console-ui.js";
import { EditorView, basicSetup, keymap, placeholder, sql, PostgreSQL, oneDark } from "./codemirror.js";

const base = () => "/api/v1/projects/" + state.projectId;

// ident is a dataset name's identifier form, as SQL may name it.
export const ident = (name) => name.toLowerCase().replace(/[^a-z0-9]+/g, "_").replace(/^_+|_+$/g, "");

let echartsLoading;
function loadECharts() {
  if (window.echarts) return Promise.resolve(window.echarts);
  echartsLoading ||= new Promise((resolve, reject) => {
    const s = document.createElement("script");
    s.src = document.body.dataset.assets + "/echarts.min.js";
    s.onload = () => resolve(window.echarts);
    s.onerror = () => reject(new Error("the chart library did not load"));
    document.head.append(s);
  });
  return echartsLoading;
}

async function completionSchema() {
  const r = await get(base() + "/datasets?limit=100");
  const schema = {};
  const active = (r.datasets || []).filter((d) => d.status === "active").slice(0, 50);
  await Promise.all(active.map(async (d) => {
    try {
      const s = await get(base() + "/datasets/" + d.id + "/schema");
      const cols = (s.tables[0] ? s.tables[0].columns : []).map((c) => c.name);
      schema[ident(d.name)] = cols;
    } catch { schema[ident(d.name)] = []; }
  }));
  return schema;
}

export async function render(main) {
  const run = h("button", { type: "button", id: "run-sql" }, "Run SQL");
  const save = h("button", { type: "button", class: "ghost", id: "save-query", disabled: true }, "Save query");
  const explain = h("button", { type: "button", class: "ghost", id: "explain" }, "Explain");
  const asView = h("button", { type: "button", class: "ghost", id: "save-view" }, "Save as view");
  const exportFormat = h("select", { id: "export-format", "aria-label": "Export format" }, ["csv", "json", "excel", "parquet"].map((f) => h("option", { value: f }, f)));
  const exportBtn = h("button", { type: "button", class: "ghost", id: "export", disabled: true }, "Export");
  const exportOut = h("span", { id: "export-out", class: "small", "aria-live": "polite" });
  const history = h("div", { id: "history" });
  const editorBox = h("div", { class: "editor", id: "sql-editor" });
  const question = h("textarea", { id: "question", rows: 2, placeholder: "e.g. total amount by region", "aria-label": "Question in plain English" });
  const ask = h("button", { type: "submit", id: "ask" }, "Ask");
  const nlOut = h("div", { id: "nl-out", "aria-live": "polite" });
  const results = h("section", { id: "results", "aria-live": "polite", "aria-label": "Results" });
  const saved = h("div", { id: "saved" });
  main.append(h("h1", {}, "Queries"),
    h("form", { class: "card", onsubmit: (e) => { e.preventDefault(); askQuestion(); } },
      h("h2", {}, h("label", { for: "question" }, "Ask in plain English")), question, h("div", { class: "actions" }, ask), nlOut),
    h("div", { class: "card" }, h("h2", {}, "SQL"), editorBox,
      h("div", { class: "actions" }, h("span", { class: "muted small" }, "Ctrl+Enter runs; Ctrl+Space completes dataset and column names."), explain, asView, save, run),
      h("div", { class: "actions" }, exportOut, exportFormat, exportBtn)),
    results, h("h2", {}, "Saved queries"), saved, h("h2", {}, "History"), history);

  const schema = await completionSchema().catch(() => ({}));
  const first = Object.keys(schema)[0];
  // The editor lives in a shadow root: CodeMirror then styles it with constructed style
  // sheets (adoptedStyleSheets) instead of <style> elements, which style-src 'self' refuses.
  const shadow = editorBox.attachShadow({ mode: "open" });
  const dark = matchMedia("(prefers-color-scheme: dark)").matches;
  const view = new EditorView({
    doc: first ? "SELECT *\nFROM " + first + "\nLIMIT 100" : "SELECT 1",
    root: shadow,
    extensions: [
      dark ? oneDark : [],
      EditorView.theme({ "&": { minHeight: "140px", fontSize: "14px" }, ".cm-scroller": { minHeight: "140px" }, "&.cm-focused": { outline: "2px solid var(--accent)" } }),
      keymap.of([{ key: "Mod-Enter", run: () => { runSQL(); return true; } }]),
      basicSetup, sql({ dialect: PostgreSQL, schema, upperCaseKeywords: true }),
      placeholder("SELECT … FROM <dataset>"), EditorView.lineWrapping,
      EditorView.contentAttributes.of({ "aria-label": "SQL query" }),
    ],
  });
  shadow.append(view.dom);
  window.consoleEditor = view; // for the browser tests and the curious

  let lastQueryId = "", lastPlaceholders = [];
  async function execute(body) {
    clear(results, h("p", { class: "muted" }, "Running…"));
    const r = await post(base() + "/queries/execute", body);
    lastQueryId = r.query_id;
    save.disabled = false;
    exportBtn.disabled = false;
    clear(exportOut);
    await showResults(results, r);
    drawHistory();
    return r;
  }

  async function drawHistory() {
    try {
      const r = await get(base() + "/queries?limit=20");
      clear(history, table(["When", "Type", "Query", "Status", "Rows", "ms", ""], r.queries.map((q) => h("tr", {},
        h("td", {}, when(q.created_at)), h("td", {}, q.type === "sql" ? "SQL" : "English"), h("td", {}, h("code", {}, q.query.slice(0, 120))),
        h("td", {}, h("span", { class: "badge " + q.status }, q.status)), h("td", { class: "num" }, num(q.row_count)), h("td", { class: "num" }, num(q.execution_time_ms)),
        h("td", {}, h("button", { type: "button", class: "ghost small", onclick: () => {
          if (q.type === "sql") { view.dispatch({ changes: { from: 0, to: view.state.doc.length, insert: q.query } }); view.focus(); } else { question.value = q.query; question.focus(); }
        } }, "Edit")))), { caption: "Query history", empty: "No queries yet." }));
    } catch (err) { clear(history, errorBox(err)); }
  }
  drawHistory();

  async function runSQL() {
    const query = view.state.doc.toString();
    const names = placeholders(query);
    const parameters = names.length ? await askValues(names) : {};
    if (!parameters) return;
    run.disabled = true;
    try {
      await execute(names.length ? { type: "sql", query, parameters } : { type: "sql", query });
      lastPlaceholders = names.map((n) => ({ name: n, value: parameters[n] }));
    } catch (err) { clear(results, queryError(err)); }
    run.disabled = false;
  }
  run.addEventListener("click", runSQL);

  explain.addEventListener("click", async () => {
    try {
      const r = await post(base() + "/queries/explain", { type: "sql", query: view.state.doc.toString() });
      const x = r.explanation;
      clear(results, h("h2", {}, "Plan"), h("p", { id: "plan-summary" }, x.summary),
        (x.warnings || []).length ? h("ul", { class: "notes" }, x.warnings.map((w) => h("li", {}, typeof w === "string" ? w : w.message || JSON.stringify(w)))) : null,
        (x.suggestions || []).length ? [h("h3", {}, "Suggestions"), h("ul", { class: "notes" }, x.suggestions.map((w) => h("li", {}, typeof w === "string" ? w : w.message || JSON.stringify(w))))] : null,
        h("details", {}, h("summary", {}, "The planner's plan (JSON)"), h("pre", { class: "code" }, JSON.stringify(x.query_plan, null, 2))));
    } catch (err) { clear(results, queryError(err)); }
  });

  async function askQuestion() {
    const q = question.value.trim();
    if (!q) return;
    ask.disabled = true;
    clear(nlOut, h("p", { class: "muted" }, "Reading the question…"));
    try {
      const r = await execute({ type: "natural_language", query: q });
      const steps = (r.explanation && r.explanation.steps) || [];
      clear(nlOut, h("h3", {}, "Generated SQL"), h("pre", { class: "code", id: "generated-sql" }, r.generated_sql || ""),
        h("button", { type: "button", class: "ghost small", onclick: () => {
          view.dispatch({ changes: { from: 0, to: view.state.doc.length, insert: r.generated_sql || "" } });
          view.focus();
        } }, "Edit in the SQL editor"),
        r.explanation && r.explanation.summary ? h("p", {}, r.explanation.summary) : null,
        steps.length ? [h("h3", {}, "How it was read (assumptions)"), h("ul", { class: "notes", id: "nl-steps" }, steps.map((s) => h("li", {}, s)))] : null,
        (r.warnings || []).length ? [h("h3", {}, "Warnings"), h("ul", { class: "notes warn", id: "nl-warnings" }, r.warnings.map((w) => h("li", {}, w)))] : null);
    } catch (err) {
      clear(results);
      const d = err instanceof ApiError ? err.details || {} : {};
      clear(nlOut, h("div", { class: "conflict-box", id: "nl-refusal", role: "alert" },
        h("strong", {}, "Not answered: "), d.reason || err.message,
        Array.isArray(d.suggestions) && d.suggestions.length ? [h("p", {}, "Try:"), h("ul", {}, d.suggestions.map((s) => h("li", {},
          h("button", { type: "button", class: "ghost small", onclick: () => { question.value = typeof s === "string" ? s : s.question || JSON.stringify(s); askQuestion(); } },
            typeof s === "string" ? s : s.question || JSON.stringify(s)))))] : null));
    }
    ask.disabled = false;
  }

  // Export: every row of the last query, written by a job; its state is shown until the
  // download link is ready.
  exportBtn.addEventListener("click", async () => {
    exportBtn.disabled = true;
    try {
      let x = await post(base() + "/queries/" + lastQueryId + "/export", { format: exportFormat.value });
      while (x.status === "processing") {
        clear(exportOut, "Exporting… ", x.row_count ? num(x.row_count) + " rows" : "");
        await new Promise((res) => setTimeout(res, 400));
        x = await get(base() + "/queries/" + lastQueryId + "/exports/" + x.export_id);
      }
      clear(exportOut, x.status === "completed"
        ? h("a", { href: pathOf(x.download_url), id: "export-link", download: "" }, "Download " + x.format + " (" + num(x.row_count) + " rows)")
        : h("span", { class: "error" }, "Export " + x.status + (x.error ? ": " + x.error : "")));
    } catch (err) { clear(exportOut, h("span", { class: "error" }, err.message)); }
    exportBtn.disabled = false;
  });

  // A saved view: the editor's SELECT under a name that queries (and dashboards) read like a dataset.
  asView.addEventListener("click", async () => {
    const name = h("input", { type: "text", required: true, maxlength: 63, pattern: "[A-Za-z_][A-Za-z0-9_]*", autocomplete: "off" });
    const problem = h("div");
    const made = await modal("Save as view", (close) => h("form", { onsubmit: async (e) => {
      e.preventDefault();
      try { close(await post(base() + "/views", { name: name.value.trim(), definition: { sql: view.state.doc.toString() } })); } catch (err) { clear(problem, errorBox(err)); }
    } }, field("View name", name, "Letters, digits and _; queries name the view by it."), problem, h("div", { class: "actions" },
      h("button", { type: "button", class: "ghost", onclick: () => close() }, "Cancel"), h("button", { type: "submit" }, "Save view"))));
    if (made) toast("View " + made.name + " saved");
  });

  save.addEventListener("click", async () => {
    const name = h("input", { type: "text", required: true, maxlength: 255 });
    const problem = h("div");
    // Each {{placeholder}} of the query becomes a typed parameter, its value of this run the
    // default unless cleared (then it is required at every run).
    const declared = lastPlaceholders.map((p) => ({ name: p.name,
      type: h("select", { dataset: { param: p.name } }, ["string", "integer", "number", "boolean", "date"].map((t) =>
        h("option", { value: t, selected: t === guessType(p.value) }, t))),
      def: h("input", { type: "text", value: p.value === undefined ? "" : String(p.value), dataset: { paramDefault: p.name } }) }));
    const ok = await modal("Save query", (close) => h("form", { onsubmit: async (e) => {
      e.preventDefault();
      const body = { name: name.value.trim() };
      if (declared.length) {
        body.parameters = declared.map((d) => {
          const out = { name: d.name, type: d.type.value };
          if (d.def.value !== "") out.default = typed(d.type.value, d.def.value);
          return out;
        });
      }
      try { await post(base() + "/queries/" + lastQueryId + "/save", body); close(true); } catch (err) { clear(problem, errorBox(err)); }
    } }, field("Name", name), declared.map((d) => [field("Type of {{" + d.name + "}}", d.type),
      field("Default of {{" + d.name + "}}", d.def, "Leave empty to ask for it at every run.")]), problem, h("div", { class: "actions" },
      h("button", { type: "button", class: "ghost", onclick: () => close(false) }, "Cancel"), h("button", { type: "submit" }, "Save"))));
    if (ok) { toast("Query saved"); drawSaved(); }
  });

  async function drawSaved() {
    try {
      const r = await get(base() + "/saved-queries?limit=100");
      clear(saved, table(["Name", "Type", "Query", "Used", ""], r.saved_queries.map((s) => h("tr", { dataset: { id: s.id } },
        h("td", {}, s.name), h("td", {}, s.type === "sql" ? "SQL" : "English"), h("td", {}, h("code", {}, s.query.slice(0, 120))), h("td", { class: "num" }, num(s.usage_count)),
        h("td", {}, h("button", { type: "button", class: "small", onclick: async () => {
          try {
            const parameters = await askParameters(s);
            if (!parameters) return;
            clear(results, h("p", { class: "muted" }, "Running…"));
            const out = await post(base() + "/saved-queries/" + s.id + "/execute", Object.keys(parameters).length ? { parameters } : {});
            await showResults(results, out);
          } catch (err) { clear(results, queryError(err)); }
        } }, "Run")))), { empty: "No saved queries: run one, then Save query.", caption: "Saved queries" }));
    } catch (err) { clear(saved, errorBox(err)); }
  }
  drawSaved();
}

// placeholders are the {{name}} placeholders of a query's text, once each, in lower case.
function placeholders(query) {
  const out = [];
  for (const m of query.matchAll(/\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}/g)) {
    const n = m[1].toLowerCase();
    if (!out.includes(n)) out.push(n);
  }
  return out;
}

// guessType is the parameter type a value typed into a form reads as.
function guessType(v) {
  if (typeof v === "number") return Number.isInteger(v) ? "integer" : "number";
  if (typeof v === "boolean") return "boolean";
  if (typeof v === "string" && /^\d{4}-\d{2}-\d{2}$/.test(v)) return "date";
  return "string";
}

// typed is a form's text as a value of type t.
function typed(t, v) {
  if (t === "integer" || t === "number") return Number(v);
  if (t === "boolean") return /^(true|yes|1)$/i.test(v);
  return v;
}

// askValues asks for the values of a query's placeholders before it runs (numbers as
// numbers); null when dismissed.
async function askValues(names) {
  const inputs = names.map((n) => ({ n, input: h("input", { type: "text", required: true, dataset: { placeholder: n } }) }));
  return modal("Values of the placeholders", (close) => h("form", { onsubmit: (e) => {
    e.preventDefault();
    const out = {};
    for (const { n, input } of inputs) {
      const v = input.value.trim();
      out[n] = /^-?\d+(\.\d+)?$/.test(v) ? Number(v) : v;
    }
    close(out);
  } }, inputs.map(({ n, input }) => field("{{" + n + "}}", input)),
  h("div", { class: "actions" }, h("button", { type: "button", class: "ghost", onclick: () => close(null) }, "Cancel"), h("button", { type: "submit" }, "Run"))));
}

// askParameters asks for the values of a saved query's parameters (their defaults filled
// in); it answers {} for a query without any and null when dismissed.
async function askParameters(s) {
  const params = s.parameters || [];
  if (!params.length) return {};
  const inputs = params.map((p) => ({ p, input: h("input", {
    type: p.type === "integer" || p.type === "number" ? "number" : p.type === "date" ? "date" : "text",
    value: p.default === undefined || p.default === null ? "" : String(p.default), required: p.default === undefined, step: p.type === "number" ? "any" : undefined,
  }) }));
  return modal("Run " + s.name, (close) => h("form", { onsubmit: (e) => {
    e.preventDefault();
    const out = {};
    for (const { p, input } of inputs) {
      if (input.value === "") continue;
      out[p.name] = p.type === "integer" || p.type === "number" ? Number(input.value) : p.type === "boolean" ? /^(true|yes|1)$/i.test(input.value) : input.value;
    }
    close(out);
  } }, inputs.map(({ p, input }) => field(p.name + " (" + p.type + ")", input, p.description)),
  h("div", { class: "actions" }, h("button", { type: "button", class: "ghost", onclick: () => close(null) }, "Cancel"), h("button", { type: "submit" }, "Run"))));
}

function queryError(err) {
  const d = (err && err.details) || {};
  return h("div", { class: "conflict-box", role: "alert", id: "query-error" }, h("strong", {}, err.code || "Error"), ": ", err.message,
    d.line ? " (line " + d.line + (d.column ? ", column " + d.column : "") + ")" : "",
    Array.isArray(d.suggestions) ? h("ul", {}, d.suggestions.map((s) => h("li", {}, typeof s === "string" ? s : JSON.stringify(s)))) : null);
}

const numericType = /^(smallint|integer|bigint|numeric|real|double precision|int|float|decimal)/;

async function showResults(box, r) {
  const res = r.results || { columns: [], rows: [] };
  const head = h("p", { class: "muted", id: "result-meta" }, num(res.row_count) + " rows" + (res.truncated ? " (truncated)" : "") +
    (r.metadata ? " · " + r.metadata.execution_time_ms + " ms" : ""));
  const grid = h("div", { class: "result-grid" }, table(res.columns.map((c) => c.name), res.rows.slice(0, 1000).map((row) =>
    h("tr", {}, row.map((v, i) => h("td", { class: numericType.test(res.columns[i].type) ? "num" : "" }, cell(v))))), { caption: "Query results", class: "results", empty: "No rows." }));
  const chartBox = h("div", { class: "chart", id: "chart", role: "img", "aria-label": "Chart of the results" });
  const kind = h("select", { "aria-label": "Chart type", id: "chart-kind" }, ["bar", "line", "pie"].map((k) => h("option", { value: k }, k)));
  clear(box, h("h2", {}, "Results"), head, (r.warnings || []).length ? h("ul", { class: "notes" }, r.warnings.map((w) => h("li", {}, w))) : null, grid);
  const x = res.columns.findIndex((c) => !numericType.test(c.type));
  const ys = res.columns.map((c, i) => (numericType.test(c.type) && i !== x ? i : -1)).filter((i) => i >= 0);
  if (!res.rows.length || !ys.length) return;
  box.append(h("h2", {}, "Chart ", kind), chartBox);
  const echarts = await loadECharts();
  const dark = matchMedia("(prefers-color-scheme: dark)").matches;
  const chart = echarts.init(chartBox, dark ? "dark" : null, { renderer: "canvas" });
  const rows = res.rows.slice(0, 200);
  const labels = rows.map((row, i) => (x >= 0 ? cell(row[x]) : String(i + 1)));
  const draw = () => {
    const k = kind.value;
    chart.clear();
    chart.setOption(k === "pie" ? {
      tooltip: {}, series: [{ type: "pie", radius: "65%", data: rows.map((row, i) => ({ name: labels[i], value: Number(row[ys[0]]) })) }],
    } : {
      tooltip: { trigger: "axis" }, legend: { data: ys.map((i) => res.columns[i].name) },
      xAxis: { type: "category", data: labels }, yAxis: { type: "value" },
      series: ys.slice(0, 5).map((i) => ({ name: res.columns[i].name, type: k, data: rows.map((row) => Number(row[i])) })),
    });
    chartBox.dataset.drawn = "true";
  };
  kind.addEventListener("change", draw);
  draw();
}
