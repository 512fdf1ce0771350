package tests

import (
	"testing"
)

// TestTeams: an admin creates, lists, reads, changes and deletes teams; members are added
// (201), re-roled (200) and removed; a team lead manages their own team's members but no
// other team; other roles read but do not manage; the users list shows and filters by teams;
// leaving the organization leaves its teams; another organization's teams are 404; every
// change is audited and emitted.
func TestTeams(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	own := bearer(e.ownerToken)
	org := e.orgID
	base := "/api/v1/organizations/" + org + "/teams"

	// Create: slug from the name, default permissions, empty lists; bad input changes nothing.
	c := e.do("POST", base, map[string]any{"name": "Data Science", "description": "Models"}, own).status(201)
	id := c.str("id")
	if c.str("slug") != "data-science" || c.str("permissions.0") != "projects.read" || c.len("permissions") != 1 ||
		c.num("member_count") != 0 || c.len("members") != 0 || c.len("projects") != 0 || c.Header.Get("Location") != base+"/"+id {
		t.Fatalf("create: %s %v", c.Body, c.Header)
	}
	if r := e.do("POST", base, map[string]any{"name": "Other", "slug": "data-science"}, own).apiError(409, "CONFLICT"); r.get("error.details.field") != "slug" {
		t.Fatalf("taken slug: %s", r.Body)
	}
	e.do("POST", base, map[string]any{"name": "Bad", "permissions": []string{"projects.fly"}}, own).apiError(400, "VALIDATION_ERROR")
	e.do("POST", base, map[string]any{"name": "Bad", "slug": "Not A Slug"}, own).apiError(400, "VALIDATION_ERROR")
	e.do("POST", base, map[string]any{}, own).apiError(400, "VALIDATION_ERROR")
	if q := e.do("POST", base, map[string]any{"name": "QA"}, own).status(201); q.str("slug") != "qa-team" {
		t.Fatalf("short name's slug: %s", q.Body)
	} else {
		e.do("DELETE", base+"/"+q.str("id"), nil, own).status(204)
	}
	ops := e.do("POST", base, map[string]any{"name": "Ops", "permissions": []string{"projects.read", "queries.execute"}}, own).status(201).str("id")
	if l := e.do("GET", base, nil, own).status(200); l.len("teams") != 2 || l.str("teams.0.name") != "Data Science" || l.get("teams.0.members") != nil || l.num("pagination.total") != 2 {
		t.Fatalf("list: %s", l.Body)
	}
	if l := e.do("GET", base+"?search=OPS", nil, own).status(200); l.len("teams") != 1 || l.str("teams.0.id") != ops {
		t.Fatalf("search: %s", l.Body)
	}

	// Members: only active members of the organization; 201 added, 200 re-roled.
	leadEmail, leadTok := e.member(org, "viewer")
	_, devTok := e.member(org, "developer")
	memberEmail, memberTok := e.member(org, "analyst")
	lead, member := e.userIDOf(leadEmail), e.userIDOf(memberEmail)
	members := base + "/" + id + "/members"
	if r := e.do("POST", members, map[string]any{"user_id": lead, "role": "team_lead"}, own).status(201); r.num("member_count") != 1 || r.str("members.0.role") != "team_lead" {
		t.Fatalf("add lead: %s", r.Body)
	}
	e.do("POST", members, map[string]any{"user_id": "usr_nobody"}, own).apiError(404, "NOT_FOUND")
	e.do("POST", members, map[string]any{"user_id": lead, "role": "boss"}, own).apiError(400, "VALIDATION_ERROR")

	// The lead manages this team's members, not another team's, and not the team itself.
	if r := e.do("POST", members, map[string]any{"user_id": member}, bearer(leadTok)).status(201); r.num("member_count") != 2 || r.str("members.1.role") != "member" {
		t.Fatalf("lead adds: %s", r.Body)
	}
	if r := e.do("POST", members, map[string]any{"user_id": member, "role": "team_lead"}, own).status(200); r.str("members.1.role") != "team_lead" && r.str("members.0.role") != "team_lead" {
		t.Fatalf("re-role: %s", r.Body)
	}
	e.do("POST", members, map[string]any{"user_id": member, "role": "member"}, own).status(200)
	e.do("POST", base+"/"+ops+"/members", map[string]any{"user_id": member}, bearer(leadTok)).authError(403, "INSUFFICIENT_PERMISSIONS")
	e.do("PATCH", base+"/"+id, map[string]any{"name": "Renamed"}, bearer(leadTok)).authError(403, "INSUFFICIENT_PERMISSIONS")
	// A developer (no admin) reads but does not manage.
	e.do("GET", base+"/"+id, nil, bearer(devTok)).status(200)
	e.do("POST", base, map[string]any{"name": "Mine"}, bearer(devTok)).authError(403, "INSUFFICIENT_PERMISSIONS")
	e.do("DELETE", base+"/"+ops, nil, bearer(devTok)).authError(403, "INSUFFICIENT_PERMISSIONS")

	// The users list shows each user's teams and filters by team.
	u := e.do("GET", "/api/v1/organizations/"+org+"/users?team_id="+id, nil, own).status(200)
	if u.len("users") != 2 || u.len("users.0.teams") != 1 || u.str("users.0.teams.0.id") != id {
		t.Fatalf("users of the team: %s", u.Body)
	}
	if u := e.do("GET", "/api/v1/organizations/"+org+"/users?team_id="+ops, nil, own).status(200); u.len("users") != 0 {
		t.Fatalf("users of an empty team: %s", u.Body)
	}

	// Change: fields given only; a taken slug is 409; an empty body is 400.
	if p := e.do("PATCH", base+"/"+id, map[string]any{"name": "DS", "permissions": []string{"projects.read", "datasets.manage"}}, own).status(200); p.str("name") != "DS" ||
		p.str("slug") != "data-science" || p.len("permissions") != 2 || p.str("description") != "Models" || p.num("member_count") != 2 {
		t.Fatalf("patch: %s", p.Body)
	}
	if r := e.do("PATCH", base+"/"+id, map[string]any{"slug": "ops"}, own).apiError(409, "CONFLICT"); r.get("error.details.field") != "slug" {
		t.Fatalf("patch to a taken slug: %s", r.Body)
	}
	e.do("PATCH", base+"/"+id, map[string]any{}, own).apiError(400, "VALIDATION_ERROR")
	if p := e.do("PATCH", base+"/"+id, map[string]any{"description": ""}, own).status(200); p.get("description") != nil {
		t.Fatalf("clear description: %s", p.Body)
	}

	// Members leave a team themselves; someone not in it is 404.
	e.do("DELETE", members+"/"+member, nil, bearer(memberTok)).status(204)
	e.do("DELETE", members+"/"+member, nil, own).apiError(404, "NOT_FOUND")
	e.do("POST", members, map[string]any{"user_id": member}, own).status(201)
	// Leaving the organization leaves its teams.
	e.do("DELETE", "/api/v1/organizations/"+org+"/users/"+member, nil, own).status(204)
	if g := e.do("GET", base+"/"+id, nil, own).status(200); g.num("member_count") != 1 || g.len("members") != 1 {
		t.Fatalf("after leaving the organization: %s", g.Body)
	}

	// Another organization's teams are 404, through either organization's path.
	other := e.do("POST", "/api/v1/organizations", map[string]any{"name": "Elsewhere"}, own).status(201).str("id")
	e.do("GET", "/api/v1/organizations/"+other+"/teams/"+id, nil, own).apiError(404, "NOT_FOUND")
	e.do("GET", base+"/tm_nothere", nil, own).apiError(404, "NOT_FOUND")
	e.do("GET", "/api/v1/organizations/"+other+"/teams", nil, bearer(leadTok)).apiError(404, "NOT_FOUND")

	// Delete: the members stay in the organization.
	e.do("DELETE", base+"/"+id, nil, own).status(204)
	e.do("GET", base+"/"+id, nil, own).apiError(404, "NOT_FOUND")
	if u := e.do("GET", "/api/v1/organizations/"+org+"/users?search="+leadEmail, nil, own).status(200); u.len("users") != 1 || u.len("users.0.teams") != 0 {
		t.Fatalf("the lead after the team's deletion: %s", u.Body)
	}

	for action, want := range map[string]int{"team.create": 3, "team.update": 2, "team.delete": 2, "team.member_add": 3, "team.member_role_change": 2, "team.member_remove": 1} {
		if n := e.countAuditRows(org, action); n != want {
			t.Errorf("audit %s: %d rows, want %d", action, n, want)
		}
	}
	for event, want := range map[string]int{"team.created": 3, "team.deleted": 2} {
		if n := e.countOutboxRows(org, event); n != want {
			t.Errorf("outbox %s: %d events, want %d", event, n, want)
		}
	}
}

