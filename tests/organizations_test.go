package tests

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"dataplatform/cmd/dataplatform/config"
)

func TestOrgsCreateValidation(t *testing.T) {
	e := newEnv(t)
	own := bearer(e.ownerToken)
	c := e.do("POST", "/api/v1/organizations", map[string]any{"name": "Acme Analytics", "industry": "retail", "size": "11-50"}, own).status(201)
	if c.str("slug") != "acme-analytics" || c.str("owner.email") != adminEmail || c.str("plan.tier") != "free" || c.str("user_role") != "owner" {
		t.Fatalf("create: %s", c.Body)
	}
	if c.Header.Get("Location") != "/api/v1/organizations/"+c.str("id") {
		t.Fatalf("Location: %q", c.Header.Get("Location"))
	}
	if e.countAuditRows(c.str("id"), "organization.create") != 1 || e.countOutboxRows(c.str("id"), "organization.created") != 1 {
		t.Fatal("audit or outbox row missing")
	}
	// The same name again gets a distinct derived slug; an explicit taken slug is a conflict.
	if d := e.do("POST", "/api/v1/organizations", map[string]any{"name": "Acme Analytics"}, own).status(201); d.str("slug") == "acme-analytics" {
		t.Fatalf("slug not made unique: %s", d.Body)
	}
	e.do("POST", "/api/v1/organizations", map[string]any{"name": "X", "slug": "acme-analytics"}, own).apiError(409, "CONFLICT")

	cases := []struct {
		name, body, field, code string
	}{
		{"empty name", `{"name":""}`, "body.name", "minLength"},
		{"missing name", `{}`, "body.name", "required"},
		{"bad slug", `{"name":"x","slug":"Bad Slug"}`, "body.slug", "pattern"},
		{"short slug", `{"name":"x","slug":"ab"}`, "body.slug", "minLength"},
		{"bad website", `{"name":"x","website":"not a url"}`, "body.website", "format"},
		{"bad size", `{"name":"x","size":"huge"}`, "body.size", "enum"},
		{"unknown field", `{"name":"x","plan":"enterprise"}`, "body.plan", "unknown_field"},
		{"case variant", `{"name":"a","NAME":"b"}`, "body.NAME", "unknown_field"},
		{"duplicate key", `{"name":"a","name":"b"}`, "body.name", "duplicate"},
		{"malformed", `{"name":`, "body", "invalid_json"},
		{"not an object", `[1,2]`, "body", "type"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e.t = t
			e.do("POST", "/api/v1/organizations", tc.body, own).apiError(400, "VALIDATION_ERROR", tc.field, tc.code)
		})
	}
	e.t = t
	e.do("POST", "/api/v1/organizations", `name=x`, own, header{"Content-Type": "application/x-www-form-urlencoded"}).
		apiError(400, "VALIDATION_ERROR", "header.Content-Type", "content_type")
	// Nothing of the failed attempts was written: the owner has the bootstrap organization
	// and the two created above.
	if l := e.do("GET", "/api/v1/organizations", nil, own).status(200); l.num("pagination.total") != 3 {
		t.Fatalf("organizations after failures: %s", l.Body)
	}
}

