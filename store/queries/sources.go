package queries

import (
	"context"
	"encoding/json"
	"fmt"

	"dataplatform/store"
	"dataplatform/store/datasets"
	"dataplatform/store/ingest"

	"github.com/jmoiron/sqlx"
)

// ProjectSources are what a project's queries may read: its active datasets, then its saved
// views (a broken one with its reason, so that naming it says why it cannot be read). Given
// several projects, those of all of them.
func ProjectSources(ctx context.Context, q sqlx.QueryerContext, projectIDs ...string) ([]Source, error) {
	all, err := store.ProjectDatasets(ctx, q, projectIDs...)
	if err != nil {
		return nil, fmt.Errorf("list project sources: %w", err)
	}
	out := make([]Source, 0, len(all))
	for i := range all {
		t, err := datasets.Tables(&all[i])
		if err != nil {
			return nil, fmt.Errorf("list project sources: %w", err)
		}
		out = append(out, Source{ID: all[i].ID, Name: all[i].Name, Tables: t})
	}
	vs, err := store.ProjectViews(ctx, q, projectIDs...)
	if err != nil {
		return nil, fmt.Errorf("list project sources: %w", err)
	}
	for i := range vs {
		s, err := ViewSource(&vs[i])
		if err != nil {
			return nil, fmt.Errorf("list project sources: %w", err)
		}
		out = append(out, s)
	}
	return out, nil
}

// ViewSource is a saved view as a source: one table, its PostgreSQL view.
func ViewSource(v *store.View) (Source, error) {
	var cols []store.ViewColumn
	if err := json.Unmarshal([]byte(v.Columns), &cols); err != nil {
		return Source{}, fmt.Errorf("read view source: %w", err)
	}
	t := datasets.TableDef{Name: v.ID, Schema: v.OrgID, Relation: v.ID, View: true, Columns: make([]ingest.Column, len(cols))}
	for i, c := range cols {
		t.Columns[i] = ingest.Column{Name: c.Name, Original: c.Name, Type: ingest.Type(c.Type), Nullable: c.Nullable}
	}
	s := Source{ID: v.ID, Name: v.Name, Tables: []datasets.TableDef{t}}
	if v.Status == "broken" {
		s.Broken = "it no longer runs"
		if v.Error != nil {
			s.Broken = *v.Error
		}
	}
	return s, nil
}

// ByTableName are sources that answer only to their ids, which are their table names: how
// record SQL names the organization's datasets and views (names are unique within a project,
// not across an organization). A source's ID is kept; its Name becomes the ID.
func ByTableName(sources []Source) []Source {
	out := make([]Source, len(sources))
	for i, s := range sources {
		s.Name = s.ID
		out[i] = s
	}
	return out
}
