// The organization: members and invitations, API keys (the secret shown once, with a copy
// button), webhooks with a test ping and their delivery log, settings, and the audit log.
import { get, post, patch, del, request, state } from "./console-api.js";
import { h, add, clear, toast, errorBox, table, when, field, copyButton, confirmDialog } from "./console-ui.js";

const tabs = [["members", "Members"], ["teams", "Teams"], ["keys", "API keys"], ["webhooks", "Webhooks"], ["settings", "Settings"], ["usage", "Usage"], ["audit", "Audit log"]];
const org = () => "/api/v1/organizations/" + state.orgId;

export async function render(main, parts) {
  const tab = parts[0] || "members";
  const o = state.orgs.find((x) => x.id === state.orgId) || {};
  const panel = h("section", { class: "panel", id: "org-panel", "aria-labelledby": "tab-" + tab });
  main.append(h("h1", {}, o.name || "Organization"),
    h("nav", { class: "tabs", "aria-label": "Organization views" }, tabs.map(([t, label]) =>
      h("a", { id: "tab-" + t, href: "#/org/" + t, "aria-current": t === tab ? "page" : undefined }, label))), panel);
  const draw = { members, teams, keys, webhooks, settings, usage, audit }[tab] || members;
  await draw(panel);
}

function form(fields, submit, label) {
  const problem = h("div");
  const button = h("button", { type: "submit" }, label);
  return h("form", { class: "card", onsubmit: async (e) => {
    e.preventDefault();
    button.disabled = true;
    clear(problem);
    try { await submit(); } catch (err) { problem.append(errorBox(err)); }
    button.disabled = false;
  } }, fields, problem, h("div", { class: "actions" }, button));
}

async function members(panel) {
  const r = await get(org() + "/users?limit=100");
  const email = h("input", { type: "email", required: true, id: "invite-email", autocomplete: "off" });
  const role = h("select", { id: "invite-role" }, ["viewer", "editor", "admin"].map((x) => h("option", { value: x, selected: x === "viewer" }, x)));
  const out = h("div", { id: "invite-out", "aria-live": "polite" });
  panel.append(h("h2", {}, "Invite someone"), form(h("div", { class: "row" }, field("Email", email), field("Role", role)), async () => {
    const inv = await post(org() + "/invitations", { email: email.value.trim(), role: role.value });
    const link = inv.accept_url || inv.invitation_url || inv.url || "";
    clear(out, h("p", { class: "ok" }, "Invited " + inv.email + " as " + inv.role + ".", link ? [" Invitation link: ", h("code", {}, link), " ", copyButton(link)] : ""));
    email.value = "";
    toast("Invitation sent");
    const again = await get(org() + "/users?limit=100");
    drawMembers(again.users);
  }, "Invite"), out);
  const list = h("div", { id: "members" });
  panel.append(h("h2", {}, "Members"), list);
  function drawMembers(users) {
    clear(list, table(["Name", "Email", "Role", "Status", "Two-factor"], users.map((u) => h("tr", {},
      h("td", {}, u.name), h("td", {}, u.email), h("td", {}, u.role), h("td", {}, h("span", { class: "badge " + u.status }, u.status)),
      h("td", {}, u.two_factor_enabled ? "on" : "off"))), { caption: "Members" }));
  }
  drawMembers(r.users);
}

const PERMISSIONS = ["datasets:list", "datasets:read", "datasets:write", "datasets:delete", "queries:read", "queries:execute", "dashboards:view", "visualizations:create"];

async function keys(panel) {
  const name = h("input", { type: "text", required: true, maxlength: 100, id: "key-name", autocomplete: "off" });
  const boxes = PERMISSIONS.map((p) => h("input", { type: "checkbox", value: p, checked: ["datasets:list", "datasets:read", "queries:execute"].includes(p) }));
  const shown = h("div", { id: "key-secret", "aria-live": "polite" });
  const list = h("div", { id: "keys" });
  panel.append(h("h2", {}, "New API key"), form([field("Name", name), h("fieldset", {}, h("legend", {}, "Permissions"),
    h("div", { class: "row" }, boxes.map((b) => h("label", { class: "check" }, b, " " + b.value))))], async () => {
    const k = await post("/api/v1/api-keys", { name: name.value.trim(), permissions: boxes.filter((b) => b.checked).map((b) => b.value) });
    clear(shown, h("div", { class: "conflict-box", role: "alert" }, h("strong", {}, "Copy the key now: it is shown only once. "),
      h("code", { id: "new-key" }, k.key), " ", copyButton(k.key)));
    name.value = "";
    await drawKeys();
  }, "Create key"), shown, h("h2", {}, "Your API keys"), list);
  async function drawKeys() {
    const r = await get("/api/v1/api-keys");
    const items = r.api_keys || r.keys || r.data || [];
    clear(list, table(["Name", "Prefix", "Permissions", "Created", "Last used", ""], items.map((k) => h("tr", {},
      h("td", {}, k.name), h("td", {}, h("code", {}, k.key_prefix || k.prefix || "")), h("td", {}, (k.permissions || []).join(", ")),
      h("td", {}, when(k.created_at)), h("td", {}, when(k.last_used_at)),
      h("td", {}, h("button", { type: "button", class: "ghost small danger-text", onclick: async () => {
        if (!(await confirmDialog("Revoke " + k.name + "?", "Programs using this key stop working.", "Revoke"))) return;
        try { await del("/api/v1/api-keys/" + k.id); toast("Key revoked"); } catch (err) { toast(err.message, "error"); }
        drawKeys();
      } }, "Revoke")))), { caption: "API keys", empty: "No API keys." }));
  }
  await drawKeys();
}

