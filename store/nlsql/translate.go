package nlsql

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"dataplatform/store/nlsql/lexicon"

	"github.com/lib/pq"
)

// Answer is a question read as SQL.
type Answer struct {
	SQL      string
	Params   map[string]any // the values of the {{pN}} placeholders
	Tables   []string       // the table refs it reads
	Steps    []string       // how the question was read
	Warnings []string       // the assumptions it made (a default date column, a default measure)
	Summary  string
}

// NotUnderstood is a question the engine cannot read well enough to answer.
type NotUnderstood struct {
	Reason      string
	Suggestions []string
	without     string // the question without the words the engine does not know, or ""
}

func (e *NotUnderstood) Error() string { return "the question could not be answered: " + e.Reason }

// mention is a place in the question that names a table, a column or a column's value.
type mention struct {
	table  string // ref
	column string // "" for a table mention
	value  string // a text column's value
	pos    int    // first token
	end    int    // after the last token
	// synonym is the word of the question that named the column when it is not a word of
	// the column's own name ("revenue" for amount)
	synonym string
	lexical bool // the synonym is the lexicon's (WordNet's), an assumption to state
	alias   bool // the synonym is one the dataset's owner gave the column
	// antonym: the word is the opposite of a yes/no column's ("indoor" of is_outdoor), in
	// WordNet: the column is false
	antonym bool
}

type parser struct {
	s         *Schema
	toks      []string
	used      []bool // tokens read as something
	inMention []bool // tokens that are part of a mention
	now       time.Time
	params    map[string]any
	// shadowed are values one word long that are also a column's word: read as the column
	shadowed []mention
	steps    []string
	warnings []string
}

// assume states an assumption in the steps and the warnings.
func (p *parser) assume(format string, args ...any) {
	s := fmt.Sprintf(format, args...)
	p.steps = append(p.steps, "Assumed "+s)
	p.warnings = append(p.warnings, "assumed "+s)
}

func (p *parser) param(v any) string {
	name := fmt.Sprintf("p%d", len(p.params)+1)
	p.params[name] = v
	return "{{" + name + "}}"
}

func (p *parser) step(format string, args ...any) {
	p.steps = append(p.steps, fmt.Sprintf(format, args...))
}

// tok is token i, or "" outside the question.
func (p *parser) tok(i int) string {
	if i < 0 || i >= len(p.toks) {
		return ""
	}
	return p.toks[i]
}

func (p *parser) mark(from, to int) {
	for i := from; i < to && i < len(p.used); i++ {
		p.used[i] = true
	}
}

