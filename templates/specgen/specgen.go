// Package specgen renders a dataset's OpenAPI 3.0 description out of its schema, from the
// template dataset.openapi.yaml.tmpl beside this file (embedded): the record, create, update
// and patch schemas follow the columns and their constraints (the generated schema
// rules"); the paths are those of the record API. What the template does not hold is added
// to the loaded description (extensions.go): code samples, per-property x-constraints,
// x-display-name and x-pii, relationships, the description-wide x- extensions and the OAuth
// 2.0 security scheme.
package specgen

import (
	"bytes"
	"context"
	"embed"
	"encoding/json"
	"errors"
	"math"
	"strings"
	"text/template"
	"time"
	"unicode"

	"dataplatform/store/datasets"
	"dataplatform/store/ingest"
	"dataplatform/store/records"

	"github.com/getkin/kin-openapi/openapi3"
)

// tmplFS is the per-dataset description template beside this file.
//
//go:embed dataset.openapi.yaml.tmpl
var tmplFS embed.FS

// Input is what a description is made of.
type Input struct {
	DatasetID, Name, Description string
	SchemaVersion                int
	Version                      string       // info.version; empty: 1.0.0
	APIVersions                  []APIVersion // x-api-versions: every published version
	Table                        datasets.TableDef
	Tables                       []string // a connected dataset's tables (each has its own description)
	Links                        []Link   // relationships, as links of each record
	ManyToMany                   []ManyToMany
	ProductionURL, StagingURL    string
	AuthURL                      string              // the OAuth 2.0 authorization server (its /authorize and /token); empty: this service's
	Samples                      map[string][]string // sample values per column (personal data detection)
	GeneratedAt                  time.Time
}

// ManyToMany is a relationship through a junction dataset whose records point at this
// dataset (LocalKey) and at the target (ForeignKey).
type ManyToMany struct {
	Target, TargetName, Junction, JunctionName, LocalKey, ForeignKey string
}

// APIVersion is one published version as the description lists it.
type APIVersion struct {
	Version    string `json:"version"`
	Status     string `json:"status"`
	ReleasedAt string `json:"released_at"`
	SunsetAt   string `json:"sunset_at,omitempty"`
	URL        string `json:"url"`
}

// Link is a related collection of a record: `<name>` → url template with {field}.
type Link struct {
	Name string
	Many bool // a collection of records of the other dataset, else one record
	// Dataset is the other dataset; LocalKey and ForeignKey the columns that match: this
	// record's LocalKey equals the other's ForeignKey.
	Dataset, LocalKey, ForeignKey string
	Table                         string // the other table of a connected database ("" an uploaded dataset's)
}

var tmpl = template.Must(template.New("dataset.openapi.yaml.tmpl").Funcs(template.FuncMap{
	"q": func(s string) string { b, _ := json.Marshal(s); return string(b) },
	"json": func(v any) (string, error) {
		b, err := json.Marshal(v)
		return string(b), err
	},
}).ParseFS(tmplFS, "dataset.openapi.yaml.tmpl"))

// Names are the words a dataset's operations are named with: listCustomers, getCustomer.
type Names struct {
	Singular, Plural, SingularWords, PluralWords string
}

// NamesOf derives them from a dataset name: "customers" → Customer/Customers, "order items" →
// OrderItem/OrderItems. Names that are not words fall back to Record/Records.
func NamesOf(name string) Names {
	var words []string
	for _, w := range strings.FieldsFunc(name, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
		words = append(words, strings.ToLower(w))
	}
	if len(words) == 0 || !unicode.IsLetter([]rune(words[0])[0]) {
		words = append([]string{"record"}, words...)
	}
	last := words[len(words)-1]
	single := append([]string(nil), words...)
	single[len(single)-1] = singular(last)
	plural := append([]string(nil), words...)
	if singular(last) == last {
		plural[len(plural)-1] = pluralOf(last)
	}
	pascal := func(ws []string) string {
		var b strings.Builder
		for _, w := range ws {
			r := []rune(w)
			b.WriteString(string(unicode.ToUpper(r[0])) + string(r[1:]))
		}
		return b.String()
	}
	return Names{Singular: pascal(single), Plural: pascal(plural), SingularWords: strings.Join(single, " "), PluralWords: strings.Join(plural, " ")}
}

