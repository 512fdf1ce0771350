package nlsql

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"dataplatform/store/ingest"

	"dataplatform/store/nlsql/lexicon"
)

// A table with a price per unit and a quantity but no amount of its own (line items with a
// unit price and a quantity, no line total) has a value nonetheless: price × quantity. The
// engine adds it to such a table as a computed column named "value", so that "total value",
// "average claim amount" or "average purchase value" are computed and said to be computed,
// rather than refused or, worse, read as a sum or an average of the unit price.

// computedValue is the name of the computed column.
const computedValue = "value"

// withComputedValues is s with the computed value column on each table that has exactly one
// price per unit, exactly one quantity and no amount, value or total column. It copies what
// it changes: the caller's schema is not modified.
func withComputedValues(s Schema) Schema {
	var tables []Table
	for i, t := range s.Tables {
		price, qty, ok := pricePair(&t)
		if !ok || parentHasValue(s, t.Ref) {
			continue
		}
		if tables == nil {
			tables = slices.Clone(s.Tables)
		}
		cols := slices.Clip(slices.Clone(t.Columns))
		cols = append(cols, Column{Name: computedValue, Label: "value (" + price + " × " + qty + ")", Type: ingest.Numeric, Role: ingest.RoleAmount, product: []string{price, qty}})
		tables[i].Columns = cols
	}
	if tables != nil {
		s.Tables = tables
	}
	return s
}

// parentHasValue reports whether a table that ref's rows belong to has an amount of its own
// (orders with a total, over order lines with a unit price): that amount is the value asked
// for, not one computed from the lines.
func parentHasValue(s Schema, ref string) bool {
	for _, r := range s.Relations {
		if r.From != ref {
			continue
		}
		if t := s.table(r.To); t != nil {
			if _, _, ok := pricePair(t); !ok && slices.ContainsFunc(t.Columns, func(c Column) bool {
				return c.numeric() && !c.perUnit() && slices.ContainsFunc(words(c.Name), func(w string) bool {
					return w == "amount" || w == "total" || w == "subtotal" || w == "revenue" || w == "value"
				})
			}) {
				return true
			}
		}
	}
	return false
}

// pricePair is a table's one price per unit and one quantity, when it has no amount.
func pricePair(t *Table) (price, qty string, ok bool) {
	for _, c := range t.Columns {
		if !c.numeric() || keyLike(c.Name) {
			continue
		}
		ws := words(c.Name)
		has := func(class string) bool {
			set := lexicon.Class(class)
			return slices.ContainsFunc(ws, func(x string) bool { return set[x] })
		}
		switch {
		case c.Name == computedValue || !c.perUnit() && has("whole-value"):
			return "", "", false // the rows have a value of their own
		case c.perUnit() && (has("unit-price") || has("unit-word") && has("unit-cost")):
			if price != "" {
				return "", "", false
			}
			price = c.Name
		case has("unit-count"):
			if qty != "" {
				return "", "", false
			}
			qty = c.Name
		}
	}
	return price, qty, price != "" && qty != ""
}

// computedExpr is the SQL of a computed column of table ref, or "".
func (q *query) computedExpr(c colRef) string {
	col := q.column(c)
	if col != nil && col.Measure != nil {
		return ingest.MeasureValue(*col.Measure, col.MeasureOfTimes, quote(alias(c.table))+".")
	}
	if col == nil || len(col.product) != 2 {
		return ""
	}
	a := quote(alias(c.table))
	return "(" + a + "." + quote(col.product[0]) + " * " + a + "." + quote(col.product[1]) + ")"
}

// readComputed states a computed value the reading uses, and reads "average purchase value"
// (the value of a row of another table, made of the computed table's rows) as the average
// over those rows of their totals.
func (q *query) readComputed() error {
	if q.measure == nil {
		return nil
	}
	col := q.column(*q.measure)
	if col == nil || len(col.product) != 2 {
		return nil
	}
	t := q.p.s.table(q.measure.table)
	q.p.assume("the value of a row of %s is %s × %s (it has no amount column): computed", t.Dataset, q.label(colRef{t.Ref, col.product[0]}),
		q.label(colRef{t.Ref, col.product[1]}))
	for _, m := range q.ms {
		if m.table != q.measure.table || m.column != q.measure.column {
			continue
		}
		// "purchase value", "value of purchases": the value of a row of the table named just
		// before or after "of"
		e := ""
		for _, n := range q.ms {
			if (n.end == m.pos || n.pos == m.end+1 && q.tok(m.end) == "of") && n.column == "" && n.value == "" && n.table != m.table &&
				q.relation(m.table, n.table) != nil {
				e = n.table
			}
		}
		perAgg := q.agg == Avg || q.agg == Min || q.agg == Max
		if e == "" && perAgg && !q.rows && len(q.groups) > 0 && q.groups[0].entity != "" && !q.share && q.limit == 0 {
			// "average value per purchase": of each purchase, when purchases are what the
			// rows make up; per client (two steps away) it could be of a line or of a purchase
			g := q.groups[0].entity
			if q.relation(m.table, g) == nil || len(q.groups) > 2 || len(q.groups) == 2 && q.groups[1].entity != g {
				return q.p.refuse(fmt.Sprintf("it asks for the %s value per %s, and a value is computed for each row of %s: of one of them, or of what they make up?",
					q.agg.Noun(), ingest.Singular(alias(g)), t.Dataset), "Total value per "+ingest.Singular(alias(g)))
			}
			q.groups = nil
			e = g
		}
		if e == "" && perAgg && !q.namesTable(t.Ref) {
			// "average value by channel": of a line item, or of a purchase? The rows the
			// value is computed for must be named.
			l := strings.ToLower(t.Dataset)
			return q.p.refuse(fmt.Sprintf("it asks for the %s value, and a value is computed for each row of %s: name them, or what they make up", q.agg.Noun(), t.Dataset),
				strings.TrimSpace(fmt.Sprintf("%s value of %s %s", q.agg.Noun(), l, q.groupPhrase())))
		}
		if e != "" && !perAgg {
			if err := q.reach(e); err != nil { // "total value of purchases": the same total
				return err
			}
		}
		if e != "" && perAgg && !q.rows && len(q.groups) > 0 {
			// "average purchase value by channel": of each purchase's total, per channel
			// (never of each line's value)
			return q.perEntityGroups(e)
		}
		if e == "" || q.rows || len(q.groups) > 0 || !perAgg || q.share || q.limit > 0 {
			continue
		}
		q.perEntity = q.agg
		q.agg = Sum
		if err := q.entityGroup(e); err != nil {
			return err
		}
		q.p.step("Totalled the value of each %s, then took the %s over them", ingest.Singular(alias(e)), q.perEntity.Noun())
	}
	return nil
}

