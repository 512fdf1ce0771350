package nlsql

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// intentWords are words the engine reads as intent rather than names.
var intentWords = map[string]bool{"how": true, "many": true, "count": true, "number": true, "total": true, "sum": true, "average": true,
	"avg": true, "mean": true, "max": true, "maximum": true, "highest": true, "largest": true, "biggest": true, "most": true, "min": true,
	"minimum": true, "lowest": true, "smallest": true, "least": true, "fewest": true, "top": true, "bottom": true, "first": true,
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
	joined  map[string]bool // one-side tables joined to main
	agg     string          // count, count_distinct, sum, avg, max, min
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
	q.exists = map[string][]string{}
	q.countRefs = map[string]bool{}
	q.notExists = map[string][]string{}
	in := q.readIntent()
	q.readByMeasure(in)
	if q.measure != nil && (q.agg == "sum" || q.agg == "avg" || q.agg == "max" || q.agg == "min") {
		q.p.step("Measure: %s of %s", q.agg, q.label(*q.measure))
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
	return q.settleMeasure()
}

// readIntent reads the aggregate and ordering words: counts, totals, averages, extremes, "top N".
func (q *query) readIntent() intent {
	p := q.p
	in := intent{supAt: -1}
	for i := 0; i < len(p.toks); i++ {
		t := p.toks[i]
		switch {
		case t == "how" && q.tok(i+1) == "many", t == "number" && q.tok(i+1) == "of", t == "count" && q.agg == "":
			q.agg, in.signal = "count", true
			p.mark(i, i+2)
			q.byAggregate(i)
			j := i + 1
			if t == "how" || t == "number" {
				j = i + 2
			}
			if prev := q.tok(i - 1); (t == "number" || t == "count") && (prev == "average" || prev == "avg" || prev == "mean") {
				q.avgCount = true // "average number of orders per customer"
			}
			if w := q.tok(j); w == "distinct" || w == "different" || w == "unique" {
				p.mark(j, j+1)
				if m, _ := q.mentionAt(j + 1); m != nil && m.column != "" && m.value == "" {
					q.agg, q.measure = "count_distinct", &colRef{m.table, m.column}
				} else if m != nil && m.column == "" && m.value == "" {
					in.countTarget = m.table // "how many distinct customers": each row is one
				}
			} else if m, _ := q.mentionAt(j); m != nil && m.column == "" {
				in.countTarget = m.table
			} else if m != nil && m.value != "" {
				in.countTarget = m.table // "how many managers": rows with that value
			} else if m != nil && m.column != "" && m.value == "" {
				// "how many cities": the distinct values of a column named alone
				if c := q.column(colRef{m.table, m.column}); c != nil && !c.numeric() && c.Type != "boolean" && !c.temporal() {
					q.agg, q.measure = "count_distinct", &colRef{m.table, m.column}
				} else if c != nil && c.Type == "boolean" {
					in.countTarget = m.table // "how many alerts": rows of is_alert's table
				}
			}
		case t == "total" || t == "sum":
			if q.tok(i+1) == "number" {
				p.mark(i, i+1)
				continue // "total number of": a count
			}
			if q.agg == "" || q.agg == "count" && t == "sum" {
				q.agg, in.signal = "sum", true
				p.mark(i, i+1)
				q.byAggregate(i)
				q.measure = q.numericNear(i + 1)
			}
		case (t == "share" || t == "percentage" || t == "percent" || t == "proportion") && !q.share:
			q.share, in.signal = true, true
			p.mark(i, i+1)
		case t == "average" && q.tok(i-1) == "on" && q.agg == "count":
			q.avgCount = true // "how many orders per customer on average"
			p.mark(i-1, i+1)
		case t == "average" || t == "avg" || t == "mean":
			q.agg, in.signal = "avg", true
			p.mark(i, i+1)
			q.byAggregate(i)
			q.measure = q.numericNear(i + 1)
		case (t == "max" || t == "maximum") && q.agg == "":
			q.agg, in.signal = "max", true
			p.mark(i, i+1)
			q.measure = q.numericNear(i + 1)
		case (t == "min" || t == "minimum") && q.tok(i-1) != "a" && q.agg == "":
			q.agg, in.signal = "min", true
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
	if r == nil && q.junction(q.main, ref) != nil && len(q.groups) == 0 && (q.agg == "" || q.agg == "count") && q.measure == nil && !q.share &&
		len(q.where) == 0 && len(q.exists) == 0 && len(q.joined) == 0 {
		// "how many students per course": the junction's rows per course, each student once
		l := q.junction(q.main, ref)
		one := q.main
		q.main, q.agg = l.via, "count_distinct"
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
			if w := p.toks[i]; (w == "top" || w == "bottom" || w == "first") && isNumber.MatchString(p.toks[i+1]) {
				if m, _ := q.mentionAt(i + 2); m != nil && m.column != "" && m.value == "" {
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
			q.agg = "count"
			if l := q.junction(one, m.table); l != nil && q.relation(m.table, one) == nil {
				// "which course has the most students": enrollments per course, each student once
				q.main, q.agg, q.measure = l.via, "count_distinct", &colRef{l.via, l.toB.FromColumn}
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
		if len(q.groups) == 0 && (q.tok(0) == "what" || q.tok(0) == "what's") && (q.agg == "" || q.agg == "max" || q.agg == "min") {
			// "what is the highest credit": the value itself
			if q.measure == nil {
				q.measure = q.numericNear(supAt + 1)
			}
			if q.measure == nil {
				return p.refuse("it asks for the " + p.toks[supAt] + " but names no number")
			}
			q.agg = map[string]string{"desc": "max", "asc": "min"}[superlative]
			q.order, q.limit = "", 0
			p.step("Measure: %s of %s", q.agg, q.label(*q.measure))
		} else if len(q.groups) == 0 && (q.agg == "" || q.agg == "max" || q.agg == "min") {
			if q.measure == nil {
				q.measure = q.numericNear(supAt + 1)
			}
			if q.measure == nil {
				return p.refuse("it asks for the " + p.toks[supAt] + " but names no number to order by")
			}
			q.agg, q.rows = "", true
			p.step("Rows ordered by %s, %s first", q.label(*q.measure), map[string]string{"desc": "highest", "asc": "lowest"}[superlative])
		} else if q.agg == "" {
			q.agg = "count"
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
		q.agg = "count" // "share of orders by channel"
	}
	if q.agg == "" && len(q.groups) == 0 {
		q.rows = true
		if q.limit > 0 && q.measure == nil {
			q.measure = q.numericNear(len(p.toks))
		}
	}
	if q.agg == "" && len(q.groups) > 0 {
		q.agg = "count"
	}
	if (q.agg == "sum" || q.agg == "avg" || q.agg == "max" || q.agg == "min") && q.measure == nil {
		if c := q.onlyNumber(q.main); c != nil {
			q.measure = c
			p.assume("the %s of %s: it is the only number of %s", map[string]string{"sum": "total", "avg": "average", "max": "maximum", "min": "minimum"}[q.agg],
				q.label(*c), p.s.table(q.main).Dataset)
		} else {
			return p.refuse("it asks for " + map[string]string{"sum": "a total", "avg": "an average", "max": "a maximum", "min": "a minimum"}[q.agg] +
				" but does not say of which number")
		}
	}
	if q.measure != nil && q.measure.table != q.main {
		if err := q.reach(q.measure.table); err != nil {
			return err
		}
	}
	if q.perRow {
		if q.agg != "avg" && q.agg != "min" && q.agg != "max" || q.rows {
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
		if q.rows || q.agg != "count" && q.agg != "sum" || q.limit > 0 && len(q.groups) == 0 {
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
	if q.relation(q.main, ref) != nil {
		q.joined[ref] = true
		q.p.step("Joined %s along its relationship", q.p.s.table(ref).Dataset)
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
	if q.relation(q.main, ref) != nil {
		q.joined[ref] = true
		q.p.step("Joined %s along its relationship", q.p.s.table(ref).Dataset)
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
			a, okA := number(q.tok(i + 1))
			b, okB := number(q.tok(i + 3))
			if okA && okB && q.tok(i+2) == "and" && !isYear.MatchString(q.tok(i+1)) {
				c := q.numericNear(i)
				if c == nil {
					c = q.measureOrOnly()
				}
				if c == nil {
					return p.refuse("it compares with numbers but names no number column")
				}
				if err := q.perRowCompare(*c, a); err != nil {
					return err
				}
				q.compared = append(q.compared, *c)
				if err := q.cond(c.table, q.col(*c)+" BETWEEN "+p.param(fmtNum(a))+" AND "+p.param(fmtNum(b))); err != nil {
					return err
				}
				p.mark(i, i+4)
				p.step("Filter: %s between %s and %s", q.label(*c), fmtNum(a), fmtNum(b))
				i += 3
			}
			continue
		}
		for _, cmp := range comparators {
			n := len(cmp.words)
			if i+n >= len(p.toks) || !slices.Equal(p.toks[i:i+n], cmp.words) {
				continue
			}
			v, ok := number(p.toks[i+n])
			if !ok {
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
			var c *colRef
			namedBefore := false
			for k := range q.ms {
				// "orders over 100": the number of the table named just before
				if q.ms[k].end == i && q.ms[k].column == "" && q.ms[k].value == "" {
					c, namedBefore = q.defaultNumber(q.ms[k].table), true
					if c == nil {
						return p.refuse(fmt.Sprintf("it compares %s with %s but not which number of them", alias(q.ms[k].table), fmtNum(v)),
							q.numberSuggestions(q.ms[k].table, strings.Join(cmp.words, " ")+" "+fmtNum(v))...)
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
				return p.refuse("it compares with " + fmtNum(v) + " but names no number column")
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

// defaultNumber is what a table's rows are compared or summed by when no number is named: its
// only number, or its one money-like number (amount, total, price, revenue); an assumption,
// stated.
func (q *query) defaultNumber(ref string) *colRef {
	if c := q.onlyNumber(ref); c != nil {
		return c
	}
	var found *colRef
	for _, c := range q.p.s.table(ref).Columns {
		if c.numeric() && !keyLike(c.Name) && slices.ContainsFunc(words(c.Name), func(w string) bool {
			return w == "amount" || w == "total" || w == "price" || w == "revenue" || w == "value"
		}) {
			if found != nil {
				return nil
			}
			found = &colRef{ref, c.Name}
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
func additive(c colRef) bool {
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
	if !additive(c) {
		l := q.label(c)
		return q.p.refuse(fmt.Sprintf("it names %s without saying how to combine it (total, average, highest, lowest)", l),
			strings.TrimSpace("Average "+l+" "+q.groupPhrase()), strings.TrimSpace("Maximum "+l+" "+q.groupPhrase()))
	}
	q.agg, q.measure = "sum", &c
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
	return q.p.refuse(fmt.Sprintf("it compares %s of %s with %s without saying whether one of a %s's %s or all of them together", q.label(c), t.Dataset,
		fmtNum(v), singular(alias(q.main)), alias(c.table)), fmt.Sprintf("%s with %s over %s", alias(q.main), alias(c.table), fmtNum(v)))
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

// timeFilters reads years, months, relative periods and since/before/after on the date the
// question means.
func (q *query) timeFilters() error {
	per := q.readPeriod()
	if per.from == nil && per.to == nil && per.monthFrom == 0 {
		return nil
	}
	return q.filterPeriod(per)
}

// period is the time a question names: [from, to), and/or months of any year.
type period struct {
	at                 int // the phrase's first token
	from, to           *time.Time
	monthFrom, monthTo time.Month
	desc               string // as the step says it
}

// readPeriod reads the time phrases of the question; a later phrase overrides an earlier one.
func (q *query) readPeriod() period {
	p := q.p
	var per period
	today := time.Date(p.now.Year(), p.now.Month(), p.now.Day(), 0, 0, 0, 0, time.UTC)
	for i := 0; i < len(p.toks); i++ {
		switch p.toks[i] {
		case "between", "in", "during", "for", "on", "since", "after", "from", "before", "until":
			desc := per.desc
			i0 := i
			i = q.readDates(i, &per)
			if per.desc != desc {
				per.at = i0
			}
		case "last", "past", "previous", "this", "today", "yesterday":
			desc := per.desc
			q.readRelative(i, today, &per)
			if per.desc != desc {
				per.at = i
			}
		}
	}
	return per
}

// readDates reads the dated phrase at token i into per and returns the token to go on from.
func (q *query) readDates(i int, per *period) int {
	p := q.p
	t := p.toks[i]
	switch {
	case t == "between" && months[q.tok(i+1)] != 0 && q.tok(i+2) == "and" && months[q.tok(i+3)] != 0:
		m1, m2 := months[q.tok(i+1)], months[q.tok(i+3)]
		if y, ok := q.yearAt(i + 4); ok {
			per.from, per.to = dateAt(y, m1, 1), dateAt(y, m2+1, 1)
			p.mark(i, i+5)
			per.desc = fmt.Sprintf("between %s and %s %d", m1, m2, y)
		} else {
			per.monthFrom, per.monthTo = m1, m2
			p.mark(i, i+4)
			per.desc = fmt.Sprintf("between %s and %s (any year)", m1, m2)
		}
		i += 3
	case t == "between":
		if s, _, n := q.pointAt(i + 1); n > 0 && q.tok(i+1+n) == "and" {
			if _, e, n2 := q.pointAt(i + 2 + n); n2 > 0 {
				per.from, per.to = s, e
				p.mark(i, i+2+n+n2)
				per.desc = "between " + s.Format(time.DateOnly) + " and " + e.AddDate(0, 0, -1).Format(time.DateOnly)
			}
		}
	case t == "in" || t == "during" || t == "for" || t == "on":
		if m, ok := months[q.tok(i+1)]; ok {
			if y, ok := q.yearAt(i + 2); ok {
				per.from, per.to = dateAt(y, m, 1), dateAt(y, m+1, 1)
				p.mark(i, i+3)
				per.desc = fmt.Sprintf("in %s %d", m, y)
			} else {
				per.monthFrom, per.monthTo = m, m
				p.mark(i, i+2)
				per.desc = fmt.Sprintf("in %s (any year)", m)
			}
		} else if s, e, n := q.pointAt(i + 1); n > 0 {
			per.from, per.to = s, e
			p.mark(i, i+1+n)
			per.desc = "in " + strings.Join(p.toks[i+1:i+1+n], " ")
		}
	case t == "since" || t == "after" || t == "from":
		if s, e, n := q.pointAt(i + 1); n > 0 {
			if t == "after" {
				per.from = e
			} else {
				per.from = s
			}
			p.mark(i, i+1+n)
			per.desc = t + " " + strings.Join(p.toks[i+1:i+1+n], " ")
		}
	case t == "before" || t == "until":
		if s, e, n := q.pointAt(i + 1); n > 0 {
			if t == "until" {
				per.to = e
			} else {
				per.to = s
			}
			p.mark(i, i+1+n)
			per.desc = t + " " + strings.Join(p.toks[i+1:i+1+n], " ")
		}
	}
	return i
}

// readRelative reads the period relative to today at token i ("last month", "today") into per.
func (q *query) readRelative(i int, today time.Time, per *period) {
	p := q.p
	t := p.toks[i]
	switch {
	case (t == "last" || t == "past" || t == "previous") && units[q.tok(i+1)] != "":
		u := units[q.tok(i+1)]
		switch u {
		case "day":
			per.from, per.to = ptrTime(today.AddDate(0, 0, -1)), &today
		case "week":
			w := today.AddDate(0, 0, -int((today.Weekday()+6)%7))
			per.from, per.to = ptrTime(w.AddDate(0, 0, -7)), &w
		case "month":
			m := startOfMonth(today)
			per.from, per.to = ptrTime(m.AddDate(0, -1, 0)), &m
		case "quarter":
			qs := time.Date(today.Year(), time.Month((int(today.Month())-1)/3*3+1), 1, 0, 0, 0, 0, time.UTC)
			per.from, per.to = ptrTime(qs.AddDate(0, -3, 0)), &qs
		case "year":
			y := dateAt(today.Year(), 1, 1)
			per.from, per.to = ptrTime(y.AddDate(-1, 0, 0)), y
		}
		p.mark(i, i+2)
		per.desc = "the previous " + u
	case (t == "last" || t == "past") && isNumber.MatchString(q.tok(i+1)) && units[q.tok(i+2)] != "":
		n, _ := strconv.Atoi(q.tok(i + 1))
		s := today.AddDate(0, 0, 1) // through today
		switch units[q.tok(i+2)] {
		case "day":
			s = s.AddDate(0, 0, -n)
		case "week":
			s = s.AddDate(0, 0, -7*n)
		case "month":
			s = s.AddDate(0, -n, 0)
		case "quarter":
			s = s.AddDate(0, -3*n, 0)
		case "year":
			s = s.AddDate(-n, 0, 0)
		}
		per.from, per.to = &s, ptrTime(today.AddDate(0, 0, 1))
		p.mark(i, i+3)
		per.desc = fmt.Sprintf("the last %d %s", n, q.tok(i+2))
	case t == "this" && units[q.tok(i+1)] != "":
		switch units[q.tok(i+1)] {
		case "day":
			per.from = &today
		case "week":
			per.from = ptrTime(today.AddDate(0, 0, -int((today.Weekday()+6)%7)))
		case "month":
			per.from = ptrTime(startOfMonth(today))
		case "quarter":
			per.from = ptrTime(time.Date(today.Year(), time.Month((int(today.Month())-1)/3*3+1), 1, 0, 0, 0, 0, time.UTC))
		case "year":
			per.from = dateAt(today.Year(), 1, 1)
		}
		per.to = ptrTime(today.AddDate(0, 0, 1))
		p.mark(i, i+2)
		per.desc = "this " + units[q.tok(i+1)]
	case t == "today":
		per.from, per.to = &today, ptrTime(today.AddDate(0, 0, 1))
		p.mark(i, i+1)
		per.desc = "today"
	case t == "yesterday":
		per.from, per.to = ptrTime(today.AddDate(0, 0, -1)), &today
		p.mark(i, i+1)
		per.desc = "yesterday"
	}
}

// filterPeriod adds the conditions of per on the date column the question means.
func (q *query) filterPeriod(per period) error {
	p := q.p
	dc := q.dateColumn(per.at)
	if dc == nil {
		return p.refuse("it names a time (" + per.desc + ") but no dataset it reads has a date column")
	}
	c := q.col(*dc)
	var conds []string
	if per.from != nil {
		conds = append(conds, c+" >= "+p.param(per.from.Format(time.DateOnly)))
	}
	if per.to != nil {
		conds = append(conds, c+" < "+p.param(per.to.Format(time.DateOnly)))
	}
	if per.monthFrom != 0 {
		conds = append(conds, "extract(month FROM "+c+") BETWEEN "+p.param(int(per.monthFrom))+" AND "+p.param(int(per.monthTo)))
	}
	for _, cond := range conds {
		if err := q.cond(dc.table, cond); err != nil {
			return err
		}
	}
	p.step("Time: %s %s", q.label(*dc), per.desc)
	return nil
}

// yearAt is the year at token i, if it is one.
func (q *query) yearAt(i int) (int, bool) {
	if isYear.MatchString(q.tok(i)) {
		y, _ := strconv.Atoi(q.tok(i))
		return y, true
	}
	return 0, false
}

// pointAt reads a moment at token i (a date, a month with a year, a year): start, end, tokens.
func (q *query) pointAt(i int) (start, end *time.Time, n int) {
	t := q.tok(i)
	if isDate.MatchString(t) {
		d, err := time.Parse(time.DateOnly, t)
		if err == nil {
			e := d.AddDate(0, 0, 1)
			return &d, &e, 1
		}
	}
	if m, ok := months[t]; ok {
		if y, ok := q.yearAt(i + 1); ok {
			s := dateAt(y, m, 1)
			e := s.AddDate(0, 1, 0)
			return s, &e, 2
		}
	}
	if y, ok := q.yearAt(i); ok {
		s := dateAt(y, 1, 1)
		e := s.AddDate(1, 0, 0)
		return s, &e, 1
	}
	return nil, nil, 0
}

// dateAt is midnight UTC of a day.
func dateAt(y int, m time.Month, d int) *time.Time {
	t := time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
	return &t
}

// startOfMonth is midnight UTC of the first day of t's month.
func startOfMonth(t time.Time) time.Time {
	return time.Date(t.Year(), t.Month(), 1, 0, 0, 0, 0, time.UTC)
}

func ptrTime(t time.Time) *time.Time { return &t }

// tables are the refs the query reads.
func (q *query) tables() []string {
	out := []string{q.main}
	out = append(out, q.joinedRefs()...)
	for _, m := range []map[string][]string{q.exists, q.notExists} {
		for _, r := range sortedKeys(m) {
			if !slices.Contains(out, r) {
				out = append(out, r)
			}
		}
	}
	for r := range q.countRefs {
		if !slices.Contains(out, r) {
			out = append(out, r)
		}
	}
	return out
}

func sortedKeys(m map[string][]string) []string {
	out := make([]string, 0, len(m))
	for r := range m {
		out = append(out, r)
	}
	slices.Sort(out)
	return out
}

func (q *query) aggExpr() (expr, name string) {
	switch q.agg {
	case "count":
		return "count(*)", "count"
	case "count_distinct":
		return "count(DISTINCT " + q.col(*q.measure) + ")", "distinct_" + q.measure.column
	default:
		return q.agg + "(" + q.col(*q.measure) + ")", q.agg + "_" + q.measure.column
	}
}

func (q *query) sql() (string, error) {
	p := q.p
	var sel, groupBy []string
	for i, g := range q.groups {
		sel = append(sel, g.expr+" AS "+quote(g.alias))
		groupBy = append(groupBy, strconv.Itoa(i+1))
	}
	aggName := ""
	if q.rows {
		sel = append(sel, quote(alias(q.main))+".*")
	} else {
		var e string
		e, aggName = q.aggExpr()
		aggName = q.aggAlias(aggName)
		sel = append(sel, e+" AS "+quote(aggName))
		if q.share && len(q.groups) > 0 {
			sel = append(sel, "round(100.0 * "+e+" / nullif(sum("+e+") OVER (), 0), 2) AS \"percent\"")
			q.p.step("Share of each group in percent of all groups")
		}
	}
	var b strings.Builder
	b.WriteString("SELECT " + strings.Join(sel, ", ") + " FROM " + q.main)
	for _, ref := range q.joinedRefs() {
		r := q.relation(q.main, ref)
		fmt.Fprintf(&b, " JOIN %s ON %s.%s = %s.%s", ref, quote(alias(ref)), quote(r.ToColumn), quote(alias(q.main)), quote(r.FromColumn))
	}
	where := slices.Clone(q.where)
	for _, neg := range []bool{false, true} {
		m, not := q.exists, ""
		if neg {
			m, not = q.notExists, "NOT "
		}
		for _, ref := range sortedKeys(m) {
			from, on := q.related(ref)
			conds := append([]string{on}, m[ref]...)
			where = append(where, fmt.Sprintf("%sEXISTS (SELECT 1 FROM %s WHERE %s)", not, from, strings.Join(conds, " AND ")))
		}
	}
	if q.avgCount {
		// the average over every row of the entity of how many main rows it has (none: 0)
		e := q.groups[0].entity
		r := q.relation(q.main, e)
		_, name := q.aggExpr()
		return fmt.Sprintf("SELECT avg((SELECT count(*) FROM %s WHERE %s.%s = %s.%s)) AS %s FROM %s", q.main, quote(alias(q.main)), quote(r.FromColumn),
			quote(alias(e)), quote(r.ToColumn), quote("avg_"+name+"_per_"+singular(alias(e))), e), nil
	}
	if q.share && len(q.groups) == 0 {
		// the percentage of the main rows (or of the total) that meet the conditions
		e, _ := q.aggExpr()
		var b strings.Builder
		fmt.Fprintf(&b, "SELECT round(100.0 * %s FILTER (WHERE %s) / nullif(%s, 0), 2) AS \"percent\" FROM %s", e, strings.Join(where, " AND "), e, q.main)
		for _, ref := range q.joinedRefs() {
			r := q.relation(q.main, ref)
			fmt.Fprintf(&b, " LEFT JOIN %s ON %s.%s = %s.%s", ref, quote(alias(ref)), quote(r.ToColumn), quote(alias(q.main)), quote(r.FromColumn))
		}
		q.p.step("Percentage of %s rows meeting the conditions", alias(q.main))
		return b.String(), nil
	}
	if len(where) > 0 {
		b.WriteString(" WHERE " + strings.Join(where, " AND "))
	}
	if len(groupBy) > 0 {
		b.WriteString(" GROUP BY " + strings.Join(groupBy, ", "))
	}
	if len(q.having) > 0 {
		if len(groupBy) == 0 {
			return "", p.refuse("it counts rows per group but says no group")
		}
		b.WriteString(" HAVING " + strings.Join(q.having, " AND "))
	}
	if q.order == "asc" && len(q.groups) > 0 && q.groups[0].entity != "" && !q.rows {
		return q.fromTheLowest()
	}
	switch {
	case q.orderBy != nil:
		b.WriteString(" ORDER BY " + q.col(*q.orderBy) + " " + strings.ToUpper(q.order) + " NULLS LAST")
	case q.order != "" && !q.rows:
		b.WriteString(" ORDER BY " + quote(aggName) + " " + strings.ToUpper(q.order) + " NULLS LAST")
		for i := range q.groups {
			b.WriteString(", " + strconv.Itoa(i+1))
		}
	case q.order != "" && q.measure != nil:
		b.WriteString(" ORDER BY " + q.col(*q.measure) + " " + strings.ToUpper(q.order) + " NULLS LAST")
	case len(q.groups) > 0:
		b.WriteString(" ORDER BY " + strings.Join(groupBy, ", "))
	}
	limit := q.limit
	if q.rows && limit == 0 {
		limit = 100
		p.step("Rows: at most 100")
	}
	if limit > 0 {
		b.WriteString(" LIMIT " + strconv.Itoa(limit))
		if limit != 100 || !q.rows {
			p.step("Limit: %d", limit)
		}
	}
	return b.String(), nil
}

// fromTheLowest ranks every row of the entity grouped by from the lowest, those without
// rows of the main table included ("which customer has the fewest orders": one with none):
// the entity LEFT JOIN the main table, conditions on the main table in the join.
func (q *query) fromTheLowest() (string, error) {
	p := q.p
	e := q.groups[0].entity
	r := q.relation(q.main, e)
	refuse := func() (string, error) {
		return "", p.refuse(fmt.Sprintf("it ranks %s from the lowest together with conditions this engine does not combine with it", alias(e)),
			fmt.Sprintf("%s without %s", alias(e), alias(q.main)))
	}
	if r == nil || len(q.exists) > 0 || len(q.notExists) > 0 || len(q.having) > 0 || q.share || q.avgCount || len(q.whereOn) != len(q.where) {
		return refuse()
	}
	for _, g := range q.groups {
		if g.entity != e {
			return refuse()
		}
	}
	for ref := range q.joined {
		if ref != e {
			return refuse()
		}
	}
	var on, where, sel, groupBy []string
	on = append(on, fmt.Sprintf("%s.%s = %s.%s", quote(alias(q.main)), quote(r.FromColumn), quote(alias(e)), quote(r.ToColumn)))
	for i, c := range q.where {
		if q.whereOn[i] == e {
			where = append(where, c)
		} else {
			on = append(on, c)
		}
	}
	for i, g := range q.groups {
		sel = append(sel, g.expr+" AS "+quote(g.alias))
		groupBy = append(groupBy, strconv.Itoa(i+1))
	}
	expr, name := q.aggExpr()
	name = q.aggAlias(name)
	switch q.agg {
	case "count":
		expr = "count(" + quote(alias(q.main)) + "." + quote(r.FromColumn) + ")"
	case "sum":
		expr = "coalesce(" + expr + ", 0)"
	}
	sel = append(sel, expr+" AS "+quote(name))
	var b strings.Builder
	fmt.Fprintf(&b, "SELECT %s FROM %s LEFT JOIN %s ON %s", strings.Join(sel, ", "), e, q.main, strings.Join(on, " AND "))
	if len(where) > 0 {
		b.WriteString(" WHERE " + strings.Join(where, " AND "))
	}
	fmt.Fprintf(&b, " GROUP BY %s ORDER BY %s ASC NULLS LAST, %s", strings.Join(groupBy, ", "), quote(name), strings.Join(groupBy, ", "))
	if q.limit > 0 {
		fmt.Fprintf(&b, " LIMIT %d", q.limit)
		p.step("Limit: %d", q.limit)
	}
	p.step("Ranked every %s from the lowest, those without %s counting as none", singular(alias(e)), alias(q.main))
	return b.String(), nil
}

// aggAlias is the aggregate's column name, apart from every group's: ORDER BY the alias must
// name one column.
func (q *query) aggAlias(name string) string {
	for _, g := range q.groups {
		if g.alias == name {
			return name + "_value"
		}
	}
	return name
}

func (q *query) summary() string {
	t := q.p.s.table(q.main)
	switch {
	case q.rows:
		return "Rows of " + t.Dataset
	case q.measure != nil:
		s := q.agg + " of " + q.label(*q.measure) + " in " + t.Dataset
		if q.agg == "count_distinct" {
			s = "distinct " + q.label(*q.measure) + " in " + t.Dataset
		}
		if len(q.groups) > 0 {
			s += " by " + q.groups[0].label
		}
		return s
	default:
		s := "count of " + t.Dataset
		if len(q.groups) > 0 {
			s += " by " + q.groups[0].label
		}
		return s
	}
}
