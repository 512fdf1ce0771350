package tests

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"regexp"
	"strings"
	"testing"
	"time"

	"dataplatform/cmd/dataplatform/config"
	"dataplatform/handlers/mcp"
	"dataplatform/handlers/records"
	"dataplatform/handlers/server"
	"dataplatform/store"
	"dataplatform/store/pgtest"
)

func TestOrgListPaginationAndRoleFilter(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	own := bearer(e.ownerToken)
	ids := []string{e.orgID}
	for i := 0; i < 4; i++ {
		e.clock.Advance(time.Second) // memberships are listed oldest first
		ids = append(ids, e.do("POST", "/api/v1/organizations", map[string]any{"name": fmt.Sprintf("Org %d", i)}, own).status(201).str("id"))
	}

	all := e.do("GET", "/api/v1/organizations", nil, own).status(200)
	if all.num("pagination.total") != 5 || all.num("pagination.page") != 1 || all.num("pagination.limit") != 20 ||
		all.num("pagination.pages") != 1 || all.get("pagination.has_next") != false || all.get("pagination.has_prev") != false {
		t.Fatalf("defaults: %s", all.Body)
	}
	for i, id := range ids {
		if all.str(fmt.Sprintf("organizations.%d.id", i)) != id {
			t.Fatalf("organizations not in membership order, want %v:\n%s", ids, all.Body)
		}
	}
	// A list item is the summary: no usage, no owner.
	if all.get("organizations.0.usage") != nil || all.get("organizations.0.owner") != nil || all.str("organizations.0.plan.tier") != "free" ||
		all.num("organizations.0.user_count") != 1 || all.num("organizations.0.project_count") != 1 || all.str("organizations.0.user_role") != "owner" {
		t.Fatalf("list item: %s", all.Body)
	}

	const path = "/api/v1/organizations"
	pages := []struct {
		page           int
		ids            []string
		hasNext, hasPr bool
	}{
		{1, ids[0:2], true, false},
		{2, ids[2:4], true, true},
		{3, ids[4:5], false, true},
	}
	for _, pc := range pages {
		e.subtest(t, fmt.Sprintf("page %d", pc.page), func(t *testing.T) {
			l := e.do("GET", fmt.Sprintf("%s?page=%d&limit=2&role=owner", path, pc.page), nil, own).status(200)
			if l.num("pagination.page") != pc.page || l.num("pagination.limit") != 2 || l.num("pagination.total") != 5 || l.num("pagination.pages") != 3 ||
				l.get("pagination.has_next") != pc.hasNext || l.get("pagination.has_prev") != pc.hasPr || l.len("organizations") != len(pc.ids) {
				t.Fatalf("pagination: %s", l.Body)
			}
			for i, id := range pc.ids {
				if l.str(fmt.Sprintf("organizations.%d.id", i)) != id {
					t.Fatalf("item %d is not %s: %s", i, id, l.Body)
				}
			}
			check := func(field string, want int) {
				t.Helper()
				q := pageQuery(t, path, l.str("pagination."+field))
				if q.Get("page") != fmt.Sprint(want) || q.Get("limit") != "2" || q.Get("role") != "owner" {
					t.Fatalf("%s = %s, want page %d with the other parameters kept", field, l.str("pagination."+field), want)
				}
			}
			check("first_page_url", 1)
			check("last_page_url", 3)
			if pc.hasNext {
				check("next_page_url", pc.page+1)
			} else if l.get("pagination.next_page_url") != nil {
				t.Fatalf("next_page_url on the last page: %s", l.Body)
			}
			if pc.hasPr {
				check("prev_page_url", pc.page-1)
			} else if l.get("pagination.prev_page_url") != nil {
				t.Fatalf("prev_page_url on the first page: %s", l.Body)
			}
		})
	}

	// Past the end: empty page, a way back, no way forward.
	l := e.do("GET", path+"?page=9&limit=2", nil, own).status(200)
	if l.len("organizations") != 0 || l.get("pagination.has_next") != false || l.get("pagination.has_prev") != true {
		t.Fatalf("past the end: %s", l.Body)
	}

	// Role filter: owner, admin, member (every role below admin).
	adminEmail2, adminTok := e.member(e.orgID, "admin")
	e.joinAs(e.ownerToken, ids[1], adminEmail2, "developer", "ignored", "password-admin")
	e.joinAs(e.ownerToken, ids[2], adminEmail2, "viewer", "ignored", "password-admin")
	cases := []struct {
		tok, role string
		want      map[string]string // organization id → the caller's user_role in it
	}{
		{e.ownerToken, "owner", map[string]string{ids[0]: "owner", ids[1]: "owner", ids[2]: "owner", ids[3]: "owner", ids[4]: "owner"}},
		{e.ownerToken, "admin", nil},
		{e.ownerToken, "member", nil},
		{adminTok, "", map[string]string{ids[0]: "admin", ids[1]: "developer", ids[2]: "viewer"}},
		{adminTok, "owner", nil},
		{adminTok, "admin", map[string]string{ids[0]: "admin"}},
		{adminTok, "member", map[string]string{ids[1]: "developer", ids[2]: "viewer"}},
	}
	for _, tc := range cases {
		who := "owner"
		if tc.tok == adminTok {
			who = "admin"
		}
		e.subtest(t, who+" role="+tc.role, func(t *testing.T) {
			q := ""
			if tc.role != "" {
				q = "?role=" + tc.role
			}
			l := e.do("GET", path+q, nil, bearer(tc.tok)).status(200)
			if l.num("pagination.total") != len(tc.want) || l.len("organizations") != len(tc.want) {
				t.Fatalf("want %v: %s", tc.want, l.Body)
			}
			got := map[string]string{}
			for i := 0; i < len(tc.want); i++ {
				got[l.str(fmt.Sprintf("organizations.%d.id", i))] = l.str(fmt.Sprintf("organizations.%d.user_role", i))
			}
			for id, role := range tc.want {
				if got[id] != role {
					t.Fatalf("%s: user_role %q, want %q: %s", id, got[id], role, l.Body)
				}
			}
		})
	}

	for _, tc := range []struct{ q, field, code string }{
		{"?role=boss", "query.role", "enum"},
		{"?limit=0", "query.limit", "minimum"},
		{"?limit=101", "query.limit", "maximum"},
		{"?page=0", "query.page", "minimum"},
		{"?page=x", "query.page", "type"},
	} {
		e.do("GET", path+tc.q, nil, own).apiError(400, "VALIDATION_ERROR", tc.field, tc.code)
	}
	e.do("GET", path, nil).authError(401, "AUTH_REQUIRED")
}

