package tests

import (
	"strings"
	"testing"
	"time"
)

// TestOrganizationApiKeys: an organization key acts as the organization with exactly its
// permissions, on that organization only; it stops with the admin role of the member who made
// it (TestOrganizationApiKeyOwner), is no seat and no listed user, is audited as the key, is exempt from the two-factor requirement,
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

	// Not a person: no seat, not listed; it belongs to the member who made it, and is
	// suspended when they leave until an admin re-assigns it.
	if u := e.do("GET", "/api/v1/organizations/"+org, nil, own).status(200); u.num("user_count") != usersBefore+2 {
		t.Fatalf("user_count counts the key: %s", u.Body)
	}
	for _, u := range e.do("GET", "/api/v1/organizations/"+org+"/users?limit=100", nil, own).status(200).get("users").([]any) {
		if u.(map[string]any)["name"] == "Reporting" {
			t.Fatal("the key's service account is listed as a user")
		}
	}
	e.do("DELETE", "/api/v1/organizations/"+org+"/users/"+e.userIDOf(mgrEmail), nil, own).status(204)
	e.do("GET", "/api/v1/projects/"+e.projectID, nil, k).authError(401, "API_KEY_OWNER_ACCESS_LOST")
	e.do("POST", keys+"/"+keyID+"/assign", nil, own).status(200)
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