var (
	digitComma = regexp.MustCompile(`(\d),(\d{3})`)
	isNumber   = regexp.MustCompile(`^-?\d+(\.\d+)?$`)
	isYear     = regexp.MustCompile(`^(19|20)\d\d$`)
	isDate     = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}$`)
	nonPrefix  = regexp.MustCompile(`(^|\s)non-`)
	usCaps     = regexp.MustCompile(`(^|[^A-Za-z.])U\.?S\.?([^A-Za-z]|$)`)
)

var months = map[string]time.Month{"january": 1, "jan": 1, "february": 2, "feb": 2, "march": 3, "mar": 3, "april": 4, "apr": 4,
	"may": 5, "june": 6, "jun": 6, "july": 7, "jul": 7, "august": 8, "aug": 8, "september": 9, "sep": 9, "sept": 9,
	"october": 10, "oct": 10, "november": 11, "nov": 11, "december": 12, "dec": 12}

var units = map[string]string{"day": "day", "days": "day", "daily": "day", "week": "week", "weeks": "week", "weekly": "week",
	"month": "month", "months": "month", "monthly": "month", "quarter": "quarter", "quarters": "quarter", "quarterly": "quarter",
	"year": "year", "years": "year", "yearly": "year", "annually": "year"}

var stop = map[string]bool{"the": true, "a": true, "an": true, "of": true, "in": true, "on": true, "for": true, "with": true, "and": true,
	"is": true, "are": true, "was": true, "were": true, "what": true, "which": true, "who": true, "show": true, "me": true, "list": true,
	"give": true, "get": true, "find": true, "all": true, "to": true, "from": true, "that": true, "have": true, "has": true, "do": true,
	"does": true, "did": true, "there": true, "their": true, "its": true, "by": true, "per": true, "each": true, "than": true, "be": true,
	"please": true, "tell": true, "i": true, "we": true, "our": true, "my": true, "how": true, "at": true, "as": true, "it": true,
	"whose": true, "where": true, "when": true, "this": true, "last": true, "these": true, "those": true, "they": true, "them": true}

// tokenize lowers the question and splits it into words, numbers and dates.
func tokenize(q string) []string {
	q = usCaps.ReplaceAllString(q, "${1}USA${2}") // "US" is the country, "us" a pronoun
	q = strings.ToLower(digitComma.ReplaceAllString(q, "$1$2"))
	q = nonPrefix.ReplaceAllString(q, "${1}non ")
	q = strings.NewReplacer("$", " ", "€", " ", "£", " ", "?", " ", "!", " ", ",", " ", ";", " ", ":", " ", "\"", " ", "'s ", " ",
		"'", " ", "(", " ", ")", " ", ">=", " >= ", "<=", " <= ", ">", " > ", "<", " < ", "=", " = ").Replace(q + " ")
	var out []string
	for _, w := range strings.Fields(q) {
		w = strings.TrimSuffix(w, ".")
		if w != "" {
			out = append(out, w)
		}
	}
	return out
}

// Translate reads question against s. now anchors relative time phrases ("last month").
// Every word of the question is accounted for: read as part of the answer, or a known filler
// word; a question with a word it did not use is refused, never answered without it.
func Translate(question string, s Schema, now time.Time) (*Answer, error) {
	a, err := translate(question, s, now)
	if nu, ok := err.(*NotUnderstood); ok {
		nu.Suggestions = answerable(nu, s, now)
	}
	return a, err
}

// answerable orders a refusal's suggestions: the rephrasings the engine answers first (then
// the question without the words it does not know, when that is answered), then the hints
// about words; a rephrasing it would refuse in turn is dropped.
func answerable(nu *NotUnderstood, s Schema, now time.Time) []string {
	var questions, hints []string
	for _, sug := range nu.Suggestions {
		if strings.Contains(sug, `"`) {
			hints = append(hints, sug)
		} else if _, err := translate(sug, s, now); err == nil && !slices.Contains(questions, sug) {
			questions = append(questions, sug)
		}
	}
	if nu.without != "" && !slices.Contains(questions, nu.without) {
		if _, err := translate(nu.without, s, now); err == nil {
			questions = append(questions, nu.without)
		}
	}
	out := append(questions, hints...)
	if len(out) == 0 {
		return nu.Suggestions
	}
	return out
}

func translate(question string, s Schema, now time.Time) (*Answer, error) {
	s = withComputedValues(withRoles(s))
	p := &parser{s: &s, toks: tokenize(question), now: now.UTC(), params: map[string]any{}}
	p.used = make([]bool, len(p.toks))
	p.inMention = make([]bool, len(p.toks))
	if len(p.toks) == 0 {
		return nil, p.refuse("the question is empty")
	}
	ms := p.mentions()
	for _, m := range ms {
		for k := m.pos; k < m.end; k++ {
			p.inMention[k] = true
		}
	}
	q := &query{p: p}
	ms = q.pickRoles(ms)
	if err := q.read(ms); err != nil {
		return nil, q.unknown(err)
	}
	sql, err := q.sql()
	if err != nil {
		return nil, q.unknown(err)
	}
	sql = q.wrapPerEntity(sql)
	if err := q.account(); err != nil {
		return nil, err
	}
	for _, m := range ms {
		if m.alias && q.consumed(m) {
			p.step("Read %q as %s of %s (its owner's name for it)", m.synonym, q.label(colRef{m.table, m.column}), p.s.table(m.table).Dataset)
		}
		if m.antonym && q.consumed(m) {
			p.assume("%q means not %s of %s (its opposite in WordNet)", m.synonym, q.label(colRef{m.table, m.column}), p.s.table(m.table).Dataset)
		}
		if m.lexical {
			what := p.s.table(m.table).Dataset
			if m.column != "" {
				what = "the column " + q.label(colRef{m.table, m.column}) + " of " + what
			}
			p.assume("%q means %s (a synonym in WordNet, or an abbreviation)", m.synonym, what)
		}
	}
	return &Answer{SQL: sql, Params: p.params, Tables: q.tables(), Steps: p.steps, Warnings: p.warnings, Summary: q.summary()}, nil
}

