// Package queries runs SQL over a project's datasets: dataset names in the text become their
// tables, {{name}} placeholders become bound parameters, and the statement goes through the
// same checks and read-only execution as the record API's query endpoint.
package queries

import (
	"fmt"
	"sort"
	"strings"

	"dataplatform/store/datasets"
	"dataplatform/store/ingest"
	"dataplatform/store/usersql"

	"github.com/lib/pq"
)

// Source is a dataset or a saved view a query may read.
type Source struct {
	ID, Name string
	Tables   []datasets.TableDef
	// Broken is why a saved view cannot be read (a change to what it reads broke it): a query
	// naming it fails with a BrokenError.
	Broken string
}

// Used is a dataset a query reads, and which of its tables.
type Used struct {
	ID     string   `json:"id"`
	Name   string   `json:"name"`
	Tables []string `json:"tables"`
}

// Prepared is a project query ready to run.
type Prepared struct {
	SQL    string   // what runs: tables for dataset names, $n for placeholders
	Params []string // the placeholder names, in $n order
	Used   []Used
	Steps  []string
}

// UnknownError is a relation that names no dataset the query may read: a table it reads,
// or (Type) a type that is no built-in type, which could only be a relation's row type. A
// relation that exists but is not a source gets the same error as one that does not exist.
type UnknownError struct {
	Name         string
	Type         bool
	Line, Column int
	Available    []string
}

func (e *UnknownError) Error() string {
	if e.Type {
		return fmt.Sprintf("%q is neither a built-in type nor a dataset of this project (line %d, column %d)", e.Name, e.Line, e.Column)
	}
	return fmt.Sprintf("%q is not a dataset of this project (line %d, column %d)", e.Name, e.Line, e.Column)
}

// BrokenError is a query naming a saved view that a change to what it reads broke.
type BrokenError struct {
	ID, Name, Reason string
}

func (e *BrokenError) Error() string {
	return fmt.Sprintf("the view %s is broken: %s; fix its definition (PATCH .../views/%s)", e.Name, e.Reason, e.ID)
}

type target struct {
	src   int
	table datasets.TableDef
}

// Identifier is a dataset name as a query can write it unquoted ("Sales Data" → sales_data).
func Identifier(name string) string { return ingest.Identifiers([]string{name})[0] }

// names are the lower-case names a dataset answers to: its id, its name, and its name as an
// identifier ("Sales Data" → sales_data).
func names(s Source) []string {
	out := []string{strings.ToLower(s.ID), strings.ToLower(s.Name)}
	return append(out, Identifier(s.Name))
}

// Prepare binds the placeholders of query and maps its relations onto sources (Map).
func Prepare(query string, sources []Source) (*Prepared, error) {
	bound, params, err := usersql.BindBraces(query, 1)
	if err != nil {
		return nil, err
	}
	p, err := Map(bound, sources)
	if err != nil {
		return nil, err
	}
	p.Params = params
	if len(params) > 0 {
		ph := make([]string, len(params))
		for i, n := range params {
			ph[i] = fmt.Sprintf("{{%s}} as $%d", n, i+1)
		}
		p.Steps = append(p.Steps, "Bound the placeholders as parameters: "+strings.Join(ph, ", "))
	}
	return p, nil
}

