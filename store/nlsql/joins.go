package nlsql

import (
	"fmt"
	"slices"
	"strings"
)

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
	return q.unrelated(q.main, ref)
}

// relation is the foreign key from → to, or nil. When several columns of from point at to
// (rentals.start_station and rentals.end_station → stations), it is the one the question
// chose (pickRoles); without a choice the two tables are related in several ways and none is
// taken (q.ambiguous keeps them, and the refusal names each reading).
func (q *query) relation(from, to string) *Relation {
	var found []*Relation
	for i, r := range q.p.s.Relations {
		if r.From == from && r.To == to {
			found = append(found, &q.p.s.Relations[i])
		}
	}
	switch {
	case len(found) == 0:
		return nil
	case len(found) == 1:
		return found[0]
	}
	for _, r := range found {
		if q.roles[[2]string{from, to}] == r.FromColumn {
			return r
		}
	}
	if q.ambiguous == nil {
		q.ambiguous = map[[2]string][]*Relation{}
	}
	q.ambiguous[[2]string{from, to}] = found
	return nil
}

// pickRoles reads the mention of a relationship's column as the choice of that relationship,
// when several join the same two tables and the question is about the other table too:
// "trips in Hilltop by destination depot", "which depot has the most trips (origin depot)".
// The mention is then the join's, not a column the answer shows or groups by.
func (q *query) pickRoles(ms []mention) []mention {
	pairs := map[[2]string][]string{}
	for _, r := range q.p.s.Relations {
		k := [2]string{r.From, r.To}
		pairs[k] = append(pairs[k], r.FromColumn)
	}
	for pair, cols := range pairs {
		if len(cols) < 2 || !slices.ContainsFunc(ms, func(m mention) bool { return m.table == pair[1] }) {
			continue
		}
		var at []int
		for i, m := range ms {
			if m.table == pair[0] && m.value == "" && slices.Contains(cols, m.column) {
				at = append(at, i)
			}
		}
		if len(at) != 1 {
			continue
		}
		m := ms[at[0]]
		if q.roles == nil {
			q.roles = map[[2]string]string{}
		}
		q.roles[pair] = m.column
		q.p.mark(m.pos, m.end)
		q.p.step("Joined %s to %s by %s", q.p.s.table(pair[0]).Dataset, q.p.s.table(pair[1]).Dataset, m.column)
		ms = slices.Delete(slices.Clone(ms), at[0], at[0]+1)
	}
	return ms
}

// ambiguity is the refusal of a reading that needed two tables related in several ways the
// question did not choose among, or nil.
func (q *query) ambiguity() error {
	for pair := range q.ambiguous {
		return q.unrelated(pair[0], pair[1])
	}
	return nil
}

// unrelated is the refusal of a question that needs tables a and b together: they have no
// relationship, or several that the question does not choose among (then each reading is
// offered, as the question naming its column).
func (q *query) unrelated(a, b string) error {
	for _, pair := range [][2]string{{a, b}, {b, a}} {
		rs := q.ambiguous[pair]
		if len(rs) == 0 {
			continue
		}
		var roles, sug []string
		for _, r := range rs {
			role := strings.Join(words(r.FromColumn), " ")
			roles = append(roles, r.FromColumn)
			sug = append(sug, strings.Join(q.p.toks, " ")+" ("+role+")")
		}
		return q.p.refuse(fmt.Sprintf("%s refers to %s in %d ways (%s) and the question does not say which; name one",
			q.p.s.table(pair[0]).Dataset, q.p.s.table(pair[1]).Dataset, len(rs), strings.Join(roles, ", ")), sug...)
	}
	return q.p.refuse(fmt.Sprintf("%s and %s have no known relationship", q.p.s.table(a).Dataset, q.p.s.table(b).Dataset))
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
	return q.unrelated(q.main, ref)
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
