// Package records reads and writes the rows of a dataset's table for the record API. Field
// names come only from the table's known columns and values are always bound parameters;
// rows come back as JSON built by PostgreSQL (to_json), so types need no conversion here.
package records

import (
	"context"
	"database/sql"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"dataplatform/store/datasets"
	"dataplatform/store/ingest"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
)

// System fields every record has, besides the dataset's columns.
var systemFields = []string{"id", "created_at", "updated_at", "version"}

// FieldError is a problem with one parameter or field of a request.
type FieldError struct{ Field, Code, Message string }

func (e *FieldError) Error() string { return e.Field + ": " + e.Message }

// ErrNotFound is a record that does not exist (or was soft-deleted).
var ErrNotFound = errors.New("record not found")

// Table is a dataset table as the record API sees it. An uploaded dataset's table has the
// system fields (id, created_at, updated_at, version; soft deletion); a connected database's
// table has only its own columns, and its records are named by its primary key.
type Table struct {
	datasets.TableDef
	cols map[string]ingest.Column
	key  string // the field that names a record (its path id); "" when there is none
}

// NewTable indexes t's columns.
func NewTable(t datasets.TableDef) *Table {
	x := &Table{TableDef: t, cols: map[string]ingest.Column{}}
	for _, c := range t.Columns {
		x.cols[c.Name] = c
	}
	if !t.System() {
		// A single-column primary key of a type a path can carry names the records; a table
		// without one is read as a whole (list, aggregate, export, query), not record by record.
		if len(t.PrimaryKey) == 1 {
			if c, ok := x.cols[t.PrimaryKey[0]]; ok && keyable(c.Type) {
				x.key = c.Name
			}
		}
		return x
	}
	// An uploaded table is keyed by the file's key column, or by the generated id.
	x.key = datasets.KeyOf(t.Columns)
	for _, f := range systemFields {
		if f == "id" && !t.GeneratedID() {
			continue
		}
		typ := ingest.BigInt
		switch f {
		case "created_at", "updated_at":
			typ = ingest.Timestamptz
		case "version":
			typ = ingest.Integer
		}
		x.cols[f] = ingest.Column{Name: f, Type: typ}
	}
	return x
}

func keyable(t ingest.Type) bool {
	switch t {
	case ingest.Integer, ingest.BigInt, ingest.Text, ingest.UUID, ingest.Date, ingest.Numeric:
		return true
	}
	return false
}

// Key is the field that names a record in paths (an uploaded dataset's key column or
// generated id, a connected table's primary key), or "" when the table has none.
func (t *Table) Key() string { return t.key }

// KeyValue is a record's key, given as text, as its JSON value: a number for integer keys.
func (t *Table) KeyValue(text string) any {
	switch t.cols[t.key].Type {
	case ingest.Integer, ingest.BigInt:
		return json.Number(text)
	}
	return text
}

// Writable reports whether the record API may write the table: uploaded tables, and
// connected tables reached through a wrapper that writes and having a key.
func (t *Table) Writable() bool { return (t.System() || t.TableDef.Writable) && t.key != "" }

// ParseKey checks a record's path id against the key's type and answers it as text.
func (t *Table) ParseKey(s string) (string, error) {
	c := t.cols[t.key]
	text, null, err := c.Text(s)
	if t.GeneratedID() {
		n, perr := strconv.ParseInt(s, 10, 64)
		if perr != nil || n < 1 {
			err = errors.New("not a positive integer")
		}
	}
	if err != nil || null {
		return "", &FieldError{"path.id", "type", "a record id is a " + datasets.SQLType(c) + " (" + t.key + ")"}
	}
	return text, nil
}

// keyIs is the condition "the record's key is p" for a bound text parameter p.
func (t *Table) keyIs(p string) string {
	return pq.QuoteIdentifier(t.key) + " = " + p + "::" + datasets.SQLType(t.cols[t.key])
}

