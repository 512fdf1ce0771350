package nlsql

import (
	"fmt"
	"slices"
	"strings"

	"dataplatform/store/nlsql/lexicon"
)

// fillers are words a question may hold without changing what it asks. Words that do change
// it ("by", "per", "each", "not", "no", "than", numbers) are not fillers: unread, they refuse
// the question.
var fillers = map[string]bool{"the": true, "a": true, "an": true, "of": true, "in": true, "on": true, "for": true, "with": true, "and": true,
	"is": true, "are": true, "was": true, "were": true, "be": true, "been": true, "what": true, "which": true, "who": true, "whom": true,
	"show": true, "me": true, "list": true, "give": true, "get": true, "got": true, "find": true, "all": true, "to": true, "from": true,
	"that": true, "have": true, "has": true, "had": true, "do": true, "does": true, "did": true, "there": true, "their": true, "its": true,
	"please": true, "tell": true, "i": true, "we": true, "our": true, "my": true, "how": true, "much": true, "at": true, "as": true,
	"it": true, "whose": true, "where": true, "this": true, "these": true, "those": true, "they": true, "them": true, "us": true,
	"any": true, "ones": true, "records": true, "rows": true, "entries": true, "data": true, "can": true, "you": true, "could": true,
	"would": true, "want": true, "see": true, "display": true, "return": true, "know": true, "like": true, "ever": true, "so": true,
	"far": true, "currently": true, "live": true, "lives": true, "living": true, "located": true, "based": true, "up": true,
	"placed": true, "place": true, "made": true, "make": true, "ordered": true, "bought": true, "purchased": true, "exist": true,
	"exists": true, "listed": true, "overall": true, "altogether": true, "came": true, "come": true, "comes": true,
	"done": true, "being": true, "belong": true, "belongs": true, "grouped": true, "split": true,
	"work": true, "works": true, "working": true, "employed": true, "take": true, "takes": true, "took": true, "taking": true,
	"attend": true, "attends": true, "attended": true, "attending": true, "enrolled": true, "study": true, "studies": true, "studying": true,
	"recorded": true, "taken": true, "logged": true, "reported": true, "sold": true,
	// what the rows' actor does, said in the present ("how many shipments did Acme carry")
	"carry": true, "submit": true, "ship": true, "send": true, "deliver": true, "handle": true, "receive": true}

// relationVerbs name a column only in passing when nothing else reads it: "customers who
// placed orders" does not ask about placed_at ("customers who signed up in 2024" does, and
// the time phrase reads signup_date).
var relationVerbs = map[string]bool{"placed": true, "place": true, "made": true, "ordered": true, "bought": true, "purchased": true,
	"signed": true, "joined": true, "registered": true, "created": true, "hired": true, "enrolled": true, "recorded": true, "taken": true, "logged": true}

// objectVerbs say that the rows of the main dataset did something to rows of another one:
// "customers who ordered books". Without that other one named they say nothing the engine
// can read.
var objectVerbs = map[string]bool{"ordered": true, "bought": true, "purchased": true, "placed": true, "made": true, "took": true, "take": true,
	"takes": true, "taking": true, "attended": true, "attend": true, "attends": true, "attending": true, "enrolled": true, "studied": true}

// activeWithoutObject reports whether the verb at token i follows "who"/"that" (the main
// rows do it) and no dataset or value is named within three words after it.
func (q *query) activeWithoutObject(i int) bool {
	active := false
	for k := i - 1; k >= 0 && k >= i-3; k-- {
		w := q.p.toks[k]
		if w == "who" || w == "that" || w == "which" {
			active = true
			break
		}
		if w != "have" && w != "has" && w != "had" && w != "never" && w != "not" && w != "ever" && w != "already" && w != "did" && w != "also" {
			break
		}
	}
	if !active {
		return false
	}
	for _, m := range q.ms {
		if m.pos > i && m.pos <= i+3 && (m.column == "" || m.value != "") {
			return false
		}
	}
	return true
}

