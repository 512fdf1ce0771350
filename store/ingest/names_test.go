package ingest

import (
	"strings"
	"testing"
)

func TestIdentifiers(t *testing.T) {
	long := strings.Repeat("Long Name ", 10) // 100 characters
	cases := []struct {
		names []string
		want  []string
	}{
		{[]string{"Customer ID", "customer id", "CUSTOMER_ID"}, []string{"customer_id", "customer_id_2", "customer_id_3"}},
		{[]string{"id", "ID", "created_at", "Updated At", "deleted_at", "version", "src_id"},
			[]string{"src_id", "src_id_2", "src_created_at", "src_updated_at", "src_deleted_at", "src_version", "src_id_3"}},
		{[]string{"2024 Sales", "_private_", "  spaces  ", "a--b..c"}, []string{"c_2024_sales", "private", "spaces", "a_b_c"}},
		{[]string{"Zoë's £ total", "Ångström", "naïve café", "Straße", "日本語", "", "!!!"},
			[]string{"zoe_s_total", "angstrom", "naive_cafe", "stra_e", "column_5", "column_6", "column_7"}},
		{[]string{"column_2", ""}, []string{"column_2", "column_2_2"}},
		{[]string{"a_2", "a", "a", "A", "a_3"}, []string{"a_2", "a", "a_3", "a_4", "a_3_2"}},
		{[]string{long, long, long}, []string{
			strings.TrimRight(strings.Repeat("long_name_", 7)[:63], "_"),
			strings.Repeat("long_name_", 6) + "l_2",
			strings.Repeat("long_name_", 6) + "l_3",
		}},
	}
	for _, c := range cases {
		got := Identifiers(c.names)
		for i := range c.want {
			if got[i] != c.want[i] {
				t.Errorf("Identifiers(%q)[%d] = %q, want %q", c.names, i, got[i], c.want[i])
			}
			if len(got[i]) > 63 {
				t.Errorf("%q is longer than 63 bytes", got[i])
			}
		}
	}
}

// BenchmarkIdentifiersRepeated names 100,000 columns of one name: linear (the suffixes were
// tried from _2 up for each, quadratic: minutes for a CSV header of 100,000 "a").
func BenchmarkIdentifiersRepeated(b *testing.B) {
	names := make([]string, 100_000)
	for i := range names {
		names[i] = "a"
	}
	for b.Loop() {
		Identifiers(names)
	}
}
