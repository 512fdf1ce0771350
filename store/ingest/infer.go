package ingest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Type is a PostgreSQL column type a dataset column can have.
type Type string

const (
	Unknown     Type = ""
	Integer     Type = "integer"
	BigInt      Type = "bigint"
	Numeric     Type = "numeric"
	Boolean     Type = "boolean"
	Date        Type = "date"
	Timestamptz Type = "timestamptz"
	UUID        Type = "uuid"
	JSONB       Type = "jsonb"
	Text        Type = "text"

	TextArray    Type = "text[]"
	BigIntArray  Type = "bigint[]"
	NumericArray Type = "numeric[]"
	BooleanArray Type = "boolean[]"

	anyArray Type = "[]" // only empty arrays or NULL elements seen so far
)

// ArrayOf is the array type of elements of type t (Parquet lists can also give integer[],
// date[], timestamptz[] and uuid[]).
func ArrayOf(t Type) Type { return t + "[]" }

// IsArray reports whether t is an array type.
func (t Type) IsArray() bool { return strings.HasSuffix(string(t), "[]") }

// Elem is the element type of an array type.
func (t Type) Elem() Type { return Type(strings.TrimSuffix(string(t), "[]")) }

// Kind is the narrowest type a single text value (a CSV field) has. Booleans are true/false,
// t/f and yes/no in any case; 0 and 1 are integers here and become booleans only in a
// column that also has boolean words (see colState.merge). Integers with a leading zero
// (zip codes, phone numbers: 0123) are text, as converting them would lose the zero. It runs
// on every value of a file, so it checks shapes by hand before parsing.
func Kind(v string) Type {
	if len(v) <= 5 {
		switch strings.ToLower(v) {
		case "true", "false", "t", "f", "yes", "no":
			return Boolean
		}
	}
	switch number(v) {
	case 1:
		n, err := strconv.ParseInt(v, 10, 64)
		switch {
		case leadingZero(v):
			return Text
		case err != nil && !numericFits(v):
			return Text // past numeric's range: only text holds it
		case err != nil:
			return Numeric
		case n >= -1<<31 && n < 1<<31:
			return Integer
		default:
			return BigInt
		}
	case 2:
		if leadingZero(v) || !numericFits(v) {
			return Text
		}
		return Numeric
	}
	if t, _ := timeShape(v); t != Unknown {
		return t
	}
	if isUUID(v) {
		return UUID
	}
	return Text
}

// number is 1 for an integer literal, 2 for a decimal one (optional sign, digits, one point,
// optional exponent), 0 otherwise.
func number(v string) int {
	i := 0
	if i < len(v) && (v[i] == '+' || v[i] == '-') {
		i++
	}
	digits, point, exp := 0, false, false
	for ; i < len(v); i++ {
		c := v[i]
		switch {
		case c >= '0' && c <= '9':
			digits++
		case c == '.' && !point && !exp:
			point = true
		case (c == 'e' || c == 'E') && digits > 0 && !exp:
			exp = true
			if i+1 < len(v) && (v[i+1] == '+' || v[i+1] == '-') {
				i++
			}
			if i+1 >= len(v) {
				return 0
			}
		default:
			return 0
		}
	}
	switch {
	case digits == 0:
		return 0
	case point || exp:
		return 2
	}
	return 1
}

// leadingZero reports a number whose text would not survive being stored as a number: an
// explicit plus (E.164 phone numbers: +15557624039), a zero before another digit (zip codes:
// 02134; 007.5) or a negative zero.
func leadingZero(v string) bool {
	if v[0] == '+' {
		return true
	}
	if v[0] == '-' {
		v = v[1:]
		if strings.Trim(v, "0.") == "" {
			return true
		}
	}
	return len(v) > 1 && v[0] == '0' && v[1] >= '0' && v[1] <= '9'
}

