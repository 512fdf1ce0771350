// Grouping: "by X", entities as groups, top N groups, and "sorted by".

package nlsql

import (
	"fmt"
	"slices"
	"strings"
)

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
		case units[t] != "" && (t == "monthly" || t == "weekly" || t == "daily" || t == "yearly" || t == "quarterly" || t == "annually") && !p.inMention[i]:
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
				q.throughJunction(c.table)
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

// throughJunction reads a count of the main rows grouped by a column of a table they meet
// through a junction ("how many students per subject": enrollments of courses): the
// junction's rows, each main row once per group. Only for a plain count.
func (q *query) throughJunction(ref string) {
	if ref == q.main || q.joined[ref] || q.relation(q.main, ref) != nil || q.oneSidePath(ref) != nil {
		return
	}
	l := q.junction(q.main, ref)
	if l == nil || len(q.groups) > 0 || q.agg != Count && q.agg != NoAgg || q.measure != nil || q.share || q.avgCount || len(q.where) > 0 || len(q.exists) > 0 ||
		len(q.notExists) > 0 || len(q.joined) > 0 || len(q.having) > 0 || len(q.countRefs) > 0 || q.limit > 0 || q.order != "" {
		return
	}
	one := q.main
	q.main, q.agg = l.via, CountDistinct
	q.measure = &colRef{l.via, l.toA.FromColumn}
	q.countRefs[one] = true
	q.p.step("Counted %s through %s, each once per group of %s", alias(one), q.p.s.table(l.via).Dataset, alias(ref))
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
	if path := q.oneSidePath(ref); r == nil && len(path) > 1 {
		r = q.relation(path[len(path)-2], ref) // "per gateway" of readings: through devices
	}
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
		return q.unrelated(q.main, ref)
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

// readRankBy reads "customers by number of orders", "departments by total salary": the rows
// of the table named before a "by" that an aggregate of the main (many-side) table follows,
// each with its aggregate, from the highest, those with no rows of the main table included.
func (q *query) readRankBy() error {
	p := q.p
	if len(q.groups) > 0 || q.limit > 0 || q.order != "" || q.agg == NoAgg {
		return nil
	}
	for i := 1; i+1 < len(p.toks); i++ {
		if p.toks[i] != "by" || !p.used[i] || aggOf(q.tok(i+1)) == NoAgg && q.tok(i+1) != "number" {
			continue
		}
		for _, m := range q.ms {
			if m.end != i || m.column != "" || m.value != "" || m.table == q.main || q.relation(q.main, m.table) == nil {
				continue
			}
			if err := q.entityGroup(m.table); err != nil {
				return err
			}
			q.order, q.everyEntity = "desc", true
			return nil
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