// readVerbExistence reads a verb with no object that is the related rows' own name as a verb
// ("customers who ordered": orders; "clients who purchased", "clients that bought":
// purchases) as the main rows having such rows; with "never" or "not" before it, having none.
// The verb must end the question (its own clause) and derive from the name of exactly one
// dataset the main one has many of (its stem), or be its synonym in WordNet ("buy" of
// purchase); "customers that bought" over Orders is not read (to buy is not to order).
func (q *query) readVerbExistence() {
	p := q.p
	for i, t := range p.toks {
		if p.used[i] || !pastForm(t) {
			continue
		}
		neg, ok := q.verbClause(i)
		if !ok {
			continue
		}
		var refs []string
		for _, tb := range p.s.Tables {
			if tb.Ref != q.main && (q.relation(tb.Ref, q.main) != nil || q.junction(q.main, tb.Ref) != nil) && verbOfName(t, tb) {
				refs = append(refs, tb.Ref)
			}
		}
		if len(refs) != 1 {
			continue
		}
		ref := refs[0]
		if q.verbRead == nil {
			q.verbRead = map[int]string{}
		}
		q.verbRead[i] = ref
		p.mark(i, i+1)
		if neg >= 0 {
			p.mark(neg, neg+1)
			q.notExists[ref] = append(q.notExists[ref], q.exists[ref]...)
			delete(q.exists, ref)
			p.step("Kept %s rows that have no matching %s (%q)", alias(q.main), alias(ref), t)
			continue
		}
		if _, ok := q.exists[ref]; !ok {
			q.exists[ref] = nil
		}
		p.step("Kept %s rows that have matching %s (%q)", alias(q.main), alias(ref), t)
	}
}

// pastForm reports whether w is a verb's past form: regular ("ordered") or irregular
// ("bought").
func pastForm(w string) bool {
	return len(w) >= 5 && strings.HasSuffix(w, "ed") || lexicon.Base(w) != w
}

// verbClause reports whether the verb at token i is said of the main rows with no object
// and ends the question: "customers who (have) ordered", "how many customers (have)
// ordered". neg is the token of a "never" or "not" before it, or -1.
func (q *query) verbClause(i int) (neg int, ok bool) {
	p := q.p
	for k := i + 1; k < len(p.toks); k++ {
		if !fillers[p.toks[k]] || p.inMention[k] {
			return -1, false
		}
	}
	neg = -1
	for k := i - 1; k >= 0 && k >= i-4; k-- {
		switch w := p.toks[k]; w {
		case "who", "that", "which":
			return neg, true
		case "never", "not":
			neg = k
		case "have", "has", "had", "ever", "already", "did", "also":
		default:
			// "how many customers ordered": right after the main rows' name
			for _, m := range q.ms {
				if m.end == k+1 && m.table == q.main && m.column == "" && m.value == "" {
					return neg, true
				}
			}
			return -1, false
		}
	}
	return -1, false
}

// verbOfName reports whether verb form w is what table t's rows are named after: its stem is
// the stem of the name's last word ("ordered", orders), or its base form is a synonym of it
// in WordNet ("bought": buy, purchases).
func verbOfName(w string, t Table) bool {
	var bases []string
	if b := lexicon.Base(w); b != w {
		bases = append(bases, b)
	} else {
		bases = append(bases, w[:len(w)-1], w[:len(w)-2]) // "purchased": purchase; "ordered": order
	}
	for _, name := range []string{t.Dataset, t.Name} {
		ws := words(name)
		if len(ws) == 0 {
			continue
		}
		last := ws[len(ws)-1]
		ns := []string{singular(last), strings.TrimSuffix(last, "s")} // "purchases": purchase, not purchas
		if len(last) >= 4 && lexicon.Stem(w) == lexicon.Stem(last) {
			return true
		}
		for _, b := range bases {
			if slices.ContainsFunc(ns, func(n string) bool { return lexicon.Synonyms(b, n) }) {
				return true
			}
		}
	}
	return false
}

