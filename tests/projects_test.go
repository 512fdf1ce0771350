package tests

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"
)

func TestProjectCRUD(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	own := bearer(e.ownerToken)
	ownerID := e.userIDOf(adminEmail)
	base := "/api/v1/organizations/" + e.orgID + "/projects"

	c := e.do("POST", base, map[string]any{"name": "Sales", "description": "numbers"}, own).status(201)
	id := c.str("id")
	if !regexp.MustCompile(`^prj_[a-z0-9]+$`).MatchString(id) || c.Header.Get("Location") != "/api/v1/projects/"+id {
		t.Fatalf("id %s, Location %q", id, c.Header.Get("Location"))
	}
	if c.str("name") != "Sales" || c.str("description") != "numbers" || c.str("organization_id") != e.orgID || c.num("dataset_count") != 0 ||
		c.str("created_by") != ownerID || c.str("created_at") != c.str("updated_at") {
		t.Fatalf("create: %s", c.Body)
	}
	if e.countAuditRows(e.orgID, "project.create") != 1 {
		t.Fatal("project.create not audited")
	}
	g := e.do("GET", "/api/v1/projects/"+id, nil, own).status(200)
	if string(g.Body) != string(c.Body) {
		t.Fatalf("read differs from create:\n%s\n%s", g.Body, c.Body)
	}
	// An empty description is no description.
	if r := e.do("POST", base, map[string]any{"name": "Bare", "description": ""}, own).status(201); r.get("description") != nil {
		t.Fatalf("empty description: %s", r.Body)
	}

	e.clock.Advance(time.Minute)
	u := e.do("PATCH", "/api/v1/projects/"+id, map[string]any{"name": "Revenue"}, own).status(200)
	if u.str("name") != "Revenue" || u.str("description") != "numbers" || u.str("updated_at") == c.str("updated_at") || u.str("created_at") != c.str("created_at") {
		t.Fatalf("rename: %s", u.Body)
	}
	u = e.do("PATCH", "/api/v1/projects/"+id, map[string]any{"description": ""}, own).status(200)
	if u.get("description") != nil || u.str("name") != "Revenue" {
		t.Fatalf("clearing the description: %s", u.Body)
	}
	// Renaming to itself in other letters is fine.
	if u = e.do("PATCH", "/api/v1/projects/"+id, map[string]any{"name": "REVENUE"}, own).status(200); u.str("name") != "REVENUE" {
		t.Fatalf("case rename: %s", u.Body)
	}
	if n := e.countAuditRows(e.orgID, "project.update"); n != 3 {
		t.Fatalf("%d project.update rows, want 3", n)
	}

	for _, tc := range []struct{ name, method, path, body, field, code string }{
		{"create without name", "POST", base, `{}`, "body.name", "required"},
		{"create empty name", "POST", base, `{"name":""}`, "body.name", "minLength"},
		{"create long name", "POST", base, `{"name":"` + strings.Repeat("n", 256) + `"}`, "body.name", "maxLength"},
		{"create long description", "POST", base, `{"name":"x","description":"` + strings.Repeat("d", 2001) + `"}`, "body.description", "maxLength"},
		{"create unknown field", "POST", base, `{"name":"x","organization_id":"org_x"}`, "body.organization_id", "unknown_field"},
		{"create case variant", "POST", base, `{"name":"x","Name":"y"}`, "body.Name", "unknown_field"},
		{"create duplicate key", "POST", base, `{"name":"x","name":"y"}`, "body.name", "duplicate"},
		{"create malformed", "POST", base, `{"name":"x"`, "body", "invalid_json"},
		{"patch nothing", "PATCH", "/api/v1/projects/" + id, `{}`, "body", "minProperties"},
		{"patch empty name", "PATCH", "/api/v1/projects/" + id, `{"name":""}`, "body.name", "minLength"},
		{"patch unknown field", "PATCH", "/api/v1/projects/" + id, `{"dataset_count":3}`, "body.dataset_count", "unknown_field"},
	} {
		e.subtest(t, tc.name, func(t *testing.T) {
			e.do(tc.method, tc.path, tc.body, own).apiError(400, "VALIDATION_ERROR", tc.field, tc.code)
		})
	}
	e.do("POST", base, `{"name":"x"}`, own, header{"Content-Type": "text/plain"}).apiError(400, "VALIDATION_ERROR", "header.Content-Type", "content_type")

	e.do("DELETE", "/api/v1/projects/"+id, nil, own).status(204)
	e.do("GET", "/api/v1/projects/"+id, nil, own).apiError(404, "NOT_FOUND")
	e.do("PATCH", "/api/v1/projects/"+id, map[string]any{"name": "x"}, own).apiError(404, "NOT_FOUND")
	e.do("DELETE", "/api/v1/projects/"+id, nil, own).apiError(404, "NOT_FOUND")
	if e.countAuditRows(e.orgID, "project.delete") != 1 {
		t.Fatal("project.delete not audited")
	}
	// The name is free again.
	e.do("POST", base, map[string]any{"name": "Revenue"}, own).status(201)
	e.do("GET", base, nil).authError(401, "AUTH_REQUIRED")
	e.do("GET", "/api/v1/projects/"+e.projectID, nil).authError(401, "AUTH_REQUIRED")
}

