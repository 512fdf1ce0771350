package tests

import (
	"fmt"
	"strings"
	"testing"
)

// TestMyProjectsAcrossOrganizations: GET /api/v1/projects answers a new user's first question,
// in every organization they belong to, with the organization and their role; nothing of an
// organization they are not in.
func TestMyProjectsAcrossOrganizations(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	own := bearer(e.ownerToken)
	second := e.do("POST", "/api/v1/organizations", map[string]any{"name": "Second"}, own).status(201).str("id")
	p2 := e.do("POST", "/api/v1/organizations/"+second+"/projects", map[string]any{"name": "Elsewhere"}, own).status(201).str("id")

	all := e.do("GET", "/api/v1/projects", nil, own).status(200)
	i := 0 // newest first; the two may have been made within the same clock tick
	if all.str("projects.0.id") != p2 {
		i = 1
	}
	at := func(f string) string { return all.str(fmt.Sprintf("projects.%d.%s", i, f)) }
	if all.num("pagination.total") != 2 || at("id") != p2 || at("organization.id") != second ||
		at("organization.name") != "Second" || at("role") != "owner" || all.str(fmt.Sprintf("projects.%d.id", 1-i)) != e.projectID {
		t.Fatalf("the owner's projects: %s", all.Body)
	}
	one := e.do("GET", "/api/v1/projects?organization_id="+e.orgID, nil, own).status(200)
	if one.num("pagination.total") != 1 || one.str("projects.0.id") != e.projectID {
		t.Fatalf("one organization: %s", one.Body)
	}
	pg := e.do("GET", "/api/v1/projects?limit=1&page=2", nil, own).status(200)
	if pg.len("projects") != 1 || pg.str("projects.0.id") != all.str("projects.1.id") || pg.num("pagination.pages") != 2 {
		t.Fatalf("page 2: %s", pg.Body)
	}
	if s := e.do("GET", "/api/v1/projects?search=elsew", nil, own).status(200); s.num("pagination.total") != 1 {
		t.Fatalf("search: %s", s.Body)
	}
	// A viewer of the first organization sees its project only, with their role.
	_, vt := e.member(e.orgID, "viewer")
	v := e.do("GET", "/api/v1/projects", nil, bearer(vt)).status(200)
	if v.num("pagination.total") != 1 || v.str("projects.0.id") != e.projectID || v.str("projects.0.role") != "viewer" {
		t.Fatalf("the viewer's projects: %s", v.Body)
	}
	e.do("GET", "/api/v1/projects?organization_id="+second, nil, bearer(vt)).status(200)
	e.do("GET", "/api/v1/projects", nil).authError(401, "AUTH_REQUIRED")
}

// TestDatasetLinks: a dataset's detail says where to go next, and every link answers.
func TestDatasetLinks(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	own := bearer(e.ownerToken)
	id := e.uploadAndCreate(e.ownerToken, "Customers", "c.csv", "id,name\n1,Ada\n")
	e.waitDataset(e.ownerToken, id)
	d := e.do("GET", "/api/v1/projects/"+e.projectID+"/datasets/"+id, nil, own).status(200)
	links := d.get("_links").(map[string]any)
	var urls []string
	for name, v := range links {
		if name == "sdk" {
			for _, lang := range []string{"javascript", "typescript", "python", "go"} {
				urls = append(urls, v.(map[string]any)[lang].(string))
			}
			continue
		}
		urls = append(urls, v.(string))
	}
	if len(urls) != 15 || links["records"] != baseURL+"/api/v1/datasets/"+id+"/data" {
		t.Fatalf("links: %v", links)
	}
	for _, u := range urls {
		if !strings.HasPrefix(u, baseURL+"/api/v1/") {
			t.Fatalf("link %s is not on the base URL", u)
		}
		e.do("GET", strings.TrimPrefix(u, baseURL), nil, own).status(200)
	}
}
