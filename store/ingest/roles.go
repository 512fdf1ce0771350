package ingest

import (
	"slices"
	"strings"
	"unicode"
)

// Role is what a column is for, to plain-English questions, generated dashboards, MCP and the
// descriptions: whether its values identify, group, place in time, add up or not.
type Role string

const (
	// RoleIdentifier: keys and references (customer_id, sku, order_no, a phone number).
	RoleIdentifier Role = "identifier"
	// RoleCategory: a few distinct values that group the rows (status, region); yes/no.
	RoleCategory Role = "category"
	// RoleTime: a date or a timestamp.
	RoleTime Role = "time"
	// RoleAmount: a number that adds up over rows, what each record is worth or took (a
	// rental's price, an order's total, a salary, a fine, a fee, a weight, a duration).
	RoleAmount Role = "amount"
	// RoleValue: a number that does not add up (a unit price beside a quantity, a rate, a
	// percentage, a score, a rating, an age, a temperature, a coordinate, a year).
	RoleValue Role = "value"
	// RoleCount: a number of things per record (quantity, units, seats, num_items).
	RoleCount Role = "count"
	// RoleText: free text (names, notes, descriptions).
	RoleText Role = "text"
)

// Roles are the roles, in the order the API lists them.
var Roles = []Role{RoleIdentifier, RoleCategory, RoleTime, RoleAmount, RoleValue, RoleCount, RoleText}

// Valid reports whether r is one of Roles.
func (r Role) Valid() bool { return slices.Contains(Roles, r) }

// Adds reports whether the values of a column of the role add up over rows (amounts and
// counts): summing them is a total; averaging the others is what combines them.
func (r Role) Adds() bool { return r == RoleAmount || r == RoleCount }

// RoleColumn is what InferRoles reads of one column.
type RoleColumn struct {
	Name string
	Type Type
	Key  bool // keys the records, or is one end of a relationship
	Enum bool // its values are a known, short list (declared enum, or the values known)
	Set  Role // the role a person set (Semantics.Role): it wins
	// What is known of its values where that is cheap (an analysis's statistics); Rows 0:
	// nothing is known. Min and Max are a number column's range.
	Rows, Distinct, Nulls int64
	Min, Max              *float64
}

// RoleColumns are cols as InferRoles reads them: names, types, keys, declared enums and
// the roles people set; callers add what they know of the values.
func RoleColumns(cols []Column) []RoleColumn {
	out := make([]RoleColumn, len(cols))
	for i, c := range cols {
		out[i] = RoleColumn{Name: c.Name, Type: c.Type, Key: c.Key, Enum: c.Constraints != nil && len(c.Constraints.Enum) > 0}
		if c.Semantics != nil {
			out[i].Set = Role(c.Semantics.Role)
		}
	}
	return out
}

// InferRoles is the role of each column of one table, in order: the one a person set, else
// one inferred from the column's name and type, the other columns of the table, and what is
// known of its values.
//
// The rule for numbers: a name that says per-unit or does-not-add-up (unit_price,
// price_per_night, rate, pct, score, rating, age, temperature, latitude, year …) is a value;
// a number of things (quantity, qty, units, count, seats, num_*, number_of_*) is a count; a
// name like a price (price, cost, fare, fee, charge, rent, value) is an amount — what the
// record earned or cost — unless the table also has a count column, then it is the price of
// one unit: a value (a total_price stays an amount); other money, durations and weights are
// amounts. A number no name says anything of is a value when its values are years or
// fractions between 0 and 1, an identifier when it is a whole number different on every
// one of many rows, and an amount otherwise.
func InferRoles(cols []RoleColumn) []Role {
	counted := false // a count beside a price makes the price per unit
	for _, c := range cols {
		if c.Set == RoleCount || c.Set == "" && c.Type.numeric() && !c.Key && numberCue(nameWords(c.Name)) == RoleCount {
			counted = true
		}
	}
	out := make([]Role, len(cols))
	for i, c := range cols {
		if c.Set.Valid() {
			out[i] = c.Set
			continue
		}
		out[i] = inferRole(c, counted)
	}
	return out
}

func (t Type) numeric() bool { return t == Integer || t == BigInt || t == Numeric }

func inferRole(c RoleColumn, counted bool) Role {
	ws := nameWords(c.Name)
	switch {
	case c.Type == Date || c.Type == Timestamptz:
		return RoleTime
	case c.Type == Boolean:
		return RoleCategory
	case c.Type == UUID || c.Key || identifierName(c.Name, ws):
		return RoleIdentifier
	case c.Type.numeric():
		return numberRole(c, ws, counted)
	case c.Type == Text:
		return textRole(c, ws)
	}
	return RoleText // JSON documents, arrays
}

// priceLike is numberCue's answer for a price-like name: an amount or a value by the table.
const priceLike Role = "price"

