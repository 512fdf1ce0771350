package apiversions

import (
	"context"
	"testing"
	"time"

	"dataplatform/store/datasets"
	"dataplatform/store/ingest"
	"dataplatform/templates/specgen"

	"github.com/getkin/kin-openapi/openapi3"
)

func render(t *testing.T, v int, cols ...ingest.Column) *openapi3.T {
	t.Helper()
	doc, _, err := specgen.Render(context.Background(), specgen.Input{DatasetID: "ds_abc", Name: "customers", SchemaVersion: v,
		Table:         datasets.TableDef{Name: "ds_abc", Schema: "org_a", Relation: "ds_abc", Columns: cols},
		ProductionURL: "https://api.example.com", StagingURL: "https://staging.example.com", GeneratedAt: time.Unix(int64(v), 0)})
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

// TestHistory: add an optional column (minor), make a column required (major), drop a
// column (major) → 1.0.0, 1.1.0, 2.0.0, 3.0.0.
func TestHistory(t *testing.T) {
	name := ingest.Column{Name: "name", Type: ingest.Text}
	phone := ingest.Column{Name: "phone", Type: ingest.Text, Nullable: true}
	email := ingest.Column{Name: "email", Type: ingest.Text, Nullable: true}
	emailRequired := ingest.Column{Name: "email", Type: ingest.Text}
	day := 24 * time.Hour
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	states := []State{
		{SchemaVersion: 1, ReleasedAt: t0, Doc: render(t, 1, name, email)},
		{SchemaVersion: 2, ReleasedAt: t0.Add(day), Doc: render(t, 2, name, email, phone)},
		{SchemaVersion: 3, ReleasedAt: t0.Add(2 * day), Doc: render(t, 3, name, emailRequired, phone)},
		{SchemaVersion: 4, ReleasedAt: t0.Add(3 * day), Doc: render(t, 4, name, emailRequired)},
	}
	vs, err := History(states, t0.Add(4*day))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, v := range vs {
		got = append(got, v.Version+"/"+v.Level+"/"+v.Status)
		for _, c := range v.Changes {
			t.Logf("%s: %s %s %s", v.Version, c.Level, c.ID, c.Text)
		}
	}
	want := []string{"1.0.0/initial/deprecated", "1.1.0/minor/deprecated", "2.0.0/major/deprecated", "3.0.0/major/current"}
	for i := range want {
		if i >= len(got) || got[i] != want[i] {
			t.Fatalf("versions: %v, want %v", got, want)
		}
	}
	if vs[0].SunsetAt == nil || !vs[0].SunsetAt.Equal(states[2].ReleasedAt.Add(SunsetAfter)) || vs[2].SunsetAt == nil || vs[3].SunsetAt != nil {
		t.Fatalf("sunsets: %+v", vs)
	}
	between, err := Between(vs, "1.1.0", "3.0.0")
	if err != nil || !hasLevel(between, "breaking") {
		t.Fatalf("between: %v %+v", err, between)
	}
	if vs, _ := History(states, t0.Add(2*day+SunsetAfter)); vs[0].Status != "sunset" || vs[1].Status != "sunset" || vs[2].Status != "deprecated" {
		t.Fatalf("after the sunset: %+v", vs)
	}
	// A description change alone is a patch.
	doc := render(t, 5, name, emailRequired)
	doc.Info.Description = "now documented"
	if changes, changed, err := Compare(states[3].Doc, doc); err != nil || Level(changes, changed) != "patch" {
		t.Fatalf("documentation only: %v %v %+v", err, changed, changes)
	}
	if _, ok := Parse("1.02.0"); ok {
		t.Fatal("leading zero accepted")
	}
}

// TestUniqueIsBreaking: a UNIQUE constraint added to a column makes writes that used to
// succeed answer 409, which oasdiff cannot see (x-unique is no JSON Schema): a major version,
// listed with the property; dropping it again is a compatible (minor) change.
func TestUniqueIsBreaking(t *testing.T) {
	email := ingest.Column{Name: "email", Type: ingest.Text, Nullable: true}
	unique := email
	unique.Constraints = &ingest.Constraints{Unique: true}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	vs, err := History([]State{{SchemaVersion: 1, ReleasedAt: t0, Doc: render(t, 1, email)}, {SchemaVersion: 2, ReleasedAt: t0.Add(time.Hour), Doc: render(t, 2, unique)}, {SchemaVersion: 3, ReleasedAt: t0.Add(2 * time.Hour), Doc: render(t, 3, email)}}, t0.Add(3*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if len(vs) != 3 || vs[1].Version != "2.0.0" || vs[1].Level != "major" || vs[2].Version != "2.1.0" || vs[2].Level != "minor" {
		t.Fatalf("versions: %+v", vs)
	}
	found := false
	for _, c := range vs[1].Changes {
		if c.ID == "request-property-unique-added" && c.Level == "breaking" && c.Operation == "POST" && c.Path == "/api/v1/datasets/{dataset_id}/data" {
			found = true
		}
	}
	if !found {
		t.Fatalf("the unique constraint is not a listed breaking change: %+v", vs[1].Changes)
	}
	if len(vs[2].Changes) == 0 || vs[2].Changes[0].ID != "request-property-unique-removed" {
		t.Fatalf("dropping it: %+v", vs[2].Changes)
	}
}

// TestAsOf: a version's list of versions is the one of its release: it and those before,
// it current, the earlier ones deprecated from their successor's release.
func TestAsOf(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	versions := []Version{{Version: "1.0.0", Level: "initial", ReleasedAt: t0}, {Version: "2.0.0", Level: "major", ReleasedAt: t0.Add(time.Hour)},
		{Version: "2.0.1", Level: "patch", ReleasedAt: t0.Add(2 * time.Hour)}}
	setStatuses(versions, t0.Add(365*24*time.Hour))
	if versions[0].Status != "sunset" || versions[1].Status != "deprecated" {
		t.Fatalf("statuses now: %+v", versions)
	}
	got := AsOf(versions, "2.0.0")
	if len(got) != 2 || got[1].Status != "current" || got[1].DeprecatedAt != nil || got[0].Status != "deprecated" ||
		!got[0].DeprecatedAt.Equal(t0.Add(time.Hour)) || !got[0].SunsetAt.Equal(t0.Add(time.Hour+SunsetAfter)) {
		t.Fatalf("as of 2.0.0: %+v", got)
	}
	if versions[1].Status != "deprecated" || AsOf(versions, "9.9.9") != nil {
		t.Fatalf("AsOf changed its input or found an unknown version: %+v", versions)
	}
	if first := AsOf(versions, "1.0.0"); len(first) != 1 || first[0].Status != "current" || first[0].SunsetAt != nil {
		t.Fatalf("as of 1.0.0: %+v", first)
	}
}
