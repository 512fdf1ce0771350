package datasets

import (
	"encoding/json"
	"slices"
	"strconv"

	"dataplatform/store"
	"dataplatform/store/ingest"
)

// ColumnRoles are the roles of table t's columns, in order (ingest.InferRoles): the role a
// person set (alter_column), else the one inferred from the columns' names and types, the
// table's other columns, its keys (the primary key, and keys: the columns at an end of a
// relationship) and what the last analysis found of their values (ts; nil: nothing). The
// schema API, plain-English questions, generated dashboards and the descriptions all read
// the roles from here, so they say the same.
func ColumnRoles(t TableDef, ts *TableStats, keys map[string]bool) []ingest.Role {
	in := ingest.RoleColumns(t.Columns)
	for i := range in {
		c := &in[i]
		c.Key = c.Key || slices.Contains(t.PrimaryKey, c.Name) || keys[c.Name]
		if ts == nil || ts.RowCount == 0 {
			continue
		}
		s := ts.Columns[c.Name]
		if s == nil {
			continue
		}
		c.Rows, c.Distinct, c.Nulls = ts.RowCount, s.DistinctCount, s.NullCount
		c.Min, c.Max = statNumber(s.Min), statNumber(s.Max)
	}
	return ingest.InferRoles(in)
}

// RelationshipEnds are the columns of a dataset's table at an end of one of rels: keys and
// references, whatever their names.
func RelationshipEnds(datasetID, table string, rels []store.Relationship) map[string]bool {
	out := map[string]bool{}
	for _, r := range rels {
		if r.FromDataset == datasetID && r.FromTable == table {
			out[r.FromColumn] = true
		}
		if r.ToDataset == datasetID && r.ToTable == table {
			out[r.ToColumn] = true
		}
	}
	return out
}

// RoleSet reports whether a column's role was set by a person rather than inferred.
func RoleSet(c ingest.Column) bool {
	return c.Semantics != nil && ingest.Role(c.Semantics.Role).Valid()
}

// statNumber is a statistic's smallest or largest value as a number (JSON numbers, or
// numeric values written as text), or nil.
func statNumber(raw json.RawMessage) *float64 {
	if len(raw) == 0 {
		return nil
	}
	var f float64
	if json.Unmarshal(raw, &f) == nil {
		return &f
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		if v, err := strconv.ParseFloat(s, 64); err == nil {
			return &v
		}
	}
	return nil
}
