package nlsql

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// The filters of a reading: comparisons with numbers, counts of related rows, known values,
// yes/no columns; and the measure a comparison or a bare number means.

var comparators = []struct {
	words []string
	op    string
}{
	{[]string{"more", "than"}, ">"}, {[]string{"greater", "than"}, ">"}, {[]string{"higher", "than"}, ">"}, {[]string{"over"}, ">"},
	{[]string{"above"}, ">"}, {[]string{"exceeding"}, ">"}, {[]string{">"}, ">"},
	{[]string{"at", "least"}, ">="}, {[]string{"no", "less", "than"}, ">="}, {[]string{"minimum", "of"}, ">="}, {[]string{">="}, ">="},
	{[]string{"less", "than"}, "<"}, {[]string{"fewer", "than"}, "<"}, {[]string{"lower", "than"}, "<"}, {[]string{"under"}, "<"},
	{[]string{"below"}, "<"}, {[]string{"<"}, "<"},
	{[]string{"at", "most"}, "<="}, {[]string{"no", "more", "than"}, "<="}, {[]string{"up", "to"}, "<="}, {[]string{"<="}, "<="},
	{[]string{"exactly"}, "="}, {[]string{"equal", "to"}, "="}, {[]string{"="}, "="},
}

// comparisons reads "over 100", "at least 5", "between 10 and 20" on numbers.
func (q *query) comparisons() error {
	p := q.p
	for i := 0; i < len(p.toks); i++ {
		if p.toks[i] == "between" {
			end, err := q.between(i)
			if err != nil {
				return err
			}
			i = end
			continue
		}
		for _, cmp := range comparators {
			n := len(cmp.words)
			if i+n >= len(p.toks) || !slices.Equal(p.toks[i:i+n], cmp.words) {
				continue
			}
			if done, err := q.compareWithAverage(i, n, cmp.op); done || err != nil {
				if err != nil {
					return err
				}
				break
			}
			v, ok := number(p.toks[i+n])
			if !ok {
				break
			}
			if q.tok(i+n+1) == "or" {
				// "amount over 100 or quantity under 3": either comparison
				end, err := q.orComparison(i, n, cmp.op, v)
				if err != nil {
					return err
				}
				i = end - 1
				break
			}
			p.mark(i, i+n+1)
			// "more than 2 orders": a count of related rows, or of the group.
			if m, _ := q.mentionAt(i + n + 1); m != nil && m.column == "" {
				if err := q.countCondition(m.table, cmp.op, v); err != nil {
					return err
				}
				p.mark(m.pos, m.end)
				break
			}
			if w := q.tok(i + n + 1); w != "" && !stop[w] && !intentWords[w] && units[w] == "" && !isNumber.MatchString(w) {
				if m, _ := q.mentionAt(i + n + 1); m == nil {
					return p.refuse(fmt.Sprintf("it compares %s %s with \"%s\", which is no dataset or column", strings.Join(cmp.words, " "), fmtNum(v), w))
				}
			}
			c, err := q.comparedColumn(i, cmp.words, v)
			if err != nil {
				return err
			}
			if done, err := q.totalCompare(*c, i, cmp.op, v); done || err != nil {
				if err != nil {
					return err
				}
				break
			}
			if err := q.perRowCompare(*c, v); err != nil {
				return err
			}
			q.compared = append(q.compared, *c)
			if err := q.cond(c.table, q.col(*c)+" "+cmp.op+" "+p.param(fmtNum(v))); err != nil {
				return err
			}
			p.step("Filter: %s %s %s", q.label(*c), cmp.op, fmtNum(v))
			break
		}
	}
	return nil
}

