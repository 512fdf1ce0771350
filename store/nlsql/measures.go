package nlsql

import (
	"fmt"
	"strconv"
	"strings"

	"dataplatform/store/ingest"
)

// neverCombined is the default aggregation of a column its owner said never combines.
const neverCombined = "none"

// checkMeasure refuses a reading that would add up a number whose role says it does not (a
// value: a unit price beside a quantity, a rate), or an identifier: a total of unit prices or
// of rates looks like an answer and is not one. A price that is what each row earned (a
// rental's price, with no quantity beside it) is an amount, and adds up. The owner's default
// aggregation wins over the role.
func (q *query) checkMeasure() error {
	if q.measure == nil || !q.agg.OfNumber() {
		return nil
	}
	c := *q.measure
	l := q.label(c)
	t := q.p.s.table(c.table)
	switch col := q.column(c); {
	case col != nil && col.DefaultAgg == neverCombined:
		return q.p.refuse(fmt.Sprintf("its owner marked %s of %s as a number that does not combine (a code, an identifier)", l, t.Dataset),
			"How many "+strings.ToLower(t.Dataset)+" are there?")
	case q.agg != Sum, col != nil && col.DefaultAgg == string(Sum):
		return nil // the owner said it adds up
	}
	col := q.column(c)
	if col.identifies() {
		return q.p.refuse(fmt.Sprintf("it asks for a total of %s, which identifies %s rather than measuring them", l, t.Dataset),
			"How many "+strings.ToLower(t.Dataset)+" are there?")
	}
	if col != nil && col.numeric() && (col.Role == ingest.RoleCategory || col.Role == ingest.RoleText) {
		return q.p.refuse(fmt.Sprintf("it asks for a total of %s of %s, which its owner set as a %s rather than a number that adds up", l, t.Dataset, col.Role),
			"How many "+strings.ToLower(t.Dataset)+" by "+l)
	}
	if col.perUnit() {
		sug := []string{strings.TrimSpace("Average " + l + " " + q.groupPhrase())}
		if o := q.additiveOf(c.table); o != nil {
			sug = append(sug, strings.TrimSpace("Total "+q.label(*o)+" "+q.groupPhrase()))
		}
		return q.p.refuse(fmt.Sprintf("it asks for a total of %s of %s, a value per unit or a rate: adding it up over rows means nothing", l, t.Dataset), sug...)
	}
	return nil
}

// additiveOf is a number of table ref that adds up (a quantity, an amount), or nil.
func (q *query) additiveOf(ref string) *colRef {
	for _, c := range q.p.s.table(ref).Columns {
		if c.numeric() && c.Role.Adds() && q.additive(colRef{ref, c.Name}) {
			return &colRef{ref, c.Name}
		}
	}
	return nil
}

// checkSynonymMeasure refuses a measure reached only through a synonym when the column is a
// per-unit number: "average order value" names the value of an order, and a unit price of
// its lines is not that.
func (q *query) checkSynonymMeasure() error {
	if q.measure == nil {
		return nil
	}
	for _, m := range q.ms {
		if m.table != q.measure.table || m.column != q.measure.column || m.synonym == "" || m.alias || !q.column(colRef{m.table, m.column}).perUnit() ||
			q.column(*q.measure).DefaultAgg != "" {
			continue
		}
		l := q.label(*q.measure)
		t := q.p.s.table(m.table)
		return q.p.refuse(fmt.Sprintf("it asks for the %s, and the only column it could mean is %s of %s, a value per unit rather than of a whole %s",
			m.synonym, l, t.Dataset, q.entityBefore(m)), strings.TrimSpace("Average "+l+" "+q.groupPhrase()))
	}
	return nil
}

// entityBefore is what the word before a mention names ("order" of "order value"), or the
// mention's table.
func (q *query) entityBefore(m mention) string {
	if w := q.tok(m.pos - 1); w != "" && !stop[w] && !intentWords[w] {
		return singular(w)
	}
	return singular(alias(m.table))
}

