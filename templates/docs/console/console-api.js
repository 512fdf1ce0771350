// The console's one way to the API: fetch with the session cookie and, on requests that
// change something, the session's CSRF token. Errors come back as ApiError with the API's
// code, message and details (both error shapes: nested {error: {...}} and flat {code, ...}).

let csrf = "";

export function setCSRF(token) { csrf = token || ""; }

export class ApiError extends Error {
  constructor(status, body) {
    const e = body && typeof body.error === "object" && body.error ? body.error : body || {};
    let message = e.message || "HTTP " + status;
    if (Array.isArray(e.details) && e.details.length && e.details[0] && e.details[0].message) {
      message += " (" + e.details.map((d) => d.message).join("; ") + ")";
    }
    super(message);
    this.status = status;
    this.code = e.code || e.error || "";
    this.details = e.details || {};
    this.body = body;
  }
}

// onSignedOut is called when the session ended (401): the console sends the browser to sign in.
export let onSignedOut = () => {};
export function whenSignedOut(f) { onSignedOut = f; }

function headers(method, extra, json) {
  const h = { "Accept": "application/json", ...extra };
  if (json) h["Content-Type"] = "application/json";
  if (method !== "GET" && method !== "HEAD" && csrf) h["X-CSRF-Token"] = csrf;
  return h;
}

// request answers {status, data, headers}; any status >= 400 throws ApiError.
export async function request(method, path, body, extra = {}) {
  const res = await fetch(path, {
    method, credentials: "same-origin", headers: headers(method, extra, body !== undefined),
    body: body !== undefined ? JSON.stringify(body) : undefined,
  });
  const text = await res.text();
  let data = null;
  try { data = text ? JSON.parse(text) : null; } catch { data = text; }
  if (res.status === 401 && !path.startsWith("/api/v1/auth/session")) onSignedOut();
  if (!res.ok) throw new ApiError(res.status, data);
  return { status: res.status, data, headers: res.headers };
}

export const get = (p, extra) => request("GET", p, undefined, extra).then((r) => r.data);
export const post = (p, b, extra) => request("POST", p, b === undefined ? {} : b, extra).then((r) => r.data);
export const patch = (p, b, extra) => request("PATCH", p, b, extra).then((r) => r.data);
export const del = (p, extra) => request("DELETE", p, undefined, extra).then((r) => r.data);

// upload sends a file as multipart/form-data with XMLHttpRequest, whose upload events give
// the bytes sent (fetch has none); onProgress(sent, total).
export function upload(path, file, onProgress) {
  return new Promise((resolve, reject) => {
    const x = new XMLHttpRequest();
    x.open("POST", path);
    x.withCredentials = true;
    x.setRequestHeader("Accept", "application/json");
    x.setRequestHeader("X-CSRF-Token", csrf);
    x.upload.onprogress = (e) => onProgress(e.loaded, e.lengthComputable ? e.total : file.size);
    x.onload = () => {
      let data = null;
      try { data = JSON.parse(x.responseText); } catch { data = null; }
      if (x.status >= 200 && x.status < 300) resolve(data); else reject(new ApiError(x.status, data));
    };
    x.onerror = () => reject(new ApiError(0, { message: "the upload was interrupted" }));
    const form = new FormData();
    form.append("file", file, file.name);
    x.send(form);
  });
}

// stream POSTs and reads a Server-Sent Events answer, calling onEvent with each data object.
export async function stream(path, body, onEvent, signal) {
  const res = await fetch(path, {
    method: "POST", credentials: "same-origin", signal,
    headers: headers("POST", { "Accept": "text/event-stream" }, body !== undefined),
    body: body !== undefined ? JSON.stringify(body) : undefined,
  });
  if (!res.ok) {
    let data = null;
    try { data = await res.json(); } catch { data = null; }
    throw new ApiError(res.status, data);
  }
  const reader = res.body.getReader();
  const dec = new TextDecoder();
  let buf = "";
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    buf += dec.decode(value, { stream: true });
    let i;
    while ((i = buf.indexOf("\n\n")) >= 0) {
      const chunk = buf.slice(0, i);
      buf = buf.slice(i + 2);
      const data = chunk.split("\n").filter((l) => l.startsWith("data:")).map((l) => l.slice(5).trim()).join("\n");
      if (data) {
        try { onEvent(JSON.parse(data)); } catch { /* a heartbeat comment or partial line */ }
      }
    }
  }
}

// pathOf is the path of an absolute link the API wrote on its base URL, for a request to this
// origin (the console may be reached at another address than DP_BASE_URL).
export function pathOf(link) {
  try { const u = new URL(link, location.origin); return u.pathname + u.search; } catch { return link; }
}

// state is where the console is: the session, and the organization and project chosen.
export const state = { session: null, orgId: "", projectId: "", orgs: [], projects: [], role: "" };
