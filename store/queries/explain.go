package queries

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
)

// PlanNode is a node of the planner's plan, in the API's words.
type PlanNode struct {
	Type          string     `json:"type"`
	Table         string     `json:"table,omitempty"`
	Index         string     `json:"index,omitempty"`
	Filter        string     `json:"filter,omitempty"`
	EstimatedRows int64      `json:"estimated_rows"`
	EstimatedCost float64    `json:"estimated_cost"`
	Plans         []PlanNode `json:"plans,omitempty"`
}

// TableFacts is what the advice needs to know of a relation a plan reads.
type TableFacts struct {
	Label   string          // what the query calls it: a dataset name, or dataset.table
	Rows    int64           // the planner's row count of the table (-1: unknown)
	Columns []string        // its columns
	Indexed map[string]bool // columns that lead an index
	Foreign bool
}

// Advice is what a plan already does well, what is costly, and what to do about it.
type Advice struct {
	Optimizations []string `json:"optimizations"`
	Warnings      []string `json:"warnings"`
	Suggestions   []string `json:"suggestions"`
}

// LargeTable is the row count from which a full read of a table is worth a warning.
const LargeTable = 10_000

type rawNode struct {
	Type     string    `json:"Node Type"`
	Relation string    `json:"Relation Name"`
	Index    string    `json:"Index Name"`
	Filter   string    `json:"Filter"`
	Cond     string    `json:"Index Cond"`
	Rows     float64   `json:"Plan Rows"`
	Cost     float64   `json:"Total Cost"`
	Workers  int       `json:"Workers Planned"`
	Plans    []rawNode `json:"Plans"`
}

// ReadPlan turns EXPLAIN (FORMAT JSON) into plan nodes named as the query names its tables,
// and advice.
func ReadPlan(explain json.RawMessage, tables map[string]TableFacts) (*PlanNode, Advice, error) {
	var doc []struct {
		Plan rawNode `json:"Plan"`
	}
	if err := json.Unmarshal(explain, &doc); err != nil || len(doc) == 0 {
		return nil, Advice{}, fmt.Errorf("queries: unreadable plan: %v", err)
	}
	a := Advice{Optimizations: []string{}, Warnings: []string{}, Suggestions: []string{}}
	seen := map[string]bool{}
	add := func(list *[]string, s string) {
		if !seen[s] {
			seen[s] = true
			*list = append(*list, s)
		}
	}
	limited := false
	var conv func(n rawNode) PlanNode
	conv = func(n rawNode) PlanNode {
		t, known := tables[n.Relation]
		label := n.Relation
		if known {
			label = t.Label
		}
		out := PlanNode{Type: n.Type, Table: label, Index: n.Index, Filter: n.Filter, EstimatedRows: int64(n.Rows), EstimatedCost: n.Cost}
		if out.Filter == "" {
			out.Filter = n.Cond
		}
		switch {
		case n.Type == "Limit":
			limited = true
		case n.Index != "":
			add(&a.Optimizations, fmt.Sprintf("%s reads %s through the index %s", n.Type, label, n.Index))
		case n.Type == "Hash Join" || n.Type == "Merge Join":
			add(&a.Optimizations, n.Type+" (no row-by-row lookups)")
		case n.Type == "Foreign Scan":
			add(&a.Warnings, fmt.Sprintf("%s is read live from its database: its speed is that database's", label))
		case n.Type == "Seq Scan" && known && t.Rows >= LargeTable:
			if n.Filter == "" {
				add(&a.Warnings, fmt.Sprintf("reads all of %s (~%d rows)", label, t.Rows))
				break
			}
			add(&a.Warnings, fmt.Sprintf("reads all of %s (~%d rows) to keep ~%d that match %s", label, t.Rows, int64(n.Rows), n.Filter))
			for _, c := range filterColumns(n.Filter, t.Columns) {
				if !t.Indexed[c] {
					add(&a.Suggestions, fmt.Sprintf("an index on %s.%s would let the filter skip the rest of the table", label, c))
				}
			}
		case n.Type == "Sort" && n.Rows >= 100_000:
			add(&a.Warnings, fmt.Sprintf("sorts ~%d rows", int64(n.Rows)))
		case n.Type == "Nested Loop" && len(n.Plans) == 2 && n.Plans[0].Rows >= 1000 && n.Plans[1].Rows >= 1000:
			add(&a.Warnings, fmt.Sprintf("a nested loop over ~%d × ~%d rows", int64(n.Plans[0].Rows), int64(n.Plans[1].Rows)))
			add(&a.Suggestions, "join on equal columns (a = b) so that PostgreSQL can hash or merge the join")
		}
		if n.Workers > 0 {
			add(&a.Optimizations, fmt.Sprintf("%s runs in parallel (%d workers)", n.Type, n.Workers))
		}
		for _, c := range n.Plans {
			out.Plans = append(out.Plans, conv(c))
		}
		return out
	}
	root := conv(doc[0].Plan)
	if !limited && root.EstimatedRows > LargeTable {
		add(&a.Suggestions, fmt.Sprintf("the query returns ~%d rows: add a LIMIT, or aggregate", root.EstimatedRows))
	}
	return &root, a, nil
}

