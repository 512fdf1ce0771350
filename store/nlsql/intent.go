package nlsql

import (
	"fmt"
	"strconv"
	"strings"
)

// intent is what the aggregate and ordering words of a question said, for the phases that
// read the rest of it.
type intent struct {
	signal      bool   // an aggregate or ordering word was read
	countTarget string // the table "how many X" counts
	superlative string // desc ("highest", "most") or asc ("lowest", "fewest"); "" without one
	supAt       int    // the superlative's token
}

// readIntent reads the aggregate and ordering words: counts, totals, averages, extremes, "top N".
func (q *query) readIntent() intent {
	p := q.p
	in := intent{supAt: -1}
	for i := 0; i < len(p.toks); i++ {
		t := p.toks[i]
		if n := q.alsoAggAt(i); n > 0 {
			i += n - 1 // "number of orders and total amount": a second aggregate
			continue
		}
		switch {
		case t == "how" && q.tok(i+1) == "many", t == "number" && q.tok(i+1) == "of", t == "count" && q.agg == NoAgg:
			q.readCount(i, t, &in)
		case aggOf(t) == Sum:
			if q.tok(i+1) == "number" {
				p.mark(i, i+1)
				continue // "total number of": a count
			}
			if q.agg == NoAgg || q.agg == Count && t == "sum" {
				q.agg, in.signal = Sum, true
				p.mark(i, i+1)
				q.byAggregate(i)
				q.measure = q.numericNear(i + 1)
				q.tableWordColumn(i + 1)
			}
		case shareWords[t] && !q.share && !p.inMention[i]:
			q.share, in.signal = true, true
			p.mark(i, i+1)
		case t == "average" && q.tok(i-1) == "on" && q.agg == Count:
			q.avgCount = true // "how many orders per customer on average"
			p.mark(i-1, i+1)
		case aggOf(t) == Avg && q.avgReference(i) > 0:
			continue // "more than twice the average": what is compared with (comparisons)
		case aggOf(t) == Avg:
			q.agg, in.signal = Avg, true
			p.mark(i, i+1)
			q.byAggregate(i)
			q.measure = q.numericNear(i + 1)
			q.tableWordColumn(i + 1)
		case aggOf(t) == Max && q.agg == NoAgg:
			q.agg, in.signal = Max, true
			p.mark(i, i+1)
			q.measure = q.numericNear(i + 1)
			q.tableWordColumn(i + 1)
		case aggOf(t) == Min && q.tok(i-1) != "a" && q.agg == NoAgg:
			q.agg, in.signal = Min, true
			p.mark(i, i+1)
			q.measure = q.numericNear(i + 1)
			q.tableWordColumn(i + 1)
		case t == "latest" || t == "newest" || t == "earliest" || t == "most" && q.tok(i+1) == "recent":
			i = q.readRecency(i, t, &in)
		default:
			q.readRanking(i, t, &in)
		}
	}
	return in
}

// readCount reads "how many", "number of" or "count" at i: what is counted (rows of a
// table, those with a value, or the distinct values of a column).
func (q *query) readCount(i int, t string, in *intent) {
	p := q.p
	q.agg, in.signal = Count, true
	p.mark(i, i+2)
	q.byAggregate(i)
	j := i + 1
	if t == "how" || t == "number" {
		j = i + 2
	}
	if prev := q.tok(i - 1); (t == "number" || t == "count") && aggOf(prev) == Avg {
		q.avgCount = true // "average number of orders per customer"
	}
	if w := q.tok(j); w == "distinct" || w == "different" || w == "unique" {
		p.mark(j, j+1)
		if m, _ := q.mentionAt(j + 1); m != nil && m.column != "" && m.value == "" {
			q.agg, q.measure = CountDistinct, &colRef{m.table, m.column}
		} else if m != nil && m.column == "" && m.value == "" {
			in.countTarget = m.table // "how many distinct customers": each row is one
		}
	} else if m, _ := q.mentionAt(j); m != nil && m.column == "" {
		in.countTarget = m.table
	} else if m != nil && m.value != "" {
		in.countTarget = m.table // "how many managers": rows with that value
		for n := m; n != nil && n.value != ""; {
			if n, _ = q.mentionAt(n.end); n != nil && n.column == "" && n.value == "" {
				in.countTarget = n.table // "how many cardiology visits": visits, of that value
			}
		}
	} else if m != nil && m.column != "" && m.value == "" {
		// "how many cities": the distinct values of a column named alone
		if c := q.column(colRef{m.table, m.column}); c != nil && !c.numeric() && c.Type != "boolean" && !c.temporal() {
			q.agg, q.measure = CountDistinct, &colRef{m.table, m.column}
		} else if c != nil && c.Type == "boolean" {
			in.countTarget = m.table // "how many alerts": rows of is_alert's table
		}
	}
}