async function webhooks(panel) {
  const url = h("input", { type: "url", required: true, id: "webhook-url", placeholder: "https://example.com/hooks", autocomplete: "off" });
  const events = h("input", { type: "text", id: "webhook-events", value: "dataset.*", autocomplete: "off" });
  const shown = h("div", { id: "webhook-secret", "aria-live": "polite" });
  const list = h("div", { id: "webhooks" });
  const log = h("div", { id: "deliveries", "aria-live": "polite" });
  panel.append(h("h2", {}, "New webhook"), form(h("div", { class: "row" }, field("URL", url), field("Events", events, "Comma-separated: dataset.ready, dataset.*, *")), async () => {
    const w = await post(org() + "/webhooks", { url: url.value.trim(), events: events.value.split(",").map((x) => x.trim()).filter(Boolean) });
    clear(shown, w.secret ? h("div", { class: "conflict-box" }, h("strong", {}, "Signing secret (shown once): "), h("code", {}, w.secret), " ", copyButton(w.secret)) : "");
    url.value = "";
    await drawHooks();
  }, "Add webhook"), shown, h("h2", {}, "Webhooks"), list, log);
  async function drawHooks() {
    const r = await get(org() + "/webhooks");
    const items = r.webhooks || r.data || [];
    clear(list, table(["URL", "Events", "Enabled", ""], items.map((w) => h("tr", { dataset: { id: w.id } },
      h("td", {}, w.url), h("td", {}, w.events.join(", ")), h("td", {}, w.enabled ? "yes" : "no" + (w.disabled_reason ? " (" + w.disabled_reason + ")" : "")),
      h("td", { class: "row-actions" },
        h("button", { type: "button", class: "small", dataset: { action: "ping" }, onclick: async () => {
          try { await post(org() + "/webhooks/" + w.id + "/test", {}); toast("Test ping queued"); } catch (err) { toast(err.message, "error"); }
          drawLog(w);
        } }, "Send test ping"),
        h("button", { type: "button", class: "ghost small", onclick: () => drawLog(w) }, "Deliveries"),
        h("button", { type: "button", class: "ghost small danger-text", onclick: async () => {
          if (!(await confirmDialog("Delete this webhook?", w.url))) return;
          await del(org() + "/webhooks/" + w.id).catch((err) => toast(err.message, "error"));
          drawHooks();
        } }, "Delete")))), { caption: "Webhooks", empty: "No webhooks." }));
  }
  let polling = 0;
  async function drawLog(w) {
    const n = ++polling;
    for (let i = 0; i < 40 && n === polling && panel.isConnected; i++) {
      try {
        const r = await get(org() + "/webhooks/" + w.id + "/deliveries?limit=20");
        clear(log, h("h2", {}, "Deliveries of ", h("code", {}, w.url)), table(["Event", "Status", "Attempts", "Response", "When", ""], r.deliveries.map((d) => h("tr", { dataset: { status: d.status } },
          h("td", {}, d.event_type), h("td", {}, h("span", { class: "badge " + d.status }, d.status)), h("td", {}, String(d.attempts)),
          h("td", {}, d.last_response_status ? String(d.last_response_status) : d.last_error || "—"), h("td", {}, when(d.created_at)),
          h("td", {}, h("button", { type: "button", class: "ghost small", onclick: async () => {
            try { await post(org() + "/webhooks/" + w.id + "/deliveries/" + d.id + "/redeliver", {}); toast("Redelivery queued"); } catch (err) { toast(err.message, "error"); }
            drawLog(w);
          } }, "Redeliver")))), { caption: "Deliveries", empty: "No deliveries yet." }));
        if (r.deliveries.length && r.deliveries.every((d) => d.status !== "pending")) return;
      } catch (err) { clear(log, errorBox(err)); return; }
      await new Promise((res) => setTimeout(res, 500));
    }
  }
  await drawHooks();
}

