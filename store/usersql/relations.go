package usersql

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	pg_query "github.com/pganalyze/pg_query_go/v6"
	"github.com/pganalyze/pg_query_go/v6/parser"
)

// Relation is a table reference of a query and where it is written.
type Relation struct {
	Schema, Name string // as PostgreSQL folds them (quoted names keep their case)
	Start, End   int    // byte span of the written, possibly qualified, name
	Aliased      bool   // the query gives it an alias
}

// Text is the relation as written in sql.
func (r Relation) Text(sql string) string { return sql[r.Start:r.End] }

// Relations lists the table references of sql (one statement), leaving out references to
// the statement's own WITH queries.
func Relations(sql string) ([]Relation, error) {
	tree, err := pg_query.ParseToJSON(sql)
	if err != nil {
		return nil, syntaxError(sql, err)
	}
	var v any
	if err := json.Unmarshal([]byte(tree), &v); err != nil {
		return nil, err
	}
	ctes := map[string]bool{}
	var found []Relation
	var visit func(any)
	visit = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			for k, c := range x {
				switch k {
				case "CommonTableExpr":
					if m, ok := c.(map[string]any); ok {
						if n, ok := m["ctename"].(string); ok {
							ctes[n] = true
						}
					}
				case "RangeVar":
					if m, ok := c.(map[string]any); ok {
						r := Relation{}
						r.Schema, _ = m["schemaname"].(string)
						r.Name, _ = m["relname"].(string)
						loc, _ := m["location"].(float64)
						r.Start = int(loc)
						_, r.Aliased = m["alias"]
						found = append(found, r)
					}
				}
				visit(c)
			}
		case []any:
			for _, c := range x {
				visit(c)
			}
		}
	}
	visit(v)
	scan, err := pg_query.Scan(sql)
	if err != nil {
		return nil, syntaxError(sql, err)
	}
	var out []Relation
	for _, r := range found {
		if r.Schema == "" && ctes[r.Name] {
			continue
		}
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