// TestInvitationJoinsTeams: an invitation names teams of the organization, and accepting it
// puts the person in them as member; a team of another organization is 400 and invites
// nobody; a team deleted before acceptance is skipped.
func TestInvitationJoinsTeams(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	own := bearer(e.ownerToken)
	base := "/api/v1/organizations/" + e.orgID
	a := e.do("POST", base+"/teams", map[string]any{"name": "Alpha"}, own).status(201).str("id")
	b := e.do("POST", base+"/teams", map[string]any{"name": "Beta"}, own).status(201).str("id")
	other := e.do("POST", "/api/v1/organizations", map[string]any{"name": "Elsewhere"}, own).status(201).str("id")
	foreign := e.do("POST", "/api/v1/organizations/"+other+"/teams", map[string]any{"name": "Theirs"}, own).status(201).str("id")

	e.do("POST", base+"/invitations", map[string]any{"email": "nope@example.com", "teams": []string{a, foreign}}, own).
		apiError(400, "VALIDATION_ERROR", "body.teams", "unknown_team")
	if u := e.do("GET", base+"/users?search=nope@", nil, own).status(200); u.len("users") != 0 {
		t.Fatalf("a refused invitation left a user: %s", u.Body)
	}
	inv := e.do("POST", base+"/invitations", map[string]any{"email": "tina@example.com", "teams": []string{a, b}}, own).status(201)
	if inv.len("teams") != 2 {
		t.Fatalf("invitation: %s", inv.Body)
	}
	e.do("DELETE", base+"/teams/"+b, nil, own).status(204)
	e.do("POST", "/api/v1/invitations/"+e.invitationToken(inv)+"/accept", map[string]any{"name": "Tina", "password": "tina-kettle-orbit-42"}).status(200)
	u := e.do("GET", base+"/users?search=tina@", nil, own).status(200)
	if u.len("users.0.teams") != 1 || u.str("users.0.teams.0.id") != a || u.str("users.0.teams.0.role") != "member" {
		t.Fatalf("teams after accepting: %s", u.Body)
	}
}