func TestOrgsListAndRoleFilter(t *testing.T) {
	e := newEnv(t)
	own := bearer(e.ownerToken)
	for i := 0; i < 4; i++ {
		e.do("POST", "/api/v1/organizations", map[string]any{"name": fmt.Sprintf("Org %d", i)}, own).status(201)
	}
	l := e.do("GET", "/api/v1/organizations?page=2&limit=2&role=owner", nil, own).status(200)
	if l.num("pagination.total") != 5 || l.num("pagination.pages") != 3 || l.len("organizations") != 2 ||
		l.get("pagination.has_next") != true || l.get("pagination.has_prev") != true {
		t.Fatalf("page 2: %s", l.Body)
	}
	if next := l.str("pagination.next_page_url"); !strings.HasPrefix(next, "/api/v1/organizations?") || !strings.Contains(next, "page=3") || !strings.Contains(next, "role=owner") {
		t.Fatalf("next_page_url: %s", next)
	}
	if l := e.do("GET", "/api/v1/organizations?role=member", nil, own).status(200); l.num("pagination.total") != 0 {
		t.Fatalf("owner listed as member: %s", l.Body)
	}
	_, dev := e.member(e.orgID, "developer")
	if l := e.do("GET", "/api/v1/organizations?role=member", nil, bearer(dev)).status(200); l.num("pagination.total") != 1 || l.str("organizations.0.user_role") != "developer" {
		t.Fatalf("member filter: %s", l.Body)
	}
	e.do("GET", "/api/v1/organizations?role=boss", nil, own).apiError(400, "VALIDATION_ERROR", "query.role", "enum")
	e.do("GET", "/api/v1/organizations?limit=101", nil, own).apiError(400, "VALIDATION_ERROR", "query.limit", "maximum")
	e.do("GET", "/api/v1/organizations?page=0", nil, own).apiError(400, "VALIDATION_ERROR", "query.page", "minimum")
}

func TestOrgsGetPatchDelete(t *testing.T) {
	e := newEnv(t)
	own := bearer(e.ownerToken)
	g := e.do("GET", "/api/v1/organizations/"+e.orgID, nil, own).status(200)
	if g.num("usage.users.count") != 1 || g.num("usage.users.limit") != 10 || g.num("usage.projects.count") != 1 || g.get("settings.security.two_factor_required") != false {
		t.Fatalf("detail: %s", g.Body)
	}
	_, dev := e.member(e.orgID, "developer")
	_, admin := e.member(e.orgID, "admin")
	r := e.do("PATCH", "/api/v1/organizations/"+e.orgID, map[string]any{"name": "Renamed"}, bearer(dev)).authError(403, "INSUFFICIENT_PERMISSIONS")
	if r.str("required_role") != "admin" || r.str("your_role") != "member" {
		t.Fatalf("403: %s", r.Body)
	}
	p := e.do("PATCH", "/api/v1/organizations/"+e.orgID, map[string]any{"name": "Renamed", "description": "about", "website": "https://acme.example"}, bearer(admin)).status(200)
	if p.str("name") != "Renamed" || p.str("website") != "https://acme.example" {
		t.Fatalf("patch: %s", p.Body)
	}
	if p = e.do("PATCH", "/api/v1/organizations/"+e.orgID, map[string]any{"description": ""}, bearer(admin)).status(200); p.get("description") != nil {
		t.Fatalf("empty description not cleared: %s", p.Body)
	}
	e.do("PATCH", "/api/v1/organizations/"+e.orgID, map[string]any{}, bearer(admin)).apiError(400, "VALIDATION_ERROR", "body", "minProperties")
	if e.countAuditRows(e.orgID, "organization.update") != 2 {
		t.Fatal("audit rows for the updates missing")
	}

	// Delete: owner only, confirmation must equal the slug, nothing changes otherwise.
	e.do("DELETE", "/api/v1/organizations/"+e.orgID, map[string]any{"confirmation": "default"}, bearer(admin)).authError(403, "INSUFFICIENT_PERMISSIONS")
	e.do("DELETE", "/api/v1/organizations/"+e.orgID, map[string]any{"confirmation": "wrong"}, own).apiError(400, "VALIDATION_ERROR", "body.confirmation", "mismatch")
	e.do("GET", "/api/v1/projects/"+e.projectID, nil, own).status(200)
	d := e.do("DELETE", "/api/v1/organizations/"+e.orgID, map[string]any{"confirmation": "default", "reason": "done"}, own).status(200)
	if d.num("projects_deleted") != 1 || d.num("projects_transferred") != 0 {
		t.Fatalf("delete: %s", d.Body)
	}
	e.do("GET", "/api/v1/organizations/"+e.orgID, nil, own).apiError(404, "NOT_FOUND")
	e.do("GET", "/api/v1/projects/"+e.projectID, nil, own).apiError(404, "NOT_FOUND")
	if e.countOutboxRows(e.orgID, "organization.deleted") != 1 || e.countAuditRows(e.orgID, "organization.delete") != 1 {
		t.Fatal("deletion not recorded in the outbox and the audit log")
	}
}

