package tests

import (
	"fmt"
	"math/rand/v2"
	"net/url"
	"strings"
	"testing"
)

// clinic is three related files as exports come: unsorted, keyed by their own <entity>_id
// columns (integers with gaps, and text), with the answers computed here, not by the service.
type clinic struct {
	patients  []int          // patient ids, in file order
	city      map[int]string // patient → city
	doctors   []string       // doctor ids, in file order
	specialty map[string]string
	visits    [][2]string // patient id, doctor id
	cost      []int
	files     map[string]string
}

// newClinic makes the files. dense gives patients the ids 1…N (shuffled), the shape that a
// load-order id would match by chance.
func newClinic(seed uint64, dense bool) *clinic {
	r := rand.New(rand.NewPCG(seed, seed+1))
	c := &clinic{city: map[int]string{}, specialty: map[string]string{}, files: map[string]string{}}
	cities := []string{"Greenville", "Riverton", "Lakewood", "Fairview", "Springfield"}
	specs := []string{"cardiology", "dermatology", "oncology", "pediatrics"}
	seen := map[int]bool{}
	for len(c.patients) < 300 {
		id := 1001 + r.IntN(8000)
		if dense {
			id = len(c.patients) + 1
		}
		if !seen[id] {
			seen[id] = true
			c.patients = append(c.patients, id)
		}
	}
	r.Shuffle(len(c.patients), func(i, j int) { c.patients[i], c.patients[j] = c.patients[j], c.patients[i] })
	var b strings.Builder
	b.WriteString("patient_id,name,city\n")
	for i, id := range c.patients {
		c.city[id] = cities[r.IntN(len(cities))]
		fmt.Fprintf(&b, "%d,Patient %d,%s\n", id, i, c.city[id])
	}
	c.files["patients"] = b.String()
	b.Reset()
	b.WriteString("doctor_id,name,specialty\n")
	for _, n := range r.Perm(60)[:12] {
		id := fmt.Sprintf("D-%03d", n+1)
		c.doctors = append(c.doctors, id)
		c.specialty[id] = specs[r.IntN(len(specs))]
		fmt.Fprintf(&b, "%s,Dr %s,%s\n", id, id, c.specialty[id])
	}
	c.files["doctors"] = b.String()
	b.Reset()
	b.WriteString("visit_date,patient_id,doctor_id,cost\n")
	for range 900 {
		p, d := c.patients[r.IntN(len(c.patients))], c.doctors[r.IntN(len(c.doctors))]
		c.visits = append(c.visits, [2]string{fmt.Sprint(p), d})
		c.cost = append(c.cost, 20+r.IntN(300))
		fmt.Fprintf(&b, "2024-%02d-%02d,%d,%s,%d\n", 1+r.IntN(12), 1+r.IntN(28), p, d, c.cost[len(c.cost)-1])
	}
	c.files["visits"] = b.String()
	return c
}

// perCity is the number of visits per patient city.
func (c *clinic) perCity() map[string]int {
	out := map[string]int{}
	for _, v := range c.visits {
		var p int
		fmt.Sscan(v[0], &p)
		out[c.city[p]]++
	}
	return out
}

// load uploads the clinic's files (patients, doctors, visits) into e's project.
func (c *clinic) load(e *env) (patients, doctors, visits string) {
	e.t.Helper()
	ids := map[string]string{}
	for _, n := range []string{"patients", "doctors", "visits"} {
		ids[n] = e.uploadAndCreate(e.ownerToken, strings.ToUpper(n[:1])+n[1:], n+".csv", c.files[n])
		if d := e.waitDataset(e.ownerToken, ids[n]); d.str("status") != "active" {
			e.t.Fatalf("%s: %s", n, d.Body)
		}
	}
	return ids["patients"], ids["doctors"], ids["visits"]
}