// readRecency reads "latest", "newest", "earliest", "most recent" at i (and a count after
// it); it returns the last token it took.
func (q *query) readRecency(i int, t string, in *intent) int {
	p := q.p
	// not "oldest": of people it is their age
	q.recency, q.recencyAt, in.signal = "desc", i, true
	if t == "earliest" {
		q.recency = "asc"
	}
	if t == "most" {
		p.mark(i, i+2)
		i++
	} else {
		p.mark(i, i+1)
	}
	if n, err := strconv.Atoi(q.tok(i + 1)); err == nil && n > 0 {
		q.limit = n // "latest 3 orders"
		p.mark(i+1, i+2)
	}
	return i
}

// readRanking reads the ordering words at i: superlatives, "the 10 ... with the most",
// "top N".
func (q *query) readRanking(i int, t string, in *intent) {
	p := q.p
	switch {
	case (t == "highest" || t == "largest" || t == "biggest" || t == "most" || t == "greatest") && q.tok(i-1) != "at":
		in.superlative, in.supAt, in.signal = "desc", i, true
		p.mark(i, i+1)
	case (t == "lowest" || t == "smallest" || t == "least" || t == "fewest" || t == "cheapest") && q.tok(i-1) != "at":
		in.superlative, in.supAt, in.signal = "asc", i, true
		p.mark(i, i+1)
	case measureSuperlatives[t].order != "" && !p.inMention[i]:
		// "the heaviest shipment": the highest of its weight
		in.superlative, in.supAt, in.signal = measureSuperlatives[t].order, i, true
		p.mark(i, i+1)
	case (t == "common" || t == "frequent" || t == "popular") && (q.tok(i-1) == "most" || q.tok(i-1) == "least"):
		p.mark(i, i+1) // "the most common categories": the most rows
	case q.tok(i-1) == "the" && countWord(t) > 0 && q.superlativeAfter(i):
		// "the 10 customers with the most orders", "the three most common categories"
		q.limit, q.rankAt, in.signal = countWord(t), i, true
		p.mark(i, i+1)
	case t == "top" || t == "first" || t == "bottom":
		if n, err := strconv.Atoi(q.tok(i + 1)); err == nil && n > 0 {
			q.limit, q.order, in.signal = n, "desc", true
			if t == "bottom" {
				q.order = "asc"
			}
			p.mark(i, i+2)
		}
	}
}

// alsoAggAt reads an aggregate after "and" when one was read before it ("number of orders
// and total amount", "average salary and the total budget"): a second aggregate, a column of
// the same answer. It returns how many tokens it took, or 0.
func (q *query) alsoAggAt(i int) int {
	p := q.p
	if q.agg == NoAgg || q.recency != "" {
		return 0
	}
	from := i
	if q.tok(from) == "the" {
		from++
	}
	if q.tok(i-1) != "and" {
		return 0
	}
	switch t := q.tok(from); {
	case t == "number" && q.tok(from+1) == "of" || t == "count" && q.tok(from+1) == "of":
		m, _ := q.mentionAt(from + 2)
		if m == nil || m.column != "" || m.value != "" {
			return 0
		}
		q.also = append(q.also, alsoAgg{agg: Count, at: from})
		p.mark(i-1, from+2)
		p.mark(m.pos, m.end)
		return from + 2 - i
	case aggOf(t).OfNumber() && !(aggOf(t) == Sum && q.tok(from+1) == "number"):
		c, end := q.numericAt(from + 1)
		if c == nil {
			return 0
		}
		q.also = append(q.also, alsoAgg{agg: aggOf(t), measure: c, at: from})
		p.mark(i-1, end)
		return end - i
	}
	return 0
}