func TestOrgsDeleteWithTransfer(t *testing.T) {
	e := newEnv(t)
	own := bearer(e.ownerToken)
	target := e.do("POST", "/api/v1/organizations", map[string]any{"name": "Target"}, own).status(201).str("id")
	// A project of the same name already lives in the target: the moved one gets a suffix.
	e.do("POST", "/api/v1/organizations/"+target+"/projects", map[string]any{"name": "Default project"}, own).status(201)
	e.do("DELETE", "/api/v1/organizations/"+e.orgID, map[string]any{"confirmation": "default", "transfer_to": e.orgID}, own).
		apiError(400, "VALIDATION_ERROR", "body.transfer_to", "invalid")
	// An organization the caller is not in is refused like one that does not exist.
	e.do("DELETE", "/api/v1/organizations/"+e.orgID, map[string]any{"confirmation": "default", "transfer_to": "org_nosuchorg"}, own).
		apiError(400, "VALIDATION_ERROR", "body.transfer_to", "not_found")
	d := e.do("DELETE", "/api/v1/organizations/"+e.orgID, map[string]any{"confirmation": "default", "transfer_to": target}, own).status(200)
	if d.num("projects_transferred") != 1 || d.str("transferred_to") != target {
		t.Fatalf("transfer: %s", d.Body)
	}
	p := e.do("GET", "/api/v1/projects/"+e.projectID, nil, own).status(200)
	if p.str("organization_id") != target || p.str("name") != "Default project (default)" {
		t.Fatalf("moved project: %s", p.Body)
	}
}

func TestMembersInvitationFlow(t *testing.T) {
	e := newEnv(t)
	own := bearer(e.ownerToken)
	inv := e.do("POST", "/api/v1/organizations/"+e.orgID+"/invitations",
		map[string]any{"email": "new@example.com", "name": "New Person", "role": "analyst", "expires_in_days": 3}, own).status(201)
	url := inv.str("invitation_url")
	if !strings.HasPrefix(url, baseURL+"/api/v1/invitations/") || inv.str("status") != "pending" {
		t.Fatalf("invitation: %s", inv.Body)
	}
	tok := url[strings.LastIndex(url, "/")+1:]
	// Listed as invited.
	if l := e.do("GET", "/api/v1/organizations/"+e.orgID+"/users?status=invited", nil, own).status(200); l.num("pagination.total") != 1 || l.str("users.0.email") != "new@example.com" {
		t.Fatalf("invited list: %s", l.Body)
	}
	info := e.do("GET", "/api/v1/invitations/"+tok, nil).status(200)
	if info.str("role") != "analyst" || info.get("existing_user") != false {
		t.Fatalf("info: %s", info.Body)
	}
	e.do("POST", "/api/v1/invitations/"+tok+"/accept", map[string]any{"password": "long-enough"}).apiError(400, "VALIDATION_ERROR", "body.name", "required")
	e.do("POST", "/api/v1/invitations/"+tok+"/accept", map[string]any{"name": "N", "password": "short"}).apiError(400, "VALIDATION_ERROR", "body.password", "minLength")
	acc := e.do("POST", "/api/v1/invitations/"+tok+"/accept", map[string]any{"name": "New Person", "password": "long-enough"}).status(200)
	if acc.str("user.organization_id") != e.orgID || acc.str("user.roles.0") != "analyst" {
		t.Fatalf("accept: %s", acc.Body)
	}
	e.login("new@example.com", "long-enough", "")
	e.do("POST", "/api/v1/invitations/"+tok+"/accept", map[string]any{"name": "x", "password": "long-enough"}).apiError(404, "INVITATION_NOT_FOUND")
	if e.countAuditRows(e.orgID, "user.invite") != 1 || e.countAuditRows(e.orgID, "user.join") != 1 || e.countOutboxRows(e.orgID, "user.invited") != 1 || e.countOutboxRows(e.orgID, "user.joined") != 1 {
		t.Fatal("invitation not audited")
	}
	// Inviting an active member again is a conflict.
	e.do("POST", "/api/v1/organizations/"+e.orgID+"/invitations", map[string]any{"email": "NEW@example.com"}, own).apiError(409, "CONFLICT")
	// Owners are not invited; teams do not exist yet.
	e.do("POST", "/api/v1/organizations/"+e.orgID+"/invitations", map[string]any{"email": "o@example.com", "role": "owner"}, own).apiError(400, "VALIDATION_ERROR", "body.role", "enum")
	e.do("POST", "/api/v1/organizations/"+e.orgID+"/invitations", map[string]any{"email": "t@example.com", "teams": []string{"tm_1"}}, own).apiError(400, "VALIDATION_ERROR", "body.teams", "maxItems")
}