// between reads "between A and B" at i as a range of the number column near it; it returns
// the last token it took.
func (q *query) between(i int) (int, error) {
	p := q.p
	a, okA := number(q.tok(i + 1))
	b, okB := number(q.tok(i + 3))
	if !okA || !okB || q.tok(i+2) != "and" || isYear.MatchString(q.tok(i+1)) {
		return i, nil
	}
	c := q.numericNear(i)
	if c == nil {
		c = q.measureOrOnly()
	}
	if c == nil {
		return i, p.refuse("it compares with numbers but names no number column")
	}
	if err := q.perRowCompare(*c, a); err != nil {
		return i, err
	}
	q.compared = append(q.compared, *c)
	if err := q.cond(c.table, q.col(*c)+" BETWEEN "+p.param(fmtNum(a))+" AND "+p.param(fmtNum(b))); err != nil {
		return i, err
	}
	p.mark(i, i+4)
	p.step("Filter: %s between %s and %s", q.label(*c), fmtNum(a), fmtNum(b))
	return i + 3, nil
}

// comparedColumn is the number column a comparison at i (words, then v) is about: the
// number of the table named just before it, else the number column near it or the only one.
func (q *query) comparedColumn(i int, words []string, v float64) (*colRef, error) {
	p := q.p
	var c *colRef
	namedBefore := false
	for k := range q.ms {
		// "orders over 100", "whose orders are over 100": the number of the table
		// named just before
		if (q.ms[k].end == i || q.ms[k].end == i-1 && beWords[q.tok(i-1)]) && q.ms[k].column == "" && q.ms[k].value == "" {
			c, namedBefore = q.defaultNumber(q.ms[k].table), true
			if c == nil {
				return nil, p.refuse(fmt.Sprintf("it compares %s with %s but not which number of them", alias(q.ms[k].table), fmtNum(v)),
					q.numberSuggestions(q.ms[k].table, strings.Join(words, " ")+" "+fmtNum(v))...)
			}
		}
	}
	if c == nil && !namedBefore {
		c = q.numericNear(i)
	}
	if c == nil {
		c = q.measureOrOnly()
	}
	if c == nil {
		return nil, p.refuse("it compares with " + fmtNum(v) + " but names no number column")
	}
	return c, nil
}

// defaultNumber is what a table's rows are compared or summed by when no number is named: its
// only number, or its one money-like number (amount, total, price, revenue); an assumption,
// stated.
func (q *query) defaultNumber(ref string) *colRef {
	// Only a number that is the value of a row stands for it ("orders over 100"): not a
	// percentage, a unit price or a count that happens to be the table's only number.
	var found *colRef
	for _, c := range q.p.s.table(ref).Columns {
		if c.numeric() && !keyLike(c.Name) && !c.perUnit() && slices.ContainsFunc(words(c.Name), func(w string) bool {
			switch w {
			case "amount", "total", "revenue", "value", "cost", "fee", "fees", "sales", "spend", "spent", "paid", "payment", "subtotal", "balance",
				"budget", "salary", "charge", "charges", "price":
				return true
			}
			return false
		}) {
			if found != nil {
				return nil
			}
			found = &colRef{ref, c.Name}
		}
	}
	if found == nil {
		// "readings over 50": the number named as the rows are (reading of Readings)
		t := q.p.s.table(ref)
		for _, c := range t.Columns {
			if ws := words(t.Dataset); c.numeric() && len(ws) > 0 && c.Name == singular(ws[len(ws)-1]) {
				found = &colRef{ref, c.Name}
			}
		}
	}
	if found != nil {
		q.p.assume("%s of %s is meant (the question names no number of %s)", q.label(*found), q.p.s.table(ref).Dataset, alias(ref))
	}
	return found
}

// numberSuggestions rephrase a question with each number of a table named.
func (q *query) numberSuggestions(ref, tail string) []string {
	var out []string
	for _, c := range q.p.s.table(ref).Columns {
		if c.numeric() && !keyLike(c.Name) && len(out) < 4 {
			out = append(out, fmt.Sprintf("%s with %s %s", alias(ref), strings.Join(words(c.Name), " "), tail))
		}
	}
	return out
}

