// Package records reads and writes the rows of a dataset's table for the record API. Field
// names come only from the table's known columns and values are always bound parameters;
// rows come back as JSON built by PostgreSQL (to_json), so types need no conversion here.
package records

import (
	"encoding/json"
	"errors"
	"hash/fnv"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"dataplatform/store/datasets"
	"dataplatform/store/ingest"

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
	// all and getAll: every field, and Get's SQL of them (without, with FOR UPDATE), made
	// once: a record is read by key on every such request.
	all    []string
	getAll [2]string
	// rowJSONs are rowJSON's SQL per fields and qualifier, made once per shape asked (a list
	// page builds it on every request), at most maxRowJSONs of them.
	rowJSONs     sync.Map
	rowJSONCount atomic.Int32
	// shape names the table's definition (its relation and columns) in exact counts' keys:
	// a count kept under one definition is not taken for another's.
	shape string
}

const maxRowJSONs = 256

// memo makes all and getAll.
func (t *Table) memo() *Table {
	t.all = t.Fields()
	def, _ := json.Marshal(t.TableDef)
	h := fnv.New64a()
	_, _ = h.Write(def)
	t.shape = strconv.FormatUint(h.Sum64(), 36)
	if t.key != "" {
		t.getAll = [2]string{t.getSQL(t.all, false), t.getSQL(t.all, true)}
	}
	return t
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
		return x.memo()
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
	return x.memo()
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

// AllFields is Fields made once, for reads: the caller must not change it.
func (t *Table) AllFields() []string {
	if t.all != nil {
		return t.all
	}
	return t.Fields()
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
	k := from + "\x00" + strings.Join(fields, ",")
	if v, ok := t.rowJSONs.Load(k); ok {
		return v.(string)
	}
	v := t.makeRowJSON(fields, from)
	if t.rowJSONCount.Add(1) <= maxRowJSONs {
		t.rowJSONs.Store(k, v)
	}
	return v
}

func (t *Table) makeRowJSON(fields []string, from string) string {
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