func TestMembersInvitationExpiryAndExistingUser(t *testing.T) {
	e := newEnv(t)
	own := bearer(e.ownerToken)
	first := e.do("POST", "/api/v1/organizations/"+e.orgID+"/invitations", map[string]any{"email": "late@example.com", "expires_in_days": 1}, own).status(201)
	again := e.do("POST", "/api/v1/organizations/"+e.orgID+"/invitations", map[string]any{"email": "late@example.com", "expires_in_days": 1}, own).status(201)
	tokOf := func(r *resp) string { u := r.str("invitation_url"); return u[strings.LastIndex(u, "/")+1:] }
	// Re-inviting replaced the first invitation.
	e.do("GET", "/api/v1/invitations/"+tokOf(first), nil).apiError(404, "INVITATION_NOT_FOUND")
	e.clock.Advance(24*time.Hour + time.Second)
	e.do("POST", "/api/v1/invitations/"+tokOf(again)+"/accept", map[string]any{"name": "L", "password": "long-enough"}).apiError(410, "INVITATION_EXPIRED")
	e.clock.Advance(-24*time.Hour - time.Second)

	// Someone with an account joins a second organization with their current password.
	second := e.do("POST", "/api/v1/organizations", map[string]any{"name": "Second"}, own).status(201).str("id")
	email, _ := e.member(e.orgID, "viewer")
	inv := e.do("POST", "/api/v1/organizations/"+second+"/invitations", map[string]any{"email": email, "role": "developer"}, own).status(201)
	if info := e.do("GET", "/api/v1/invitations/"+tokOf(inv), nil).status(200); info.get("existing_user") != true {
		t.Fatalf("existing user not recognised: %s", info.Body)
	}
	e.do("POST", "/api/v1/invitations/"+tokOf(inv)+"/accept", map[string]any{"name": "Changed", "password": "not-their-password"}).authError(401, "AUTH_REQUIRED")
	acc := e.do("POST", "/api/v1/invitations/"+tokOf(inv)+"/accept", map[string]any{"name": "Changed", "password": "password-viewer"}).status(200)
	if acc.str("user.name") != "User viewer" || acc.str("user.organization_id") != second {
		t.Fatalf("existing user accept changed the account or org: %s", acc.Body)
	}
}

func TestMembersPlanLimit(t *testing.T) {
	e := newEnv(t)
	own := bearer(e.ownerToken)
	for i := 0; i < 9; i++ { // the owner plus nine pending invitations: ten seats
		e.do("POST", "/api/v1/organizations/"+e.orgID+"/invitations", map[string]any{"email": fmt.Sprintf("p%d@example.com", i)}, own).status(201)
	}
	r := e.do("POST", "/api/v1/organizations/"+e.orgID+"/invitations", map[string]any{"email": "eleventh@example.com"}, own).apiError(422, "PLAN_LIMIT_EXCEEDED")
	if r.num("error.details.current_users") != 10 || r.num("error.details.plan_limit") != 10 || r.str("error.details.suggested_plan") != "team" {
		t.Fatalf("plan limit: %s", r.Body)
	}
}