func numberRole(c RoleColumn, ws []string, counted bool) Role {
	switch cue := numberCue(ws); cue {
	case priceLike:
		if counted {
			return RoleValue // the price of one unit, beside how many
		}
		return RoleAmount
	case "":
	default:
		return cue
	}
	if c.Rows > 0 && c.Min != nil && c.Max != nil {
		lo, hi := *c.Min, *c.Max
		whole := c.Type != Numeric
		switch {
		case whole && lo >= 1800 && hi <= 2100 && c.Distinct <= 300:
			return RoleValue // years
		case !whole && lo >= 0 && hi <= 1 && hi > 0:
			return RoleValue // shares, probabilities
		case whole && c.Rows > 50 && c.Distinct == c.Rows-c.Nulls:
			return RoleIdentifier // different on every row: a number that identifies
		}
	}
	return RoleAmount
}

// The classes of words.txt that say what a number or a text is. Each word is matched as
// written and in the singular (quantities → quantity), calendar words as written.
var (
	valueWords      = Words("value")
	calendarWords   = Words("calendar")
	countWords      = Words("count")
	countPrefixes   = Words("count-prefix")
	numberPrefixes  = Words("number-prefix")
	perUnitWords    = Words("per-unit")
	priceWords      = Words("price")
	wholeWords      = Words("whole")
	amountWords     = Words("amount")
	identifierWords = Words("identifier")
	freeTextWords   = Words("free-text")
	categoryWords   = Words("category")
)

// hasWord reports whether one of ws is in set, as written or in the singular.
func hasWord(ws []string, set map[string]bool) bool {
	for _, w := range ws {
		if set[w] || set[Singular(w)] {
			return true
		}
	}
	return false
}

// numberCue is what a number's name says it is: RoleValue, RoleCount, priceLike, RoleAmount
// or "" (nothing).
func numberCue(ws []string) Role {
	unit := slices.ContainsFunc(ws, func(w string) bool { return perUnitWords[w] }) // unit_price, unit_cost (but "units" is a count)
	switch {
	case hasWord(ws, valueWords) || slices.ContainsFunc(ws, func(w string) bool { return calendarWords[w] }):
		return RoleValue
	case hasWord(ws, countWords) || len(ws) > 1 && countPrefixes[ws[0]]:
		return RoleCount // quantity, unit_count, num_items, number_of_guests
	case unit:
		return RoleValue
	case hasWord(ws, priceWords) && !hasWord(ws, wholeWords):
		return priceLike
	case hasWord(ws, priceWords) || hasWord(ws, amountWords):
		return RoleAmount
	}
	return ""
}

// identifierName reports whether a column's name names an identifier: customer_id, sku,
// order_no, station_code, customerid (IDStem), a phone number, a zip code; not number_of_...
// (a count).
func identifierName(name string, ws []string) bool {
	if len(ws) == 0 || len(ws) > 1 && numberPrefixes[ws[0]] {
		return false
	}
	if name == "version" || hasWord(ws, identifierWords) {
		return true
	}
	_, ok := IDStem(strings.Join(ws, "_"))
	return ok
}

func textRole(c RoleColumn, ws []string) Role {
	switch {
	case c.Enum:
		return RoleCategory
	case hasWord(ws, freeTextWords):
		return RoleText
	}
	if c.Rows > 0 && c.Distinct > 0 {
		filled := c.Rows - c.Nulls
		if c.Distinct <= 50 && c.Distinct < filled && (filled <= 20 || c.Distinct*2 <= filled) {
			return RoleCategory // few values that repeat
		}
		if hasWord(ws, categoryWords) && c.Distinct*10 <= filled {
			return RoleCategory // city: many values, each on many rows
		}
		return RoleText
	}
	if hasWord(ws, categoryWords) {
		return RoleCategory
	}
	return RoleText
}

// nameWords are the lower-case words a column's name is written with: unit_price,
// "Unit Price" and unitPrice → unit, price.
func nameWords(name string) []string {
	var out []string
	var b strings.Builder
	prevLower := false
	flush := func() {
		if b.Len() > 0 {
			out = append(out, b.String())
			b.Reset()
		}
	}
	for _, r := range name {
		switch {
		case unicode.IsUpper(r):
			if prevLower {
				flush()
			}
			b.WriteRune(unicode.ToLower(r))
			prevLower = false
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
			prevLower = unicode.IsLower(r)
		default:
			flush()
			prevLower = false
		}
	}
	flush()
	return out
}

// Fits reports whether a column of type t can have role r: amounts, values and counts are
// numbers, times dates or timestamps, free text text (or documents); anything can identify
// or group.
func (r Role) Fits(t Type) bool {
	switch r {
	case RoleAmount, RoleValue, RoleCount:
		return t.numeric()
	case RoleTime:
		return t == Date || t == Timestamptz
	case RoleText:
		return t == Text || t == JSONB || t.IsArray()
	}
	return r.Valid()
}