// perEntityGroups reads an average (highest, lowest) of the value of table e's rows, each
// made of the computed table's rows, by groups that are e's own columns or its one side's
// ("average purchase value by channel", "per client"): totalled per row of e with its groups,
// then the aggregate over those totals per group. A group e does not determine (a column of
// the lines) is refused.
func (q *query) perEntityGroups(e string) error {
	p := q.p
	outer := q.groups
	for _, g := range outer {
		if g.col.table != e && !slices.Contains(q.pathFrom(e, g.col.table), g.col.table) {
			return p.refuse(fmt.Sprintf("it asks for the %s value of a %s by %s, which one %s does not have one of", q.agg.Noun(), ingest.Singular(alias(e)), g.label,
				ingest.Singular(alias(e))), fmt.Sprintf("%s value of %s %s", q.agg.Noun(), strings.ToLower(p.s.table(q.measure.table).Dataset), q.groupPhrase()))
		}
	}
	if q.share || q.avgCount || q.everyEntity || len(q.having) > 0 || len(q.also) > 0 {
		return p.refuse(fmt.Sprintf("it asks for the %s value of a %s by groups with something this engine does not combine with it", q.agg.Noun(), ingest.Singular(alias(e))))
	}
	q.perEntity, q.agg = q.agg, Sum
	q.outerGroups, q.outerOrder, q.outerLimit = len(outer), q.order, q.limit
	q.groups, q.order, q.limit = nil, "", 0
	if err := q.entityGroup(e); err != nil {
		return err
	}
	seen := map[string]bool{}
	for _, g := range q.groups {
		seen[g.alias] = true
	}
	for _, g := range outer {
		if seen[g.alias] {
			if g.entity == e {
				q.outerGroups-- // the entity's own key or name: grouped already
				continue
			}
			return p.refuse("it asks for the " + q.perEntity.Noun() + " value by two columns of one name")
		}
		seen[g.alias] = true
		q.groups = append(q.groups, g)
	}
	if q.outerGroups != len(outer) {
		return p.refuse(fmt.Sprintf("it asks for the %s value of each %s by %s itself: it is its total", q.perEntity.Noun(), ingest.Singular(alias(e)), ingest.Singular(alias(e))),
			"Total value per "+ingest.Singular(alias(e)))
	}
	p.step("Totalled the value of each %s, then took the %s over them per group", ingest.Singular(alias(e)), q.perEntity.Noun())
	return nil
}

// pathFrom is the tables from table from to ref along many-to-one relationships (one
// shortest chain), or nil.
func (q *query) pathFrom(from, ref string) []string {
	main := q.main
	q.main = from
	defer func() { q.main = main }()
	return q.oneSidePath(ref)
}

// namesTable reports whether the question names table ref itself.
func (q *query) namesTable(ref string) bool {
	return slices.ContainsFunc(q.ms, func(m mention) bool { return m.table == ref && m.column == "" && m.value == "" })
}

// wrapPerEntity aggregates the per-row totals of sql (grouped by an entity) once more.
func (q *query) wrapPerEntity(sql string) string {
	if q.perEntity == "" {
		return sql
	}
	name := q.aggAlias(string(Sum) + "_" + q.measure.column)
	outName := quote(string(q.perEntity) + "_" + ingest.Singular(alias(q.groups[0].entity)) + "_" + q.measure.column)
	if q.outerGroups == 0 {
		return fmt.Sprintf("SELECT %s(t.%s) AS %s FROM (%s) t", q.perEntity, quote(name), outName, sql)
	}
	var sel, by []string
	for i, g := range q.groups[len(q.groups)-q.outerGroups:] {
		sel = append(sel, "t."+quote(g.alias))
		by = append(by, strconv.Itoa(i+1))
	}
	out := fmt.Sprintf("SELECT %s, %s(t.%s) AS %s FROM (%s) t GROUP BY %s", strings.Join(sel, ", "), q.perEntity, quote(name), outName, sql, strings.Join(by, ", "))
	if q.outerOrder != "" {
		out += " ORDER BY " + outName + " " + strings.ToUpper(q.outerOrder) + " NULLS LAST, " + strings.Join(by, ", ")
	} else {
		out += " ORDER BY " + strings.Join(by, ", ")
	}
	if q.outerLimit > 0 {
		out += " LIMIT " + strconv.Itoa(q.outerLimit)
	}
	return out
}
