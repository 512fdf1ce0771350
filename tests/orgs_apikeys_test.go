package tests

import (
	"testing"
	"time"
)

// TestOrganizationApiKeys: an organization key acts as the organization with exactly its
// permissions, on that organization only; it outlives the member who made it, is no seat
// and no listed user, is audited as the key, is exempt from the two-factor requirement,
// and stops at once when revoked or expired. Only managers with a signed-in token mint keys,
// 10 a day.
func TestOrganizationApiKeys(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	own := bearer(e.ownerToken)
	org := e.orgID
	keys := "/api/v1/organizations/" + org + "/api-keys"
	ds := e.uploadAndCreate(e.ownerToken, "people", "people.csv", "name\nAnn\nBob\n")
	e.waitDataset(e.ownerToken, ds)
	usersBefore := e.do("GET", "/api/v1/organizations/"+org, nil, own).status(200).num("user_count")

	// Bad input changes nothing.
	e.do("POST", keys, map[string]any{"name": "x", "permissions": []string{"billing:manage"}}, own).apiError(400, "VALIDATION_ERROR")
	e.do("POST", keys, map[string]any{"name": "x", "permissions": []string{}}, own).apiError(400, "VALIDATION_ERROR")
	e.do("POST", keys, map[string]any{"name": "x", "permissions": []string{"datasets:read"}, "expires_at": e.clock.Now().Add(-time.Hour).Format(time.RFC3339)}, own).
		apiError(400, "VALIDATION_ERROR", "body.expires_at", "minimum")
	// Who may: organizations:manage, signed in (not with a key).
	_, devTok := e.member(org, "developer")
	e.do("GET", keys, nil, bearer(devTok)).authError(403, "PERMISSION_DENIED")
	e.do("POST", keys, map[string]any{"name": "x", "permissions": []string{"datasets:read"}}, bearer(devTok)).authError(403, "PERMISSION_DENIED")
	e.do("GET", "/api/v1/organizations/org_nothere/api-keys", nil, own).apiError(404, "NOT_FOUND")

	mgrEmail, mgrTok := e.member(org, "admin")
	c := e.do("POST", keys, map[string]any{"name": "Reporting", "description": "BI tool",
		"permissions": []string{"projects.read", "datasets.read", "queries.execute"}}, bearer(mgrTok)).status(201)
	secret, keyID := c.str("key"), c.str("id")
	if c.str("status") != "active" || c.str("created_by") != e.userIDOf(mgrEmail) || c.len("permissions") != 3 ||
		c.str("permissions.0") != "datasets:list" || c.str("permissions.1") != "datasets:read" || c.Header.Get("Cache-Control") != "no-store" {
		t.Fatalf("create: %s", c.Body)
	}
	k := header{"X-API-Key": secret}
	if l := e.do("GET", keys, nil, own).status(200); l.len("api_keys") != 1 || l.get("api_keys.0.key") != nil || l.str("api_keys.0.key_preview") == "" {
		t.Fatalf("list: %s", l.Body)
	}

	// Exactly its permissions, on this organization's resources.
	e.do("GET", "/api/v1/projects/"+e.projectID, nil, k).status(200)
	if r := e.do("GET", "/api/v1/datasets/"+ds+"/data", nil, k).status(200); r.len("data") != 2 {
		t.Fatalf("records with the key: %s", r.Body)
	}
	e.do("POST", "/api/v1/projects/"+e.projectID+"/queries/execute", map[string]any{"type": "sql", "query": "SELECT count(*) FROM people"}, k).status(200)
	e.do("POST", "/api/v1/datasets/"+ds+"/data", map[string]any{"name": "Cy"}, k).authError(403, "PERMISSION_DENIED")
	e.do("GET", "/api/v1/organizations/"+org+"/users", nil, k).status(200)
	e.do("POST", "/api/v1/organizations/"+org+"/teams", map[string]any{"name": "T"}, k).authError(403, "INSUFFICIENT_PERMISSIONS")
	other := e.do("POST", "/api/v1/organizations", map[string]any{"name": "Elsewhere"}, own).status(201).str("id")
	e.do("GET", "/api/v1/organizations/"+other+"/projects", nil, k).apiError(404, "NOT_FOUND")
	// Private projects too, like an admin.
	priv := e.do("POST", "/api/v1/organizations/"+org+"/projects", map[string]any{"name": "Private", "visibility": "private"}, own).status(201).str("id")
	e.do("GET", "/api/v1/projects/"+priv, nil, k).status(200)

	// Not a person: no seat, not listed; it outlives the member who made it.
	if u := e.do("GET", "/api/v1/organizations/"+org, nil, own).status(200); u.num("user_count") != usersBefore+2 {
		t.Fatalf("user_count counts the key: %s", u.Body)
	}
	for _, u := range e.do("GET", "/api/v1/organizations/"+org+"/users?limit=100", nil, own).status(200).get("users").([]any) {
		if u.(map[string]any)["name"] == "Reporting" {
			t.Fatal("the key's service account is listed as a user")
		}
	}
	e.do("DELETE", "/api/v1/organizations/"+org+"/users/"+e.userIDOf(mgrEmail), nil, own).status(204)
	e.do("GET", "/api/v1/projects/"+e.projectID, nil, k).status(200)

	// A writing key's changes are audited with the key as actor.
	w := e.do("POST", keys, map[string]any{"name": "Loader", "permissions": []string{"datasets:read", "datasets:write", "datasets:delete"}}, own).status(201)
	wk := header{"X-API-Key": w.str("key")}
	e.do("POST", "/api/v1/datasets/"+ds+"/data", map[string]any{"name": "Cy"}, wk).status(201)
	e.do("PATCH", "/api/v1/datasets/"+ds+"/data/3", map[string]any{"name": "Cyd"}, wk).status(200)
	e.do("DELETE", "/api/v1/datasets/"+ds+"/data/3", nil, wk).status(200)
	e.do("POST", "/api/v1/datasets/"+ds+"/data/bulk", map[string]any{"operations": []any{
		map[string]any{"method": "create", "data": map[string]any{"name": "Di"}}}}, wk).status(200)
	for _, action := range []string{"record.create", "record.update", "record.delete", "record.bulk"} {
		if n := e.countRows(`SELECT count(*) FROM platform.audit_log WHERE organization_id = '` + org + `' AND action = '` + action + `'
			AND resource_type = 'record' AND details->>'api_key_id' = '` + w.str("id") + `' AND details->>'dataset_id' = '` + ds + `'`); n != 1 {
			t.Fatalf("%s audit rows by the key: %d", action, n)
		}
	}
	e.do("POST", "/api/v1/organizations/"+org+"/projects", map[string]any{"name": "By key"}, wk).status(201)
	if n := e.countRows(`SELECT count(*) FROM platform.audit_log WHERE organization_id = '` + org + `' AND action = 'project.create'
		AND details->>'api_key_id' = '` + w.str("id") + `' AND actor_name = 'Loader'`); n != 1 {
		t.Fatalf("audit rows with the key as actor: %d", n)
	}
	if n := e.countAuditRows(org, "organization.api_key_create"); n != 2 {
		t.Fatalf("key creation audit rows: %d", n)
	}

	// Exempt from the two-factor requirement (a person's), unlike the members.
	if _, err := e.st.DB.Exec(`UPDATE platform.organizations SET settings = '{"security": {"two_factor_required": true}}' WHERE id = $1`, org); err != nil {
		t.Fatal(err)
	}
	e.eventually(func() bool { return e.do("GET", "/api/v1/projects/"+e.projectID, nil, bearer(devTok)).Code == 403 })
	e.do("GET", "/api/v1/projects/"+e.projectID, nil, k).status(200)
	if _, err := e.st.DB.Exec(`UPDATE platform.organizations SET settings = '{}' WHERE id = $1`, org); err != nil {
		t.Fatal(err)
	}
	e.eventually(func() bool { return e.do("GET", "/api/v1/projects/"+e.projectID, nil, bearer(devTok)).Code == 200 })

	// A key cannot mint or revoke keys, even with organizations:manage.
	mk := e.do("POST", keys, map[string]any{"name": "Admin key", "permissions": []string{"organizations:manage", "users:manage"}}, own).status(201)
	e.do("GET", keys, nil, header{"X-API-Key": mk.str("key")}).status(200)
	e.do("POST", keys, map[string]any{"name": "x", "permissions": []string{"datasets:read"}}, header{"X-API-Key": mk.str("key")}).authError(403, "PERMISSION_DENIED")
	e.do("DELETE", keys+"/"+keyID, nil, header{"X-API-Key": mk.str("key")}).authError(403, "PERMISSION_DENIED")

	// Revoked: 401 at once; a second revoke and another organization's key are 404.
	e.do("DELETE", keys+"/"+keyID, nil, own).status(204)
	e.do("GET", "/api/v1/projects/"+e.projectID, nil, k).authError(401, "AUTH_REQUIRED")
	e.do("DELETE", keys+"/"+keyID, nil, own).apiError(404, "NOT_FOUND")
	e.do("DELETE", "/api/v1/organizations/"+other+"/api-keys/"+w.str("id"), nil, own).apiError(404, "NOT_FOUND")
	if n := e.countAuditRows(org, "organization.api_key_revoke"); n != 1 {
		t.Fatalf("revoke audit rows: %d", n)
	}

	// Expired: 401.
	x := e.do("POST", keys, map[string]any{"name": "Short", "permissions": []string{"datasets:list"}, "expires_at": e.clock.Now().Add(time.Hour).Format(time.RFC3339)}, own).status(201)
	e.do("GET", "/api/v1/projects/"+e.projectID, nil, header{"X-API-Key": x.str("key")}).status(200)
	e.clock.Advance(2 * time.Hour)
	e.do("GET", "/api/v1/projects/"+e.projectID, nil, header{"X-API-Key": x.str("key")}).authError(401, "AUTH_REQUIRED")
	own = bearer(e.login(adminEmail, adminPassword, org).str("access_token")) // the first token expired meanwhile
	expired := false
	for _, k := range e.do("GET", keys, nil, own).status(200).get("api_keys").([]any) {
		expired = expired || k.(map[string]any)["id"] == x.str("id") && k.(map[string]any)["status"] == "expired"
	}
	if !expired {
		t.Fatal("the expired key is not listed as expired")
	}

	// 10 a day per organization, whoever made them; 4 made so far, refused attempts do not
	// count.
	for i := 0; i < 6; i++ {
		e.do("POST", keys, map[string]any{"name": "More", "permissions": []string{"datasets:list"}}, own).status(201)
	}
	r := e.do("POST", keys, map[string]any{"name": "One too many", "permissions": []string{"datasets:list"}}, own).apiError(429, "RATE_LIMIT_EXCEEDED")
	if r.Header.Get("Retry-After") == "" || r.num("error.details.limit") != 10 {
		t.Fatalf("limit answer: %s %v", r.Body, r.Header)
	}
	e.clock.Advance(23 * time.Hour)
	e.do("POST", keys, map[string]any{"name": "Next day", "permissions": []string{"datasets:list"}}, bearer(e.login(adminEmail, adminPassword, org).str("access_token"))).status(201)
}
