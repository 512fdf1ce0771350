// One dataset: its records grid, its schema with statistics and relationships, and its API
// (base URL, curl, docs pages, SDK downloads, versions and changelog).
import { get, state, pathOf } from "./console-api.js";
import { h, add, clear, num, bytes, when, cell, copyButton, table, errorBox } from "./console-ui.js";
import { createGrid } from "./console-grid.js";

const tabs = [["records", "Records"], ["schema", "Schema"], ["api", "API"]];

export async function render(main, id, tab) {
  const tabName = tab.split("?")[0];
  // The query of the location's hash, undecoded: a value's own & or = stays in the value.
  const filterSpec = location.hash.split("?")[1] || "";
  const [d, schema] = await Promise.all([
    get("/api/v1/projects/" + state.projectId + "/datasets/" + id),
    get("/api/v1/projects/" + state.projectId + "/datasets/" + id + "/schema").catch(() => null),
  ]);
  const nav = h("nav", { class: "tabs", "aria-label": "Dataset views" }, tabs.map(([t, label]) =>
    h("a", { href: "#/datasets/" + id + "/" + t, "aria-current": t === tabName ? "page" : undefined, id: "tab-" + t }, label)));
  const panel = h("section", { "aria-labelledby": "tab-" + tabName, class: "panel", id: "dataset-panel" });
  add(main, h("p", { class: "crumbs" }, h("a", { href: "#/datasets" }, "Datasets"), " / "),
    h("h1", {}, d.name, " ", h("span", { class: "badge " + d.status }, d.status)),
    h("p", { class: "muted" }, num(d.source && d.source.row_count) + " rows · " + bytes(d.source && d.source.size) + " · changed " + when(d.updated_at) + " · " + d.id),
    d.error ? h("p", { class: "error" }, d.error) : null, nav, panel);
  if (tabName === "schema") return drawSchema(panel, d, schema);
  if (tabName === "api") return drawAPI(panel, d);
  return drawRecords(panel, d, schema, filterSpec);
}

// gridColumns are the schema's columns, the key first.
function gridColumns(schema) {
  const t = schema && schema.tables && schema.tables[0];
  if (!t) return { cols: [], key: "id" };
  const key = (t.columns.find((c) => c.is_primary_key) || { name: "id" }).name;
  const cols = t.columns.slice().sort((a, b) => (b.name === key) - (a.name === key));
  return { cols, key };
}

function drawRecords(panel, d, schema, filterSpec) {
  if (d.status === "processing") { panel.append(h("p", {}, "The dataset is still being loaded.")); return; }
  const { cols, key } = gridColumns(schema);
  const initial = [];
  if (filterSpec) {
    const q = new URLSearchParams(filterSpec);
    for (const [k, v] of q) initial.push({ col: k, op: "eq", value: v });
  }
  // Relationships make a column's values links to the records they point at (or, from a
  // key, to the records pointing here).
  const links = {};
  for (const r of (schema && schema.relationships) || []) links[r.from_column] ||= { dataset: r.to_dataset_id, column: r.to_column, name: r.to_dataset_name || r.to_dataset_id };
  const g = createGrid(panel, { datasetId: d.id, columns: cols, keyName: key, initialFilters: initial, links });
  return g.ready;
}

function stat(v) { return v === undefined || v === null ? "—" : typeof v === "number" ? num(v) : cell(v); }

