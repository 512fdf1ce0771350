package queries

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"dataplatform/store"
	"dataplatform/store/datasets"
	"dataplatform/store/ingest"
	"dataplatform/store/nlsql"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
)

// NLSchema describes sources for the natural-language engine: the columns, the known values
// of text columns and how well each dataset's search entries match the question (the
// project's search index), and the relationships between the sources.
func NLSchema(ctx context.Context, db *sqlx.DB, projectID, question string, sources []Source) (nlsql.Schema, error) {
	var s nlsql.Schema
	// Known values come from the search index: the frequent values of low-cardinality text
	// columns, kept by each analysis.
	var rows []struct {
		Dataset string `db:"dataset_id"`
		Column  string `db:"column_name"`
		Value   string `db:"content"`
	}
	if err := sqlx.SelectContext(ctx, db, &rows, `SELECT dataset_id, column_name, content FROM platform.dataset_search
		WHERE project_id = $1 AND kind = 'value' ORDER BY dataset_id, column_name, frequency DESC NULLS LAST, content`, projectID); err != nil {
		return s, fmt.Errorf("read schema for questions: %w", err)
	}
	values := map[string][]string{} // dataset id + "." + column → values
	for _, r := range rows {
		values[r.Dataset+"."+r.Column] = append(values[r.Dataset+"."+r.Column], r.Value)
	}
	if err := namedValues(ctx, db, question, sources, values); err != nil {
		return s, fmt.Errorf("read schema for questions: %w", err)
	}
	rank, matched, err := RankDatasets(ctx, db, projectID, question)
	if err != nil {
		return s, fmt.Errorf("read schema for questions: %w", err)
	}
	relsOf := map[string][]store.Relationship{} // source id → its relationships
	for _, src := range sources {
		if relsOf[src.ID], err = store.Relationships(ctx, db, src.ID); err != nil {
			return s, fmt.Errorf("read schema for questions: %w", err)
		}
	}
	stats, err := roleStatistics(ctx, db, sources)
	if err != nil {
		return s, fmt.Errorf("read schema for questions: %w", err)
	}
	refs := map[string]string{} // dataset id + "." + table name → ref
	for _, src := range sources {
		if src.Broken != "" {
			continue // a broken view answers nothing
		}
		for _, t := range src.Tables {
			ref := Identifier(src.Name)
			if len(src.Tables) > 1 {
				ref += "." + t.Name
			}
			refs[src.ID+"."+t.Name] = ref
			nt := nlsql.Table{Ref: ref, DatasetID: src.ID, Dataset: src.Name, Name: t.Name, System: t.System(), GeneratedID: t.GeneratedID(), Rank: rank[src.ID],
				Matched: matched[src.ID]}
			// the roles the schema API shows: set by people, or inferred with the statistics
			roles := datasets.ColumnRoles(t, stats[src.ID+"."+t.Name], datasets.RelationshipEnds(src.ID, t.Name, relsOf[src.ID]))
			for i, c := range t.Columns {
				label := c.Original
				if label == "" {
					label = c.Name
				}
				nc := nlsql.Column{Name: c.Name, Label: label, Type: c.Type, Values: values[src.ID+"."+c.Name], Role: roles[i]}
				if m := c.Semantics; m != nil {
					nc.Aliases, nc.Unit, nc.DefaultAgg = m.Aliases, m.Unit, m.DefaultAggregation
				}
				nt.Columns = append(nt.Columns, nc)
			}
			for _, m := range ingest.Measures(t.Columns) {
				// a named measure: a number of its own, combined as defined when a question does not say
				nt.Columns = append(nt.Columns, nlsql.Column{Name: m.Name, Label: m.Name, Type: ingest.Numeric, DefaultAgg: m.Aggregation, Role: m.Role(),
					Unit: ingest.MeasureUnit(m, t.Columns), Measure: &m, MeasureOfTimes: m.OfTimes(t.Columns)})
			}
			if t.System() {
				nt.Columns = append(nt.Columns, nlsql.Column{Name: "created_at", Label: "created at", Type: ingest.Timestamptz, Role: ingest.RoleTime})
			}
			s.Tables = append(s.Tables, nt)
		}
	}
	seen := map[string]bool{}
	for _, src := range sources {
		for _, r := range relsOf[src.ID] {
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

// roleStatistics are what the last analyses of the sources found of their columns' values
// that role inference reads (rows, distinct and empty values, ranges; not the samples), by
// dataset id + "." + table name.
func roleStatistics(ctx context.Context, db *sqlx.DB, sources []Source) (map[string]*datasets.TableStats, error) {
	ids := make([]string, 0, len(sources))
	for _, src := range sources {
		ids = append(ids, src.ID)
	}
	var rows []struct {
		Dataset  string `db:"dataset_id"`
		Table    string `db:"table_name"`
		Rows     int64  `db:"row_count"`
		Column   string `db:"column_name"`
		Distinct int64  `db:"distinct_count"`
		Nulls    int64  `db:"null_count"`
		Min, Max []byte
	}
	if err := sqlx.SelectContext(ctx, db, &rows, `SELECT d.id AS dataset_id, t.key AS table_name,
			coalesce((t.value->>'row_count')::bigint, 0) AS row_count, c.key AS column_name,
			coalesce((c.value->>'distinct_count')::bigint, 0) AS distinct_count, coalesce((c.value->>'null_count')::bigint, 0) AS null_count,
			c.value->'min' AS min, c.value->'max' AS max
		FROM platform.datasets d,
			jsonb_each(CASE WHEN jsonb_typeof(d.statistics->'tables') = 'object' THEN d.statistics->'tables' END) t,
			jsonb_each(CASE WHEN jsonb_typeof(t.value->'columns') = 'object' THEN t.value->'columns' END) c
		WHERE d.id = ANY($1)`,
		pq.Array(ids)); err != nil {
		return nil, err
	}
	out := map[string]*datasets.TableStats{}
	for _, r := range rows {
		k := r.Dataset + "." + r.Table
		ts := out[k]
		if ts == nil {
			ts = &datasets.TableStats{RowCount: r.Rows, Columns: map[string]*datasets.ColumnStats{}}
			out[k] = ts
		}
		ts.Columns[r.Column] = &datasets.ColumnStats{DistinctCount: r.Distinct, NullCount: r.Nulls, Min: r.Min, Max: r.Max}
	}
	return out, nil
}

// RankDatasets scores the project's datasets against the question with their search
// entries (names, descriptions, columns, values): full-text matches of its words, and
// trigram word similarity for the rest (misspellings, plurals). It also says which words of
// the question each dataset's name, description and columns match.
func RankDatasets(ctx context.Context, db *sqlx.DB, projectID, question string) (map[string]float64, map[string][]string, error) {
	var rows []struct {
		ID    string  `db:"dataset_id"`
		Score float64 `db:"score"`
	}
	err := sqlx.SelectContext(ctx, db, &rows, `SELECT dataset_id, sum(CASE WHEN s.tsv @@ q.q THEN 1 ELSE 0 END + word_similarity(s.content, $2)) AS score
		FROM platform.dataset_search s, (SELECT replace(plainto_tsquery('simple', $2)::text, '&', '|') AS t) w,
			LATERAL (SELECT CASE WHEN w.t = '' THEN NULL ELSE w.t::tsquery END AS q) q
		WHERE s.project_id = $1 AND s.kind IN ('dataset', 'column') AND (s.tsv @@ q.q OR s.content <% $2)
		GROUP BY 1`, projectID, question)
	if err != nil {
		return nil, nil, err
	}
	out := map[string]float64{}
	for _, r := range rows {
		out[r.ID] = r.Score
	}
	var words []struct {
		ID   string `db:"dataset_id"`
		Word string `db:"word"`
	}
	err = sqlx.SelectContext(ctx, db, &words, `SELECT DISTINCT s.dataset_id, w.word
		FROM platform.dataset_search s, unnest(regexp_split_to_array(lower($2), '[^[:alnum:]]+')) w(word)
		WHERE s.project_id = $1 AND s.kind IN ('dataset', 'column') AND w.word <> ''
			AND (s.tsv @@ plainto_tsquery('simple', w.word) OR w.word <% s.content)
		ORDER BY 1, 2`, projectID, question)
	matched := map[string][]string{}
	for _, w := range words {
		matched[w.ID] = append(matched[w.ID], w.Word)
	}
	return out, matched, err
}

// properName is a run of two to four capitalised words: how a question spells a person's or
// a company's name ("Ada Lovelace", "Hooli Co", "Dr. Maria Alvarez").
var properName = regexp.MustCompile(`[A-Z][A-Za-z'’.-]*(?:\s+[A-Z][A-Za-z'’.-]*){1,3}`)

// namedValues adds to values the names the question spells out that a name-like column of an
// uploaded table holds (name, full_name, company, title): there are too many of those to
// know ahead, so "orders Ada Lovelace placed" reaches her row only this way. Each lookup is
// one indexed-or-not equality scan, cut short after a moment.
func namedValues(ctx context.Context, db *sqlx.DB, question string, sources []Source, values map[string][]string) error {
	var names []string
	for _, n := range properName.FindAllString(question, -1) {
		names = append(names, strings.ToLower(strings.TrimSpace(n)))
	}
	if len(names) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	defer cancel()
	for _, src := range sources {
		for _, t := range src.Tables {
			if !t.System() || src.Broken != "" {
				continue
			}
			for _, c := range t.Columns {
				if c.Type != ingest.Text || !nameLike(c.Name) {
					continue
				}
				var found []string
				err := sqlx.SelectContext(ctx, db, &found, `SELECT DISTINCT `+pq.QuoteIdentifier(c.Name)+` FROM `+datasets.Table(t.Schema, t.Relation)+
					` WHERE lower(`+pq.QuoteIdentifier(c.Name)+`) = ANY($1) AND deleted_at IS NULL LIMIT 5`, pq.Array(names))
				if ctx.Err() != nil {
					return nil // out of time: the names stay unknown, as before
				} else if err != nil {
					return err
				}
				key := src.ID + "." + c.Name
				for _, v := range found {
					if !slices.Contains(values[key], v) {
						values[key] = append(values[key], v)
					}
				}
			}
		}
	}
	return nil
}

// nameLike reports whether a column names its rows to people.
func nameLike(col string) bool {
	return col == "name" || strings.HasSuffix(col, "_name") || col == "company" || col == "title" || strings.HasSuffix(col, "_title")
}
