// The web console's shell: reads the browser session, fills the organization and project
// switchers, and routes the location's hash (#/datasets, #/datasets/<id>, #/queries,
// #/dashboards, #/org) to the section that draws the main area.
import { get, post, del, setCSRF, whenSignedOut, state } from "./console-api.js";
import { h, clear, modal, field, toast, errorBox } from "./console-ui.js";
import * as datasets from "./console-datasets.js";

const main = document.getElementById("main");
const orgSelect = document.getElementById("org");
const projectSelect = document.getElementById("project");

function signIn() {
  location.assign("/sign-in?next=" + encodeURIComponent("/" + location.hash));
}
whenSignedOut(signIn);

async function loadOrgs() {
  const r = await get("/api/v1/organizations?limit=100");
  state.orgs = r.organizations || [];
  const saved = localStorage.getItem("dp.org");
  const fromSession = state.session.user.organization_id;
  state.orgId = [saved, fromSession].find((id) => id && state.orgs.some((o) => o.id === id)) || (state.orgs[0] && state.orgs[0].id) || "";
  clear(orgSelect, state.orgs.map((o) => h("option", { value: o.id, selected: o.id === state.orgId }, o.name)));
  const org = state.orgs.find((o) => o.id === state.orgId);
  state.role = (org && (org.role || org.my_role)) || state.session.user.role || "";
}

async function loadProjects(prefer) {
  state.projects = [];
  if (state.orgId) {
    const r = await get("/api/v1/organizations/" + state.orgId + "/projects?limit=100");
    state.projects = r.projects || [];
  }
  const saved = prefer || localStorage.getItem("dp.project." + state.orgId);
  state.projectId = (state.projects.find((p) => p.id === saved) || state.projects[0] || {}).id || "";
  clear(projectSelect, state.projects.length ? state.projects.map((p) => h("option", { value: p.id, selected: p.id === state.projectId }, p.name))
    : h("option", { value: "" }, "No project yet"));
}

orgSelect.addEventListener("change", async () => {
  state.orgId = orgSelect.value;
  localStorage.setItem("dp.org", state.orgId);
  await loadProjects();
  route();
});

projectSelect.addEventListener("change", () => {
  state.projectId = projectSelect.value;
  localStorage.setItem("dp.project." + state.orgId, state.projectId);
  if (location.hash.startsWith("#/datasets/")) location.hash = "#/datasets"; else route();
});

document.getElementById("new-project").addEventListener("click", () => newProject());

export async function newProject() {
  const name = h("input", { type: "text", required: true, maxlength: 255, autocomplete: "off" });
  const description = h("input", { type: "text", maxlength: 2000, autocomplete: "off" });
  const problem = h("div");
  const created = await modal("New project", (close) => h("form", {
    onsubmit: async (e) => {
      e.preventDefault();
      try {
        const p = await post("/api/v1/organizations/" + state.orgId + "/projects",
          { name: name.value.trim(), ...(description.value.trim() ? { description: description.value.trim() } : {}) });
        close(p);
      } catch (err) { clear(problem, errorBox(err)); }
    },
  }, field("Name", name), field("Description", description), problem,
  h("div", { class: "actions" },
    h("button", { type: "button", class: "ghost", onclick: () => close(undefined) }, "Cancel"),
    h("button", { type: "submit" }, "Create project"))));
  if (created) {
    localStorage.setItem("dp.project." + state.orgId, created.id);
    await loadProjects(created.id);
    toast("Project " + created.name + " created");
    location.hash = "#/datasets";
    route();
  }
}

document.getElementById("sign-out").addEventListener("click", async () => {
  try { await del("/api/v1/auth/session"); } catch { /* signed out already */ }
  location.assign("/sign-in?next=%2F");
});

// sections are loaded when first opened: the first page needs only the datasets list.
const sections = {
  datasets: async () => datasets,
  queries: () => import("./console-queries.js"),
  dashboards: () => import("./console-dashboards.js"),
  org: () => import("./console-org.js"),
};

let routing = 0;
async function route() {
  const n = ++routing;
  const parts = location.hash.replace(/^#\/?/, "").split("/").filter(Boolean).map(decodeURIComponent);
  const name = sections[parts[0]] ? parts[0] : "datasets";
  for (const a of document.querySelectorAll("#nav a")) {
    if (a.dataset.section === name) a.setAttribute("aria-current", "page"); else a.removeAttribute("aria-current");
  }
  document.body.removeAttribute("data-ready");
  try {
    const mod = await sections[name]();
    if (n !== routing) return;
    clear(main);
    if (!state.projectId && name !== "org") {
      main.append(h("section", { class: "empty" }, h("h1", {}, "Welcome"),
        h("p", {}, "Create a project to upload data into."),
        h("button", { type: "button", onclick: () => newProject() }, "New project")));
    } else {
      await mod.render(main, parts.slice(1));
    }
  } catch (err) {
    if (n !== routing) return;
    clear(main, errorBox(err));
  }
  if (n === routing) {
    document.body.setAttribute("data-ready", "true");
    // Time to interactive of the first view, for the performance measurement.
    if (!performance.getEntriesByName("console-ready").length) performance.mark("console-ready");
  }
}

window.addEventListener("hashchange", () => { route(); main.focus({ preventScroll: true }); });

async function start() {
  let s;
  try { s = await get("/api/v1/auth/session"); } catch { signIn(); return; }
  state.session = s;
  setCSRF(s.csrf_token);
  document.getElementById("who").textContent = s.user.email;
  await loadOrgs();
  await loadProjects();
  await route();
}

start().catch((err) => { clear(main, errorBox(err)); });
