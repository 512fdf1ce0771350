// The records grid: keyset pages of the record API (next_cursor; the total is the API's
// estimate, so a large table never waits on an exact count), virtual scrolling (only the rows
// in view exist in the DOM, recycled from a pool), sort by clicking a column, filters with the
// API's operators, full-text search, inline edit with optimistic locking (the record's
// version: a conflict is shown and nothing is overwritten), new and deleted rows.
import { get, request, pathOf, ApiError } from "./console-api.js";
import { h, clear, toast, modal, confirmDialog, errorBox, num, cell, field } from "./console-ui.js";

export const ROW_H = 32;
const PAGE = 500;
const OVERSCAN = 8;
export const OPERATORS = ["eq", "ne", "gt", "gte", "lt", "lte", "in", "nin", "like", "ilike", "contains", "startswith", "endswith", "is", "between"];

const numeric = /^(smallint|integer|bigint|numeric|real|double precision|decimal)/;

// parseValue turns what was typed into the JSON value a column of type takes.
export function parseValue(text, type) {
  if (text === "") return null;
  if (type.endsWith("[]") || type === "jsonb" || type === "json") return JSON.parse(text);
  if (numeric.test(type)) {
    const n = Number(text);
    if (Number.isNaN(n)) throw new Error("not a number: " + text);
    return n;
  }
  if (type === "boolean") {
    if (/^(true|t|yes|1)$/i.test(text)) return true;
    if (/^(false|f|no|0)$/i.test(text)) return false;
    throw new Error("not true or false: " + text);
  }
  return text;
}