// additive reports whether a number adds up (amount, revenue, quantity): summing it is what a
// question naming it without an aggregate means. Others (temperature, salary, age) are not
// summed without being asked to.
func (q *query) additive(c colRef) bool {
	if col := q.column(c); col != nil && col.DefaultAgg != "" {
		return col.DefaultAgg == string(Sum) // as its owner said
	}
	if q.column(c).perUnit() {
		return false
	}
	for _, w := range words(c.column) {
		switch singular(w) {
		case "amount", "total", "revenue", "sale", "cost", "spend", "spent", "quantity", "qty", "unit", "budget", "price", "fee", "tax",
			"profit", "income", "expense", "payment", "paid", "value", "count", "hour", "minute", "duration", "weight", "volume", "distance":
			return true
		}
	}
	return false
}

// assumeSum sums measure where the question names it without an aggregate, or refuses a
// number that does not add up.
func (q *query) assumeSum(c colRef, why string) error {
	if col := q.column(c); col != nil {
		switch a := Agg(col.DefaultAgg); a {
		case Avg, Min, Max:
			// the owner said how it combines
			q.agg, q.measure = a, &c
			q.p.assume("the %s of %s%s: its default aggregation", a.Noun(), q.label(c), why)
			return nil
		case Sum:
			q.agg, q.measure = Sum, &c
			q.p.assume("the total (sum) of %s%s: its default aggregation", q.label(c), why)
			return nil
		}
	}
	if !q.additive(c) {
		l := q.label(c)
		return q.p.refuse(fmt.Sprintf("it names %s without saying how to combine it (total, average, highest, lowest)", l),
			strings.TrimSpace("Average "+l+" "+q.groupPhrase()), strings.TrimSpace("Maximum "+l+" "+q.groupPhrase()))
	}
	q.agg, q.measure = Sum, &c
	q.p.assume("the total (sum) of %s%s: the question names it without saying how to combine it", q.label(c), why)
	return nil
}

func (q *query) groupPhrase() string {
	if len(q.groups) == 0 {
		return ""
	}
	g := q.groups[0]
	if g.entity != "" {
		return "per " + singular(alias(g.entity))
	}
	return "by " + g.label
}

// orComparison reads two comparisons of numbers joined by "or" ("amount over 100 or quantity
// under 3"), the first's comparator at token i (n words long) and its number v: one condition
// that either meets, on the rows of one dataset. It returns the token after the second.
func (q *query) orComparison(i, n int, op string, v float64) (int, error) {
	p := q.p
	c1 := q.numericNear(i)
	if m, _ := q.mentionAt(i - 1); c1 == nil || m == nil || m.end != i || m.column != c1.column || m.table != c1.table {
		c1 = nil // the number compared must be named just before its comparator
		for _, m := range q.ms {
			if m.end == i && m.column != "" && m.value == "" {
				if col := q.column(colRef{m.table, m.column}); col != nil && col.numeric() {
					c1 = &colRef{m.table, m.column}
				}
			}
		}
	}
	c2, end := q.numericAt(i + n + 2)
	var op2 string
	var v2 float64
	ok2 := false
	if c2 != nil {
		for _, cmp := range comparators {
			k := len(cmp.words)
			if end+k < len(p.toks) && slices.Equal(p.toks[end:end+k], cmp.words) {
				if x, ok := number(p.toks[end+k]); ok {
					op2, v2, ok2 = cmp.op, x, true
					end += k + 1
				}
				break
			}
		}
	}
	if c1 == nil || !ok2 {
		return 0, p.refuse(fmt.Sprintf("it joins a comparison with %s by \"or\" to something that is not a number column compared with a number", fmtNum(v)))
	}
	if c1.table != c2.table {
		return 0, p.refuse(fmt.Sprintf("it joins comparisons of %s and of %s by \"or\": rows of two datasets", p.s.table(c1.table).Dataset, p.s.table(c2.table).Dataset))
	}
	for _, c := range []colRef{*c1, *c2} {
		if err := q.perRowCompare(c, v); err != nil {
			return 0, err
		}
	}
	q.compared = append(q.compared, *c1, *c2)
	if err := q.cond(c1.table, "("+q.col(*c1)+" "+op+" "+p.param(fmtNum(v))+" OR "+q.col(*c2)+" "+op2+" "+p.param(fmtNum(v2))+")"); err != nil {
		return 0, err
	}
	p.mark(i, end)
	p.step("Filter: %s %s %s or %s %s %s", q.label(*c1), op, fmtNum(v), q.label(*c2), op2, fmtNum(v2))
	return end, nil
}

