package nlsql

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// intentWords are words the engine reads as intent rather than names (with every word of
// an aggregate, added from aggs).
var intentWords = map[string]bool{"how": true, "many": true, "number": true,
	"highest": true, "largest": true, "biggest": true, "most": true,
	"lowest": true, "smallest": true, "least": true, "fewest": true, "top": true, "bottom": true, "first": true,
	"distinct": true, "unique": true, "different": true, "over": true, "above": true, "under": true, "below": true, "more": true,
	"less": true, "greater": true, "fewer": true, "lower": true, "higher": true, "between": true, "since": true, "before": true,
	"after": true, "during": true, "sorted": true, "ordered": true, "order": true, "sort": true, "desc": true, "descending": true,
	"asc": true, "ascending": true, "not": true, "except": true, "excluding": true, "without": true, "exceeding": true, "exactly": true,
	"equal": true, "today": true, "yesterday": true, "ago": true, "grouped": true, "broken": true, "down": true, "up": true,
	"no": true, "than": true, ">": true, "<": true, ">=": true, "<=": true, "=": true, "year": true, "month": true, "week": true,
	"day": true, "quarter": true, "years": true, "months": true, "weeks": true, "days": true, "monthly": true, "weekly": true,
	"daily": true, "yearly": true, "quarterly": true, "annually": true, "this": true, "last": true, "past": true, "non": true}

// measureSuperlatives are superlatives that say which number they order by: "heaviest" the
// weight, "longest" the duration or length.
var measureSuperlatives = map[string]struct {
	order string
	words []string
}{"heaviest": {"desc", []string{"weight", "mass"}}, "lightest": {"asc", []string{"weight", "mass"}},
	"longest": {"desc", []string{"duration", "length", "minutes", "hours"}}, "shortest": {"asc", []string{"duration", "length", "minutes", "hours"}}}

// shareWords ask for a part of the rows in percent.
var shareWords = map[string]bool{"share": true, "percentage": true, "percent": true, "proportion": true}

type colRef struct{ table, column string }

// alsoAgg is an aggregate asked for after "and" besides the first: its aggregate and number
// (nil for a count), and its token.
type alsoAgg struct {
	agg     Agg
	measure *colRef
	at      int
}

type group struct {
	expr, alias, label string
	col                colRef
	time               bool
	entity             string // the table whose rows it groups by (its key and display column)
}

type query struct {
	p       *parser
	ms      []mention
	main    string
	joined  map[string]bool   // one-side tables joined to main
	via     map[string]string // a joined table → the table it is joined from (main, or the hop before)
	agg     Agg               // what combines the rows (NoAgg: rows are listed or grouped)
	measure *colRef
	groups  []group
	where   []string
	having  []string
	exists  map[string][]string // many-side table → its conditions
	order   string              // desc or asc (of the aggregate, or of the measure for rows)
	orderBy *colRef             // explicit "sorted by"
	limit   int
	rows    bool // a listing of rows
	// byMeasure: "top 3 cities by revenue": the measure orders the groups (summed)
	byMeasure bool
	compared  []colRef // columns compared with numbers

	usedCols  map[colRef]bool     // the columns the SQL reads
	whereOn   []string            // the table each condition of where is on
	countRefs map[string]bool     // many-side tables counted per main row ("more than 2 orders")
	notExists map[string][]string // many-side table → conditions no row of it may meet
	perRow    bool                // "per order" over orders: each row is one
	avgCount  bool                // "average number of orders per customer"
	share     bool                // "share", "percentage", "percent" of the rows (or of the measure)
	byIndex   bool                // the main table was picked by the search index
	recency   string              // "latest" (desc) or "earliest" (asc) rows by their date
	recencyAt int
	rankAt    int // the count of a ranking without "top" ("the 3 most common ..."), or 0
	// perEntity: the aggregate over per-entity totals of a computed value ("average purchase value")
	perEntity Agg
	// outerGroups: the last groups are the groups of the aggregate over per-entity totals
	// ("average purchase value by channel"), ordered and limited by outerOrder, outerLimit
	outerGroups, outerLimit int
	outerOrder              string
	// actorVerbAt is the verb before a "by" naming who did it ("shipped by Acme"), or -1
	actorVerbAt int
	// verbRead are the verbs read as having related rows ("customers who ordered"): token →
	// the many-side table
	verbRead map[int]string
	// everyEntity: every row of the entity grouped by is ranked, those without rows of the
	// main table included ("customers by number of orders")
	everyEntity bool
	// also are the aggregates asked for besides the first ("number of orders and total
	// amount by channel"), each a column of the answer
	also []alsoAgg

	assumedDate map[colRef]bool // date columns assumed (stated once)
}

