package datasets

import (
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"slices"
	"strconv"
	"strings"

	"dataplatform/store/ingest"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
)

// Formats a declared text column can require, as the CHECK each becomes.
var formatChecks = map[string]string{
	"email":     `^[^@[:space:]]+@[^@[:space:]]+\.[^@[:space:]]+$`,
	"uri":       `^[A-Za-z][A-Za-z0-9+.-]*:[^[:space:]]+$`,
	"uuid":      `^[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}$`,
	"date":      `^[0-9]{4}-[0-9]{2}-[0-9]{2}$`,
	"date-time": `^[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt ][0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]+)?([Zz]|[+-][0-9]{2}(:?[0-9]{2})?)$`,
}

// SQLType is the column's type in the table: its type, or varchar(n) for a text column with
// a declared maximum length.
func SQLType(c ingest.Column) string {
	if c.Type == ingest.Text && c.Constraints != nil && c.Constraints.MaxLength != nil {
		return "varchar(" + strconv.Itoa(*c.Constraints.MaxLength) + ")"
	}
	return string(c.Type)
}

// ColumnDDL is the column's definition in CREATE TABLE and ADD COLUMN: name, type, NOT NULL
// and DEFAULT. Its other constraints are table constraints (Constraints).
func ColumnDDL(c ingest.Column) (string, error) {
	s := pq.QuoteIdentifier(c.Name) + " " + SQLType(c)
	if !c.Nullable {
		s += " NOT NULL"
	}
	if v := c.DefaultValue(); v != nil {
		lit, err := Literal(c, v)
		if err != nil {
			return "", err
		}
		s += " DEFAULT " + lit
	}
	return s, nil
}

// Literal is v as an SQL literal of the column's type.
func Literal(c ingest.Column, v any) (string, error) {
	text, null, err := c.Text(v)
	if err != nil {
		return "", err
	}
	if null {
		return "NULL", nil
	}
	return pq.QuoteLiteral(text) + "::" + SQLType(c), nil
}

// Constraint is one named table constraint a column declaration makes.
type Constraint struct {
	Name string // unique in the table (UNIQUE ones: in the schema, so they carry the table's name)
	Kind string // unique, enum, format, pattern, minimum, maximum, min_length
	SQL  string // the definition after ADD CONSTRAINT <name>
}

// Constraints are the table constraints of a column's declaration. Each is named after the
// table, the column and the kind: <col>_<kind> for CHECKs, <table>_<col>_key for UNIQUE
// (whose index shares the organization schema's namespace); names are cut to PostgreSQL's
// 63 bytes with a checksum so that they stay distinct.
func Constraints(table string, c ingest.Column) []Constraint {
	k := c.Constraints
	if k == nil {
		return nil
	}
	q := pq.QuoteIdentifier(c.Name)
	var out []Constraint
	check := func(kind, cond string) {
		out = append(out, Constraint{Name: constraintName(c.Name + "_" + kind), Kind: kind, SQL: "CHECK (" + cond + ")"})
	}
	if k.Unique {
		out = append(out, Constraint{Name: constraintName(table + "_" + c.Name + "_key"), Kind: "unique", SQL: "UNIQUE (" + q + ")"})
	}
	if len(k.Enum) > 0 {
		lits := make([]string, len(k.Enum))
		for i, e := range k.Enum {
			lits[i] = pq.QuoteLiteral(e)
		}
		check("enum", q+" IN ("+strings.Join(lits, ", ")+")")
	}
	if re, ok := formatChecks[k.Format]; ok && c.Type == ingest.Text {
		check("format", q+" ~ "+pq.QuoteLiteral(re))
	}
	if k.Pattern != "" {
		check("pattern", q+" ~ "+pq.QuoteLiteral(k.Pattern))
	}
	if k.Minimum != nil {
		check("minimum", q+" >= "+strconv.FormatFloat(*k.Minimum, 'g', -1, 64))
	}
	if k.Maximum != nil {
		check("maximum", q+" <= "+strconv.FormatFloat(*k.Maximum, 'g', -1, 64))
	}
	if k.MinLength != nil {
		check("min_length", "char_length("+q+") >= "+strconv.Itoa(*k.MinLength))
	}
	return out
}

func constraintName(n string) string {
	if len(n) <= 63 {
		return n
	}
	return fmt.Sprintf("%s_%08x", n[:54], crc32.ChecksumIEEE([]byte(n)))
}

