// One dataset: its records grid, its schema (statistics, the key, what the columns mean and the
// relationships, with the forms that change them) and its API (base URL, curl, docs pages, SDK
// downloads, versions and changelog).
import { get, request, state, pathOf } from "./console-api.js";
import { h, add, clear, num, bytes, when, cell, copyButton, table, errorBox, modal, confirmDialog, field } from "./console-ui.js";
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

// The Schema tab: statistics, the key, what each column means and the relationships, and the
// forms that correct the data model through the schema API (PUT /api/v1/datasets/{id}/schema):
// set_primary_key, alter_column (description, aliases, unit, default aggregation, role),
// add_relationship and drop_relationship. A refused change is shown in words beside its form
// and changes nothing; an accepted one redraws the tab from a fresh read of the schema.

// keyTypes are the column types that can key records (the API refuses the others).
const keyTypes = /^(integer|bigint|smallint|text|uuid|character varying.*|varchar.*)$/;
const aggregations = [["sum", "sum: add them up"], ["avg", "avg: average them"], ["min", "min: the smallest"], ["max", "max: the largest"], ["none", "none: never combine them"]];
const roles = ["identifier", "category", "time", "amount", "value", "count", "text"];
const origins = { declared: "declared by a person", inferred: "inferred from the data", foreign_key: "a foreign key of the database" };
// fieldLabels name the fields of a schema change as the forms call them.
const fieldLabels = {
  column: "Column", references: "Dataset it points at", "references.dataset_id": "Dataset it points at",
  "references.column": "Column it points at", aliases: "Aliases", unit: "Unit", description: "Description",
  default_aggregation: "Default aggregation", role: "Role", expected_version: "Schema version", op: "Change",
};

// roleOf is the column's role and where it came from ({role, source}: source "set" by a person,
// "inferred", or "" when the read does not say), undefined when the schema read has no role.
function roleOf(c) {
  if (c.role !== undefined && c.role !== null) return { role: String(c.role), source: c.role_source || (c.semantics && c.semantics.role ? "set" : "") };
  if (c.semantics && c.semantics.role) return { role: String(c.semantics.role), source: "set" };
  return undefined;
}

function none() { return h("span", { class: "muted" }, "—"); }

function fieldLabel(f) {
  const path = String(f || "").replace(/^body\.changes(\[\d+\]|\.\d+)\.?/, "").replace(/^body\.?/, "").replace(/(\[\d+\]|\.\d+)$/, "");
  return fieldLabels[path] || path || "The request";
}

function rowCount(n) { return n === 1 ? "1 record" : num(n) + " records"; }

// problemBox says in words why the API refused a schema change: the fields of a 400, the
// records of a 422 SCHEMA_VIOLATION, or the message of any other error.
function problemBox(err, names) {
  const words = (s) => String(s === undefined || s === null ? "" : s).replace(/ds_[a-z0-9_]+/g, (id) => names[id] || id);
  const body = err && err.body;
  const e = body && typeof body.error === "object" && body.error ? body.error : body && typeof body === "object" ? body : {};
  const details = e.details;
  const box = h("div", { class: "error schema-problem", role: "alert" });
  if (details && Array.isArray(details.violations)) {
    box.append(h("p", {}, h("strong", {}, "Nothing was changed: "), "existing records do not allow it."),
      h("ul", {}, details.violations.map((v) => {
        const rows = v.rows || [];
        return h("li", {}, v.column ? h("code", {}, v.column) : null, v.column ? ": " : "", words(v.message), " (" + rowCount(v.row_count) + ")",
          rows.length ? h("ul", { class: "small" }, rows.map((x) => h("li", {}, "record ", h("code", {}, cell(x.id)), ": ",
            x.value === null || x.value === undefined ? "no value" : h("code", {}, cell(x.value)))),
          v.row_count > rows.length ? h("li", { class: "muted" }, "and " + rowCount(v.row_count - rows.length) + " more") : null) : null);
      })));
  } else if (Array.isArray(details) && details.length) {
    box.append(h("p", {}, h("strong", {}, "Nothing was changed: "), "the change was refused."),
      h("ul", {}, details.map((x) => h("li", {}, fieldLabel(x.field) + ": " + words(x.message || x.code)))));
  } else if (err && err.code === "SCHEMA_VERSION_CONFLICT") {
    box.append(h("p", {}, h("strong", {}, "Nothing was changed: "), "someone else changed the schema since this page was drawn (" + words(e.message) + "). ",
      h("a", { href: location.hash, onclick: (ev) => { ev.preventDefault(); window.dispatchEvent(new HashChangeEvent("hashchange")); } }, "Reload the schema"), " and try again."));
  } else {
    box.append(h("p", {}, h("strong", {}, "Nothing was changed: "), words(err && err.message ? err.message : String(err))));
  }
  return box;
}

