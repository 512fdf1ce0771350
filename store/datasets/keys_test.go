package datasets

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"time"

	"dataplatform/store"
	"dataplatform/store/ingest"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
)

func TestKeyCandidates(t *testing.T) {
	t.Parallel()
	col := func(name, orig string, typ ingest.Type, nulls int64) ingest.Column {
		return ingest.Column{Name: name, Original: orig, Type: typ, NullCount: nulls}
	}
	for _, tc := range []struct {
		dataset string
		cols    []ingest.Column
		want    string // candidate names in order
	}{
		{"Patients", []ingest.Column{col("name", "name", ingest.Text, 0), col("patient_id", "patient_id", ingest.BigInt, 0)}, "patient_id"},
		{"patients", []ingest.Column{col("patientid", "PatientID", ingest.Integer, 0)}, "patientid"},
		{"People", []ingest.Column{col("person_id", "person_id", ingest.Text, 0)}, "person_id"},
		{"Categories", []ingest.Column{col("category_id", "category_id", ingest.UUID, 0)}, "category_id"},
		// The file's id first, then the column named after the dataset.
		{"Orders", []ingest.Column{col("order_id", "order_id", ingest.BigInt, 0), col("src_id", "id", ingest.BigInt, 0)}, "src_id,order_id"},
		// The file's first column when it is shaped as an identifier; not one further on.
		{"Staff", []ingest.Column{col("badge_no", "badge_no", ingest.Text, 0), col("city", "city", ingest.Text, 0)}, "badge_no"},
		{"Staff", []ingest.Column{col("city", "city", ingest.Text, 0), col("badge_no", "badge_no", ingest.Text, 0)}, ""},
		// Codes, serials, references and numbers named after the dataset, whatever their place.
		{"stations", []ingest.Column{col("name", "name", ingest.Text, 0), col("station_code", "station_code", ingest.Text, 0)}, "station_code"},
		{"Bikes", []ingest.Column{col("model", "model", ingest.Text, 0), col("bike_serial", "bike_serial", ingest.Text, 0)}, "bike_serial"},
		{"rentals", []ingest.Column{col("bike_serial", "bike_serial", ingest.Text, 0), col("rental_ref", "rental_ref", ingest.Text, 0)}, "rental_ref,bike_serial"},
		{"Enrolled students", []ingest.Column{col("name", "name", ingest.Text, 0), col("student_number", "Student Number", ingest.BigInt, 0)}, "student_number"},
		// By one of the dataset's words, then by an abbreviation (stu_id in students).
		{"Course catalog", []ingest.Column{col("title", "title", ingest.Text, 0), col("course_code", "course_code", ingest.Text, 0)}, "course_code"},
		{"Students", []ingest.Column{col("lname", "LName", ingest.Text, 0), col("stuid", "StuID", ingest.Integer, 0)}, "stuid"},
		// Names that identify by themselves; a column named as the dataset.
		{"Library", []ingest.Column{col("title", "title", ingest.Text, 0), col("isbn", "ISBN", ingest.Text, 0)}, "isbn"},
		// A short name of the dataset's first letters with id or no; a social security number.
		{"Aircraft", []ingest.Column{col("name", "name", ingest.Text, 0), col("aid", "aid", ingest.Integer, 0)}, "aid"},
		{"flights", []ingest.Column{col("origin", "origin", ingest.Text, 0), col("flno", "flno", ingest.Integer, 0), col("aid", "aid", ingest.Integer, 0)}, "flno"},
		{"Patients", []ingest.Column{col("name", "name", ingest.Text, 0), col("ssn", "SSN", ingest.Text, 0)}, "ssn"},
		{"Allergy_Type", []ingest.Column{col("allergytype", "AllergyType", ingest.Text, 0), col("allergy", "Allergy", ingest.Text, 0)}, "allergytype,allergy"},
		// Empty values, or a type that cannot key records, are no candidates.
		{"Readings", []ingest.Column{col("reading_id", "reading_id", ingest.BigInt, 1), col("src_id", "id", ingest.Numeric, 0)}, ""},
		{"Visits", []ingest.Column{col("notes", "notes", ingest.Text, 0), col("patient_id", "patient_id", ingest.BigInt, 0)}, ""},
	} {
		var got []string
		for _, k := range keyCandidates(tc.dataset, tc.cols) {
			got = append(got, tc.cols[k.index].Name)
		}
		if strings.Join(got, ",") != tc.want {
			t.Errorf("%s: candidates %v, want %s", tc.dataset, got, tc.want)
		}
	}
}