// alias is how a table ref is written inside the SQL (its last part).
func alias(ref string) string { return ref[strings.LastIndex(ref, ".")+1:] }

func (q *query) col(c colRef) string {
	if q.usedCols == nil {
		q.usedCols = map[colRef]bool{}
	}
	q.usedCols[c] = true
	if e := q.computedExpr(c); e != "" {
		return e
	}
	return quote(alias(c.table)) + "." + quote(c.column)
}

func (q *query) column(c colRef) *Column {
	if t := q.p.s.table(c.table); t != nil {
		return t.column(c.column)
	}
	return nil
}

func (q *query) label(c colRef) string { return strings.Join(words(c.column), " ") }

// tok is token i, or "" outside the question.
func (q *query) tok(i int) string {
	if i < 0 || i >= len(q.p.toks) {
		return ""
	}
	return q.p.toks[i]
}

// mentionAt is the mention starting at token i (skipping "the"), or nil. A table named
// before one of its columns ("customer city") is that column.
func (q *query) mentionAt(i int) (*mention, int) {
	for q.tok(i) == "the" || q.tok(i) == "a" || q.tok(i) == "each" || q.tok(i) == "their" {
		i++
	}
	for k := range q.ms {
		if q.ms[k].pos == i {
			m := &q.ms[k]
			if m.column == "" && k+1 < len(q.ms) {
				if n := &q.ms[k+1]; n.pos == m.end && n.column != "" && n.value == "" && n.table == m.table {
					return &mention{table: n.table, column: n.column, pos: m.pos, end: n.end}, i
				}
			}
			return m, i
		}
	}
	return nil, i
}

// numericAt is the numeric column mentioned at token i, or nil.
func (q *query) numericAt(i int) (*colRef, int) {
	m, _ := q.mentionAt(i)
	if m == nil || m.column == "" || m.value != "" {
		return nil, 0
	}
	c := colRef{m.table, m.column}
	if col := q.column(c); col == nil || !col.numeric() {
		return nil, 0
	}
	return &c, m.end
}

// numericNear is the numeric column mentioned closest before token i (or after, within 3).
func (q *query) numericNear(i int) *colRef {
	var best *colRef
	for k := range q.ms {
		m := q.ms[k]
		if m.column == "" || m.value != "" {
			continue
		}
		c := q.column(colRef{m.table, m.column})
		if c == nil || !c.numeric() {
			continue
		}
		if m.pos < i || m.pos <= i+3 && best == nil {
			best = &colRef{m.table, m.column}
		}
	}
	return best
}

// intent is what the aggregate and ordering words of a question said, for the phases that
// read the rest of it.
type intent struct {
	signal      bool   // an aggregate or ordering word was read
	countTarget string // the table "how many X" counts
	superlative string // desc ("highest", "most") or asc ("lowest", "fewest"); "" without one
	supAt       int    // the superlative's token
}