function drawSchema(panel, d, schema) {
  if (!schema) { panel.append(h("p", { class: "muted" }, "No schema yet.")); return; }
  for (const t of schema.tables) {
    panel.append(h("h2", {}, "Columns", schema.tables.length > 1 ? " of " + t.name : "", " ", h("span", { class: "muted small" }, num(t.row_count) + " rows")),
      table(["Column", "Type", "Key", "Complete", "Distinct", "Min", "Max", "Samples"], t.columns.map((c) => {
        const s = c.statistics || {};
        return h("tr", {},
          h("th", { scope: "row" }, c.name, c.original_name && c.original_name !== c.name ? h("div", { class: "muted small" }, c.original_name) : null),
          h("td", {}, c.type, c.nullable ? "" : " not null"),
          h("td", {}, c.is_primary_key ? "key" : c.constraints && c.constraints.unique ? "unique" : ""),
          h("td", { class: "num" }, s.completeness === undefined ? "—" : h("meter", { min: 0, max: 1, value: s.completeness, "aria-label": "Completeness of " + c.name }), " ", s.completeness === undefined ? "" : Math.round(s.completeness * 100) + "%"),
          h("td", { class: "num" }, stat(s.distinct_count), s.distinct_estimated ? " (est.)" : ""),
          h("td", {}, stat(s.min)), h("td", {}, stat(s.max)),
          h("td", { class: "samples" }, (c.sample_values || []).slice(0, 5).map(cell).join(", ")));
      }), { caption: "Columns and statistics" }));
  }
  const rels = schema.relationships || [];
  panel.append(h("h2", {}, "Relationships"), table(["From", "To", "Kind", "Origin", ""], rels.map((r) => h("tr", {},
    h("td", {}, r.from_table + "." + r.from_column),
    h("td", {}, h("a", { href: "#/datasets/" + r.to_dataset_id + "/records", class: "rel" }, (r.to_dataset_name || r.to_dataset_id) + "." + r.to_column)),
    h("td", {}, r.type), h("td", {}, r.origin),
    h("td", {}, h("a", { href: "#/datasets/" + r.to_dataset_id + "/schema" }, "schema")))), { empty: "No relationships to other datasets of the project.", caption: "Relationships" }));
}

async function drawAPI(panel, d) {
  const links = d._links || {};
  const records = links.records || location.origin + "/api/v1/datasets/" + d.id + "/data";
  const curl = "curl -H \"X-API-Key: $DP_API_KEY\" '" + records + "?limit=10'";
  panel.append(h("h2", {}, "Base URL"), h("p", {}, h("code", { id: "base-url" }, records), " ", copyButton(records)),
    h("h2", {}, "Try it"), h("pre", { class: "code", id: "curl" }, curl), copyButton(curl, "Copy curl"),
    h("p", { class: "muted small" }, "Create an API key under Organization → API keys; it is shown once."),
    h("h2", {}, "Documentation"), h("ul", {},
      h("li", {}, h("a", { href: pathOf(links.docs || "/api/v1/datasets/" + d.id + "/docs"), target: "_blank", rel: "noopener" }, "Interactive docs (Swagger UI)")),
      h("li", {}, h("a", { href: pathOf(links.redoc || "/api/v1/datasets/" + d.id + "/redoc"), target: "_blank", rel: "noopener" }, "Reference (Redoc)")),
      h("li", {}, h("a", { href: pathOf(links.openapi_json || "/api/v1/datasets/" + d.id + "/openapi.json") }, "OpenAPI description (JSON)"))),
    h("h2", {}, "SDKs"), h("ul", { class: "inline" }, ["javascript", "typescript", "python", "go"].map((l) =>
      h("li", {}, h("a", { href: pathOf((links.sdk && links.sdk[l]) || "/api/v1/datasets/" + d.id + "/sdk/" + l), download: "" }, l)))));
  const versions = h("div"), changes = h("div");
  panel.append(h("h2", {}, "Versions"), versions, h("h2", {}, "Changelog"), changes);
  try {
    const [v, c] = await Promise.all([get("/api/v1/datasets/" + d.id + "/versions"), get("/api/v1/datasets/" + d.id + "/changelog")]);
    versions.append(table(["Version", "Status", "Level", "Released"], v.versions.map((x) => h("tr", {},
      h("td", {}, x.version), h("td", {}, x.status), h("td", {}, x.level), h("td", {}, when(x.released_at)))), { caption: "API versions" }));
    changes.append(c.versions.length ? h("ul", {}, c.versions.map((x) => h("li", {}, h("strong", {}, x.version), " (" + x.level + ", " + when(x.released_at) + ")",
      x.changes.length ? h("ul", {}, x.changes.map((ch) => h("li", {}, h("span", { class: "badge " + ch.level }, ch.level), " ", ch.text))) : null))) : h("p", { class: "muted" }, "No changes yet."));
  } catch (err) { versions.append(errorBox(err)); }
}