// loaded makes a dataset table the way the ingest does before it chooses the key (a
// provisional generated id, no primary key) and inserts rows.
func (p *project) loaded(t *testing.T, name string, cols []ingest.Column, rows ...[]any) *store.Dataset {
	t.Helper()
	ctx := context.Background()
	cj, _ := json.Marshal(cols)
	d := &store.Dataset{ID: store.NewID("ds"), ProjectID: p.id, OrgID: p.org, Name: name, Type: "file", Status: "active", SourceType: "csv",
		TableSchema: p.org, Columns: string(cj), CreatedAt: p.now, UpdatedAt: p.now}
	if err := store.CreateDataset(ctx, p.st.DB, d); err != nil {
		t.Fatal(err)
	}
	ddl, err := createTable(d.TableSchema, d.ID, cols)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.st.DB.Exec(ddl); err != nil {
		t.Fatal(err)
	}
	names := make([]string, len(cols))
	params := make([]string, len(cols))
	for i, c := range cols {
		names[i], params[i] = pq.QuoteIdentifier(c.Name), fmt.Sprintf("$%d", i+1)
	}
	for _, r := range rows {
		if _, err := p.st.DB.Exec(`INSERT INTO `+Table(d.TableSchema, d.ID)+` (`+strings.Join(names, ", ")+`) VALUES (`+strings.Join(params, ", ")+`)`, r...); err != nil {
			t.Fatal(err)
		}
	}
	return d
}

// TestChooseKey: the first candidate whose values are unique and present keys the records;
// the others that are unique get a UNIQUE constraint; without one the generated id stays.
func TestChooseKey(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	ctx := context.Background()
	choose := func(d *store.Dataset, cols []ingest.Column, declared bool) ([]ingest.Column, error) {
		tx := p.st.DB.MustBeginTx(ctx, nil)
		defer tx.Rollback()
		cands := keyCandidates(d.Name, cols)
		if declared {
			cands = []keyCandidate{{0, "named at creation"}}
		}
		out, err := chooseKey(ctx, tx, d.TableSchema, d.ID, slices.Clone(cols), cands, declared)
		if err == nil {
			err = tx.Commit()
		}
		return out, err
	}
	keyOf := func(cols []ingest.Column) string {
		k, _ := UserKey(cols)
		return k.Name
	}
	pk := func(d *store.Dataset) string {
		var cols []string
		if err := p.st.DB.Select(&cols, `SELECT a.attname FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey)
			WHERE i.indrelid = $1::regclass AND i.indisprimary`, Table(d.TableSchema, d.ID)); err != nil {
			t.Fatal(err)
		}
		return strings.Join(cols, ",")
	}

	// Unsorted ids with gaps, and a file id column that repeats: the entity key wins.
	cols := []ingest.Column{{Name: "src_id", Original: "id", Type: ingest.BigInt, Nullable: true}, {Name: "patient_id", Original: "patient_id", Type: ingest.BigInt, Nullable: true},
		{Name: "city", Original: "city", Type: ingest.Text, Nullable: true}}
	r := rand.New(rand.NewPCG(1, 2))
	var rows [][]any
	for i, id := range r.Perm(500) {
		rows = append(rows, []any{i % 7, 1001 + id*3, "x"})
	}
	d := p.loaded(t, "Patients", cols, rows...)
	got, err := choose(d, cols, false)
	if err != nil || keyOf(got) != "patient_id" || pk(d) != "patient_id" {
		t.Fatalf("patients: key %q, primary key %q, %v", keyOf(got), pk(d), err)
	}
	if !strings.Contains(got[0].Description, "repeat") || got[1].Nullable {
		t.Fatalf("columns: %+v", got)
	}
	// Records created without the integer key get the next one after the largest.
	var next int64
	if err := p.st.DB.Get(&next, `INSERT INTO `+Table(d.TableSchema, d.ID)+` (city) VALUES ('y') RETURNING patient_id`); err != nil || next != 1001+499*3+1 {
		t.Fatalf("generated key %d, %v", next, err)
	}

	// Both id and the entity key unique: id keys the records, the other becomes UNIQUE.
	both := []ingest.Column{{Name: "src_id", Original: "ID", Type: ingest.Text}, {Name: "order_id", Original: "order_id", Type: ingest.BigInt}}
	d = p.loaded(t, "Orders", both, []any{"b", 2}, []any{"a", 1}, []any{"c", 3})
	got, err = choose(d, both, false)
	if err != nil || keyOf(got) != "id" || pk(d) != "id" || got[1].Constraints == nil || !got[1].Constraints.Unique || !strings.Contains(got[0].Description, "order_id") {
		t.Fatalf("orders: %+v, primary key %q, %v", got, pk(d), err)
	}

	// Nulls and duplicates: no key, the generated id is the primary key.
	none := []ingest.Column{{Name: "reading_id", Original: "reading_id", Type: ingest.BigInt}}
	d = p.loaded(t, "Readings", none, []any{1}, []any{1}, []any{2})
	if got, err = choose(d, none, false); err != nil || keyOf(got) != "" || pk(d) != "id" {
		t.Fatalf("readings: %+v, primary key %q, %v", got, pk(d), err)
	}

	// uuid keys; a declared key whose values repeat fails with the value.
	uu := []ingest.Column{{Name: "asset_id", Original: "asset_id", Type: ingest.UUID}}
	d = p.loaded(t, "Assets", uu, []any{"8d3c7a2e-1f4b-4c9e-a1b2-0c9d8e7f6a51"}, []any{"1b2c3d4e-5f60-4718-8293-a4b5c6d7e8f9"})
	if got, err = choose(d, uu, false); err != nil || keyOf(got) != "asset_id" {
		t.Fatalf("assets: %+v, %v", got, err)
	}
	d = p.loaded(t, "Assets2", uu, []any{"8d3c7a2e-1f4b-4c9e-a1b2-0c9d8e7f6a51"}, []any{"8d3c7a2e-1f4b-4c9e-a1b2-0c9d8e7f6a51"})
	if _, err = choose(d, uu, true); err == nil || !strings.Contains(err.Error(), "8d3c7a2e") {
		t.Fatalf("a declared key that repeats: %v", err)
	}
}