// mentions finds the tables, columns and known values the question names, longest first.
func (p *parser) mentions() []mention {
	f := &mentionFinder{p: p, taken: make([]bool, len(p.toks))}
	for _, t := range p.s.Tables {
		for k := range t.Columns {
			c := &t.Columns[k]
			f.cols = append(f.cols, colInfo{table: t.Ref, col: c, ws: words(c.Name), flag: flagWords(*c)})
			for _, a := range c.Aliases {
				if ws := words(a); len(ws) > 0 && len(ws) <= 3 {
					f.cols = append(f.cols, colInfo{table: t.Ref, col: c, ws: ws, alias: a})
				}
			}
		}
	}
	f.named = f.namedTables()
	f.values()
	f.tables()
	f.columns()
	f.columnWords()
	slices.SortFunc(f.out, func(a, b mention) int { return a.pos - b.pos })
	return f.out
}

// mentionFinder collects mentions kind after kind; a token one mention takes is not read again.
type mentionFinder struct {
	p     *parser
	taken []bool
	out   []mention
	named map[string]bool // tables the question names
	cols  []colInfo       // every column with its words, once
}

// colInfo is a column of a table with the words of its name (and of a flag's, "vip" of
// is_vip).
type colInfo struct {
	table    string
	col      *Column
	ws, flag []string
	alias    string // the owner's other name of the column these words are
}

// free reports whether tokens i to i+n exist and no mention has taken them.
func (f *mentionFinder) free(i, n int) bool {
	if i+n > len(f.taken) {
		return false
	}
	for k := i; k < i+n; k++ {
		if f.taken[k] {
			return false
		}
	}
	return true
}

// take keeps m and marks its tokens taken.
func (f *mentionFinder) take(m mention) {
	for k := m.pos; k < m.end; k++ {
		f.taken[k] = true
	}
	f.out = append(f.out, m)
}

// matchWords reports whether the tokens from i are the words ws (up to plural and typos).
func (f *mentionFinder) matchWords(i int, ws []string) bool {
	if i+len(ws) > len(f.p.toks) {
		return false
	}
	for k, w := range ws {
		if !close(f.p.toks[i+k], w) {
			return false
		}
	}
	return true
}

// best takes the first of found, preferring one of a table the question names.
func (f *mentionFinder) best(found []mention) {
	if len(found) == 0 {
		return
	}
	pick := found[0]
	for _, m := range found {
		if f.named[m.table] && !f.named[pick.table] {
			pick = m
		}
	}
	// "department name": the table named just before the column
	if before := f.tableBefore(found[0].pos); before != "" {
		for _, m := range found {
			if m.table == before {
				pick = m
				break
			}
		}
	}
	f.take(pick)
}

// tableBefore is the table of the table mention ending at token i, or "".
func (f *mentionFinder) tableBefore(i int) string {
	for _, m := range f.out {
		if m.end == i && m.column == "" && m.value == "" {
			return m.table
		}
	}
	return ""
}

// namedTables are the tables the question names (a value of several tables goes to a named one).
func (f *mentionFinder) namedTables() map[string]bool {
	p := f.p
	named := map[string]bool{}
	for i := range p.toks {
		for _, t := range p.s.Tables {
			for _, name := range []string{t.Dataset, t.Name} {
				if ws := words(name); len(ws) > 0 && (f.matchWords(i, ws) || close(p.toks[i], ws[len(ws)-1])) {
					named[t.Ref] = true
				}
			}
		}
	}
	return named
}