// totalCompare reads "customers who spent more than 200": a number of a many-side table named
// by a verb the main rows did ("spent" of amount) just before the comparison at token i is
// what they did over all their rows: its total per main row, compared. It reports whether it
// read the comparison.
func (q *query) totalCompare(c colRef, i int, op string, v float64) (bool, error) {
	p := q.p
	if c.table == q.main || q.relation(c.table, q.main) == nil || q.namesTable(c.table) {
		return false, nil
	}
	for _, m := range q.ms {
		if m.table != c.table || m.column != c.column || m.end != i || m.synonym == "" || !pastForm(m.synonym) {
			continue
		}
		if w := q.tok(m.pos - 1); w != "who" && w != "that" && w != "which" && !slices.ContainsFunc(q.ms, func(n mention) bool {
			return n.end == m.pos && n.table == q.main && n.column == "" && n.value == "" // "how many customers spent"
		}) {
			continue
		}
		if col := q.column(c); col == nil || !q.additive(c) || len(col.product) == 2 {
			return true, p.refuse(fmt.Sprintf("it compares the %s of each %s with %s, and %s does not add up", m.synonym, singular(alias(q.main)), fmtNum(v), q.label(c)))
		}
		from, on := q.related(c.table)
		q.where = append(q.where, fmt.Sprintf("(SELECT coalesce(sum(%s), 0) FROM %s WHERE %s) %s %s", q.col(c), from, on, op, p.param(fmtNum(v))))
		q.whereOn = append(q.whereOn, q.main)
		q.countRefs[c.table] = true
		q.compared = append(q.compared, c)
		p.mark(m.pos, m.end)
		p.step("Filter: the total %s of each %s's %s %s %s (%q: all they did)", q.label(c), singular(alias(q.main)), alias(c.table), op, fmtNum(v), m.synonym)
		return true, nil
	}
	return false, nil
}

// perRowCompare refuses comparing a number of a many-side table whose rows the question does
// not name: "customers who spent more than 200" could be one order's amount or all of them.
func (q *query) perRowCompare(c colRef, v float64) error {
	if c.table == q.main || q.relation(c.table, q.main) == nil && q.junction(q.main, c.table) == nil {
		return nil
	}
	for _, m := range q.ms {
		if m.table == c.table && m.column == "" && m.value == "" {
			return nil // "customers with orders over 100": an order's amount
		}
	}
	t := q.p.s.table(c.table)
	together := "all of them together"
	if q.column(c).perUnit() {
		together = "their average" // a temperature, a rate: never added up
	}
	return q.p.refuse(fmt.Sprintf("it compares %s of %s with %s without saying whether one of a %s's %s or %s", q.label(c), t.Dataset,
		fmtNum(v), singular(alias(q.main)), alias(c.table), together), fmt.Sprintf("%s with %s over %s", alias(q.main), alias(c.table), fmtNum(v)))
}

func (q *query) measureOrOnly() *colRef {
	if q.measure != nil {
		return q.measure
	}
	return q.onlyNumber(q.main)
}

// countCondition is "with more than N <table>": the rows of a related many-side table per
// main row, or the rows of each group.
func (q *query) countCondition(ref, op string, n float64) error {
	p := q.p
	if ref == q.main {
		q.having = append(q.having, "count(*) "+op+" "+p.param(fmtNum(n)))
		p.step("Keep groups with %s %s %s", op, fmtNum(n), alias(ref))
		return nil
	}
	if q.relation(ref, q.main) == nil && q.junction(q.main, ref) == nil {
		return p.refuse(fmt.Sprintf("%s rows are not counted per %s row (no relationship)", alias(ref), alias(q.main)))
	}
	q.countRefs[ref] = true
	from, on := q.related(ref)
	counted := "*"
	if l := q.junction(q.main, ref); l != nil && q.relation(ref, q.main) == nil {
		counted = "DISTINCT " + quote(alias(ref)) + "." + quote(l.toB.ToColumn) // each related row once
	}
	q.where = append(q.where, fmt.Sprintf("(SELECT count(%s) FROM %s WHERE %s) %s %s", counted, from, on, op, p.param(fmtNum(n))))
	q.whereOn = append(q.whereOn, q.main)
	p.step("Filter: %s with %s %s %s", alias(q.main), op, fmtNum(n), alias(ref))
	return nil
}