// TestOrganizationApiKeyOwner: an organization key belongs to a member who must keep the role
// that creates keys (admin or owner). Its creator removed or demoted, the key is refused
// everywhere (401 API_KEY_OWNER_ACCESS_LOST) and its open streams end, until an admin, signed
// in, re-assigns it to themselves (or the owner gets the role back). A user's own keys of a
// removed member reach nothing of the organization.
func TestOrganizationApiKeyOwner(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	own := bearer(e.ownerToken)
	org := e.orgID
	keys := "/api/v1/organizations/" + org + "/api-keys"
	users := "/api/v1/organizations/" + org + "/users/"
	invitations := "/api/v1/organizations/" + org + "/invitations"
	ds := e.uploadAndCreate(e.ownerToken, "people", "people.csv", "name\nAnn\n")
	e.waitDataset(e.ownerToken, ds)
	ownerID := e.do("GET", "/api/v1/auth/me", nil, own).status(200).str("id")
	roleOf := func(userID string) string {
		var role string
		if err := e.st.DB.Get(&role, `SELECT role FROM platform.memberships WHERE organization_id = $1 AND user_id = $2`, org, userID); err != nil {
			t.Fatal(err)
		}
		return role
	}
	statusOf := func(keyID string) string {
		for _, k := range e.do("GET", keys+"?limit=100", nil, own).status(200).get("api_keys").([]any) {
			if k.(map[string]any)["id"] == keyID {
				return k.(map[string]any)["status"].(string)
			}
		}
		return "not listed"
	}
	lost := func(r *resp) {
		t.Helper()
		r.authError(401, "API_KEY_OWNER_ACCESS_LOST")
		if !strings.Contains(r.str("message"), "assign") {
			t.Fatalf("the refusal does not say how to restore the key: %s", r.Body)
		}
	}

	creatorEmail, creatorTok := e.member(org, "admin")
	creatorID := e.userIDOf(creatorEmail)
	c := e.do("POST", keys, map[string]any{"name": "Provisioner", "permissions": []string{"users:manage", "organizations:manage", "datasets:list", "datasets:read"}},
		bearer(creatorTok)).status(201)
	k, keyID := apiKey(c.str("key")), c.str("id")
	viewerEmail, _ := e.member(org, "viewer")
	viewerID := e.userIDOf(viewerEmail)
	e.do("GET", strings.TrimSuffix(users, "/"), nil, k).status(200)
	if s := statusOf(keyID); s != "active" {
		t.Fatalf("status while the creator is an admin: %s", s)
	}
	stream, stop := e.openStream("/api/v1/datasets/"+ds+"/data/stream", k)
	defer stop()

	// The creator leaves: every endpoint refuses the key; nothing changes.
	e.do("DELETE", users+creatorID, nil, own).status(204)
	lost(e.do("PATCH", users+viewerID, map[string]any{"role": "admin"}, k))
	lost(e.do("POST", invitations, map[string]any{"email": "sneaky@example.com", "role": "admin"}, k))
	lost(e.do("GET", "/api/v1/organizations/"+org, nil, k))
	lost(e.do("GET", keys, nil, k))
	lost(e.do("GET", "/api/v1/projects/"+e.projectID, nil, k))
	lost(e.do("GET", "/api/v1/datasets/"+ds+"/data", nil, k))
	if r := roleOf(viewerID); r != "viewer" {
		t.Fatalf("the viewer became %s", r)
	}
	if n := e.countRows(`SELECT count(*) FROM platform.invitations WHERE email = 'sneaky@example.com'`); n != 0 {
		t.Fatalf("invitations made by the key: %d", n)
	}
	// Its open stream ends before the next change.
	e.do("POST", "/api/v1/datasets/"+ds+"/data", map[string]any{"name": "Bo"}, own).status(201)
	if ev := next(t, stream, true); ev.name != "error" || ev.data["code"] != "API_KEY_OWNER_ACCESS_LOST" {
		t.Fatalf("the key's stream after its owner left: %+v", ev)
	}
	if s := statusOf(keyID); s != "suspended" {
		t.Fatalf("listed status after the creator left: %s", s)
	}

	// Re-assigning: an admin signed in, not a key (not even another working one), not a developer.
	assign := keys + "/" + keyID + "/assign"
	other := e.do("POST", keys, map[string]any{"name": "Other", "permissions": []string{"organizations:manage"}}, own).status(201)
	e.do("POST", assign, nil, apiKey(other.str("key"))).authError(403, "PERMISSION_DENIED")
	lost(e.do("POST", assign, nil, k))
	_, devTok := e.member(org, "developer")
	e.do("POST", assign, nil, bearer(devTok)).authError(403, "PERMISSION_DENIED")
	e.do("POST", keys+"/key_nothere/assign", nil, own).apiError(404, "NOT_FOUND")
	a := e.do("POST", assign, nil, own).status(200)
	if a.str("created_by") != ownerID || a.str("status") != "active" || a.str("id") != keyID || a.get("key") != nil {
		t.Fatalf("assign: %s", a.Body)
	}
	if n := e.countAuditRows(org, "organization.api_key_assign"); n != 1 {
		t.Fatalf("assign audit rows: %d", n)
	}
	// The same secret works again, with its permissions.
	e.do("PATCH", users+viewerID, map[string]any{"role": "admin"}, k).status(200)
	e.do("POST", invitations, map[string]any{"email": "new-admin@example.com", "role": "admin"}, k).status(201)
	if r := roleOf(viewerID); r != "admin" {
		t.Fatalf("promoted by the re-assigned key: %s", r)
	}

	// The creator demoted below admin: the same; back to admin, the key works again.
	demotedEmail, demotedTok := e.member(org, "admin")
	demotedID := e.userIDOf(demotedEmail)
	k2 := apiKey(e.do("POST", keys, map[string]any{"name": "Second", "permissions": []string{"users:manage", "organizations:manage", "datasets:list"}},
		bearer(demotedTok)).status(201).str("key"))
	viewer2Email, _ := e.member(org, "viewer")
	viewer2ID := e.userIDOf(viewer2Email)
	e.do("PATCH", users+demotedID, map[string]any{"role": "developer"}, own).status(200)
	lost(e.do("PATCH", users+viewer2ID, map[string]any{"role": "admin"}, k2))
	lost(e.do("POST", invitations, map[string]any{"email": "sneaky2@example.com", "role": "admin"}, k2))
	if r := roleOf(viewer2ID); r != "viewer" {
		t.Fatalf("the second viewer became %s", r)
	}
	e.do("PATCH", users+demotedID, map[string]any{"role": "admin"}, own).status(200)
	e.do("GET", strings.TrimSuffix(users, "/"), nil, k2).status(200)
	// Its owner's account disabled (behind the server's back: it hears by notification): the same.
	if _, err := e.st.DB.Exec(`UPDATE platform.users SET status = 'disabled' WHERE id = $1`, demotedID); err != nil {
		t.Fatal(err)
	}
	e.eventually(func() bool { return e.do("GET", strings.TrimSuffix(users, "/"), nil, k2).Code == 401 })
	lost(e.do("GET", strings.TrimSuffix(users, "/"), nil, k2))

	// A user's own key, of a member who is removed: the organization is gone for it.
	personEmail, personTok := e.member(org, "admin")
	personID := e.userIDOf(personEmail)
	uk := apiKey(e.do("POST", "/api/v1/api-keys", map[string]any{"name": "mine",
		"permissions": []string{"users:manage", "organizations:manage", "datasets:list", "datasets:read"}}, bearer(personTok)).status(201).str("key"))
	viewer3Email, _ := e.member(org, "viewer")
	viewer3ID := e.userIDOf(viewer3Email)
	e.do("GET", "/api/v1/organizations/"+org, nil, uk).status(200)
	e.do("GET", "/api/v1/datasets/"+ds+"/data", nil, uk).status(200)
	e.do("DELETE", users+personID, nil, own).status(204)
	e.do("PATCH", users+viewer3ID, map[string]any{"role": "admin"}, uk).apiError(404, "NOT_FOUND")
	e.do("POST", invitations, map[string]any{"email": "sneaky3@example.com", "role": "admin"}, uk).apiError(404, "NOT_FOUND")
	e.do("GET", "/api/v1/organizations/"+org, nil, uk).apiError(404, "NOT_FOUND")
	e.do("GET", "/api/v1/projects/"+e.projectID, nil, uk).apiError(404, "NOT_FOUND")
	e.do("GET", "/api/v1/datasets/"+ds+"/data", nil, uk).apiError(404, "DATASET_NOT_FOUND")
	if l := e.do("GET", "/api/v1/organizations", nil, uk).status(200); l.len("organizations") != 0 {
		t.Fatalf("organizations of the removed member's key: %s", l.Body)
	}
	if r := roleOf(viewer3ID); r != "viewer" {
		t.Fatalf("the third viewer became %s", r)
	}
}
