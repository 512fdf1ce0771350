package ingest

// Semantics is what a dataset's owner taught about a column for plain-English questions and
// generated dashboards: other names people use for it, the unit of its values, how its
// values combine when a question or a tile does not say ("sum", "avg", "min", "max", or
// "none": never), and its role (Role; empty: inferred, InferRoles). It changes no data.
type Semantics struct {
	Aliases            []string `json:"aliases,omitempty"`
	Unit               string   `json:"unit,omitempty"`
	DefaultAggregation string   `json:"default_aggregation,omitempty"`
	Role               string   `json:"role,omitempty"`
	// Measures are the dataset's named measures built on this column (kept with the column,
	// so that they follow its schema versions; the schema API lists them per dataset).
	Measures []Measure `json:"measures,omitempty"`
}

// Empty reports whether nothing is taught.
func (s *Semantics) Empty() bool {
	return s == nil || len(s.Aliases) == 0 && s.Unit == "" && s.DefaultAggregation == "" && s.Role == "" && len(s.Measures) == 0
}
