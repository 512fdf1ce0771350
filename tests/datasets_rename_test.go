package tests

import (
	"bytes"
	"strings"
	"testing"
)

// TestRenameReleasesVersion: renaming a dataset leaves every released description as it was
// (byte for byte, its SDK archive named as before) and releases a new major version whose
// operation ids follow the new name; the changelog lists the rename as breaking.
func TestRenameReleasesVersion(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	own := bearer(e.ownerToken)
	id := e.uploadAndCreate(e.ownerToken, "Orders", "o.csv", "item,qty\npen,1\ncup,2\n")
	e.waitDataset(e.ownerToken, id)
	base := "/api/v1/datasets/" + id
	before := e.do("GET", base+"/openapi.json?version=1.0.0", nil, own).status(200)
	if !strings.Contains(string(before.Body), `"listOrders"`) {
		t.Fatalf("1.0.0 before the rename: %s", before.Body)
	}
	sdkBefore := e.do("GET", base+"/sdk/go?version=1.0.0", nil, own).status(200)
	if !strings.Contains(sdkBefore.Header.Get("Content-Disposition"), "ordersapi-go-1.0.0.zip") {
		t.Fatalf("SDK of 1.0.0: %v", sdkBefore.Header)
	}

	e.do("PATCH", "/api/v1/projects/"+e.projectID+"/datasets/"+id, map[string]any{"name": "Renamed Orders", "description": "orders, renamed"}, own).status(200)

	after := e.do("GET", base+"/openapi.json?version=1.0.0", nil, own).status(200)
	if !bytes.Equal(before.Body, after.Body) {
		t.Fatalf("1.0.0 changed with the rename:\nbefore %s\nafter  %s", before.Body, after.Body)
	}
	v := e.do("GET", base+"/versions", nil, own).status(200)
	if v.str("current") != "2.0.0" || v.len("versions") != 2 || v.str("versions.1.level") != "major" {
		t.Fatalf("versions after the rename: %s", v.Body)
	}
	cur := e.do("GET", base+"/openapi.json", nil, own).status(200)
	if cur.str("info.version") != "2.0.0" || !strings.Contains(string(cur.Body), `"listRenamedOrders"`) ||
		strings.Contains(string(cur.Body), `"listOrders"`) || cur.str("info.title") != "Renamed Orders API" {
		t.Fatalf("2.0.0: %s", cur.Body)
	}
	c := e.do("GET", base+"/changelog", nil, own).status(200)
	if c.str("versions.0.version") != "2.0.0" || c.str("versions.0.level") != "major" || !strings.Contains(string(c.Body), "dataset-renamed") ||
		!strings.Contains(string(c.Body), `"level":"breaking"`) {
		t.Fatalf("changelog: %s", c.Body)
	}
	sdkAfter := e.do("GET", base+"/sdk/go?version=1.0.0", nil, own).status(200)
	if !strings.Contains(sdkAfter.Header.Get("Content-Disposition"), "ordersapi-go-1.0.0.zip") {
		t.Fatalf("SDK of 1.0.0 after the rename: %v", sdkAfter.Header)
	}
	if s := e.do("GET", base+"/sdk/go", nil, own).status(200); !strings.Contains(s.Header.Get("Content-Disposition"), "renamedordersapi-go-2.0.0.zip") {
		t.Fatalf("SDK of 2.0.0: %v", s.Header)
	}

	// A description alone changes no contract: a patch version, 1.0.0 and 2.0.0 unchanged.
	two := e.do("GET", base+"/openapi.json?version=2.0.0", nil, own).status(200)
	e.do("PATCH", "/api/v1/projects/"+e.projectID+"/datasets/"+id, map[string]any{"description": "orders"}, own).status(200)
	if v := e.do("GET", base+"/versions", nil, own).status(200); v.str("current") != "2.0.1" || v.str("versions.2.level") != "patch" {
		t.Fatalf("versions after a new description: %s", v.Body)
	}
	if a := e.do("GET", base+"/openapi.json?version=1.0.0", nil, own).status(200); !bytes.Equal(before.Body, a.Body) {
		t.Fatalf("1.0.0 changed with a new description: %s", a.Body)
	}
	if a := e.do("GET", base+"/openapi.json?version=2.0.0", nil, own).status(200); !bytes.Equal(two.Body, a.Body) {
		t.Fatalf("2.0.0 changed with a new description: %s", a.Body)
	}
}