async function settings(panel) {
  const s = await get(org() + "/settings");
  const twofa = h("input", { type: "checkbox", checked: s.security.two_factor_required, id: "set-2fa" });
  const timeout = h("input", { type: "number", min: 5, value: String(s.security.session_timeout_minutes), id: "set-timeout" });
  const allow = h("input", { type: "text", value: (s.security.ip_allowlist || []).join(", "), id: "set-allow", placeholder: "e.g. 10.0.0.0/8" });
  const retention = h("input", { type: "number", min: 0, value: String(s.defaults.dataset_retention_days), id: "set-retention" });
  panel.append(h("h2", {}, "Security and defaults"), form([h("label", { class: "check" }, twofa, " Require two-factor sign-in"),
    field("Session timeout (minutes)", timeout), field("IP allowlist", allow, "Networks in CIDR notation, comma-separated; empty: any address."),
    field("Dataset retention (days)", retention)], async () => {
    await patch(org() + "/settings", {
      security: { two_factor_required: twofa.checked, session_timeout_minutes: Number(timeout.value),
        ip_allowlist: allow.value.split(",").map((x) => x.trim()).filter(Boolean) },
      defaults: { dataset_retention_days: Number(retention.value) },
    });
    toast("Settings saved");
  }, "Save settings"));
}

async function audit(panel) {
  const action = h("input", { type: "text", id: "audit-action", placeholder: "e.g. dataset.create", autocomplete: "off" });
  const resource = h("input", { type: "text", id: "audit-resource", placeholder: "e.g. dataset", autocomplete: "off", pattern: "[a-z_]*" });
  const from = h("input", { type: "date", id: "audit-from" });
  const to = h("input", { type: "date", id: "audit-to" });
  const list = h("div", { id: "audit" });
  const load = async () => {
    const q = new URLSearchParams({ limit: "50" });
    if (action.value.trim()) q.set("action", action.value.trim());
    if (resource.value.trim()) q.set("resource_type", resource.value.trim());
    if (from.value) q.set("start_date", from.value);
    if (to.value) q.set("end_date", to.value);
    const r = await get(org() + "/audit-logs?" + q);
    clear(list, table(["When", "Who", "Action", "Resource", "Address"], r.logs.map((l) => h("tr", {},
      h("td", {}, h("time", { datetime: l.timestamp, title: l.timestamp }, when(l.timestamp))), h("td", {}, l.actor ? l.actor.email || l.actor.name || "" : "service"),
      h("td", {}, h("code", {}, l.action)), h("td", {}, l.resource ? (l.resource.type || "") + " " + (l.resource.name || l.resource.id || "") : ""), h("td", {}, l.ip_address || ""))),
    { caption: "Audit log", empty: "No entries." }));
  };
  panel.append(h("form", { class: "filters", onsubmit: (e) => { e.preventDefault(); load().catch((err) => clear(list, errorBox(err))); } },
    h("label", { for: "audit-action" }, "Action"), action, h("label", { for: "audit-resource" }, "Resource"), resource,
    h("label", { for: "audit-from" }, "From"), from, h("label", { for: "audit-to" }, "To"), to,
    h("button", { type: "submit", class: "small" }, "Filter")), list);
  await load();
}

// usage shows this period's use against the plan's limits.
async function usage(panel) {
  const r = await get(org() + "/usage");
  const figures = Object.entries(r.usage).flatMap(([area, v]) => Object.entries(v || {}).filter(([, f]) => f && typeof f === "object" && "count" in f)
    .map(([name, f]) => h("tr", {}, h("th", { scope: "row" }, area + " · " + name.replace(/_/g, " ")), h("td", { class: "num" }, Number(f.count).toLocaleString("en")),
      h("td", { class: "num" }, f.limit < 0 ? "unlimited" : Number(f.limit).toLocaleString("en")),
      h("td", {}, h("meter", { min: 0, max: 100, value: Math.min(100, f.percentage || 0), "aria-label": area + " " + name + " used" }), " " + (f.percentage || 0) + "%"))));
  add(panel, h("p", { class: "muted" }, "Period: " + r.period.start + " to " + r.period.end),
    table(["What", "Used", "Limit", "Share"], figures, { caption: "Usage", empty: "No usage figures." }),
    r.cost ? h("p", {}, "Cost this period: " + (r.cost.total !== undefined ? r.cost.total + " " + (r.cost.currency || "") : JSON.stringify(r.cost))) : null);
  await billing(panel);
}

