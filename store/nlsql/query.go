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

type colRef struct{ table, column string }

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

	assumedDate map[colRef]bool // date columns assumed (stated once)
}

// alias is how a table ref is written inside the SQL (its last part).
func alias(ref string) string { return ref[strings.LastIndex(ref, ".")+1:] }

func (q *query) col(c colRef) string {
	if q.usedCols == nil {
		q.usedCols = map[colRef]bool{}
	}
	q.usedCols[c] = true
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
	return q.checkMeasure()
}

// readIntent reads the aggregate and ordering words: counts, totals, averages, extremes, "top N".
func (q *query) readIntent() intent {
	p := q.p
	in := intent{supAt: -1}
	for i := 0; i < len(p.toks); i++ {
		t := p.toks[i]
		switch {
		case t == "how" && q.tok(i+1) == "many", t == "number" && q.tok(i+1) == "of", t == "count" && q.agg == NoAgg:
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
			}
		case (t == "share" || t == "percentage" || t == "percent" || t == "proportion") && !q.share:
			q.share, in.signal = true, true
			p.mark(i, i+1)
		case t == "average" && q.tok(i-1) == "on" && q.agg == Count:
			q.avgCount = true // "how many orders per customer on average"
			p.mark(i-1, i+1)
		case aggOf(t) == Avg:
			q.agg, in.signal = Avg, true
			p.mark(i, i+1)
			q.byAggregate(i)
			q.measure = q.numericNear(i + 1)
		case aggOf(t) == Max && q.agg == NoAgg:
			q.agg, in.signal = Max, true
			p.mark(i, i+1)
			q.measure = q.numericNear(i + 1)
		case aggOf(t) == Min && q.tok(i-1) != "a" && q.agg == NoAgg:
			q.agg, in.signal = Min, true
			p.mark(i, i+1)
			q.measure = q.numericNear(i + 1)
		case t == "latest" || t == "newest" || t == "earliest" || t == "most" && q.tok(i+1) == "recent":
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
		case (t == "highest" || t == "largest" || t == "biggest" || t == "most" || t == "greatest") && q.tok(i-1) != "at":
			in.superlative, in.supAt, in.signal = "desc", i, true
			p.mark(i, i+1)
		case (t == "lowest" || t == "smallest" || t == "least" || t == "fewest" || t == "cheapest") && q.tok(i-1) != "at":
			in.superlative, in.supAt, in.signal = "asc", i, true
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
	return in
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

// readGroups reads the groups: "by X", "per X", "for each X", "in each X", "for every X",
// "which X ...", "monthly". X is a column, a time unit, or a table: each of its rows (by its
// key, shown with its display column).
func (q *query) readGroups() error {
	p := q.p
	for i := 0; i < len(p.toks); i++ {
		t := p.toks[i]
		start := -1
		switch {
		case t == "by" && !q.sortsBy(i-1):
			if c, _ := q.numericAt(i + 1); c != nil && q.byMeasure {
				continue
			}
			if done, err := q.actorBy(i); err != nil {
				return err
			} else if done {
				continue
			}
			start = i + 1
		case t == "per" || t == "each" || t == "every":
			start = i + 1
		case t == "which" && i == 0 || t == "what" && i == 0:
			if m, _ := q.mentionAt(i + 1); m != nil && m.value == "" && (m.column != "" || m.table != q.main) {
				start = i + 1
			}
		case units[t] != "" && (t == "monthly" || t == "weekly" || t == "daily" || t == "yearly" || t == "quarterly" || t == "annually"):
			start = i
		}
		if start < 0 {
			continue
		}
		for {
			if u := units[q.tok(start)]; u != "" {
				dc := q.dateColumn(start)
				if dc == nil {
					return p.refuse("it groups by " + u + " but no dataset it reads has a date column")
				}
				if err := q.reach(dc.table); err != nil {
					return err
				}
				q.groups = append(q.groups, group{expr: "date_trunc('" + u + "', " + q.col(*dc) + ")::date", alias: u, label: u + " of " + q.label(*dc),
					col: *dc, time: true})
				p.mark(i, start+1)
				start++
			} else if m, _ := q.mentionAt(start); m != nil && m.column != "" && m.value == "" && t == "by" && q.flagOf(m) {
				p.mark(i, i+1) // "orders by vip customers": placed by them (a filter), not grouped
				break
			} else if m != nil && m.column != "" && m.value == "" {
				c := colRef{m.table, m.column}
				if err := q.reach(c.table); err != nil {
					return err
				}
				if col := q.column(c); col != nil && col.temporal() && units[q.tok(m.end)] != "" {
					u := units[q.tok(m.end)] // "by signup year"
					q.groups = append(q.groups, group{expr: "date_trunc('" + u + "', " + q.col(c) + ")::date", alias: u, label: u + " of " + q.label(c),
						col: c, time: true})
					p.mark(i, m.end+1)
					start = m.end + 1
				} else {
					if err := q.groupByColumn(c); err != nil {
						return err
					}
					p.mark(i, m.end)
					start = m.end
				}
			} else if m != nil && m.column == "" && m.value == "" {
				if err := q.entityGroup(m.table); err != nil {
					return err
				}
				p.mark(i, m.end)
				start = m.end
			} else {
				if w := q.tok(start); t != "which" && t != "what" && w != "" && !stop[w] && !intentWords[w] && !isNumber.MatchString(w) && !p.inMention[start] {
					return p.refuse("it groups by \""+w+"\", which is no column of the datasets it reads", q.closeNames(w)...)
				}
				break
			}
			if q.tok(start) != "and" {
				break
			}
			start++
		}
	}
	return nil
}

// flagOf reports whether mention m is a boolean column followed by its table's name ("vip
// customers").
func (q *query) flagOf(m *mention) bool {
	c := q.column(colRef{m.table, m.column})
	if c == nil || c.Type != "boolean" {
		return false
	}
	n, _ := q.mentionAt(m.end)
	return n != nil && n.column == "" && n.value == "" && n.table == m.table
}

// groupByColumn groups by column c; a display column (name, title, email) of another table
// groups by that table's rows, so that two customers of one name stay two.
func (q *query) groupByColumn(c colRef) error {
	if c.table != q.main && q.relation(q.main, c.table) != nil && displayColumn(q.p.s.table(c.table)) == c.column {
		return q.entityGroup(c.table)
	}
	q.groups = append(q.groups, group{expr: q.col(c), alias: c.column, label: q.label(c), col: c})
	return nil
}

// entityGroup groups by each row of table ref, the one side of a relation from the main
// table: by its key, showing its display column. Over the main table itself ("average
// quantity per order" of orders) each row is already one.
func (q *query) entityGroup(ref string) error {
	p := q.p
	t := p.s.table(ref)
	if ref == q.main {
		q.perRow = true
		return nil
	}
	for _, g := range q.groups {
		if g.entity == ref {
			return nil
		}
	}
	r := q.relation(q.main, ref)
	if r == nil && q.junction(q.main, ref) != nil && len(q.groups) == 0 && (q.agg == NoAgg || q.agg == Count) && q.measure == nil && !q.share &&
		len(q.where) == 0 && len(q.exists) == 0 && len(q.joined) == 0 {
		// "how many students per course": the junction's rows per course, each student once
		l := q.junction(q.main, ref)
		one := q.main
		q.main, q.agg = l.via, CountDistinct
		q.measure = &colRef{l.via, l.toA.FromColumn}
		q.countRefs[one] = true
		p.step("Counted %s per %s through %s", alias(one), singular(alias(ref)), p.s.table(l.via).Dataset)
		return q.entityGroup(ref)
	}
	if r == nil {
		if q.relation(ref, q.main) != nil {
			return p.refuse(fmt.Sprintf("it asks for %s per %s, but one %s row has many %s rows", alias(q.main), singular(alias(ref)), singular(alias(q.main)), alias(ref)),
				fmt.Sprintf("Number of %s per %s", alias(ref), singular(alias(q.main))))
		}
		return p.refuse(fmt.Sprintf("%s and %s have no known relationship", p.s.table(q.main).Dataset, t.Dataset))
	}
	if err := q.reach(ref); err != nil {
		return err
	}
	key := colRef{ref, r.ToColumn}
	name := singular(strings.ToLower(strings.Join(words(t.Dataset), " ")))
	q.groups = append(q.groups, group{expr: q.col(key), alias: key.column, label: name + " (" + q.label(key) + ")", col: key, entity: ref})
	if d := displayColumn(t); d != "" && d != r.ToColumn {
		dc := colRef{ref, d}
		q.groups = append(q.groups, group{expr: q.col(dc), alias: d, label: q.label(dc) + " of each " + name, col: dc, entity: ref})
	}
	return nil
}

// displayColumn is the column that names a table's rows to people (name, title, email), or "".
func displayColumn(t *Table) string {
	best, rank := "", 0
	for _, c := range t.Columns {
		if c.Type != "text" {
			continue
		}
		ws := words(c.Name)
		if len(ws) == 0 {
			continue
		}
		r := 0
		switch {
		case c.Name == "name" || c.Name == "full_name":
			r = 5
		case ws[len(ws)-1] == "name" && !slices.Contains(ws, "first") && !slices.Contains(ws, "last"):
			r = 4
		case c.Name == "title" || ws[len(ws)-1] == "title":
			r = 3
		case c.Name == "email" || ws[len(ws)-1] == "email" || c.Name == "username" || c.Name == "label":
			r = 2
		}
		if r > rank {
			best, rank = c.Name, r
		}
	}
	return best
}

// readTopGroups groups by the column after "top N" when it is not a number and nothing groups.
func (q *query) readTopGroups() error {
	p := q.p
	if q.limit > 0 && len(q.groups) == 0 {
		for i := 0; i+2 < len(p.toks); i++ {
			at := -1
			if w := p.toks[i]; (w == "top" || w == "bottom" || w == "first") && isNumber.MatchString(p.toks[i+1]) {
				at = i + 2
			} else if q.rankAt > 0 && i == q.rankAt {
				at = i + 1
				for q.tok(at) == "most" || q.tok(at) == "least" || q.tok(at) == "common" || q.tok(at) == "frequent" || q.tok(at) == "popular" {
					at++
				}
			}
			if at >= 0 {
				if m, _ := q.mentionAt(at); m != nil && m.column != "" && m.value == "" {
					c := colRef{m.table, m.column}
					if col := q.column(c); col != nil && !col.numeric() {
						if err := q.reach(c.table); err != nil {
							return err
						}
						if err := q.groupByColumn(c); err != nil {
							return err
						}
						p.mark(m.pos, m.end)
					}
				} else if m != nil && m.column == "" && m.value == "" && m.table != q.main {
					if err := q.entityGroup(m.table); err != nil { // "top 5 customers by total order amount"
						return err
					}
				}
			}
		}
	}
	return nil
}

// sortsBy reports whether token i, before a "by", asks for an order ("sorted by"); "order"
// naming a dataset ("per order by channel") does not.
func (q *query) sortsBy(i int) bool {
	switch q.tok(i) {
	case "sorted", "ordered", "sort":
		return true
	case "order":
		return !q.p.inMention[i]
	}
	return false
}

// readSortedBy reads the ordering: "sorted by X" / "ordered by X".
func (q *query) readSortedBy() error {
	p := q.p
	for i := 0; i+1 < len(p.toks); i++ {
		if q.sortsBy(i) && p.toks[i+1] == "by" {
			if m, _ := q.mentionAt(i + 2); m != nil && m.column != "" && m.value == "" {
				q.orderBy = &colRef{m.table, m.column}
				q.order = "asc"
				p.mark(i, m.end)
				if w := q.tok(m.end); w == "desc" || w == "descending" || w == "highest" || w == "largest" {
					q.order = "desc"
					p.mark(m.end, m.end+1)
				}
				if err := q.reach(m.table); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

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

// superlativeMeasure is the number a superlative at token supAt orders by: one named near it,
// else, for "the largest order", the value of the main table's rows (an assumption, stated).
func (q *query) superlativeMeasure(supAt int) *colRef {
	if c := q.numericNear(supAt + 1); c != nil {
		return c
	}
	if m, _ := q.mentionAt(supAt + 1); m != nil && m.table == q.main && m.column == "" && m.value == "" {
		return q.defaultNumber(q.main)
	}
	return nil
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
