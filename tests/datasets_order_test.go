package tests

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"testing"
)

// export is a set of files as a business exports them, with the keys and relationships a
// person reading them would name (worked out here from how the files were made, not by the
// service).
type export struct {
	files []exportFile // things first, events last: the order people usually upload
	keys  map[string]string
	links []string // from.column → to.column, by dataset names
}

type exportFile struct{ name, content string }

// exports are four unrelated domains keyed by codes, serials, references, numbers and ISBNs,
// never by an id column, with rows in no order.
func exports(seed uint64) map[string]export {
	r := rand.New(rand.NewPCG(seed, seed*7+1))
	csv := func(header string, rows []string) string {
		r.Shuffle(len(rows), func(i, j int) { rows[i], rows[j] = rows[j], rows[i] })
		return header + "\n" + strings.Join(rows, "\n") + "\n"
	}
	codes := func(prefix string, n, width int) []string {
		var out []string
		for _, k := range r.Perm(n * 3)[:n] {
			out = append(out, fmt.Sprintf("%s%0*d", prefix, width, k+1))
		}
		return out
	}
	out := map[string]export{}

	// Bike rentals: stations by station_code, bikes by bike_serial, rentals by rental_ref
	// with two references to stations, named by their role.
	stations, bikes := codes("ST-", 14, 2), codes("BK", 30, 5)
	var rows []string
	for i, s := range stations {
		rows = append(rows, fmt.Sprintf("%s,Station %d,%s,%d", s, i, []string{"Harbor", "Old Town", "Uptown"}[i%3], 8+i%5))
	}
	st := csv("station_code,name,neighborhood,docks", rows)
	rows = nil
	for i, b := range bikes {
		rows = append(rows, fmt.Sprintf("%s,%s", []string{"city", "electric"}[i%2], b))
	}
	bk := csv("model,bike_serial", rows)
	rows = nil
	for i := range 200 {
		rows = append(rows, fmt.Sprintf("2024-05-%02d 10:%02d:00,%s,%s,%s,R-%06d,%d.%02d,%s", 1+r.IntN(28), r.IntN(60), bikes[r.IntN(len(bikes))],
			stations[r.IntN(len(stations))], stations[r.IntN(len(stations))], 900000-i*7, 2+r.IntN(20), r.IntN(100), []string{"member", "casual"}[r.IntN(2)]))
	}
	out["rentals"] = export{
		files: []exportFile{{"stations", st}, {"bikes", bk}, {"rentals", csv("started_at,bike_serial,start_station,end_station,rental_ref,price,member_type", rows)}},
		keys:  map[string]string{"stations": "station_code", "bikes": "bike_serial", "rentals": "rental_ref"},
		links: []string{"rentals.bike_serial → bikes.bike_serial", "rentals.end_station → stations.station_code", "rentals.start_station → stations.station_code"},
	}

	// A university: courses by course code, students by student number, enrolments by
	// both (no key of their own).
	courses := codes("CS-", 12, 3)
	rows = nil
	for i, c := range courses {
		rows = append(rows, fmt.Sprintf("%s,Course %d,%d", c, i, 3+i%3))
	}
	co := csv("course_code,title,credits", rows)
	var numbers []int
	rows = nil
	for _, k := range r.Perm(5000)[:80] {
		numbers = append(numbers, 2_010_000+k)
		rows = append(rows, fmt.Sprintf("Student %d,%d,%d", k, 2_010_000+k, 1990+k%9))
	}
	su := csv("full_name,student_number,born", rows)
	rows = nil
	for range 300 {
		rows = append(rows, fmt.Sprintf("%d,%s,%s", numbers[r.IntN(len(numbers))], courses[r.IntN(len(courses))], []string{"A", "B", "C"}[r.IntN(3)]))
	}
	out["university"] = export{
		files: []exportFile{{"courses", co}, {"students", su}, {"enrollments", csv("student_number,course_code,grade", rows)}},
		keys:  map[string]string{"courses": "course_code", "students": "student_number", "enrollments": ""},
		links: []string{"enrollments.course_code → courses.course_code", "enrollments.student_number → students.student_number"},
	}

	// A library: books by ISBN (text, not the first column), members by member number,
	// loans referring to both.
	rows = nil
	var isbns []string
	for i, k := range r.Perm(900)[:40] {
		isbn := fmt.Sprintf("978-1-%04d-%04d-%d", 1000+k, 2000+i, k%10)
		isbns = append(isbns, isbn)
		rows = append(rows, fmt.Sprintf("Title %d,Author %d,%s", k, k%7, isbn))
	}
	bo := csv("title,author,isbn", rows)
	members := codes("M", 25, 4)
	rows = nil
	for i, m := range members {
		rows = append(rows, fmt.Sprintf("%s,Member %d", m, i))
	}
	me := csv("member_no,name", rows)
	rows = nil
	for range 150 {
		rows = append(rows, fmt.Sprintf("2024-%02d-%02d,%s,%s", 1+r.IntN(12), 1+r.IntN(28), isbns[r.IntN(len(isbns))], members[r.IntN(len(members))]))
	}
	out["library"] = export{
		files: []exportFile{{"books", bo}, {"members", me}, {"loans", csv("loaned_on,isbn,member_no", rows)}},
		keys:  map[string]string{"books": "isbn", "members": "member_no", "loans": ""},
		links: []string{"loans.isbn → books.isbn", "loans.member_no → members.member_no"},
	}

	// Warehouses whose site_code no rule of one file makes the key (not first, not named
	// after the dataset): shipments pointing at it promote it, whatever came first.
	sites := codes("S", 9, 3)
	rows = nil
	for i, s := range sites {
		rows = append(rows, fmt.Sprintf("City %d,%s,%d", i, s, 100*(i+1)))
	}
	wh := csv("city,site_code,capacity", rows)
	rows = nil
	for i := range 60 {
		rows = append(rows, fmt.Sprintf("%d,%s,%d", i%13, sites[r.IntN(len(sites))], 1+r.IntN(40)))
	}
	out["logistics"] = export{
		files: []exportFile{{"warehouses", wh}, {"shipments", csv("weight_class,site_code,pallets", rows)}},
		keys:  map[string]string{"warehouses": "site_code", "shipments": ""},
		links: []string{"shipments.site_code → warehouses.site_code"},
	}
	return out
}

