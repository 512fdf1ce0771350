package nlsql

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// The SQL of a reading: the select list, joins, EXISTS for related rows, grouping, ordering.

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
	case Count:
		return "count(*)", "count"
	case CountDistinct:
		return "count(DISTINCT " + q.col(*q.measure) + ")", "distinct_" + q.measure.column
	default:
		return string(q.agg) + "(" + q.col(*q.measure) + ")", string(q.agg) + "_" + q.measure.column
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
		for _, a := range q.also {
			if a.measure == nil {
				sel = append(sel, "count(*) AS "+quote(q.aggAlias("count")))
			} else {
				sel = append(sel, string(a.agg)+"("+q.col(*a.measure)+") AS "+quote(q.aggAlias(string(a.agg)+"_"+a.measure.column)))
			}
		}
		if q.share && len(q.groups) > 0 {
			sel = append(sel, "round(100.0 * "+e+" / nullif(sum("+e+") OVER (), 0), 2) AS \"percent\"")
			q.p.step("Share of each group in percent of all groups")
		}
	}
	var b strings.Builder
	b.WriteString("SELECT " + strings.Join(sel, ", ") + " FROM " + q.main)
	b.WriteString(q.joins("JOIN"))
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
		b.WriteString(q.joins("LEFT JOIN"))
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
	if (q.order == "asc" || q.everyEntity) && len(q.groups) > 0 && q.groups[0].entity != "" && !q.rows {
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

// fromTheLowest ranks every row of the entity grouped by from the lowest (or, for
// everyEntity, from the highest), those without
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
	case Count:
		expr = "count(" + quote(alias(q.main)) + "." + quote(r.FromColumn) + ")"
	case Sum:
		expr = "coalesce(" + expr + ", 0)"
	}
	sel = append(sel, expr+" AS "+quote(name))
	var b strings.Builder
	fmt.Fprintf(&b, "SELECT %s FROM %s LEFT JOIN %s ON %s", strings.Join(sel, ", "), e, q.main, strings.Join(on, " AND "))
	if len(where) > 0 {
		b.WriteString(" WHERE " + strings.Join(where, " AND "))
	}
	fmt.Fprintf(&b, " GROUP BY %s ORDER BY %s %s NULLS LAST, %s", strings.Join(groupBy, ", "), quote(name), strings.ToUpper(q.order), strings.Join(groupBy, ", "))
	if q.limit > 0 {
		fmt.Fprintf(&b, " LIMIT %d", q.limit)
		p.step("Limit: %d", q.limit)
	}
	p.step("Ranked every %s from the %s, those without %s counting as none", singular(alias(e)), map[string]string{"asc": "lowest", "desc": "highest"}[q.order], alias(q.main))
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
		s := string(q.agg) + " of " + q.label(*q.measure) + " in " + t.Dataset
		if q.agg == CountDistinct {
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

// joins are the JOIN clauses of the joined tables, each after the table it is joined from.
func (q *query) joins(kind string) string {
	var b strings.Builder
	done := map[string]bool{}
	var emit func(ref string)
	emit = func(ref string) {
		if done[ref] {
			return
		}
		done[ref] = true
		from := q.main
		if v := q.via[ref]; v != "" {
			from = v
		}
		if from != q.main {
			emit(from)
		}
		r := q.relation(from, ref)
		fmt.Fprintf(&b, " %s %s ON %s.%s = %s.%s", kind, ref, quote(alias(ref)), quote(r.ToColumn), quote(alias(from)), quote(r.FromColumn))
	}
	for _, ref := range q.joinedRefs() {
		emit(ref)
	}
	return b.String()
}