func pluralOf(w string) string {
	switch {
	case strings.HasSuffix(w, "s"), strings.HasSuffix(w, "x"), strings.HasSuffix(w, "z"), strings.HasSuffix(w, "ch"), strings.HasSuffix(w, "sh"):
		return w + "es"
	case len(w) > 1 && strings.HasSuffix(w, "y") && !strings.ContainsRune("aeiou", rune(w[len(w)-2])):
		return w[:len(w)-1] + "ies"
	}
	return w + "s"
}

func singular(w string) string {
	switch {
	case strings.HasSuffix(w, "ies") && len(w) > 3:
		return w[:len(w)-3] + "y"
	case strings.HasSuffix(w, "sses"), strings.HasSuffix(w, "xes"), strings.HasSuffix(w, "ches"), strings.HasSuffix(w, "shes"):
		return w[:len(w)-2]
	case strings.HasSuffix(w, "ss"), strings.HasSuffix(w, "us"), strings.HasSuffix(w, "is"):
		return w
	case strings.HasSuffix(w, "s") && len(w) > 1:
		return w[:len(w)-1]
	}
	return w
}

type view struct {
	Input
	Names
	Title, Version, GeneratedAt, Description string
	Record, Create, Update, Patch            map[string]any
	FilterParams                             []filterParam
	// System: an uploaded dataset's table (system fields, soft deletion, change stream).
	// Key names records in paths ("" none: no record paths); Writable adds the writes.
	System, Writable bool
	Key, DefaultSort string
	KeyIn, KeyOut    map[string]any // the key's schema in requests and in answers
	// The record list's vocabulary, from the record SQL package.
	Operators                              string
	DefaultLimit, MaxLimit, AggregateLimit int
}

type filterParam struct {
	Name, Description string
	Schema            map[string]any
}

// InvalidError is a table the description cannot express (a connected database's column of
// a kind the renderer does not know how to describe): the description would be invalid.
type InvalidError struct {
	DatasetID, Table string
	Err              error
}

func (e *InvalidError) Error() string { return "the table cannot be described: " + e.Err.Error() }
func (e *InvalidError) Unwrap() error { return e.Err }

// PatternError is why a column's pattern cannot be in a description (OpenAPI's regular
// expressions lack PostgreSQL's back-references and lookarounds), or "": a pattern the
// database takes but the description cannot hold would leave the table without an API.
func PatternError(ctx context.Context, pattern string) string {
	s := &openapi3.Schema{Type: &openapi3.Types{openapi3.TypeString}, Pattern: pattern}
	if err := s.Validate(ctx); err != nil {
		var pe *openapi3.SchemaError
		if errors.As(err, &pe) && pe.Reason != "" {
			return pe.Reason
		}
		return err.Error()
	}
	return ""
}

// Render makes the description and its JSON. It is validated before it is returned.
func Render(ctx context.Context, in Input) (*openapi3.T, []byte, error) {
	doc, _, err := RenderDoc(ctx, in)
	if err != nil {
		return nil, nil, err
	}
	j, err := json.Marshal(doc)
	return doc, j, err
}

// RenderDoc makes the description as a document, validated, and the size of its rendered
// text (with what decorate adds), without its JSON (encoding kin-openapi's document is a
// large share of the work, and validating requests needs only the document).
func RenderDoc(ctx context.Context, in Input) (*openapi3.T, int, error) {
	doc, n, err := render(ctx, in)
	if err != nil {
		return nil, 0, err
	}
	shareSchemas(doc)
	return doc, n, nil
}