// readExistence reads a many-side table named and not otherwise read: "customers who placed
// orders" (EXISTS), "customers who never placed an order", "without orders", "with no
// orders" (NOT EXISTS, with the conditions on that table read so far).
func (q *query) readExistence() error {
	p := q.p
	q.readVerbExistence()
	for _, m := range q.ms {
		if m.column != "" || m.value != "" || m.table == q.main || q.joined[m.table] || q.countRefs[m.table] {
			continue
		}
		if q.relation(m.table, q.main) == nil && q.junction(q.main, m.table) == nil {
			continue // accounted for below: refused
		}
		neg := -1
		for k := m.pos - 1; k >= 0 && k >= m.pos-4; k-- {
			if p.used[k] && !p.inMention[k] {
				break
			}
			if w := p.toks[k]; w == "never" || w == "no" || w == "without" || w == "not" || w == "none" || w == "zero" {
				neg = k
			}
		}
		if neg >= 0 {
			p.mark(neg, neg+1)
			q.notExists[m.table] = append(q.notExists[m.table], q.exists[m.table]...)
			if _, ok := q.exists[m.table]; ok {
				q.p.steps = slices.DeleteFunc(q.p.steps, func(s string) bool {
					return s == fmt.Sprintf("Kept %s rows that have matching %s", alias(q.main), alias(m.table))
				})
			}
			delete(q.exists, m.table)
			q.p.step("Kept %s rows that have no matching %s", alias(q.main), alias(m.table))
			if len(q.groups) > 0 && q.groups[0].col.table == m.table {
				return p.refuse("it groups by a column of " + alias(m.table) + " it asks to have none of")
			}
			continue
		}
		if _, ok := q.exists[m.table]; !ok && !q.linked(m.pos) {
			continue // "statuses of orders": not said to have them; refused below
		}
		if _, ok := q.exists[m.table]; !ok {
			q.exists[m.table] = nil
			q.p.step("Kept %s rows that have matching %s", alias(q.main), alias(m.table))
		}
	}
	return nil
}

// linked reports whether the words before token i say the main rows have the rows named at
// i: "with", "have", "placed", "who bought".
func (q *query) linked(i int) bool {
	for k := i - 1; k >= 0 && k >= i-3; k-- {
		switch q.p.toks[k] {
		case "with", "have", "has", "had", "having", "placed", "made", "ordered", "bought", "purchased", "who", "that", "which", "whose":
			return true
		case "a", "an", "any", "some", "at", "least", "one", "ever", "already":
			continue
		}
		if !relationVerbs[q.p.toks[k]] {
			return false
		}
	}
	return false
}

// consumed reports whether a mention was read into the answer.
func (q *query) consumed(m mention) bool {
	switch {
	case m.value != "":
		for k := m.pos; k < m.end; k++ {
			if !q.p.used[k] {
				return false
			}
		}
		return true
	case m.column != "":
		if q.usedCols[colRef{m.table, m.column}] {
			return true
		}
		// "zip 02134", "New York state": the column named beside its value
		for _, n := range q.ms {
			if n.value != "" && n.table == m.table && n.column == m.column && (n.pos == m.end || n.end == m.pos) && q.consumed(n) {
				return true
			}
		}
		// "customers who placed orders": a verb that names a column in passing; "packages
		// shipped by Crescent Cargo": the verb of who did it
		if q.verbRead[m.pos] != "" {
			return true // "clients who purchased": purchases (readVerbExistence)
		}
		if m.end-m.pos == 1 && (relationVerbs[q.p.toks[m.pos]] && !q.activeWithoutObject(m.pos) || m.pos == q.actorVerbAt) {
			// a verb said of the main rows with no object ("departments that hired") is
			// not in passing: unread, it refuses
			return true
		}
		return false
	default:
		return slices.Contains(q.tables(), m.table) || q.countRefs[m.table] || q.notExists[m.table] != nil
	}
}

