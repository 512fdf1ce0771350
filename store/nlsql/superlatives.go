// Superlatives and recency: "the largest", "top 3 by", "the latest".

package nlsql

import (
	"slices"
	"strings"

	"dataplatform/store/ingest"
)

// applySuperlative makes a superlative order: groups by their aggregate, rows by the measure.
func (q *query) applySuperlative(in intent) error {
	p := q.p
	superlative, supAt := in.superlative, in.supAt
	if superlative != "" && len(q.groups) == 0 && q.agg == "" && q.measure == nil {
		// "which department has the most employees": count the rows of a many-side table
		// per row of the main one
		if m, _ := q.mentionAt(supAt + 1); m != nil && m.column == "" && m.value == "" && (q.relation(m.table, q.main) != nil || q.junction(q.main, m.table) != nil) {
			if len(q.where) > 0 || len(q.exists) > 0 || len(q.joined) > 0 || len(q.having) > 0 || len(q.countRefs) > 0 {
				return p.refuse("it asks for the " + p.toks[supAt] + " " + alias(m.table) + " with conditions this engine does not combine with it")
			}
			one := q.main
			q.main = m.table
			q.agg = Count
			if l := q.junction(one, m.table); l != nil && q.relation(m.table, one) == nil {
				// "which course has the most students": enrollments per course, each student once
				q.main, q.agg, q.measure = l.via, CountDistinct, &colRef{l.via, l.toB.FromColumn}
				q.countRefs[m.table] = true
			}
			p.step("Counted %s per %s instead", p.s.table(q.main).Dataset, singular(alias(one)))
			if err := q.entityGroup(one); err != nil {
				return err
			}
		}
	}
	if superlative != "" && len(q.groups) == 0 && q.agg == "" && q.measure == nil && q.p.toks[0] == "which" {
		// "which customer spent the most": a number of a many-side table, per main row
		c, _ := q.numericAt(supAt + 1)
		for _, m := range q.ms {
			if c == nil && m.column != "" && m.value == "" && (m.end == supAt || m.end == supAt-1 && q.tok(supAt-1) == "the") {
				c, _ = q.numericAt(m.pos) // "spent the most"
			}
		}
		if c != nil && c.table != q.main && q.relation(c.table, q.main) != nil {
			if len(q.where) > 0 || len(q.exists) > 0 || len(q.joined) > 0 || len(q.having) > 0 || len(q.countRefs) > 0 {
				return p.refuse("it asks for the " + p.toks[supAt] + " " + q.label(*c) + " with conditions this engine does not combine with it")
			}
			one := q.main
			q.main = c.table
			p.step("Measured %s per %s instead", p.s.table(c.table).Dataset, singular(alias(one)))
			if err := q.entityGroup(one); err != nil {
				return err
			}
			if err := q.assumeSum(*c, " for each "+singular(alias(one))); err != nil {
				return err
			}
		}
	}
	if superlative != "" && len(q.groups) == 0 && q.agg == NoAgg && q.measure == nil {
		if err := q.largestByParts(supAt); err != nil {
			return err
		}
	}
	if superlative != "" {
		q.order = superlative
		if q.limit == 0 {
			q.limit = 1
		}
		if len(q.groups) == 0 && (q.tok(0) == "what" || q.tok(0) == "what's") && (q.agg == NoAgg || q.agg == Max || q.agg == Min) {
			// "what is the highest credit": the value itself
			if q.measure == nil {
				q.measure = q.superlativeMeasure(supAt)
			}
			if q.measure == nil {
				return p.refuse("it asks for the " + p.toks[supAt] + " but names no number")
			}
			q.agg = extremeOf(superlative)
			q.order, q.limit = "", 0
			p.step("Measure: %s of %s", q.agg, q.labelUnit(*q.measure))
		} else if len(q.groups) == 0 && (q.agg == NoAgg || q.agg == Max || q.agg == Min) {
			if q.measure == nil {
				q.measure = q.superlativeMeasure(supAt)
			}
			if q.measure == nil {
				if err := q.ambiguity(); err != nil {
					return err // "which depot has the most trips", trips by origin or by destination
				}
				return p.refuse("it asks for the " + p.toks[supAt] + " but names no number to order by")
			}
			q.agg, q.rows = "", true
			p.step("Rows ordered by %s, %s first", q.label(*q.measure), map[string]string{"desc": "highest", "asc": "lowest"}[superlative])
		} else if q.agg == "" {
			q.agg = Count
			if m := q.numericNear(supAt + 1); m != nil && m.table == q.main {
				if err := q.assumeSum(*m, " for each group"); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// applyRecency orders rows by their date for "latest", "most recent", "oldest": the one row
// when the dataset is named in the singular ("most recent order"), else the rows.
func (q *query) applyRecency() error {
	p := q.p
	if q.recency == "" {
		return nil
	}
	if q.agg != "" || len(q.groups) > 0 || q.orderBy != nil || q.measure != nil {
		return p.refuse("it asks for the " + p.toks[q.recencyAt] + " rows together with a computation this engine does not combine with it")
	}
	dc := q.dateColumn(q.recencyAt)
	if dc == nil {
		return p.refuse("it asks for the " + p.toks[q.recencyAt] + " rows but no dataset it reads has a date column")
	}
	if dc.table != q.main {
		return p.refuse("it asks for the " + p.toks[q.recencyAt] + " rows by a date of another dataset")
	}
	q.rows, q.orderBy, q.order = true, dc, q.recency
	for _, m := range q.ms {
		if m.table == q.main && m.column == "" && m.value == "" && m.pos > q.recencyAt && singular(p.toks[m.end-1]) == p.toks[m.end-1] && q.limit == 0 {
			q.limit = 1
		}
	}
	p.step("Rows ordered by %s, %s first", q.label(*dc), map[string]string{"desc": "latest", "asc": "earliest"}[q.recency])
	return nil
}

// superlativeMeasure is the number a superlative at token supAt orders by: one named near it,
// else, for "the largest order", the value of the main table's rows (an assumption, stated).
func (q *query) superlativeMeasure(supAt int) *colRef {
	if c := q.numericNear(supAt + 1); c != nil {
		return c
	}
	if q.tableWordColumn(supAt + 1); q.measure != nil {
		return q.measure // "the highest reading" of Readings
	}
	if ms := measureSuperlatives[q.tok(supAt)]; ms.order != "" {
		// "the heaviest shipment": the one number of the main table its word names
		var found *colRef
		for _, c := range q.p.s.table(q.main).Columns {
			if c.numeric() && !keyLike(c.Name) && slices.ContainsFunc(words(c.Name), func(w string) bool { return slices.Contains(ms.words, singular(w)) }) {
				if found != nil {
					return nil
				}
				found = &colRef{q.main, c.Name}
			}
		}
		if found != nil {
			q.p.assume("%q orders by %s", q.tok(supAt), q.label(*found))
		}
		return found
	}
	if m, _ := q.mentionAt(supAt + 1); m != nil && m.table == q.main && m.column == "" && m.value == "" {
		if c := q.defaultNumber(q.main); c != nil {
			return c
		}
		if c := q.p.s.table(q.main).column(computedValue); c != nil && len(c.product) == 2 {
			return &colRef{q.main, computedValue} // "the largest expense claim": its unit cost × units
		}
	}
	return nil
}

// largestByParts reads "the largest purchase" when a purchase has no number of its own and
// its line items have a computed value (price × quantity): each purchase by the total of its
// lines' values. Conditions read before it are on the purchases and are refused.
func (q *query) largestByParts(supAt int) error {
	p := q.p
	m, _ := q.mentionAt(supAt + 1)
	if m == nil || m.table != q.main || m.column != "" || m.value != "" || q.numericNear(supAt+1) != nil || measureSuperlatives[q.tok(supAt)].order != "" {
		return nil
	}
	if c := p.s.table(q.main).column(computedValue); c != nil {
		return nil // the rows' own value
	}
	steps, warnings := len(p.steps), len(p.warnings)
	own := q.defaultNumber(q.main)
	p.steps, p.warnings = p.steps[:steps], p.warnings[:warnings]
	if own != nil {
		return nil
	}
	var parts []string
	for _, t := range p.s.Tables {
		if c := t.column(computedValue); c != nil && len(c.product) == 2 && q.relation(t.Ref, q.main) != nil {
			parts = append(parts, t.Ref)
		}
	}
	if len(parts) != 1 {
		return nil
	}
	one, lines := q.main, strings.ToLower(p.s.table(parts[0]).Dataset)
	if len(q.exists) > 0 || len(q.notExists) > 0 || len(q.joined) > 0 || len(q.having) > 0 || len(q.countRefs) > 0 ||
		slices.ContainsFunc(q.whereOn, func(ref string) bool { return ref != one }) {
		return p.refuse("it asks for the " + p.toks[supAt] + " " + ingest.Singular(alias(one)) + " by the value of its " + lines +
			" with conditions this engine does not combine with it")
	}
	q.main = parts[0] // the conditions read so far are on the purchases, joined to their lines
	if err := q.entityGroup(one); err != nil {
		return err
	}
	q.agg, q.measure = Sum, &colRef{parts[0], computedValue}
	p.assume("the %s %s is the one whose %s have the %s total value (%s has no number of its own)", p.toks[supAt], ingest.Singular(alias(one)),
		lines, map[string]string{"asc": "lowest", "desc": "highest"}[q.order0(supAt)], p.s.table(one).Dataset)
	return nil
}

// order0 is the order a superlative at token supAt asks for.
func (q *query) order0(supAt int) string {
	switch q.tok(supAt) {
	case "lowest", "smallest", "least", "fewest", "cheapest":
		return "asc"
	}
	return "desc"
}
