// The filters of a list, a bulk selection or an export: filter[field][op]=value, the
// operators, and the WHERE clause they make.

package records

import (
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"dataplatform/store/datasets"
	"dataplatform/store/ingest"

	"github.com/lib/pq"
)

// Filter is one filter[field][op]=value.
type Filter struct {
	Field string // a column, or column.path.into.json
	Op    string
	Value string
}

var filterKey = regexp.MustCompile(`^filter\[([^\[\]]+)\](?:\[([a-z]+)\])?$`)

// ParseFilters reads the filter parameters of a query string.
func (t *Table) ParseFilters(q url.Values) ([]Filter, error) {
	var out []Filter
	keys := make([]string, 0, len(q))
	for k := range q {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if !strings.HasPrefix(k, "filter") {
			continue
		}
		m := filterKey.FindStringSubmatch(k)
		if m == nil {
			return nil, &FieldError{"query." + k, "invalid_filter", "filters are filter[field]=value or filter[field][op]=value"}
		}
		op := m[2]
		if op == "" {
			op = "eq"
		}
		if !slices.Contains(Operators, op) {
			return nil, &FieldError{"query." + k, "invalid_operator", "unknown operator " + op + "; one of " + strings.Join(Operators, ", ")}
		}
		col, _, _ := strings.Cut(m[1], ".")
		c, ok := t.cols[col]
		if !ok {
			return nil, &FieldError{"query." + k, "unknown_field", "no field " + strconv.Quote(col)}
		}
		if strings.Contains(m[1], ".") && c.Type != ingest.JSONB {
			return nil, &FieldError{"query." + k, "invalid_filter", col + " is not a JSON field: it has no paths"}
		}
		for _, v := range q[k] {
			out = append(out, Filter{Field: m[1], Op: op, Value: v})
		}
	}
	return out, nil
}

// Operator is a filter operator and, when it takes more than one plain value, what it takes.
type Operator struct{ Name, Takes string }

// FilterOperators are the filter operators, in the order descriptions list them: the one
// list the filter parser, the descriptions and the MCP tools read.
var FilterOperators = []Operator{{"eq", ""}, {"ne", ""}, {"gt", ""}, {"gte", ""}, {"lt", ""}, {"lte", ""},
	{"in", "comma-separated values"}, {"nin", "comma-separated values"}, {"like", ""}, {"ilike", ""}, {"contains", ""},
	{"startswith", ""}, {"endswith", ""}, {"is", "null, notnull, true or false"}, {"between", "`a,b`"}}

// Operators are the filter operators' names.
var Operators = func() []string {
	names := make([]string, len(FilterOperators))
	for i, o := range FilterOperators {
		names[i] = o.Name
	}
	return names
}()

// OperatorList is the operators as descriptions list them: "eq, ne, ..., in (comma-separated
// values), ...".
func OperatorList() string {
	parts := make([]string, len(FilterOperators))
	for i, o := range FilterOperators {
		parts[i] = o.Name
		if o.Takes != "" {
			parts[i] += " (" + o.Takes + ")"
		}
	}
	return strings.Join(parts, ", ")
}

// The record list's page sizes: the default and the most a page holds, and the default rows
// of an aggregate; the handlers and the descriptions read them here.
const (
	DefaultListLimit      = 20
	MaxListLimit          = 1000
	DefaultAggregateLimit = 100
)

// builder accumulates a WHERE clause and its parameters.
type builder struct {
	conds []string
	args  []any
}

func (b *builder) arg(v any) string {
	b.args = append(b.args, v)
	return "$" + strconv.Itoa(len(b.args))
}

// plainText refuses what no PostgreSQL text parameter carries: a NUL character or bytes that
// are not UTF-8 (PostgreSQL's error would be a 500; FuzzListQuery found search=%FF).
func plainText(field, v string) error {
	if strings.IndexByte(v, 0) >= 0 || !utf8.ValidString(v) {
		return &FieldError{field, "invalid_value", "the value has a NUL character or is not UTF-8"}
	}
	return nil
}

func likeEscape(s string) string {
	return strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(s)
}