func TestProjectNameUniquePerOrganization(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	own := bearer(e.ownerToken)
	base := "/api/v1/organizations/" + e.orgID + "/projects"
	sales := e.do("POST", base, map[string]any{"name": "Sales"}, own).status(201).str("id")
	for _, name := range []string{"Sales", "SALES", "sales", "Default Project"} {
		r := e.do("POST", base, map[string]any{"name": name}, own).apiError(409, "CONFLICT")
		if detailField(r) != "name" {
			t.Fatalf("409 for %q: %s", name, r.Body)
		}
	}
	r := e.do("PATCH", "/api/v1/projects/"+sales, map[string]any{"name": "default project"}, own).apiError(409, "CONFLICT")
	if detailField(r) != "name" {
		t.Fatalf("409 on rename: %s", r.Body)
	}
	if g := e.do("GET", "/api/v1/projects/"+sales, nil, own).status(200); g.str("name") != "Sales" {
		t.Fatalf("refused rename changed the name: %s", g.Body)
	}
	// Another organization may use the same names.
	other := e.do("POST", "/api/v1/organizations", map[string]any{"name": "Other"}, own).status(201).str("id")
	for _, name := range []string{"Sales", "Default project"} {
		p := e.do("POST", "/api/v1/organizations/"+other+"/projects", map[string]any{"name": name}, own).status(201)
		if p.str("organization_id") != other {
			t.Fatalf("project in the other organization: %s", p.Body)
		}
	}
}

