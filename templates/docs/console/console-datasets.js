// Datasets: the project's list (status, rows, size, last change), upload by drag and drop or
// file picker with the bytes sent and then the ingest job's phases, re-import and delete.
import { get, post, del, upload, state } from "./console-api.js";
import { h, clear, toast, modal, confirmDialog, errorBox, bytes, num, when, field } from "./console-ui.js";

const base = () => "/api/v1/projects/" + state.projectId + "/datasets";

export async function render(main, parts) {
  if (parts[0]) {
    const view = await import("./console-dataset.js");
    return view.render(main, parts[0], parts[1] || "records");
  }
  const list = h("div", { id: "dataset-list" });
  const uploads = h("div", { id: "uploads", class: "uploads" });
  const picker = h("input", { type: "file", id: "file-input", accept: ".csv,.json,.ndjson,.jsonl,.parquet,text/csv,application/json", class: "sr-only", multiple: true, "aria-label": "Choose files to upload", tabindex: "-1" });
  picker.addEventListener("change", () => { for (const f of picker.files) startUpload(f, uploads, list); picker.value = ""; });
  const drop = h("div", { class: "drop", id: "drop", tabindex: "0", role: "button", "aria-label": "Upload a file: drop it here, or press Enter to choose one" },
    h("strong", {}, "Drop a CSV, JSON or Parquet file here"), h("span", { class: "muted" }, " or press Enter / click to choose one"));
  drop.addEventListener("click", () => picker.click());
  drop.addEventListener("keydown", (e) => { if (e.key === "Enter" || e.key === " ") { e.preventDefault(); picker.click(); } });
  drop.addEventListener("dragover", (e) => { e.preventDefault(); drop.classList.add("over"); });
  drop.addEventListener("dragleave", () => drop.classList.remove("over"));
  drop.addEventListener("drop", (e) => {
    e.preventDefault();
    drop.classList.remove("over");
    for (const f of e.dataTransfer.files) startUpload(f, uploads, list);
  });
  const connect = h("button", { type: "button", class: "ghost", id: "connect-db" }, "Connect a database");
  connect.addEventListener("click", () => connectDatabase(uploads, list));
  main.append(h("div", { class: "row heading" }, h("h1", {}, "Datasets"), connect), drop, picker, uploads, list);
  await drawList(list);
}

async function drawList(list) {
  const r = await get(base() + "?limit=100");
  const rows = (r.datasets || []).map((d) => h("tr", { dataset: { id: d.id } },
    h("td", {}, h("a", { href: "#/datasets/" + d.id }, d.name)),
    h("td", {}, h("span", { class: "badge " + d.status, title: d.error || "" }, d.status), d.error ? h("div", { class: "error small" }, d.error) : null),
    h("td", { class: "num" }, num(d.source && d.source.row_count)),
    h("td", { class: "num" }, bytes(d.source && d.source.size)),
    h("td", {}, h("time", { datetime: d.updated_at, title: d.updated_at }, when(d.updated_at))),
    h("td", { class: "row-actions" },
      h("button", { type: "button", class: "ghost small", onclick: () => reimport(d, list) }, "Re-import"),
      h("button", { type: "button", class: "ghost small danger-text", onclick: () => remove(d, list) }, "Delete"))));
  clear(list, h("table", { class: "list", id: "datasets" },
    h("caption", { class: "sr-only" }, "Datasets of the project"),
    h("thead", {}, h("tr", {}, ["Name", "Status", "Rows", "Size", "Last change", h("span", { class: "sr-only" }, "Actions")].map((c) => h("th", { scope: "col" }, c)))),
    h("tbody", {}, rows.length ? rows : h("tr", {}, h("td", { colspan: 6, class: "muted" }, "No datasets yet: drop a file above.")))));
}

function progressBar(label) {
  const bar = h("progress", { max: 100, value: 0, "aria-label": label });
  const text = h("span", { class: "muted small" });
  return { el: h("div", { class: "progress" }, bar, text), set(done, total, what) { bar.max = total || 1; bar.value = done; text.textContent = what; } };
}

