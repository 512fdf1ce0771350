package specgen

import (
	"context"
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"dataplatform/store/datasets"
	"dataplatform/store/ingest"

	"github.com/getkin/kin-openapi/openapi3"
)

func TestNames(t *testing.T) {
	for in, want := range map[string]Names{
		"customers":   {"Customer", "Customers", "customer", "customers"},
		"Order items": {"OrderItem", "OrderItems", "order item", "order items"},
		"categories":  {"Category", "Categories", "category", "categories"},
		"status":      {"Status", "Statuses", "status", "statuses"},
		"inventory":   {"Inventory", "Inventories", "inventory", "inventories"},
		"2024 sales":  {"Record2024Sale", "Record2024Sales", "record 2024 sale", "record 2024 sales"},
		"person":      {"Person", "Persons", "person", "persons"},
	} {
		if got := NamesOf(in); got != want {
			t.Errorf("%q: %+v, want %+v", in, got, want)
		}
	}
}

func TestRenderCustomers(t *testing.T) {
	max, min := 255, 1
	cols := []ingest.Column{
		{Name: "name", Type: ingest.Text, Constraints: &ingest.Constraints{MaxLength: &max, MinLength: &min}},
		{Name: "email", Type: ingest.Text, Constraints: &ingest.Constraints{Format: "email", Unique: true, MaxLength: &max}},
		{Name: "status", Type: ingest.Text, Constraints: &ingest.Constraints{Enum: []string{"active", "inactive", "pending"}, Default: json.RawMessage(`"pending"`)}},
		{Name: "age", Type: ingest.Integer, Nullable: true},
		{Name: "tags", Type: ingest.TextArray, Nullable: true},
		{Name: "address", Type: ingest.JSONB, Nullable: true},
	}
	doc, raw, err := Render(context.Background(), Input{DatasetID: "ds_abc", Name: "customers", SchemaVersion: 1,
		Table: datasets.TableDef{Columns: cols}, ProductionURL: "https://api.example.com", StagingURL: "https://staging.example.com",
		GeneratedAt: time.Unix(0, 0), Links: []Link{{Name: "orders", Many: true}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"listCustomers", "createCustomer", "getCustomer", "updateCustomer", "patchCustomer", "deleteCustomer"} {
		if !strings.Contains(string(raw), `"operationId":"`+id+`"`) {
			t.Errorf("no operation %s", id)
		}
	}
	create := doc.Components.Schemas["CustomerCreate"].Value
	if strings.Join(create.Required, ",") != "name,email" || create.Properties["status"].Value.Default != "pending" {
		t.Fatalf("create: required %v", create.Required)
	}
	rec := doc.Components.Schemas["Customer"].Value
	if !rec.Properties["id"].Value.ReadOnly || rec.Properties["email"].Value.Extensions["x-unique"] != true || rec.Properties["_links"].Value.Properties["orders"] == nil {
		t.Fatalf("record schema: %s", raw)
	}
	if doc.Info.Version != "1.0.0" || doc.Servers[1].Description != "Staging" {
		t.Fatalf("info/servers: %+v", doc.Info)
	}
	// A hostile dataset name cannot break the document.
	if _, _, err := Render(context.Background(), Input{DatasetID: "ds_x", Name: "a\": {}\n  evil: [", SchemaVersion: 1,
		Table: datasets.TableDef{Columns: cols}, ProductionURL: "http://x", StagingURL: "http://x"}); err != nil {
		t.Fatalf("hostile name: %v", err)
	}
}

func TestPII(t *testing.T) {
	col := func(name string) ingest.Column { return ingest.Column{Name: name, Type: ingest.Text} }
	for _, tc := range []struct {
		dataset, column string
		samples         []string
		want            string
	}{
		{"Customers", "email", nil, "email"},
		{"Customers", "name", nil, "name"},
		{"Products", "name", nil, ""},
		{"Products", "first_name", nil, "name"},
		{"Leads", "contact", []string{"a@b.co", "c@d.org", "x"}, "email"},
		{"Leads", "notes", []string{"call back", "a@b.co", "later"}, ""},
		{"Leads", "reach", []string{"+1 415 555 0101", "+44 20 7183 8750"}, "phone"},
		{"Shops", "zip_code", nil, "address"},
		{"Logs", "ip_address", nil, "ip_address"},
		{"Logs", "shipping", nil, ""},
	} {
		if got := PII(tc.dataset, col(tc.column), tc.samples); got != tc.want {
			t.Errorf("%s.%s %v: %q, want %q", tc.dataset, tc.column, tc.samples, got, tc.want)
		}
	}
}

// The extensions decorate adds, for an uploaded dataset with display names, a pattern,
// personal data, links (one to a connected table) and a many-to-many relationship, and for
// a connected table with its own authorization server and nothing to validate.
func TestRenderExtensions(t *testing.T) {
	max := 255
	cols := []ingest.Column{
		{Name: "name", Original: "Full Name", Type: ingest.Text, Constraints: &ingest.Constraints{MaxLength: &max}},
		{Name: "email", Type: ingest.Text, Constraints: &ingest.Constraints{Format: "email", Unique: true}},
		{Name: "status", Type: ingest.Text, Constraints: &ingest.Constraints{Enum: []string{"active", "inactive"}}},
		{Name: "code", Type: ingest.Text, Nullable: true, Constraints: &ingest.Constraints{Pattern: "^[A-Z]{3}$"}},
		{Name: "contact", Type: ingest.Text, Nullable: true},
	}
	uploaded := Input{DatasetID: "ds_abc", Name: "customers", SchemaVersion: 1, Table: datasets.TableDef{Columns: cols},
		ProductionURL: "https://api.example.com/", StagingURL: "https://staging.example.com", GeneratedAt: time.Unix(0, 0),
		Samples: map[string][]string{"contact": {"a@b.co", "c@d.org"}},
		Links: []Link{{Name: "orders", Many: true, Dataset: "ds_o", LocalKey: "id", ForeignKey: "customer_id"},
			{Name: "region", Dataset: "ds_r", LocalKey: "region_id", ForeignKey: "id", Table: "regions"}},
		ManyToMany: []ManyToMany{{Target: "ds_t", TargetName: "Product Tags", Junction: "ds_j", JunctionName: "customer tags", LocalKey: "customer_id", ForeignKey: "tag_id"}}}
	connected := Input{DatasetID: "ds_conn", Name: "Shop", SchemaVersion: 2,
		Table:  datasets.TableDef{Name: "items", Foreign: true, Remote: "public.items", PrimaryKey: []string{"n"}, Columns: []ingest.Column{{Name: "title", Type: ingest.Text}, {Name: "n", Type: ingest.Integer}}},
		Tables: []string{"items", "orders"}, ProductionURL: "http://x", StagingURL: "http://y", AuthURL: "https://idp.example.com/oauth/", GeneratedAt: time.Unix(0, 0),
		Links: []Link{{Name: "orders", Many: true, Dataset: "ds_conn", LocalKey: "n", ForeignKey: "item_n", Table: "orders"}}}
	for _, tc := range []struct {
		in   Input
		path []string
		want string // JSON
	}{
		{uploaded, []string{"paths", "/api/v1/datasets/{dataset_id}/data", "get", "x-code-samples", "0", "source"},
			`"curl -X GET 'https://api.example.com/api/v1/datasets/ds_abc/data' \\\n  -H 'Authorization: Bearer $TOKEN'"`},
		{uploaded, []string{"components", "schemas", "CustomerCreate", "properties", "name", "x-display-name"}, `"Full Name"`},
		{uploaded, []string{"components", "schemas", "Customer", "properties", "contact", "x-pii"}, `"email"`},
		{uploaded, []string{"components", "schemas", "Customer", "properties", "code", "x-constraints"}, `[{"name":"code_check","type":"check"}]`},
		{uploaded, []string{"components", "schemas", "Customer", "properties", "_links", "properties", "region", "x-relationship"},
			`{"foreign_key":"region_id","target":"ds_r","target_key":"id","target_table":"regions","type":"many-to-one"}`},
		{uploaded, []string{"components", "schemas", "Customer", "x-relationships"},
			`[{"foreign_key":"customer_id","local_key":"id","name":"orders","target":"ds_o","type":"one-to-many"},
			{"foreign_key":"region_id","name":"region","target":"ds_r","target_key":"id","target_table":"regions","type":"many-to-one"},
			{"foreign_key":"tag_id","junction_name":"customer tags","junction_table":"ds_j","local_key":"customer_id","name":"product_tags","target":"ds_t","type":"many-to-many"}]`},
		{uploaded, []string{"x-validation"}, `[{"field":"email","message":"email must be unique","type":"unique"},
			{"field":"email","function":"format(email)","message":"email must be a valid email","type":"custom"},
			{"allowed":["active","inactive"],"field":"status","message":"status must be one of active, inactive","type":"domain"},
			{"field":"code","function":"matches(^[A-Z]{3}$)","message":"code must match ^[A-Z]{3}$","type":"custom"}]`},
		{uploaded, []string{"x-pii"}, `[{"category":"email","field":"contact"},{"category":"email","field":"email"},{"category":"name","field":"name"}]`},
		{uploaded, []string{"x-dataset-config"}, `{"audit_trail":true,"encryption_at_rest":false,"row_level_security":true,"soft_delete":true}`},
		{uploaded, []string{"x-documentation", "sdks"}, `"https://api.example.com/api/v1/datasets/ds_abc/sdk/{language}"`},
		{uploaded, []string{"components", "securitySchemes", "oauth2", "flows", "authorizationCode", "tokenUrl"}, `"https://api.example.com/api/v1/auth/oauth/token"`},
		{uploaded, []string{"x-generator-config", "python", "packageName"}, `"customers_client"`},
		{connected, []string{"paths", "/api/v1/datasets/{dataset_id}/data/{id}", "get", "x-code-samples", "0", "source"},
			`"curl -X GET 'http://x/api/v1/datasets/ds_conn/data/1?table=items' \\\n  -H 'Authorization: Bearer $TOKEN'"`},
		{connected, []string{"components", "schemas", "Shop", "properties", "_links", "properties", "orders", "x-relationship"},
			`{"foreign_key":"item_n","local_key":"n","target":"ds_conn","target_table":"orders","type":"one-to-many"}`},
		{connected, []string{"x-validation"}, `[]`},
		{connected, []string{"x-pii"}, `[]`},
		{connected, []string{"x-dataset-config"}, `{"audit_trail":true,"connected_table":{"name":"items","primary_key":["n"],"remote":"public.items",
			"tables":["items","orders"],"writable":false},"encryption_at_rest":false,"row_level_security":true,"soft_delete":false}`},
		{connected, []string{"components", "securitySchemes", "oauth2", "flows", "authorizationCode", "authorizationUrl"}, `"https://idp.example.com/oauth/authorize"`},
	} {
		_, raw, err := Render(context.Background(), tc.in)
		if err != nil {
			t.Fatal(err)
		}
		var v any
		if err := json.Unmarshal(raw, &v); err != nil {
			t.Fatal(err)
		}
		for _, k := range tc.path {
			switch x := v.(type) {
			case map[string]any:
				v = x[k]
			case []any:
				i, _ := strconv.Atoi(k)
				v = x[i]
			}
		}
		var want any
		if err := json.Unmarshal([]byte(tc.want), &want); err != nil {
			t.Fatalf("%s: %v", tc.want, err)
		}
		if !reflect.DeepEqual(v, want) {
			got, _ := json.Marshal(v)
			t.Errorf("%s %v:\n got %s\nwant %s", tc.in.DatasetID, tc.path, got, tc.want)
		}
	}
}

func TestPatternError(t *testing.T) {
	for p, bad := range map[string]bool{`^[A-Z]+$`: false, `^\+?[1-9][0-9]{1,14}$`: false, `[[:alpha:]]`: false,
		`^(a)\1$`: true, `^(?=a)`: true, `^(?!xyz)`: true} {
		if got := PatternError(context.Background(), p); (got != "") != bad {
			t.Errorf("%s: %q", p, got)
		}
	}
}

// TestSharedSchemas: documents share their equal leaf schemas, and sharing changes nothing
// a document says.
func TestSharedSchemas(t *testing.T) {
	ctx := context.Background()
	in := func(name string, cols ...ingest.Column) Input {
		return Input{DatasetID: "ds_" + strings.ToLower(strings.ReplaceAll(name, " ", "_")), Name: name, SchemaVersion: 1, Table: datasets.TableDef{Columns: cols},
			ProductionURL: "https://api.example.com", StagingURL: "https://staging.example.com", GeneratedAt: time.Unix(0, 0)}
	}
	max := 40
	a, _, err := render(ctx, in("parcels", ingest.Column{Name: "parcel_id", Type: ingest.Integer, Key: true},
		ingest.Column{Name: "weight", Type: ingest.Numeric, Nullable: true},
		ingest.Column{Name: "label", Type: ingest.Text, Constraints: &ingest.Constraints{MaxLength: &max}}))
	if err != nil {
		t.Fatal(err)
	}
	before, _ := json.Marshal(a)
	shareSchemas(a)
	if after, _ := json.Marshal(a); string(after) != string(before) {
		t.Fatal("sharing changed the document")
	}
	b, _, err := RenderDoc(ctx, in("Tide readings", ingest.Column{Name: "station", Type: ingest.Text},
		ingest.Column{Name: "rainfall_mm", Type: ingest.Numeric, Nullable: true})) // an amount, as weight is (x-role)
	if err != nil {
		t.Fatal(err)
	}
	limit := func(d *openapi3.T) *openapi3.Schema {
		for _, p := range d.Paths.Value("/api/v1/datasets/{dataset_id}/data").Get.Parameters {
			if p.Value.Name == "limit" {
				return p.Value.Schema.Value
			}
		}
		t.Fatal("no limit parameter")
		return nil
	}
	weight := a.Components.Schemas["Parcel"].Value.Properties["weight"].Value
	height := b.Components.Schemas["TideReading"].Value.Properties["rainfall_mm"].Value
	if limit(a) != limit(b) || weight != height {
		t.Fatalf("equal leaves not shared: limit %p %p, numbers %p %p", limit(a), limit(b), weight, height)
	}
	if label := a.Components.Schemas["Parcel"].Value.Properties["label"].Value; label == height || label.MaxLength == nil || *label.MaxLength != 40 {
		t.Fatalf("a different leaf shared: %+v", label)
	}
}