// TestOwnKeysAndRelationships: a newcomer's own export — unsorted, keyed by <entity>_id —
// is addressed by its own keys, and every consumer (schema, _links, include, expand,
// plain-English joins, plan-views) follows the relationships to the right rows.
func TestOwnKeysAndRelationships(t *testing.T) {
	t.Parallel()
	for _, dense := range []bool{false, true} {
		t.Run(fmt.Sprintf("dense=%v", dense), func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			own := bearer(e.ownerToken)
			c := newClinic(7, dense)
			patients, doctors, visits := c.load(e)

			// Records by their own keys.
			p := c.patients[len(c.patients)/2]
			r := e.do("GET", fmt.Sprintf("/api/v1/datasets/%s/data/%d", patients, p), nil, own).status(200)
			if r.num("patient_id") != p || r.str("city") != c.city[p] || r.get("id") != nil {
				t.Fatalf("patient %d: %s", p, r.Body)
			}
			d := c.doctors[3]
			if r := e.do("GET", "/api/v1/datasets/"+doctors+"/data/"+url.PathEscape(d), nil, own).status(200); r.str("specialty") != c.specialty[d] {
				t.Fatalf("doctor %s: %s", d, r.Body)
			}
			e.do("GET", "/api/v1/datasets/"+patients+"/data/99999", nil, own).apiError(404, "RECORD_NOT_FOUND")
			e.do("GET", "/api/v1/datasets/"+patients+"/data/D-001", nil, own).apiError(400, "VALIDATION_ERROR")

			// The schema tells the truth about the keys; the description types the path.
			s := e.do("GET", "/api/v1/projects/"+e.projectID+"/datasets/"+patients+"/schema", nil, own).status(200)
			for i := 0; i < s.len("tables.0.columns"); i++ {
				col := s.str(fmt.Sprintf("tables.0.columns.%d.name", i))
				if pk := s.get(fmt.Sprintf("tables.0.columns.%d.is_primary_key", i)) == true; pk != (col == "patient_id") || col == "id" {
					t.Fatalf("column %s: %s", col, s.Body)
				}
			}
			doc := e.do("GET", "/api/v1/datasets/"+doctors+"/openapi.json", nil, own).status(200)
			if doc.str("paths./api/v1/datasets/{dataset_id}/data/{id}.parameters.2.schema.type") != "string" ||
				!strings.Contains(fmt.Sprint(doc.get("components.schemas.DoctorCreate.required")), "doctor_id") {
				t.Fatalf("doctors' description: path key %v, create requires %v", doc.get("paths./api/v1/datasets/{dataset_id}/data/{id}.parameters.2.schema"),
					doc.get("components.schemas.DoctorCreate.required"))
			}

			// Relationships point at the user's keys, never at a generated id.
			vs := e.do("GET", "/api/v1/projects/"+e.projectID+"/datasets/"+visits+"/schema", nil, own).status(200)
			got := map[string]string{}
			for i := 0; i < vs.len("relationships"); i++ {
				if vs.str(fmt.Sprintf("relationships.%d.type", i)) == "many-to-one" {
					got[vs.str(fmt.Sprintf("relationships.%d.from_column", i))] = vs.str(fmt.Sprintf("relationships.%d.to_dataset_id", i)) + "." + vs.str(fmt.Sprintf("relationships.%d.to_column", i))
				}
			}
			if got["patient_id"] != patients+".patient_id" || got["doctor_id"] != doctors+".doctor_id" || len(got) != 2 {
				t.Fatalf("visits' relationships: %v (%s)", got, vs.Body)
			}

			// _links and expand follow them to the right records.
			list := e.do("GET", "/api/v1/datasets/"+visits+"/data?limit=50", nil, own).status(200)
			for i := 0; i < list.len("data"); i++ {
				v := fmt.Sprintf("data.%d.", i)
				pid, did := list.num(v+"patient_id"), list.str(v+"doctor_id")
				if list.str(v+"_links.patient") != fmt.Sprintf("/api/v1/datasets/%s/data/%d", patients, pid) ||
					list.str(v+"_links.doctor") != "/api/v1/datasets/"+doctors+"/data/"+url.PathEscape(did) {
					t.Fatalf("links of a visit: %v", list.get(v+"_links"))
				}
			}
			self := list.str("data.0._links.self")
			x := e.do("GET", self+"?expand=patient,doctor", nil, own).status(200)
			if x.num("_embedded.patient.patient_id") != x.num("patient_id") || x.str("_embedded.patient.city") != c.city[x.num("patient_id")] ||
				x.str("_embedded.doctor.doctor_id") != x.str("doctor_id") {
				t.Fatalf("expand: %s", x.Body)
			}
			n := 0
			for _, v := range c.visits {
				if v[0] == fmt.Sprint(p) {
					n++
				}
			}
			inc := e.do("GET", fmt.Sprintf("/api/v1/datasets/%s/data/%d?include=visits", patients, p), nil, own).status(200)
			if inc.len("_embedded.visits") != min(n, 100) {
				t.Fatalf("patient %d has %d visits, include gave %d", p, n, inc.len("_embedded.visits"))
			}

			// A plain-English join per relationship, checked against the files.
			q := e.execute(map[string]any{"type": "natural_language", "query": "number of visits per patient city"}, e.ownerToken).status(200)
			want := c.perCity()
			if q.len("results.rows") != len(want) {
				t.Fatalf("visits per city: %s (want %v)", q.Body, want)
			}
			for i := 0; i < q.len("results.rows"); i++ {
				city, cnt := q.str(fmt.Sprintf("results.rows.%d.0", i)), q.num(fmt.Sprintf("results.rows.%d.1", i))
				if want[city] != cnt {
					t.Fatalf("%s: %d visits, the files say %d (%s)", city, cnt, want[city], q.get("sql"))
				}
			}
			bySpec := map[string]int{}
			for _, v := range c.visits {
				bySpec[c.specialty[v[1]]]++
			}
			q = e.execute(map[string]any{"type": "natural_language", "query": "number of visits per doctor specialty"}, e.ownerToken).status(200)
			for i := 0; i < q.len("results.rows"); i++ {
				sp, cnt := q.str(fmt.Sprintf("results.rows.%d.0", i)), q.num(fmt.Sprintf("results.rows.%d.1", i))
				if bySpec[sp] != cnt {
					t.Fatalf("%s: %d visits, the files say %d (%s)", sp, cnt, bySpec[sp], q.get("sql"))
				}
			}
			if q.len("results.rows") != len(bySpec) {
				t.Fatalf("visits per specialty: %s", q.Body)
			}

			// The project form of dashboards joins on the same relationship.
			g := e.do("POST", "/api/v1/projects/"+e.projectID+"/dashboards/generate", map[string]any{"name": "Clinic", "intent": "cost by patient city",
				"dataset_ids": []string{visits, patients}, "use_ai": false}, own).status(201)
			tile := ""
			for p, tl := range tiles(g) {
				if id := fmt.Sprint(tl["id"]); strings.Contains(id, "cost") && strings.Contains(id, "city") {
					tile = p
				}
			}
			if tile == "" {
				t.Fatalf("no cost by city tile: %s", g.Body)
			}
			cost := map[string]int{}
			for i, v := range c.visits {
				var pid int
				fmt.Sscan(v[0], &pid)
				cost[c.city[pid]] += c.cost[i]
			}
			td := e.do("GET", "/api/v1/dashboards/"+g.str("id")+"/tiles/"+tile+"/data", nil, own).status(200)
			if td.len("rows") != len(cost) {
				t.Fatalf("cost by city: %s (want %v)", td.Body, cost)
			}
			for _, row := range td.get("rows").([]any) {
				rr := row.([]any)
				if fmt.Sprint(rr[1]) != fmt.Sprint(cost[fmt.Sprint(rr[0])]) {
					t.Fatalf("cost in %v: %v, the files say %d", rr[0], rr[1], cost[fmt.Sprint(rr[0])])
				}
			}

			// plan-views proposes exactly the two joins, on the keys.
			plan := e.do("POST", "/api/v1/projects/"+e.projectID+"/dashboards/plan-views", map[string]any{"dataset_ids": []string{patients, doctors, visits}}, own).status(200)
			if plan.len("views") != 2 {
				t.Fatalf("plan-views: %s", plan.Body)
			}
			for i := 0; i < 2; i++ {
				on := fmt.Sprint(plan.get(fmt.Sprintf("views.%d.definition.join.joins.0.on", i)))
				if !strings.Contains(on, "patient_id") && !strings.Contains(on, "doctor_id") || strings.Contains(on, " id") {
					t.Fatalf("join %d: %s", i, on)
				}
			}
		})
	}
}

