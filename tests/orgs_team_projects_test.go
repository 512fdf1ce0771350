package tests

import (
	"testing"
	"time"
)

// TestPrivateProjectsAndTeamGrants: a private project is reached by owners and admins, its
// creator and the members of teams granted it, with the grant's role within the team's
// permissions; everyone else gets 404 everywhere (project, lists, datasets, records, queries).
// Grants are admin-only, audited and emitted; revoking one closes the door again.
func TestPrivateProjectsAndTeamGrants(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	own := bearer(e.ownerToken)
	org := e.orgID
	teams := "/api/v1/organizations/" + org + "/teams"

	if p := e.do("GET", "/api/v1/projects/"+e.projectID, nil, own).status(200); p.str("visibility") != "organization" {
		t.Fatalf("default visibility: %s", p.Body)
	}
	sec := e.do("POST", "/api/v1/organizations/"+org+"/projects", map[string]any{"name": "Secret", "visibility": "private"}, own).status(201)
	if sec.str("visibility") != "private" {
		t.Fatalf("private project: %s", sec.Body)
	}
	secret := sec.str("id")
	e.do("POST", "/api/v1/organizations/"+org+"/projects", map[string]any{"name": "Bad", "visibility": "hidden"}, own).
		apiError(400, "VALIDATION_ERROR")

	// A dataset in the private project.
	body, h := multipartBody(t, "people.csv", []byte("id,name\n1,Ann\n2,Bob\n"), nil)
	up := e.do("POST", "/api/v1/projects/"+secret+"/datasets/upload", body, own, h).status(201)
	ds := e.do("POST", "/api/v1/projects/"+secret+"/datasets", map[string]any{"name": "people", "source": map[string]any{"file_id": up.str("file_id")}}, own).status(202).str("id")
	for i := 0; ; i++ {
		if e.do("GET", "/api/v1/projects/"+secret+"/datasets/"+ds, nil, own).status(200).str("status") == "active" {
			break
		} else if i > 500 {
			t.Fatal("dataset never became active")
		}
		time.Sleep(20 * time.Millisecond)
	}

	anaEmail, anaTok := e.member(org, "analyst")
	viewEmail, viewTok := e.member(org, "viewer")
	_, devTok := e.member(org, "developer")
	_, adminTok := e.member(org, "admin")
	ana, viewer := e.userIDOf(anaEmail), e.userIDOf(viewEmail)

	hidden := func(tok string) {
		t.Helper()
		e.do("GET", "/api/v1/projects/"+secret, nil, bearer(tok)).apiError(404, "NOT_FOUND")
		e.do("GET", "/api/v1/projects/"+secret+"/datasets/"+ds, nil, bearer(tok)).apiError(404, "DATASET_NOT_FOUND")
		e.do("GET", "/api/v1/datasets/"+ds+"/data", nil, bearer(tok)).status(404)
		e.do("GET", "/api/v1/datasets/"+ds+"/openapi.json", nil, bearer(tok)).status(404)
		e.do("POST", "/api/v1/projects/"+secret+"/queries/execute", map[string]any{"type": "sql", "query": "SELECT count(*) FROM people"}, bearer(tok)).apiError(404, "NOT_FOUND")
		for _, path := range []string{"/api/v1/organizations/" + org + "/projects", "/api/v1/projects"} {
			ps, _ := e.do("GET", path, nil, bearer(tok)).status(200).get("projects").([]any)
			for _, p := range ps {
				if p.(map[string]any)["id"] == secret {
					t.Fatalf("%s lists the private project", path)
				}
			}
		}
	}
	hidden(anaTok)
	hidden(devTok)
	hidden(viewTok)
	// Owners and admins reach it.
	e.do("GET", "/api/v1/projects/"+secret, nil, bearer(adminTok)).status(200)
	e.do("GET", "/api/v1/datasets/"+ds+"/data", nil, bearer(adminTok)).status(200)

	// A team that reads and runs queries; the analyst is in it.
	readers := e.do("POST", teams, map[string]any{"name": "Readers", "permissions": []string{"projects.read", "queries.execute"}}, own).status(201).str("id")
	e.do("POST", teams+"/"+readers+"/members", map[string]any{"user_id": ana}, own).status(201)
	grant := teams + "/" + readers + "/projects/" + secret
	// Only admins grant; bad roles, other organizations' projects and unknown teams are refused.
	e.do("PUT", grant, map[string]any{"role": "analyst"}, bearer(devTok)).authError(403, "INSUFFICIENT_PERMISSIONS")
	e.do("PUT", grant, map[string]any{"role": "owner"}, own).apiError(400, "VALIDATION_ERROR")
	e.do("PUT", teams+"/"+readers+"/projects/prj_nothere", map[string]any{}, own).apiError(404, "NOT_FOUND")
	e.do("PUT", teams+"/tm_nothere/projects/"+secret, map[string]any{}, own).apiError(404, "NOT_FOUND")
	if r := e.do("PUT", grant, map[string]any{}, own).status(201); r.num("project_count") != 1 || r.str("projects.0.id") != secret ||
		r.str("projects.0.role") != "viewer" || r.str("projects.0.visibility") != "private" {
		t.Fatalf("grant: %s", r.Body)
	}
	hidden(devTok) // not in the team
	// A viewer grant shows the project and its datasets, not their records, and runs no
	// queries, even for an analyst.
	e.do("GET", "/api/v1/projects/"+secret, nil, bearer(anaTok)).status(200)
	e.do("GET", "/api/v1/projects/"+secret+"/datasets/"+ds, nil, bearer(anaTok)).status(200)
	e.do("GET", "/api/v1/datasets/"+ds+"/data", nil, bearer(anaTok)).authError(403, "PERMISSION_DENIED")
	e.do("POST", "/api/v1/projects/"+secret+"/queries/execute", map[string]any{"type": "sql", "query": "SELECT count(*) AS n FROM people"}, bearer(anaTok)).
		authError(403, "PERMISSION_DENIED")
	if r := e.do("PUT", grant, map[string]any{"role": "analyst"}, own).status(200); r.str("projects.0.role") != "analyst" {
		t.Fatalf("re-grant: %s", r.Body)
	}
	if r := e.do("POST", "/api/v1/projects/"+secret+"/queries/execute", map[string]any{"type": "sql", "query": "SELECT count(*) AS n FROM people"}, bearer(anaTok)).status(200); rows(r) != "2" {
		t.Fatalf("query through the grant: %s", r.Body)
	}
	if r := e.do("GET", "/api/v1/datasets/"+ds+"/data", nil, bearer(anaTok)).status(200); r.len("data") != 2 {
		t.Fatalf("records through the grant: %s", r.Body)
	}
	// A developer grant to a team without datasets.manage still does not write.
	e.do("PUT", grant, map[string]any{"role": "developer"}, own).status(200)
	e.do("POST", "/api/v1/datasets/"+ds+"/data", map[string]any{"name": "Cy"}, bearer(anaTok)).authError(403, "PERMISSION_DENIED")
	e.do("PATCH", "/api/v1/projects/"+secret, map[string]any{"name": "Renamed"}, bearer(anaTok)).authError(403, "PERMISSION_DENIED")

	// A team with datasets.manage and projects.update raises a viewer to a writer on this
	// project only; the viewer still may not change who sees it.
	writers := e.do("POST", teams, map[string]any{"name": "Writers",
		"permissions": []string{"projects.read", "datasets.manage", "projects.update"}}, own).status(201).str("id")
	e.do("POST", teams+"/"+writers+"/members", map[string]any{"user_id": viewer}, own).status(201)
	e.do("PUT", teams+"/"+writers+"/projects/"+secret, map[string]any{"role": "developer"}, own).status(201)
	e.do("POST", "/api/v1/datasets/"+ds+"/data", map[string]any{"name": "Cy"}, bearer(viewTok)).status(201)
	e.do("PATCH", "/api/v1/projects/"+secret, map[string]any{"description": "now described"}, bearer(viewTok)).status(200)
	e.do("PATCH", "/api/v1/projects/"+secret, map[string]any{"visibility": "organization"}, bearer(viewTok)).authError(403, "INSUFFICIENT_PERMISSIONS")
	e.do("DELETE", "/api/v1/projects/"+secret, nil, bearer(viewTok)).authError(403, "PERMISSION_DENIED")
	// Nothing changes on other projects.
	e.do("PATCH", "/api/v1/projects/"+e.projectID, map[string]any{"description": "x"}, bearer(viewTok)).authError(403, "PERMISSION_DENIED")

	// The team's answer lists its projects; the audit log and the outbox have the grants.
	if r := e.do("GET", teams+"/"+readers, nil, bearer(anaTok)).status(200); r.len("projects") != 1 || r.num("project_count") != 1 {
		t.Fatalf("team projects: %s", r.Body)
	}
	if n := e.countAuditRows(org, "team.project_grant"); n != 2 {
		t.Fatalf("grant audit rows: %d", n)
	}
	if n := e.countAuditRows(org, "team.project_role_change"); n != 2 {
		t.Fatalf("role change audit rows: %d", n)
	}

	// Revoking closes the door; a second revoke is 404.
	e.do("DELETE", grant, nil, bearer(devTok)).authError(403, "INSUFFICIENT_PERMISSIONS")
	e.do("DELETE", grant, nil, own).status(204)
	e.do("DELETE", grant, nil, own).apiError(404, "NOT_FOUND")
	hidden(anaTok)
	if n := e.countAuditRows(org, "team.project_revoke"); n != 1 {
		t.Fatalf("revoke audit rows: %d", n)
	}

	// Opening the project to the organization lets every member in with their own role.
	e.do("PATCH", "/api/v1/projects/"+secret, map[string]any{"visibility": "organization"}, bearer(adminTok)).status(200)
	e.do("GET", "/api/v1/projects/"+secret, nil, bearer(devTok)).status(200)
	e.do("GET", "/api/v1/datasets/"+ds+"/data", nil, bearer(anaTok)).status(200)

	// Deleting a team takes its grants with it.
	e.do("PATCH", "/api/v1/projects/"+secret, map[string]any{"visibility": "private"}, own).status(200)
	e.do("POST", "/api/v1/datasets/"+ds+"/data", map[string]any{"name": "Di"}, bearer(viewTok)).status(201)
	e.do("DELETE", teams+"/"+writers, nil, own).status(204)
	hidden(viewTok)
}

