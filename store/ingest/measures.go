package ingest

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/lib/pq"
)

// Measure is a named measure of a dataset: "revenue" = sum(price), "duration" =
// avg(ended_at − started_at) in minutes. Its value per record is its column's (Column), or
// that column minus another (Minus: two numbers, two dates — in days —, or two timestamps —
// in Unit, minutes unless said); Aggregation combines the records' values.
type Measure struct {
	Name        string `json:"name"`
	Aggregation string `json:"aggregation"`
	Column      string `json:"column"`
	Minus       string `json:"minus,omitempty"`
	Unit        string `json:"unit,omitempty"`
	Description string `json:"description,omitempty"`
}

// MeasureAggregations are how a measure combines its records' values.
var MeasureAggregations = []string{"sum", "avg", "min", "max"}

// timeUnits are the units of a difference of timestamps, in seconds.
var timeUnits = map[string]int{"seconds": 1, "minutes": 60, "hours": 3600, "days": 86400}

// MeasureError is a measure that cannot be defined on the columns: the field and why.
type MeasureError struct{ Field, Message string }

func (e *MeasureError) Error() string { return e.Field + ": " + e.Message }

// Measures are the named measures of a table's columns, in column order.
func Measures(cols []Column) []Measure {
	var out []Measure
	for _, c := range cols {
		if c.Semantics != nil {
			out = append(out, c.Semantics.Measures...)
		}
	}
	return out
}

// CheckMeasure reports why m cannot be a measure of a table of cols (nil when it can): a
// name of letters, digits and _ that no column or other measure has, an aggregation of
// MeasureAggregations, and columns whose values can be combined that way.
func CheckMeasure(m Measure, cols []Column) error {
	find := func(name string) *Column {
		i := slices.IndexFunc(cols, func(c Column) bool { return c.Name == name })
		if i < 0 {
			return nil
		}
		return &cols[i]
	}
	switch {
	case !measureName(m.Name):
		return &MeasureError{"name", "a measure's name is lower-case letters, digits and _, starting with a letter (at most 63)"}
	case find(m.Name) != nil:
		return &MeasureError{"name", "the dataset has a column " + m.Name + "; a measure needs a name of its own"}
	case slices.ContainsFunc(Measures(cols), func(o Measure) bool { return o.Name == m.Name }):
		return &MeasureError{"name", "the dataset already has a measure " + m.Name}
	case !slices.Contains(MeasureAggregations, m.Aggregation):
		return &MeasureError{"aggregation", "a measure combines its values with one of " + strings.Join(MeasureAggregations, ", ")}
	}
	return CheckMeasureColumns(m, cols)
}

// CheckMeasureColumns reports why m's columns cannot make its value (nil when they can): a
// column that is gone, or types that cannot be combined.
func CheckMeasureColumns(m Measure, cols []Column) error {
	find := func(name string) *Column {
		i := slices.IndexFunc(cols, func(c Column) bool { return c.Name == name })
		if i < 0 {
			return nil
		}
		return &cols[i]
	}
	c := find(m.Column)
	if c == nil {
		return &MeasureError{"column", "the dataset has no column " + m.Column}
	}
	if m.Minus == "" {
		if !c.Type.numeric() {
			return &MeasureError{"column", fmt.Sprintf("%s is %s: a measure adds up or compares numbers (or the difference of two dates or times, with minus)", c.Name, c.Type)}
		}
		if m.Unit != "" {
			return &MeasureError{"unit", "unit is for a difference of times; a column's own unit is taught with alter_column unit"}
		}
		return nil
	}
	o := find(m.Minus)
	switch {
	case o == nil:
		return &MeasureError{"minus", "the dataset has no column " + m.Minus}
	case c.Type.numeric() && o.Type.numeric(), c.Type == Date && o.Type == Date:
		if m.Unit != "" && !(c.Type == Date && m.Unit == "days") {
			return &MeasureError{"unit", "unit is for a difference of timestamps (a difference of dates is in days)"}
		}
	case c.Type == Timestamptz && o.Type == Timestamptz:
		if _, ok := timeUnits[m.Unit]; m.Unit != "" && !ok {
			return &MeasureError{"unit", "a difference of times is in seconds, minutes, hours or days"}
		}
	default:
		return &MeasureError{"minus", fmt.Sprintf("%s (%s) minus %s (%s): a difference is of two numbers, two dates or two timestamps", c.Name, c.Type, o.Name, o.Type)}
	}
	return nil
}

func measureName(s string) bool {
	if s == "" || len(s) > 63 || s[0] < 'a' || s[0] > 'z' || reserved[s] || slices.Contains(MeasureAggregations, s) || s == "count" || s == "count_distinct" {
		return false
	}
	return !strings.ContainsFunc(s, func(r rune) bool { return !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_') })
}

// MeasureValue is the SQL of a measure's value per record, its columns qualified by
// qualifier ("" or a quoted table alias and a dot); times: its columns are timestamps.
func MeasureValue(m Measure, times bool, qualifier string) string {
	a := qualifier + pq.QuoteIdentifier(m.Column)
	if m.Minus == "" {
		return a
	}
	b := qualifier + pq.QuoteIdentifier(m.Minus)
	if times {
		return fmt.Sprintf("(extract(epoch FROM (%s - %s)) / %d)", a, b, timeUnits[cmp.Or(m.Unit, "minutes")])
	}
	return "(" + a + " - " + b + ")"
}

// Role is a measure's role as a number: an amount when it adds up (a sum, or a difference
// such as a duration), else a value (an average price).
func (m Measure) Role() Role {
	if m.Aggregation == "sum" || m.Minus != "" {
		return RoleAmount
	}
	return RoleValue
}

// OfTimes reports whether a measure's value is a difference of two timestamps of cols.
func (m Measure) OfTimes(cols []Column) bool {
	i := slices.IndexFunc(cols, func(c Column) bool { return c.Name == m.Column })
	return m.Minus != "" && i >= 0 && cols[i].Type == Timestamptz
}

// MeasureUnit is the unit of a measure's values: a difference of timestamps' (minutes unless
// said), days for dates, else its column's unit as taught ("" when none).
func MeasureUnit(m Measure, cols []Column) string {
	i := slices.IndexFunc(cols, func(c Column) bool { return c.Name == m.Column })
	switch {
	case i < 0:
		return ""
	case m.Minus != "" && cols[i].Type == Timestamptz:
		return cmp.Or(m.Unit, "minutes")
	case m.Minus != "" && cols[i].Type == Date:
		return "days"
	case cols[i].Semantics != nil:
		return cols[i].Semantics.Unit
	}
	return ""
}

// MeasureExpression is how a measure is written for people: sum(price), avg(ended_at −
// started_at).
func MeasureExpression(m Measure) string {
	v := m.Column
	if m.Minus != "" {
		v += " - " + m.Minus
	}
	return m.Aggregation + "(" + v + ")"
}
