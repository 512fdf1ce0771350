package queries

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"dataplatform/datasets"
	"dataplatform/ingest"
	"dataplatform/nlsql"
	"dataplatform/store"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
)

// maxKnownValues is how many distinct values a text column may have for the engine to match
// words against them.
const maxKnownValues = 100

// knownValues caches the values per dataset and analysis (they change when it is analysed).
var knownValues = struct {
	sync.Mutex
	m map[string]map[string][]string // dataset|analysis|schema → table.column → values
}{m: map[string]map[string][]string{}}

// NLSchema describes sources for the natural-language engine: the columns, the values of
// text columns with few distinct values (read from the tables; live rows only), and the
// relationships between the sources.
func NLSchema(ctx context.Context, db *sqlx.DB, all []store.Dataset, sources []Source) (nlsql.Schema, error) {
	var s nlsql.Schema
	byID := map[string]*store.Dataset{}
	for i := range all {
		byID[all[i].ID] = &all[i]
	}
	refs := map[string]string{} // dataset id + "." + table name → ref
	for _, src := range sources {
		d := byID[src.ID]
		values, err := datasetValues(ctx, db, d, src)
		if err != nil {
			return s, err
		}
		for _, t := range src.Tables {
			ref := Identifier(src.Name)
			if len(src.Tables) > 1 {
				ref += "." + t.Name
			}
			refs[src.ID+"."+t.Name] = ref
			nt := nlsql.Table{Ref: ref, DatasetID: src.ID, Dataset: src.Name, Name: t.Name, System: t.System()}
			for _, c := range t.Columns {
				label := c.Original
				if label == "" {
					label = c.Name
				}
				nt.Columns = append(nt.Columns, nlsql.Column{Name: c.Name, Label: label, Type: c.Type, Values: values[t.Name+"."+c.Name]})
			}
			if t.System() {
				nt.Columns = append(nt.Columns, nlsql.Column{Name: "created_at", Label: "created at", Type: ingest.Timestamptz})
			}
			s.Tables = append(s.Tables, nt)
		}
	}
	seen := map[string]bool{}
	for _, src := range sources {
		rels, err := store.Relationships(ctx, db, src.ID)
		if err != nil {
			return s, err
		}
		for _, r := range rels {
			from, okF := refs[r.FromDataset+"."+r.FromTable]
			to, okT := refs[r.ToDataset+"."+r.ToTable]
			key := from + "." + r.FromColumn + ">" + to + "." + r.ToColumn
			if okF && okT && !seen[key] {
				seen[key] = true
				s.Relations = append(s.Relations, nlsql.Relation{From: from, FromColumn: r.FromColumn, To: to, ToColumn: r.ToColumn})
			}
		}
	}
	return s, nil
}

// datasetValues reads the distinct values of the dataset's text columns that have at most
// maxKnownValues of them (by its statistics).
func datasetValues(ctx context.Context, db *sqlx.DB, d *store.Dataset, src Source) (map[string][]string, error) {
	if d == nil {
		return nil, nil
	}
	key := fmt.Sprintf("%s|%d|%d", d.ID, d.AnalysisVersion, d.SchemaVersion)
	knownValues.Lock()
	cached, ok := knownValues.m[key]
	knownValues.Unlock()
	if ok {
		return cached, nil
	}
	var st datasets.Statistics
	_ = json.Unmarshal([]byte(d.Statistics), &st)
	out := map[string][]string{}
	for _, t := range src.Tables {
		ts := st.Tables[t.Name]
		if ts == nil {
			continue
		}
		for _, c := range t.Columns {
			cs := ts.Columns[c.Name]
			if c.Type != ingest.Text || cs == nil || cs.DistinctCount == 0 || cs.DistinctCount > maxKnownValues {
				continue
			}
			col := pq.QuoteIdentifier(c.Name)
			where := ` WHERE ` + col + ` IS NOT NULL`
			if t.System() {
				where += ` AND deleted_at IS NULL`
			}
			var vs []string
			if err := sqlx.SelectContext(ctx, db, &vs, `SELECT DISTINCT `+col+` FROM `+t.Qualified()+where+` ORDER BY 1 LIMIT `+
				fmt.Sprint(maxKnownValues+1)); err != nil {
				return nil, err
			}
			var kept []string
			for _, v := range vs {
				if v != "" {
					kept = append(kept, v)
				}
			}
			if len(kept) <= maxKnownValues {
				out[t.Name+"."+c.Name] = kept
			}
		}
	}
	knownValues.Lock()
	if len(knownValues.m) > 1000 {
		knownValues.m = map[string]map[string][]string{}
	}
	knownValues.m[key] = out
	knownValues.Unlock()
	return out, nil
}