// render is RenderDoc before the document's leaf schemas are shared.
func render(ctx context.Context, in Input) (*openapi3.T, int, error) {
	v := view{Input: in, Names: NamesOf(in.Name), Title: in.Name + " API", Version: in.Version,
		GeneratedAt: in.GeneratedAt.UTC().Format(time.RFC3339)}
	if v.Version == "" {
		v.Version = "1.0.0"
	}
	v.Description = in.Description
	if v.Description == "" {
		v.Description = "Records of the " + in.Name + " dataset."
	}
	if in.Table.Foreign && len(in.Tables) == 0 {
		v.Tables = []string{in.Table.Name}
	}
	v.Record, v.Create, v.Update, v.Patch = schemas(in)
	t := records.NewTable(in.Table)
	v.System, v.Writable, v.Key, v.DefaultSort = in.Table.System(), t.Writable(), t.Key(), t.DefaultSort()
	v.Operators, v.DefaultLimit, v.MaxLimit, v.AggregateLimit = records.OperatorList(), records.DefaultListLimit, records.MaxListLimit, records.DefaultAggregateLimit
	if in.Table.GeneratedID() {
		v.KeyIn = map[string]any{"type": "integer", "format": "int64", "minimum": 1}
		v.KeyOut = map[string]any{"type": "integer", "format": "int64"}
	} else if v.Key != "" {
		v.KeyIn, v.KeyOut = typeSchema(t.Column(v.Key).Type), typeSchema(t.Column(v.Key).Type)
	} else {
		v.KeyIn, v.KeyOut = map[string]any{"type": "string"}, map[string]any{"type": "string"}
	}
	for _, c := range in.Table.Columns {
		if c.Type == ingest.JSONB || c.Type.IsArray() {
			continue
		}
		s := column(c)
		delete(s, "default")
		delete(s, "x-default-expression")
		delete(s, "nullable")
		delete(s, "x-database-type")
		delete(s, "x-unique")
		delete(s, "description")
		v.FilterParams = append(v.FilterParams, filterParam{Name: "filter[" + c.Name + "]", Description: "Only records whose " + c.Name + " equals this.", Schema: s})
	}
	var buf bytes.Buffer
	if err := tmpl.Execute(&buf, v); err != nil {
		return nil, 0, err
	}
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(buf.Bytes())
	if err != nil {
		return nil, 0, &InvalidError{in.DatasetID, in.Table.Name, err}
	}
	decorate(doc, in)
	if err := doc.Validate(ctx); err != nil {
		return nil, 0, &InvalidError{in.DatasetID, in.Table.Name, err}
	}
	// decorate adds to the document what the text does not hold, a relationship's entry
	// (about the memory of 100 bytes of text) for each link.
	return doc, buf.Len() + 100*(len(in.Links)+len(in.ManyToMany)), nil
}

// generatedKey reports whether c is an uploaded dataset's integer key, which a record created
// without one gets from a sequence (after the file's largest).
func generatedKey(c ingest.Column) bool {
	return c.Key && (c.Type == ingest.Integer || c.Type == ingest.BigInt)
}

// column is the description of one column (the generated schema rules").
func column(c ingest.Column) map[string]any {
	s := typeSchema(c.Type)
	s["x-database-type"] = datasets.SQLType(c)
	switch {
	case c.Nullable && c.Type == ingest.JSONB: // nullable needs a type beside it: null is the object's
		s["anyOf"] = []any{map[string]any{"type": "object", "additionalProperties": true, "nullable": true},
			map[string]any{"type": "array", "items": map[string]any{}}, map[string]any{"type": "string"},
			map[string]any{"type": "number"}, map[string]any{"type": "boolean"}}
	case c.Nullable:
		s["nullable"] = true
	}
	if c.Description != "" {
		s["description"] = c.Description
	}
	if c.Key {
		s["x-primary-key"] = true
	}
	if m := c.Semantics; !m.Empty() {
		// what the owner taught about the column, for clients and for plain-English questions
		// (its role, set or inferred, is x-role: schemas)
		if len(m.Aliases) > 0 {
			s["x-aliases"] = m.Aliases
		}
		if m.Unit != "" {
			s["x-unit"] = m.Unit
		}
		if m.DefaultAggregation != "" {
			s["x-default-aggregation"] = m.DefaultAggregation
		}
	}
	if k := c.Constraints; k != nil {
		if k.Unique {
			s["x-unique"] = true
		}
		if len(k.Enum) > 0 {
			s["enum"] = k.Enum
		}
		if k.Format != "" {
			s["format"] = k.Format
		}
		if k.Pattern != "" {
			s["pattern"] = k.Pattern
		}
		if k.Minimum != nil {
			s["minimum"] = *k.Minimum
		}
		if k.Maximum != nil {
			s["maximum"] = *k.Maximum
		}
		if k.MinLength != nil {
			s["minLength"] = *k.MinLength
		}
		if k.MaxLength != nil {
			s["maxLength"] = *k.MaxLength
		}
		if d := c.DefaultValue(); d != nil && fits(s, c.Constraints.Default) {
			s["default"] = d
		}
	}
	if _, ok := s["default"]; !ok && c.DefaultExpression != "" {
		s["x-default-expression"] = c.DefaultExpression
	}
	return s
}

