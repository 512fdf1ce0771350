package nlsql

import (
	"fmt"
	"slices"
	"strings"
)

// A column named with "with", "have", "no", "without" or "not" and nothing compared with it
// asks whether rows have a value in it: "patients with no phone" (IS NULL), "orders with a
// discount" (above 0), "purchases that were not shipped" (no shipping date).

var (
	presentWords = map[string]bool{"with": true, "have": true, "has": true, "having": true, "had": true}
	absentWords  = map[string]bool{"no": true, "without": true, "missing": true, "lacking": true, "not": true, "never": true}
	// beWords before a date column's participle ("were shipped") say that it happened
	beWords = map[string]bool{"were": true, "was": true, "been": true, "is": true, "are": true, "be": true, "got": true, "get": true}
)

// presenceAt reads the words before mention m: whether they ask for rows with a value
// (present) or without one, and the first of those words; ok is false when they ask neither.
func (q *query) presenceAt(m mention) (present bool, from int, ok bool) {
	c := q.column(colRef{m.table, m.column})
	if m.column == "" || m.value != "" || c == nil || c.Type == "boolean" || keyLike(m.column) {
		return false, 0, false
	}
	w0 := q.tok(m.pos)
	participle := c.temporal() && m.end-m.pos == 1 && len(w0) > 3 && (strings.HasSuffix(w0, "ed") || strings.HasSuffix(w0, "en"))
	if n, _ := q.mentionAt(m.end); participle && n != nil && n.column == "" && n.value == "" && n.table == m.table && !relationVerbs[q.tok(m.pos)] {
		if absentWords[q.tok(m.pos-1)] {
			return false, m.pos - 1, true // "not shipped purchases"
		}
		return true, m.pos, true // "shipped purchases"
	}
	k := m.pos - 1
	for k >= 0 && (q.tok(k) == "a" || q.tok(k) == "an" || q.tok(k) == "any" || q.tok(k) == "some") {
		k--
	}
	if k < 0 || q.p.inMention[k] {
		return false, 0, false
	}
	w := q.tok(k)
	switch {
	case absentWords[w]:
		return false, k, true
	case presentWords[w]:
		return true, k, true
	case participle && beWords[w]:
		if absentWords[q.tok(k-1)] || q.tok(k-1) == "yet" {
			return false, k - 1, true
		}
		return true, k, true
	case participle && (w == "that" || w == "who" || w == "which") && !relationVerbs[q.tok(m.pos)]:
		return true, k, true
	}
	return false, 0, false
}

// readPresence adds the filters of columns named for whether they have a value.
func (q *query) readPresence() error {
	p := q.p
	for _, m := range q.ms {
		cr := colRef{m.table, m.column}
		present, from, ok := q.presenceAt(m)
		// a column read otherwise is not asked about here, unless it is named twice
		// ("average discount of purchases with a discount")
		if !ok || !q.namedBefore(m) && (q.usedCols[cr] || q.isGroup(cr) || q.measure != nil && *q.measure == cr || q.orderBy != nil && *q.orderBy == cr) {
			continue
		}
		// a value, a number or a comparison after it reads the column otherwise
		if w := q.tok(m.end); isNumber.MatchString(w) || q.valueAt(m.end) {
			continue
		}
		c := q.column(cr)
		if err := q.twoReadings(m, present, from); err != nil {
			return err
		}
		col := q.col(cr)
		var expr, says string
		switch {
		case c.numeric() && present:
			expr, says = col+" > 0", "above 0"
			p.assume("%q means %s above 0", strings.Join(p.toks[from:m.end], " "), q.label(cr))
		case c.numeric():
			expr, says = "("+col+" IS NULL OR "+col+" = 0)", "0 or empty"
			p.assume("%q means %s is 0 or empty", strings.Join(p.toks[from:m.end], " "), q.label(cr))
		case c.Type == "text" && present:
			expr, says = col+" <> ''", "not empty"
		case c.Type == "text":
			expr, says = "("+col+" IS NULL OR "+col+" = '')", "empty"
		case present:
			expr, says = col+" IS NOT NULL", "set"
		default:
			expr, says = col+" IS NULL", "empty"
		}
		if err := q.cond(m.table, expr); err != nil {
			return err
		}
		q.compared = append(q.compared, cr)
		p.mark(from, m.end)
		if !present && q.tok(m.end) == "yet" {
			p.mark(m.end, m.end+1) // "not shipped yet"
		}
		p.step("Filter: %s is %s", q.label(cr), says)
	}
	return nil
}

// namedBefore reports whether the column of mention m is named earlier in the question too.
func (q *query) namedBefore(m mention) bool {
	for _, n := range q.ms {
		if n.pos < m.pos && n.table == m.table && n.column == m.column && n.value == "" {
			return true
		}
	}
	return false
}

// twoReadings refuses a participle that names a date column and is a value of another column
// of its table too: "how many shipments were delivered" is delivered_on set, or the status
// delivered (and a returned shipment was delivered as well). It names both readings.
func (q *query) twoReadings(m mention, present bool, from int) error {
	c := q.column(colRef{m.table, m.column})
	if c == nil || !c.temporal() || m.end-m.pos != 1 {
		return nil
	}
	for _, v := range q.p.shadowed {
		if v.pos != m.pos || v.table != m.table {
			continue
		}
		toks := q.p.toks
		vl, dl := q.label(colRef{v.table, v.column}), q.label(colRef{m.table, m.column})
		asValue := strings.Join(slices.Concat(toks[:m.pos], []string{vl, lower(v.value)}, toks[m.end:]), " ")
		with := "with a"
		if !present {
			with = "without a"
		}
		asDate := strings.Join(slices.Concat(toks[:from], []string{with, dl}, toks[m.end:]), " ")
		return q.p.refuse(fmt.Sprintf("%q reads two ways: %s is %s, or %s is set", toks[m.pos], vl, v.value, dl), asValue, asDate)
	}
	return nil
}
