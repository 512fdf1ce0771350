package descriptions

import (
	"strings"
	"testing"
)

// TestNotes: what a schema change does that the columns do not show reaches the changelog
// with its level: a new key is breaking, a removed relationship a warning with its reason.
func TestNotes(t *testing.T) {
	got := notes(`[{"op":"set_primary_key","column":"label"},{"op":"add_column","column":{"name":"x","type":"text"}},` +
		`{"op":"drop_relationship","column":"team_id","references":{"dataset_id":"ds_teams","column":"id"},"reason":"it pointed at a generated id"},` +
		`{"op":"add_relationship","column":"owner","references":{"dataset_id":"ds_people"}},{"op":"mark_key","column":"id"}]`)
	want := []string{"breaking primary-key-changed label", "warning relationship-removed team_id to ds_teams.id was removed: it pointed at a generated id",
		"info relationship-added owner to ds_people", "info primary-key-marked id holds"}
	if len(got) != len(want) {
		t.Fatalf("notes: %+v", got)
	}
	for i, w := range want {
		parts := strings.SplitN(w, " ", 3)
		if got[i].Level != parts[0] || got[i].ID != parts[1] || !strings.Contains(got[i].Text, parts[2]) {
			t.Errorf("note %d: %+v, want %s", i, got[i], w)
		}
	}
	if notes("") != nil || notes("not json") != nil {
		t.Fatal("notes of nothing")
	}
}

// TestRenameOf: a rename recorded as a schema change is read back with its texts; other
// changes are not renames.
func TestRenameOf(t *testing.T) {
	raw := RenameChanges(Rename{Name: Texts{Before: "Orders", After: "Renamed Orders"}, Description: Texts{Before: "a", After: "b"}})
	r := renameOf(raw)
	if r == nil || r.Op != "rename_dataset" || r.Name.Before != "Orders" || r.Name.After != "Renamed Orders" || r.Description.After != "b" {
		t.Fatalf("rename of %s: %+v", raw, r)
	}
	if renameOf(`[{"op":"add_column","column":{"name":"x"}}]`) != nil || renameOf("") != nil || notes(raw) != nil {
		t.Fatal("not a rename, or a rename noted twice")
	}
}