// fits reports whether a default is a value of the column's schema (a connected database's
// jsonb default may be an array where the description says object): a default that is not
// would make the description invalid.
func fits(schema map[string]any, def json.RawMessage) bool {
	b, err := json.Marshal(schema)
	if err != nil {
		return false
	}
	var sc openapi3.Schema
	var v any
	if sc.UnmarshalJSON(b) != nil || json.Unmarshal(def, &v) != nil {
		return false
	}
	return sc.VisitJSON(v) == nil
}

func typeSchema(t ingest.Type) map[string]any {
	if t.IsArray() {
		return map[string]any{"type": "array", "items": typeSchema(t.Elem())}
	}
	switch t {
	case ingest.Integer:
		return map[string]any{"type": "integer", "format": "int32", "minimum": math.MinInt32, "maximum": math.MaxInt32}
	case ingest.BigInt:
		return map[string]any{"type": "integer", "format": "int64"}
	case ingest.Numeric:
		return map[string]any{"type": "number", "format": "double"}
	case ingest.Boolean:
		return map[string]any{"type": "boolean"}
	case ingest.Date:
		return map[string]any{"type": "string", "format": "date"}
	case ingest.Timestamptz:
		return map[string]any{"type": "string", "format": "date-time"}
	case ingest.UUID:
		return map[string]any{"type": "string", "format": "uuid", "pattern": "^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$"}
	case ingest.JSONB: // any JSON document: an object, an array, a string, a number, a boolean
		return map[string]any{}
	}
	return map[string]any{"type": "string"}
}

// schemas are the record (as read), create, update (create + version) and patch schemas.
func schemas(in Input) (record, create, update, patch map[string]any) {
	props := map[string]any{}
	computed := map[string]any{} // columns a connected database fills: read-only
	var createRequired []string
	roles := columnRoles(in)
	for i, c := range in.Table.Columns {
		s := column(c)
		s["x-role"] = string(roles[i])
		if c.Computed {
			s["readOnly"] = true
			computed[c.Name] = s
		} else {
			props[c.Name] = s
		}
		if !c.Nullable && c.DefaultValue() == nil && !c.Computed && c.DefaultExpression == "" && !generatedKey(c) {
			createRequired = append(createRequired, c.Name)
		}
	}
	system := in.Table.System()
	writable := func() map[string]any {
		m := make(map[string]any, len(props)+1)
		for k, v := range props {
			m[k] = v
		}
		return m
	}
	create = map[string]any{"type": "object", "additionalProperties": false, "properties": writable()}
	if len(createRequired) > 0 {
		create["required"] = createRequired
	}
	up := writable()
	if system {
		up["version"] = map[string]any{"type": "integer", "minimum": 1, "description": "The version read; a stale one is refused (optimistic locking)."}
	}
	update = map[string]any{"type": "object", "additionalProperties": false, "properties": up}
	if len(createRequired) > 0 {
		update["required"] = createRequired
	}
	pp := writable()
	if system {
		pp["version"] = up["version"]
	}
	patch = patchSchema(in, pp)
	record = recordSchema(in, writable(), computed)
	return record, create, update, patch
}

// columnRoles are the roles of the table's columns from its schema alone (names, types, the
// key, declared values and the roles people set): a released description never changes, so
// it cannot say what the data's statistics or relationships found since; the schema API
// states those.
func columnRoles(in Input) []ingest.Role {
	return datasets.ColumnRoles(in.Table, nil, nil)
}