// values takes the known values of text columns, longest first: "new york" before "york".
func (f *mentionFinder) values() {
	p := f.p
	// The question's phrases of up to four words, then one pass over the known values:
	// exact phrases, and single words misspelt by one typing mistake (five letters or more).
	type span struct{ n, i int }
	phrases := map[string][]span{}
	for n := 4; n >= 1; n-- {
		for i := 0; i+n <= len(p.toks); i++ {
			phrase := strings.Join(p.toks[i:i+n], " ")
			if n == 1 && (stop[phrase] || intentWords[phrase] || isNumber.MatchString(phrase) && !(i > 0 && p.namesColumn(p.toks[i-1]))) {
				continue // a number is a value only after its column's name: "zip 02134"
			}
			phrases[phrase] = append(phrases[phrase], span{n, i})
		}
	}
	exact, misspelt := map[span][]mention{}, map[span][]mention{}
	for _, t := range p.s.Tables {
		for _, c := range t.Columns {
			for _, v := range c.Values {
				lv := lower(v)
				if strings.ContainsAny(lv, ".,'()") {
					lv = strings.Join(tokenize(v), " ") // "Dr. Maria Alvarez" as the question's words
				}
				for _, sp := range phrases[lv] {
					exact[sp] = append(exact[sp], mention{table: t.Ref, column: c.Name, value: v, pos: sp.i, end: sp.i + sp.n})
				}
				for _, alt := range placeNames(&c, v) {
					for _, sp := range phrases[alt] {
						exact[sp] = append(exact[sp], mention{table: t.Ref, column: c.Name, value: v, pos: sp.i, end: sp.i + sp.n, synonym: alt})
					}
				}
				if len(lv) < 5 || strings.IndexByte(lv, ' ') >= 0 {
					continue
				}
				for i, tok := range p.toks {
					if d := len(lv) - len(tok); d <= 1 && d >= -1 && lv != tok && oneEdit(lv, tok) && len(phrases[tok]) > 0 {
						sp := span{1, i}
						misspelt[sp] = append(misspelt[sp], mention{table: t.Ref, column: c.Name, value: v, pos: i, end: i + 1})
					}
				}
			}
		}
	}
	for n := 4; n >= 1; n-- {
		for i := 0; i+n <= len(p.toks); i++ {
			if !f.free(i, n) {
				continue
			}
			sp := span{n, i}
			found := append(exact[sp], misspelt[sp]...) // exact before misspelt
			if n == 1 && len(found) > 0 && p.namesSomething(p.toks[i]) {
				// "status delivered": a value after its column's name is the value
				named := slices.DeleteFunc(slices.Clone(found), func(m mention) bool {
					return !slices.ContainsFunc(words(m.column), func(w string) bool { return close(p.tok(i-1), w) })
				})
				if len(named) == 0 {
					// "delivered" of delivered_on and of a status: kept, to refuse the one
					// reading the question would otherwise get silently (see readPresence)
					p.shadowed = append(p.shadowed, found...)
					continue
				}
				found = named
			}
			f.best(found)
		}
	}
}

// lower is s in lower case, without a copy when it is already.
func lower(s string) string {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= 'A' && c <= 'Z' || c >= 0x80 {
			return strings.ToLower(s)
		}
	}
	return s
}

// tables takes the tables by their names ("sales orders", "orders").
func (f *mentionFinder) tables() {
	p := f.p
	for i := range p.toks {
		for _, t := range p.s.Tables {
			for _, name := range []string{t.Dataset, t.Name} {
				ws := words(name)
				if len(ws) > 0 && f.free(i, len(ws)) && f.matchWords(i, ws) {
					f.take(mention{table: t.Ref, pos: i, end: i + len(ws)})
				} else if len(ws) > 1 && f.free(i, 1) && close(p.toks[i], ws[len(ws)-1]) && (!p.namesColumn(p.toks[i]) || p.namesOnlyKeyOf(t.Ref, p.toks[i])) {
					f.take(mention{table: t.Ref, pos: i, end: i + 1}) // "orders" for "Sales Orders", "claims" for "Expense Claims" (claim_ref)
				}
			}
		}
	}
	// "physicians" for Doctors, "customers" for Clients: a word that names nothing itself and
	// is a synonym of one table's name
	for i, tok := range p.toks {
		if !f.free(i, 1) || !lexicalCandidate(tok) || p.namesSomething(tok) {
			continue
		}
		var found []mention
		for _, t := range p.s.Tables {
			for _, name := range []string{t.Dataset, t.Name} {
				if ws := words(name); len(ws) > 0 && (lexicon.Synonyms(singular(tok), singular(ws[len(ws)-1])) || slices.Contains(entitySynonyms[singular(ws[len(ws)-1])], singular(tok))) &&
					!slices.ContainsFunc(found, func(m mention) bool { return m.table == t.Ref }) {
					found = append(found, mention{table: t.Ref, pos: i, end: i + 1, synonym: tok, lexical: true})
				}
			}
		}
		if len(found) == 1 {
			f.take(found[0])
		}
	}
}

// entitySynonyms are the business words for the rows of a dataset that the lexicon does not
// hold as synonyms of its name ("staff" for employees): assumptions, stated as such.
var entitySynonyms = map[string][]string{"employee": {"staff", "personnel", "worker", "workforce"}, "reading": {"measurement"},
	"carrier": {"courier", "hauler", "haulier"}, "shipment": {"consignment"}, "customer": {"client", "buyer"}, "client": {"customer"}}