// cond is the SQL condition of one filter.
func (t *Table) cond(b *builder, f Filter) (string, error) {
	name, path, _ := strings.Cut(f.Field, ".")
	c := t.cols[name]
	expr := pq.QuoteIdentifier(name)
	typ := datasets.SQLType(c)
	field := "query.filter[" + f.Field + "][" + f.Op + "]"
	if err := plainText(field, f.Field); err != nil {
		return "", err
	}
	if err := plainText(field, f.Value); err != nil {
		return "", err
	}
	if path != "" { // a path into a JSON field compares as text
		parts := strings.Split(path, ".")
		expr = "(" + expr + " #>> " + b.arg(pq.Array(parts)) + "::text[])"
		typ, c = "text", ingest.Column{Type: ingest.Text}
	}
	check := func(v string) error {
		if _, _, err := c.Text(v); err != nil { // a JSON field's values are JSON
			return &FieldError{field, "invalid_value", fmt.Sprintf("%q is not a valid %s", v, typ)}
		}
		return nil
	}
	val := func(v string) (string, error) {
		if err := check(v); err != nil {
			return "", err
		}
		return b.arg(v) + "::" + typ, nil
	}
	text := c.Type == ingest.Text
	if c.Type.IsArray() && (f.Op == "in" || f.Op == "nin" || f.Op == "between") {
		// An array compared with = ANY or BETWEEN: PostgreSQL's error, a 500 (FuzzListQuery).
		return "", &FieldError{field, "invalid_operator", f.Op + " does not apply to " + typ + " fields; use contains"}
	}
	switch f.Op {
	case "eq", "ne", "gt", "gte", "lt", "lte":
		if c.Type.IsArray() || c.Type == ingest.JSONB {
			return "", &FieldError{field, "invalid_operator", f.Op + " does not apply to " + typ + " fields; use contains"}
		}
		v, err := val(f.Value)
		if err != nil {
			return "", err
		}
		return expr + " " + map[string]string{"eq": "=", "ne": "IS DISTINCT FROM", "gt": ">", "gte": ">=", "lt": "<", "lte": "<="}[f.Op] + " " + v, nil
	case "in", "nin":
		vals := strings.Split(f.Value, ",")
		for _, v := range vals {
			if err := check(v); err != nil {
				return "", err
			}
		}
		s := expr + " = ANY(" + b.arg(pq.Array(vals)) + "::" + typ + "[])"
		if f.Op == "nin" {
			s = "NOT (" + s + ") OR " + expr + " IS NULL"
		}
		return "(" + s + ")", nil
	case "like", "ilike", "startswith", "endswith":
		return likeCond(b, f, field, expr, text)
	case "contains":
		return containsCond(b, f, field, expr, c, text)
	case "is":
		return isCond(f, field, expr, c)
	case "between":
		lo, hi, ok := strings.Cut(f.Value, ",")
		if !ok {
			return "", &FieldError{field, "invalid_value", "between takes two values: low,high"}
		}
		l, err := val(lo)
		if err != nil {
			return "", err
		}
		h, err := val(hi)
		if err != nil {
			return "", err
		}
		return expr + " BETWEEN " + l + " AND " + h, nil
	}
	return "", &FieldError{field, "invalid_operator", "unknown operator"}
}

// likeCond is the condition of a like, ilike, startswith or endswith filter on expr.
func likeCond(b *builder, f Filter, field, expr string, text bool) (string, error) {
	if !text {
		return "", &FieldError{field, "invalid_operator", f.Op + " applies to text fields"}
	}
	switch f.Op {
	case "like":
		return expr + " LIKE " + b.arg(f.Value), nil
	case "ilike":
		return expr + " ILIKE " + b.arg(f.Value), nil
	case "startswith":
		return expr + " LIKE " + b.arg(likeEscape(f.Value)+"%"), nil
	}
	return expr + " LIKE " + b.arg("%"+likeEscape(f.Value)), nil
}

// containsCond is the condition of a contains filter on expr, of column c: a substring of
// text, an element of an array, JSON a JSON field contains.
func containsCond(b *builder, f Filter, field, expr string, c ingest.Column, text bool) (string, error) {
	switch {
	case text:
		return expr + " ILIKE " + b.arg("%"+likeEscape(f.Value)+"%"), nil
	case c.Type.IsArray():
		if _, _, err := (ingest.Column{Type: c.Type.Elem()}).Text(f.Value); err != nil {
			return "", &FieldError{field, "invalid_value", fmt.Sprintf("%q is not a valid %s", f.Value, c.Type.Elem())}
		}
		return expr + " @> ARRAY[" + b.arg(f.Value) + "::" + string(c.Type.Elem()) + "]", nil
	case c.Type == ingest.JSONB:
		if _, _, err := (ingest.Column{Type: ingest.JSONB}).Text(f.Value); err != nil { // JSON jsonb takes (no \u0000)
			return "", &FieldError{field, "invalid_value", "contains on a JSON field takes JSON (without \\u0000)"}
		}
		return expr + " @> " + b.arg(f.Value) + "::jsonb", nil
	}
	return "", &FieldError{field, "invalid_operator", "contains applies to text, array and JSON fields"}
}

// isCond is the condition of an is filter on expr: null, notnull, true or false.
func isCond(f Filter, field, expr string, c ingest.Column) (string, error) {
	switch strings.ToLower(f.Value) {
	case "null":
		return expr + " IS NULL", nil
	case "notnull":
		return expr + " IS NOT NULL", nil
	case "true", "false":
		if c.Type != ingest.Boolean {
			return "", &FieldError{field, "invalid_value", "is true/false applies to boolean fields"}
		}
		return expr + " IS " + strings.ToUpper(f.Value), nil
	}
	return "", &FieldError{field, "invalid_value", "is takes null, notnull, true or false"}
}

// where builds the conditions of a list: live rows, the filters, the search.
func (t *Table) where(b *builder, filters []Filter, search string) error {
	b.conds = append(b.conds, t.Live())
	for _, f := range filters {
		c, err := t.cond(b, f)
		if err != nil {
			return err
		}
		b.conds = append(b.conds, c)
	}
	if search != "" {
		if err := plainText("query.search", search); err != nil {
			return err
		}
		doc := t.SearchDocument()
		if doc == "" {
			return &FieldError{"query.search", "not_searchable", "the dataset has no text fields to search"}
		}
		b.conds = append(b.conds, doc+" @@ websearch_to_tsquery('simple', "+b.arg(search)+")")
	}
	return nil
}

// SearchDocument is the text-search document of a row (datasets.SearchDocument).
func (t *Table) SearchDocument() string { return datasets.SearchDocument(t.Columns) }
