// Package usersql checks user SQL with PostgreSQL's own parser (pg_query_go) before it runs:
// exactly one plain SELECT, nothing that writes, locks, escapes the transaction or reads the
// catalogs, and only the node kinds, functions, operators and types of its allow-lists
// (allow.go). It is defence in depth: the database is the wall (a read-only transaction under
// a role that can only read its organization's tables, with EXECUTE on the dangerous functions
// and SELECT on the catalogs revoked from PUBLIC). It also runs the checked SQL behind that wall (sandbox.go): RunQuery
// and OpenCursor, in a read-only transaction under the organization's query role.
package usersql

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"

	pg_query "github.com/pganalyze/pg_query_go/v6"
)

// SyntaxError is SQL PostgreSQL cannot parse.
type SyntaxError struct {
	Message      string
	Line, Column int // 1-based, of the error's position
}

func (e *SyntaxError) Error() string {
	return fmt.Sprintf("line %d, column %d: %s", e.Line, e.Column, e.Message)
}

// ForbiddenError is SQL that parses but is not a plain SELECT.
type ForbiddenError struct{ Reason string }

func (e *ForbiddenError) Error() string { return e.Reason }

// Position turns a 1-based character offset of sql into a line and column.
func Position(sql string, offset int) (line, col int) {
	line, col = 1, 1
	for i, r := range []rune(sql) {
		if i >= offset-1 {
			break
		}
		if r == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
	}
	return line, col
}

// Check accepts sql (which may hold $n parameters) when it is one SELECT statement. A type
// that is not built in can only be a relation's row type (rowType), which shows the
// relation's columns: it is refused unless rowTypes holds it (schema and name as written,
// the schema "" when bare), as the caller's mapping of the relations (Relations) allows it.
func Check(sql string, rowTypes ...Relation) error {
	// PostgreSQL refuses a query that is not UTF-8 as it arrives, while the parse tree's JSON
	// would show the bad bytes as U+FFFD: the guard would judge another text than the one that
	// runs (FuzzCheck found "SELECT \x98" accepted).
	if !utf8.ValidString(sql) {
		return &SyntaxError{Message: "the query is not valid UTF-8", Line: 1, Column: 1}
	}
	tree, err := pg_query.ParseToJSON(sql)
	if err != nil {
		return syntaxError(sql, err)
	}
	var doc struct {
		Stmts []struct {
			Stmt map[string]json.RawMessage `json:"stmt"`
		} `json:"stmts"`
	}
	if err := json.Unmarshal([]byte(tree), &doc); err != nil {
		return err
	}
	if len(doc.Stmts) != 1 {
		return &ForbiddenError{fmt.Sprintf("send exactly one statement (got %d)", len(doc.Stmts))}
	}
	for kind := range doc.Stmts[0].Stmt {
		if kind != "SelectStmt" {
			return &ForbiddenError{"only SELECT is allowed; this is " + statementName(kind)}
		}
	}
	var v any
	if err := json.Unmarshal([]byte(tree), &v); err != nil {
		return err
	}
	return walk(v, rowTypes)
}

func statementName(kind string) string {
	n := strings.TrimSuffix(kind, "Stmt")
	return strings.ToUpper(regexp.MustCompile(`([a-z])([A-Z])`).ReplaceAllString(n, "$1 $2"))
}