// TestRelationshipsToUserKeys: links point at a key or unique column holding the user's own
// values — the same name first, then the key of the dataset a column is named after — and
// never at a generated id, even when the values happen to match it.
func TestRelationshipsToUserKeys(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	ctx := context.Background()
	// Doctors keyed by text ids; patients by integer ids 1…3 in no order; teams with only
	// the generated id (1…3 as well).
	doctors := p.dataset(t, "Doctors", []ingest.Column{{Name: "doctor_id", Type: ingest.Text, Key: true}}, []any{"D-2"}, []any{"D-1"})
	patients := p.dataset(t, "Patients", []ingest.Column{{Name: "patient_id", Type: ingest.BigInt, Key: true}, {Name: "city", Type: ingest.Text}},
		[]any{3, "a"}, []any{1, "b"}, []any{2, "c"})
	p.dataset(t, "Teams", []ingest.Column{{Name: "name", Type: ingest.Text}}, []any{"x"}, []any{"y"}, []any{"z"})
	// Clients: keyed by id, with client_id unique as well.
	clients := p.dataset(t, "Clients", []ingest.Column{{Name: "id", Type: ingest.BigInt, Key: true},
		{Name: "client_id", Type: ingest.Text, Constraints: &ingest.Constraints{Unique: true}}}, []any{10, "C-1"}, []any{11, "C-2"})
	cols := []ingest.Column{{Name: "patient_id", Type: ingest.BigInt}, {Name: "doctor_id", Type: ingest.Text}, {Name: "team_id", Type: ingest.BigInt},
		{Name: "client_id", Type: ingest.Text}}
	visits := p.dataset(t, "Visits", cols, []any{1, "D-2", 1, "C-2"}, []any{3, "D-1", 2, "C-1"}, []any{3, "D-2", 3, "C-1"})
	p.analyze(t, visits)
	rels, err := store.Relationships(ctx, p.st.DB, visits.ID)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, r := range rels {
		got[r.FromColumn] = r.ToDataset + "." + r.ToColumn + fmt.Sprint(r.ToKey)
	}
	want := map[string]string{"patient_id": patients.ID + ".patient_idtrue", "doctor_id": doctors.ID + ".doctor_idtrue",
		"client_id": clients.ID + ".client_idfalse"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("relationships %v, want %v", got, want)
	}
}