func TestProjectListSearchAndPagination(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	own := bearer(e.ownerToken)
	base := "/api/v1/organizations/" + e.orgID + "/projects"
	e.setPlan(e.orgID, "pro")  // the free plan stops at ten
	for i := 1; i <= 24; i++ { // with the default project: 25
		e.clock.Advance(time.Second) // newest first
		name := fmt.Sprintf("Alpha %02d", i)
		if i%2 == 0 {
			name = fmt.Sprintf("Beta %02d", i)
		}
		e.do("POST", base, map[string]any{"name": name}, own).status(201)
	}
	pages := []struct {
		page, n         int
		first           string
		hasNext, hasPrv bool
	}{
		{1, 10, "Beta 24", true, false},
		{2, 10, "Beta 14", true, true},
		{3, 5, "Beta 04", false, true},
	}
	for _, pc := range pages {
		l := e.do("GET", fmt.Sprintf("%s?limit=10&page=%d", base, pc.page), nil, own).status(200)
		if l.num("pagination.total") != 25 || l.num("pagination.pages") != 3 || l.num("pagination.page") != pc.page || l.num("pagination.limit") != 10 ||
			l.len("projects") != pc.n || l.str("projects.0.name") != pc.first || l.get("pagination.has_next") != pc.hasNext || l.get("pagination.has_prev") != pc.hasPrv {
			t.Fatalf("page %d: %s", pc.page, l.Body)
		}
		if pc.page == 3 && l.str("projects.4.name") != "Default project" {
			t.Fatalf("oldest last: %s", l.Body)
		}
		if q := pageQuery(t, base, l.str("pagination.last_page_url")); q.Get("page") != "3" || q.Get("limit") != "10" {
			t.Fatalf("last_page_url: %s", l.Body)
		}
	}
	// Search: case-insensitive substring of the name, paginated with the term kept.
	l := e.do("GET", base+"?search=BETA&limit=5&page=2", nil, own).status(200)
	if l.num("pagination.total") != 12 || l.num("pagination.pages") != 3 || l.len("projects") != 5 || l.str("projects.0.name") != "Beta 14" {
		t.Fatalf("search: %s", l.Body)
	}
	if q := pageQuery(t, base, l.str("pagination.next_page_url")); q.Get("search") != "BETA" || q.Get("page") != "3" {
		t.Fatalf("next_page_url: %s", l.Body)
	}
	// A page past the end of a search is empty and keeps the totals.
	l = e.do("GET", base+"?search=beta&limit=5&page=4", nil, own).status(200)
	if l.num("pagination.total") != 12 || l.num("pagination.pages") != 3 || l.len("projects") != 0 || l.get("pagination.has_next") != false {
		t.Fatalf("past the end of a search: %s", l.Body)
	}
	for _, tc := range []struct {
		q     string
		total int
	}{
		{"?search=alpha+0", 5}, {"?search=default", 1}, {"?search=%25", 0}, {"?search=_", 0}, {"?search=gamma", 0},
	} {
		if l := e.do("GET", base+tc.q, nil, own).status(200); l.num("pagination.total") != tc.total {
			t.Fatalf("%s: %s", tc.q, l.Body)
		}
	}
	for _, tc := range []struct{ q, field, code string }{
		{"?limit=0", "query.limit", "minimum"},
		{"?limit=101", "query.limit", "maximum"},
		{"?limit=-1", "query.limit", "minimum"},
		{"?limit=ten", "query.limit", "type"},
		{"?page=0", "query.page", "minimum"},
		{"?page=-3", "query.page", "minimum"},
		{"?search=" + strings.Repeat("s", 256), "query.search", "maxLength"},
	} {
		e.do("GET", base+tc.q, nil, own).apiError(400, "VALIDATION_ERROR", tc.field, tc.code)
	}
	if l := e.do("GET", base+"?limit=100", nil, own).status(200); l.len("projects") != 25 {
		t.Fatalf("limit 100: %s", l.Body)
	}
}