func fmtNum(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

// valueFilters turns known values into equality filters (several of one column: IN), with
// "not"/"except" before them as exclusions; boolean columns named alone are true.
func (q *query) valueFilters() error {
	p := q.p
	type key struct {
		c   colRef
		neg bool
	}
	vals := map[key][]string{}
	and := map[key]bool{} // values joined by "and"
	var order []key
	var prev *mention
	prevNeg := false
	for i := range q.ms {
		m := &q.ms[i]
		if m.value == "" {
			continue
		}
		neg := false
		for k := m.pos - 1; k >= 0 && k >= m.pos-3 && !p.inMention[k]; k-- {
			if w := p.toks[k]; w == "not" || w == "except" || w == "excluding" || w == "without" || w == "outside" {
				neg = true
				p.mark(k, k+1)
			}
		}
		joined := ""
		if prev != nil && prev.table == m.table && prev.column == m.column && m.pos == prev.end+1 {
			joined = p.toks[prev.end] // "Austin or Dallas", "Algebra and Poetry"
			if joined == "or" || joined == "and" || joined == "nor" {
				neg = neg || prevNeg // "not in Austin or Dallas": neither
			}
		}
		k := key{colRef{m.table, m.column}, neg}
		if _, ok := vals[k]; !ok {
			order = append(order, k)
		}
		if joined == "and" {
			and[k] = true
		}
		vals[k] = append(vals[k], m.value)
		p.mark(m.pos, m.end)
		prev, prevNeg = m, neg
	}
	for _, k := range order {
		vs := vals[k]
		if len(vs) > 1 && and[k] && k.c.table != q.main && q.relation(q.main, k.c.table) == nil {
			// "students in Algebra and Poetry": both (two rows of courses), or either?
			return p.refuse(fmt.Sprintf("it names %s joined by \"and\": rows of %s with either, or %s with both?", strings.Join(vs, " and "),
				alias(k.c.table), alias(q.main)), fmt.Sprintf("%s in %s or %s", alias(q.main), vs[0], vs[1]))
		}
		var ph []string
		for _, v := range vs {
			ph = append(ph, p.param(v))
		}
		c := q.col(k.c)
		expr := c + " = " + ph[0]
		if len(ph) > 1 {
			expr = c + " IN (" + strings.Join(ph, ", ") + ")"
		}
		if k.neg {
			expr = "(" + c + " IS NULL OR NOT (" + expr + "))"
		}
		if err := q.cond(k.c.table, expr); err != nil {
			return err
		}
		verb := "is"
		if k.neg {
			verb = "is not"
		}
		p.step("Filter: %s %s %s", q.label(k.c), verb, strings.Join(vs, " or "))
	}
	// A boolean column named on its own: "active customers", "not active".
	for _, m := range q.ms {
		if m.column == "" || m.value != "" {
			continue
		}
		c := q.column(colRef{m.table, m.column})
		if c == nil || c.Type != "boolean" || q.isGroup(colRef{m.table, m.column}) {
			continue
		}
		val := "true"
		if w := q.tok(m.pos - 1); w == "not" || w == "non" || w == "in" {
			val = "false"
			p.mark(m.pos-1, m.pos)
		}
		if m.antonym { // "indoor devices": not outdoor
			val = map[string]string{"true": "false", "false": "true"}[val]
		}
		if err := q.cond(m.table, q.col(colRef{m.table, m.column})+" = "+val); err != nil {
			return err
		}
		p.mark(m.pos, m.end)
		p.step("Filter: %s is %s", q.label(colRef{m.table, m.column}), val)
	}
	return nil
}

func (q *query) isGroup(c colRef) bool {
	for _, g := range q.groups {
		if g.col == c && !g.time {
			return true
		}
	}
	return false
}

// averageRef reads what a comparison at token i compares with when it is the average: "the
// average" (1), "twice the average" (2), "3 times the average", "half the average" (0.5);
// it returns the factor and the tokens it takes, or 0.
func (q *query) averageRef(i int) (factor float64, n int) {
	switch k := i; {
	case q.tok(k) == "the" && aggOf(q.tok(k+1)) == Avg:
		return 1, 2
	case q.tok(k) == "twice" && q.tok(k+1) == "the" && aggOf(q.tok(k+2)) == Avg:
		return 2, 3
	case q.tok(k) == "half" && q.tok(k+1) == "the" && aggOf(q.tok(k+2)) == Avg:
		return 0.5, 3
	case isNumber.MatchString(q.tok(k)) && q.tok(k+1) == "times" && q.tok(k+2) == "the" && aggOf(q.tok(k+3)) == Avg:
		f, _ := number(q.tok(k))
		return f, 4
	}
	return 0, 0
}

// avgReference reports the factor of the comparison with the average that the average word
// at token i ends ("more than twice the average"), or 0.
func (q *query) avgReference(i int) float64 {
	for from := i - 1; from >= i-3 && from >= 0; from-- {
		if f, n := q.averageRef(from); f > 0 && from+n == i+1 && q.comparatorBefore(from) {
			return f
		}
	}
	return 0
}

// comparatorBefore reports whether the words just before token i compare ("more than", "above").
func (q *query) comparatorBefore(i int) bool {
	for _, cmp := range comparators {
		n := len(cmp.words)
		if i-n >= 0 && slices.Equal(q.p.toks[i-n:i], cmp.words) {
			return true
		}
	}
	return false
}

// compareWithAverage reads "salary above the average", "readings more than twice the
// average": the number compared with its average over every row of its table, times a factor.
func (q *query) compareWithAverage(i, n int, op string) (bool, error) {
	p := q.p
	f, k := q.averageRef(i + n)
	if f == 0 {
		return false, nil
	}
	end := i + n + k
	var c *colRef
	if m, _ := q.mentionAt(end); m != nil && m.column != "" && m.value == "" {
		c = &colRef{m.table, m.column} // "above the average salary"
		if col := q.column(*c); col == nil || !col.numeric() {
			c = nil
		} else {
			end = m.end
		}
	}
	if c == nil {
		for _, m := range q.ms {
			if (m.end == i || m.end == i-1 && beWords[q.tok(i-1)]) && m.column == "" && m.value == "" {
				c = q.defaultNumber(m.table) // "readings (that are) more than twice the average"
			}
		}
	}
	if c == nil {
		c = q.numericNear(i)
	}
	if c == nil {
		return true, p.refuse("it compares with the average but names no number to compare")
	}
	if c.table != q.main {
		return true, p.refuse(fmt.Sprintf("it compares %s of %s with its average while asking about %s", q.label(*c), q.p.s.table(c.table).Dataset, q.p.s.table(q.main).Dataset))
	}
	expr := q.col(*c)
	var avg string
	if col := q.column(*c); col != nil && len(col.product) == 2 {
		avg = "(SELECT avg(" + quote(col.product[0]) + " * " + quote(col.product[1]) + ") FROM " + c.table + ")"
	} else {
		avg = "(SELECT avg(" + quote(c.column) + ") FROM " + c.table + ")"
	}
	if f != 1 {
		avg = p.param(fmtNum(f)) + " * " + avg
	}
	q.compared = append(q.compared, *c)
	if err := q.cond(c.table, expr+" "+op+" "+avg); err != nil {
		return true, err
	}
	p.mark(i, end)
	times := ""
	if f != 1 {
		times = fmtNum(f) + " times "
	}
	p.step("Filter: %s %s %sits average over all %s", q.label(*c), op, times, alias(c.table))
	return true, nil
}
