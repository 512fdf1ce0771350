package extdb

import (
	"encoding/json"
	"regexp"
	"strconv"
	"strings"

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
