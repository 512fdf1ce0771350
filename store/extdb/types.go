package extdb

import (
	"bytes"
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
	"time"

	"dataplatform/store/ingest"
)

// pgType maps a PostgreSQL type (as format_type names it) to the type of the foreign
// table's column. Types without a counterpart (bytea, inet, interval, time, ...) are read
// as text, which every type converts to.
func pgType(typ string, enum bool) ingest.Type {
	if enum {
		return ingest.Text
	}
	if elem, ok := strings.CutSuffix(typ, "[]"); ok {
		switch t := pgType(elem, false); t {
		case ingest.Text, ingest.Integer, ingest.BigInt, ingest.Numeric, ingest.Boolean, ingest.Date, ingest.Timestamptz, ingest.UUID:
			return ingest.ArrayOf(t)
		}
		return ingest.JSONB
	}
	base, _, _ := strings.Cut(typ, "(")
	switch base {
	case "smallint", "integer":
		return ingest.Integer
	case "bigint":
		return ingest.BigInt
	case "numeric", "real", "double precision", "money":
		if base == "money" {
			return ingest.Text
		}
		return ingest.Numeric
	case "boolean":
		return ingest.Boolean
	case "date":
		return ingest.Date
	case "timestamp with time zone", "timestamp without time zone", "timestamp":
		return ingest.Timestamptz
	case "uuid":
		return ingest.UUID
	case "json", "jsonb":
		return ingest.JSONB
	}
	if strings.HasPrefix(typ, "timestamp") {
		return ingest.Timestamptz
	}
	return ingest.Text
}

// mysqlType maps a MySQL or MariaDB column (information_schema's data_type and
// column_type) to the type of the foreign table's column.
func mysqlType(dataType, colType string) ingest.Type {
	unsigned := strings.Contains(colType, "unsigned")
	switch dataType {
	case "tinyint":
		if strings.HasPrefix(colType, "tinyint(1)") {
			return ingest.Boolean
		}
		return ingest.Integer
	case "bool", "boolean":
		return ingest.Boolean
	case "smallint", "mediumint":
		return ingest.Integer
	case "int", "integer":
		if unsigned {
			return ingest.BigInt
		}
		return ingest.Integer
	case "bigint":
		if unsigned {
			return ingest.Numeric
		}
		return ingest.BigInt
	case "decimal", "numeric", "float", "double", "real":
		return ingest.Numeric
	case "date":
		return ingest.Date
	case "datetime", "timestamp":
		return ingest.Timestamptz
	case "json":
		return ingest.JSONB
	}
	return ingest.Text
}

var varcharRe = regexp.MustCompile(`^character varying\((\d+)\)$`)

func varcharLen(typ string) int {
	if m := varcharRe.FindStringSubmatch(typ); m != nil {
		n, _ := strconv.Atoi(m[1])
		return n
	}
	return 0
}

var (
	castRe   = regexp.MustCompile(`^(.*)::[a-z_ ."]+(\[\])?$`)
	numberRe = regexp.MustCompile(`^-?[0-9]+(\.[0-9]+)?$`)
)

// literalDefault is a column default that is a constant (a string, number or boolean), as
// JSON; expressions such as nextval(...) or now() are not defaults a client can know.
func literalDefault(expr string) (json.RawMessage, bool) {
	s := strings.TrimSpace(expr)
	for {
		m := castRe.FindStringSubmatch(s)
		if m == nil {
			break
		}
		s = strings.TrimSpace(m[1])
	}
	if strings.HasPrefix(s, "(") && strings.HasSuffix(s, ")") {
		s = strings.TrimSpace(s[1 : len(s)-1])
	}
	switch {
	case len(s) >= 2 && s[0] == '\'' && s[len(s)-1] == '\'':
		b, _ := json.Marshal(strings.ReplaceAll(s[1:len(s)-1], "''", "'"))
		return b, true
	case numberRe.MatchString(s):
		return json.RawMessage(s), true
	case strings.EqualFold(s, "true") || strings.EqualFold(s, "false"):
		return json.RawMessage(strings.ToLower(s)), true
	case s == "" || strings.EqualFold(s, "null") || strings.ContainsAny(s, "() ") || strings.HasPrefix(strings.ToUpper(s), "CURRENT_"):
		return nil, false
	}
	// MySQL 8 shows string defaults without quotes.
	b, _ := json.Marshal(s)
	return b, true
}