// Map maps the relations of sql (which may hold $n parameters) onto sources, and refuses
// the query when one is not a source: every table it reads, in any clause, and every
// relation it names as a type (a row type shows the relation's columns). A file dataset or a
// view answers to its name or id, a connected dataset's table to dataset.table (or to the
// bare table name when it is the only one of that name), and any table to its real
// schema-qualified name (which stays as written). The result passed usersql.Check.
func Map(bound string, sources []Source) (*Prepared, error) {
	rels, err := usersql.Relations(bound)
	if err != nil {
		return nil, err
	}
	// Checked before the names are mapped, so that a write or a catalog read is refused as
	// such rather than as an unknown dataset (the row types as written are the mapping's to
	// judge); and again after.
	var written []usersql.Relation
	for _, r := range rels {
		if r.Type {
			written = append(written, r)
		}
	}
	if err := usersql.Check(bound, written...); err != nil {
		return nil, err
	}
	ix := indexNames(sources)
	p := &Prepared{Used: []Used{}}
	with := make([]string, len(rels))
	used := map[int]map[string]bool{}
	var mapped []string
	var rowTypes []usersql.Relation // the real names of the row types named, for the check after mapping
	for i, r := range rels {
		t, ok := ix.lookup(r)
		if !ok {
			line, col := usersql.Position(bound, len([]rune(bound[:r.Start]))+1)
			return nil, &UnknownError{Name: r.Text(bound), Type: r.Type, Line: line, Column: col, Available: available(sources)}
		}
		if b := sources[t.src].Broken; b != "" {
			return nil, &BrokenError{ID: sources[t.src].ID, Name: sources[t.src].Name, Reason: b}
		}
		schema, rel := t.table.QueryRelation()
		with[i] = replacement(bound, r, t, schema, rel)
		if r.Type {
			rowTypes = append(rowTypes, usersql.Relation{Schema: schema, Name: rel})
		}
		if used[t.src] == nil {
			used[t.src] = map[string]bool{}
		}
		if !used[t.src][t.table.Name] {
			kind := "dataset"
			if t.table.View {
				kind = "view"
			}
			mapped = append(mapped, fmt.Sprintf("%s → %s %q (%s)", r.Text(bound), kind, sources[t.src].Name, sources[t.src].ID))
		}
		used[t.src][t.table.Name] = true
	}
	p.SQL = usersql.Splice(bound, rels, with)
	if err := usersql.Check(p.SQL, rowTypes...); err != nil {
		return nil, err
	}
	p.Used = append(p.Used, usedOf(sources, used)...)
	p.Steps = append(p.Steps, "Parsed the SQL with PostgreSQL's parser: one SELECT statement, nothing that writes, locks or reads the catalogs")
	p.Steps = append(p.Steps, mapped...)
	return p, nil
}

// nameIndex finds the table a relation of the SQL names.
type nameIndex struct {
	single    map[string]target   // name → the table of a one-table dataset
	qualified map[string]target   // dataset name + "." + table name, or schema + "." + relation → table
	bare      map[string][]target // a connected table's own name
}

func indexNames(sources []Source) nameIndex {
	ix := nameIndex{single: map[string]target{}, qualified: map[string]target{}, bare: map[string][]target{}}
	for i, s := range sources {
		for _, n := range names(s) {
			if len(s.Tables) == 1 {
				ix.single[n] = target{i, s.Tables[0]}
			}
			for _, t := range s.Tables {
				ix.qualified[n+"."+strings.ToLower(t.Name)] = target{i, t}
			}
		}
		for _, t := range s.Tables {
			if t.Foreign {
				ix.bare[strings.ToLower(t.Name)] = append(ix.bare[strings.ToLower(t.Name)], target{i, t})
			}
			schema, rel := t.QueryRelation()
			ix.qualified[strings.ToLower(schema)+"."+strings.ToLower(rel)] = target{i, t}
		}
	}
	return ix
}

// lookup is the table r names: qualified, a one-table dataset's name, or a connected table's
// own name when only one table has it.
func (ix nameIndex) lookup(r usersql.Relation) (target, bool) {
	name := strings.ToLower(r.Name)
	if r.Schema != "" {
		t, ok := ix.qualified[strings.ToLower(r.Schema)+"."+name]
		return t, ok
	}
	if t, ok := ix.single[name]; ok {
		return t, true
	}
	if len(ix.bare[name]) == 1 {
		return ix.bare[name][0], true
	}
	return target{}, false
}

// replacement is what r is written as in the mapped SQL: its real name (schema, rel) as it
// stands, so that columns may be qualified by it; else the table's name, aliased as r was
// named unless r has an alias (or is a row type).
func replacement(bound string, r usersql.Relation, t target, schema, rel string) string {
	switch {
	case r.Schema == schema && r.Name == rel:
		return r.Text(bound)
	case r.Type:
		return t.table.QueryName()
	}
	w := t.table.QueryName()
	if !r.Aliased {
		w += " AS " + pq.QuoteIdentifier(r.Name)
	}
	return w
}

// usedOf is, per source used, the tables of it used, in the sources' order.
func usedOf(sources []Source, used map[int]map[string]bool) []Used {
	var out []Used
	for i, s := range sources {
		if tabs, ok := used[i]; ok {
			u := Used{ID: s.ID, Name: s.Name}
			for _, t := range s.Tables {
				if tabs[t.Name] {
					u.Tables = append(u.Tables, t.Name)
				}
			}
			out = append(out, u)
		}
	}
	return out
}

// available lists what a query may name, for an error.
func available(sources []Source) []string {
	var out []string
	for _, s := range sources {
		if len(s.Tables) == 1 {
			out = append(out, Identifier(s.Name))
			continue
		}
		for _, t := range s.Tables {
			out = append(out, Identifier(s.Name)+"."+t.Name)
		}
	}
	sort.Strings(out)
	return out
}