// Fields are every field a record has, in order.
func (t *Table) Fields() []string {
	var out []string
	if t.GeneratedID() {
		out = append(out, "id")
	}
	for _, c := range t.Columns {
		out = append(out, c.Name)
	}
	if t.System() {
		out = append(out, "created_at", "updated_at", "version")
	}
	return out
}

// Select picks fields: all of them, or those of fields (comma-separated, in that order),
// minus exclude. The key names the record and is always there (first when not asked for, as
// JSON:API keeps id in sparse fieldsets); nothing else is added back, and excluding the key is
// refused.
func (t *Table) Select(fields, exclude string) ([]string, error) {
	out := t.Fields()
	if strings.TrimSpace(fields) != "" {
		out = nil
		for _, f := range strings.Split(fields, ",") {
			f = strings.TrimSpace(f)
			if _, ok := t.cols[f]; !ok {
				return nil, &FieldError{"query.fields", "unknown_field", "no field " + strconv.Quote(f)}
			}
			if !slices.Contains(out, f) {
				out = append(out, f)
			}
		}
	}
	if strings.TrimSpace(exclude) != "" {
		for _, f := range strings.Split(exclude, ",") {
			f = strings.TrimSpace(f)
			if _, ok := t.cols[f]; !ok {
				return nil, &FieldError{"query.exclude", "unknown_field", "no field " + strconv.Quote(f)}
			}
			out = slices.DeleteFunc(out, func(s string) bool { return s == f })
		}
		if len(out) == 0 {
			return nil, &FieldError{"query.exclude", "nothing_selected", "exclude leaves no field to return"}
		}
	}
	if t.key != "" && !slices.Contains(out, t.key) {
		for _, f := range strings.Split(exclude, ",") {
			if strings.TrimSpace(f) == t.key {
				return nil, &FieldError{"query.exclude", "key_required", t.key + " names the record and is in every answer: it cannot be excluded"}
			}
		}
		out = append([]string{t.key}, out...)
	}
	return out, nil
}

// columnList is the given fields, quoted, as a select list.
func columnList(fields []string) string {
	q := make([]string, len(fields))
	for i, f := range fields {
		q[i] = pq.QuoteIdentifier(f)
	}
	return strings.Join(q, ", ")
}

// rowJSON is the select list whose to_json is the record of the given fields, in that order,
// each value as the record API writes it (datasets.JSONValue: timestamps in RFC 3339 UTC).
// from qualifies the columns ("" for none). Every path that answers a record selects it so.
func (t *Table) rowJSON(fields []string, from string) string {
	q := make([]string, len(fields))
	for i, f := range fields {
		ref := pq.QuoteIdentifier(f)
		if from != "" {
			ref = from + "." + ref
		}
		q[i] = ref
		if v := datasets.JSONValue(t.cols[f], ref); v != ref {
			q[i] = v + " AS " + pq.QuoteIdentifier(f)
		}
	}
	return strings.Join(q, ", ")
}

// ListQuery is a list request.
type ListQuery struct {
	Page, Limit int
	Sort        string
	Fields      []string
	Search      string
	Filters     []Filter
	Cursor      string // wins over Page
	Count       string // exact, planned or estimated (default)
	Links       string // an SQL expression for each record's _links ("": none)
}

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

// Operators are the filter operators.
var Operators = []string{"eq", "ne", "gt", "gte", "lt", "lte", "in", "nin", "like", "ilike", "contains", "startswith", "endswith", "is", "between"}

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
	case "contains":
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
	case "is":
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

type sortKey struct {
	field string
	desc  bool
}

// DefaultSort is the order of a list that names none: newest first for uploaded datasets,
// by key (or the first column that sorts) for connected tables.
func (t *Table) DefaultSort() string {
	if t.System() {
		return "-created_at"
	}
	if t.key != "" {
		return t.key
	}
	for _, c := range t.Columns {
		if c.Type != ingest.JSONB && !c.Type.IsArray() {
			return c.Name
		}
	}
	return ""
}