// TestKeysOfAFile: which column keys a file's records, on shapes other than the clinic's:
// a key named at creation, one named after the dataset, an id column that repeats, a file
// with none; creates with and without the key.
func TestKeysOfAFile(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	own := bearer(e.ownerToken)

	// order_id keys orders; an integer key is generated for a record created without one.
	orders := e.uploadAndCreate(e.ownerToken, "Orders", "orders.csv", "order_id,total,note\n5012,19.5,a\n5007,3,b\n5040,7.25,\n")
	e.waitDataset(e.ownerToken, orders)
	c := e.do("POST", "/api/v1/datasets/"+orders+"/data", map[string]any{"total": 1}, own).status(201)
	if c.num("order_id") != 5041 || c.get("id") != nil || c.Header.Get("Location") != "/api/v1/datasets/"+orders+"/data/5041" {
		t.Fatalf("created: %s %v", c.Body, c.Header)
	}
	if c := e.do("POST", "/api/v1/datasets/"+orders+"/data", map[string]any{"order_id": 6000, "total": 2}, own).status(201); c.num("order_id") != 6000 {
		t.Fatalf("created with its key: %s", c.Body)
	}
	e.do("POST", "/api/v1/datasets/"+orders+"/data", map[string]any{"order_id": 5012}, own).apiError(409, "CONFLICT")
	// The key names the record: it does not change.
	e.do("PATCH", "/api/v1/datasets/"+orders+"/data/5012", map[string]any{"order_id": 1}, own).apiError(400, "VALIDATION_ERROR", "body.order_id")
	rec := e.do("GET", "/api/v1/datasets/"+orders+"/data/5012", nil, own).status(200)
	if rec.num("order_id") != 5012 {
		t.Fatalf("record 5012: %s", rec.Body)
	}
	put := e.do("PUT", "/api/v1/datasets/"+orders+"/data/5012", map[string]any{"order_id": 5012, "total": 20, "version": rec.num("version")}, own).status(200)
	if put.num("order_id") != 5012 || put.get("total") != float64(20) {
		t.Fatalf("put: %s", put.Body)
	}
	e.do("DELETE", "/api/v1/datasets/"+orders+"/data/5007", nil, own).status(200)
	e.do("GET", "/api/v1/datasets/"+orders+"/data/5007", nil, own).apiError(404, "RECORD_NOT_FOUND")

	// A uuid key named at creation, though the file also has a repeating id column.
	uuids := "id,ref,label\n1,8d3c7a2e-1f4b-4c9e-a1b2-0c9d8e7f6a51,x\n1,1b2c3d4e-5f60-4718-8293-a4b5c6d7e8f9,y\n"
	items := e.uploadAndCreateWith(e.ownerToken, "Items", "items.csv", uuids, map[string]any{"primary_key": "ref"})
	e.waitDataset(e.ownerToken, items)
	if r := e.do("GET", "/api/v1/datasets/"+items+"/data/1b2c3d4e-5f60-4718-8293-a4b5c6d7e8f9", nil, own).status(200); r.str("label") != "y" || r.num("src_id") != 1 {
		t.Fatalf("item by its uuid: %s", r.Body)
	}
	e.do("POST", "/api/v1/datasets/"+items+"/data", map[string]any{"label": "z"}, own).apiError(400, "VALIDATION_ERROR", "body.ref")

	// A named key that is no column of the file is refused before anything is made; one
	// whose values repeat fails the dataset and says why.
	body, h := multipartBody(t, "k.csv", []byte("code,name\nA,x\nA,y\n"), nil)
	up := e.do("POST", "/api/v1/projects/"+e.projectID+"/datasets/upload", body, own, h).status(201)
	e.do("POST", "/api/v1/projects/"+e.projectID+"/datasets", map[string]any{"name": "K", "primary_key": "nope",
		"source": map[string]any{"file_id": up.str("file_id")}}, own).apiError(400, "VALIDATION_ERROR", "body.primary_key")
	bad := e.uploadAndCreateWith(e.ownerToken, "K", "k.csv", "code,name\nA,x\nA,y\n", map[string]any{"primary_key": "code"})
	if d := e.waitDataset(e.ownerToken, bad); d.str("status") != "failed" || !strings.Contains(d.str("error"), "primary_key code") {
		t.Fatalf("a repeating primary_key: %s", d.Body)
	}

	// A column named after the dataset wins over one other datasets refer to; nulls, and
	// a type that cannot key records, are no keys.
	people := e.uploadAndCreate(e.ownerToken, "People", "people.csv", "order_id,person_id,born\n5012,P1,1990-01-01\n5040,P2,1991-02-02\n")
	e.waitDataset(e.ownerToken, people)
	if r := e.do("GET", "/api/v1/datasets/"+people+"/data/P2", nil, own).status(200); r.num("order_id") != 5040 {
		t.Fatalf("people by person_id: %s", r.Body)
	}
	none := e.uploadAndCreate(e.ownerToken, "Readings", "readings.csv", "reading_id,at,value\n1,2024-01-01,3\n,2024-01-02,4\n")
	e.waitDataset(e.ownerToken, none)
	if r := e.do("GET", "/api/v1/datasets/"+none+"/data?sort=at", nil, own).status(200); r.num("data.0.id") < 1 || r.get("data.0.reading_id") != float64(1) {
		t.Fatalf("a file without a key keeps the generated id: %s", r.Body)
	}
}