// TestKeysAndRelationshipsInAnyOrder: each export, uploaded with no primary_key in the order
// people use and in the reverse, gets the same keys and the same relationships.
func TestKeysAndRelationshipsInAnyOrder(t *testing.T) {
	t.Parallel()
	for name, ex := range exports(11) {
		for _, reverse := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/reverse=%v", name, reverse), func(t *testing.T) {
				t.Parallel()
				e := newEnv(t)
				own := bearer(e.ownerToken)
				files := slices.Clone(ex.files)
				if reverse {
					slices.Reverse(files)
				}
				ids := map[string]string{}
				for _, f := range files {
					ids[f.name] = e.uploadAndCreate(e.ownerToken, f.name, f.name+".csv", f.content)
					if d := e.waitDataset(e.ownerToken, ids[f.name]); d.str("status") != "active" {
						t.Fatalf("%s: %s", f.name, d.Body)
					}
				}
				var links []string
				for _, f := range files {
					s := e.do("GET", "/api/v1/projects/"+e.projectID+"/datasets/"+ids[f.name]+"/schema", nil, own).status(200)
					key := ""
					for i := 0; i < s.len("tables.0.columns"); i++ {
						if s.get(fmt.Sprintf("tables.0.columns.%d.is_primary_key", i)) == true && s.get(fmt.Sprintf("tables.0.columns.%d.system", i)) != true {
							key = s.str(fmt.Sprintf("tables.0.columns.%d.name", i))
						}
					}
					if key != ex.keys[f.name] {
						t.Errorf("%s is keyed by %q, want %q: %s", f.name, key, ex.keys[f.name], s.Body)
					}
					for i := 0; i < s.len("relationships"); i++ {
						p := fmt.Sprintf("relationships.%d.", i)
						if s.str(p+"type") == "many-to-one" {
							links = append(links, fmt.Sprintf("%s.%s → %s.%s", f.name, s.str(p+"from_column"), s.str(p+"to_dataset_name"), s.str(p+"to_column")))
						}
					}
				}
				sort.Strings(links)
				if strings.Join(links, "; ") != strings.Join(ex.links, "; ") {
					t.Errorf("relationships %v, want %v", links, ex.links)
				}
				if name != "rentals" {
					return
				}
				// Two relationships to stations, each with its role: a rental links to both
				// of its stations, a station to the rentals starting and ending there.
				r := e.do("GET", "/api/v1/datasets/"+ids["rentals"]+"/data?limit=1", nil, own).status(200)
				for _, role := range []string{"start_station", "end_station"} {
					want := "/api/v1/datasets/" + ids["stations"] + "/data/" + r.str("data.0."+role)
					if got := r.str("data.0._links." + role + "_ref"); got != want {
						t.Errorf("rental's %s link %q, want %q: %s", role, got, want, r.Body)
					}
				}
				st := e.do("GET", "/api/v1/datasets/"+ids["stations"]+"/data/"+r.str("data.0.start_station"), nil, own).status(200)
				for _, role := range []string{"start_station", "end_station"} {
					if !strings.Contains(st.str("_links.rentals_by_"+role), ids["rentals"]) {
						t.Errorf("station's rentals by %s: %s", role, st.Body)
					}
				}
			})
		}
	}
}