// sortKeys parses sort (fields, - for descending; default DefaultSort) and ends it with the
// key, which makes the order total (keyset pagination needs that).
func (t *Table) sortKeys(sort string) ([]sortKey, []string, error) {
	if strings.TrimSpace(sort) == "" {
		sort = t.DefaultSort()
	}
	if sort == "" {
		return nil, nil, nil
	}
	var keys []sortKey
	var names []string
	for _, s := range strings.Split(sort, ",") {
		s = strings.TrimSpace(s)
		desc := strings.HasPrefix(s, "-")
		f := strings.TrimPrefix(strings.TrimPrefix(s, "-"), "+")
		c, ok := t.cols[f]
		if !ok {
			return nil, nil, &FieldError{"query.sort", "unknown_field", "no field " + strconv.Quote(f)}
		}
		if c.Type == ingest.JSONB || c.Type.IsArray() {
			return nil, nil, &FieldError{"query.sort", "not_sortable", f + " cannot be sorted"}
		}
		if slices.ContainsFunc(keys, func(k sortKey) bool { return k.field == f }) {
			return nil, nil, &FieldError{"query.sort", "duplicate", f + " is sorted twice"}
		}
		keys = append(keys, sortKey{f, desc})
		names = append(names, s)
	}
	if t.key != "" && !slices.ContainsFunc(keys, func(k sortKey) bool { return k.field == t.key }) {
		keys = append(keys, sortKey{t.key, false})
	}
	return keys, names, nil
}

// orderSQL is the ORDER BY of keys; flip reverses it (to read the page before a cursor).
// Ascending keys put NULLs last, descending first, so flipping mirrors them exactly.
func orderSQL(keys []sortKey, flip bool) string {
	if len(keys) == 0 {
		return "true"
	}
	terms := make([]string, len(keys))
	for i, k := range keys {
		if k.desc != flip {
			terms[i] = pq.QuoteIdentifier(k.field) + " DESC NULLS FIRST"
		} else {
			terms[i] = pq.QuoteIdentifier(k.field) + " ASC NULLS LAST"
		}
	}
	return strings.Join(terms, ", ")
}

// Cursor marks a position in a sorted list: the sort key values of a boundary row.
type Cursor struct {
	Dataset string            `json:"d"`
	Sort    string            `json:"s"`
	Values  []json.RawMessage `json:"v"`
	Before  bool              `json:"b,omitempty"` // the page before the row, not after it
}

// Encode makes the opaque string clients send back.
func (c Cursor) Encode() string {
	b, _ := json.Marshal(c)
	return base64.RawURLEncoding.EncodeToString(b)
}

// DecodeCursor reads a cursor of this dataset and sort.
func DecodeCursor(s, dataset, sort string) (*Cursor, error) {
	bad := &FieldError{"query.cursor", "invalid_cursor", "the cursor is not one this list gave"}
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return nil, bad
	}
	var c Cursor
	if json.Unmarshal(b, &c) != nil {
		return nil, bad
	}
	if c.Dataset != dataset {
		return nil, &FieldError{"query.cursor", "invalid_cursor", "the cursor belongs to another dataset"}
	}
	if c.Sort != sort {
		return nil, &FieldError{"query.cursor", "invalid_cursor", "the cursor was made for another sort; send the same sort with it"}
	}
	return &c, nil
}