// TestKeysAndRelationshipsThroughTheSchemaAPI: the key can be changed (checked, breaking) and
// relationships declared (checked against the data) and removed; inference does not undo them.
func TestKeysAndRelationshipsThroughTheSchemaAPI(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	own := bearer(e.ownerToken)
	// No key is found (labels is not a key name), so the records have generated ids.
	teams := e.uploadAndCreate(e.ownerToken, "Squads", "squads.csv", "label,city\nred,Oslo\nblue,Bergen\ngreen,Oslo\n")
	e.waitDataset(e.ownerToken, teams)
	players := e.uploadAndCreate(e.ownerToken, "Players", "players.csv", "player_id,squad_label,name\n1,red,A\n2,blue,B\n3,red,C\n")
	e.waitDataset(e.ownerToken, players)
	schema := func(id string) string { return "/api/v1/datasets/" + id + "/schema" }
	rels := func(id string) int {
		return e.do("GET", "/api/v1/projects/"+e.projectID+"/datasets/"+id+"/schema", nil, own).status(200).len("relationships")
	}
	if rels(players) != 0 {
		t.Fatal("a relationship to squads' generated id")
	}
	// A relationship can only point at a key or unique column.
	e.do("PUT", schema(players), map[string]any{"changes": []any{map[string]any{"op": "add_relationship", "column": "squad_label",
		"references": map[string]any{"dataset_id": teams, "column": "label"}}}}, own).apiError(400, "VALIDATION_ERROR", "body.changes[0].references.column")
	// label becomes the key: checked, the generated id goes, records are addressed by label.
	e.do("PUT", schema(teams), map[string]any{"changes": []any{map[string]any{"op": "set_primary_key", "column": "city"}}}, own).apiError(422, "SCHEMA_VIOLATION")
	e.do("PUT", schema(teams), map[string]any{"changes": []any{map[string]any{"op": "set_primary_key", "column": "label"}}}, own).status(200)
	if r := e.do("GET", "/api/v1/datasets/"+teams+"/data/blue", nil, own).status(200); r.str("city") != "Bergen" || r.get("id") != nil {
		t.Fatalf("squad blue: %s", r.Body)
	}
	// A breaking change: the next major version, and the changelog says why.
	cl := e.do("GET", "/api/v1/datasets/"+teams+"/changelog", nil, own).status(200)
	if cl.str("versions.0.level") != "major" || cl.str("current") != "2.0.0" || !strings.Contains(string(cl.Body), "primary-key-changed") {
		t.Fatalf("changelog after set_primary_key: %s", cl.Body)
	}
	e.do("PUT", schema(teams), map[string]any{"changes": []any{map[string]any{"op": "drop_column", "column": "label"}}}, own).apiError(400, "VALIDATION_ERROR", "body.changes[0].column")
	// Declared, checked against the data: a value missing in squads is reported.
	e.do("POST", "/api/v1/datasets/"+players+"/data", map[string]any{"player_id": 9, "squad_label": "purple", "name": "X"}, own).status(201)
	e.do("PUT", schema(players), map[string]any{"changes": []any{map[string]any{"op": "add_relationship", "column": "squad_label",
		"references": map[string]any{"dataset_id": teams}}}}, own).apiError(422, "SCHEMA_VIOLATION")
	e.do("DELETE", "/api/v1/datasets/"+players+"/data/9?soft=false", nil, own).status(200)
	e.do("PUT", schema(players), map[string]any{"changes": []any{map[string]any{"op": "add_relationship", "column": "squad_label",
		"references": map[string]any{"dataset_id": teams}}}}, own).status(200)
	p := e.do("GET", "/api/v1/datasets/"+players+"/data/3?expand=squad_label_ref", nil, own).status(200)
	if p.str("_links.squad_label_ref") != "/api/v1/datasets/"+teams+"/data/red" || p.str("_embedded.squad_label_ref.city") != "Oslo" {
		t.Fatalf("declared link: %s", p.Body)
	}
	// Removed, it stays removed after the next analysis.
	e.do("PUT", schema(players), map[string]any{"changes": []any{map[string]any{"op": "drop_relationship", "column": "squad_label"}}}, own).status(200)
	e.waitJob(e.ownerToken, e.do("POST", "/api/v1/projects/"+e.projectID+"/datasets/"+players+"/refresh", nil, own).status(202).str("job_id"))
	if rels(players) != 0 {
		t.Fatal("a removed relationship came back")
	}
	e.do("PUT", schema(players), map[string]any{"changes": []any{map[string]any{"op": "drop_relationship", "column": "squad_label"}}}, own).apiError(400, "VALIDATION_ERROR", "body.changes[0].column")
}
