package records

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"dataplatform/handlers/apierr"
	"dataplatform/store/datasets"
	"dataplatform/store/ingest"
	recsql "dataplatform/store/records"
	"dataplatform/templates/descriptions"
	"dataplatform/templates/specgen"
)

// patchColumns are a customer-like dataset's: constrained text, numbers, a boolean, a date,
// an array and a JSON field.
func patchColumns() []ingest.Column {
	maxLen, minimum := 40, 0.0
	return []ingest.Column{
		{Name: "name", Type: ingest.Text, Constraints: &ingest.Constraints{MaxLength: &maxLen}},
		{Name: "status", Type: ingest.Text, Nullable: true, Constraints: &ingest.Constraints{Enum: []string{"active", "inactive"}}},
		{Name: "score", Type: ingest.Integer, Nullable: true, Constraints: &ingest.Constraints{Minimum: &minimum}},
		{Name: "amount", Type: ingest.Numeric, Nullable: true},
		{Name: "vip", Type: ingest.Boolean, Nullable: true},
		{Name: "joined", Type: ingest.Date, Nullable: true},
		{Name: "tags", Type: ingest.TextArray, Nullable: true},
		{Name: "meta", Type: ingest.JSONB, Nullable: true},
	}
}

// FuzzJSONPatch applies arbitrary RFC 6902 patches to a stored record as PATCH with
// application/json-patch+json does. Invariants: a refusal is an *apierr.Error (400, or 409
// for a failed test), never anything else; an accepted patch leaves exactly the dataset's
// columns (no system field, no unknown key: those would be dropped silently), each value one
// its column takes; and the work is bounded (copies cannot grow a record without limit).
func FuzzJSONPatch(f *testing.F) {
	for _, p := range []string{
		`[{"op": "replace", "path": "/name", "value": "Ann B."}]`,
		`[{"op": "test", "path": "/score", "value": 90}, {"op": "replace", "path": "/score", "value": 91}]`,
		`[{"op": "test", "path": "/score", "value": 1}]`,
		`[{"op": "add", "path": "/tags/-", "value": "new"}, {"op": "remove", "path": "/tags/0"}]`,
		`[{"op": "move", "from": "/meta/city", "path": "/meta/town"}, {"op": "copy", "from": "/name", "path": "/meta/alias"}]`,
		`[{"op": "remove", "path": "/amount"}, {"op": "add", "path": "/status", "value": "inactive"}]`,
		`[{"op": "add", "path": "/id", "value": 7}]`,
		`[{"op": "add", "path": "/version", "value": 7}]`,
		`[{"op": "add", "path": "/score", "value": 1.5}]`,
		`[{"op": "add", "path": "/amount", "value": 1e400}]`,
		`[{"op": "replace", "path": "/joined", "value": "2024-02-30"}]`,
		`[{"op": "add", "path": "/tags/-1", "value": "x"}]`,
		`[{"op": "add", "path": "/meta/a~1b/c", "value": 1}]`,
		`[{"op": "copy", "from": "/meta", "path": "/meta/a"}, {"op": "copy", "from": "/meta", "path": "/meta/b"}, {"op": "copy", "from": "/meta", "path": "/meta/c"}]`,
		`{"op": "replace"}`,
		`[]`,
		`[{"op": "test", "path": "/meta/nope", "value": null}]`,
		`[{"op": "test", "path": "/status", "value": null}, {"op": "replace", "path": "/status", "value": null}]`,
		`[{"op": "test", "path": "/tags/-1", "value": "north"}, {"op": "test", "path": "/tags/1", "value": "north"}]`,
	} {
		f.Add([]byte(p))
	}
	cols := patchColumns()
	table := datasets.TableDef{Name: "ds_fuzz", Schema: "org_fuzz", Relation: "ds_fuzz", Columns: cols, PrimaryKey: []string{"id"}}
	in := specgen.Input{DatasetID: "ds_fuzz", Name: "customers", SchemaVersion: 1, Table: table,
		ProductionURL: "https://api.example.com", StagingURL: "https://staging.example.com", GeneratedAt: time.Unix(0, 0)}
	doc, _, err := specgen.Render(context.Background(), in)
	if err != nil {
		f.Fatal(err)
	}
	rc := &recordCtx{desc: &descriptions.Description{Table: recsql.NewTable(table), Singular: specgen.NamesOf(in.Name).Singular, Doc: doc}}
	stored := `{"id": 1, "name": "Ann", "status": "active", "score": 90, "amount": 12.50, "vip": true, "joined": "2024-01-05",
		"tags": ["vip", "north"], "meta": {"city": "Oslo", "floor": 3}, "created_at": "2024-06-01T00:00:00Z",
		"updated_at": "2024-06-02T00:00:00Z", "version": 3}`
	f.Fuzz(func(t *testing.T, patch []byte) {
		if len(patch) > 16<<10 {
			t.Skip()
		}
		var now map[string]any
		dec := json.NewDecoder(bytes.NewReader([]byte(stored)))
		dec.UseNumber()
		if err := dec.Decode(&now); err != nil {
			t.Fatal(err)
		}
		next, err := applyJSONPatch(rc, now, patch)
		if err != nil {
			var ae *apierr.Error
			if !errors.As(err, &ae) {
				t.Fatalf("%s: %v (%T)", patch, err, err)
			}
			return
		}
		for k, v := range next {
			i := slices.IndexFunc(cols, func(c ingest.Column) bool { return c.Name == k })
			if i < 0 {
				t.Fatalf("%s leaves %q, not a column: %v", patch, k, next)
			}
			// As store/records converts a body's value: a string in a jsonb field is a JSON
			// string. A NUL character is refused by the server's body check before the
			// handler runs.
			if str, ok := v.(string); ok && cols[i].Type == ingest.JSONB {
				q, _ := json.Marshal(str)
				v = json.RawMessage(q)
			}
			if _, _, err := cols[i].Text(v); err != nil && !strings.Contains(err.Error(), "NUL character") {
				t.Fatalf("%s leaves %s = %v, which the column does not take: %v", patch, k, v, err)
			}
		}
		for _, c := range cols {
			if _, ok := next[c.Name]; !ok {
				t.Fatalf("%s leaves no %s: %v", patch, c.Name, next)
			}
		}
		if b, _ := json.Marshal(next); len(b) > 2*(len(stored)+len(patch))+maxPatchGrowth {
			t.Fatalf("%s grows the record to %d bytes", patch, len(b))
		}
	})
}