func TestMembersRolesAndRemoval(t *testing.T) {
	e := newEnv(t)
	own := bearer(e.ownerToken)
	users := func(q string) *resp {
		return e.do("GET", "/api/v1/organizations/"+e.orgID+"/users"+q, nil, own).status(200)
	}
	_, admin := e.member(e.orgID, "admin")
	_, dev := e.member(e.orgID, "developer")
	devID := users("?role=developer").str("users.0.id")
	ownerID := users("?role=owner").str("users.0.id")
	if users("?search=DEVELOPER").num("pagination.total") != 1 {
		t.Fatal("search by email, case-insensitive")
	}
	r := e.do("PATCH", "/api/v1/organizations/"+e.orgID+"/users/"+devID, map[string]any{"role": "analyst"}, bearer(admin)).status(200)
	if r.str("role") != "analyst" {
		t.Fatalf("role change: %s", r.Body)
	}
	e.do("PATCH", "/api/v1/organizations/"+e.orgID+"/users/"+devID, map[string]any{"role": "owner"}, bearer(admin)).authError(403, "INSUFFICIENT_PERMISSIONS")
	e.do("PATCH", "/api/v1/organizations/"+e.orgID+"/users/"+ownerID, map[string]any{"role": "viewer"}, own).apiError(409, "CONFLICT")
	e.do("PATCH", "/api/v1/organizations/"+e.orgID+"/users/usr_nobody", map[string]any{"role": "viewer"}, own).apiError(404, "NOT_FOUND")
	e.do("PATCH", "/api/v1/organizations/"+e.orgID+"/users/"+devID, map[string]any{"role": "king"}, own).apiError(400, "VALIDATION_ERROR", "body.role", "enum")
	e.do("PATCH", "/api/v1/organizations/"+e.orgID+"/users/"+devID, map[string]any{"role": "viewer"}, bearer(dev)).authError(403, "INSUFFICIENT_PERMISSIONS")
	if e.countAuditRows(e.orgID, "user.role_change") != 1 {
		t.Fatal("role change not audited")
	}
	// The last owner cannot leave; the removed member loses access at once.
	e.do("DELETE", "/api/v1/organizations/"+e.orgID+"/users/"+ownerID, nil, own).apiError(409, "CONFLICT")
	e.do("DELETE", "/api/v1/organizations/"+e.orgID+"/users/"+devID, nil, bearer(admin)).status(204)
	e.do("GET", "/api/v1/organizations/"+e.orgID, nil, bearer(dev)).apiError(404, "NOT_FOUND")
	if e.countOutboxRows(e.orgID, "user.removed") != 1 {
		t.Fatal("removal event missing")
	}
	// Anyone may leave.
	adminID := users("?role=admin").str("users.0.id")
	e.do("DELETE", "/api/v1/organizations/"+e.orgID+"/users/"+adminID, nil, bearer(admin)).status(204)
}