// actorVerbs are participles after which "by" names who did it ("made by", "placed by",
// "treated by"), not a grouping.
var actorVerbs = map[string]bool{"made": true, "placed": true, "ordered": true, "bought": true, "purchased": true, "created": true,
	"done": true, "written": true, "handled": true, "sold": true, "shipped": true, "sent": true, "seen": true, "treated": true, "booked": true,
	"issued": true, "signed": true, "approved": true, "submitted": true, "processed": true, "performed": true, "taken": true, "served": true,
	"entered": true, "recorded": true, "logged": true, "reported": true, "paid": true, "owned": true, "managed": true, "run": true, "filed": true,
	"carried": true, "delivered": true, "received": true, "installed": true, "raised": true, "claimed": true, "hauled": true, "transported": true}

// actorBy reads a "by" after a participle ("visits made by smokers"): who did it, a filter
// rather than a grouping. A yes/no column, a value or a dataset after it is the actor (read
// by the filters and joins); another column could be either reading, so the question is
// refused with both. It reports whether it read the "by".
func (q *query) actorBy(i int) (bool, error) {
	if !actorVerbs[q.tok(i-1)] || i > 0 && q.p.inMention[i-1] && !q.participleAt(i-1) {
		return false, nil // "units sold by category": "sold" is part of a name
	}
	m, _ := q.mentionAt(i + 1)
	switch {
	case m == nil:
		return false, nil
	case m.value != "" || m.column == "":
		q.p.mark(i, i+1)
		return true, q.actorVerb(i - 1)
	}
	if c := q.column(colRef{m.table, m.column}); c != nil && c.Type == "boolean" {
		q.p.mark(i, i+1)
		return true, q.actorVerb(i - 1)
	}
	l := q.label(colRef{m.table, m.column})
	q.p.mark(i-1, m.end)
	return true, q.p.refuse(fmt.Sprintf("%q reads two ways: %s as who %s them (name one, a value of %s) or a grouping by %s", strings.Join(q.p.toks[i-1:m.end], " "),
		l, q.tok(i-1), l, l), fmt.Sprintf("How many %s by %s", strings.ToLower(q.p.s.table(q.main).Dataset), l))
}

// actorVerb reads the verb at token i of "shipped by Crescent Cargo": when it names a date
// column (shipped_on), the rows were shipped (the date is set).
func (q *query) actorVerb(i int) error {
	q.actorVerbAt = i
	if !q.participleAt(i) {
		return nil
	}
	for _, m := range q.ms {
		if m.pos == i && m.column != "" {
			c := colRef{m.table, m.column}
			if q.usedCols[c] {
				return nil
			}
			if err := q.cond(m.table, q.col(c)+" IS NOT NULL"); err != nil {
				return err
			}
			q.compared = append(q.compared, c)
			q.p.step("Filter: %s is set (%q)", q.label(c), q.tok(i))
		}
	}
	return nil
}

// participleAt reports whether token i is a date column's participle named alone ("shipped"
// of shipped_on): a verb as much as a name.
func (q *query) participleAt(i int) bool {
	for _, m := range q.ms {
		if m.pos == i && m.end == i+1 && m.column != "" && m.value == "" {
			c := q.column(colRef{m.table, m.column})
			w := q.tok(i)
			return c != nil && c.temporal() && len(w) > 3 && (strings.HasSuffix(w, "ed") || strings.HasSuffix(w, "en"))
		}
	}
	return false
}

// labelUnit is a column's label with the unit its owner gave it: "fee (USD)".
func (q *query) labelUnit(c colRef) string {
	if col := q.column(c); col != nil && col.Unit != "" {
		return q.label(c) + " (" + col.Unit + ")"
	}
	return q.label(c)
}

// countWords are the small numbers people write as words in rankings ("the three most ...").
var countWords = map[string]int{"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9, "ten": 10,
	"twelve": 12, "fifteen": 15, "twenty": 20}

// countWord is the count token w says (a number from 1 to 1000, or one in words), or 0.
func countWord(w string) int {
	if n, ok := countWords[w]; ok {
		return n
	}
	if n, err := strconv.Atoi(w); err == nil && n > 0 && n <= 1000 && !isYear.MatchString(w) {
		return n
	}
	return 0
}

// superlativeAfter reports whether a superlative follows token i within four words: the
// count at i ranks by it.
func (q *query) superlativeAfter(i int) bool {
	for k := i + 1; k <= i+5 && k < len(q.p.toks); k++ {
		switch q.tok(k) {
		case "most", "least", "highest", "lowest", "largest", "smallest", "biggest", "fewest", "greatest", "cheapest":
			return true
		}
	}
	return false
}