// readAlso checks the aggregates asked for besides the first: over the rows the first one
// reads, in a plain or grouped answer; otherwise refused.
func (q *query) readAlso() error {
	p := q.p
	if len(q.also) == 0 {
		return nil
	}
	if q.rows || q.order != "" || q.limit > 0 || q.share || q.avgCount || q.everyEntity || q.perEntity != "" || q.perRow || len(q.having) > 0 ||
		q.agg == NoAgg || len(q.countRefs) > 0 {
		return p.refuse("it asks for two aggregates at once together with something this engine does not combine with them")
	}
	for _, a := range q.also {
		if a.measure == nil {
			if q.agg == CountDistinct {
				return p.refuse("it asks for a count of rows together with a count of distinct values")
			}
			p.step("Also: the count of %s", alias(q.main))
			continue
		}
		if a.measure.table != q.main || q.measure != nil && q.measure.table != q.main {
			// a number of a joined table is repeated on each row of the main one: its total
			// there is not its total
			return p.refuse(fmt.Sprintf("it asks for %s of %s of %s together with an aggregate of %s: ask for each on its own", a.agg.Article(), q.label(*a.measure),
				p.s.table(a.measure.table).Dataset, p.s.table(q.main).Dataset))
		}
		if col := q.column(*a.measure); a.agg == Sum && (col.identifies() || col.perUnit() && col.DefaultAgg != string(Sum)) || col.DefaultAgg == neverCombined {
			return p.refuse(fmt.Sprintf("it asks for %s of %s, which does not combine that way", a.agg.Article(), q.label(*a.measure)),
				strings.TrimSpace("Average "+q.label(*a.measure)+" "+q.groupPhrase()))
		}
		if col := q.column(*a.measure); len(col.product) == 2 {
			p.assume("the value of a row of %s is %s × %s (it has no amount column): computed", p.s.table(q.main).Dataset,
				q.label(colRef{q.main, col.product[0]}), q.label(colRef{q.main, col.product[1]}))
		}
		p.step("Also: %s of %s", a.agg, q.labelUnit(*a.measure))
	}
	return nil
}

// tableWordColumn reads the word after an aggregate that names a table and is also the whole
// name of one of its numbers ("average reading" of Readings' reading) as that number, when no
// number is measured yet.
func (q *query) tableWordColumn(i int) {
	if q.measure != nil {
		return
	}
	m, _ := q.mentionAt(i)
	if m == nil || m.column != "" || m.value != "" || m.end-m.pos != 1 {
		return
	}
	for k := range q.ms {
		if q.ms[k].pos != m.pos {
			continue
		}
		for _, c := range q.p.s.table(m.table).Columns {
			if c.numeric() && !keyLike(c.Name) && len(words(c.Name)) == 1 && close(q.tok(m.pos), c.Name) {
				q.ms[k].column = c.Name
				q.measure = &colRef{m.table, c.Name}
				return
			}
		}
	}
}

// byAggregate reads a "by" just before an aggregate ("top 5 customers by total amount") as
// part of the ordering it states.
func (q *query) byAggregate(i int) {
	if q.tok(i-1) == "by" {
		q.p.mark(i-1, i)
	}
}

// readByMeasure reads "by" a number after an ordering word as what orders, not a group.
func (q *query) readByMeasure(in intent) {
	p := q.p
	// "top 3 cities by revenue", "customers with the highest credit by ...": a "by" naming
	// a number after an ordering word orders by it rather than grouping.
	if q.order != "" || in.superlative != "" {
		for i := 0; i+1 < len(p.toks); i++ {
			if p.toks[i] == "by" {
				if c, end := q.numericAt(i + 1); c != nil {
					if q.measure == nil {
						q.measure = c
					}
					q.byMeasure = true
					p.mark(i, end)
				}
			}
		}
	}
}

// readBareMeasure takes a number named with nothing done to it as the measure.
func (q *query) readBareMeasure(in intent) {
	// A number named with nothing to do to it ("revenue from customers in Berlin") is what
	// is measured (summed by settleMeasure): its table is the main one. Not when it is compared, ordered
	// by, or there is an ordering word.
	if q.agg == "" && in.superlative == "" && q.order == "" {
		for _, m := range q.ms {
			c := colRef{m.table, m.column}
			col := q.column(c)
			if m.column == "" || m.value != "" || col == nil || !col.numeric() || keyLike(c.column) {
				continue
			}
			if w := q.tok(m.end); w == "over" || w == "above" || w == "under" || w == "below" || w == "between" || w == "more" ||
				w == "less" || w == "greater" || w == "at" || w == "of" && isNumber.MatchString(q.tok(m.end+1)) || w == "exceeding" ||
				w == ">" || w == "<" || w == ">=" || w == "<=" || w == "=" {
				continue
			}
			if w := q.tok(m.pos - 1); w == "by" || w == "with" {
				continue
			}
			if _, _, ok := q.presenceAt(m); ok {
				continue // "orders without a discount": a filter
			}
			q.measure = &c
			break
		}
	}
}
