package usersql

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	pg_query "github.com/pganalyze/pg_query_go/v6"
	"github.com/pganalyze/pg_query_go/v6/parser"
)

// Relation is a reference of a query to a relation and where it is written: a table (or
// view) it reads, or a relation's row type it names as a type.
type Relation struct {
	Schema, Name string // as PostgreSQL folds them (quoted names keep their case)
	Start, End   int    // byte span of the written, possibly qualified, name
	Aliased      bool   // the query gives it an alias
	// Type: named as a type (NULL::name, CAST(... AS name), name[], a column definition's
	// type): the relation's row type, which shows its columns.
	Type bool
}

// Text is the relation as written in sql.
func (r Relation) Text(sql string) string { return sql[r.Start:r.End] }

// Relations lists the relation references of sql (one statement): every table it reads, in
// any clause, and every type name that is no built-in type (a relation's row type, see
// rowType). A name that is one of the statement's WITH queries where it is written is left
// out, with PostgreSQL's scoping: a WITH query is seen by its statement (set operations and
// subqueries included), by the WITH queries after it, and, when RECURSIVE, by all of them.
func Relations(sql string) ([]Relation, error) {
	if !utf8.ValidString(sql) { // as Check: PostgreSQL would refuse it, the tree would not show it
		return nil, &SyntaxError{Message: "the query is not valid UTF-8", Line: 1, Column: 1}
	}
	tree, err := pg_query.ParseToJSON(sql)
	if err != nil {
		return nil, syntaxError(sql, err)
	}
	var v any
	if err := json.Unmarshal([]byte(tree), &v); err != nil {
		return nil, err
	}
	var found []Relation
	var visit func(v any, ctes map[string]bool)
	visit = func(v any, ctes map[string]bool) {
		switch x := v.(type) {
		case map[string]any:
			// A SelectStmt's fields (a node's, or a set operation's typed larg and rarg):
			// its WITH queries are in scope for the rest of it.
			if w, ok := x["withClause"].(map[string]any); ok {
				list, _ := w["ctes"].([]any)
				recursive, _ := w["recursive"].(bool)
				all := withNames(ctes, list, len(list))
				for i, c := range list {
					if recursive {
						visit(c, all)
					} else {
						visit(c, withNames(ctes, list, i))
					}
				}
				for k, c := range x {
					if k != "withClause" {
						visit(c, all)
					}
				}
				return
			}
			for k, c := range x {
				m, _ := c.(map[string]any)
				switch k {
				case "RangeVar":
					r := Relation{}
					r.Schema, _ = m["schemaname"].(string)
					r.Name, _ = m["relname"].(string)
					catalog, _ := m["catalogname"].(string)
					loc, _ := m["location"].(float64)
					r.Start = int(loc)
					_, r.Aliased = m["alias"]
					if r.Schema != "" || catalog != "" || !ctes[r.Name] {
						found = append(found, r)
					}
				case "TypeName", "typeName":
					if parts := names(m["names"], false); rowType(parts) {
						r := Relation{Type: true}
						r.Schema, r.Name = relationName(parts)
						loc, ok := m["location"].(float64)
						r.Start = int(loc)
						if !ok {
							r.Start = -1
						}
						found = append(found, r)
					}
				}
				visit(c, ctes)
			}
		case []any:
			for _, c := range x {
				visit(c, ctes)
			}
		}
	}
	visit(v, map[string]bool{})
	scan, err := pg_query.Scan(sql)
	if err != nil {
		return nil, syntaxError(sql, err)
	}
	out := make([]Relation, 0, len(found))
	for _, r := range found {
		// The name runs from its first token through "." name pairs.
		toks := scan.Tokens
		i := 0
		for i < len(toks) && int(toks[i].Start) != r.Start {
			i++
		}
		if i == len(toks) {
			return nil, fmt.Errorf("usersql: no token at the relation %q's position %d", r.Name, r.Start)
		}
		r.End = int(toks[i].End)
		for i+2 < len(toks) && toks[i+1].Token == pg_query.Token_ASCII_46 {
			i += 2
			r.End = int(toks[i].End)
		}
		out = append(out, r)
	}
	return out, nil
}

// withNames is the WITH query names in scope: those of outer and the first n of list.
func withNames(outer map[string]bool, list []any, n int) map[string]bool {
	in := make(map[string]bool, len(outer)+n)
	for k := range outer {
		in[k] = true
	}
	for _, c := range list[:n] {
		if m, ok := c.(map[string]any)["CommonTableExpr"].(map[string]any); ok {
			if name, ok := m["ctename"].(string); ok {
				in[name] = true
			}
		}
	}
	return in
}

// relationName is a qualified name's relation and the schema before it ("" when bare).
func relationName(parts []string) (schema, name string) {
	switch len(parts) {
	case 0:
		return "", ""
	case 1:
		return "", parts[0]
	}
	return parts[len(parts)-2], parts[len(parts)-1]
}

// Splice replaces spans of sql; the spans must not overlap.
func Splice(sql string, spans []Relation, with []string) string {
	idx := make([]int, len(spans))
	for i := range idx {
		idx[i] = i
	}
	// in order of position
	for i := 1; i < len(idx); i++ {
		for j := i; j > 0 && spans[idx[j]].Start < spans[idx[j-1]].Start; j-- {
			idx[j], idx[j-1] = idx[j-1], idx[j]
		}
	}
	var b strings.Builder
	last := 0
	for _, i := range idx {
		b.WriteString(sql[last:spans[i].Start])
		b.WriteString(with[i])
		last = spans[i].End
	}
	b.WriteString(sql[last:])
	return b.String()
}

// BindBraces replaces {{name}} placeholders with $first, $first+1, ... (the same name, the
// same number) and returns the names in order. Braces inside strings and comments are left
// alone.
func BindBraces(sql string, first int) (string, []string, error) {
	scan, err := pg_query.Scan(sql)
	if err != nil {
		return "", nil, &SyntaxError{Message: err.Error(), Line: 1, Column: 1}
	}
	toks := scan.Tokens
	var spans []span
	for i := 0; i+4 < len(toks); i++ {
		if toks[i].Token == '{' && toks[i+1].Token == '{' && toks[i+3].Token == '}' && toks[i+4].Token == '}' &&
			(toks[i+2].Token == pg_query.Token_IDENT || toks[i+2].KeywordKind != pg_query.KeywordKind_NO_KEYWORD) {
			spans = append(spans, span{int(toks[i].Start), int(toks[i+4].End), strings.ToLower(sql[toks[i+2].Start:toks[i+2].End])})
			i += 4
		}
	}
	return bind(sql, spans, first)
}

func syntaxError(sql string, err error) error {
	var pe *parser.Error
	if errors.As(err, &pe) {
		line, col := Position(sql, pe.Cursorpos)
		return &SyntaxError{Message: pe.Message, Line: line, Column: col}
	}
	return &SyntaxError{Message: err.Error(), Line: 1, Column: 1}
}