// pgDefault is a PostgreSQL column default (as pg_get_expr shows it) as the JSON value of a
// column of type t: a jsonb or json document as itself, an array literal as an array, a
// timestamp in RFC 3339 (UTC), a number or boolean as such, other text as a string. expr is
// true for an expression the database evaluates on each insert (now(), nextval(...),
// gen_random_uuid(), ARRAY[...]); a constant the type cannot express answers nil, false.
func pgDefault(def string, t ingest.Type) (v json.RawMessage, expr bool) {
	s := strings.TrimSpace(def)
	for { // casts and parentheses around the constant: ('-1'::integer)
		if m := castRe.FindStringSubmatch(s); m != nil {
			s = strings.TrimSpace(m[1])
		} else if len(s) >= 2 && s[0] == '(' && s[len(s)-1] == ')' {
			s = strings.TrimSpace(s[1 : len(s)-1])
		} else {
			break
		}
	}
	var text string
	switch {
	case len(s) >= 2 && s[0] == '\'' && s[len(s)-1] == '\'' && !strings.Contains(strings.ReplaceAll(s[1:len(s)-1], "''", ""), "'"):
		text = strings.ReplaceAll(s[1:len(s)-1], "''", "'")
	case numberRe.MatchString(s), strings.EqualFold(s, "true"), strings.EqualFold(s, "false"):
		text = strings.ToLower(s)
	default:
		return nil, true
	}
	if t.IsArray() {
		elems, ok := pgArray(text)
		if !ok {
			return nil, false
		}
		out := make([]json.RawMessage, len(elems))
		for i, e := range elems {
			if e == nil {
				out[i] = json.RawMessage("null")
			} else if out[i] = pgScalar(*e, t.Elem()); out[i] == nil {
				return nil, false
			}
		}
		b, _ := json.Marshal(out)
		return b, false
	}
	return pgScalar(text, t), false
}

// pgScalar is the text of a constant as the JSON value of a column of type t, or nil.
func pgScalar(text string, t ingest.Type) json.RawMessage {
	switch t {
	case ingest.JSONB:
		var b bytes.Buffer
		if json.Compact(&b, []byte(text)) != nil {
			return nil
		}
		return b.Bytes()
	case ingest.Integer, ingest.BigInt:
		if _, err := strconv.ParseInt(text, 10, 64); err != nil {
			return nil
		}
		return json.RawMessage(text)
	case ingest.Numeric:
		if !numberRe.MatchString(text) {
			return nil // NaN, Infinity
		}
		return json.RawMessage(text)
	case ingest.Boolean:
		b, err := strconv.ParseBool(text)
		if err != nil {
			return nil
		}
		return json.RawMessage(strconv.FormatBool(b))
	case ingest.Date:
		if _, err := time.Parse(time.DateOnly, text); err != nil {
			return nil
		}
	case ingest.Timestamptz:
		at, ok := pgTimestamp(text)
		if !ok {
			return nil
		}
		text = at.UTC().Format(time.RFC3339Nano)
	}
	b, _ := json.Marshal(text)
	return b
}

// pgTimestamp reads a timestamp as PostgreSQL writes it (ISO DateStyle); without a zone, UTC.
func pgTimestamp(s string) (time.Time, bool) {
	for _, layout := range []string{"2006-01-02 15:04:05.999999999Z07", "2006-01-02 15:04:05.999999999Z07:00",
		"2006-01-02 15:04:05.999999999Z07:00:00", "2006-01-02 15:04:05.999999999", time.RFC3339Nano} {
		if at, err := time.Parse(layout, s); err == nil {
			return at, true
		}
	}
	return time.Time{}, false
}

