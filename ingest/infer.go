package ingest

import (
	"strconv"
	"strings"
	"time"
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
)

var timestampLayouts = []string{time.RFC3339Nano, "2006-01-02 15:04:05.999999999Z07:00", "2006-01-02T15:04:05.999999999",
	"2006-01-02 15:04:05.999999999", "2006-01-02 15:04:05Z07", "2006-01-02T15:04:05Z07"}

// Kind is the narrowest type a single text value has. Booleans are true/false, t/f and
// yes/no; 0 and 1 are integers (a column of flags stays numeric rather than guessing). It runs
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
		case err != nil:
			return Numeric
		case n >= -1<<31 && n < 1<<31:
			return Integer
		default:
			return BigInt
		}
	case 2:
		return Numeric
	}
	if len(v) >= 10 && v[4] == '-' && v[7] == '-' && isDigits(v[:4]) {
		if len(v) == 10 {
			if _, err := time.Parse(time.DateOnly, v); err == nil {
				return Date
			}
		} else if len(v) >= 19 && (v[10] == 'T' || v[10] == ' ') {
			for _, l := range timestampLayouts {
				if _, err := time.Parse(l, v); err == nil {
					return Timestamptz
				}
			}
		}
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

func isDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

func isUUID(v string) bool {
	if len(v) != 36 {
		return false
	}
	for i := 0; i < 36; i++ {
		c := v[i]
		if i == 8 || i == 13 || i == 18 || i == 23 {
			if c != '-' {
				return false
			}
		} else if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
			return false
		}
	}
	return true
}

// Widen is the type that holds values of both a and b.
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
	return Text
}

// Column describes one column of a file and of the dataset table made from it.
type Column struct {
	Name      string `json:"name"`          // identifier in the table
	Original  string `json:"original_name"` // name in the file
	Type      Type   `json:"type"`
	Nullable  bool   `json:"nullable"`
	NullCount int64  `json:"null_count"`
	MaxLength int    `json:"max_length,omitempty"`
}

// Observe widens the column's type with value v ("" is NULL).
func (c *Column) Observe(v string) {
	if v == "" {
		c.Nullable = true
		c.NullCount++
		return
	}
	if c.Type != Text {
		c.Type = Widen(c.Type, Kind(v))
	}
	if n := len(v); n > c.MaxLength {
		c.MaxLength = n
	}
}

// Finish gives columns that held only NULLs the text type.
func Finish(cols []Column) {
	for i := range cols {
		if cols[i].Type == Unknown {
			cols[i].Type = Text
		}
	}
}