func TestOrgCreate(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	own := bearer(e.ownerToken)
	ownerID := e.userIDOf(adminEmail)
	c := e.do("POST", "/api/v1/organizations", map[string]any{"name": "Acme Analytics", "description": "we count", "website": "https://acme.example",
		"industry": "retail", "size": "11-50"}, own).status(201)
	id := c.str("id")
	if c.Header.Get("Location") != "/api/v1/organizations/"+id || !regexp.MustCompile(`^org_[a-z0-9]+$`).MatchString(id) {
		t.Fatalf("Location %q for %s", c.Header.Get("Location"), id)
	}
	if c.str("slug") != "acme-analytics" || c.str("name") != "Acme Analytics" || c.str("description") != "we count" || c.str("website") != "https://acme.example" ||
		c.str("industry") != "retail" || c.str("size") != "11-50" || c.str("user_role") != "owner" || c.num("user_count") != 1 || c.num("project_count") != 0 {
		t.Fatalf("create: %s", c.Body)
	}
	if c.str("owner.id") != ownerID || c.str("owner.email") != adminEmail || c.str("owner.name") != "Administrator" {
		t.Fatalf("owner: %s", c.Body)
	}
	if c.str("plan.name") != "Free" || c.str("plan.tier") != "free" {
		t.Fatalf("plan: %s", c.Body)
	}
	if e.countAuditRows(id, "organization.create") != 1 || e.countOutboxRows(id, "organization.created") != 1 {
		t.Fatal("organization.create not audited or organization.created not in the outbox")
	}
	// It is readable and listed.
	e.do("GET", "/api/v1/organizations/"+id, nil, own).status(200)

	// Slugs derived from names.
	derived := []struct{ name, slug string }{
		{"  Hello,   World!  ", "hello-world"},
		{"AB", "ab-org"},
		{"***", "org"},
		{"Data 2024 / Q1", "data-2024-q1"},
		{strings.Repeat("long name ", 10), "long-name-long-name-long-name-long-name-long-name"},
	}
	for _, tc := range derived {
		r := e.do("POST", "/api/v1/organizations", map[string]any{"name": tc.name}, own).status(201)
		if r.str("slug") != tc.slug {
			t.Fatalf("name %q: slug %q, want %q", tc.name, r.str("slug"), tc.slug)
		}
	}
	// The same name again: a distinct slug, still a valid one.
	seen := map[string]bool{"acme-analytics": true}
	for i := 0; i < 3; i++ {
		r := e.do("POST", "/api/v1/organizations", map[string]any{"name": "Acme Analytics"}, own).status(201)
		s := r.str("slug")
		if seen[s] || !regexp.MustCompile(`^acme-analytics-[a-z0-9]+$`).MatchString(s) || len(s) > 63 {
			t.Fatalf("slug %q not made unique: %s", s, r.Body)
		}
		seen[s] = true
	}
	// An explicit slug is taken as given; a taken one is a conflict naming the field.
	if r := e.do("POST", "/api/v1/organizations", map[string]any{"name": "Mine", "slug": "my-own-slug"}, own).status(201); r.str("slug") != "my-own-slug" {
		t.Fatalf("explicit slug: %s", r.Body)
	}
	for _, slug := range []string{"my-own-slug", "acme-analytics", "default"} {
		r := e.do("POST", "/api/v1/organizations", map[string]any{"name": "Clash", "slug": slug}, own).apiError(409, "CONFLICT")
		if detailField(r) != "slug" {
			t.Fatalf("409 details: %s", r.Body)
		}
	}

	var before int
	if err := e.st.DB.Get(&before, `SELECT count(*) FROM platform.organizations`); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, body, field, code string
	}{
		{"empty name", `{"name":""}`, "body.name", "minLength"},
		{"missing name", `{"slug":"abc"}`, "body.name", "required"},
		{"empty object", `{}`, "body.name", "required"},
		{"long name", `{"name":"` + strings.Repeat("n", 256) + `"}`, "body.name", "maxLength"},
		{"name not a string", `{"name":42}`, "body.name", "type"},
		{"slug with space", `{"name":"x","slug":"Bad Slug"}`, "body.slug", "pattern"},
		{"slug uppercase", `{"name":"x","slug":"Acme"}`, "body.slug", "pattern"},
		{"slug leading hyphen", `{"name":"x","slug":"-acme"}`, "body.slug", "pattern"},
		{"slug trailing hyphen", `{"name":"x","slug":"acme-"}`, "body.slug", "pattern"},
		{"slug underscore", `{"name":"x","slug":"ac_me"}`, "body.slug", "pattern"},
		{"slug too short", `{"name":"x","slug":"ab"}`, "body.slug", "minLength"},
		{"slug too long", `{"name":"x","slug":"` + strings.Repeat("a", 64) + `"}`, "body.slug", "maxLength"},
		{"bad website", `{"name":"x","website":"not a url"}`, "body.website", "format"},
		{"ftp website", `{"name":"x","website":"ftp://acme.example"}`, "body.website", "format"},
		{"bad size", `{"name":"x","size":"huge"}`, "body.size", "enum"},
		{"unknown field", `{"name":"x","plan":"enterprise"}`, "body.plan", "unknown_field"},
		{"case variant key", `{"name":"a","NAME":"b"}`, "body.NAME", "unknown_field"},
		{"case variant only", `{"Name":"a"}`, "body.Name", "unknown_field"},
		{"duplicate key", `{"name":"a","name":"b"}`, "body.name", "duplicate"},
		{"malformed", `{"name":`, "body", "invalid_json"},
		{"trailing data", `{"name":"a"} {}`, "body", "invalid_json"},
		{"not an object", `[1,2]`, "body", "type"},
	}
	for _, tc := range cases {
		e.subtest(t, tc.name, func(t *testing.T) {
			r := e.do("POST", "/api/v1/organizations", tc.body, own).apiError(400, "VALIDATION_ERROR", tc.field, tc.code)
			if r.str("error.documentation_url") != baseURL+"/api/v1/errors/VALIDATION_ERROR" {
				t.Fatalf("documentation_url: %s", r.Body)
			}
		})
	}
	for _, ct := range []string{"application/x-www-form-urlencoded", "text/plain"} {
		e.do("POST", "/api/v1/organizations", `{"name":"x"}`, own, header{"Content-Type": ct}).
			apiError(400, "VALIDATION_ERROR", "header.Content-Type", "content_type")
	}
	var after int
	if err := e.st.DB.Get(&after, `SELECT count(*) FROM platform.organizations`); err != nil {
		t.Fatal(err)
	}
	if after != before {
		t.Fatalf("rejected requests created %d organizations", after-before)
	}

	// Organizations are created by people, not API keys; and not anonymously.
	k := e.do("POST", "/api/v1/api-keys", map[string]any{"name": "k", "permissions": []string{"organizations:manage", "datasets:list"}}, own).status(201).str("key")
	e.do("POST", "/api/v1/organizations", map[string]any{"name": "By key"}, apiKey(k)).authError(403, "PERMISSION_DENIED")
	e.do("POST", "/api/v1/organizations", map[string]any{"name": "Anonymous"}).authError(401, "AUTH_REQUIRED")
}

