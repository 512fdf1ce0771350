package ingest

import "testing"

func TestKindAndWiden(t *testing.T) {
	for v, want := range map[string]Type{
		"42": Integer, "-7": Integer, "+3": Integer, "2147483648": BigInt, "99999999999999999999": Numeric,
		"1.5": Numeric, ".5": Numeric, "1e10": Numeric, "-2.5E-3": Numeric, "1e": Text, "1.2.3": Text, "-": Text, ".": Text,
		"true": Boolean, "No": Boolean, "T": Boolean, "1": Integer, "0": Integer,
		"2024-02-29": Date, "2023-02-29": Text, "2024-01-05T10:00:00Z": Timestamptz, "2024-01-05 10:00:00": Timestamptz,
		"2024-01-05 10:00:00.123+02:00": Timestamptz, "2024-13-01": Text,
		"6f1c2a9e-8e4b-4c1a-9d5e-1f2a3b4c5d6e": UUID, "6f1c2a9e-8e4b-4c1a-9d5e-1f2a3b4c5d6g": Text, "hello": Text,
	} {
		if got := Kind(v); got != want {
			t.Errorf("Kind(%q) = %s, want %s", v, got, want)
		}
	}
	for _, c := range []struct{ a, b, want Type }{
		{Integer, BigInt, BigInt}, {Integer, Numeric, Numeric}, {BigInt, Integer, BigInt}, {Date, Timestamptz, Timestamptz},
		{Integer, Boolean, Text}, {UUID, Text, Text}, {Unknown, Date, Date}, {Numeric, Unknown, Numeric},
	} {
		if got := Widen(c.a, c.b); got != c.want {
			t.Errorf("Widen(%s, %s) = %s, want %s", c.a, c.b, got, c.want)
		}
	}
}

func TestIdentifiers(t *testing.T) {
	got := Identifiers([]string{"Customer ID", "customer id", "id", "2024 Sales", "Zoë's £ total", "", "version"})
	want := []string{"customer_id", "customer_id_2", "src_id", "c_2024_sales", "zo_s_total", "column_6", "src_version"}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("Identifiers[%d] = %q, want %q", i, got[i], want[i])
		}
	}
}