func TestProjectPermissions(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	own := bearer(e.ownerToken)
	base := "/api/v1/organizations/" + e.orgID + "/projects"
	prj := "/api/v1/projects/" + e.projectID
	_, viewer := e.member(e.orgID, "viewer")
	_, analyst := e.member(e.orgID, "analyst")
	devMail, dev := e.member(e.orgID, "developer")

	type op struct {
		method, path string
		body         any
		perm         string
	}
	create := op{"POST", base, map[string]any{"name": "New"}, "datasets:write"}
	patch := op{"PATCH", prj, map[string]any{"description": "d"}, "datasets:write"}
	remove := op{"DELETE", prj, nil, "datasets:delete"}
	for _, tc := range []struct {
		who, tok string
		denied   []op
	}{
		{"viewer", viewer, []op{create, patch, remove}},
		{"analyst", analyst, []op{create, patch, remove}},
	} {
		e.subtest(t, tc.who, func(t *testing.T) {
			e.do("GET", prj, nil, bearer(tc.tok)).status(200)
			e.do("GET", base, nil, bearer(tc.tok)).status(200)
			for _, o := range tc.denied {
				r := e.do(o.method, o.path, o.body, bearer(tc.tok)).authError(403, "PERMISSION_DENIED")
				if r.str("required_permission") != o.perm || r.str("error") != "forbidden" {
					t.Fatalf("%s %s: %s", o.method, o.path, r.Body)
				}
			}
		})
	}
	// A developer creates, changes and deletes.
	p := e.do("POST", base, map[string]any{"name": "Dev's"}, bearer(dev)).status(201)
	if p.str("created_by") != e.userIDOf(devMail) {
		t.Fatalf("created_by: %s", p.Body)
	}
	e.do("PATCH", "/api/v1/projects/"+p.str("id"), map[string]any{"name": "Renamed"}, bearer(dev)).status(200)
	e.do("DELETE", "/api/v1/projects/"+p.str("id"), nil, bearer(dev)).status(204)
	e.do("PATCH", prj, map[string]any{"description": "by dev"}, bearer(dev)).status(200)

	// Members of other organizations see nothing.
	other := e.do("POST", "/api/v1/organizations", map[string]any{"name": "Other"}, own).status(201).str("id")
	op2 := e.do("POST", "/api/v1/organizations/"+other+"/projects", map[string]any{"name": "Hidden"}, own).status(201).str("id")
	for _, o := range []op{
		{"GET", "/api/v1/projects/" + op2, nil, ""},
		{"PATCH", "/api/v1/projects/" + op2, map[string]any{"name": "x"}, ""},
		{"DELETE", "/api/v1/projects/" + op2, nil, ""},
		{"GET", "/api/v1/organizations/" + other + "/projects", nil, ""},
		{"POST", "/api/v1/organizations/" + other + "/projects", map[string]any{"name": "x"}, ""},
	} {
		e.do(o.method, o.path, o.body, bearer(dev)).apiError(404, "NOT_FOUND")
	}
}

func TestProjectAPIKeyPermissions(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	own := bearer(e.ownerToken)
	prj := "/api/v1/projects/" + e.projectID
	base := "/api/v1/organizations/" + e.orgID + "/projects"
	ro := e.do("POST", "/api/v1/api-keys", map[string]any{"name": "ro", "permissions": []string{"datasets:list"}}, own).status(201).str("key")
	e.do("GET", prj, nil, apiKey(ro)).status(200)
	e.do("GET", base, nil, apiKey(ro)).status(200)
	for _, tc := range []struct {
		method, path string
		body         any
		perm         string
	}{
		{"PATCH", prj, map[string]any{"name": "x"}, "datasets:write"},
		{"POST", base, map[string]any{"name": "x"}, "datasets:write"},
		{"DELETE", prj, nil, "datasets:delete"},
	} {
		if r := e.do(tc.method, tc.path, tc.body, apiKey(ro)).authError(403, "PERMISSION_DENIED"); r.str("required_permission") != tc.perm {
			t.Fatalf("%s %s with a read-only key: %s", tc.method, tc.path, r.Body)
		}
	}
	// A key with write but not list cannot read.
	wo := e.do("POST", "/api/v1/api-keys", map[string]any{"name": "wo", "permissions": []string{"datasets:write"}}, own).status(201).str("key")
	if r := e.do("GET", prj, nil, apiKey(wo)).authError(403, "PERMISSION_DENIED"); r.str("required_permission") != "datasets:list" {
		t.Fatalf("write-only key reading: %s", r.Body)
	}
	e.do("PATCH", prj, map[string]any{"description": "by key"}, apiKey(wo)).status(200)
	if e.countAuditRows(e.orgID, "project.update") != 1 {
		t.Fatal("change by key not audited")
	}
}