// account refuses a question with a word the reading did not use (other than fillers): a
// dropped word would answer a different question.
func (q *query) account() error {
	p := q.p
	var missing, described []string
	var sug []string
	var unknownAt []int
	for _, m := range q.ms {
		if q.consumed(m) {
			p.mark(m.pos, m.end)
			continue
		}
		phrase := strings.Join(p.toks[m.pos:m.end], " ")
		missing = append(missing, fmt.Sprintf("%q", phrase))
		what := "the dataset " + p.s.table(m.table).Dataset
		if m.value != "" {
			what = fmt.Sprintf("the value %s of %s", m.value, q.label(colRef{m.table, m.column}))
		} else if m.column != "" {
			what = "the column " + q.label(colRef{m.table, m.column}) + " of " + p.s.table(m.table).Dataset
		}
		p.mark(m.pos, m.end)
		sug = append(sug, fmt.Sprintf("%q was read as %s, which this reading (%s) does not use: ask about it on its own", phrase, what, q.summary()))
	}
	for i, t := range p.toks {
		if objectVerbs[t] && !p.inMention[i] && q.activeWithoutObject(i) && q.verbRead[i] == "" {
			// "customers who ordered": ordered what? Read without it, every customer
			missing = append(missing, fmt.Sprintf("%q", t))
			sug = append(sug, fmt.Sprintf("%q is read only with what was %s named after it", t, t))
			for _, tb := range p.s.Tables {
				if q.relation(tb.Ref, q.main) != nil {
					sug = append(sug, fmt.Sprintf("%s with %s", alias(q.main), alias(tb.Ref))) // "customers with orders"
				}
			}
			continue
		}
		if p.used[i] || p.inMention[i] || fillers[t] {
			continue
		}
		if t == "or" && i > 0 && i+1 < len(p.toks) && p.inMention[i-1] && p.inMention[i+1] && q.sameColumnValues(i-1, i+1) {
			continue // "in Paris or Rome"
		}
		if t == "by" && i+1 < len(p.toks) && p.inMention[i+1] && p.used[i+1] && q.valueAt(i+1) {
			continue // "shipments by ups": a value
		}
		if t == "broken" && q.tok(i+1) == "down" || t == "down" && q.tok(i-1) == "broken" && q.tok(i+1) == "by" && p.used[i+1] {
			continue // "broken down by"
		}
		if q.byIndex && !q.namedAnything() && q.bare() && slices.Contains(p.s.table(q.main).Matched, t) {
			described = append(described, fmt.Sprintf("%q", t)) // the search index read these
			continue
		}
		missing = append(missing, fmt.Sprintf("%q", t))
		sug = append(sug, q.closeNames(t)...)
		unknownAt = append(unknownAt, i)
	}
	if len(missing) == 0 {
		if len(described) > 0 {
			p.assume("%s describe %s (the search index matched them to it)", strings.Join(described, ", "), p.s.table(q.main).Dataset)
		}
		return nil
	}
	err := p.refuse("it does not understand "+strings.Join(missing, ", ")+" in the question, and answering without it would answer a different question", sug...)
	if len(unknownAt) == len(missing) {
		err.(*NotUnderstood).without = q.without(unknownAt)
	}
	return err
}

// without is the question without the tokens at the indexes given (a rephrasing to suggest
// when those are words the engine does not know).
// Not when one of them says how to compare or compute ("above", "more"): without it the
// question would ask something else altogether.
func (q *query) without(at []int) string {
	var ws []string
	for i, t := range q.p.toks {
		if !slices.Contains(at, i) {
			ws = append(ws, t)
		} else if intentWords[t] && t != "no" && t != "not" {
			return ""
		}
	}
	for len(ws) > 0 && (stop[ws[len(ws)-1]] || fillers[ws[len(ws)-1]]) {
		ws = ws[:len(ws)-1] // "how many devices are (offline)"
	}
	return strings.Join(ws, " ")
}