// timeShape recognises YYYY-MM-DD (Date) and YYYY-MM-DD[T ]HH:MM:SS[.frac][Z|±HH[[:]MM]]
// (Timestamptz, zone telling whether an offset is given), with calendar checks, without
// the cost of time.Parse trying layouts on every value.
func timeShape(s string) (t Type, zone bool) {
	if len(s) < 10 || s[4] != '-' || s[7] != '-' {
		return Unknown, false
	}
	y, ok1 := digits2(s[0:2])
	y2, ok2 := digits2(s[2:4])
	m, ok3 := digits2(s[5:7])
	d, ok4 := digits2(s[8:10])
	year := y*100 + y2
	if !ok1 || !ok2 || !ok3 || !ok4 || year < 1 || m < 1 || m > 12 || d < 1 || d > daysIn(m, year) {
		return Unknown, false
	}
	if len(s) == 10 {
		return Date, false
	}
	if len(s) < 19 || (s[10] != 'T' && s[10] != ' ') || s[13] != ':' || s[16] != ':' {
		return Unknown, false
	}
	hh, ok1 := digits2(s[11:13])
	mm, ok2 := digits2(s[14:16])
	ss, ok3 := digits2(s[17:19])
	if !ok1 || !ok2 || !ok3 || hh > 23 || mm > 59 || ss > 59 {
		return Unknown, false
	}
	i := 19
	if i < len(s) && s[i] == '.' {
		j := i + 1
		for j < len(s) && s[j] >= '0' && s[j] <= '9' {
			j++
		}
		if j == i+1 {
			return Unknown, false
		}
		i = j
	}
	switch rest := s[i:]; {
	case rest == "":
		return Timestamptz, false
	case rest == "Z":
		return Timestamptz, true
	case rest[0] == '+' || rest[0] == '-':
		rest = rest[1:]
		oh, ok := digits2(rest)
		if len(rest) < 2 || !ok || oh > 15 {
			return Unknown, false
		}
		switch rest = rest[2:]; {
		case rest == "":
			return Timestamptz, true
		case len(rest) == 3 && rest[0] == ':':
			rest = rest[1:]
		}
		if om, ok := digits2(rest); ok && len(rest) == 2 && om <= 59 {
			return Timestamptz, true
		}
	}
	return Unknown, false
}

// digits2 parses the first two bytes of s as a decimal number.
func digits2(s string) (int, bool) {
	if len(s) < 2 || s[0] < '0' || s[0] > '9' || s[1] < '0' || s[1] > '9' {
		return 0, false
	}
	return int(s[0]-'0')*10 + int(s[1]-'0'), true
}