// TestTeamProjectsCreate: a team's projects.create lets a viewer create projects, which the
// team is given as developer; without it a viewer may not.
func TestTeamProjectsCreate(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	own := bearer(e.ownerToken)
	org := e.orgID
	viewEmail, viewTok := e.member(org, "viewer")
	projects := "/api/v1/organizations/" + org + "/projects"
	e.do("POST", projects, map[string]any{"name": "Mine"}, bearer(viewTok)).authError(403, "PERMISSION_DENIED")

	team := e.do("POST", "/api/v1/organizations/"+org+"/teams", map[string]any{"name": "Builders",
		"permissions": []string{"projects.create", "projects.read", "datasets.manage"}}, own).status(201).str("id")
	e.do("POST", "/api/v1/organizations/"+org+"/teams/"+team+"/members", map[string]any{"user_id": e.userIDOf(viewEmail)}, own).status(201)
	p := e.do("POST", projects, map[string]any{"name": "Mine", "visibility": "private"}, bearer(viewTok)).status(201)
	id := p.str("id")
	if r := e.do("GET", "/api/v1/organizations/"+org+"/teams/"+team, nil, own).status(200); r.str("projects.0.id") != id || r.str("projects.0.role") != "developer" {
		t.Fatalf("team given the new project: %s", r.Body)
	}
	// The creator writes in it through the team.
	body, h := multipartBody(t, "t.csv", []byte("a\n1\n"), nil)
	e.do("POST", "/api/v1/projects/"+id+"/datasets/upload", body, bearer(viewTok), h).status(201)
	e.do("PATCH", "/api/v1/projects/"+id, map[string]any{"name": "Renamed"}, bearer(viewTok)).authError(403, "PERMISSION_DENIED") // no projects.update
}