func TestOrgGet(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	own := bearer(e.ownerToken)
	g := e.do("GET", "/api/v1/organizations/"+e.orgID, nil, own).status(200)
	checks := map[string]any{
		"id": e.orgID, "slug": "default", "name": "Default organization", "user_role": "owner",
		"plan.name": "Free", "plan.tier": "free", "plan.price_monthly": 0.0, "plan.billing_cycle": "monthly",
		"settings.features.audit_logs": true, "settings.features.sso_enabled": false, "settings.features.custom_roles": false,
		"settings.security.two_factor_required": false, "settings.security.session_timeout_minutes": 480.0,
		"settings.defaults.user_role": "viewer", "settings.defaults.project_visibility": "organization", "settings.defaults.dataset_retention_days": 365.0,
		"settings.notifications.email_digest": "weekly", "settings.notifications.usage_alerts": true, "settings.notifications.security_alerts": true,
		"usage.users.count": 1.0, "usage.users.limit": 10.0, "usage.projects.count": 1.0, "usage.projects.limit": 10.0,
		"usage.storage.used_bytes": 0.0, "usage.storage.limit_bytes": float64(10 << 30),
		"usage.queries.this_month": 0.0, "usage.queries.limit_monthly": 10000.0,
	}
	for path, want := range checks {
		if got := g.get(path); got != want {
			t.Errorf("%s = %v, want %v", path, got, want)
		}
	}
	if g.get("settings.security.ip_allowlist") == nil || g.get("plan.next_billing_date") != nil || g.get("owner") != nil {
		t.Fatalf("detail: %s", g.Body)
	}
	// A paid plan has a next billing date: the first of next month.
	e.setPlan(e.orgID, "pro")
	g = e.do("GET", "/api/v1/organizations/"+e.orgID, nil, own).status(200)
	now := e.clock.Now().UTC()
	next := time.Date(now.Year(), now.Month()+1, 1, 0, 0, 0, 0, time.UTC).Format("2006-01-02")
	if g.str("plan.tier") != "pro" || g.str("plan.name") != "Pro" || g.get("plan.price_monthly") != 49.0 || g.str("plan.next_billing_date") != next ||
		g.num("usage.users.limit") != 50 || g.num("usage.projects.limit") != 100 {
		t.Fatalf("pro plan detail: %s", g.Body)
	}
	// Counts follow members and projects.
	_, viewer := e.member(e.orgID, "viewer")
	e.do("POST", "/api/v1/organizations/"+e.orgID+"/projects", map[string]any{"name": "Second"}, own).status(201)
	g = e.do("GET", "/api/v1/organizations/"+e.orgID, nil, bearer(viewer)).status(200)
	if g.num("usage.users.count") != 2 || g.num("user_count") != 2 || g.num("usage.projects.count") != 2 || g.num("project_count") != 2 || g.str("user_role") != "viewer" {
		t.Fatalf("counts seen by the viewer: %s", g.Body)
	}

	// Not a member, or no such organization: the same 404.
	other := e.do("POST", "/api/v1/organizations", map[string]any{"name": "Private"}, own).status(201).str("id")
	for _, id := range []string{other, "org_doesnotexist"} {
		r := e.do("GET", "/api/v1/organizations/"+id, nil, bearer(viewer)).apiError(404, "NOT_FOUND")
		if strings.Contains(string(r.Body), "Private") {
			t.Fatalf("404 leaks the organization: %s", r.Body)
		}
	}
	e.do("GET", "/api/v1/organizations/"+e.orgID, nil).authError(401, "AUTH_REQUIRED")
	// A key without datasets:list cannot read it.
	k := e.do("POST", "/api/v1/api-keys", map[string]any{"name": "q", "permissions": []string{"queries:read"}}, own).status(201).str("key")
	if r := e.do("GET", "/api/v1/organizations/"+e.orgID, nil, apiKey(k)).authError(403, "PERMISSION_DENIED"); r.str("required_permission") != "datasets:list" {
		t.Fatalf("403: %s", r.Body)
	}
}

