package nlsql

import (
	"fmt"
	"slices"
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

	usedCols map[colRef]bool // the columns the SQL reads
	// ambiguous are the table pairs related by several relationships the question did not
	// choose among (relation)
	ambiguous map[[2]string][]*Relation
	// roles are the relationships the question chose, by table pair: the column (pickRoles)
	roles     map[[2]string]string
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

// pluralOf reports whether a word of the question is the plural of a column name's last word
// (ranges of price_range, salaries of salary).
func pluralOf(w, column string) bool {
	ws := words(column)
	return len(ws) > 0 && w != ws[len(ws)-1] && singular(w) == ws[len(ws)-1]
}

// settleMeasure decides what is computed where the question left it open, or refuses.
func (q *query) settleMeasure() error {
	p := q.p
	// A number named without an aggregate ("revenue by month", "revenue in March") is summed,
	// unless it is compared or ordered by, or is a number of the main table named in the
	// plural, with the table, and nothing to group by ("what are the price ranges of
	// hotels": the rows' values, listed with them).
	if q.agg == "" && !q.rows && q.orderBy == nil && !q.byMeasure {
		for _, m := range q.ms {
			c := colRef{m.table, m.column}
			if col := q.column(c); len(q.groups) == 0 && m.table == q.main && m.value == "" && col != nil && col.numeric() && pluralOf(p.toks[m.end-1], m.column) &&
				q.namesTable(q.main) {
				if q.usedCols == nil {
					q.usedCols = map[colRef]bool{}
				}
				q.usedCols[c] = true // the listing shows it
				continue
			}
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
