// Package nlsql turns questions in plain English into SQL over a project's datasets, without
// a model: it reads counts, sums, averages, extremes and distinct counts, "by X" grouping
// (columns and time units), filters on known column values, numeric comparisons, time
// phrases, ordering and "top N", and joins along known relationships. It says what it read
// as steps, and refuses (with suggestions) what it cannot read rather than guessing.
//
// Words it does not find in the schema are looked up in an English lexicon (WordNet synonym
// sets and a Porter2 stemmer, package lexicon) and in what the datasets' owners taught about
// their columns (aliases, units, default aggregations); places are read by name or code;
// dates as people write them by a date parser anchored to the clock it is given. Readings
// that rest on such a lookup say so in the warnings. A number that does not add up (a unit
// price, a rate) is never summed, and "by" after a verb is who did it, not a grouping; where a
// question reads two ways the refusal names both.
//
// The SQL names tables the way project queries do (dataset identifiers, dataset.table for
// connected tables); every value taken from the question is a {{pN}} placeholder bound from
// Answer.Params, never text in the SQL.
package nlsql

import (
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"dataplatform/store/ingest"
	"dataplatform/store/nlsql/lexicon"
)

// Column is a column the engine may use.
type Column struct {
	Name   string // identifier in the table
	Label  string // display name ("Signup Date")
	Type   ingest.Type
	Values []string // the known values of a text column with few of them
	// What the dataset's owner taught: other names of the column, the unit of its values,
	// and how they combine when a question does not say (sum, avg, min, max; none: never).
	Aliases    []string
	Unit       string
	DefaultAgg string
	// Role is what the column is for (ingest.InferRoles, or set by a person): only a number
	// whose role is a value (a unit price, a rate) is never summed. Empty: inferred here
	// from the table's columns (withRoles).
	Role ingest.Role
	// Measure: the column is a named measure of its dataset (its value per row is the
	// measure's, computedExpr), MeasureOfTimes: a difference of two timestamps.
	Measure        *ingest.Measure
	MeasureOfTimes bool
	product        []string // a computed value's price and quantity columns (computed.go)
}

// Table is a table the engine may read.
type Table struct {
	Ref       string // how SQL names it: a dataset identifier, or dataset.table
	DatasetID string
	Dataset   string // the dataset's display name
	Name      string // the table's own name (a connected table's), else the dataset's
	Columns   []Column
	System    bool // has the platform's system columns (created_at, updated_at, ...)
	// GeneratedID: the rows have the platform's generated id (their data has no key).
	GeneratedID bool
	Rank        float64 // how well the dataset's search entries match the question (0: not at all)
	// Matched are the words of the question that the dataset's search entries (its name,
	// description, columns) match: the only words a pick by the search index accounts for
	Matched []string
}

// Relation is a foreign key between two tables: From.FromColumn → To.ToColumn.
type Relation struct {
	From, FromColumn, To, ToColumn string // table refs and column names
}

// Schema is what a question may be about.
type Schema struct {
	Tables    []Table
	Relations []Relation
}

func (s *Schema) table(ref string) *Table {
	for i := range s.Tables {
		if s.Tables[i].Ref == ref {
			return &s.Tables[i]
		}
	}
	return nil
}

func (t *Table) column(name string) *Column {
	for i := range t.Columns {
		if t.Columns[i].Name == name {
			return &t.Columns[i]
		}
	}
	return nil
}

func (c *Column) numeric() bool {
	return c.Type == ingest.Integer || c.Type == ingest.BigInt || c.Type == ingest.Numeric
}

func (c *Column) temporal() bool { return c.Type == ingest.Date || c.Type == ingest.Timestamptz }

// perUnit reports whether a number is a value that does not add up (its role is value: a
// unit price beside a quantity, a rate, a percentage, a score, a reading): adding it up over
// rows gives a number that means nothing, so it is never summed (by questions or by
// generated dashboards) and never stands for the value of what its rows make up.
func (c *Column) perUnit() bool { return c != nil && c.Role == ingest.RoleValue }

// identifies reports whether a column's role is an identifier (a key, a reference, a code):
// it names rows rather than measuring them.
func (c *Column) identifies() bool { return c != nil && c.Role == ingest.RoleIdentifier }

// perUnit reports whether column col of table ref is a value that does not add up.
func (s *Schema) perUnit(ref, col string) bool {
	if t := s.table(ref); t != nil {
		return t.column(col).perUnit()
	}
	return false
}

// withRoles is s with a role on every column (ingest.InferRoles over each table's columns,
// the ends of relationships as keys, the columns with known values as categories); the roles
// it has (the caller's, inferred with the data's statistics or set by a person) are kept. It
// copies what it changes: the caller's schema is not modified.
func withRoles(s Schema) Schema {
	var tables []Table
	for i, t := range s.Tables {
		if !slices.ContainsFunc(t.Columns, func(c Column) bool { return c.Role == "" }) {
			continue
		}
		in := make([]ingest.RoleColumn, len(t.Columns))
		for j, c := range t.Columns {
			in[j] = ingest.RoleColumn{Name: c.Name, Type: c.Type, Enum: len(c.Values) > 0, Set: c.Role,
				Key: slices.ContainsFunc(s.Relations, func(r Relation) bool {
					return r.From == t.Ref && r.FromColumn == c.Name || r.To == t.Ref && r.ToColumn == c.Name
				})}
		}
		roles := ingest.InferRoles(in)
		if tables == nil {
			tables = slices.Clone(s.Tables)
		}
		cols := slices.Clone(t.Columns)
		for j := range cols {
			cols[j].Role = roles[j]
		}
		tables[i].Columns = cols
	}
	if tables != nil {
		s.Tables = tables
	}
	return s
}