// createTable is the CREATE TABLE of a dataset: the system columns, the dataset's columns
// with their constraints. Its primary key is made after the load (chooseKey): the file's key,
// or the generated id.
func createTable(schema, id string, cols []ingest.Column) (string, error) {
	var b strings.Builder
	b.WriteString(`CREATE TABLE ` + Table(schema, id) + ` (`)
	sep := ""
	if !slices.ContainsFunc(cols, func(c ingest.Column) bool { return c.Name == "id" }) { // a key column of that name is the id
		b.WriteString(`id bigint GENERATED ALWAYS AS IDENTITY`)
		sep = ", "
	}
	for _, c := range cols {
		def, err := ColumnDDL(c)
		if err != nil {
			return "", err
		}
		b.WriteString(sep + def)
		sep = ", "
	}
	b.WriteString(`, created_at timestamptz NOT NULL DEFAULT now(), updated_at timestamptz NOT NULL DEFAULT now(),
		deleted_at timestamptz, version integer NOT NULL DEFAULT 1`)
	for _, c := range cols {
		for _, k := range Constraints(id, c) {
			b.WriteString(", CONSTRAINT " + pq.QuoteIdentifier(k.Name) + " " + k.SQL)
		}
	}
	b.WriteString(")")
	return b.String(), nil
}

// apply fits a declared schema to the columns found in the file: each file column must be
// declared (by its name in the file or its identifier), and takes the declared name, type
// and constraints; declared columns the file lacks must be nullable or have a default. It
// returns the columns to read from the file, in file order, and the table's columns, in
// declared order.
func apply(found []ingest.Column, declared []ingest.Column) (read []ingest.Column, table []ingest.Column, err error) {
	used := make([]bool, len(declared))
	table = append([]ingest.Column(nil), declared...)
	for _, f := range found {
		j := -1
		for i, d := range declared {
			if !used[i] && (d.Original == f.Original || d.Name == f.Name) {
				j = i
				break
			}
		}
		if j < 0 {
			return nil, nil, fmt.Errorf("column %q of the file is not in the declared schema", f.Original)
		}
		used[j] = true
		c := declared[j]
		c.Original = f.Original
		c.NullCount = f.NullCount
		table[j].Original = f.Original
		read = append(read, c)
	}
	for i, d := range declared {
		if !used[i] && !d.Nullable && d.DefaultValue() == nil {
			return nil, nil, fmt.Errorf("required column %q of the declared schema is not in the file", d.Name)
		}
	}
	return read, table, nil
}

// RowSecurity is the row-level security of a dataset table: user SQL (which runs under its
// organization's query role, not the table's owner) sees only live rows; soft-deleted ones
// are invisible to it as to the record API.
func RowSecurity(table string) []string {
	return []string{`ALTER TABLE ` + table + ` ENABLE ROW LEVEL SECURITY`,
		`CREATE POLICY dp_live ON ` + table + ` FOR SELECT TO PUBLIC USING (deleted_at IS NULL)`}
}

// ChangeTrigger makes a dataset table log its record changes (platform.record_changes), for
// the change streams, naming each record by its key column. It is created after the initial
// load, which is not a change anyone subscribed to.
func ChangeTrigger(table, key string) string {
	return `CREATE TRIGGER dp_changes AFTER INSERT OR UPDATE OR DELETE ON ` + table +
		` FOR EACH ROW EXECUTE FUNCTION platform.record_change(` + pq.QuoteLiteral(key) + `)`
}

// SearchDocument is the full-text document of a row for the record API's search: its text
// fields, the words of its text arrays and the strings inside its JSON fields. The search
// index is built on exactly this expression (so it must stay immutable), "" when the table has
// nothing to search.
func SearchDocument(cols []ingest.Column) string {
	var text, docs []string
	for _, c := range cols {
		q := pq.QuoteIdentifier(c.Name)
		switch c.Type {
		case ingest.Text:
			text = append(text, "coalesce("+q+", '')")
		case ingest.TextArray:
			text = append(text, "coalesce(platform.text_array_words("+q+"), '')")
		case ingest.JSONB:
			docs = append(docs, "jsonb_to_tsvector('simple'::regconfig, coalesce("+q+", '{}'::jsonb), '[\"string\"]'::jsonb)")
		}
	}
	if len(text) > 0 {
		docs = append([]string{"to_tsvector('simple'::regconfig, " + strings.Join(text, " || ' ' || ") + ")"}, docs...)
	}
	return strings.Join(docs, " || ")
}

// SearchIndexName is the name of a dataset table's search index for a document expression:
// it changes with the expression, so a schema change makes a new index.
func SearchIndexName(datasetID, doc string) string {
	return constraintName(fmt.Sprintf("%s_search_%08x", datasetID, crc32.ChecksumIEEE([]byte(doc))))
}

// PatternError says why PostgreSQL refuses pattern as a regular expression of a column's
// constraint ("" when it accepts it).
func PatternError(ctx context.Context, q sqlx.QueryerContext, pattern string) (string, error) {
	var ok bool
	if err := sqlx.GetContext(ctx, q, &ok, `SELECT '' ~ $1`, pattern); err != nil {
		var pe *pq.Error
		if !errors.As(err, &pe) || pe.Code != "2201B" {
			return "", err
		}
		return pe.Message, nil
	}
	return "", nil
}