var (
	words    = regexp.MustCompile(`"[^"]+"|[A-Za-z_][A-Za-z0-9_]*`)
	literals = regexp.MustCompile(`'(?:[^']|'')*'`)
)

// filterColumns are the table's columns that a plan's filter text names.
func filterColumns(filter string, columns []string) []string {
	is := map[string]bool{}
	for _, c := range columns {
		is[c] = true
	}
	var out []string
	seen := map[string]bool{}
	for _, w := range words.FindAllString(literals.ReplaceAllString(filter, ""), -1) {
		w = strings.Trim(w, `"`)
		if is[w] && !seen[w] {
			seen[w] = true
			out = append(out, w)
		}
	}
	return out
}

// Facts reads what ReadPlan needs of the tables a query uses: the planner's row counts and
// the columns that lead an index, keyed by relation name.
func Facts(ctx context.Context, q sqlx.QueryerContext, sources []Source, used []Used) (map[string]TableFacts, error) {
	out := map[string]TableFacts{}
	var quals []string
	for _, u := range used {
		for _, s := range sources {
			if s.ID != u.ID {
				continue
			}
			for _, t := range s.Tables {
				if !slices.Contains(u.Tables, t.Name) {
					continue
				}
				label := Identifier(s.Name)
				if len(s.Tables) > 1 {
					label += "." + t.Name
				}
				f := TableFacts{Label: label, Rows: -1, Foreign: t.Foreign, Indexed: map[string]bool{}}
				for _, c := range t.Columns {
					f.Columns = append(f.Columns, c.Name)
				}
				out[t.Relation] = f
				quals = append(quals, t.Schema+"."+t.Relation)
			}
		}
	}
	var rows []struct {
		Rel     string         `db:"relname"`
		Tuples  int64          `db:"tuples"`
		Indexed pq.StringArray `db:"indexed"`
	}
	err := sqlx.SelectContext(ctx, q, &rows, `SELECT c.relname, c.reltuples::bigint AS tuples,
		coalesce(array_agg(a.attname::text) FILTER (WHERE a.attname IS NOT NULL), '{}') AS indexed
		FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		LEFT JOIN pg_index i ON i.indrelid = c.oid
		LEFT JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum = i.indkey[0]
		WHERE n.nspname || '.' || c.relname = ANY ($1) GROUP BY c.relname, c.reltuples`, pq.StringArray(quals))
	if err != nil {
		return nil, err
	}
	for _, r := range rows {
		f := out[r.Rel]
		f.Rows = r.Tuples
		for _, c := range r.Indexed {
			f.Indexed[c] = true
		}
		out[r.Rel] = f
	}
	return out, nil
}