func daysIn(m, y int) int {
	switch m {
	case 2:
		if y%4 == 0 && (y%100 != 0 || y%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}

func isUUID(v string) bool {
	if len(v) != 36 || v[8] != '-' || v[13] != '-' || v[18] != '-' || v[23] != '-' {
		return false
	}
	for i := 0; i < 36; i++ {
		if !isHex[v[i]] && i != 8 && i != 13 && i != 18 && i != 23 {
			return false
		}
	}
	return true
}

var isHex = func() (t [256]bool) {
	for _, c := range "0123456789abcdefABCDEF" {
		t[c] = true
	}
	return t
}()

// Widen is the type that holds values of both a and b: integer < bigint < numeric, date <
// timestamptz, arrays widen by element the same way (an empty array fits any), arrays and
// objects of different shapes become jsonb, and anything else becomes text.
func Widen(a, b Type) Type {
	switch {
	case a == b || b == Unknown:
		return a
	case a == Unknown:
		return b
	}
	rank := map[Type]int{Integer: 1, BigInt: 2, Numeric: 3}
	if rank[a] > 0 && rank[b] > 0 {
		if rank[a] > rank[b] {
			return a
		}
		return b
	}
	if (a == Date && b == Timestamptz) || (a == Timestamptz && b == Date) {
		return Timestamptz
	}
	if a.IsArray() && b.IsArray() {
		switch e := Widen(a.Elem(), b.Elem()); {
		case a == anyArray:
			return b
		case b == anyArray:
			return a
		case e != Text: // integer[] and numeric[] make numeric[]
			return ArrayOf(e)
		}
		return JSONB // arrays of different kinds
	}
	if (a == JSONB || a.IsArray()) && (b == JSONB || b.IsArray()) {
		return JSONB
	}
	return Text
}

// Column describes one column of a file and of the dataset table made from it.
type Column struct {
	Name      string `json:"name"`          // identifier in the table
	Original  string `json:"original_name"` // name in the file, for display
	Type      Type   `json:"type"`
	Nullable  bool   `json:"nullable"`
	NullCount int64  `json:"null_count"`
	MaxLength int    `json:"max_length,omitempty"` // characters, for text columns
	// Constraints are declared ones (a schema given with the dataset or changed later).
	Constraints *Constraints `json:"constraints,omitempty"`
	Description string       `json:"description,omitempty"`
	// Computed is a connected database's column that the database fills itself (a sequence,
	// an identity, a generated column or a default expression): read-only in the record API.
	Computed bool `json:"computed,omitempty"`
	// DefaultExpression is a connected database's default that is no constant of the
	// column's type (now(), nextval(...)): the database applies it; Constraints.Default
	// holds the defaults that are.
	DefaultExpression string `json:"default_expression,omitempty"`
	// Key marks the column that keys an uploaded dataset's records (its PRIMARY KEY): the
	// file's own key, named at creation or inferred. A dataset without one has the generated id.
	Key bool `json:"key,omitempty"`
	// Semantics is the column's meaning to plain-English questions and dashboards (set
	// through the schema API).
	Semantics *Semantics `json:"semantics,omitempty"`
}

// Constraints are what a declared column asks of its values beyond its type. Each becomes
// a constraint of the table (a CHECK, UNIQUE or DEFAULT; MaxLength makes a text column
// varchar(n)), so the database enforces them on every write.
type Constraints struct {
	Unique    bool            `json:"unique,omitempty"`
	Enum      []string        `json:"enum,omitempty"`
	Default   json.RawMessage `json:"default,omitempty"` // JSON value
	Format    string          `json:"format,omitempty"`  // email, uri, uuid, date, date-time
	Pattern   string          `json:"pattern,omitempty"` // POSIX regular expression
	Minimum   *float64        `json:"minimum,omitempty"`
	Maximum   *float64        `json:"maximum,omitempty"`
	MinLength *int            `json:"min_length,omitempty"`
	MaxLength *int            `json:"max_length,omitempty"`
}

// Empty reports whether k constrains nothing.
func (k *Constraints) Empty() bool {
	return k == nil || (!k.Unique && k.Enum == nil && k.Default == nil && k.Format == "" && k.Pattern == "" && k.Minimum == nil &&
		k.Maximum == nil && k.MinLength == nil && k.MaxLength == nil)
}

// DefaultValue is the declared default as a Value, or nil.
func (c Column) DefaultValue() Value {
	if c.Constraints == nil || len(c.Constraints.Default) == 0 {
		return nil
	}
	d := json.NewDecoder(bytes.NewReader(c.Constraints.Default))
	d.UseNumber()
	var v any
	if d.Decode(&v) != nil {
		return nil
	}
	return v
}

// Schema is what Infer finds in a file: enough to create its table and read it (OpenSchema).
type Schema struct {
	Format  Format   `json:"format"`
	Dialect *Dialect `json:"dialect,omitempty"` // CSV only
	Columns []Column `json:"columns"`
	Rows    int64    `json:"row_count"`
	// Sampled is set when only the first records were read (InferSample): the types and
	// nullability hold for them, and a later record may not fit.
	Sampled bool `json:"sampled,omitempty"`
}

// Infer reads the whole file once and returns its columns with the narrowest PostgreSQL
// types that hold every value, their nullability and null counts. Parquet types come from
// the file's schema; its values are only read for nulls and text lengths.
func Infer(path string, f Format) (*Schema, error) { return InferSample(path, f, 0) }

// InferSample is Infer over the first limit records only (all of them when limit is 0); the
// schema says Sampled when records were left unread. A loader that takes a sampled schema
// verifies every value as it converts it (Column.Text) and infers again from the whole file
// when one does not fit.
func InferSample(path string, f Format, limit int64) (*Schema, error) {
	var s *Schema
	var err error
	switch f {
	case CSV:
		s, err = inferCSV(path, limit)
	case JSON, NDJSON:
		s, err = inferJSON(path, f, limit)
	case Parquet:
		s, err = inferParquet(path, limit)
	default:
		return nil, &FormatError{Provided: string(f)}
	}
	if err != nil {
		return nil, err
	}
	// Imported columns are nullable, as in Supabase's CSV import, Datasette and Airtable: a
	// file without blanks (or a Parquet REQUIRED field) says nothing about records created
	// later through the API. NOT NULL is declared (a schema at creation or a schema change);
	// NullCount still tells how many the file had.
	for i := range s.Columns {
		s.Columns[i].Nullable = true
	}
	return s, nil
}

func inferCSV(path string, limit int64) (*Schema, error) {
	src, err := openCSVSource(path, nil)
	if err != nil {
		return nil, err
	}
	defer func() { _ = src.Close() }()
	s := &Schema{Format: CSV, Dialect: &src.dialect, Columns: columns(src.names)}
	st := make([]colState, len(s.Columns))
	for {
		if limit > 0 && s.Rows == limit {
			s.Sampled = true
			break
		}
		rec, err := src.next()
		if err == io.EOF {
			break
		} else if err != nil {
			return nil, err
		}
		for i, v := range rec {
			st[i].text(v)
		}
		s.Rows++
	}
	finish(s, st)
	return s, nil
}

// inferJSON discovers the columns as it goes: a key first seen in the 1000th object is a
// column that was NULL in the 999 before.
func inferJSON(path string, f Format, limit int64) (*Schema, error) {
	src, err := openJSONSource(path, f, nil)
	if err != nil {
		return nil, err
	}
	defer func() { _ = src.Close() }()
	var keys []string
	var st []colState
	var n int64
	sampled := false
	for {
		if limit > 0 && n == limit {
			sampled = true
			break
		}
		obj, err := src.object()
		if err == io.EOF {
			break
		} else if err != nil {
			return nil, err
		}
		n++
		for _, m := range obj {
			i, ok := src.index[m.key]
			if !ok {
				if len(keys) == MaxColumns {
					return nil, tooManyColumns(fmt.Sprintf("the objects have more than %d distinct keys", MaxColumns), src.cur)
				}
				i = len(keys)
				src.index[m.key] = i
				keys = append(keys, m.key)
				st = append(st, colState{})
			}
			if st[i].lastRow != n { // a duplicate key counts once
				st[i].lastRow = n
				st[i].present++
			} else if st[i].rowNull {
				// The reader keeps a duplicate key's last value: an earlier null is not one
				// (FuzzJSON: [{"a": null, "a": ""}] counted a NULL the table did not get).
				// Its type was merged in, which only widens.
				st[i].nulls--
			}
			st[i].json(m.val)
		}
	}
	for i := range st {
		st[i].nulls += n - st[i].present // missing keys are NULL
	}
	s := &Schema{Format: f, Columns: columns(keys), Rows: n, Sampled: sampled}
	finish(s, st)
	return s, nil
}

// colState is what inference keeps per column.
type colState struct {
	t       Type
	notBits bool // an integer other than 0 and 1 was seen
	nulls   int64
	maxLen  int   // in characters
	present int64 // JSON: objects having the key
	lastRow int64
	rowNull bool // JSON: the key's value in row lastRow is null
}

// text observes a CSV field ("" is NULL).
func (s *colState) text(v string) {
	if v == "" {
		s.nulls++
		return
	}
	s.length(v)
	if s.t != Text {
		s.merge(Kind(v), v == "0" || v == "1")
	}
}

// json observes a JSON value. Strings are text unless they are dates, timestamps or UUIDs,
// which JSON cannot express otherwise; "42" or "true" in quotes stay text because the
// producer chose a string. Numbers 0 and 1 are never booleans.
func (s *colState) json(v any) {
	s.rowNull = v == nil
	switch x := v.(type) {
	case nil:
		s.nulls++
	case bool:
		s.merge(Boolean, false)
	case json.Number:
		s.length(string(x))
		switch k := Kind(string(x)); {
		case k == Integer || k == BigInt:
			s.merge(k, false)
		case !numericFits(string(x)):
			s.merge(Text, false) // past numeric's range: only text holds it
		default:
			s.merge(Numeric, false)
		}
	case string:
		s.length(x)
		if s.t == Text {
			return
		}
		k := Kind(x)
		if k != Date && k != Timestamptz && k != UUID {
			k = Text
		}
		s.merge(k, false)
	case map[string]any:
		s.merge(JSONB, false)
	case []any:
		s.merge(arrayKind(x), false)
	}
}

func (s *colState) length(v string) {
	if len(v) > s.maxLen { // the rune count is at most the byte length
		s.maxLen = max(s.maxLen, utf8.RuneCountInString(v))
	}
}

// merge widens the column with a value of kind k. A column of 0/1 alone stays integer (it
// may be a count that happens to be small), but 0/1 next to true/false/yes/no are booleans.
func (s *colState) merge(k Type, bit bool) {
	wasBits := !s.notBits
	if (k == Integer || k == BigInt || k == Numeric) && !bit {
		s.notBits = true
	}
	switch {
	case s.t == Boolean && bit:
	case s.t == Integer && k == Boolean && wasBits:
		s.t = Boolean
	default:
		s.t = Widen(s.t, k)
	}
}

// arrayKind is the type of a JSON array: an array of its scalars' widened type (integers as
// bigint), jsonb when they are of different kinds or nested.
func arrayKind(x []any) Type {
	e := Unknown
	for _, v := range x {
		var k Type
		switch y := v.(type) {
		case nil:
			continue
		case bool:
			k = Boolean
		case json.Number:
			if k = Kind(string(y)); k == Integer {
				k = BigInt
			} else if !numericFits(string(y)) {
				k = Text
			} else if k != BigInt {
				k = Numeric
			}
		case string:
			k = Text
		default:
			return JSONB
		}
		if e != Unknown && k != e {
			if k = Widen(e, k); k == Text {
				return JSONB
			}
		}
		e = k
	}
	return ArrayOf(e)
}

// finish sets the columns' types and statistics from their states. A column with only
// NULLs (or only empty arrays) gets text (text[]), which holds anything added later.
func finish(s *Schema, st []colState) {
	for i := range s.Columns {
		c, x := &s.Columns[i], st[i]
		switch c.Type = x.t; c.Type {
		case Unknown:
			c.Type = Text
		case anyArray:
			c.Type = TextArray
		}
		c.Nullable, c.NullCount = x.nulls > 0, x.nulls
		if c.Type == Text {
			c.MaxLength = x.maxLen
		}
	}
}