// startUpload asks for the dataset's name and key column, sends the file with a progress bar
// of the bytes, creates the dataset and follows its ingest job to active or failed.
function startUpload(file, uploads, list) {
  const stem = file.name.replace(/\.[^.]+$/, "");
  const name = h("input", { type: "text", value: stem, required: true, maxlength: 255, autocomplete: "off", class: "upload-name" });
  const key = h("input", { type: "text", maxlength: 255, autocomplete: "off", placeholder: "inferred", class: "upload-key" });
  const go = h("button", { type: "submit" }, "Upload and create");
  const cancel = h("button", { type: "button", class: "ghost" }, "Cancel");
  const status = h("div", { class: "upload-status", "aria-live": "polite" });
  const card = h("form", { class: "card upload", dataset: { file: file.name } },
    h("h2", {}, file.name, " ", h("span", { class: "muted small" }, bytes(file.size))),
    h("div", { class: "row" }, field("Dataset name", name), field("Key column", key, "The column that identifies a record; blank: inferred (id, <name>_id) or generated.")),
    h("div", { class: "actions" }, cancel, go), status);
  cancel.addEventListener("click", () => card.remove());
  card.addEventListener("submit", async (e) => {
    e.preventDefault();
    go.disabled = true; cancel.disabled = true; name.disabled = true; key.disabled = true;
    const bar = progressBar("Bytes sent");
    clear(status, bar.el);
    try {
      const up = await upload(base() + "/upload", file, (sent, total) =>
        bar.set(sent, total, "Uploading: " + bytes(sent) + " of " + bytes(total)));
      bar.set(1, 1, "Uploaded " + bytes(up.size));
      const body = { name: name.value.trim() || stem, source: { file_id: up.file_id } };
      if (key.value.trim()) body.primary_key = key.value.trim();
      const d = await post(base(), body);
      await follow(d, status);
      drawList(list);
    } catch (err) {
      status.append(errorBox(err));
      go.disabled = false; cancel.disabled = false; name.disabled = false; key.disabled = false;
    }
  });
  uploads.prepend(card);
  name.focus();
}

// follow shows a dataset's ingest job (phase, rows done) until the dataset is active or failed.
async function follow(d, status) {
  const phase = progressBar("Ingest progress");
  const line = h("p", { class: "phase", dataset: { status: "processing" } }, "Queued");
  status.append(line, phase.el);
  for (;;) {
    const [ds, job] = await Promise.all([
      get(base() + "/" + d.id),
      d.job_id ? get("/api/v1/jobs/" + d.job_id).catch(() => null) : null,
    ]);
    if (job && job.progress) {
      const p = job.progress;
      line.textContent = "Phase: " + (p.phase || job.status) + (p.message ? " — " + p.message : "");
      if (p.total) phase.set(p.done || 0, p.total, num(p.done) + " of " + num(p.total));
    } else if (job) {
      line.textContent = "Job " + job.status;
    }
    // Done when the dataset left processing and its job ended (an import keeps the dataset
    // active, with its old rows, while it runs).
    const jobDone = !job || ["succeeded", "failed", "cancelled"].includes(job.status);
    if (ds.status !== "processing" && jobDone) {
      const failed = ds.status === "failed" || (job && job.status !== "succeeded");
      line.dataset.status = failed ? "failed" : ds.status;
      if (!failed) {
        line.textContent = "Active: " + num(ds.source && ds.source.row_count) + " rows.";
        phase.set(1, 1, "");
        status.append(h("a", { href: "#/datasets/" + ds.id, class: "button" }, "Open " + ds.name));
        toast(ds.name + " is ready");
      } else {
        line.textContent = "Failed: " + (ds.error || (job && job.error) || "no reason given");
        line.classList.add("error");
      }
      return ds;
    }
    await new Promise((r) => setTimeout(r, 300));
  }
}