// words are the words a name is written with: "signup_date" and "Signup Date" → signup, date.
// Names come from schemas, so the answers are kept (up to maxCachedNames); callers must not
// change the slice (its capacity is its length, so appending copies).
func words(name string) []string {
	if v, ok := wordCache.Load(name); ok {
		return v.([]string)
	}
	f := strings.FieldsFunc(strings.ToLower(name), func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9')
	})
	f = f[:len(f):len(f)]
	if cachedNames.Add(1) <= maxCachedNames {
		wordCache.Store(name, f)
	}
	return f
}

const maxCachedNames = 100_000

var (
	wordCache   sync.Map // name → its words
	cachedNames atomic.Int64
)

// singular is a plural English word's singular (well enough for column and table names).
func singular(w string) string {
	switch {
	case len(w) > 5 && strings.HasSuffix(w, "rses"): // courses, nurses
		return w[:len(w)-1]
	case len(w) > 4 && strings.HasSuffix(w, "ies"):
		return w[:len(w)-3] + "y"
	case len(w) > 4 && (strings.HasSuffix(w, "ses") || strings.HasSuffix(w, "xes") || strings.HasSuffix(w, "ches") || strings.HasSuffix(w, "shes")):
		return w[:len(w)-2]
	case len(w) > 3 && strings.HasSuffix(w, "s") && !strings.HasSuffix(w, "ss") && !strings.HasSuffix(w, "us"):
		return w[:len(w)-1]
	}
	return w
}

// close reports whether two words are the same up to plural and one typing mistake (for
// words of five letters or more).
func close(a, b string) bool {
	a, b = singular(a), singular(b)
	if a == b {
		return true
	}
	// inflections: "shipping" and "ship", "payments" and "payment"
	// (a participle names the doing, not the thing: "who ordered" is not "orders")
	if len(a) >= 4 && len(b) >= 4 && a[:2] == b[:2] && strings.HasSuffix(a, "ed") == strings.HasSuffix(b, "ed") && lexicon.Stem(a) == lexicon.Stem(b) {
		return true
	}
	if len(a) < 5 || len(b) < 5 {
		return false
	}
	return oneEdit(a, b)
}

// abbreviates reports whether a short word of a name is an abbreviation of word w of the
// question: its letters in order, starting with w's first ("qty" of quantity, "amt" of
// amount, "dept" of department).
func abbreviates(short, w string) bool {
	if len(short) < 3 || len(short) > 4 || len(w) < len(short)+3 || short[0] != w[0] {
		return false
	}
	k := 0
	for i := 0; i < len(w) && k < len(short); i++ {
		if w[i] == short[k] {
			k++
		}
	}
	return k == len(short)
}

// oneEdit reports whether a and b differ by at most one typing mistake (a letter changed,
// added, left out, or two swapped), in one pass without allocating.
func oneEdit(a, b string) bool {
	la, lb := len(a), len(b)
	if la-lb > 1 || lb-la > 1 {
		return false
	}
	i := 0
	for i < la && i < lb && a[i] == b[i] {
		i++
	}
	switch {
	case i == la && i == lb: //nolint:gocritic // badCond is wrong here: both words read to their end are equal
		return true
	case la == lb:
		if a[i+1:] == b[i+1:] {
			return true
		}
		return i+1 < la && a[i] == b[i+1] && a[i+1] == b[i] && a[i+2:] == b[i+2:]
	case la > lb:
		return a[i+1:] == b[i:]
	default:
		return a[i:] == b[i+1:]
	}
}

// edits is the Damerau-Levenshtein distance of a and b, stopping early above 2.
func edits(a, b string) int {
	if d := len(a) - len(b); d > 2 || d < -2 {
		return 3
	}
	ra, rb := []rune(a), []rune(b)
	prev2 := make([]int, len(rb)+1)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(rb)]
}

// synonyms are words people use for a column's name.
var synonyms = map[string][]string{
	"amount":   {"revenue", "sales", "spend", "spent", "spending", "value", "price", "cost", "total", "money", "paid"},
	"total":    {"revenue", "sales", "amount", "spend", "spent", "value", "price", "cost", "paid"},
	"price":    {"cost", "amount", "value"},
	"city":     {"town", "location"},
	"country":  {"nation"},
	"created":  {"signup", "joined", "registered", "added"},
	"signup":   {"joined", "registered", "signed"},
	"placed":   {"ordered", "bought", "purchased", "made"},
	"quantity": {"qty", "units", "count"},
	"credit":   {"balance"},
	"name":     {"who", "called"},
	"email":    {"mail"},
	"date":     {"when"},
	"hire":     {"hired", "hires", "hiring"},
	"value":    {"amount", "worth"},
}