// patchSchema is the schema of a patch, of the writable properties pp (and the version): the
// fields without their defaults, and the update operators.
func patchSchema(in Input, pp map[string]any) map[string]any {
	for k, v := range pp {
		if m, ok := v.(map[string]any); ok && k != "version" {
			c := make(map[string]any, len(m))
			for x, y := range m {
				if x != "default" { // a patch leaves absent fields alone
					c[x] = y
				}
			}
			pp[k] = c
		}
	}
	// Update operators: $inc adds to numbers, $push and $pull add and remove array elements,
	// $setOnInsert sets a field only when it has no value yet.
	inc, push, set := map[string]any{}, map[string]any{}, map[string]any{}
	for _, c := range in.Table.Columns {
		if c.Computed {
			continue
		}
		switch {
		case c.Type == ingest.Integer || c.Type == ingest.BigInt || c.Type == ingest.Numeric:
			inc[c.Name] = map[string]any{"type": "number"}
		case c.Type.IsArray():
			push[c.Name] = typeSchema(c.Type.Elem())
		}
		set[c.Name] = pp[c.Name]
	}
	op := func(props map[string]any, desc string) map[string]any {
		return map[string]any{"type": "object", "additionalProperties": false, "minProperties": 1, "properties": props, "description": desc}
	}
	pp["$inc"] = op(inc, "Numbers to add to numeric fields (negative to subtract).")
	pp["$push"] = op(push, "An element to append to each array field.")
	pp["$pull"] = op(push, "An element to remove (every occurrence) from each array field.")
	pp["$setOnInsert"] = op(set, "Values for fields that have none yet (NULL); fields with a value keep it.")
	return map[string]any{"type": "object", "additionalProperties": false, "minProperties": 1, "properties": pp}
}

// recordSchema is the schema of a record as it is read: the writable properties rp, the
// computed ones, the system columns, its links and the related records embedded.
func recordSchema(in Input, rp, computed map[string]any) map[string]any {
	for k, v := range computed {
		rp[k] = v
	}
	if in.Table.GeneratedID() {
		rp["id"] = map[string]any{"type": "integer", "format": "int64", "readOnly": true}
	}
	if in.Table.System() {
		rp["created_at"] = map[string]any{"type": "string", "format": "date-time", "readOnly": true}
		rp["updated_at"] = map[string]any{"type": "string", "format": "date-time", "readOnly": true}
		rp["version"] = map[string]any{"type": "integer", "readOnly": true, "description": "Optimistic-locking version; every write increments it."}
	}
	links := map[string]any{"self": map[string]any{"type": "string", "format": "uri-reference"}}
	for _, l := range in.Links {
		links[l.Name] = map[string]any{"type": "string", "format": "uri-reference"}
	}
	rp["_links"] = map[string]any{"type": "object", "readOnly": true, "required": []string{"self"}, "properties": links}
	if records.NewTable(in.Table).Key() == "" { // no key: no record address
		rp["_links"] = map[string]any{"type": "object", "readOnly": true, "properties": map[string]any{}}
	}
	if len(in.Links) > 0 {
		emb := map[string]any{}
		for _, l := range in.Links {
			other := map[string]any{"type": "object", "additionalProperties": true, "description": "A record of the related dataset (its own description has its shape)."}
			if l.Many {
				emb[l.Name] = map[string]any{"type": "array", "items": other}
			} else {
				other["nullable"] = true
				emb[l.Name] = other
			}
		}
		rp["_embedded"] = map[string]any{"type": "object", "readOnly": true, "properties": emb,
			"description": "Related records asked for with include or expand."}
	}
	// fields, exclude and X-Return-Fields narrow an answer to the fields asked for; the key
	// (which names the record) and _links are always there.
	required := []string{"_links"}
	desc := "A record. Every field is present unless `fields`, `exclude` or `X-Return-Fields` narrowed the answer to the fields asked for; `_links` always is."
	if k := records.NewTable(in.Table).Key(); k != "" {
		required = []string{k, "_links"}
		desc = "A record. Every field is present unless `fields`, `exclude` or `X-Return-Fields` narrowed the answer to the fields asked for; its key `" +
			k + "` and `_links` always are (the key cannot be excluded)."
	}
	return map[string]any{"type": "object", "properties": rp, "required": required, "description": desc}
}