// billing shows the plan, the cycle and the invoices, and changes the plan or the cycle
// (owners: billing:manage); admins without it see them only.
async function billing(panel) {
  const box = h("section", { id: "billing" });
  add(panel, h("h2", {}, "Plan and billing"), box);
  const money = (n, c) => Number(n).toLocaleString("en", { minimumFractionDigits: 2, maximumFractionDigits: 2 }) + " " + c;
  async function draw() {
    let b;
    try { b = await get(org() + "/billing"); } catch (err) { clear(box, errorBox(err)); return; }
    const plan = h("select", { id: "billing-plan" }, b.plans.map((p) => h("option", { value: p.tier, selected: p.tier === b.plan.tier },
      p.name + " (" + money(p.price_monthly, p.currency) + " a month)")));
    const cycle = h("select", { id: "billing-cycle" }, ["monthly", "yearly"].map((c) => h("option", { value: c, selected: c === b.billing_cycle }, c)));
    const problem = h("div");
    clear(box, h("p", { id: "billing-current" }, "Plan: " + b.plan.name + ", billed " + b.billing_cycle +
      (b.next_billing_date ? "; next billing date " + b.next_billing_date : "")),
    h("form", { class: "filters", onsubmit: async (e) => {
      e.preventDefault();
      clear(problem);
      const body = {};
      if (plan.value !== b.plan.tier) body.plan = plan.value;
      if (cycle.value !== b.billing_cycle) body.billing_cycle = cycle.value;
      if (!Object.keys(body).length) return;
      try { await patch(org() + "/billing", body); toast("Plan changed"); await draw(); } catch (err) { problem.append(errorBox(err)); }
    } }, h("label", { for: "billing-plan" }, "Plan"), plan, h("label", { for: "billing-cycle" }, "Cycle"), cycle,
    h("button", { type: "submit", class: "small", id: "billing-change" }, "Change")), problem,
    table(["Invoice", "Period", "Amount", "Status"], b.invoices.map((i) => h("tr", {}, h("td", {}, i.id), h("td", {}, i.period_start + " to " + i.period_end),
      h("td", { class: "num" }, money(i.amount, i.currency)), h("td", {}, i.status))), { caption: "Invoices", empty: "No invoices yet: one per closed month." }));
  }
  await draw();
}

// teams: create a team, add members, and grant it the current project with a role.
async function teams(panel) {
  const name = h("input", { type: "text", required: true, maxlength: 100, id: "team-name", autocomplete: "off" });
  const list = h("div", { id: "teams" });
  const problem = h("div");
  panel.append(h("h2", {}, "New team"), form(field("Name", name), async () => {
    await post(org() + "/teams", { name: name.value.trim() });
    name.value = "";
    toast("Team created");
    await drawTeams();
  }, "Create team"), h("h2", {}, "Teams"), problem, list);
  const project = state.projects.find((p) => p.id === state.projectId);
  async function drawTeams() {
    const [r, users] = await Promise.all([get(org() + "/teams?limit=100"), get(org() + "/users?limit=100")]);
    const items = r.teams || [];
    clear(list, table(["Team", "Members", "Projects", "Add a member", project ? "Grant " + project.name : ""], items.map((tm) => {
      const who = h("select", { "aria-label": "Member to add to " + tm.name }, users.users.filter((u) => u.status === "active").map((u) => h("option", { value: u.id }, u.email)));
      const role = h("select", { "aria-label": "Role of " + tm.name + " on the project" }, ["viewer", "analyst", "developer"].map((x) => h("option", { value: x }, x)));
      const run = (f) => async () => { clear(problem); try { await f(); await drawTeams(); } catch (err) { problem.append(errorBox(err)); } };
      return h("tr", {}, h("td", {}, tm.name), h("td", { class: "num" }, String(tm.member_count)), h("td", { class: "num" }, String(tm.project_count)),
        h("td", {}, who, " ", h("button", { type: "button", class: "small ghost", onclick: run(() => post(org() + "/teams/" + tm.id + "/members", { user_id: who.value })) }, "Add")),
        h("td", {}, project ? [role, " ", h("button", { type: "button", class: "small ghost", onclick: run(() => request("PUT", org() + "/teams/" + tm.id + "/projects/" + project.id, { role: role.value })) }, "Grant")] : ""));
    }), { caption: "Teams", empty: "No teams yet." }));
  }
  await drawTeams();
}