func TestOrgPatch(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	own := bearer(e.ownerToken)
	path := "/api/v1/organizations/" + e.orgID
	_, dev := e.member(e.orgID, "developer")
	adminMail, admin := e.member(e.orgID, "admin")
	adminID := e.userIDOf(adminMail)

	r := e.do("PATCH", path, map[string]any{"name": "Renamed"}, bearer(dev)).authError(403, "INSUFFICIENT_PERMISSIONS")
	if r.str("required_role") != "admin" || r.str("your_role") != "member" || r.str("error") != "forbidden" {
		t.Fatalf("403: %s", r.Body)
	}
	before := e.do("GET", path, nil, own).status(200)
	e.clock.Advance(time.Minute)
	p := e.do("PATCH", path, map[string]any{"name": "Renamed", "description": "about us", "website": "https://acme.example", "logo_url": "https://acme.example/logo.png"},
		bearer(admin)).status(200)
	if p.str("name") != "Renamed" || p.str("description") != "about us" || p.str("website") != "https://acme.example" || p.str("logo_url") != "https://acme.example/logo.png" ||
		p.str("slug") != "default" || p.str("updated_at") == before.str("updated_at") || p.str("created_at") != before.str("created_at") || p.str("user_role") != "admin" {
		t.Fatalf("patch: %s", p.Body)
	}
	// Fields left out keep their value; empty strings clear the clearable ones.
	p = e.do("PATCH", path, map[string]any{"description": ""}, bearer(admin)).status(200)
	if p.get("description") != nil || p.str("website") != "https://acme.example" || p.str("name") != "Renamed" {
		t.Fatalf("clearing description: %s", p.Body)
	}
	p = e.do("PATCH", path, map[string]any{"website": "", "logo_url": ""}, own).status(200)
	if p.get("website") != nil || p.get("logo_url") != nil {
		t.Fatalf("clearing website and logo: %s", p.Body)
	}
	if g := e.do("GET", path, nil, own).status(200); g.get("description") != nil || g.str("name") != "Renamed" {
		t.Fatalf("not stored: %s", g.Body)
	}

	// The audit row of the admin's change, with what changed.
	var row struct {
		Actor   string `db:"actor_id"`
		Email   string `db:"actor_email"`
		ResType string `db:"resource_type"`
		ResID   string `db:"resource_id"`
		Name    string `db:"name"`
		IP      string `db:"ip_address"`
	}
	if err := e.st.DB.Get(&row, `SELECT actor_id, actor_email, resource_type, resource_id, details->'changes'->>'name' AS name, ip_address
		FROM platform.audit_log WHERE organization_id = $1 AND action = 'organization.update' ORDER BY id LIMIT 1`, e.orgID); err != nil {
		t.Fatal(err)
	}
	if row.Actor != adminID || row.Email != adminMail || row.ResType != "organization" || row.ResID != e.orgID || row.Name != "Renamed" || row.IP == "" {
		t.Fatalf("audit row: %+v", row)
	}
	if n := e.countAuditRows(e.orgID, "organization.update"); n != 3 {
		t.Fatalf("%d organization.update rows, want 3", n)
	}
	if e.countOutboxRows(e.orgID, "organization.updated") != 3 {
		t.Fatal("organization.updated events missing")
	}

	cases := []struct {
		name, body, field, code string
	}{
		{"no field", `{}`, "body", "minProperties"},
		{"empty name", `{"name":""}`, "body.name", "minLength"},
		{"slug is not changeable", `{"slug":"other"}`, "body.slug", "unknown_field"},
		{"duplicate", `{"name":"a","name":"b"}`, "body.name", "duplicate"},
		{"malformed", `{"name"`, "body", "invalid_json"},
	}
	for _, tc := range cases {
		e.subtest(t, tc.name, func(t *testing.T) {
			e.do("PATCH", path, tc.body, bearer(admin)).apiError(400, "VALIDATION_ERROR", tc.field, tc.code)
		})
	}
	r = e.do("PATCH", path, map[string]any{"website": "not a url"}, bearer(admin)).status(400)
	if r.str("error.code") != "VALIDATION_ERROR" || !strings.Contains(string(r.Body), "body.website") {
		t.Fatalf("bad website: %s", r.Body)
	}
	if n := e.countAuditRows(e.orgID, "organization.update"); n != 3 {
		t.Fatalf("rejected patches were audited: %d rows", n)
	}

	// A non-member gets 404, not 403.
	other := e.do("POST", "/api/v1/organizations", map[string]any{"name": "Elsewhere"}, own).status(201).str("id")
	e.do("PATCH", "/api/v1/organizations/"+other, map[string]any{"name": "x"}, bearer(admin)).apiError(404, "NOT_FOUND")
	// The owner's key needs organizations:manage on top of the role.
	k := e.do("POST", "/api/v1/api-keys", map[string]any{"name": "ro", "permissions": []string{"datasets:list"}}, own).status(201).str("key")
	if r := e.do("PATCH", path, map[string]any{"name": "x"}, apiKey(k)).authError(403, "PERMISSION_DENIED"); r.str("required_permission") != "organizations:manage" {
		t.Fatalf("403: %s", r.Body)
	}
	k2 := e.do("POST", "/api/v1/api-keys", map[string]any{"name": "rw", "permissions": []string{"organizations:manage"}}, own).status(201)
	e.do("PATCH", path, map[string]any{"name": "By key"}, apiKey(k2.str("key"))).status(200)
	var keyID string
	if err := e.st.DB.Get(&keyID, `SELECT details->>'api_key_id' FROM platform.audit_log WHERE organization_id = $1 AND action = 'organization.update' ORDER BY id DESC LIMIT 1`, e.orgID); err != nil {
		t.Fatal(err)
	}
	if keyID != k2.str("id") {
		t.Fatalf("audit row of a key's change names key %q, want %s", keyID, k2.str("id"))
	}
}

