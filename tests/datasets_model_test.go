package tests

import (
	"strings"
	"testing"
)

// TestUploadedRecordModel: what a new user expects of two related CSV files. Imported columns
// are optional, the file's own ids are the records' ids, phone numbers and zip codes keep their
// text, and the relationship points at a key that a constraint keeps unique.
func TestUploadedRecordModel(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	own := bearer(e.ownerToken)
	cust := e.uploadAndCreate(e.ownerToken, "Customers", "customers.csv", "id,name,email,phone,zip,city,credit\n"+
		"101,Ada,ada@example.com,+15557624039,02134,Boston,1200.50\n"+
		"205,Alan,alan@example.com,+15557624040,10001,New York,800\n"+
		"307,Grace,grace@example.com,+15557624041,94105,San Francisco,1500.25\n")
	e.waitDataset(e.ownerToken, cust)
	ord := e.uploadAndCreate(e.ownerToken, "Orders", "orders.csv", "id,customer_id,amount\n1,101,19.90\n2,101,5.10\n3,307,100\n")
	e.waitDataset(e.ownerToken, ord)
	data := "/api/v1/datasets/" + cust + "/data"

	// The file's ids are the records' ids; no src_id beside them.
	g := e.do("GET", data+"/205", nil, own).status(200)
	if g.str("name") != "Alan" || g.get("src_id") != nil {
		t.Fatalf("record 205 of the file: %s", g.Body)
	}
	// Phone numbers keep their plus, zip codes their leading zero; credit is a number.
	a := e.do("GET", data+"/101", nil, own).status(200)
	if a.get("phone") != "+15557624039" || a.get("zip") != "02134" || a.get("credit") != 1200.5 {
		t.Fatalf("values of record 101: %s", a.Body)
	}
	// Only what the user gives is needed; new records continue after the file's largest id.
	c := e.do("POST", data, map[string]any{"name": "Barbara", "email": "barbara@example.com"}, own).status(201)
	if c.num("id") != 308 || c.get("city") != nil {
		t.Fatalf("created: %s", c.Body)
	}
	doc := e.do("GET", "/api/v1/datasets/"+cust+"/openapi.json", nil, own).status(200)
	if req := doc.get("components.schemas.CustomerCreate.required"); req != nil {
		t.Fatalf("imported columns are optional, the description requires %v", req)
	}
	// The relationship points at the records' ids (the primary key).
	if doc.get("components.schemas.Customer.properties._links.properties.orders.x-relationship.local_key") != "id" {
		t.Fatalf("relationship: %s", doc.Body)
	}
	s := e.do("GET", "/api/v1/projects/"+e.projectID+"/datasets/"+ord+"/schema", nil, own).status(200)
	if s.len("relationships") != 1 || s.str("relationships.0.to_column") != "id" || s.str("relationships.0.from_column") != "customer_id" {
		t.Fatalf("orders → customers: %s", s.Body)
	}
}

// TestUploadedIDsThatAreNoKey: a file's text ids that are unique key its records (addressed
// by them, a duplicate written later is a conflict, a record needs one); ids that repeat are
// no key: the records get a generated id, the column says why, and nothing points at it.
func TestUploadedIDsThatAreNoKey(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	own := bearer(e.ownerToken)
	text := e.uploadAndCreate(e.ownerToken, "Customers", "customers.csv", "id,name\nC-2,Alan\nC-1,Ada\n")
	e.waitDataset(e.ownerToken, text)
	e.waitDataset(e.ownerToken, e.uploadAndCreate(e.ownerToken, "Orders", "orders.csv", "id,customer_id,amount\n1,C-1,5\n2,C-2,7\n"))
	doc := e.do("GET", "/api/v1/datasets/"+text+"/openapi.json", nil, own).status(200)
	if doc.get("components.schemas.Customer.properties.id.x-primary-key") != true ||
		doc.get("components.schemas.Customer.properties._links.properties.orders.x-relationship.local_key") != "id" {
		t.Fatalf("unique text ids: %s", doc.Body)
	}
	if r := e.do("GET", "/api/v1/datasets/"+text+"/data/C-1", nil, own).status(200); r.str("name") != "Ada" {
		t.Fatalf("record C-1: %s", r.Body)
	}
	if r := e.do("POST", "/api/v1/datasets/"+text+"/data", map[string]any{"id": "C-1", "name": "Twin"}, own).apiError(409, "CONFLICT"); r.get("error.details.field") != "id" {
		t.Fatalf("duplicate id: %s", r.Body)
	}
	e.do("POST", "/api/v1/datasets/"+text+"/data", map[string]any{"name": "Nobody"}, own).apiError(400, "VALIDATION_ERROR", "body.id")

	dup := e.uploadAndCreate(e.ownerToken, "Teams", "teams.csv", "id,name\n1,Red\n1,Blue\n2,Green\n")
	e.waitDataset(e.ownerToken, dup)
	e.waitDataset(e.ownerToken, e.uploadAndCreate(e.ownerToken, "Players", "players.csv", "id,team_id\n1,1\n2,2\n"))
	d := e.do("GET", "/api/v1/datasets/"+dup+"/openapi.json", nil, own).status(200)
	if d.get("components.schemas.Team.properties.src_id.x-primary-key") != nil || d.get("components.schemas.Team.properties.id.readOnly") != true ||
		!strings.Contains(d.str("components.schemas.Team.properties.src_id.description"), "repeat") {
		t.Fatalf("repeated ids: %s", d.Body)
	}
	s := e.do("GET", "/api/v1/projects/"+e.projectID+"/datasets/"+dup+"/schema", nil, own).status(200)
	if s.len("relationships") != 0 {
		t.Fatalf("a relationship to ids that repeat or to the generated id: %s", s.Body)
	}
	if n := e.do("GET", "/api/v1/datasets/"+dup+"/data", nil, own).status(200).num("pagination.total"); n != 3 {
		t.Fatalf("%d records of 3", n)
	}
}