// An API key never exceeds its owner's role: what it lists beyond the role is ignored, and a
// demotion of the owner narrows the key at once.
func TestProjectAPIKeyBoundedByRole(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	own := bearer(e.ownerToken)
	devMail, dev := e.member(e.orgID, "developer")
	devID := e.userIDOf(devMail)
	k := e.do("POST", "/api/v1/api-keys", map[string]any{"name": "k",
		"permissions": []string{"organizations:manage", "users:manage", "datasets:list", "datasets:write"}}, bearer(dev)).status(201).str("key")
	e.do("GET", "/api/v1/projects/"+e.projectID, nil, apiKey(k)).status(200)
	r := e.do("PATCH", "/api/v1/organizations/"+e.orgID, map[string]any{"name": "x"}, apiKey(k)).authError(403, "INSUFFICIENT_PERMISSIONS")
	if r.str("required_role") != "admin" || r.str("your_role") != "member" {
		t.Fatalf("403: %s", r.Body)
	}
	e.do("POST", "/api/v1/organizations/"+e.orgID+"/invitations", map[string]any{"email": "x@example.com"}, apiKey(k)).authError(403, "INSUFFICIENT_PERMISSIONS")
	e.do("PATCH", "/api/v1/organizations/"+e.orgID+"/users/"+devID, map[string]any{"role": "admin"}, apiKey(k)).authError(403, "INSUFFICIENT_PERMISSIONS")
	me := e.do("GET", "/api/v1/auth/me", nil, apiKey(k)).status(200)
	if me.len("organizations.0.permissions") != 2 || me.str("auth_method") != "api_key" {
		t.Fatalf("effective permissions of the key: %s", me.Body)
	}
	if g := e.do("GET", "/api/v1/organizations/"+e.orgID, nil, apiKey(k)).status(200); g.get("name") != "Default organization" {
		t.Fatalf("org unchanged: %s", g.Body)
	}
	// The key works for writes while its owner is a developer...
	e.do("PATCH", "/api/v1/projects/"+e.projectID, map[string]any{"description": "by key"}, apiKey(k)).status(200)
	// ...and not once the owner is demoted to viewer.
	e.do("PATCH", "/api/v1/organizations/"+e.orgID+"/users/"+devID, map[string]any{"role": "viewer"}, own).status(200)
	if r := e.do("PATCH", "/api/v1/projects/"+e.projectID, map[string]any{"description": "again"}, apiKey(k)).authError(403, "PERMISSION_DENIED"); r.str("required_permission") != "datasets:write" {
		t.Fatalf("403: %s", r.Body)
	}
	e.do("GET", "/api/v1/projects/"+e.projectID, nil, apiKey(k)).status(200)
}

func TestProjectPlanLimit(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	own := bearer(e.ownerToken)
	base := "/api/v1/organizations/" + e.orgID + "/projects"
	var ids []string
	for i := 0; i < 9; i++ { // with the default project: the free plan's ten
		ids = append(ids, e.do("POST", base, map[string]any{"name": fmt.Sprintf("P%02d", i)}, own).status(201).str("id"))
	}
	r := e.do("POST", base, map[string]any{"name": "eleventh"}, own).apiError(422, "PLAN_LIMIT_EXCEEDED")
	if r.num("error.details.current_projects") != 10 || r.num("error.details.plan_limit") != 10 || r.str("error.details.suggested_plan") != "pro" {
		t.Fatalf("422: %s", r.Body)
	}
	if l := e.do("GET", base, nil, own).status(200); l.num("pagination.total") != 10 {
		t.Fatalf("refused project stored: %s", l.Body)
	}
	// Deleting one frees a place; upgrading raises the limit.
	e.do("DELETE", "/api/v1/projects/"+ids[0], nil, own).status(204)
	e.do("POST", base, map[string]any{"name": "eleventh"}, own).status(201)
	e.do("POST", base, map[string]any{"name": "twelfth"}, own).apiError(422, "PLAN_LIMIT_EXCEEDED")
	e.setPlan(e.orgID, "pro")
	e.do("POST", base, map[string]any{"name": "twelfth"}, own).status(201)
}