func TestOrgDelete(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	own := bearer(e.ownerToken)
	path := "/api/v1/organizations/" + e.orgID
	_, admin := e.member(e.orgID, "admin")
	_, dev := e.member(e.orgID, "developer")

	for tok, yours := range map[string]string{admin: "admin", dev: "member"} {
		r := e.do("DELETE", path, map[string]any{"confirmation": "default"}, bearer(tok)).authError(403, "INSUFFICIENT_PERMISSIONS")
		if r.str("required_role") != "owner" || r.str("your_role") != yours {
			t.Fatalf("403: %s", r.Body)
		}
	}
	cases := []struct {
		name, body, field, code string
	}{
		{"wrong confirmation", `{"confirmation":"wrong"}`, "body.confirmation", "mismatch"},
		{"name instead of slug", `{"confirmation":"Default organization"}`, "body.confirmation", "mismatch"},
		{"slug in capitals", `{"confirmation":"DEFAULT"}`, "body.confirmation", "mismatch"},
		{"missing confirmation", `{"reason":"x"}`, "body.confirmation", "required"},
		{"empty confirmation", `{"confirmation":""}`, "body.confirmation", "minLength"},
		{"bad transfer_to", `{"confirmation":"default","transfer_to":"nope"}`, "body.transfer_to", "pattern"},
		{"unknown field", `{"confirmation":"default","force":true}`, "body.force", "unknown_field"},
	}
	for _, tc := range cases {
		e.subtest(t, tc.name, func(t *testing.T) {
			e.do("DELETE", path, tc.body, own).apiError(400, "VALIDATION_ERROR", tc.field, tc.code)
		})
	}
	// Nothing was deleted by the refused attempts.
	e.do("GET", path, nil, own).status(200)
	e.do("GET", "/api/v1/projects/"+e.projectID, nil, own).status(200)
	if e.countOutboxRows(e.orgID, "organization.deleted") != 0 || e.countAuditRows(e.orgID, "organization.delete") != 0 {
		t.Fatal("refused deletion recorded")
	}

	e.clock.Advance(time.Hour - time.Minute)
	d := e.do("DELETE", path, map[string]any{"confirmation": "default", "reason": "done"}, own).status(200)
	if d.num("projects_deleted") != 1 || d.num("projects_transferred") != 0 || d.get("transferred_to") != nil || d.str("message") == "" {
		t.Fatalf("delete: %s", d.Body)
	}
	if at, err := time.Parse(time.RFC3339Nano, d.str("deleted_at")); err != nil || !at.Equal(e.clock.Now().Truncate(time.Microsecond)) {
		t.Fatalf("deleted_at %s, clock %s", d.str("deleted_at"), e.clock.Now())
	}
	for _, tok := range []string{e.ownerToken, admin} {
		e.do("GET", path, nil, bearer(tok)).apiError(404, "NOT_FOUND")
		e.do("GET", "/api/v1/projects/"+e.projectID, nil, bearer(tok)).apiError(404, "NOT_FOUND")
	}
	e.do("DELETE", path, map[string]any{"confirmation": "default"}, own).apiError(404, "NOT_FOUND")
	if l := e.do("GET", "/api/v1/organizations", nil, own).status(200); l.num("pagination.total") != 0 {
		t.Fatalf("deleted organization still listed: %s", l.Body)
	}
	if e.countOutboxRows(e.orgID, "organization.deleted") != 1 || e.countAuditRows(e.orgID, "organization.delete") != 1 {
		t.Fatal("deletion not in the outbox or the audit log")
	}
	var reason string
	if err := e.st.DB.Get(&reason, `SELECT details->>'reason' FROM platform.audit_log WHERE organization_id = $1 AND action = 'organization.delete'`, e.orgID); err != nil || reason != "done" {
		t.Fatalf("audit reason %q: %v", reason, err)
	}
	var left int
	if err := e.st.DB.Get(&left, `SELECT (SELECT count(*) FROM platform.memberships WHERE organization_id = $1) + (SELECT count(*) FROM platform.projects WHERE organization_id = $1)`, e.orgID); err != nil || left != 0 {
		t.Fatalf("%d memberships and projects left (%v)", left, err)
	}
	// The people remain and can sign in (to no organization).
	if r := e.login(adminEmail, adminPassword, ""); r.get("user.organization_id") != nil {
		t.Fatalf("login after deletion: %s", r.Body)
	}
}