// lexicalCandidate reports whether a word of the question may be looked up in the lexicon: not
// a word the engine reads itself (intent, filler, time, numbers).
func lexicalCandidate(w string) bool {
	return len(w) >= 3 && !stop[w] && !intentWords[w] && !fillers[w] && units[w] == "" && months[w] == 0 && !isNumber.MatchString(w) &&
		!actorVerbs[w] && !relationVerbs[w]
}

// columns takes the columns by their names, longest first (in several tables: a named one's).
func (f *mentionFinder) columns() {
	p := f.p
	for n := 3; n >= 1; n-- {
		for i := range p.toks {
			if !f.free(i, n) {
				continue
			}
			var found []mention
			for _, ci := range f.cols {
				if len(ci.ws) == n && f.matchWords(i, ci.ws) {
					found = append(found, mention{table: ci.table, column: ci.col.Name, pos: i, end: i + n, synonym: ci.alias, alias: ci.alias != ""})
				} else if n == 1 && len(ci.ws) > 1 && strings.Contains(p.toks[i], "-") && slices.EqualFunc(strings.Split(p.toks[i], "-"), ci.ws, close) {
					found = append(found, mention{table: ci.table, column: ci.col.Name, pos: i, end: i + 1}) // "follow-up" for follow_up
				} else if parts := strings.Split(p.toks[i], "-"); n == 1 && len(parts) > 1 && len(parts) < len(ci.ws) && slices.EqualFunc(parts, ci.ws[:len(parts)], close) &&
					f.free(i, 1+len(ci.ws)-len(parts)) && f.matchWords(i+1, ci.ws[len(parts):]) {
					found = append(found, mention{table: ci.table, column: ci.col.Name, pos: i, end: i + 1 + len(ci.ws) - len(parts)}) // "on-time rate" for on_time_rate
				} else if len(ci.flag) == n && f.matchWords(i, ci.flag) {
					found = append(found, mention{table: ci.table, column: ci.col.Name, pos: i, end: i + n}) // "vip" for is_vip
				}
			}
			if n == 1 && f.free(i, 1) && len(p.toks[i]) >= 3 && !stop[p.toks[i]] && !intentWords[p.toks[i]] {
				// "employees by name": the named table's full_name before another table's name
				for _, t := range p.s.Tables {
					if !f.named[t.Ref] || slices.ContainsFunc(found, func(m mention) bool { return m.table == t.Ref }) {
						continue
					}
					var last []mention
					for _, ci := range f.cols {
						if ci.table == t.Ref && ci.alias == "" && len(ci.ws) > 1 && !keyLike(ci.col.Name) && !ci.col.temporal() && close(p.toks[i], ci.ws[len(ci.ws)-1]) {
							last = append(last, mention{table: t.Ref, column: ci.col.Name, pos: i, end: i + 1})
						}
					}
					if len(last) == 1 && (len(found) == 0 || !f.named[found[0].table] && f.tableBefore(i) != found[0].table) {
						found = append(last, found...)
					}
				}
			}
			f.best(found)
		}
	}
}

