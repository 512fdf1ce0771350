package specgen

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"dataplatform/store/datasets"
	"dataplatform/store/ingest"
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