// unknown adds to a refusal the words of the question that are nothing the engine knows, with
// the names close to them.
func (q *query) unknown(err error) error {
	nu, ok := err.(*NotUnderstood)
	if !ok {
		return err
	}
	var words, sug []string
	var at []int
	for i, t := range q.p.toks {
		if q.p.used[i] || q.p.inMention[i] || fillers[t] || stop[t] || intentWords[t] || isNumber.MatchString(t) || units[t] != "" || months[t] != 0 {
			continue
		}
		words = append(words, fmt.Sprintf("%q", t))
		sug = append(sug, q.closeNames(t)...)
		at = append(at, i)
	}
	if len(words) > 0 && !strings.Contains(nu.Reason, words[0]) {
		nu.Reason += "; it does not know " + strings.Join(words, ", ")
		nu.Suggestions = append(sug, nu.Suggestions...)
		nu.without = q.without(at)
	}
	return nu
}

// bare reports whether the reading is a plain count or listing of the main table, with
// nothing filtered, grouped, measured or ordered.
func (q *query) bare() bool {
	return len(q.where) == 0 && len(q.groups) == 0 && len(q.exists) == 0 && len(q.notExists) == 0 && q.measure == nil && q.orderBy == nil &&
		q.order == "" && !q.share && (q.agg == Count || q.agg == NoAgg && q.rows)
}

// namedAnything reports whether the question names a table, column or value.
func (q *query) namedAnything() bool { return len(q.ms) > 0 }

func (q *query) valueAt(i int) bool {
	for _, m := range q.ms {
		if m.pos <= i && i < m.end {
			return m.value != ""
		}
	}
	return false
}

// sameColumnValues reports whether tokens i and j are in values of one column.
func (q *query) sameColumnValues(i, j int) bool {
	var a, b *mention
	for k := range q.ms {
		m := &q.ms[k]
		if m.pos <= i && i < m.end {
			a = m
		}
		if m.pos <= j && j < m.end {
			b = m
		}
	}
	return a != nil && b != nil && a.value != "" && b.value != "" && a.table == b.table && a.column == b.column
}

// closeNames are suggestions for a word the engine did not understand: the columns, values
// and datasets whose names are close to it.
func (q *query) closeNames(w string) []string {
	var out []string
	near := func(name string) bool {
		// a short word is close only to a word one letter away ("not" is no "unit")
		far := 2
		if len(w) <= 3 {
			far = 1
		}
		for _, n := range words(name) {
			// a misspelling or a longer form of the name ("signups"), never a word that only
			// begins alike ("shipping" is not "shipment no")
			if len(n) >= 3 && (edits(singular(n), singular(w)) <= far || len(w) >= 5 && len(n) >= 4 && strings.HasPrefix(w, n)) {
				return true
			}
		}
		return false
	}
	for _, t := range q.p.s.Tables {
		if near(t.Dataset) {
			out = append(out, fmt.Sprintf("%q is not understood here; did you mean the dataset %s?", w, t.Dataset))
		}
		for _, c := range t.Columns {
			if near(c.Name) {
				out = append(out, fmt.Sprintf("%q is not understood here; did you mean the column %s of %s?", w, strings.Join(words(c.Name), " "), t.Dataset))
			}
			for _, v := range c.Values {
				// a value only when it is the word misspelt, never a look-alike name
				// ("march" is not "Dr. Marcus")
				if len(out) < 6 && len(w) >= 5 && months[w] == 0 && slices.ContainsFunc(words(v), func(n string) bool { return edits(n, w) <= 1 }) {
					out = append(out, fmt.Sprintf("%q is not understood here; did you mean %s (a %s of %s)?", w, v, strings.Join(words(c.Name), " "), t.Dataset))
				}
			}
		}
		if len(out) >= 4 {
			break
		}
	}
	if len(out) == 0 {
		out = append(out, fmt.Sprintf("%q is no dataset, column or known value of this project: leave it out or name a column", w))
	}
	return out
}