// columnWords takes the columns named by a synonym or by a distinctive word of their name.
func (f *mentionFinder) columnWords() {
	p := f.p
	for i, tok := range p.toks {
		if !f.free(i, 1) || stop[tok] || intentWords[tok] || units[tok] != "" || months[tok] != 0 || len(tok) < 3 {
			continue
		}
		if shareWords[tok] && p.tok(i+1) == "of" {
			continue // "percentage of devices that are outdoor": a share, not a pct column
		}
		var found []mention
		for _, ci := range f.cols {
			if ci.alias != "" {
				continue // an owner's name is read whole (columns)
			}
			for _, w := range ci.ws {
				// A synonym ("revenue" for amount), or a distinctive word of a longer name
				// ("signup" for signup_date).
				if slices.ContainsFunc(synonyms[w], func(s string) bool { return s == tok || len(tok) >= 5 && lexicon.Stem(s) == lexicon.Stem(tok) }) {
					found = append(found, mention{table: ci.table, column: ci.col.Name, pos: i, end: i + 1, synonym: tok})
				} else if len(ci.ws) > 1 && !generic[w] && len(w) >= 4 && close(tok, w) && !p.namesTable(tok) {
					found = append(found, mention{table: ci.table, column: ci.col.Name, pos: i, end: i + 1})
				}
			}
		}
		if k := f.columnEndingAt(i); k >= 0 && (tok == "date" || tok == "day") && f.temporal(f.out[k]) {
			f.out[k].end = i + 1 // "delivery date" of delivered_on
			f.taken[i] = true
			continue
		}
		if len(found) == 0 {
			found = f.eventNoun(i)
		}
		if k := f.columnEndingAt(i); k >= 0 && slices.ContainsFunc(found, func(m mention) bool { return m.table == f.out[k].table && m.column == f.out[k].column }) {
			// "destination city": a word of the column just named (dest_city) goes with it,
			// not to another column it is also a word of (origin_city)
			f.out[k].end = i + 1
			f.taken[i] = true
			continue
		}
		if len(found) > 1 && slices.ContainsFunc(found, func(m mention) bool { return m.synonym != "" && !p.s.perUnit(m.table, m.column) }) {
			// "order value" with a total and a unit price: the value of the whole row
			found = slices.DeleteFunc(found, func(m mention) bool { return m.synonym != "" && p.s.perUnit(m.table, m.column) })
		}
		if len(found) == 0 && lexicalCandidate(tok) && !p.namesSomething(tok) {
			// a synonym in the lexicon of a column's name or of its last word ("sold" for
			// "sales", "clinician" for "doctor"), when it points at one column only
			for _, ci := range f.cols {
				if ci.alias != "" {
					continue
				}
				name := strings.Join(ci.ws, "_")
				if !keyLike(ci.col.Name) && slices.ContainsFunc(ci.ws, func(w string) bool { return abbreviates(w, singular(tok)) }) {
					found = append(found, mention{table: ci.table, column: ci.col.Name, pos: i, end: i + 1, synonym: tok, lexical: true})
					continue
				}
				if keyLike(ci.col.Name) || !lexicon.Synonyms(singular(tok), name) && !slices.ContainsFunc(ci.ws, func(w string) bool {
					// a distinctive word of the name: "born" (bear) for birth_date
					return !generic[w] && (lexicon.Synonyms(singular(tok), singular(w)) || lexicon.Synonyms(lexicon.Base(tok), singular(w)))
				}) {
					continue
				}
				found = append(found, mention{table: ci.table, column: ci.col.Name, pos: i, end: i + 1, synonym: tok, lexical: true})
			}
			if len(found) > 1 {
				found = nil // several columns: not a reading to pick silently
			}
		}
		if len(found) == 0 && lexicalCandidate(tok) && !p.namesSomething(tok) {
			found = f.oppositeFlag(i)
		}
		f.best(found)
	}
}

// oppositeFlag is the yes/no column whose one word the word at token i is the opposite of in
// WordNet ("indoor" of is_outdoor), when one column is.
func (f *mentionFinder) oppositeFlag(i int) []mention {
	tok := f.p.toks[i]
	var found []mention
	for _, ci := range f.cols {
		ws := ci.flag
		if ci.col.Type != "boolean" || ci.alias != "" {
			continue
		}
		if ws == nil {
			ws = ci.ws
		}
		if len(ws) == 1 && (lexicon.Antonyms(tok, ws[0]) || lexicon.Antonyms(singular(tok), singular(ws[0]))) {
			found = append(found, mention{table: ci.table, column: ci.col.Name, pos: i, end: i + 1, synonym: tok, antonym: true})
		}
	}
	if len(found) > 1 {
		return nil // the opposite of several columns: not one to pick silently
	}
	return found
}

// temporal reports whether mention m is a date column's.
func (f *mentionFinder) temporal(m mention) bool {
	for _, ci := range f.cols {
		if ci.table == m.table && ci.col.Name == m.column {
			return ci.col.temporal()
		}
	}
	return false
}

// eventNoun is the date column whose participle the word at token i is the noun of:
// "delivery" of delivered_on, "approval" of approved_on, "arrival" of arrived_at.
func (f *mentionFinder) eventNoun(i int) []mention {
	tok := f.p.toks[i]
	var found []mention
	for _, ci := range f.cols {
		if !ci.col.temporal() || ci.alias != "" {
			continue
		}
		for _, w := range ci.ws {
			if base, ok := strings.CutSuffix(w, "ed"); ok && len(base) >= 4 && tok != w && strings.HasPrefix(tok, base) && len(tok)-len(base) <= 2 &&
				!slices.ContainsFunc(found, func(m mention) bool { return m.table == ci.table && m.column == ci.col.Name }) {
				found = append(found, mention{table: ci.table, column: ci.col.Name, pos: i, end: i + 1, synonym: tok})
			}
		}
	}
	if len(found) > 1 {
		return nil
	}
	return found
}