async function drawSchema(panel, d, schema, saved) {
  if (!schema) { clear(panel, h("p", { class: "muted" }, "No schema yet.")); return; }
  const editable = d.status === "active" && d.type !== "database";
  const base = "/api/v1/projects/" + state.projectId + "/datasets";
  // The project's datasets, for relationships (and their names in messages); read before the
  // panel is cleared, so that the tab is redrawn at once.
  let datasets = [];
  let listError = null;
  if (editable) {
    try {
      datasets = ((await get(base + "?limit=100")).datasets || []).filter((x) => x.status === "active" && x.type === "file");
    } catch (err) { listError = err; }
  }
  const names = { [d.id]: d.name };
  for (const x of datasets) names[x.id] = x.name;
  for (const r of schema.relationships || []) names[r.to_dataset_id] ||= r.to_dataset_name || r.to_dataset_id;

  clear(panel);
  const version = schema.schema_version === undefined || schema.schema_version === null ? "" : String(schema.schema_version);
  const t0 = schema.tables[0];
  const status = h("div", { id: "schema-status", "aria-live": "polite" },
    saved ? h("p", { class: "schema-saved", role: "status", id: "schema-saved" }, saved, " The schema is at version " + version + ".") : null);
  panel.append(h("p", { class: "muted", id: "schema-version" }, "Schema version ", h("strong", {}, version || "—")), status);
  if (d.type === "database") panel.append(h("p", { class: "muted" }, "A connected database's schema is its database's: change it there, then refresh the dataset."));
  else if (d.status !== "active") panel.append(h("p", { class: "muted" }, "The schema can be changed once the dataset is active."));

  // put sends one schema change request; against this dataset, written against the version shown.
  const put = (changes, dataset = d.id) => {
    const body = { changes };
    if (dataset === d.id && version) body.expected_version = Number(version);
    return request("PUT", "/api/v1/datasets/" + dataset + "/schema", body);
  };
  // after redraws the tab from a fresh read, saying what was saved.
  const after = async (message) => {
    try {
      const [nd, ns] = await Promise.all([get(base + "/" + d.id), get(base + "/" + d.id + "/schema")]);
      await drawSchema(panel, nd, ns, message);
    } catch (err) { clear(status, errorBox(err)); }
  };

  // Columns and statistics; the key is marked, another column can become it.
  const keyStatus = h("div", { id: "key-status", "aria-live": "polite" });
  const currentKey = t0 ? (t0.columns.find((c) => c.is_primary_key) || {}).name : undefined;
  const setKey = async (c) => {
    const ok = await confirmDialog("Make " + c.name + " the key?",
      "This is a breaking change. Records are addressed by their key: from now on by " + c.name + (currentKey ? " instead of " + currentKey : "") +
      ", so every record's address (its URL in the record API, and links to it) changes, and the dataset's API gets a new major version. " +
      "Relationships that point at the current key are removed. Every record needs a value of " + c.name + ", and no two the same.", "Change the key");
    if (!ok) return;
    clear(keyStatus, h("p", { class: "muted" }, "Checking " + c.name + "…"));
    try { await put([{ op: "set_primary_key", column: c.name }]); } catch (err) { clear(keyStatus, problemBox(err, names)); return; }
    await after("Saved: the records are now keyed by " + c.name + ".");
  };
  schema.tables.forEach((t, i) => {
    panel.append(h("h2", {}, "Columns", schema.tables.length > 1 ? " of " + t.name : "", " ", h("span", { class: "muted small" }, num(t.row_count) + " rows")),
      i === 0 ? keyStatus : null,
      h("div", { id: i === 0 ? "schema-columns" : undefined }, table(["Column", "Type", "Key", "Complete", "Distinct", "Min", "Max", "Samples"], t.columns.map((c) => {
        const s = c.statistics || {};
        const unique = c.constraints && c.constraints.unique;
        const canKey = i === 0 && editable && !c.is_primary_key && !c.system && keyTypes.test(c.type);
        return h("tr", { dataset: { col: c.name, key: String(Boolean(c.is_primary_key)) }, class: c.is_primary_key ? "key-row" : undefined },
          h("th", { scope: "row" }, c.name, c.original_name && c.original_name !== c.name ? h("div", { class: "muted small" }, c.original_name) : null),
          h("td", {}, c.type, c.nullable ? "" : " not null"),
          h("td", { class: "key-cell" }, c.is_primary_key ? [h("span", { class: "badge key-badge" }, "key"), c.system ? h("span", { class: "muted small" }, " generated") : null] : unique ? "unique " : "",
            canKey ? h("button", { type: "button", class: "ghost small", "data-action": "set-key", "aria-label": "Make " + c.name + " the key", onclick: () => setKey(c) }, "Make key") : null),
          h("td", { class: "num" }, s.completeness === undefined ? "—" : h("meter", { min: 0, max: 1, value: s.completeness, "aria-label": "Completeness of " + c.name }), " ", s.completeness === undefined ? "" : Math.round(s.completeness * 100) + "%"),
          h("td", { class: "num" }, stat(s.distinct_count), s.distinct_estimated ? " (est.)" : ""),
          h("td", {}, stat(s.min)), h("td", {}, stat(s.max)),
          h("td", { class: "samples" }, (c.sample_values || []).slice(0, 5).map(cell).join(", ")));
      }), { caption: "Columns and statistics" })));
  });

  // What the columns mean: description, aliases, unit, default aggregation (and role).
  if (t0) {
    const cols = t0.columns.filter((c) => !c.system);
    const hasRoles = cols.some((c) => roleOf(c) !== undefined);
    const editColumn = async (c) => {
      const s = c.semantics || {};
      const cur = { description: c.description || "", aliases: s.aliases || [], unit: s.unit || "", agg: s.default_aggregation || "" };
      const desc = h("input", { type: "text", id: "col-description", maxlength: 2000, value: cur.description, autocomplete: "off" });
      const aliases = h("input", { type: "text", id: "col-aliases", value: cur.aliases.join(", "), autocomplete: "off" });
      const unit = h("input", { type: "text", id: "col-unit", maxlength: 40, value: cur.unit, autocomplete: "off" });
      const agg = h("select", { id: "col-aggregation" }, h("option", { value: "", disabled: cur.agg !== "" }, "unset: the platform decides"),
        aggregations.map(([v, label]) => h("option", { value: v }, label)));
      agg.value = cur.agg;
      // The role: a person's choice, or the inferred one (shown as such, kept unless changed);
      // a role set by a person can go back to inference ("inferred").
      let role = null;
      const r0 = roleOf(c);
      const setRole = r0 && r0.source !== "inferred" ? r0.role : "";
      if (hasRoles) {
        const known = !r0 || roles.includes(r0.role) ? roles : [r0.role, ...roles];
        role = h("select", { id: "col-role" },
          !r0 ? h("option", { value: "" }, "not set") : r0.source === "inferred" ? h("option", { value: "" }, "inferred: " + r0.role) : null,
          known.map((r) => h("option", { value: r }, r)),
          r0 && r0.source === "set" ? h("option", { value: "inferred" }, "inferred: let the platform decide again") : null);
        role.value = setRole;
      }
      const problem = h("div", { id: "column-status", "aria-live": "polite" });
      const save = h("button", { type: "submit" }, "Save");
      const done = await modal("Meaning of " + c.name, (close) => h("form", { id: "column-form", onsubmit: async (e) => {
        e.preventDefault();
        const ch = { op: "alter_column", column: c.name };
        if (desc.value !== cur.description) ch.description = desc.value;
        const al = aliases.value.split(",").map((x) => x.trim()).filter(Boolean);
        if (al.join("\n") !== cur.aliases.join("\n")) ch.aliases = al;
        if (unit.value.trim() !== cur.unit) ch.unit = unit.value.trim();
        if (agg.value && agg.value !== cur.agg) ch.default_aggregation = agg.value;
        if (role && role.value && role.value !== setRole) ch.role = role.value;
        if (Object.keys(ch).length === 2) { clear(problem, h("p", { class: "muted" }, "Nothing to save: the values are as they were.")); return; }
        save.disabled = true;
        clear(problem);
        try { await put([ch]); close(true); } catch (err) { clear(problem, problemBox(err, names)); save.disabled = false; }
      } },
      h("p", { class: "muted small" }, "What " + c.name + " means to plain-English questions and generated dashboards. No data changes."),
      field("Description", desc),
      field("Aliases", aliases, "Other names people use for it, separated by commas (an empty field removes them)"),
      field("Unit", unit, "The unit of its values: EUR, kg, minutes"),
      field("Default aggregation", agg, "How its values combine when a question or a tile does not say" + (cur.agg ? "; once set it can be changed, not unset" : "")),
      role ? field("Role", role, "What the column is for: keys, groups, dates, amounts that add up, values that do not, counts, text") : null,
      problem,
      h("div", { class: "actions" }, h("button", { type: "button", class: "ghost", onclick: () => close(false) }, "Cancel"), save)));
      if (done) await after("Saved the meaning of " + c.name + ".");
    };
    panel.append(h("h2", {}, "What the columns mean"),
      h("div", { id: "column-meaning" }, table(["Column", "Description", "Aliases", "Unit", "Default aggregation", hasRoles ? "Role" : null, editable ? "" : null].filter((x) => x !== null), cols.map((c) => {
        const s = c.semantics || {};
        return h("tr", { dataset: { col: c.name } },
          h("th", { scope: "row" }, c.name, c.is_primary_key ? [" ", h("span", { class: "badge key-badge" }, "key")] : null),
          h("td", {}, c.description || none()),
          h("td", { class: "aliases" }, s.aliases && s.aliases.length ? s.aliases.join(", ") : none()),
          h("td", {}, s.unit || none()),
          h("td", {}, s.default_aggregation || h("span", { class: "muted" }, "unset")),
          hasRoles ? h("td", { class: "role" }, roleOf(c) ? [roleOf(c).role, roleOf(c).source ? h("span", { class: "muted small" }, " (" + roleOf(c).source + ")") : null] : none()) : null,
          editable ? h("td", { class: "row-actions" }, h("button", { type: "button", class: "ghost small", "data-action": "edit-column", "aria-label": "Edit the meaning of " + c.name, onclick: () => editColumn(c) }, "Edit")) : null);
      }), { caption: "What the columns mean", empty: "No columns." })));
  }

  // Relationships: how each was found and its role (the column that names the other record);
  // declared through the form, dropped with a button.
  const rels = schema.relationships || [];
  const relStatus = h("div", { id: "rel-status", "aria-live": "polite" });
  const describe = (r) => {
    const other = names[r.to_dataset_id] || r.to_dataset_name || r.to_dataset_id;
    return r.type === "one-to-many" ? other + "." + r.to_column + " → " + r.from_column : r.from_column + " → " + other + "." + r.to_column;
  };
  const dropRel = async (r) => {
    const text = describe(r);
    if (!(await confirmDialog("Drop the relationship " + text + "?", "Links along it disappear from the records, the API's descriptions, questions and dashboards. " +
      "No data changes, and inference will not bring it back; declare it again to restore it.", "Drop"))) return;
    clear(relStatus);
    try {
      if (r.type === "one-to-many") await put([{ op: "drop_relationship", column: r.to_column, references: { dataset_id: d.id } }], r.to_dataset_id);
      else await put([{ op: "drop_relationship", column: r.from_column, references: { dataset_id: r.to_dataset_id } }]);
    } catch (err) { clear(relStatus, problemBox(err, names)); return; }
    await after("Dropped the relationship " + text + ".");
  };
  panel.append(h("h2", {}, "Relationships"), h("div", { id: "schema-relationships" }, table(["Column here", "Role", "Linked to", "Kind", "How it was found", ""], rels.map((r) => {
    const other = names[r.to_dataset_id] || r.to_dataset_name || r.to_dataset_id;
    const out = r.type !== "one-to-many";
    return h("tr", { dataset: { from: r.from_column, to: r.to_dataset_id, toColumn: r.to_column, origin: r.origin, type: r.type } },
      h("td", {}, h("code", {}, r.from_column)),
      h("td", {}, h("code", {}, out ? r.from_column : r.to_column)),
      h("td", {}, h("a", { href: "#/datasets/" + r.to_dataset_id + "/records", class: "rel" }, other + "." + r.to_column)),
      h("td", {}, out ? r.type + ": each record names one of " + other : r.type + ": records of " + other + " name one of these"),
      h("td", {}, h("span", { class: "badge origin" }, r.origin), " ", h("span", { class: "muted small" }, origins[r.origin] || "")),
      h("td", { class: "row-actions" }, h("a", { href: "#/datasets/" + r.to_dataset_id + "/schema" }, "schema"),
        editable && (r.origin === "declared" || r.origin === "inferred") ? [" ", h("button", { type: "button", class: "ghost small", "data-action": "drop-relationship",
          "aria-label": "Drop the relationship " + describe(r), onclick: () => dropRel(r) }, "Drop")] : null));
  }), { empty: "No relationships to other datasets of the project.", caption: "Relationships" })), relStatus);

  // The version drawn, set last: the tab is complete once it changes.
  panel.dataset.schemaVersion = version;
  if (!editable || !t0) return;
  const relCol = h("select", { id: "rel-column", required: true }, h("option", { value: "" }, "Choose a column"),
    t0.columns.filter((c) => !c.system).map((c) => h("option", { value: c.name }, c.name)));
  const relDs = h("select", { id: "rel-dataset", required: true }, h("option", { value: "" }, "Choose a dataset"),
    datasets.map((x) => h("option", { value: x.id }, x.id === d.id ? x.name + " (this dataset)" : x.name)));
  const relTarget = h("select", { id: "rel-target", disabled: true }, h("option", { value: "" }, "Choose a dataset first"));
  const declare = h("button", { type: "submit", id: "rel-declare" }, "Declare relationship");
  let asked = 0;
  relDs.addEventListener("change", async () => {
    const n = ++asked;
    relTarget.disabled = true;
    if (!relDs.value) { clear(relTarget, h("option", { value: "" }, "Choose a dataset first")); return; }
    clear(relTarget, h("option", { value: "" }, "Loading its columns…"));
    try {
      const s = relDs.value === d.id ? schema : await get(base + "/" + relDs.value + "/schema");
      if (n !== asked) return;
      const keys = ((s.tables && s.tables[0] && s.tables[0].columns) || [])
        .filter((c) => !c.system && (c.is_primary_key || (c.constraints && c.constraints.unique)))
        .sort((a, b) => Number(Boolean(b.is_primary_key)) - Number(Boolean(a.is_primary_key)));
      if (!keys.length) { clear(relTarget, h("option", { value: "" }, "It has no key or unique column of its own values")); return; }
      clear(relTarget, keys.map((c) => h("option", { value: c.name }, c.name + (c.is_primary_key ? " (key)" : " (unique)"))));
      relTarget.disabled = false;
    } catch (err) {
      if (n !== asked) return;
      clear(relTarget, h("option", { value: "" }, "Its columns could not be read"));
      clear(relStatus, problemBox(err, names));
    }
  });
  panel.append(h("form", { id: "relationship-form", class: "card schema-form", onsubmit: async (e) => {
    e.preventDefault();
    const ref = { dataset_id: relDs.value };
    if (!relTarget.disabled && relTarget.value) ref.column = relTarget.value;
    const text = relCol.value + " → " + (names[ref.dataset_id] || ref.dataset_id) + "." + (ref.column || "its key");
    declare.disabled = true;
    clear(relStatus, h("p", { class: "muted" }, "Checking every value of " + relCol.value + "…"));
    try { await put([{ op: "add_relationship", column: relCol.value, references: ref }]); } catch (err) {
      clear(relStatus, problemBox(err, names));
      declare.disabled = false;
      return;
    }
    await after("Declared the relationship " + text + ".");
  } }, h("h3", {}, "Declare a relationship"),
  h("p", { class: "muted small" }, "A column of this dataset that names records of a dataset of the project by its key or a unique column. " +
    "Every value must be present there: the records that are not are listed, and nothing changes."),
  listError ? errorBox(listError) : null,
  h("div", { class: "row" }, field("Column of this dataset", relCol), field("Points at dataset", relDs), field("Its key or unique column", relTarget)),
  h("div", { class: "actions" }, declare)));
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