// after is the condition "comes after the row with these key values" in the order of keys
// (flipped: before it), NULL-aware, as a chain of (k1 > v1) OR (k1 = v1 AND (k2 > v2 OR ...)).
func (t *Table) after(b *builder, keys []sortKey, vals []json.RawMessage, flip bool) (string, error) {
	if len(vals) != len(keys) {
		return "", &FieldError{"query.cursor", "invalid_cursor", "the cursor is not one this list gave"}
	}
	cond := "false"
	for i := len(keys) - 1; i >= 0; i-- {
		k := keys[i]
		c := t.cols[k.field]
		q := pq.QuoteIdentifier(k.field)
		dec := json.NewDecoder(strings.NewReader(string(vals[i])))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err != nil {
			return "", &FieldError{"query.cursor", "invalid_cursor", "the cursor is not one this list gave"}
		}
		var gt, eq string
		if v == nil {
			eq = q + " IS NULL"
			if k.desc != flip { // NULLs first: anything non-null comes after
				gt = q + " IS NOT NULL"
			} else {
				gt = "false"
			}
		} else {
			text, _, err := c.Text(v)
			if err != nil {
				return "", &FieldError{"query.cursor", "invalid_cursor", "the cursor is not one this list gave"}
			}
			p := b.arg(text) + "::" + datasets.SQLType(c)
			eq = q + " = " + p
			if k.desc != flip {
				gt = q + " < " + p
			} else {
				gt = "(" + q + " > " + p + " OR " + q + " IS NULL)"
			}
		}
		cond = "(" + gt + " OR (" + eq + " AND " + cond + "))"
	}
	return cond, nil
}

// Page is a page of a list.
type Page struct {
	Rows       []json.RawMessage // in buf: good until Release
	Total      int64
	Estimated  bool // Total is the planner's estimate
	Sort       []string
	Next, Prev string // cursors; "" when there is no such page
	buf        *[]byte
}

// pageBufs are the buffers pages are read into: a page is read on every list request, and a
// reused buffer spares the garbage collector a few pages' worth of bytes each time.
var pageBufs = sync.Pool{New: func() any { b := make([]byte, 0, 16<<10); return &b }}

// Release hands the page's buffer back once its rows have been written (not needed for
// correctness: a page never released is garbage collected).
func (p *Page) Release() {
	if p.buf != nil && cap(*p.buf) <= 1<<20 {
		pageBufs.Put(p.buf)
	}
	p.buf, p.Rows = nil, nil
}

// CountThreshold is the table size (in PostgreSQL's statistics) up to which lists count
// exactly by default; larger tables get the planner's estimate (flagged total_estimated).
const CountThreshold = 100_000