// read fills q from the question and its mentions, phase by phase.
func (q *query) read(ms []mention) error {
	q.ms = ms
	q.joined = map[string]bool{}
	q.via = map[string]string{}
	q.exists = map[string][]string{}
	q.countRefs = map[string]bool{}
	q.notExists = map[string][]string{}
	q.actorVerbAt = -1
	in := q.readIntent()
	q.readByMeasure(in)
	if q.measure != nil && q.agg.OfNumber() {
		q.p.step("Measure: %s of %s", q.agg, q.labelUnit(*q.measure))
	}
	q.readBareMeasure(in)
	if err := q.pickMain(in); err != nil {
		return err
	}
	if err := q.readGroups(); err != nil {
		return err
	}
	if err := q.readTopGroups(); err != nil {
		return err
	}
	if err := q.readRankBy(); err != nil {
		return err
	}
	if q.byMeasure && len(q.groups) > 0 && q.agg == "" {
		if err := q.assumeSum(*q.measure, " for each group"); err != nil {
			return err
		}
	}
	for _, g := range q.groups {
		q.p.step("Grouped by %s", g.label)
	}
	if err := q.readSortedBy(); err != nil {
		return err
	}
	if err := q.comparisons(); err != nil {
		return err
	}
	if err := q.timeFilters(); err != nil {
		return err
	}
	if err := q.valueFilters(); err != nil {
		return err
	}
	if err := q.readExistence(); err != nil {
		return err
	}
	if err := q.applySuperlative(in); err != nil {
		return err
	}
	if err := q.applyRecency(); err != nil {
		return err
	}
	if err := q.readPresence(); err != nil {
		return err
	}
	if err := q.settleMeasure(); err != nil {
		return err
	}
	if err := q.checkSynonymMeasure(); err != nil {
		return err
	}
	if err := q.checkMeasure(); err != nil {
		return err
	}
	if err := q.readComputed(); err != nil {
		return err
	}
	return q.readAlso()
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
		if col := q.column(*a.measure); a.agg == Sum && (keyLike(a.measure.column) || perUnit(a.measure.column) && col.DefaultAgg != string(Sum)) || col.DefaultAgg == "none" {
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

// pickMain sets the main table, or refuses a question that names nothing to read.
func (q *query) pickMain(in intent) error {
	p := q.p
	// The main table: what is counted, what is measured, what is named first.
	switch {
	case in.countTarget != "":
		q.main = in.countTarget
	case q.measure != nil:
		q.main = q.measure.table
	default:
		q.main = q.mostNamed()
		if q.main == "" && in.signal {
			q.pickBySearchIndex()
		}
	}
	if q.main == "" {
		return p.refuse("it names no dataset, column or value of this project")
	}
	named := false
	for _, m := range q.ms {
		if m.value == "" {
			named = true
		}
	}
	if !in.signal && !named {
		return p.refuse("only values were recognised (" + q.valuesSeen() + "), not what to compute or list")
	}
	p.step("Dataset: %s", p.s.table(q.main).Dataset)
	return nil
}

// mostNamed is the table the mentions name most (ties: better rank, then named first), or "".
func (q *query) mostNamed() string {
	p := q.p
	main := ""
	score := map[string]int{}
	first := map[string]int{}
	firstTable := true
	for k, m := range q.ms {
		w := 1
		if m.value != "" {
			w = 0 // a value filters whatever is read; it does not say what that is
		}
		if m.column == "" {
			w = 3
			if k+1 < len(q.ms) && q.ms[k+1].pos == m.end && q.ms[k+1].table == m.table && q.ms[k+1].column != "" {
				w = 0 // "customer city": the table qualifies its column
			} else if firstTable {
				w, firstTable = 5, false // the first dataset named is what the question is about
			}
		}
		score[m.table] += w
		if _, ok := first[m.table]; !ok {
			first[m.table] = m.pos
		}
	}
	best := -1
	for _, t := range p.s.Tables {
		s, ok := score[t.Ref]
		if !ok {
			continue
		}
		cur := p.s.table(main)
		if cur == nil || s > best || s == best && first[t.Ref] < first[main] {
			main, best = t.Ref, s
		}
	}
	return main
}

// pickBySearchIndex makes the search index's best match the main table (nothing is named).
func (q *query) pickBySearchIndex() {
	p := q.p
	// Nothing named: the dataset whose name, description or columns the search
	// index matches best ("how many purchases" for orders described as purchases).
	var top *Table
	for i := range p.s.Tables {
		if t := &p.s.Tables[i]; t.Rank > 0 && (top == nil || t.Rank > top.Rank) {
			top = t
		}
	}
	if top != nil {
		q.main, q.byIndex = top.Ref, true
		p.assume("the question is about %s: the search index matches its name, description and columns best", top.Dataset)
	}
}

// settleMeasure decides what is computed where the question left it open, or refuses.
func (q *query) settleMeasure() error {
	p := q.p
	// A number named without an aggregate ("revenue by month", "revenue in March") is summed,
	// unless it is compared or ordered by.
	if q.agg == "" && !q.rows && q.orderBy == nil && !q.byMeasure {
		for _, m := range q.ms {
			c := colRef{m.table, m.column}
			if col := q.column(c); m.column != "" && m.value == "" && col != nil && col.numeric() && !keyLike(c.column) &&
				!slices.Contains(q.compared, c) {
				if err := q.reach(c.table); err != nil {
					return err
				}
				if err := q.assumeSum(c, ""); err != nil {
					return err
				}
				break
			}
		}
	}
	if q.share && q.agg == "" {
		q.agg = Count // "share of orders by channel"
	}
	if q.agg == "" && len(q.groups) == 0 {
		q.rows = true
		if q.limit > 0 && q.measure == nil {
			q.measure = q.numericNear(len(p.toks))
		}
	}
	if q.agg == NoAgg && len(q.groups) > 0 {
		q.agg = Count
	}
	if q.agg.OfNumber() && q.measure == nil {
		if c := q.onlyNumber(q.main); c != nil {
			q.measure = c
			p.assume("the %s of %s: it is the only number of %s", q.agg.Noun(),
				q.label(*c), p.s.table(q.main).Dataset)
		} else {
			return p.refuse("it asks for " + q.agg.Article() +
				" but does not say of which number")
		}
	}
	if q.measure != nil && q.measure.table != q.main {
		if err := q.reach(q.measure.table); err != nil {
			return err
		}
	}
	if q.perRow {
		if q.agg != Avg && q.agg != Min && q.agg != Max || q.rows {
			return p.refuse(fmt.Sprintf("it asks for something per %s, and each row of %s is one %s: say what to compute over them",
				singular(alias(q.main)), p.s.table(q.main).Dataset, singular(alias(q.main))), fmt.Sprintf("Average %s per %s",
				q.labelOr(q.onlyNumber(q.main), "amount"), singular(alias(q.main))))
		}
		p.step("Each %s row is one %s: the %s is over the rows", alias(q.main), singular(alias(q.main)), q.agg)
	}
	if q.avgCount {
		if len(q.groups) == 0 || q.groups[0].entity == "" || len(q.where) > 0 || len(q.exists) > 0 || len(q.notExists) > 0 || len(q.having) > 0 ||
			q.share || q.limit > 0 || q.order != "" {
			return p.refuse("it asks for an average number of rows but not per what, or with conditions this engine does not combine with it")
		}
		for _, g := range q.groups {
			if g.entity != q.groups[0].entity {
				return p.refuse("it asks for an average number of rows per two things at once")
			}
		}
		p.steps = slices.DeleteFunc(p.steps, func(s string) bool { // the average is over the entity itself
			return strings.HasPrefix(s, "Grouped by ") || strings.HasPrefix(s, "Joined ")
		})
		p.step("Counted %s of each %s, averaged over every %s, those with none counting as 0", alias(q.main), singular(alias(q.groups[0].entity)),
			singular(alias(q.groups[0].entity)))
	}
	if q.share {
		if q.rows || q.agg != Count && q.agg != Sum || q.limit > 0 && len(q.groups) == 0 {
			return p.refuse("it asks for a share of something that is not a count or a total")
		}
		if len(q.groups) == 0 && len(q.where) == 0 && len(q.exists) == 0 && len(q.notExists) == 0 {
			return p.refuse("it asks for a percentage but not of which rows (a filter such as a value or a yes/no column)")
		}
	}
	return nil
}

func (q *query) labelOr(c *colRef, or string) string {
	if c == nil {
		return or
	}
	return q.label(*c)
}

func (q *query) valuesSeen() string {
	var vs []string
	for _, m := range q.ms {
		if m.value != "" {
			vs = append(vs, m.value)
		}
	}
	return strings.Join(vs, ", ")
}

// onlyNumber is a table's one numeric column that is not a key, or nil.
func (q *query) onlyNumber(ref string) *colRef {
	var found *colRef
	for _, c := range q.p.s.table(ref).Columns {
		if c.numeric() && !keyLike(c.Name) {
			if found != nil {
				return nil
			}
			found = &colRef{ref, c.Name}
		}
	}
	return found
}

// dateColumn is the date the question means by the time phrase at token at: a date column
// it names; else the date of a table named just before the phrase ("orders in 2024"); else
// the main table's first one, else a joined table's. One it does not name is an assumption,
// stated as such.
func (q *query) dateColumn(at int) *colRef {
	for _, m := range q.ms {
		if m.column != "" && m.value == "" {
			if c := q.column(colRef{m.table, m.column}); c != nil && c.temporal() {
				// "purchases placed in 2025 that were shipped": the phrase follows another
				// verb, and the date column named further on is what was shipped, not when
				if w := q.tok(at - 1); (m.end > at || at-m.end > 2) && at > 0 && !q.p.inMention[at-1] && (relationVerbs[w] || actorVerbs[w]) {
					continue
				}
				if _, _, presence := q.presenceAt(m); presence && m.pos > at {
					continue // "purchases in 2025 that were not shipped": whether, not when
				}
				return &colRef{m.table, m.column}
			}
		}
	}
	var c *colRef
	for _, m := range q.ms {
		if m.column == "" && m.value == "" && m.table != q.main && m.end <= at && m.end >= at-3 {
			if d := firstDate(q.p.s.table(m.table)); d != "" && q.relation(m.table, q.main) != nil {
				c = &colRef{m.table, d}
			}
		}
	}
	if c == nil {
		for _, ref := range append([]string{q.main}, q.joinedRefs()...) {
			if d := firstDate(q.p.s.table(ref)); d != "" {
				c = &colRef{ref, d}
				break
			}
		}
	}
	if c != nil && !q.assumedDate[*c] && (c.table != q.main || dateColumns(q.p.s.table(c.table)) > 1) {
		if q.assumedDate == nil {
			q.assumedDate = map[colRef]bool{}
		}
		q.assumedDate[*c] = true
		q.p.assume("the date is %s of %s (the question names no date column)", q.label(*c), q.p.s.table(c.table).Dataset)
	}
	return c
}

// dateColumns is how many date columns a table has.
func dateColumns(t *Table) int {
	n := 0
	for _, c := range t.Columns {
		if c.temporal() {
			n++
		}
	}
	return n
}

// firstDate is a table's first date column, or "".
func firstDate(t *Table) string {
	for _, c := range t.Columns {
		if c.temporal() {
			return c.Name
		}
	}
	return ""
}

func (q *query) joinedRefs() []string {
	var out []string
	for r := range q.joined {
		out = append(out, r)
	}
	slices.Sort(out)
	return out
}

// reach makes table ref readable from the main table: itself, or joined along a relation
// where it is the one side. A many-side table is reached through EXISTS (see cond).
func (q *query) reach(ref string) error {
	if ref == q.main || q.joined[ref] {
		return nil
	}
	if q.joinChain(ref) {
		return nil
	}
	if q.relation(ref, q.main) != nil {
		return q.p.refuse(fmt.Sprintf("it would need each %s row once per %s row; ask about %s instead", alias(q.main), alias(ref), alias(ref)))
	}
	return q.p.refuse(fmt.Sprintf("%s and %s have no known relationship", q.p.s.table(q.main).Dataset, q.p.s.table(ref).Dataset))
}

// relation is the foreign key from → to, or nil.
func (q *query) relation(from, to string) *Relation {
	for i, r := range q.p.s.Relations {
		if r.From == from && r.To == to {
			return &q.p.s.Relations[i]
		}
	}
	return nil
}

// cond adds a condition on table ref: in WHERE when the main table reaches it by a join, in
// an EXISTS over it when it is on the many side of a relation to the main table.
func (q *query) cond(ref, c string) error {
	if ref == q.main || q.joined[ref] {
		q.where, q.whereOn = append(q.where, c), append(q.whereOn, ref)
		return nil
	}
	// one side, directly or through the tables between (not a table the main one has many of)
	oneSide := q.relation(q.main, ref) != nil || q.relation(ref, q.main) == nil && q.junction(q.main, ref) == nil
	if oneSide && q.joinChain(ref) {
		q.where, q.whereOn = append(q.where, c), append(q.whereOn, ref)
		return nil
	}
	if q.relation(ref, q.main) != nil || q.junction(q.main, ref) != nil {
		if len(q.exists[ref]) == 0 {
			q.p.step("Kept %s rows that have matching %s", alias(q.main), alias(ref))
		}
		q.exists[ref] = append(q.exists[ref], c)
		return nil
	}
	return q.p.refuse(fmt.Sprintf("%s and %s have no known relationship", q.p.s.table(q.main).Dataset, q.p.s.table(ref).Dataset))
}

// link is a many-to-many relationship of two tables through a junction table that refers
// to both (enrollments of students and courses).
type link struct {
	via      string    // the junction table
	toA, toB *Relation // via → a, via → b
}

// junction is the one junction between tables a and b, or nil (none, or several).
func (q *query) junction(a, b string) *link {
	if a == b {
		return nil
	}
	var found *link
	for _, t := range q.p.s.Tables {
		if t.Ref == a || t.Ref == b {
			continue
		}
		ra, rb := q.relation(t.Ref, a), q.relation(t.Ref, b)
		if ra == nil || rb == nil {
			continue
		}
		if found != nil {
			return nil
		}
		found = &link{via: t.Ref, toA: ra, toB: rb}
	}
	return found
}

// related is the condition that a row of ref (a many-side table, or one linked through a
// junction) belongs to the main row, and the FROM it is read with.
func (q *query) related(ref string) (from, on string) {
	if r := q.relation(ref, q.main); r != nil {
		return ref, fmt.Sprintf("%s.%s = %s.%s", quote(alias(ref)), quote(r.FromColumn), quote(alias(q.main)), quote(r.ToColumn))
	}
	l := q.junction(q.main, ref)
	return fmt.Sprintf("%s JOIN %s ON %s.%s = %s.%s", l.via, ref, quote(alias(ref)), quote(l.toB.ToColumn), quote(alias(l.via)), quote(l.toB.FromColumn)),
		fmt.Sprintf("%s.%s = %s.%s", quote(alias(l.via)), quote(l.toA.FromColumn), quote(alias(q.main)), quote(l.toA.ToColumn))
}

// joinChain joins table ref to the main table along many-to-one relationships: directly, or
// through the tables between ("line items of Acme's purchases": line items → purchases →
// clients) when exactly one shortest chain of at most three joins leads there. It reports
// whether ref is joined.
func (q *query) joinChain(ref string) bool {
	path := q.oneSidePath(ref)
	if path == nil {
		return false
	}
	prev := q.main
	for _, hop := range path {
		if !q.joined[hop] {
			q.joined[hop], q.via[hop] = true, prev
			if prev == q.main {
				q.p.step("Joined %s along its relationship", q.p.s.table(hop).Dataset)
			} else {
				q.p.step("Joined %s through %s", q.p.s.table(hop).Dataset, q.p.s.table(prev).Dataset)
			}
		}
		prev = hop
	}
	return true
}

// oneSidePath is the tables from the main table to ref along many-to-one relationships
// (ref last), when one chain is the shortest; nil when none or several are.
func (q *query) oneSidePath(ref string) []string {
	if q.relation(q.main, ref) != nil {
		return []string{ref}
	}
	paths := [][]string{{q.main}}
	for depth := 0; depth < 3; depth++ {
		var next, found [][]string
		for _, pth := range paths {
			for _, r := range q.p.s.Relations {
				if r.From != pth[len(pth)-1] || slices.Contains(pth, r.To) {
					continue
				}
				np := append(slices.Clone(pth), r.To)
				if r.To == ref {
					found = append(found, np)
				}
				next = append(next, np)
			}
		}
		if len(found) == 1 {
			return found[0][1:]
		}
		if len(found) > 1 {
			return nil // two ways there: not one to pick silently
		}
		paths = next
	}
	return nil
}