// walk looks at every node of the parse tree: each node kind must be one a plain SELECT
// may hold, and each function, operator, type, collation and sampling method it names must
// be on the allow-lists (allow.go), or, for a row type, in rowTypes.
func walk(v any, rowTypes []Relation) error {
	switch x := v.(type) {
	case map[string]any:
		for k, c := range x {
			if err := checkNode(k, c, rowTypes); err != nil {
				return err
			}
			if err := walk(c, rowTypes); err != nil {
				return err
			}
		}
	case []any:
		for _, c := range x {
			if err := walk(c, rowTypes); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkNode checks one key of the tree: a node kind (capitalised) with its fields, or a
// field.
func checkNode(k string, c any, rowTypes []Relation) error {
	m, _ := c.(map[string]any)
	switch k {
	case "intoClause":
		return &ForbiddenError{"SELECT INTO creates a table: not allowed"}
	case "lockingClause":
		return &ForbiddenError{"locking clauses (FOR UPDATE, FOR SHARE) are not allowed"}
	case "InsertStmt", "UpdateStmt", "DeleteStmt", "MergeStmt":
		return &ForbiddenError{"data-modifying statements are not allowed, not even in a WITH clause"}
	case "FuncCall":
		parts := names(m["funcname"], false)
		name, ok := catalogName(parts)
		if !ok || !functions[name] {
			return &ForbiddenError{"the function " + name + " is not allowed: user SQL may call the ordinary analytic functions " +
				"(aggregates, window, math, text, date and time, JSON, arrays, ranges, full-text search)"}
		}
		if most, ok := sized[name]; ok {
			if len(parts) > 1 {
				return &ForbiddenError{"call " + name + " without a schema: pg_catalog." + name + " would skip the limit on the size it makes"}
			}
			if args, _ := m["args"].([]any); len(args) > most {
				return &ForbiddenError{fmt.Sprintf("%s takes at most %d arguments here", name, most)}
			}
		}
	case "A_Expr":
		if err := checkOperator(m["name"]); err != nil {
			return err
		}
	case "SubLink":
		if err := checkOperator(m["operName"]); err != nil {
			return err
		}
	case "A_Indirection":
		// (expr).name is field selection, or, when expr has no such field, PostgreSQL's
		// attribute notation for the call name(expr): a way around the function list.
		for _, f := range names(m["indirection"], false) {
			if !functions[f] && !fieldNames.MatchString(f) {
				return &ForbiddenError{"(...)." + f + " is not allowed: PostgreSQL may read it as the call " + f +
					"(...); field selection is allowed for key, value and f1, f2, ..."}
			}
		}
	case "SortBy":
		if err := checkOperator(m["useOp"]); err != nil {
			return err
		}
	case "TypeName", "typeName": // a node, or a typed field (TypeCast, ColumnDef, JSON's RETURNING)
		parts := names(m["names"], false)
		if rowType(parts) {
			schema, rel := relationName(parts)
			if err := checkRelation(schema, rel); err != nil {
				return err
			}
			if !slices.ContainsFunc(rowTypes, func(r Relation) bool { return r.Schema == schema && r.Name == rel }) {
				return &ForbiddenError{"the type " + strings.Join(parts, ".") + " is not allowed: user SQL may name the built-in types, " +
					"and the row types of the datasets it may read"}
			}
			return nil
		}
		if name, _ := catalogName(parts); !types[name] {
			return &ForbiddenError{"the type " + strings.Join(parts, ".") + " is not allowed: user SQL may name the built-in types; " +
				"casts to catalog types (regclass, oid, ...) would read the catalogs"}
		}
	case "CollateClause", "collClause":
		if _, ok := catalogName(names(m["collname"], false)); !ok {
			return &ForbiddenError{"only the built-in collations are allowed"}
		}
	case "RangeTableSample":
		name, ok := catalogName(names(m["method"], false))
		if !ok || !sampleMethods[name] {
			return &ForbiddenError{"the sampling method " + name + " is not allowed: use SYSTEM or BERNOULLI"}
		}
	case "SQLValueFunction":
		if op, _ := m["op"].(string); !sqlValueFunctions[op] {
			return &ForbiddenError{"CURRENT_USER, SESSION_USER, CURRENT_CATALOG and CURRENT_SCHEMA are not allowed"}
		}
	case "RangeVar":
		schema, _ := m["schemaname"].(string)
		rel, _ := m["relname"].(string)
		return checkRelation(schema, rel)
	}
	if k == "" || k[0] < 'A' || k[0] > 'Z' || nodeKinds[k] {
		return nil
	}
	if why, ok := refusedKinds[k]; ok {
		return &ForbiddenError{why}
	}
	return &ForbiddenError{"this construct (" + k + ") is not allowed in user SQL"}
}

// checkOperator allows an operator (an A_Expr, SubLink or ORDER BY USING name) that is on the
// list, bare or as OPERATOR(pg_catalog.op).
func checkOperator(n any) error {
	if n == nil {
		return nil
	}
	parts := names(n, false)
	op, ok := catalogName(parts)
	if !ok || !operators[op] {
		return &ForbiddenError{"the operator " + strings.Join(parts, ".") + " is not allowed"}
	}
	return nil
}

// names reads a list of String nodes (a qualified name), folded to lower case when fold is
// set: the parser already folds unquoted names, so an exact comparison refuses a quoted
// "COUNT" that could name something else, while a refusal list compares folded.
func names(parts any, fold bool) []string {
	var out []string
	list, _ := parts.([]any)
	for _, p := range list {
		if m, ok := p.(map[string]any); ok {
			if s, ok := m["String"].(map[string]any); ok {
				sv, _ := s["sval"].(string)
				if fold {
					sv = strings.ToLower(sv)
				}
				out = append(out, sv)
			}
		}
	}
	return out
}

// checkRelation refuses the system catalogs (as tables and as row types): they would show
// other organizations' schemas and tables.
func checkRelation(schema, rel string) error {
	schema, rel = strings.ToLower(schema), strings.ToLower(rel)
	if schema == "pg_catalog" || schema == "information_schema" || schema == "platform" || strings.HasPrefix(schema, "pg_") ||
		(schema == "" && strings.HasPrefix(rel, "pg_")) {
		return &ForbiddenError{"system catalogs and platform tables are not allowed: " + strings.TrimPrefix(schema+"."+rel, ".")}
	}
	return nil
}

// BindNames replaces :name parameters with $1, $2, ... (the same name, the same number) and
// returns the names in order. PostgreSQL's scanner finds them, so a colon inside a string, a
// comment or a :: cast is left alone.
func BindNames(sql string, first int) (string, []string, error) {
	scan, err := pg_query.Scan(sql)
	if err != nil {
		return "", nil, &SyntaxError{Message: err.Error(), Line: 1, Column: 1}
	}
	toks := scan.Tokens
	var spans []span
	for i := 0; i+1 < len(toks); i++ {
		if toks[i].Token == pg_query.Token_ASCII_58 && toks[i+1].Start == toks[i].End &&
			(toks[i+1].Token == pg_query.Token_IDENT || toks[i+1].KeywordKind != pg_query.KeywordKind_NO_KEYWORD) {
			spans = append(spans, span{int(toks[i].Start), int(toks[i+1].End), strings.ToLower(sql[toks[i+1].Start:toks[i+1].End])})
		}
	}
	return bind(sql, spans, first)
}

// span is a placeholder's place in the text and its name.
type span struct {
	start, end int
	name       string
}

// bind replaces each span with $n, numbering names from first in order of appearance.
func bind(sql string, spans []span, first int) (string, []string, error) {
	var order []string
	num := map[string]int{}
	for _, s := range spans {
		if _, ok := num[s.name]; !ok {
			num[s.name] = first + len(order)
			order = append(order, s.name)
		}
	}
	// Byte offsets: pg_query reports them in bytes of the UTF-8 input. A placeholder right
	// after a word or a $ is set apart by a space: "x:a" must not become the identifier
	// "x$1", nor "$:a" the dollar quote "$$1" (FuzzBindNames found that one).
	var b strings.Builder
	last := 0
	for _, s := range spans {
		b.WriteString(sql[last:s.start])
		if s.start > 0 && identByte(sql[s.start-1]) {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "$%d", num[s.name])
		last = s.end
	}
	b.WriteString(sql[last:])
	return b.String(), order, nil
}

// identByte is a byte that may continue a PostgreSQL identifier, number or $n.
func identByte(c byte) bool {
	return c == '_' || c == '$' || c >= 0x80 || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}
