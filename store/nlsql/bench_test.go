package nlsql

import (
	"fmt"
	"testing"
	"time"

	"dataplatform/store/ingest"
)

// project20 is a project of 20 datasets of 12 columns each (numbers, dates, a flag, text
// columns with 30 known values), each but the first referring to the one before it, with the
// shop's customers and orders among them.
func project20() Schema {
	s := shop()
	for d := 0; len(s.Tables) < 20; d++ {
		name := fmt.Sprintf("dataset%02d", d)
		t := Table{Ref: name, DatasetID: "ds_" + name, Dataset: fmt.Sprintf("Dataset %02d", d), Name: "ds_" + name, System: true}
		t.Columns = append(t.Columns, Column{Name: "id", Type: ingest.BigInt})
		for c := 0; c < 3; c++ {
			var vs []string
			for v := 0; v < 30; v++ {
				vs = append(vs, fmt.Sprintf("value%d%d%d", d, c, v))
			}
			t.Columns = append(t.Columns, Column{Name: fmt.Sprintf("kind%d_%02d", c, d), Type: ingest.Text, Values: vs})
		}
		for c := 0; c < 4; c++ {
			t.Columns = append(t.Columns, Column{Name: fmt.Sprintf("measure%d_%02d", c, d), Type: ingest.Numeric})
		}
		t.Columns = append(t.Columns, Column{Name: fmt.Sprintf("happened_%02d", d), Type: ingest.Date},
			Column{Name: fmt.Sprintf("is_flag_%02d", d), Type: ingest.Boolean}, Column{Name: "created_at", Type: ingest.Timestamptz})
		if d > 0 {
			prev := fmt.Sprintf("dataset%02d", d-1)
			t.Columns = append(t.Columns, Column{Name: prev + "_id", Type: ingest.BigInt})
			s.Relations = append(s.Relations, Relation{From: name, FromColumn: prev + "_id", To: prev, ToColumn: "id"})
		}
		s.Tables = append(s.Tables, t)
	}
	return s
}

// BenchmarkTranslate20 is one question translated over a project of 20 datasets (the mean
// over questions of each kind: counts, grouping per entity, rankings, anti-joins, time,
// refusals). The budget is 5 ms a question.
//
//	go test -run '^$' -bench Translate20 -benchmem ./store/nlsql/
func BenchmarkTranslate20(b *testing.B) {
	s := project20()
	now := time.Date(2024, 6, 15, 12, 0, 0, 0, time.UTC)
	questions := []string{
		"How many customers live in Berlin?",
		"Top 5 customers by total order amount",
		"average order amount per customer in 2024",
		"customers who never placed an order",
		"which category has the highest revenue",
		"how many distinct customers placed orders",
		"total measure1 05 by kind0 05 and kind1 05 for value501 last month",
		"percentage of vip customers",
		"share of orders by category",
		"what is the weather in Paris",
	}
	for _, q := range questions {
		if _, err := Translate(q, s, now); err != nil {
			b.Logf("%q: %v", q, err)
		}
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		Translate(questions[i%len(questions)], s, now)
	}
	// Reported against the 5 ms budget, not failed on it: a benchmark on a shared machine
	// measures, the reader judges (ns/op is the figure).
}

func TestOneEdit(t *testing.T) {
	for _, w := range [][2]string{{"berlin", "berln"}, {"berlin", "berlni"}, {"berlin", "bberlin"}, {"berlin", "herlin"}, {"berlin", "berlin"},
		{"paris", "parsi"}, {"games", "gmaes"}, {"berlin", "berlinx"}, {"abc", "ab"}, {"b", ""}} {
		if !oneEdit(w[0], w[1]) || !oneEdit(w[1], w[0]) || edits(w[0], w[1]) > 1 {
			t.Errorf("%q %q: one edit apart", w[0], w[1])
		}
	}
	for _, w := range [][2]string{{"berlin", "brelni"}, {"berlin", "berlinxx"}, {"paris", "rome"}, {"games", "gamse1"}, {"abcd", "badc"}} {
		if oneEdit(w[0], w[1]) || oneEdit(w[1], w[0]) || edits(w[0], w[1]) <= 1 {
			t.Errorf("%q %q: more than one edit apart", w[0], w[1])
		}
	}
}