func TestProjectsCRUDAndLimits(t *testing.T) {
	e := newEnv(t)
	own := bearer(e.ownerToken)
	base := "/api/v1/organizations/" + e.orgID + "/projects"
	p := e.do("POST", base, map[string]any{"name": "Sales", "description": "numbers"}, own).status(201)
	id := p.str("id")
	if p.num("dataset_count") != 0 || p.Header.Get("Location") != "/api/v1/projects/"+id {
		t.Fatalf("create: %s", p.Body)
	}
	e.do("POST", base, map[string]any{"name": "SALES"}, own).apiError(409, "CONFLICT")
	other := e.do("POST", "/api/v1/organizations", map[string]any{"name": "Other"}, own).status(201).str("id")
	e.do("POST", "/api/v1/organizations/"+other+"/projects", map[string]any{"name": "Sales"}, own).status(201)
	u := e.do("PATCH", "/api/v1/projects/"+id, map[string]any{"name": "Revenue", "description": ""}, own).status(200)
	if u.str("name") != "Revenue" || u.get("description") != nil {
		t.Fatalf("patch: %s", u.Body)
	}
	for i := 0; i < 8; i++ { // with the default project and Sales: the free plan's ten
		e.do("POST", base, map[string]any{"name": fmt.Sprintf("P%02d", i)}, own).status(201)
	}
	e.do("POST", base, map[string]any{"name": "eleventh"}, own).apiError(422, "PLAN_LIMIT_EXCEEDED")
	l := e.do("GET", base+"?limit=4&page=3&search=p0", nil, own).status(200)
	if l.num("pagination.total") != 8 || l.len("projects") != 0 || l.num("pagination.pages") != 2 {
		t.Fatalf("search page: %s", l.Body)
	}
	_, analyst := e.member(e.orgID, "analyst")
	e.do("GET", "/api/v1/projects/"+id, nil, bearer(analyst)).status(200)
	r := e.do("DELETE", "/api/v1/projects/"+id, nil, bearer(analyst)).authError(403, "PERMISSION_DENIED")
	if r.str("required_permission") != "datasets:delete" {
		t.Fatalf("403: %s", r.Body)
	}
	e.do("DELETE", "/api/v1/projects/"+id, nil, own).status(204)
	e.do("GET", "/api/v1/projects/"+id, nil, own).apiError(404, "NOT_FOUND")
	if e.countAuditRows(e.orgID, "project.delete") != 1 {
		t.Fatal("project deletion not audited")
	}
}

// An API key never exceeds its owner's role: a developer's key that lists organizations:manage
// still cannot change the organization.
func TestAPIKeyBoundedByOwnerRole(t *testing.T) {
	e := newEnv(t)
	_, dev := e.member(e.orgID, "developer")
	k := e.do("POST", "/api/v1/api-keys", map[string]any{"name": "k", "permissions": []string{"organizations:manage", "datasets:list"}}, bearer(dev)).status(201).str("key")
	e.do("GET", "/api/v1/projects/"+e.projectID, nil, apiKey(k)).status(200)
	e.do("PATCH", "/api/v1/organizations/"+e.orgID, map[string]any{"name": "x"}, apiKey(k)).authError(403, "INSUFFICIENT_PERMISSIONS")
	me := e.do("GET", "/api/v1/auth/me", nil, apiKey(k)).status(200)
	if me.len("organizations.0.permissions") != 1 {
		t.Fatalf("effective permissions of the key: %s", me.Body)
	}
}