// TestSameIdentifiersNotLinked: datasets identified by a column of the same name that names
// none of them (copies of one file, one period and the next) are not linked to each other,
// however their values overlap, and a reference by that name alone to one of them is not
// guessed; a column named after a dataset is linked, unique or not.
func TestSameIdentifiersNotLinked(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	ctx := context.Background()
	code := func() []ingest.Column {
		return []ingest.Column{{Name: "batch_code", Type: ingest.Text, Constraints: &ingest.Constraints{Unique: true}},
			{Name: "sensor_code", Type: ingest.Text}, {Name: "reading", Type: ingest.Numeric}}
	}
	sensors := p.dataset(t, "Sensors", []ingest.Column{{Name: "sensor_code", Type: ingest.Text, Key: true}}, []any{"S-9"}, []any{"S-4"}, []any{"S-7"})
	var copies []*store.Dataset
	for _, name := range []string{"Readings 2023", "Readings 2024", "Readings copy"} {
		copies = append(copies, p.dataset(t, name, code(), []any{"B-4", "S-4", 1.5}, []any{"B-9", "S-9", 2.5}))
	}
	for _, d := range copies {
		p.analyze(t, d)
	}
	for _, d := range copies {
		rels, err := store.Relationships(ctx, p.st.DB, d.ID)
		if err != nil {
			t.Fatal(err)
		}
		if len(rels) != 1 || rels[0].FromColumn != "sensor_code" || rels[0].ToDataset != sensors.ID {
			t.Fatalf("%s: %+v, want only sensor_code → sensors, no links between datasets identified alike", d.Name, rels)
		}
	}
	// A column of that name that repeats (a reference) has three datasets it may mean: none
	// is guessed.
	runs := p.dataset(t, "Calibration runs", []ingest.Column{{Name: "batch_code", Type: ingest.Text}}, []any{"B-4"}, []any{"B-4"}, []any{"B-9"})
	p.analyze(t, runs)
	if rels, err := store.Relationships(ctx, p.st.DB, runs.ID); err != nil || len(rels) != 0 {
		t.Fatalf("calibration runs: %+v %v, want no guess among three datasets", rels, err)
	}
	// Named after Sensors: linked to its key though unique in its own dataset.
	profiles := p.dataset(t, "Sensor profiles", []ingest.Column{{Name: "sensor_id", Type: ingest.Text, Constraints: &ingest.Constraints{Unique: true}}}, []any{"S-7"})
	p.analyze(t, profiles)
	rels, err := store.Relationships(ctx, p.st.DB, profiles.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(rels) != 1 || rels[0].ToDataset != sensors.ID || rels[0].ToColumn != "sensor_code" || rels[0].FromColumn != "sensor_id" {
		t.Fatalf("profiles: %+v, want sensor_id → sensors.sensor_code", rels)
	}
}

// analyze runs the dataset's analysis (keys, relationships) in a transaction of its own.
func (p *project) analyze(t *testing.T, d *store.Dataset) {
	t.Helper()
	tx := p.st.DB.MustBeginTx(context.Background(), nil)
	defer tx.Rollback()
	if err := Analyze(context.Background(), tx, d, p.now); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
}

// TestRekey: datasets loaded before keys were chosen: a generated id that holds the file's
// own ids becomes the key; relationships inferred to a generated id of load order go, and
// both datasets record it as a schema change.
func TestRekey(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	ctx := context.Background()
	dir := t.TempDir()
	file := func(d *store.Dataset, content string) {
		key := d.ID + ".csv"
		if err := os.WriteFile(filepath.Join(dir, key), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := p.st.DB.Exec(`UPDATE platform.datasets SET storage_key = $2 WHERE id = $1`, d.ID, key); err != nil {
			t.Fatal(err)
		}
	}
	name := []ingest.Column{{Name: "name", Type: ingest.Text}}
	own := p.dataset(t, "Customers", name, []any{"a"}, []any{"b"})
	file(own, "id,name\n1,a\n2,b\n")
	gen := p.dataset(t, "Teams", name, []any{"x"}, []any{"y"})
	file(gen, "name\nx\ny\n")
	ref := p.dataset(t, "Orders", []ingest.Column{{Name: "customer_id", Type: ingest.BigInt}, {Name: "team_id", Type: ingest.BigInt}}, []any{1, 2})
	for _, to := range []*store.Dataset{own, gen} {
		col := map[string]string{own.ID: "customer_id", gen.ID: "team_id"}[to.ID]
		if _, err := p.st.DB.Exec(`INSERT INTO platform.dataset_relationships (from_dataset, from_table, from_column, to_dataset, to_table, to_column, origin, created_at)
			VALUES ($1, $1, $2, $3, $3, 'id', 'inferred', now())`, ref.ID, col, to.ID); err != nil {
			t.Fatal(err)
		}
	}
	rk := &Rekeyer{Store: p.st, Clock: func() time.Time { return p.now }, UploadPath: func(k string) string { return filepath.Join(dir, k) }}
	for _, d := range []*store.Dataset{own, gen, ref} {
		if err := p.st.Tx(ctx, func(tx *sqlx.Tx) error { return rk.rekey(ctx, tx, d.ID) }); err != nil {
			t.Fatal(err)
		}
	}
	d, err := store.DatasetByID(ctx, p.st.DB, own.ID, false)
	if err != nil {
		t.Fatal(err)
	}
	var cols []ingest.Column
	_ = json.Unmarshal([]byte(d.Columns), &cols)
	if k, ok := UserKey(cols); !ok || k.Name != "id" || d.SchemaVersion != 2 {
		t.Fatalf("customers: %s (schema version %d)", d.Columns, d.SchemaVersion)
	}
	// The file's ids may now be given.
	if _, err := p.st.DB.Exec(`INSERT INTO ` + Table(own.TableSchema, own.ID) + ` (id, name) VALUES (77, 'c')`); err != nil {
		t.Fatal(err)
	}
	rels, err := store.Relationships(ctx, p.st.DB, ref.ID)
	if err != nil || len(rels) != 1 || rels[0].ToDataset != own.ID || !rels[0].ToKey {
		t.Fatalf("relationships after: %+v %v", rels, err)
	}
	for _, id := range []string{gen.ID, ref.ID} {
		var changes []string
		if err := p.st.DB.Select(&changes, `SELECT changes::text FROM platform.dataset_schema_changes WHERE dataset_id = $1`, id); err != nil {
			t.Fatal(err)
		}
		if len(changes) != 1 || !strings.Contains(changes[0], "drop_relationship") || !strings.Contains(changes[0], "load") {
			t.Fatalf("%s's changes: %v", id, changes)
		}
	}
}

// TestReferencesNamedByRoleAndOneToOne: a column named as a dataset points at its key (a
// number too, when its whole name names it: campus → campuses), several columns may point at
// one dataset each by its role, and a dataset keyed by a reference named after another
// (one invoice per order) points at it; a count named after a dataset does not, whatever its
// values.
func TestReferencesNamedByRoleAndOneToOne(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	ctx := context.Background()
	campuses := p.dataset(t, "Campuses", []ingest.Column{{Name: "id", Type: ingest.BigInt, Key: true}, {Name: "town", Type: ingest.Text}},
		[]any{1, "a"}, []any{2, "b"}, []any{3, "c"})
	orders := p.dataset(t, "Orders", []ingest.Column{{Name: "order_id", Type: ingest.Text, Key: true}}, []any{"O-1"}, []any{"O-2"})
	fees := p.dataset(t, "Fees", []ingest.Column{{Name: "campus", Type: ingest.BigInt}, {Name: "campus_count", Type: ingest.BigInt}, {Name: "fee", Type: ingest.Numeric}},
		[]any{1, 2, 10.5}, []any{3, 1, 7})
	invoices := p.dataset(t, "Invoices", []ingest.Column{{Name: "order_id", Type: ingest.Text, Key: true}, {Name: "total", Type: ingest.Numeric}},
		[]any{"O-2", 5})
	moves := p.dataset(t, "Moves", []ingest.Column{{Name: "from_campus_id", Type: ingest.BigInt}, {Name: "to_campus_id", Type: ingest.BigInt}},
		[]any{1, 2}, []any{2, 3})
	for _, d := range []*store.Dataset{campuses, orders, fees, invoices, moves} { // as each arrives
		p.analyze(t, d)
	}
	got := map[string]string{}
	for _, d := range []*store.Dataset{fees, invoices, moves} {
		rels, err := store.Relationships(ctx, p.st.DB, d.ID)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rels {
			if r.FromDataset == d.ID {
				got[d.Name+"."+r.FromColumn] = r.ToDataset + "." + r.ToColumn
			}
		}
	}
	want := map[string]string{"Fees.campus": campuses.ID + ".id", "Invoices.order_id": orders.ID + ".order_id",
		"Moves.from_campus_id": campuses.ID + ".id", "Moves.to_campus_id": campuses.ID + ".id"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("relationships %v, want %v", got, want)
	}
}

// TestArrivalChangesAnEarlierReading: a reference found when one dataset could be meant is
// withdrawn when a second that fits as well arrives (as if both had come first), and comes
// back when that one is deleted.
func TestArrivalChangesAnEarlierReading(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	ctx := context.Background()
	lot := func() []ingest.Column {
		return []ingest.Column{{Name: "batch_code", Type: ingest.Text, Constraints: &ingest.Constraints{Unique: true}}}
	}
	runs := p.dataset(t, "Runs", []ingest.Column{{Name: "batch_code", Type: ingest.Text}, {Name: "minutes", Type: ingest.BigInt}},
		[]any{"B-4", 3}, []any{"B-4", 5}, []any{"B-9", 2})
	p.analyze(t, runs)
	links := func() int {
		rels, err := store.Relationships(ctx, p.st.DB, runs.ID)
		if err != nil {
			t.Fatal(err)
		}
		return len(rels)
	}
	a := p.dataset(t, "Lot A", lot(), []any{"B-4"}, []any{"B-9"})
	p.analyze(t, a)
	if links() != 1 {
		t.Fatal("runs.batch_code is not linked to the one lot that fits")
	}
	b := p.dataset(t, "Lot B", lot(), []any{"B-9"}, []any{"B-4"}, []any{"B-7"})
	p.analyze(t, b)
	if links() != 0 {
		t.Fatal("runs.batch_code still names one of two lots that fit")
	}
	if err := p.st.Tx(ctx, func(tx *sqlx.Tx) error {
		if err := Unlink(ctx, tx, b, p.now); err != nil {
			return err
		}
		_, err := tx.Exec(`DELETE FROM platform.datasets WHERE id = $1`, b.ID)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if links() != 1 {
		t.Fatal("runs.batch_code is not linked again once the other lot is deleted")
	}
}

// TestPromotionTheRowsNoLongerAllow: a column whose values repeat by the time it would be
// promoted (written since they were read) is not made the key; the analysis goes on and the
// relationships found to it go.
func TestPromotionTheRowsNoLongerAllow(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	ctx := context.Background()
	sites := p.dataset(t, "Warehouses", []ingest.Column{{Name: "city", Type: ingest.Text}, {Name: "site_code", Type: ingest.Text}},
		[]any{"a", "S1"}, []any{"b", "S1"})
	ships := p.dataset(t, "Shipments", []ingest.Column{{Name: "site_code", Type: ingest.Text}}, []any{"S1"})
	if _, err := p.st.DB.Exec(`INSERT INTO platform.dataset_relationships (from_dataset, from_table, from_column, to_dataset, to_table, to_column, origin, created_at)
		VALUES ($1, $1, 'site_code', $2, $2, 'site_code', 'inferred', now())`, ships.ID, sites.ID); err != nil {
		t.Fatal(err)
	}
	var cols []ingest.Column
	_ = json.Unmarshal([]byte(sites.Columns), &cols)
	before, err := store.DatasetByID(ctx, p.st.DB, sites.ID, false)
	if err != nil {
		t.Fatal(err)
	}
	err = p.st.Tx(ctx, func(tx *sqlx.Tx) error {
		got, err := promoteSafely(ctx, tx, member{sites, cols}, "site_code", false, p.now)
		if got != nil {
			t.Errorf("promoted over repeating values: %+v", got)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	rels, err := store.Relationships(ctx, p.st.DB, ships.ID)
	d, derr := store.DatasetByID(ctx, p.st.DB, sites.ID, false)
	if err != nil || derr != nil || len(rels) != 0 || strings.Contains(d.Columns, `"key": true`) || d.SchemaVersion != before.SchemaVersion {
		t.Fatalf("after: %+v %v %s %v", rels, err, d.Columns, derr)
	}
}
