package ingest

import (
	"regexp"
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

var (
	intRe  = regexp.MustCompile(`^[+-]?[0-9]+$`)
	numRe  = regexp.MustCompile(`^[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?$`)
	uuidRe = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)
)

var timestampLayouts = []string{time.RFC3339Nano, "2006-01-02 15:04:05.999999999Z07:00", "2006-01-02T15:04:05.999999999",
	"2006-01-02 15:04:05.999999999", "2006-01-02 15:04:05Z07", "2006-01-02T15:04:05Z07"}

// Kind is the narrowest type a single text value has. Booleans are true/false, t/f and
// yes/no; 0 and 1 are integers (a column of flags stays numeric rather than guessing).
func Kind(v string) Type {
	switch strings.ToLower(v) {
	case "true", "false", "t", "f", "yes", "no":
		return Boolean
	}
	if intRe.MatchString(v) {
		n, err := strconv.ParseInt(v, 10, 64)
		switch {
		case err != nil:
			return Numeric
		case n >= -1<<31 && n < 1<<31:
			return Integer
		default:
			return BigInt
		}
	}
	if numRe.MatchString(v) {
		return Numeric
	}
	if len(v) == 10 && v[4] == '-' && v[7] == '-' {
		if _, err := time.Parse(time.DateOnly, v); err == nil {
			return Date
		}
	}
	if len(v) >= 19 && v[4] == '-' && v[7] == '-' {
		for _, l := range timestampLayouts {
			if _, err := time.Parse(l, v); err == nil {
				return Timestamptz
			}
		}
	}
	if len(v) == 36 && uuidRe.MatchString(v) {
		return UUID
	}
	return Text
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