async function reimport(d, list) {
  const picker = h("input", { type: "file", required: true, accept: ".csv,.json,.ndjson,.jsonl,.parquet" });
  const mode = h("select", {}, h("option", { value: "append" }, "append: add the rows"),
    h("option", { value: "upsert" }, "upsert: update by key, insert the rest"),
    h("option", { value: "replace" }, "replace: the file becomes the data"));
  const addCols = h("input", { type: "checkbox" });
  const status = h("div", { "aria-live": "polite" });
  const go = h("button", { type: "submit" }, "Import");
  await modal("Re-import into " + d.name, (close) => h("form", {
    onsubmit: async (e) => {
      e.preventDefault();
      const file = picker.files[0];
      if (!file) return;
      go.disabled = true;
      const bar = progressBar("Bytes sent");
      clear(status, bar.el);
      try {
        const up = await upload(base() + "/upload", file, (s, t) => bar.set(s, t, "Uploading: " + bytes(s) + " of " + bytes(t)));
        const r = await post(base() + "/" + d.id + "/import", { file_id: up.file_id, mode: mode.value, add_columns: addCols.checked });
        const ds = await follow({ id: d.id, job_id: r.job_id || (r.dataset && r.dataset.job_id) }, status);
        if (ds.error) status.append(errorBox(ds.error));
        drawList(list);
      } catch (err) { status.append(errorBox(err)); go.disabled = false; }
    },
  }, field("File", picker), field("Mode", mode), h("label", { class: "check" }, addCols, " Add the file's new columns"), status,
  h("div", { class: "actions" }, h("button", { type: "button", class: "ghost", onclick: () => close() }, "Close"), go)));
  drawList(list);
}

async function remove(d, list) {
  if (!(await confirmDialog("Delete " + d.name + "?", "The dataset, its records and its API are deleted. This cannot be undone."))) return;
  try {
    await del(base() + "/" + d.id);
    toast(d.name + " deleted");
  } catch (err) { toast(err.message, "error"); }
  drawList(list);
}

// connectDatabase creates a dataset from a PostgreSQL or MySQL database, after a connection
// test the person can read (tables found, the server's version).
function connectDatabase(uploads, list) {
  const v = {
    name: h("input", { type: "text", required: true, maxlength: 255, autocomplete: "off" }),
    type: h("select", {}, h("option", { value: "postgresql" }, "PostgreSQL"), h("option", { value: "mysql" }, "MySQL / MariaDB")),
    host: h("input", { type: "text", required: true, autocomplete: "off" }),
    port: h("input", { type: "number", min: 1, max: 65535, placeholder: "default" }),
    database: h("input", { type: "text", required: true, autocomplete: "off" }),
    username: h("input", { type: "text", required: true, autocomplete: "off" }),
    password: h("input", { type: "password", autocomplete: "new-password" }),
    ssl: h("select", {}, ["prefer", "require", "verify-full", "verify-ca", "allow", "disable"].map((m) => h("option", { value: m }, m))),
  };
  const out = h("div", { "aria-live": "polite", id: "connection-test" });
  const test = h("button", { type: "button", class: "ghost" }, "Test connection");
  const create = h("button", { type: "submit", disabled: true }, "Create dataset");
  const connection = () => {
    const c = { type: v.type.value, host: v.host.value.trim(), database: v.database.value.trim(), username: v.username.value.trim(), password: v.password.value };
    if (v.port.value) c.port = Number(v.port.value);
    c.ssl_mode = v.ssl.value;
    return c;
  };
  for (const k of ["type", "host", "port", "database", "username", "password", "ssl"]) v[k].addEventListener("input", () => { create.disabled = true; });
  test.addEventListener("click", async () => {
    clear(out, h("p", { class: "muted" }, "Testing…"));
    try {
      const r = await post(base() + "/database/test", { connection: connection() });
      create.disabled = !r.success;
      clear(out, h("p", { class: r.success ? "" : "error" }, r.message),
        r.details && r.details.accessible_tables ? h("p", { class: "muted small" }, "Tables: " + r.details.accessible_tables.slice(0, 20).join(", ")) : null);
    } catch (err) { clear(out, errorBox(err)); }
  });
  const card = h("form", { class: "card", id: "connect-form", onsubmit: async (e) => {
    e.preventDefault();
    create.disabled = true;
    try {
      const d = await post(base() + "/database", { name: v.name.value.trim(), connection: connection() });
      await follow(d, out);
      drawList(list);
    } catch (err) { out.append(errorBox(err)); create.disabled = false; }
  } }, h("h2", {}, "Connect a database"),
  h("div", { class: "row" }, field("Dataset name", v.name), field("Database", v.type), field("Host", v.host), field("Port", v.port),
    field("Database name", v.database), field("User", v.username), field("Password", v.password), field("TLS", v.ssl)),
  h("div", { class: "actions" }, h("button", { type: "button", class: "ghost", onclick: () => card.remove() }, "Cancel"), test, create), out);
  uploads.prepend(card);
  v.name.focus();
}
