// Small DOM helpers of the console: elements, dialogs, toasts and formatting. Text is always
// set as text (never as HTML), so nothing from the data runs as markup.

export function h(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
    else if (k === "class") e.className = v;
    else if (k === "dataset") Object.assign(e.dataset, v);
    else if (k === "value") e.value = v;
    else if (k === "checked" || k === "disabled" || k === "hidden" || k === "selected") e[k] = Boolean(v);
    else e.setAttribute(k, v === true ? "" : String(v));
  }
  append(e, children);
  return e;
}

// add appends children to e, leaving out null, undefined and false (Element.append would
// write them as text).
export function add(e, ...children) { append(e, children); return e; }

function append(e, children) {
  for (const c of children) {
    if (c === undefined || c === null || c === false) continue;
    if (Array.isArray(c)) append(e, c);
    else e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
}

export function clear(e, ...children) {
  e.replaceChildren();
  append(e, children);
  return e;
}

export function toast(message, kind = "info") {
  const box = document.getElementById("toasts");
  const t = h("div", { class: "toast " + kind, role: kind === "error" ? "alert" : undefined }, message);
  box.append(t);
  setTimeout(() => t.remove(), kind === "error" ? 8000 : 4000);
}

// modal opens a dialog with content (a function that gets the close function); it answers a
// promise of what close was called with (undefined when dismissed with Escape).
export function modal(title, content) {
  return new Promise((resolve) => {
    const d = h("dialog", { class: "modal", "aria-labelledby": "modal-title" });
    const close = (v) => { d.close(); d.remove(); resolve(v); };
    d.addEventListener("cancel", (e) => { e.preventDefault(); close(undefined); });
    d.append(h("h2", { id: "modal-title" }, title), content(close));
    document.body.append(d);
    d.showModal();
  });
}

// confirmDialog asks to confirm an action that cannot be undone.
export function confirmDialog(title, text, action = "Delete") {
  return modal(title, (close) => h("div", {},
    h("p", {}, text),
    h("div", { class: "actions" },
      h("button", { type: "button", class: "ghost", onclick: () => close(false) }, "Cancel"),
      h("button", { type: "button", class: "danger", "data-confirm": "", onclick: () => close(true) }, action))));
}

export function errorBox(err) {
  return h("p", { class: "error", role: "alert" }, err && err.message ? err.message : String(err));
}

export function bytes(n) {
  if (n === null || n === undefined) return "—";
  const u = ["B", "KB", "MB", "GB", "TB"];
  let i = 0;
  while (n >= 1024 && i < u.length - 1) { n /= 1024; i++; }
  return (i ? n.toFixed(1) : n) + " " + u[i];
}

export function num(n) {
  return n === null || n === undefined ? "—" : Number(n).toLocaleString("en");
}

export function when(t) {
  if (!t) return "—";
  const d = new Date(t);
  const s = (Date.now() - d.getTime()) / 1000;
  if (s < 60) return "just now";
  if (s < 3600) return Math.floor(s / 60) + " min ago";
  if (s < 86400) return Math.floor(s / 3600) + " h ago";
  return d.toISOString().slice(0, 10);
}

// cell is how a value shows in a grid: JSON values and arrays as compact JSON.
export function cell(v) {
  if (v === null || v === undefined) return "";
  if (typeof v === "object") return JSON.stringify(v);
  return String(v);
}

export function copyButton(text, label = "Copy") {
  const b = h("button", { type: "button", class: "ghost small" }, label);
  b.addEventListener("click", async () => {
    try { await navigator.clipboard.writeText(text); b.textContent = "Copied"; } catch { b.textContent = "Select and copy"; }
    setTimeout(() => { b.textContent = label; }, 1500);
  });
  return b;
}

export function field(label, input, hint) {
  const id = input.id || "f-" + Math.random().toString(36).slice(2, 9);
  input.id = id;
  return h("div", { class: "field" }, h("label", { for: id }, label), input, hint ? h("small", { class: "muted" }, hint) : null);
}

export function table(columns, rows, opts = {}) {
  return h("div", { class: "table-wrap" }, h("table", { class: "list" + (opts.class ? " " + opts.class : "") },
    opts.caption ? h("caption", { class: "sr-only" }, opts.caption) : null,
    h("thead", {}, h("tr", {}, columns.map((c) => h("th", { scope: "col" }, c)))),
    h("tbody", {}, rows.length ? rows : h("tr", {}, h("td", { colspan: columns.length, class: "muted" }, opts.empty || "Nothing yet.")))));
}