// columnEndingAt is the index in f.out of the column mention ending at token i, or -1.
func (f *mentionFinder) columnEndingAt(i int) int {
	for k, m := range f.out {
		if m.end == i && m.column != "" && m.value == "" {
			return k
		}
	}
	return -1
}

// flagWords are a boolean column's words without its is/has ("vip" for is_vip), or nil.
func flagWords(c Column) []string {
	ws := words(c.Name)
	if c.Type != "boolean" || len(ws) < 2 || ws[0] != "is" && ws[0] != "has" && ws[0] != "was" {
		return nil
	}
	return ws[1:]
}

// generic are words of column names too common to name a column on their own.
var generic = map[string]bool{"date": true, "time": true, "name": true, "type": true, "code": true, "number": true, "count": true,
	"value": true, "at": true, "id": true, "src": true, "total": true, "amount": true}

func (p *parser) namesTable(w string) bool {
	for _, t := range p.s.Tables {
		for _, n := range append(words(t.Dataset), words(t.Name)...) {
			if close(w, n) {
				return true
			}
		}
	}
	return false
}

// namesSomething reports whether a word is a table's or a column's name.
func (p *parser) namesSomething(w string) bool {
	for _, t := range p.s.Tables {
		for _, n := range append(words(t.Dataset), words(t.Name)...) {
			if close(w, n) {
				return true
			}
		}
	}
	return p.namesColumn(w)
}

// namesOnlyKeyOf reports whether every column a word names is a key of table ref named
// after its rows ("claim" of claim_ref in Expense Claims): the word names the rows.
func (p *parser) namesOnlyKeyOf(ref, w string) bool {
	for _, t := range p.s.Tables {
		for _, c := range t.Columns {
			if slices.ContainsFunc(words(c.Name), func(n string) bool { return close(w, n) }) && (t.Ref != ref || !keyLike(c.Name) && !strings.HasSuffix(c.Name, "_code")) {
				return false
			}
		}
	}
	return true
}

func (p *parser) namesColumn(w string) bool {
	for _, t := range p.s.Tables {
		for _, c := range t.Columns {
			for _, n := range words(c.Name) {
				if close(w, n) {
					return true
				}
			}
		}
	}
	return false
}

// refuse says the question cannot be answered, with questions that can be.
func (p *parser) refuse(reason string, first ...string) error {
	sug := append([]string{}, first...)
	if len(sug) > 0 {
		// a rephrasing of this question helps; questions about something else do not
		return &NotUnderstood{Reason: reason, Suggestions: sug}
	}
	for _, t := range p.s.Tables {
		label := strings.ToLower(t.Dataset)
		if t.Name != "" && t.Name != t.DatasetID && len(p.s.Tables) > 1 {
			label = t.Name
		}
		sug = append(sug, "How many "+label+" are there?")
		var num, cat *Column
		for i := range t.Columns {
			c := &t.Columns[i]
			if num == nil && c.numeric() && !keyLike(c.Name) {
				num = c
			}
			if cat == nil && len(c.Values) > 1 && c.Name != displayColumn(&t) {
				cat = c
			}
		}
		if num != nil && cat != nil {
			sug = append(sug, fmt.Sprintf("Average %s of %s by %s", strings.Join(words(num.Name), " "), label, strings.Join(words(cat.Name), " ")))
		}
		if cat != nil {
			sug = append(sug, fmt.Sprintf("%s in %s", strings.ToUpper(label[:1])+label[1:], cat.Values[0]))
		}
		if len(sug) >= 6+len(first) {
			break
		}
	}
	return &NotUnderstood{Reason: reason, Suggestions: sug}
}

// keyLike is a column that identifies rows rather than measures them.
func keyLike(name string) bool {
	return name == "id" || strings.HasSuffix(name, "_id") || strings.HasSuffix(name, "_no") || strings.HasSuffix(name, "_number") ||
		strings.HasSuffix(name, "_ref") || name == "version"
}

func quote(ident string) string { return pq.QuoteIdentifier(ident) }

func number(s string) (float64, bool) {
	if !isNumber.MatchString(s) {
		return 0, false
	}
	f, err := strconv.ParseFloat(s, 64)
	return f, err == nil
}
