package views

import (
	"fmt"
	"sort"
	"strings"

	"dataplatform/store/queries"

	"github.com/lib/pq"
)

// member is a dataset (or view) of a join, under its alias: its name as an identifier.
type member struct {
	src   queries.Source
	alias string
	cols  map[string]bool
	order []string // its columns as its schema lists them (the default selection)
}

// names are what a member answers to in a join's references, in lower case.
func (m *member) names() []string {
	return []string{strings.ToLower(m.src.ID), strings.ToLower(m.src.Name), m.alias}
}

// compileJoin writes a join definition as one SELECT over the sources' ids (which
// queries.Prepare then maps like any query's names).
func compileJoin(j *Join, sources []queries.Source) (string, error) {
	var members []*member
	add := func(ref, field string) error {
		m, err := resolve(ref, field, sources)
		if err != nil {
			return err
		}
		for _, o := range members {
			if o.src.ID == m.src.ID || o.alias == m.alias {
				return &DefinitionError{Field: field, Code: "duplicate", Message: fmt.Sprintf("%s is in the join already: a join reads each dataset once", ref)}
			}
		}
		members = append(members, m)
		return nil
	}
	if err := add(j.Base, "join.base"); err != nil {
		return "", err
	}
	var b strings.Builder
	from := queryName(members[0])
	for i, s := range j.Joins {
		field := fmt.Sprintf("join.joins[%d]", i)
		if err := add(s.Dataset, field+".dataset"); err != nil {
			return "", err
		}
		kind := map[string]string{"inner": "JOIN", "left": "LEFT JOIN"}[s.Type]
		if kind == "" {
			return "", &DefinitionError{Field: field + ".type", Code: "enum", Message: "type is inner or left"}
		}
		if len(s.On) == 0 {
			return "", &DefinitionError{Field: field + ".on", Code: "required", Message: "a join needs at least one pair of equal columns"}
		}
		var conds []string
		for k, on := range s.On {
			l, err := column(on.Left, fmt.Sprintf("%s.on[%d].left", field, k), members)
			if err != nil {
				return "", err
			}
			r, err := column(on.Right, fmt.Sprintf("%s.on[%d].right", field, k), members)
			if err != nil {
				return "", err
			}
			conds = append(conds, l.sql+" = "+r.sql)
		}
		from += " " + kind + " " + queryName(members[len(members)-1]) + " ON " + strings.Join(conds, " AND ")
	}
	var sel []string
	seen := map[string]string{} // output name → the field that named it
	name := func(n, field string) error {
		if len(n) > 63 {
			return &DefinitionError{Field: field, Code: "max_length", Message: "a column name has at most 63 bytes"}
		}
		if f, ok := seen[n]; ok {
			return &DefinitionError{Field: field, Code: "duplicate", Message: fmt.Sprintf("the view has a column %s already (%s): name this one with as", n, f)}
		}
		seen[n] = field
		return nil
	}
	if len(j.Columns) == 0 {
		// Every column of each member; a name that several have is prefixed with its member's alias.
		count := map[string]int{}
		for _, m := range members {
			for _, c := range m.order {
				count[c]++
			}
		}
		for _, m := range members {
			for _, c := range m.order {
				as := c
				if count[c] > 1 {
					as = m.alias + "_" + c
				}
				if err := name(as, "join.columns"); err != nil {
					return "", err
				}
				sel = append(sel, pq.QuoteIdentifier(m.alias)+"."+pq.QuoteIdentifier(c)+" AS "+pq.QuoteIdentifier(as))
			}
		}
	}
	for i, c := range j.Columns {
		field := fmt.Sprintf("join.columns[%d]", i)
		ref, err := column(c.Source, field+".source", members)
		if err != nil {
			return "", err
		}
		as := c.As
		if as == "" {
			as = ref.name
		}
		if err := name(as, field); err != nil {
			return "", err
		}
		sel = append(sel, ref.sql+" AS "+pq.QuoteIdentifier(as))
	}
	b.WriteString("SELECT " + strings.Join(sel, ", ") + " FROM " + from)
	return b.String(), nil
}

// queryName is a member in FROM: its id (unambiguous) under its alias.
func queryName(m *member) string { return m.src.ID + " AS " + pq.QuoteIdentifier(m.alias) }

// resolve finds the source a join names, by id, name or identifier.
func resolve(ref, field string, sources []queries.Source) (*member, error) {
	want := strings.ToLower(strings.TrimSpace(ref))
	for _, s := range sources {
		alias := queries.Identifier(s.Name)
		if want != strings.ToLower(s.ID) && want != strings.ToLower(s.Name) && want != alias {
			continue
		}
		if len(s.Tables) != 1 {
			return nil, &DefinitionError{Field: field, Code: "not_supported", Message: fmt.Sprintf(
				"%s is a connected dataset of %d tables: join its tables with a view defined by sql", ref, len(s.Tables))}
		}
		t := s.Tables[0]
		m := &member{src: s, alias: alias, cols: map[string]bool{}}
		for _, c := range t.Columns {
			m.cols[c.Name] = true
			m.order = append(m.order, c.Name)
		}
		if t.System() { // the system columns may be joined on and picked, not part of "every column"
			m.cols["created_at"], m.cols["updated_at"] = true, true
			m.cols["id"] = t.GeneratedID() || m.cols["id"]
		}
		return m, nil
	}
	var avail []string
	for _, s := range sources {
		if len(s.Tables) == 1 {
			avail = append(avail, queries.Identifier(s.Name))
		}
	}
	sort.Strings(avail)
	return nil, &DefinitionError{Field: field, Code: "unknown_dataset", Message: fmt.Sprintf("%q is not a dataset or view of this project", ref),
		Available: avail}
}

type colRef struct{ sql, name string }

// column reads "dataset.column" against the members joined so far: the longest member name
// that prefixes it wins (names may hold dots).
func column(ref, field string, members []*member) (colRef, error) {
	low := strings.ToLower(ref)
	var best *member
	var rest string
	for _, m := range members {
		for _, n := range m.names() {
			if strings.HasPrefix(low, n+".") && (best == nil || len(n) > len(low)-len(rest)-1) {
				best, rest = m, ref[len(n)+1:]
			}
		}
	}
	if best == nil {
		return colRef{}, &DefinitionError{Field: field, Code: "not_found", Message: fmt.Sprintf(
			"%q names no dataset of the join so far: write dataset.column, with a dataset joined before or in this step", ref)}
	}
	if !best.cols[rest] {
		return colRef{}, &DefinitionError{Field: field, Code: "not_found", Message: fmt.Sprintf("%s has no column %q", best.src.Name, rest)}
	}
	return colRef{sql: pq.QuoteIdentifier(best.alias) + "." + pq.QuoteIdentifier(rest), name: rest}, nil
}
