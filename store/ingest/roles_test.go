package ingest

import "testing"

// TestInferRoles: the role of each column of tables from several domains, by its name, its
// type, the other columns of its table and, where known, its values. A price is what the
// record earned (an amount) unless the table also counts units (then it is per unit, a value)
// or its name says per unit.
func TestInferRoles(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	type col struct {
		c    RoleColumn
		want Role
	}
	for _, tc := range []struct {
		table string
		cols  []col
	}{
		{"rentals", []col{
			{RoleColumn{Name: "rental_id", Type: Integer, Key: true}, RoleIdentifier},
			{RoleColumn{Name: "bike_serial", Type: Text}, RoleIdentifier},
			{RoleColumn{Name: "customer_id", Type: Integer}, RoleIdentifier},
			{RoleColumn{Name: "rented_at", Type: Timestamptz}, RoleTime},
			{RoleColumn{Name: "rental_days", Type: Integer}, RoleAmount},
			{RoleColumn{Name: "price", Type: Numeric}, RoleAmount},
			{RoleColumn{Name: "late_fee", Type: Numeric}, RoleAmount},
			{RoleColumn{Name: "status", Type: Text}, RoleCategory},
			{RoleColumn{Name: "notes", Type: Text, Rows: 1000, Distinct: 3, Nulls: 900}, RoleText},
		}},
		{"order_lines", []col{
			{RoleColumn{Name: "order_id", Type: BigInt}, RoleIdentifier},
			{RoleColumn{Name: "sku", Type: Text}, RoleIdentifier},
			{RoleColumn{Name: "unit_price", Type: Numeric}, RoleValue},
			{RoleColumn{Name: "quantity", Type: Integer}, RoleCount},
			{RoleColumn{Name: "line_total", Type: Numeric}, RoleAmount},
			{RoleColumn{Name: "shipping_fee", Type: Numeric}, RoleAmount},
		}},
		{"items (a price beside a quantity is per unit)", []col{
			{RoleColumn{Name: "price", Type: Numeric}, RoleValue},
			{RoleColumn{Name: "qty", Type: Integer}, RoleCount},
			{RoleColumn{Name: "total_price", Type: Numeric}, RoleAmount},
		}},
		{"hotel stays", []col{
			{RoleColumn{Name: "price_per_night", Type: Numeric}, RoleValue},
			{RoleColumn{Name: "num_guests", Type: Integer}, RoleCount},
			{RoleColumn{Name: "number_of_nights", Type: Integer}, RoleCount},
			{RoleColumn{Name: "room_type", Type: Text, Enum: true}, RoleCategory},
		}},
		{"employees", []col{
			{RoleColumn{Name: "emp_code", Type: Text, Key: true}, RoleIdentifier},
			{RoleColumn{Name: "full_name", Type: Text, Rows: 40, Distinct: 40}, RoleText},
			{RoleColumn{Name: "job_title", Type: Text, Rows: 40, Distinct: 5}, RoleCategory},
			{RoleColumn{Name: "salary", Type: Integer}, RoleAmount},
			{RoleColumn{Name: "bonus_pct", Type: Integer}, RoleValue},
			{RoleColumn{Name: "age", Type: Integer}, RoleValue},
			{RoleColumn{Name: "weekly_hours", Type: Integer}, RoleAmount},
			{RoleColumn{Name: "hire_date", Type: Date}, RoleTime},
			{RoleColumn{Name: "is_remote", Type: Boolean}, RoleCategory},
			{RoleColumn{Name: "work_phone", Type: Text}, RoleIdentifier},
		}},
		{"readings", []col{
			{RoleColumn{Name: "sensor_uid", Type: Text}, RoleIdentifier},
			{RoleColumn{Name: "temperature", Type: Numeric}, RoleValue},
			{RoleColumn{Name: "humidity", Type: Integer}, RoleValue},
			{RoleColumn{Name: "battery_pct", Type: Integer}, RoleValue},
			{RoleColumn{Name: "sample_count", Type: Integer}, RoleCount},
			{RoleColumn{Name: "reading", Type: Numeric}, RoleValue},
		}},
		{"stations", []col{
			{RoleColumn{Name: "station_code", Type: Text}, RoleIdentifier},
			{RoleColumn{Name: "lat", Type: Numeric}, RoleValue},
			{RoleColumn{Name: "long", Type: Numeric}, RoleValue},
			{RoleColumn{Name: "longitude", Type: Numeric}, RoleValue},
			{RoleColumn{Name: "capacity", Type: Integer}, RoleCount},
			{RoleColumn{Name: "opened_year", Type: Integer}, RoleValue},
		}},
		{"school", []col{
			{RoleColumn{Name: "score", Type: Integer}, RoleValue},
			{RoleColumn{Name: "rating", Type: Numeric}, RoleValue},
			{RoleColumn{Name: "copay_rate", Type: Numeric}, RoleValue},
			{RoleColumn{Name: "fine", Type: Numeric}, RoleAmount},
			{RoleColumn{Name: "credits", Type: Integer}, RoleAmount},
		}},
		{"by values (nothing in the names)", []col{
			{RoleColumn{Name: "built", Type: Integer, Rows: 100, Distinct: 40, Min: f(1890), Max: f(2020)}, RoleValue},
			{RoleColumn{Name: "share", Type: Numeric, Rows: 100, Distinct: 90, Min: f(0.01), Max: f(0.9)}, RoleValue},
			{RoleColumn{Name: "ticket", Type: Integer, Rows: 100, Distinct: 100, Min: f(5000), Max: f(90000)}, RoleIdentifier},
			{RoleColumn{Name: "credit", Type: Numeric, Rows: 100, Distinct: 80, Min: f(0), Max: f(1500)}, RoleAmount},
			{RoleColumn{Name: "region", Type: Text, Rows: 100, Distinct: 4}, RoleCategory},
			{RoleColumn{Name: "customerid", Type: Integer}, RoleIdentifier},
			{RoleColumn{Name: "unitPrice", Type: Numeric}, RoleValue},
			{RoleColumn{Name: "paid", Type: Numeric}, RoleAmount},
			{RoleColumn{Name: "attrs", Type: JSONB}, RoleText},
		}},
		{"set by a person", []col{
			{RoleColumn{Name: "price", Type: Numeric, Set: RoleValue}, RoleValue},
			{RoleColumn{Name: "points", Type: Integer, Set: RoleCount}, RoleCount},
		}},
	} {
		in := make([]RoleColumn, len(tc.cols))
		for i, c := range tc.cols {
			in[i] = c.c
		}
		got := InferRoles(in)
		for i, c := range tc.cols {
			if got[i] != c.want {
				t.Errorf("%s.%s: got %s, want %s", tc.table, c.c.Name, got[i], c.want)
			}
		}
	}
}

// TestInferRolesCountSetByAPerson: a count column set by a person makes a price beside it
// per unit, as a count named so does.
func TestInferRolesCountSetByAPerson(t *testing.T) {
	got := InferRoles([]RoleColumn{{Name: "price", Type: Numeric}, {Name: "pax", Type: Integer, Set: RoleCount}})
	if got[0] != RoleValue {
		t.Errorf("price beside a count set by a person: got %s, want value", got[0])
	}
}

// TestWordClasses: words.txt parses into the classes the code reads, each with words.
func TestWordClasses(t *testing.T) {
	for _, class := range []string{"id-suffix", "id-name", "not-glued-id", "dataset-qualifier", "value", "calendar", "count", "count-prefix",
		"number-prefix", "per-unit", "price", "whole", "amount", "identifier", "free-text", "category"} {
		if len(Words(class)) == 0 {
			t.Errorf("class %s has no words", class)
		}
	}
	if len(wordClasses) != 16 {
		t.Errorf("words.txt has %d classes; the code reads 16", len(wordClasses))
	}
}
