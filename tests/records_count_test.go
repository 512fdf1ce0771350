package tests

import (
	"encoding/csv"
	"fmt"
	"strings"
	"testing"
)

// Parcels keyed by their own codes, not in key order.
const parcelsCSV = "parcel_code,depot,weight_kg\n" +
	"PX-907,north,2.5\n" +
	"PX-113,south,11\n" +
	"PX-450,north,0.8\n" +
	"PX-021,east,7.25\n" +
	"PX-699,north,3\n"

// TestExactCountKept: a list's exact count is kept while its dataset has no change, and
// counted again after any change made through the service (a record written or deleted, a
// file imported). A row written behind the change log shows which: its count is kept until
// the next change.
func TestExactCountKept(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	own := bearer(e.ownerToken)
	id := e.uploadAndCreateWith(e.ownerToken, "Parcels", "parcels.csv", parcelsCSV, map[string]any{"primary_key": "parcel_code"})
	e.waitDataset(e.ownerToken, id)
	base := "/api/v1/datasets/" + id + "/data"
	// The test's own count of a depot's parcels, from the file and the changes it made.
	want := map[string]int{}
	recs, err := csv.NewReader(strings.NewReader(parcelsCSV)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs[1:] {
		want[r[1]]++
	}
	total := func(depot string) int {
		t.Helper()
		r := e.do("GET", base+"?filter[depot]="+depot+"&limit=1", nil, own).status(200)
		if r.get("pagination.total_estimated") != false {
			t.Fatalf("a five-row table's count is estimated: %s", r.Body)
		}
		return r.num("pagination.total")
	}
	check := func(when string) {
		t.Helper()
		for _, depot := range []string{"north", "south", "east"} {
			if got := total(depot); got != want[depot] {
				t.Fatalf("%s: %d parcels at %s, want %d", when, got, depot, want[depot])
			}
		}
	}
	check("as loaded")
	// Two questions whose values run together into the same text are two questions.
	both := func(depot, code string) int {
		t.Helper()
		return e.do("GET", base+"?filter[depot]="+depot+"&filter[parcel_code]="+code, nil, own).status(200).num("pagination.total")
	}
	if a, b := both("north", "PX-907"), both("northP", "X-907"); a != 1 || b != 0 {
		t.Fatalf("north/PX-907 counted %d (want 1), northP/X-907 %d (want 0)", a, b)
	}

	// Behind the change log (as no path of the service writes): the kept count stands, a
	// question not asked before is counted.
	table := fmt.Sprintf("%q.%q", e.orgID, id)
	tx := e.st.DB.MustBegin()
	tx.MustExec(`ALTER TABLE ` + table + ` DISABLE TRIGGER dp_changes`)
	tx.MustExec(`INSERT INTO ` + table + ` (parcel_code, depot, weight_kg) VALUES ('PX-001', 'north', 1), ('PX-002', 'west', 1)`)
	tx.MustExec(`ALTER TABLE ` + table + ` ENABLE TRIGGER dp_changes`)
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if got := total("north"); got != want["north"] {
		t.Fatalf("the kept count was not used: %d at north, kept %d", got, want["north"])
	}
	want["north"]++
	want["west"]++
	if got := total("west"); got != want["west"] {
		t.Fatalf("a new question: %d at west, want %d", got, want["west"])
	}

	// Any change through the service counts again.
	e.do("POST", base, map[string]any{"parcel_code": "PX-778", "depot": "south", "weight_kg": 4}, own).status(201)
	want["south"]++
	check("after a record was created")
	e.do("DELETE", base+"/PX-450", nil, own).status(200)
	want["north"]--
	check("after a record was deleted")
	e.do("PATCH", base+"/PX-021", map[string]any{"depot": "north"}, own).status(200)
	want["east"]--
	want["north"]++
	check("after a record moved")
	e.imported(id, "more.csv", "parcel_code,depot,weight_kg\nPX-113,east,11\nPX-990,east,1\n", map[string]any{"mode": "upsert"})
	want["south"]--
	want["east"] += 2
	check("after an upsert import")
	e.imported(id, "all.csv", "parcel_code,depot,weight_kg\nPX-500,south,1\n", map[string]any{"mode": "replace"})
	want = map[string]int{"south": 1}
	check("after a replace import")
}