func TestHTTPFoundation(t *testing.T) {
	e := newEnv(t, func(c *config.Config) { c.CORSOrigins = []string{"https://app.example"}; c.MaxBodyBytes = 1024 })
	check := func(r *resp) {
		t.Helper()
		for k, v := range map[string]string{"X-Content-Type-Options": "nosniff", "X-Frame-Options": "DENY", "X-XSS-Protection": "1; mode=block",
			"Strict-Transport-Security": "max-age=31536000", "Content-Security-Policy": "default-src 'self'"} {
			if r.Header.Get(k) != v {
				t.Fatalf("%s: header %s = %q, want %q", r.req, k, r.Header.Get(k), v)
			}
		}
		if r.Header.Get("X-Request-Id") == "" {
			t.Fatalf("%s: no X-Request-Id", r.req)
		}
	}
	check(e.do("GET", "/healthz", nil).status(200))
	check(e.do("GET", "/api/v1/auth/me", nil).status(401))
	check(e.do("GET", "/nope", nil).apiError(404, "NOT_FOUND"))
	r := e.do("GET", "/healthz", nil, header{"X-Request-Id": "client-id-123"})
	if r.Header.Get("X-Request-Id") != "client-id-123" {
		t.Fatal("well-formed client request id not echoed")
	}
	if r = e.do("GET", "/healthz", nil, header{"X-Request-Id": strings.Repeat("x", 300)}); len(r.Header.Get("X-Request-Id")) > 128 {
		t.Fatal("oversized client request id echoed")
	}
	if r := e.do("GET", "/readyz", nil).status(200); r.str("checks.database") != "ok" {
		t.Fatalf("readyz: %s", r.Body)
	}
	if r := e.do("GET", "/metrics", nil).status(200); !strings.Contains(string(r.Body), "dataplatform_http_requests_total") {
		t.Fatal("metrics missing the request counter")
	}
	j := e.do("GET", "/api/v1/openapi.json", nil).status(200)
	y := e.do("GET", "/api/v1/openapi.yaml", nil).status(200)
	if len(j.get("paths").(map[string]any)) < 20 || !strings.Contains(string(y.Body), "/api/v1/auth/login:") {
		t.Fatal("published description incomplete")
	}
	doc := e.do("GET", "/api/v1/errors/VALIDATION_ERROR", nil).status(200)
	if doc.num("status") != 400 {
		t.Fatalf("error doc: %s", doc.Body)
	}
	e.do("GET", "/api/v1/errors/NO_SUCH_CODE", nil).apiError(404, "NOT_FOUND")
	e.do("PUT", "/api/v1/auth/login", nil).apiError(405, "METHOD_NOT_ALLOWED")
	big := `{"name":"` + strings.Repeat("a", 2048) + `"}`
	e.do("POST", "/api/v1/organizations", big, bearer(e.ownerToken)).apiError(413, "PAYLOAD_TOO_LARGE")

	// CORS: the configured origin only.
	pre := e.do("OPTIONS", "/api/v1/organizations", nil, header{"Origin": "https://app.example", "Access-Control-Request-Method": "PATCH"})
	if pre.Header.Get("Access-Control-Allow-Origin") != "https://app.example" || pre.Header.Get("Access-Control-Allow-Credentials") != "true" ||
		pre.Header.Get("Access-Control-Max-Age") != "86400" || !strings.Contains(pre.Header.Get("Access-Control-Allow-Methods"), "PATCH") ||
		!strings.Contains(pre.Header.Get("Access-Control-Allow-Headers"), "X-API-Key") {
		t.Fatalf("preflight: %v", pre.Header)
	}
	foreign := e.do("OPTIONS", "/api/v1/organizations", nil, header{"Origin": "https://evil.example", "Access-Control-Request-Method": "GET"})
	if foreign.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Fatal("foreign origin allowed")
	}
	plain := newEnv(t)
	if r := plain.do("GET", "/healthz", nil, header{"Origin": "https://app.example"}); r.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Fatal("CORS headers without configured origins")
	}
}

func TestRateLimits(t *testing.T) {
	e := newEnv(t, func(c *config.Config) { c.RateLimits = "default=3-M,auth=2-M" })
	_, other := e.member(e.orgID, "viewer")
	own := bearer(e.ownerToken)
	var last int64 = 99
	for i := 0; i < 2; i++ { // newEnv's project listing was the owner's first request

		r := e.do("GET", "/api/v1/projects/"+e.projectID, nil, own).status(200)
		var rem int64
		fmt.Sscan(r.Header.Get("X-RateLimit-Remaining"), &rem)
		if r.Header.Get("X-RateLimit-Limit") != "3" || rem >= last {
			t.Fatalf("headers: %v", r.Header)
		}
		last = rem
	}
	r := e.do("GET", "/api/v1/projects/"+e.projectID, nil, own).apiError(429, "RATE_LIMIT_EXCEEDED")
	var reset int64
	fmt.Sscan(r.Header.Get("X-RateLimit-Reset"), &reset)
	if r.Header.Get("X-RateLimit-Remaining") != "0" || reset <= time.Now().Unix()-1 || r.Header.Get("X-RateLimit-Reset-After") == "" || r.Header.Get("Retry-After") == "" {
		t.Fatalf("429 headers: %v", r.Header)
	}
	e.do("GET", "/api/v1/projects/"+e.projectID, nil, bearer(other)).status(200)
	// Sign-in is limited per client address (the two member() sign-ins above used it up).
	e.do("POST", "/api/v1/auth/login", map[string]any{"email": adminEmail, "password": adminPassword}).apiError(429, "RATE_LIMIT_EXCEEDED")
	// Service endpoints are not limited.
	for i := 0; i < 5; i++ {
		e.do("GET", "/healthz", nil).status(200)
	}
}
