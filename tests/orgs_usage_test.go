package tests

import (
	"testing"
	"time"
)

// TestUsageAndBilling: usage counts the queries run and their compute, split by project,
// user and team; storage and seats are what the limits count; cost follows the plans in
// force day by day; invoices cover closed months; owners change plan and cycle, a plan the
// organization does not fit is refused; the monthly query limit and the storage limit stop
// work with PLAN_LIMIT_EXCEEDED.
func TestUsageAndBilling(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	own := bearer(e.ownerToken)
	org := e.orgID
	base := "/api/v1/organizations/" + org
	ds := e.uploadAndCreate(e.ownerToken, "people", "people.csv", "name,city\nAnn,Oslo\nBob,Rome\n")
	e.waitDataset(e.ownerToken, ds)
	anaEmail, anaTok := e.member(org, "analyst")
	team := e.do("POST", base+"/teams", map[string]any{"name": "Analysts"}, own).status(201).str("id")
	e.do("POST", base+"/teams/"+team+"/members", map[string]any{"user_id": e.userIDOf(anaEmail)}, own).status(201)
	for i := 0; i < 3; i++ {
		e.execute(map[string]any{"query": "SELECT count(*) FROM people"}, anaTok).status(200)
	}
	e.execute(map[string]any{"query": "SELECT name FROM people"}, e.ownerToken).status(200)

	u := e.do("GET", base+"/usage", nil, own).status(200)
	if u.str("period.name") != "current_month" || u.num("usage.queries.count") != 4 || u.num("usage.queries.limit") != 10000 ||
		u.num("usage.users.count") != 2 || u.num("usage.users.limit") != 10 || u.num("usage.storage.used_bytes") <= 0 ||
		u.get("cost.current") != 0.0 || u.str("cost.currency") != "USD" {
		t.Fatalf("usage: %s", u.Body)
	}
	if d := e.do("GET", base, nil, own).status(200); d.num("usage.queries.this_month") != 4 || d.num("usage.storage.used_bytes") != u.num("usage.storage.used_bytes") {
		t.Fatalf("the organization's usage block differs: %s", d.Body)
	}
	if b := e.do("GET", base+"/usage?breakdown=user", nil, own).status(200); b.str("breakdown.0.id") != e.userIDOf(anaEmail) || b.num("breakdown.0.queries") != 3 {
		t.Fatalf("by user: %s", b.Body)
	}
	if b := e.do("GET", base+"/usage?breakdown=team", nil, own).status(200); b.len("breakdown") != 1 || b.str("breakdown.0.id") != team || b.num("breakdown.0.queries") != 3 {
		t.Fatalf("by team: %s", b.Body)
	}
	if b := e.do("GET", base+"/usage?breakdown=project", nil, own).status(200); b.str("breakdown.0.id") != e.projectID || b.num("breakdown.0.queries") != 4 {
		t.Fatalf("by project: %s", b.Body)
	}
	if b := e.do("GET", base+"/usage?period=last_month", nil, own).status(200); b.num("usage.queries.count") != 0 {
		t.Fatalf("last month: %s", b.Body)
	}
	// Bad periods; admins only.
	e.do("GET", base+"/usage?period=custom&start_date=2026-01-01", nil, own).apiError(400, "VALIDATION_ERROR", "query.end_date", "required")
	e.do("GET", base+"/usage?period=custom&start_date=2026-02-01&end_date=2026-01-01", nil, own).apiError(400, "VALIDATION_ERROR", "query.end_date", "minimum")
	e.do("GET", base+"/usage?period=custom&start_date=2024-01-01&end_date=2026-01-01", nil, own).apiError(400, "VALIDATION_ERROR", "query.end_date", "maximum")
	e.do("GET", base+"/usage?start_date=2026-01-01", nil, own).apiError(400, "VALIDATION_ERROR", "query.start_date", "not_allowed")
	e.do("GET", base+"/usage?period=week", nil, own).apiError(400, "VALIDATION_ERROR")
	e.do("GET", base+"/usage", nil, bearer(anaTok)).authError(403, "INSUFFICIENT_PERMISSIONS")
	e.do("GET", base+"/billing", nil, bearer(anaTok)).authError(403, "INSUFFICIENT_PERMISSIONS")
	e.do("GET", "/api/v1/organizations/org_nothere/usage", nil, own).apiError(404, "NOT_FOUND")

	// Billing: free, no next date; changing the plan is the owners'.
	b := e.do("GET", base+"/billing", nil, own).status(200)
	if b.str("plan.tier") != "free" || b.get("next_billing_date") != nil || b.len("plans") != 3 || b.len("invoices") != 0 {
		t.Fatalf("billing: %s", b.Body)
	}
	_, adminTok := e.member(org, "admin")
	e.do("PATCH", base+"/billing", map[string]any{"plan": "pro"}, bearer(adminTok)).authError(403, "PERMISSION_DENIED")
	e.do("PATCH", base+"/billing", map[string]any{"plan": "gold"}, own).apiError(400, "VALIDATION_ERROR")
	e.do("PATCH", base+"/billing", map[string]any{}, own).apiError(400, "VALIDATION_ERROR")
	p := e.do("PATCH", base+"/billing", map[string]any{"plan": "pro", "billing_cycle": "yearly"}, own).status(200)
	if p.str("plan.tier") != "pro" || p.str("billing_cycle") != "yearly" || p.get("next_billing_date") == nil {
		t.Fatalf("plan change: %s", p.Body)
	}
	if n := e.countAuditRows(org, "organization.plan_change"); n != 1 {
		t.Fatalf("plan change audit rows: %d", n)
	}
	// Cost so far this month: today at the pro yearly price (490/365).
	if u := e.do("GET", base+"/usage", nil, own).status(200); u.get("cost.current").(float64) < 1.3 || u.get("cost.projected").(float64) < u.get("cost.current").(float64) {
		t.Fatalf("cost on pro: %s", u.Body)
	}

	// A month later, last month has an invoice with a line per plan.
	e.clock.Advance(32 * 24 * time.Hour)
	own = bearer(e.login(adminEmail, adminPassword, org).str("access_token"))
	b = e.do("GET", base+"/billing", nil, own).status(200)
	if b.len("invoices") != 1 || b.get("invoices.0.amount").(float64) <= 0 || b.num("invoices.0.usage.queries") != 4 || b.str("invoices.0.status") != "issued" {
		t.Fatalf("invoice: %s", b.Body)
	}

	// Downgrading to a plan the organization does not fit is refused and changes nothing.
	for i := 0; i < 10; i++ {
		e.do("POST", base+"/projects", map[string]any{"name": "P" + string(rune('a'+i))}, own).status(201)
	}
	r := e.do("PATCH", base+"/billing", map[string]any{"plan": "free"}, own).apiError(422, "PLAN_LIMIT_EXCEEDED")
	if r.str("error.details.limit") != "projects" || r.num("error.details.plan_limit") != 10 || r.str("error.details.suggested_plan") != "pro" {
		t.Fatalf("downgrade refusal: %s", r.Body)
	}
	if b := e.do("GET", base+"/billing", nil, own).status(200); b.str("plan.tier") != "pro" {
		t.Fatalf("a refused downgrade changed the plan: %s", b.Body)
	}

	// The monthly query limit stops queries (this month's count starts again at 0).
	e.setPlan(org, "free")
	if _, err := e.st.DB.Exec(`INSERT INTO platform.usage_daily (organization_id, day, queries) VALUES ($1, $2::date, 10000)`, org, e.clock.Now()); err != nil {
		t.Fatal(err)
	}
	q := e.do("POST", "/api/v1/projects/"+e.projectID+"/queries/execute", map[string]any{"type": "sql", "query": "SELECT count(*) FROM people"}, own).
		apiError(422, "PLAN_LIMIT_EXCEEDED")
	if q.str("error.details.limit") != "queries" || q.num("error.details.plan_limit") != 10000 {
		t.Fatalf("query limit: %s", q.Body)
	}
}

// TestStorageLimit: an organization at its plan's storage takes no more uploads.
func TestStorageLimit(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	own := bearer(e.ownerToken)
	ds := e.uploadAndCreate(e.ownerToken, "people", "people.csv", "name\nAnn\nBob\n")
	e.waitDataset(e.ownerToken, ds)
	// Pretend the organization already stores 10 GiB in uploads.
	if _, err := e.st.DB.Exec(`UPDATE platform.uploads SET size_bytes = 10737418240 WHERE organization_id = $1`, e.orgID); err != nil {
		t.Fatal(err)
	}
	body, h := multipartBody(t, "more.csv", []byte("name\nCy\n"), nil)
	r := e.do("POST", "/api/v1/projects/"+e.projectID+"/datasets/upload", body, own, h).apiError(422, "PLAN_LIMIT_EXCEEDED")
	if r.str("error.details.limit") != "storage_bytes" || r.str("error.details.suggested_plan") != "pro" {
		t.Fatalf("storage limit: %s", r.Body)
	}
	e.setPlan(e.orgID, "pro")
	body, h = multipartBody(t, "more.csv", []byte("name\nCy\n"), nil)
	e.do("POST", "/api/v1/projects/"+e.projectID+"/datasets/upload", body, own, h).status(201)
}
