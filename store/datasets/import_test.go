package datasets

import (
	"errors"
	"fmt"
	"testing"

	"dataplatform/store/ingest"
)

func TestFitColumns(t *testing.T) {
	stations := []ingest.Column{
		{Name: "station_id", Original: "Station ID", Type: ingest.Text, Key: true},
		{Name: "name", Original: "name", Type: ingest.Text, Nullable: true},
		{Name: "elevation_m", Original: "Elevation (m)", Type: ingest.Integer, Nullable: true},
		{Name: "kind", Original: "kind", Type: ingest.Text, Constraints: &ingest.Constraints{Default: []byte(`"airport"`)}},
		{Name: "wmo", Original: "wmo", Type: ingest.Integer},
	}
	numbered := []ingest.Column{
		{Name: "id", Original: "id", Type: ingest.BigInt, Key: true},
		{Name: "note", Original: "note", Type: ingest.Text, Nullable: true},
	}
	readings := []ingest.Column{{Name: "src_id", Original: "id", Type: ingest.Integer, Nullable: true}, {Name: "temp", Original: "temp", Type: ingest.Numeric, Nullable: true}}
	plain := []ingest.Column{{Name: "temp", Original: "temp", Type: ingest.Numeric, Nullable: true}}
	// file builds the columns inference finds in a file with this header.
	file := func(header ...string) []ingest.Column {
		ids := ingest.Identifiers(header)
		out := make([]ingest.Column, len(header))
		for i, h := range header {
			out[i] = ingest.Column{Name: ids[i], Original: h, Type: ingest.Text}
		}
		return out
	}
	for _, tc := range []struct {
		name   string
		cols   []ingest.Column
		header []string
		mode   string
		add    bool
		read   string // the read columns' names, in file order
		misfit string // codes and columns of the refusal
	}{
		{"by original name, normalised name and any order", stations, []string{"wmo", "station_id", "Elevation (m)", "NAME", "kind"}, ModeReplace, false,
			"[wmo station_id elevation_m name kind]", ""},
		{"a missing column with a default or nullable", stations, []string{"Station ID", "wmo"}, ModeAppend, false, "[station_id wmo]", ""},
		{"a missing required column", stations, []string{"Station ID", "name"}, ModeReplace, false, "", "[missing_required:wmo]"},
		{"upsert may leave required columns out", stations, []string{"Station ID", "name"}, ModeUpsert, false, "[station_id name]", ""},
		{"upsert needs the key", stations, []string{"name", "wmo"}, ModeUpsert, false, "", "[missing_key:station_id]"},
		{"a text key is required", stations, []string{"name", "wmo"}, ModeAppend, false, "", "[missing_required:station_id]"},
		{"an unknown column", stations, []string{"Station ID", "wmo", "Wind"}, ModeAppend, false, "", "[unknown_column:Wind]"},
		{"an unknown column added", stations, []string{"Station ID", "wmo", "Wind"}, ModeAppend, true, "[station_id wmo wind]", ""},
		{"two file columns for one", []ingest.Column{{Name: "kind", Original: "Type", Type: ingest.Text, Nullable: true}}, []string{"Type", "kind"}, ModeAppend, false,
			"", "[duplicate_column:kind]"},
		{"an export's system fields are skipped", stations, []string{"station_id", "wmo", "created_at", "updated_at", "version"}, ModeUpsert, false,
			"[station_id wmo dp.skip.2 dp.skip.3 dp.skip.4]", ""},
		{"a generated integer key may be left out", numbered, []string{"note"}, ModeReplace, false, "[note]", ""},
		{"the file's id is the key column", numbered, []string{"ID", "note"}, ModeUpsert, false, "[id note]", ""},
		{"the generated id of an export is skipped", plain, []string{"id", "temp"}, ModeAppend, false, "[dp.skip.0 temp]", ""},
		{"a file id column kept as src_id", readings, []string{"id", "temp"}, ModeAppend, false, "[src_id temp]", ""},
		{"upsert without a key", plain, []string{"temp"}, ModeUpsert, false, "", "[no_key:]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			plan, err := fitColumns(tc.cols, file(tc.header...), tc.mode, tc.add, keyGenerated(tc.cols))
			var ms Misfits
			switch {
			case tc.misfit != "":
				if !errors.As(err, &ms) {
					t.Fatalf("want misfits %s, got %v", tc.misfit, err)
				}
				var got []string
				for _, m := range ms {
					got = append(got, m.Code+":"+m.Column)
				}
				if fmt.Sprint(got) != tc.misfit {
					t.Fatalf("misfits %v, want %s", got, tc.misfit)
				}
			case err != nil:
				t.Fatal(err)
			default:
				var names []string
				for _, c := range plan.read {
					names = append(names, c.Name)
				}
				if fmt.Sprint(names) != tc.read {
					t.Fatalf("read %v, want %s", names, tc.read)
				}
				for _, c := range plan.read {
					for _, d := range tc.cols {
						if d.Name == c.Name && d.Type != c.Type {
							t.Fatalf("column %s read as %s, the dataset's type is %s", c.Name, c.Type, d.Type)
						}
					}
				}
			}
		})
	}
}