func TestOrgDeleteTransfer(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	own := bearer(e.ownerToken)
	// Someone else owns the target; the bootstrap owner is an admin there.
	_, otherTok := e.member(e.orgID, "viewer")
	target := e.do("POST", "/api/v1/organizations", map[string]any{"name": "Target"}, bearer(otherTok)).status(201).str("id")
	// A project of the same name (in other letters) already lives in the target.
	e.do("POST", "/api/v1/organizations/"+target+"/projects", map[string]any{"name": "DEFAULT PROJECT"}, bearer(otherTok)).status(201)
	e.joinAs(otherTok, target, adminEmail, "admin", "ignored", adminPassword)
	reports := e.do("POST", "/api/v1/organizations/"+e.orgID+"/projects", map[string]any{"name": "Reports"}, own).status(201).str("id")
	// A third organization where the owner is only a developer; a fourth they are not in.
	devOrg := e.do("POST", "/api/v1/organizations", map[string]any{"name": "Dev only"}, bearer(otherTok)).status(201).str("id")
	e.joinAs(otherTok, devOrg, adminEmail, "developer", "ignored", adminPassword)
	foreign := e.do("POST", "/api/v1/organizations", map[string]any{"name": "Foreign"}, bearer(otherTok)).status(201).str("id")

	del := func(to string) *resp {
		return e.do("DELETE", "/api/v1/organizations/"+e.orgID, map[string]any{"confirmation": "default", "transfer_to": to}, own)
	}
	del(e.orgID).apiError(400, "VALIDATION_ERROR", "body.transfer_to", "invalid")
	for _, to := range []string{foreign, "org_nosuchorg"} {
		del(to).apiError(400, "VALIDATION_ERROR", "body.transfer_to", "not_found")
	}
	if r := del(devOrg).authError(403, "INSUFFICIENT_PERMISSIONS"); r.str("required_role") != "admin" || r.str("your_role") != "member" {
		t.Fatalf("transfer to an organization where the caller is a developer: %s", r.Body)
	}
	e.do("GET", "/api/v1/organizations/"+e.orgID, nil, own).status(200)

	d := del(target).status(200)
	if d.num("projects_transferred") != 2 || d.num("projects_deleted") != 0 || d.str("transferred_to") != target {
		t.Fatalf("transfer: %s", d.Body)
	}
	e.do("GET", "/api/v1/organizations/"+e.orgID, nil, own).apiError(404, "NOT_FOUND")
	for id, name := range map[string]string{e.projectID: "Default project (default)", reports: "Reports"} {
		for _, tok := range []string{e.ownerToken, otherTok} {
			p := e.do("GET", "/api/v1/projects/"+id, nil, bearer(tok)).status(200)
			if p.str("organization_id") != target || p.str("name") != name {
				t.Fatalf("moved project: %s", p.Body)
			}
		}
	}
	if l := e.do("GET", "/api/v1/organizations/"+target+"/projects", nil, bearer(otherTok)).status(200); l.num("pagination.total") != 3 {
		t.Fatalf("target's projects: %s", l.Body)
	}
	if e.countOutboxRows(e.orgID, "organization.deleted") != 1 || e.countAuditRows(target, "organization.receive_projects") != 1 {
		t.Fatal("transfer not recorded")
	}
}

