package tests

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"dataplatform/cmd/dataplatform/config"
)

// TestAuditLogs: the audit log lists an organization's changes newest first with actor,
// resource, details, address and agent; filters by actor, action (exact or family), resource
// type and dates; admins only (a key also needs organizations:manage); entries made with
// keys name the key; the total is counted up to 10,000 and paging goes on past it.
func TestAuditLogs(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	own := bearer(e.ownerToken)
	org := e.orgID
	logs := "/api/v1/organizations/" + org + "/audit-logs"
	anaEmail, anaTok := e.member(org, "analyst")
	team := e.do("POST", "/api/v1/organizations/"+org+"/teams", map[string]any{"name": "Ops"}, own).status(201).str("id")
	e.do("POST", "/api/v1/organizations/"+org+"/teams/"+team+"/members", map[string]any{"user_id": e.userIDOf(anaEmail)}, own).status(201)
	e.do("DELETE", "/api/v1/organizations/"+org+"/teams/"+team+"/members/"+e.userIDOf(anaEmail), nil, bearer(anaTok)).status(204) // leaves
	key := e.do("POST", "/api/v1/organizations/"+org+"/api-keys", map[string]any{"name": "Auditor",
		"permissions": []string{"organizations:manage", "datasets:write", "datasets:read"}}, own).status(201)
	k := header{"X-API-Key": key.str("key"), "User-Agent": "audit-test/1.0"}
	e.do("POST", "/api/v1/organizations/"+org+"/projects", map[string]any{"name": "From a key"}, k).status(201)

	all := e.do("GET", logs, nil, own).status(200)
	if all.str("logs.0.action") != "project.create" || all.str("logs.0.actor.name") != "Auditor" ||
		all.str("logs.0.details.api_key_id") != key.str("id") || all.str("logs.0.user_agent") != "audit-test/1.0" ||
		all.str("logs.0.resource.type") != "project" || all.str("logs.0.ip_address") == "" || all.get("total_capped") != false {
		t.Fatalf("newest entry: %s", all.Body)
	}
	first, _ := time.Parse(time.RFC3339Nano, all.str("logs.0.timestamp"))
	for i := 1; i < all.len("logs"); i++ {
		ts, _ := time.Parse(time.RFC3339Nano, all.str(fmt.Sprintf("logs.%d.timestamp", i)))
		if ts.After(first) {
			t.Fatalf("not newest first: %s", all.Body)
		}
		first = ts
	}
	count := func(query string) int {
		t.Helper()
		return e.do("GET", logs+query, nil, own).status(200).num("pagination.total")
	}
	if n := count("?action=team.create"); n != 1 {
		t.Fatalf("action filter: %d", n)
	}
	if n := count("?action=team.*"); n != 3 { // create, member_add, member_remove
		t.Fatalf("action family: %d", n)
	}
	if n := count("?resource_type=api_key"); n != 1 {
		t.Fatalf("resource type filter: %d", n)
	}
	if n := count("?actor_id=" + e.userIDOf(anaEmail)); n < 2 { // accepting the invitation, leaving the team
		t.Fatalf("actor filter: %d", n)
	}
	tomorrow := e.clock.Now().AddDate(0, 0, 1).Format(time.DateOnly)
	today := e.clock.Now().Format(time.DateOnly)
	if n := count("?start_date=" + tomorrow); n != 0 {
		t.Fatalf("start in the future: %d", n)
	}
	if n := count("?start_date=" + today + "&end_date=" + today); n != all.num("pagination.total") {
		t.Fatalf("today, inclusive: %d", n)
	}
	e.do("GET", logs+"?start_date="+tomorrow+"&end_date="+today, nil, own).apiError(400, "VALIDATION_ERROR", "query.end_date", "minimum")
	e.do("GET", logs+"?start_date=yesterday", nil, own).apiError(400, "VALIDATION_ERROR", "query.start_date", "format")
	e.do("GET", logs+"?action=DROP%20TABLE", nil, own).apiError(400, "VALIDATION_ERROR")
	e.do("GET", logs+"?actor=me", nil, own).apiError(400, "VALIDATION_ERROR")

	// Who may read it.
	if r := e.do("GET", logs, nil, bearer(anaTok)).authError(403, "INSUFFICIENT_PERMISSIONS"); r.str("required_role") != "admin" {
		t.Fatalf("refusal: %s", r.Body)
	}
	e.do("GET", "/api/v1/organizations/org_nothere/audit-logs", nil, own).apiError(404, "NOT_FOUND")
	e.do("GET", logs, nil, k).status(200)
	uk := e.do("POST", "/api/v1/api-keys", map[string]any{"name": "mine", "permissions": []string{"datasets:read"}}, own).status(201).str("key")
	e.do("GET", logs, nil, header{"X-API-Key": uk}).authError(403, "PERMISSION_DENIED")

	// A large log: the total stops at 10,000, paging goes on.
	if _, err := e.st.DB.Exec(`INSERT INTO platform.audit_log (organization_id, action, resource_type, created_at)
		SELECT $1, 'bulk.write', 'record', $2::timestamptz - make_interval(secs => g) FROM generate_series(1, 10050) g`, org, e.clock.Now()); err != nil {
		t.Fatal(err)
	}
	big := e.do("GET", logs+"?limit=100&page=100", nil, own).status(200)
	if big.num("pagination.total") != 10000 || big.get("total_capped") != true || big.get("pagination.has_next") != true || big.len("logs") != 100 {
		t.Fatalf("capped total: %s", strings.Split(string(big.Body), `"pagination"`)[1])
	}
	last := e.do("GET", logs+"?limit=100&page=101", nil, own).status(200)
	if last.len("logs") == 0 || last.get("pagination.has_next") != false {
		t.Fatalf("last page: %s", strings.Split(string(last.Body), `"pagination"`)[1])
	}
}

// TestAccessLogRedactsInvitationTokens: the access log shows an invitation's path without
// its token, whether it is read or accepted.
func TestAccessLogRedactsInvitationTokens(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *config.Config) { c.LogRequests = true })
	inv := e.do("POST", "/api/v1/organizations/"+e.orgID+"/invitations", map[string]any{"email": "secret@example.com"}, bearer(e.ownerToken)).status(201)
	tok := e.invitationToken(inv)
	e.do("GET", "/api/v1/invitations/"+tok, nil).status(200)
	e.do("POST", "/api/v1/invitations/"+tok+"/accept", map[string]any{"name": "S", "password": "password-secret"}).status(200)
	logs := e.logs.String()
	if strings.Contains(logs, tok) {
		t.Fatal("the access log holds an invitation token")
	}
	if !strings.Contains(logs, "/api/v1/invitations/[redacted]/accept") {
		t.Fatalf("no redacted line in the access log:\n%s", logs)
	}
}