// pgArray splits a one-dimensional array literal ({a,"b c",NULL}) into its elements (nil
// for NULL); false for anything else (several dimensions, bounds).
func pgArray(s string) ([]*string, bool) {
	if len(s) < 2 || s[0] != '{' || s[len(s)-1] != '}' {
		return nil, false
	}
	s = s[1 : len(s)-1]
	var out []*string
	for i := 0; i < len(s); {
		var b strings.Builder
		quoted := s[i] == '"'
		if quoted {
			i++
			for ; i < len(s) && s[i] != '"'; i++ {
				if s[i] == '\\' && i+1 < len(s) {
					i++
				}
				b.WriteByte(s[i])
			}
			if i >= len(s) {
				return nil, false
			}
			i++
		} else {
			for ; i < len(s) && s[i] != ','; i++ {
				if s[i] == '{' || s[i] == '"' || s[i] == '\\' {
					return nil, false
				}
				b.WriteByte(s[i])
			}
		}
		e := b.String()
		if quoted || !strings.EqualFold(e, "NULL") {
			out = append(out, &e)
		} else {
			out = append(out, nil)
		}
		if i < len(s) {
			if s[i] != ',' {
				return nil, false
			}
			i++
			if i == len(s) {
				return nil, false
			}
		}
	}
	return out, true
}

var enumRe = regexp.MustCompile(`'((?:[^']|'')*)'`)

func enumLabels(colType string) []string {
	var out []string
	for _, m := range enumRe.FindAllStringSubmatch(colType, -1) {
		out = append(out, strings.ReplaceAll(m[1], "''", "'"))
	}
	return out
}

var (
	// CHECK ((age >= 0)), CHECK ((price < 100.5)), MySQL's `age` >= 0
	checkBound = regexp.MustCompile(`^\(*[` + "`" + `"]?([A-Za-z_][A-Za-z0-9_]*)[` + "`" + `"]?\)* *(>=|>|<=|<) *\(*'?(-?[0-9]+(?:\.[0-9]+)?)'?(?:::[a-z ]+)?\)*$`)
	// CHECK ((char_length(name) >= 1)), CHECK ((length((code)::text) <= 5))
	checkLength = regexp.MustCompile(`^\(*(?:char_length|length|character_length)\(\(*[` + "`" + `"]?([A-Za-z_][A-Za-z0-9_]*)[` + "`" + `"]?\)*(?:::text)?\) *(>=|<=) *([0-9]+)\)*$`)
	// CHECK ((email ~ '^[^@]+@'::text)), MySQL's `code` regexp '^[A-Z]+$'
	checkPattern = regexp.MustCompile(`^\(*[` + "`" + `"]?([A-Za-z_][A-Za-z0-9_]*)[` + "`" + `"]?\)*(?:::text)? *(?:~|regexp|REGEXP|rlike|RLIKE) *'((?:[^']|'')*)'(?:::text)?\)*$`)
)

// applyChecks maps the CHECK constraints of a table that bound one column (a comparison
// with a number, a length bound, a regular expression) to that column's minimum, maximum,
// min_length, max_length or pattern. Others stay only in Table.Checks.
func applyChecks(t *Table) {
	for _, def := range t.Checks {
		expr := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(def), "CHECK"))
		if m := checkBound.FindStringSubmatch(expr); m != nil {
			c := t.lookup(m[1])
			if c == nil {
				continue
			}
			v, err := strconv.ParseFloat(m[3], 64)
			if err != nil {
				continue
			}
			switch m[2] {
			case ">=", ">":
				c.constraints().Minimum = &v
			default:
				c.constraints().Maximum = &v
			}
		} else if m := checkLength.FindStringSubmatch(expr); m != nil {
			c := t.lookup(m[1])
			if c == nil {
				continue
			}
			n, _ := strconv.Atoi(m[3])
			if m[2] == ">=" {
				c.constraints().MinLength = &n
			} else if c.constraints().MaxLength == nil {
				c.constraints().MaxLength = &n
			}
		} else if m := checkPattern.FindStringSubmatch(expr); m != nil {
			if c := t.lookup(m[1]); c != nil {
				c.constraints().Pattern = strings.ReplaceAll(m[2], "''", "'")
			}
		}
	}
}

func (t *Table) lookup(name string) *Column {
	for i := range t.Columns {
		if t.Columns[i].Original == name {
			return &t.Columns[i]
		}
	}
	return nil
}

// PGType is the platform's column type for a PostgreSQL type as format_type names it (the
// columns of a saved view, say).
func PGType(typ string) ingest.Type { return pgType(typ, false) }