// List returns a page of records as JSON objects: by page number, or after/before a cursor.
func (t *Table) List(ctx context.Context, q sqlx.QueryerContext, lq ListQuery) (*Page, error) {
	var b builder
	if err := t.where(&b, lq.Filters, lq.Search); err != nil {
		return nil, err
	}
	keys, names, err := t.sortKeys(lq.Sort)
	if err != nil {
		return nil, err
	}
	sortSpec := strings.Join(names, ",")
	pg := &Page{Sort: names, Rows: []json.RawMessage{}}
	if pg.Total, pg.Estimated, err = t.count(ctx, q, &b, lq.Count); err != nil {
		return nil, err
	}
	conds := slices.Clone(b.conds)
	flip := false
	var cur *Cursor
	if lq.Cursor != "" && t.key == "" {
		return nil, &FieldError{"query.cursor", "invalid_cursor", "this table has no primary key to page by; use page"}
	}
	if lq.Cursor != "" {
		if cur, err = DecodeCursor(lq.Cursor, t.Name, sortSpec); err != nil {
			return nil, err
		}
		flip = cur.Before
		c, err := t.after(&b, keys, cur.Values, flip)
		if err != nil {
			return nil, err
		}
		conds = append(conds, c)
	}
	keyVals := make([]string, len(keys))
	for i, k := range keys {
		keyVals[i] = "r." + pq.QuoteIdentifier(k.field)
	}
	// The page's rows (r) hold the fields and the sort keys as stored; the record (x) is the
	// fields alone, in the order asked, made as every other record is (rowJSON), with its
	// _links last. The sort keys ride along beside it for the cursors. (PostgreSQL folds x
	// into r's projection: it costs no join.)
	cols, record := []string{"NULL"}, []string{}
	if len(lq.Fields) > 0 {
		cols, record = []string{columnList(lq.Fields)}, []string{t.rowJSON(lq.Fields, "r")}
	}
	for _, k := range keys {
		if !slices.Contains(lq.Fields, k.field) {
			cols = append(cols, pq.QuoteIdentifier(k.field))
		}
	}
	if lq.Links != "" {
		cols = append(cols, lq.Links+" AS _links")
		record = append(record, "r._links")
	}
	limit := b.arg(lq.Limit + 1)
	offset := "0"
	if cur == nil {
		offset = b.arg((lq.Page - 1) * lq.Limit)
	}
	rows, err := q.QueryxContext(ctx, `SELECT to_json(x), json_build_array(`+strings.Join(keyVals, ", ")+`)
		FROM (SELECT `+strings.Join(cols, ", ")+` FROM `+t.Qualified()+` WHERE `+strings.Join(conds, " AND ")+` ORDER BY `+orderSQL(keys, flip)+
		` LIMIT `+limit+` OFFSET `+offset+`) r, LATERAL (SELECT `+strings.Join(record, ", ")+`) x`, b.args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	// The rows are copied into one buffer (not one allocation per row and key): a page is
	// read on every request.
	pg.buf = pageBufs.Get().(*[]byte)
	buf := (*pg.buf)[:0]
	defer func() { *pg.buf = buf }()
	ends := make([]int, 0, 2*(lq.Limit+1)) // of each record, then of its sort keys
	for rows.Next() {
		var j, k sql.RawBytes
		if err := rows.Scan(&j, &k); err != nil {
			return nil, err
		}
		buf = append(buf, j...)
		ends = append(ends, len(buf))
		buf = append(buf, k...)
		ends = append(ends, len(buf))
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	bounds := make([]json.RawMessage, 0, len(ends)/2)
	for i, from := 0, 0; i < len(ends); i, from = i+2, ends[i+1] {
		pg.Rows = append(pg.Rows, buf[from:ends[i]:ends[i]])
		bounds = append(bounds, buf[ends[i]:ends[i+1]:ends[i+1]])
	}
	more := len(pg.Rows) > lq.Limit
	if more {
		pg.Rows, bounds = pg.Rows[:lq.Limit], bounds[:lq.Limit]
	}
	if flip { // read backwards: put the page in order
		slices.Reverse(pg.Rows)
		slices.Reverse(bounds)
	}
	cursorAt := func(i int, before bool) string {
		var vals []json.RawMessage
		_ = json.Unmarshal(bounds[i], &vals)
		return Cursor{Dataset: t.Name, Sort: sortSpec, Values: vals, Before: before}.Encode()
	}
	if len(pg.Rows) > 0 && t.key != "" {
		// After the last row when there is more that way (or when we came from there);
		// before the first when a page precedes it.
		if (!flip && more) || (flip && cur != nil) {
			pg.Next = cursorAt(len(pg.Rows)-1, false)
		}
		if (flip && more) || (!flip && (cur != nil || lq.Page > 1)) {
			pg.Prev = cursorAt(0, true)
		}
	}
	return pg, nil
}

// count is the number of rows matching b's conditions: exact, planned (the planner's
// estimate), or estimated (exact up to CountThreshold, planned beyond).
func (t *Table) count(ctx context.Context, q sqlx.QueryerContext, b *builder, mode string) (int64, bool, error) {
	where := ` WHERE ` + strings.Join(b.conds, " AND ")
	var n int64
	if mode == "exact" {
		err := sqlx.GetContext(ctx, q, &n, `SELECT count(*) FROM `+t.Qualified()+where, b.args...)
		return n, false, err
	}
	// A planned count known from a moment ago answers at once: the planner's estimate of the
	// same question is asked again at most every few seconds.
	key := t.Qualified() + where + fmt.Sprint(b.args...)
	if n, ok := plannedCounts.get(key); ok {
		return n, true, nil
	}
	if mode != "planned" {
		// Estimated: exact on a table the statistics say is small, planned on a large one
		// (counting a large table costs as much as a scan of it, on every page).
		var rel float64
		if err := sqlx.GetContext(ctx, q, &rel, `SELECT reltuples FROM pg_class WHERE oid = $1::regclass`, t.Qualified()); err != nil {
			return 0, false, err
		}
		if rel <= CountThreshold {
			err := sqlx.GetContext(ctx, q, &n, `SELECT count(*) FROM `+t.Qualified()+where, b.args...)
			return n, false, err
		}
	}
	var plan []byte
	if err := sqlx.GetContext(ctx, q, &plan, `EXPLAIN (FORMAT JSON) SELECT 1 FROM `+t.Qualified()+where, b.args...); err != nil {
		return 0, false, err
	}
	var p []struct {
		Plan struct {
			Rows float64 `json:"Plan Rows"`
		} `json:"Plan"`
	}
	if err := json.Unmarshal(plan, &p); err != nil || len(p) == 0 {
		return 0, false, err
	}
	n = int64(p[0].Plan.Rows)
	plannedCounts.put(key, n)
	return n, true, nil
}

// countCache keeps planned counts for a few seconds (they are estimates anyway), bounded.
type countCache struct {
	mu sync.Mutex
	m  map[string]countEntry
}

type countEntry struct {
	n       int64
	expires time.Time
}

var plannedCounts = &countCache{m: map[string]countEntry{}}

// countTTL is how long a planned count is used before the planner is asked again.
const countTTL = 5 * time.Second

// get is the estimate kept for k. Once it expires, the first caller is told to ask the planner
// again while the others keep getting it (no crowd of EXPLAINs every few seconds).
func (c *countCache) get(k string) (int64, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[k]
	if !ok {
		return 0, false
	}
	if now := time.Now(); !now.Before(e.expires) {
		e.expires = now.Add(countTTL)
		c.m[k] = e
		return 0, false
	}
	return e.n, true
}

func (c *countCache) put(k string, n int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.m) >= 10000 {
		for x := range c.m {
			delete(c.m, x)
			if len(c.m) < 9000 {
				break
			}
		}
	}
	c.m[k] = countEntry{n, time.Now().Add(countTTL)}
}

// Get reads one live record.
func (t *Table) Get(ctx context.Context, q sqlx.QueryerContext, id string, fields []string, lock bool) (json.RawMessage, error) {
	qs := `SELECT to_json(r) FROM (SELECT ` + t.rowJSON(fields, "") + ` FROM ` + t.Qualified() + ` WHERE ` + t.keyIs("$1") + ` AND ` + t.Live()
	if lock {
		qs += ` FOR UPDATE`
	}
	var j []byte
	err := sqlx.GetContext(ctx, q, &j, qs+`) r`, id)
	if errors.Is(err, errNoRows) {
		return nil, ErrNotFound
	}
	return j, err
}

// values turns a body's fields into column = parameter pairs, converting each value with
// the column's type (the description has already checked them).
func (t *Table) values(b *builder, body map[string]any) ([]string, []string, error) {
	var cols, params []string
	for _, c := range t.Columns {
		v, ok := body[c.Name]
		if !ok || c.Computed {
			continue
		}
		if str, isString := v.(string); isString && c.Type == ingest.JSONB {
			// A body's string is a JSON string, which jsonb holds; Column.Text would read it
			// as JSON text, as a CSV cell is (FuzzJSONPatch: "Oslo" was refused, and "[1]"
			// would have been stored as an array).
			q, _ := json.Marshal(str)
			v = json.RawMessage(q)
		}
		s, null, err := c.Text(v)
		if err != nil {
			var re *ingest.RowError
			if errors.As(err, &re) {
				return nil, nil, &FieldError{"body." + c.Name, "type", re.Reason}
			}
			return nil, nil, err
		}
		cols = append(cols, pq.QuoteIdentifier(c.Name))
		if null {
			params = append(params, "NULL")
		} else {
			params = append(params, b.arg(s)+"::"+datasets.SQLType(c))
		}
	}
	return cols, params, nil
}

// Insert adds a record and returns it.
func (t *Table) Insert(ctx context.Context, q sqlx.QueryerContext, body map[string]any, fields []string) (json.RawMessage, error) {
	var b builder
	cols, params, err := t.values(&b, body)
	if err != nil {
		return nil, err
	}
	ins := `INSERT INTO ` + t.Qualified() + ` DEFAULT VALUES`
	if len(cols) > 0 {
		ins = `INSERT INTO ` + t.Qualified() + ` (` + strings.Join(cols, ", ") + `) VALUES (` + strings.Join(params, ", ") + `)`
	}
	var j []byte
	err = sqlx.GetContext(ctx, q, &j, `WITH r AS (`+ins+` RETURNING *) SELECT to_json(x) FROM (SELECT `+t.rowJSON(fields, "r")+` FROM r) x`, b.args...)
	return j, err
}

// Update writes body's fields (replace: every column, absent ones reset to their default)
// to record id at version, bumping version and updated_at; false when version is stale.
// A connected table has no version: version is not looked at (the caller compared ETags).
func (t *Table) Update(ctx context.Context, q sqlx.QueryerContext, id string, version int, body map[string]any, replace bool, fields []string) (json.RawMessage, bool, error) {
	body, err := t.keepKey(body, id)
	if err != nil {
		return nil, false, err
	}
	var b builder
	cols, params, err := t.values(&b, body)
	if err != nil {
		return nil, false, err
	}
	var sets []string
	if t.System() {
		sets = []string{"version = version + 1", "updated_at = now()"}
	}
	for i := range cols {
		sets = append(sets, cols[i]+" = "+params[i])
	}
	if replace {
		for _, c := range t.Columns {
			if _, ok := body[c.Name]; !ok && !c.Computed && !c.Key {
				sets = append(sets, pq.QuoteIdentifier(c.Name)+" = DEFAULT")
			}
		}
	}
	if len(sets) == 0 { // nothing to write
		j, err := t.Get(ctx, q, id, fields, false)
		return j, err == nil, err
	}
	where := t.keyIs(b.arg(id)) + ` AND ` + t.Live()
	if t.System() {
		where += ` AND version = ` + b.arg(version)
	}
	var j []byte
	err = sqlx.GetContext(ctx, q, &j, `WITH r AS (UPDATE `+t.Qualified()+` SET `+strings.Join(sets, ", ")+` WHERE `+where+
		` RETURNING *) SELECT to_json(x) FROM (SELECT `+t.rowJSON(fields, "r")+` FROM r) x`, b.args...)
	if errors.Is(err, errNoRows) {
		return nil, false, nil
	}
	return j, err == nil, err
}

// keepKey is body without an uploaded record's key: the key names the record and does not
// change (links and other datasets' references follow it). A body may repeat it unchanged
// (a record read and written back); another value is refused. id "" (several records) refuses
// any value.
func (t *Table) keepKey(body map[string]any, id string) (map[string]any, error) {
	c, ok := datasets.UserKey(t.Columns)
	if !t.System() || !ok {
		return body, nil
	}
	v, ok := body[c.Name]
	if !ok {
		return body, nil
	}
	if text, null, err := c.Text(v); id == "" || err != nil || null || text != id {
		return nil, &FieldError{"body." + c.Name, "immutable", "a record's key (" + c.Name + ") does not change; create a record with the new key and delete this one"}
	}
	out := make(map[string]any, len(body))
	for k, x := range body {
		if k != c.Name {
			out[k] = x
		}
	}
	return out, nil
}

// Delete removes a record: soft (deleted_at set) or for good. It returns when it was deleted.
// A connected table's records are only deleted for good.
func (t *Table) Delete(ctx context.Context, q sqlx.QueryerContext, id string, soft bool) (time.Time, error) {
	qs := `WITH r AS (DELETE FROM ` + t.Qualified() + ` WHERE ` + t.keyIs("$1") + ` AND ` + t.Live() + ` RETURNING 1) SELECT now() FROM r`
	if soft && t.System() {
		qs = `UPDATE ` + t.Qualified() + ` SET deleted_at = now(), updated_at = now(), version = version + 1 WHERE ` + t.keyIs("$1") + ` AND deleted_at IS NULL
			RETURNING deleted_at`
	}
	var at time.Time
	err := sqlx.GetContext(ctx, q, &at, qs, id)
	if errors.Is(err, errNoRows) {
		return at, ErrNotFound
	}
	return at.UTC(), err
}

// Referring lists the keys of the live records whose column col holds value (the records
// referring to another dataset's record through a relationship).
func (t *Table) Referring(ctx context.Context, q sqlx.QueryerContext, col, value string) ([]string, error) {
	c, ok := t.cols[col]
	if !ok || t.key == "" {
		return nil, nil
	}
	text, _, err := c.Text(value)
	if err != nil {
		return nil, nil // a value this column cannot hold: nothing refers to it
	}
	k := pq.QuoteIdentifier(t.key)
	var ids []string
	err = sqlx.SelectContext(ctx, q, &ids, `SELECT `+k+`::text FROM `+t.Qualified()+` WHERE `+pq.QuoteIdentifier(col)+` = $1::`+datasets.SQLType(c)+
		` AND `+t.Live()+` ORDER BY `+k, text)
	return ids, err
}

// Selector picks records for a bulk update or delete: by key, and/or by filters.
type Selector struct {
	IDs     []string // key values as text
	Filters []Filter
}

func (t *Table) selectWhere(b *builder, s Selector) error {
	if len(s.IDs) == 0 && len(s.Filters) == 0 {
		return &FieldError{"ids", "required", "name the records with ids or a filter"}
	}
	if err := t.where(b, s.Filters, ""); err != nil {
		return err
	}
	if len(s.IDs) > 0 {
		b.conds = append(b.conds, pq.QuoteIdentifier(t.key)+" = ANY("+b.arg(pq.Array(s.IDs))+"::"+datasets.SQLType(t.cols[t.key])+"[])")
	}
	return nil
}

// UpdateWhere writes body's fields to every selected live record (version and updated_at
// move on) and returns their keys (as JSON values).
func (t *Table) UpdateWhere(ctx context.Context, q sqlx.QueryerContext, s Selector, body map[string]any) ([]json.RawMessage, error) {
	body, err := t.keepKey(body, "")
	if err != nil {
		return nil, err
	}
	var b builder
	cols, params, err := t.values(&b, body)
	if err != nil {
		return nil, err
	}
	if len(cols) == 0 {
		return nil, &FieldError{"data", "required", "an update needs data"}
	}
	if err := t.selectWhere(&b, s); err != nil {
		return nil, err
	}
	var sets []string
	if t.System() {
		sets = []string{"version = version + 1", "updated_at = now()"}
	}
	for i := range cols {
		sets = append(sets, cols[i]+" = "+params[i])
	}
	var ids []json.RawMessage
	err = sqlx.SelectContext(ctx, q, &ids, `UPDATE `+t.Qualified()+` SET `+strings.Join(sets, ", ")+` WHERE `+strings.Join(b.conds, " AND ")+
		` RETURNING to_json(`+pq.QuoteIdentifier(t.key)+`)`, b.args...)
	return ids, err
}

// DeleteWhere deletes every selected live record (soft or for good; connected tables only
// for good) and returns their keys (as JSON values).
func (t *Table) DeleteWhere(ctx context.Context, q sqlx.QueryerContext, s Selector, soft bool) ([]json.RawMessage, error) {
	var b builder
	if err := t.selectWhere(&b, s); err != nil {
		return nil, err
	}
	where := strings.Join(b.conds, " AND ")
	ret := ` RETURNING to_json(` + pq.QuoteIdentifier(t.key) + `)`
	qs := `DELETE FROM ` + t.Qualified() + ` WHERE ` + where + ret
	if soft && t.System() {
		qs = `UPDATE ` + t.Qualified() + ` SET deleted_at = now(), updated_at = now(), version = version + 1 WHERE ` + where + ret
	}
	var ids []json.RawMessage
	err := sqlx.SelectContext(ctx, q, &ids, qs, b.args...)
	return ids, err
}