// Moving projects whose suffixed name is also taken must still give every project a unique
// name, not fail on the unique index.
func TestOrgDeleteTransferSuffixClash(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	own := bearer(e.ownerToken)
	target := e.do("POST", "/api/v1/organizations", map[string]any{"name": "Target"}, own).status(201).str("id")
	for _, n := range []string{"Default project", "Default project (default)"} {
		e.do("POST", "/api/v1/organizations/"+target+"/projects", map[string]any{"name": n}, own).status(201)
	}
	d := e.do("DELETE", "/api/v1/organizations/"+e.orgID, map[string]any{"confirmation": "default", "transfer_to": target}, own).status(200)
	if d.num("projects_transferred") != 1 {
		t.Fatalf("transfer: %s", d.Body)
	}
	p := e.do("GET", "/api/v1/projects/"+e.projectID, nil, own).status(200)
	if n := p.str("name"); n == "Default project" || n == "Default project (default)" || p.str("organization_id") != target {
		t.Fatalf("moved project: %s", p.Body)
	}
}

// A page number far past the end is an empty page (or a 400), never a failure: the offset
// (page-1)*limit must not overflow.
func TestOrgListHugePage(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	own := bearer(e.ownerToken)
	for _, p := range []string{"/api/v1/organizations", "/api/v1/organizations/" + e.orgID + "/projects", "/api/v1/organizations/" + e.orgID + "/users"} {
		r := e.do("GET", p+"?page=100000000000000000&limit=100", nil, own)
		switch r.Code {
		case 200:
			if r.get("pagination.has_next") != false {
				t.Fatalf("%s: %s", p, r.Body)
			}
		case 400:
			r.apiError(400, "VALIDATION_ERROR", "query.page", "maximum")
		default:
			t.Fatalf("%s: status %d\n%s", p, r.Code, r.Body)
		}
	}
}

// Audit entries name their actor (actor id, name, email).
func TestOrgAuditActorName(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	id := e.do("POST", "/api/v1/organizations", map[string]any{"name": "Audited"}, bearer(e.ownerToken)).status(201).str("id")
	var actor struct {
		ID    *string `db:"actor_id"`
		Name  *string `db:"actor_name"`
		Email *string `db:"actor_email"`
	}
	if err := e.st.DB.Get(&actor, `SELECT actor_id, actor_name, actor_email FROM platform.audit_log WHERE organization_id = $1 AND action = 'organization.create'`, id); err != nil {
		t.Fatal(err)
	}
	if actor.ID == nil || *actor.ID != e.userIDOf(adminEmail) || actor.Email == nil || *actor.Email != adminEmail {
		t.Fatalf("actor: %+v", actor)
	}
	if actor.Name == nil || *actor.Name != "Administrator" {
		t.Fatalf("actor name %v, want Administrator", actor.Name)
	}
}