export function createGrid(container, { datasetId, columns, keyName, initialFilters = [], links = {} }) {
  const g = {
    rows: [], cursor: null, done: false, loading: null, total: null, estimated: false,
    // By key unless a column is chosen: the key's index answers each keyset page at once,
    // where the API's own default (newest first) sorts the whole table on a large one.
    sort: { col: keyName, desc: false }, filters: initialFilters.slice(), search: "", active: { r: 0, c: 0 }, editing: null, generation: 0,
  };
  const cols = columns;
  const width = 170;
  const totalWidth = cols.length * width;

  // Toolbar: search, filters, new row, delete row, counts.
  const search = h("input", { type: "search", placeholder: "Search text fields", "aria-label": "Full-text search", id: "grid-search" });
  let searchTimer;
  search.addEventListener("input", () => { clearTimeout(searchTimer); searchTimer = setTimeout(() => { g.search = search.value.trim(); reload(); }, 300); });
  const fCol = h("select", { "aria-label": "Filter column", id: "filter-column" }, cols.map((c) => h("option", { value: c.name }, c.name)));
  const fOp = h("select", { "aria-label": "Filter operator", id: "filter-op" }, OPERATORS.map((o) => h("option", { value: o }, o)));
  const fVal = h("input", { type: "text", "aria-label": "Filter value", id: "filter-value", placeholder: "value (a,b for in / between)" });
  const fAdd = h("button", { type: "submit", class: "small" }, "Add filter");
  const chips = h("div", { class: "chips", id: "filter-chips" });
  const filterForm = h("form", { class: "filters", onsubmit: (e) => { e.preventDefault(); g.filters.push({ col: fCol.value, op: fOp.value, value: fVal.value }); fVal.value = ""; reload(); } },
    fCol, fOp, fVal, fAdd);
  const count = h("span", { class: "muted small", id: "grid-count", "aria-live": "polite" });
  const newRow = h("button", { type: "button", class: "small", id: "new-row" }, "New row");
  const delRow = h("button", { type: "button", class: "small ghost danger-text", id: "delete-row" }, "Delete row");
  const banner = h("div", { id: "grid-banner", "aria-live": "assertive" });
  const related = h("button", { type: "button", class: "small ghost", id: "open-related", disabled: true, title: "The records the active cell's value points at" }, "Open related");
  related.addEventListener("click", () => openRelated());

  // The grid: a sticky header and a tall body whose height is the rows loaded so far.
  const headRow = h("div", { role: "row", class: "g-row g-head", "aria-rowindex": 1, style: undefined });
  const body = h("div", { class: "g-body", role: "rowgroup" });
  const gridEl = h("div", {
    class: "grid", role: "grid", tabindex: "0", id: "records-grid", "aria-label": "Records", "aria-colcount": cols.length,
    "aria-multiselectable": "false",
  }, h("div", { role: "rowgroup", class: "g-headgroup" }, headRow), body);
  gridEl.style.setProperty("--grid-width", totalWidth + "px");
  gridEl.style.setProperty("--row-h", ROW_H + "px");

  container.append(h("div", { class: "grid-toolbar" }, search, filterForm, newRow, delRow, related, count), chips, banner, gridEl);

  function drawHead() {
    clear(headRow, cols.map((c, i) => {
      const dir = g.sort && g.sort.col === c.name ? (g.sort.desc ? "descending" : "ascending") : "none";
      return h("div", { role: "columnheader", class: "g-cell", "aria-colindex": i + 1, "aria-sort": dir },
        h("button", { type: "button", class: "sort", dataset: { col: c.name }, title: c.type + (c.name === keyName ? " · key" : ""),
          onclick: () => toggleSort(c.name) }, c.name, dir === "ascending" ? " ▲" : dir === "descending" ? " ▼" : ""));
    }));
  }

  function drawChips() {
    clear(chips, g.filters.map((f, i) => h("span", { class: "chip" }, f.col + " " + f.op + " " + f.value,
      h("button", { type: "button", class: "ghost small", "aria-label": "Remove filter " + f.col + " " + f.op, onclick: () => { g.filters.splice(i, 1); reload(); } }, "×"))));
  }

  // toggleSort: a column sorts ascending, then descending, then back to the key's order.
  function toggleSort(col) {
    if (!g.sort || g.sort.col !== col) g.sort = { col, desc: false };
    else if (!g.sort.desc) g.sort.desc = true;
    else g.sort = { col: keyName, desc: false };
    reload();
  }

  function query() {
    const q = new URLSearchParams({ limit: String(PAGE) });
    if (g.sort) q.set("sort", (g.sort.desc ? "-" : "") + g.sort.col);
    if (g.search) q.set("search", g.search);
    for (const f of g.filters) q.append("filter[" + f.col + "][" + f.op + "]", f.value);
    if (g.cursor) q.set("cursor", g.cursor);
    return "/api/v1/datasets/" + datasetId + "/data?" + q.toString();
  }

  async function loadMore() {
    if (g.done || g.loading) return g.loading;
    const gen = g.generation;
    g.loading = (async () => {
      try {
        const r = await get(query());
        if (gen !== g.generation) return;
        g.rows.push(...r.data);
        const p = r.pagination || {};
        g.cursor = p.next_cursor || null;
        g.done = !g.cursor || !r.data.length;
        if (g.total === null) { g.total = p.total; g.estimated = Boolean(p.total_estimated); }
        g.ms = r.meta && r.meta.execution_time_ms;
      } catch (err) {
        if (gen === g.generation) { g.done = true; clear(banner, errorBox(err)); }
      } finally {
        if (gen === g.generation) { g.loading = null; layout(); }
      }
    })();
    return g.loading;
  }

  function reload() {
    g.generation++;
    g.rows = []; g.cursor = null; g.done = false; g.loading = null; g.total = null; g.active = { r: 0, c: g.active.c };
    clear(banner);
    drawHead(); drawChips();
    gridEl.scrollTop = 0;
    container.dataset.loaded = "false";
    return loadMore().then(() => {
      container.dataset.loaded = "true";
      if (!performance.getEntriesByName("grid-ready").length) performance.mark("grid-ready");
    });
  }

  // Rendering: a pool of row elements placed at their offsets; only the rows in view.
  const pool = [];
  let frame = 0;
  function layout() {
    body.style.height = (g.rows.length * ROW_H) + "px";
    const total = g.total === null ? "…" : (g.estimated ? "≈ " : "") + num(g.total);
    count.textContent = total + " rows · " + num(g.rows.length) + " loaded" + (g.done ? "" : " (more on scroll)");
    gridEl.setAttribute("aria-rowcount", String(g.done ? g.rows.length + 1 : -1));
    draw();
  }
  function schedule() { if (!frame) frame = requestAnimationFrame(() => { frame = 0; draw(); }); }

  function draw() {
    const top = gridEl.scrollTop;
    const height = gridEl.clientHeight || 600;
    const first = Math.max(0, Math.floor(top / ROW_H) - OVERSCAN);
    const last = Math.min(g.rows.length, Math.ceil((top + height) / ROW_H) + OVERSCAN);
    const need = last - first;
    while (pool.length < need) {
      const row = h("div", { role: "row", class: "g-row" }, cols.map((c, i) => h("div", { role: "gridcell", class: "g-cell", "aria-colindex": i + 1 })));
      row.addEventListener("dblclick", (e) => { const t = e.target.closest(".g-cell"); if (t) startEdit(Number(row.dataset.r), Number(t.dataset.c)); });
      row.addEventListener("click", (e) => { const t = e.target.closest(".g-cell"); if (t) setActive(Number(row.dataset.r), Number(t.dataset.c)); });
      pool.push(row);
      body.append(row);
    }
    for (let k = 0; k < pool.length; k++) {
      const row = pool[k];
      const r = first + k;
      if (k >= need) {
        if (!row.hidden) { row.hidden = true; for (const el of row.children) el.removeAttribute("id"); }
        continue;
      }
      row.hidden = false;
      const rec = g.rows[r];
      row.dataset.r = String(r);
      row.setAttribute("aria-rowindex", String(r + 2));
      row.style.transform = "translateY(" + (r * ROW_H) + "px)";
      row.classList.toggle("deleted", Boolean(rec._deleted));
      const cells = row.children;
      for (let c = 0; c < cols.length; c++) {
        const el = cells[c];
        el.dataset.c = String(c);
        el.id = "cell-" + r + "-" + c;
        const active = r === g.active.r && c === g.active.c;
        el.classList.toggle("active", active);
        el.setAttribute("aria-selected", active ? "true" : "false");
        el.classList.toggle("conflict", rec._conflict === cols[c].name);
        el.classList.toggle("ref", Boolean(links[cols[c].name]));
        if (!(g.editing && g.editing.r === r && g.editing.c === c)) el.textContent = cell(rec[cols[c].name]);
      }
    }
    if (g.rows.length) gridEl.setAttribute("aria-activedescendant", "cell-" + g.active.r + "-" + g.active.c);
    const link = cols[g.active.c] && links[cols[g.active.c].name];
    related.disabled = !link || !g.rows[g.active.r];
    related.textContent = link ? "Open related " + link.name : "Open related";
    // Near the end of what is loaded: the next keyset page.
    if (!g.done && !g.loading && last > g.rows.length - PAGE / 2) loadMore();
  }
  gridEl.addEventListener("scroll", schedule, { passive: true });
  new ResizeObserver(schedule).observe(gridEl);

  function setActive(r, c) {
    g.active = { r: Math.max(0, Math.min(g.rows.length - 1, r)), c: Math.max(0, Math.min(cols.length - 1, c)) };
    const y = g.active.r * ROW_H;
    const head = ROW_H;
    if (y < gridEl.scrollTop) gridEl.scrollTop = y;
    else if (y + ROW_H > gridEl.scrollTop + gridEl.clientHeight - head) gridEl.scrollTop = y + ROW_H - gridEl.clientHeight + head;
    const x = g.active.c * width;
    if (x < gridEl.scrollLeft) gridEl.scrollLeft = x;
    else if (x + width > gridEl.scrollLeft + gridEl.clientWidth) gridEl.scrollLeft = x + width - gridEl.clientWidth;
    draw();
  }

  gridEl.addEventListener("keydown", (e) => {
    if (g.editing) return;
    const page = Math.max(1, Math.floor(gridEl.clientHeight / ROW_H) - 2);
    const moves = { ArrowDown: [1, 0], ArrowUp: [-1, 0], ArrowRight: [0, 1], ArrowLeft: [0, -1], PageDown: [page, 0], PageUp: [-page, 0] };
    if (moves[e.key]) { e.preventDefault(); setActive(g.active.r + moves[e.key][0], g.active.c + moves[e.key][1]); }
    else if (e.key === "Home") { e.preventDefault(); setActive(e.ctrlKey ? 0 : g.active.r, 0); }
    else if (e.key === "End") { e.preventDefault(); setActive(e.ctrlKey ? g.rows.length - 1 : g.active.r, cols.length - 1); }
    else if (e.key === "Enter" || e.key === "F2") { e.preventDefault(); startEdit(g.active.r, g.active.c); }
    else if (e.key === "o" && !related.disabled) { e.preventDefault(); openRelated(); }
  });

  // openRelated opens the dataset a relationship of the active column points at, filtered
  // to the active cell's value.
  function openRelated() {
    const col = cols[g.active.c];
    const link = col && links[col.name];
    const rec = g.rows[g.active.r];
    if (!link || !rec) return;
    location.hash = "#/datasets/" + link.dataset + "/records?" + new URLSearchParams({ [link.column]: cell(rec[col.name]) });
  }

  function cellEl(r, c) { return document.getElementById("cell-" + r + "-" + c); }

  // startEdit puts an input over a cell; Enter saves, Escape cancels.
  function startEdit(r, c) {
    const col = cols[c];
    const rec = g.rows[r];
    if (!rec || rec._deleted) return;
    if (col.system || col.name === keyName) { toast(col.name + " is the record's key: it is not edited here", "info"); return; }
    setActive(r, c);
    const el = cellEl(r, c);
    if (!el) return;
    g.editing = { r, c };
    // A connected table's records have no version: their ETag (a digest of the values) is
    // what the save sends as If-Match.
    if (rec.version === undefined && !rec._etag) {
      request("GET", pathOf(rec._links.self)).then((res) => { rec._etag = rec._etag || res.headers.get("ETag"); }, () => {});
    }
    const input = h("input", { type: "text", class: "cell-input", value: cell(rec[col.name]), "aria-label": "Edit " + col.name });
    clear(el, input);
    input.focus();
    input.select();
    let finished = false;
    const finish = async (save) => {
      if (finished) return;
      finished = true;
      g.editing = null;
      if (save && input.value !== cell(rec[col.name])) await saveCell(rec, col, input.value);
      draw();
      gridEl.focus();
    };
    input.addEventListener("keydown", (e) => {
      if (e.key === "Enter") { e.preventDefault(); finish(true); }
      else if (e.key === "Escape") { e.preventDefault(); finish(false); }
      e.stopPropagation();
    });
    input.addEventListener("blur", () => finish(true));
  }

  async function saveCell(rec, col, text) {
    let value;
    try { value = parseValue(text, col.type); } catch (err) { toast(col.name + ": " + err.message, "error"); return; }
    const body = { [col.name]: value };
    const extra = {};
    if (rec.version !== undefined) body.version = rec.version;
    else if (rec._etag) extra["If-Match"] = rec._etag;
    const old = rec[col.name];
    rec[col.name] = value; // optimistic: shown at once, put back if refused
    delete rec._conflict;
    draw();
    try {
      const r = await request("PATCH", pathOf(rec._links.self), body, extra);
      Object.assign(rec, r.data);
      if (r.headers.get("ETag")) rec._etag = r.headers.get("ETag");
      clear(banner);
      container.dispatchEvent(new CustomEvent("saved", { detail: { col: col.name } }));
    } catch (err) {
      rec[col.name] = old;
      if (err instanceof ApiError && err.code === "OPTIMISTIC_LOCK_ERROR") {
        rec._conflict = col.name;
        showConflict(rec, col, value);
      } else {
        clear(banner, errorBox(err));
      }
    }
  }

  function showConflict(rec, col, mine) {
    const reload = h("button", { type: "button", class: "small", onclick: async () => {
      try {
        const r = await request("GET", pathOf(rec._links.self));
        Object.assign(rec, r.data);
        rec._etag = r.headers.get("ETag") || rec._etag;
        delete rec._conflict;
        clear(banner);
        draw();
      } catch (err) { clear(banner, errorBox(err)); }
    } }, "Load the current row");
    clear(banner, h("div", { class: "conflict-box", role: "alert", id: "conflict" },
      h("strong", {}, "Not saved: "), "this record changed since it was loaded (someone else edited it). Your value for ",
      h("code", {}, col.name), " (", h("code", {}, cell(mine)), ") was not written and nothing was overwritten. ", reload));
  }

  newRow.addEventListener("click", async () => {
    const inputs = cols.filter((c) => !c.system).map((c) => ({ c, input: h("input", { type: "text", dataset: { col: c.name }, autocomplete: "off", placeholder: c.type }) }));
    const problem = h("div");
    const made = await modal("New record", (close) => h("form", { class: "new-record", onsubmit: async (e) => {
      e.preventDefault();
      try {
        const rec = {};
        for (const { c, input } of inputs) if (input.value !== "") rec[c.name] = parseValue(input.value, c.type);
        const r = await request("POST", "/api/v1/datasets/" + datasetId + "/data", rec);
        close(r.data);
      } catch (err) { clear(problem, errorBox(err)); }
    } }, h("div", { class: "form-grid" }, inputs.map(({ c, input }) => field(c.name, input))), problem,
    h("div", { class: "actions" }, h("button", { type: "button", class: "ghost", onclick: () => close() }, "Cancel"), h("button", { type: "submit" }, "Create"))));
    if (made) {
      g.rows.unshift(made);
      g.active = { r: 0, c: 0 };
      gridEl.scrollTop = 0;
      layout();
      toast("Record created");
    }
  });

  delRow.addEventListener("click", async () => {
    const rec = g.rows[g.active.r];
    if (!rec || rec._deleted) return;
    const label = keyName + " " + cell(rec[keyName]);
    if (!(await confirmDialog("Delete record " + label + "?", "The record is deleted from the dataset."))) return;
    try {
      await request("DELETE", pathOf(rec._links.self));
      g.rows.splice(g.active.r, 1);
      if (g.total !== null) g.total--;
      layout();
      toast("Record " + label + " deleted");
    } catch (err) { clear(banner, errorBox(err)); }
  });

  drawHead();
  drawChips();
  const ready = reload();
  return { state: g, reload, ready, element: gridEl, setActive };
}