// Deleting an organization with transfer_to moves its datasets' tables into the receiving
// organization's schema, where its query role reads them and the records API serves them;
// the old organization's schema and query role are gone. A receiving organization whose plan
// would overflow is refused first, and nothing moves.
func TestOrgDeleteTransferMovesData(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	own := bearer(e.ownerToken)
	old := e.orgID
	ds := e.uploadAndCreate(e.ownerToken, "people", "people.csv", "name\nAnn\nBob\n")
	e.waitDataset(e.ownerToken, ds)
	e.execute(map[string]any{"query": "SELECT count(*) FROM people"}, e.ownerToken).status(200) // the old role exists

	full := e.do("POST", "/api/v1/organizations", map[string]any{"name": "Full"}, own).status(201).str("id")
	for i := 0; i < 10; i++ {
		e.do("POST", "/api/v1/organizations/"+full+"/projects", map[string]any{"name": "P" + string(rune('a'+i))}, own).status(201)
	}
	r := e.do("DELETE", "/api/v1/organizations/"+old, map[string]any{"confirmation": "default", "transfer_to": full}, own).apiError(422, "PLAN_LIMIT_EXCEEDED")
	if r.str("error.details.limit") != "projects" || r.num("error.details.current") != 11 {
		t.Fatalf("transfer past the limit: %s", r.Body)
	}

	target := e.do("POST", "/api/v1/organizations", map[string]any{"name": "Target"}, own).status(201).str("id")
	e.do("DELETE", "/api/v1/organizations/"+old, map[string]any{"confirmation": "default", "transfer_to": target}, own).status(200)
	if n := e.countRows(`SELECT count(*) FROM platform.datasets WHERE id = '` + ds + `' AND table_schema = '` + target + `'`); n != 1 {
		t.Fatal("the dataset does not name the receiving organization's schema")
	}
	if n := e.countRows(`SELECT count(*) FROM pg_namespace WHERE nspname = '` + old + `'`); n != 0 {
		t.Fatal("the old organization's schema is still there")
	}
	if n := e.countRows(`SELECT count(*) FROM pg_roles WHERE rolname = 'dp_query_` + old + `'`); n != 0 {
		t.Fatal("the old organization's query role is still there")
	}
	if n := e.countRows(`SELECT count(*) FROM "` + target + `"."` + ds + `"`); n != 2 {
		t.Fatalf("moved table rows: %d", n)
	}
	if r := e.do("GET", "/api/v1/datasets/"+ds+"/data", nil, own).status(200); r.len("data") != 2 {
		t.Fatalf("records after the move: %s", r.Body)
	}
	q := e.do("POST", "/api/v1/projects/"+e.projectID+"/queries/execute", map[string]any{"type": "sql", "query": "SELECT count(*) AS n FROM people"}, own).status(200)
	if rows(q) != "2" {
		t.Fatalf("SQL under the receiving organization's role: %s", q.Body)
	}
}

// TestBootstrapRefusesWeakAdminPassword: the first owner's password (DP_ADMIN_PASSWORD) follows
// the rule of every new password: a commonly used one stops the first start, saying why, and
// creates no one; a strong one goes.
func TestBootstrapRefusesWeakAdminPassword(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, err := store.Open(ctx, pgtest.NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	start := func(password string) error {
		cfg := config.Defaults()
		cfg.BaseURL, cfg.BcryptCost, cfg.DataDir = baseURL, 4, t.TempDir()
		cfg.AdminEmail, cfg.AdminPassword = "first@example.com", password
		srv, err := server.New(ctx, server.Deps{Config: cfg.Settings, Store: st, Records: records.Routes, Agents: mcp.Agents, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Clock: time.Now})
		if err != nil {
			t.Fatal(err)
		}
		defer srv.Close()
		return srv.H.Bootstrap(ctx)
	}
	for _, pw := range []string{"password", "12345678", "first@example.com", "Password1!"} {
		if err := start(pw); err == nil || !strings.HasPrefix(err.Error(), "DP_ADMIN_PASSWORD: ") || !strings.Contains(err.Error(), "choose") {
			t.Fatalf("%q: %v", pw, err)
		}
	}
	var n int
	if err := st.DB.Get(&n, `SELECT count(*) FROM platform.users`); err != nil || n != 0 {
		t.Fatalf("users after refused starts: %d (%v)", n, err)
	}
	if err := start("first-owner kettle orbit"); err != nil {
		t.Fatal(err)
	}
}
