package records

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"dataplatform/store/datasets"
	"dataplatform/store/ingest"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
)

// AggregateQuery is GET .../data/aggregate.
type AggregateQuery struct {
	GroupBy, Agg, Having, Sort string
	Limit                      int
	Filters                    []Filter
}

// Aggregation is its answer: the groups, and the aggregates over every matching row.
type Aggregation struct {
	Groups []json.RawMessage
	Totals json.RawMessage
}

// TruncUnits are the units of date_trunc in group_by.
var TruncUnits = []string{"minute", "hour", "day", "week", "month", "quarter", "year"}

var (
	truncRe = regexp.MustCompile(`^date_trunc\(\s*'?([a-z]+)'?\s*,\s*([a-z_][a-z0-9_]*)\s*\)$`)
	aggRe   = regexp.MustCompile(`^(count|count_distinct|sum|avg|min|max)(?:\(\s*(\*|[a-z_][a-z0-9_]*)\s*\))?$`)
	havRe   = regexp.MustCompile(`^([a-z_][a-z0-9_]*)\s*(>=|<=|!=|<>|=|>|<)\s*(-?[0-9]+(?:\.[0-9]+)?)$`)
)

// splitTop splits s at commas outside parentheses.
func splitTop(s string) []string {
	var out []string
	depth, start := 0, 0
	for i, r := range s {
		switch r {
		case '(':
			depth++
		case ')':
			depth--
		case ',':
			if depth == 0 {
				out = append(out, strings.TrimSpace(s[start:i]))
				start = i + 1
			}
		}
	}
	if rest := strings.TrimSpace(s[start:]); rest != "" || len(out) > 0 {
		out = append(out, rest)
	}
	return out
}

// expr is a group or an aggregate of the answer: its key, its SQL and its type (a column's,
// for the value's format; "" for a count or a sum).
type expr struct {
	name, sql string
	typ       ingest.Type
}

// jsonSelect is the select list, over the row r of exprs, whose to_json is the answer's object:
// each value written as the record API writes its type (datasets.JSONValue).
func jsonSelect(exprs []expr) string {
	out := make([]string, len(exprs))
	for i, e := range exprs {
		q := pq.QuoteIdentifier(e.name)
		out[i] = datasets.JSONValue(ingest.Column{Type: e.typ}, "r."+q) + " AS " + q
	}
	return strings.Join(out, ", ")
}

func (t *Table) groupExprs(groupBy string) ([]expr, error) {
	var out []expr
	for _, g := range splitTop(groupBy) {
		if m := truncRe.FindStringSubmatch(g); m != nil {
			c, ok := t.cols[m[2]]
			if !ok {
				return nil, &FieldError{"query.group_by", "unknown_field", "no field " + strconv.Quote(m[2])}
			}
			if c.Type != ingest.Timestamptz && c.Type != ingest.Date {
				return nil, &FieldError{"query.group_by", "invalid_group", m[2] + " is not a date or time"}
			}
			if !slices.Contains(TruncUnits, m[1]) {
				return nil, &FieldError{"query.group_by", "invalid_group", "date_trunc units: " + strings.Join(TruncUnits, ", ")}
			}
			out = append(out, expr{m[2] + "_" + m[1], "date_trunc(" + pq.QuoteLiteral(m[1]) + ", " + pq.QuoteIdentifier(m[2]) + ")", ingest.Timestamptz})
			continue
		}
		c, ok := t.cols[g]
		if !ok {
			return nil, &FieldError{"query.group_by", "unknown_field", "no field " + strconv.Quote(g) + " (or date_trunc(unit,field))"}
		}
		if c.Type == ingest.JSONB {
			return nil, &FieldError{"query.group_by", "invalid_group", g + " is a JSON field"}
		}
		out = append(out, expr{g, pq.QuoteIdentifier(g), c.Type})
	}
	return out, nil
}

func (t *Table) aggExprs(agg string) ([]expr, error) {
	var out []expr
	measures := ingest.Measures(t.Columns)
	for _, a := range splitTop(agg) {
		if k := slices.IndexFunc(measures, func(m ingest.Measure) bool { return m.Name == a }); k >= 0 {
			// a named measure of the dataset: its aggregate of its value per record
			m := measures[k]
			v := ingest.MeasureValue(m, m.OfTimes(t.Columns), "")
			if m.Aggregation == "avg" {
				v = "round(avg(" + v + ")::numeric, 6)"
			} else {
				v = m.Aggregation + "(" + v + ")"
			}
			out = append(out, expr{m.Name, v, ""})
			continue
		}
		m := aggRe.FindStringSubmatch(a)
		if m == nil {
			return nil, &FieldError{"query.agg", "invalid_aggregate", "aggregates are count, count(field), count_distinct(field), sum(field), avg(field), min(field), max(field), or a named measure of the dataset"}
		}
		fn, field := m[1], m[2]
		if fn == "count" && (field == "" || field == "*") {
			out = append(out, expr{"count", "count(*)", ""})
			continue
		}
		if field == "" || field == "*" {
			return nil, &FieldError{"query.agg", "invalid_aggregate", fn + " needs a field: " + fn + "(field)"}
		}
		c, ok := t.cols[field]
		if !ok {
			return nil, &FieldError{"query.agg", "unknown_field", "no field " + strconv.Quote(field)}
		}
		num := c.Type == ingest.Integer || c.Type == ingest.BigInt || c.Type == ingest.Numeric
		q := pq.QuoteIdentifier(field)
		switch fn {
		case "sum", "avg":
			if !num {
				return nil, &FieldError{"query.agg", "invalid_aggregate", fn + " needs a numeric field; " + field + " is " + string(c.Type)}
			}
			s := fn + "(" + q + ")"
			if fn == "avg" {
				s = "round(avg(" + q + "), 6)"
			}
			out = append(out, expr{fn + "_" + field, s, ""})
		case "min", "max":
			if c.Type == ingest.JSONB || c.Type == ingest.Boolean || c.Type.IsArray() || c.Type == ingest.UUID {
				return nil, &FieldError{"query.agg", "invalid_aggregate", fn + " does not apply to " + string(c.Type)}
			}
			out = append(out, expr{fn + "_" + field, fn + "(" + q + ")", c.Type})
		case "count":
			out = append(out, expr{"count_" + field, "count(" + q + ")", ""})
		case "count_distinct":
			out = append(out, expr{"count_distinct_" + field, "count(DISTINCT " + q + ")", ""})
		}
	}
	if len(out) == 0 {
		return nil, &FieldError{"query.agg", "required", "name at least one aggregate"}
	}
	return out, nil
}

// Aggregate groups the matching live records and computes the aggregates per group, in
// PostgreSQL.
func (t *Table) Aggregate(ctx context.Context, q sqlx.QueryerContext, aq AggregateQuery) (*Aggregation, error) {
	groups, err := t.groupExprs(aq.GroupBy)
	if err != nil {
		return nil, err
	}
	aggs, err := t.aggExprs(aq.Agg)
	if err != nil {
		return nil, err
	}
	names, err := aggNames(groups, aggs)
	if err != nil {
		return nil, err
	}
	var sel, aggSel, keys []string
	for i, g := range groups {
		sel = append(sel, g.sql+" AS "+pq.QuoteIdentifier(g.name))
		keys = append(keys, strconv.Itoa(i+1))
	}
	for _, a := range aggs {
		sel = append(sel, a.sql+" AS "+pq.QuoteIdentifier(a.name))
		aggSel = append(aggSel, a.sql+" AS "+pq.QuoteIdentifier(a.name))
	}
	var b builder
	if err := t.where(&b, aq.Filters, ""); err != nil {
		return nil, err
	}
	where := " WHERE " + strings.Join(b.conds, " AND ")
	whereArgs := len(b.args)
	having, err := havingConds(&b, aq.Having, aggs, names)
	if err != nil {
		return nil, err
	}
	order, err := aggOrder(aq.Sort, names)
	if err != nil {
		return nil, err
	}
	order = append(order, keys...)
	query := `SELECT ` + strings.Join(sel, ", ") + ` FROM ` + t.Qualified() + where
	if len(groups) > 0 {
		query += ` GROUP BY ` + strings.Join(keys, ", ")
	}
	if len(having) > 0 {
		query += ` HAVING ` + strings.Join(having, " AND ")
	}
	if len(groups) > 0 {
		query += ` ORDER BY ` + strings.Join(order, ", ")
	}
	limit := b.arg(aq.Limit)
	record := jsonSelect(append(slices.Clone(groups), aggs...))
	var exprs []string
	for _, g := range groups {
		exprs = append(exprs, g.sql)
	}
	_, taken := names[totalMark]
	oneScan := false
	if len(groups) > 0 && len(groups) <= maxGroupingArgs && !taken {
		n, err := plannedRows(ctx, q, `SELECT 1 FROM `+t.Qualified()+where+` GROUP BY `+strings.Join(exprs, ", "), b.args[:whereArgs])
		if err != nil {
			return nil, fmt.Errorf("aggregate records: %w", err)
		}
		oneScan = n <= maxOneScanGroups
	}
	// Values are formatted outside the query, whose order is by the values themselves.
	var rows *sqlx.Rows
	if oneScan {
		one := t.groupsAndTotals(sel, exprs, keys, where, having, order, limit)
		mark := `r.` + pq.QuoteIdentifier(totalMark) + ` <> 0`
		rows, err = q.QueryxContext(ctx, `SELECT `+mark+`, CASE WHEN `+mark+` THEN to_json(y) ELSE to_json(x) END
			FROM (`+one+`) r, LATERAL (SELECT `+record+`) x, LATERAL (SELECT `+jsonSelect(aggs)+`) y`, b.args...)
	} else {
		rows, err = q.QueryxContext(ctx, `SELECT false, to_json(x) FROM (`+query+` LIMIT `+limit+`) r, LATERAL (SELECT `+record+`) x`, b.args...)
	}
	if err != nil {
		return nil, fmt.Errorf("aggregate records: %w", err)
	}
	out, err := readAggregation(rows)
	if err != nil || out.Totals != nil {
		return out, err
	}
	var totals []byte
	if err := sqlx.GetContext(ctx, q, &totals, `SELECT to_json(x) FROM (SELECT `+strings.Join(aggSel, ", ")+` FROM `+t.Qualified()+where+`) r, LATERAL (SELECT `+jsonSelect(aggs)+`) x`,
		b.args[:whereArgs]...); err != nil {
		return nil, fmt.Errorf("aggregate records: %w", err)
	}
	out.Totals = totals
	return out, nil
}

// totalMark names the column that tells the totals' row from the groups' in one scan (a group
// or aggregate of the same name reads the totals apart).
const totalMark = "grouping()"

// maxOneScanGroups is the most groups (as the planner expects them) read with the totals in
// one scan: at 1,000,000 rows, 50 or 1,200 groups and their totals take one scan's time (about
// half of two), 1,000,000 groups four times the two statements'.
const maxOneScanGroups = 10_000

// maxGroupingArgs is the most arguments PostgreSQL's GROUPING() takes.
const maxGroupingArgs = 31

// readAggregation reads rows of (the totals' row?, its JSON) and closes them.
func readAggregation(rows *sqlx.Rows) (*Aggregation, error) {
	defer rows.Close()
	out := &Aggregation{Groups: []json.RawMessage{}}
	for rows.Next() {
		var total bool
		var j []byte
		if err := rows.Scan(&total, &j); err != nil {
			return nil, fmt.Errorf("aggregate records: %w", err)
		}
		if total {
			out.Totals = j
		} else {
			out.Groups = append(out.Groups, j)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("aggregate records: %w", err)
	}
	return out, nil
}

// groupsAndTotals is the statement of the groups and the totals in one scan: GROUPING SETS
// adds the row of every matching record (its GROUPING() not 0, named totalMark), which HAVING
// keeps and ORDER BY puts first, before the limit's groups. With many groups this would
// aggregate and sort them all, where the groups' own page can stop early along an index: the
// totals are then read apart.
func (t *Table) groupsAndTotals(sel, exprs, keys []string, where string, having, order []string, limit string) string {
	mark := `GROUPING(` + strings.Join(exprs, ", ") + `)`
	one := `SELECT ` + strings.Join(sel, ", ") + `, ` + mark + ` AS ` + pq.QuoteIdentifier(totalMark) + ` FROM ` + t.Qualified() + where +
		` GROUP BY GROUPING SETS ((` + strings.Join(keys, ", ") + `), ())`
	if len(having) > 0 {
		one += ` HAVING ` + mark + ` <> 0 OR (` + strings.Join(having, " AND ") + `)`
	}
	return one + ` ORDER BY ` + mark + ` DESC, ` + strings.Join(order, ", ") + ` LIMIT ` + limit + ` + 1`
}

// aggNames maps each group's and aggregate's name to its SQL. Each is a key of the answer's
// objects: one named twice (sum(amount) twice, or a column named count beside count) would be
// a duplicate key.
func aggNames(groups, aggs []expr) (map[string]string, error) {
	names := map[string]string{}
	for i, e := range append(slices.Clone(groups), aggs...) {
		if _, dup := names[e.name]; dup {
			field := "query.agg"
			if i < len(groups) {
				field = "query.group_by"
			}
			return nil, &FieldError{field, "duplicate", e.name + " is named twice in group_by and agg"}
		}
		names[e.name] = e.sql
	}
	return names, nil
}

// havingConds are the conditions of having: an aggregate of aggs compared with a number.
func havingConds(b *builder, having string, aggs []expr, names map[string]string) ([]string, error) {
	var conds []string
	if strings.TrimSpace(having) == "" {
		return conds, nil
	}
	for _, h := range splitTop(having) {
		m := havRe.FindStringSubmatch(h)
		if m == nil || !slices.ContainsFunc(aggs, func(a expr) bool { return a.name == m[1] }) {
			return nil, &FieldError{"query.having", "invalid_having", "having compares an aggregate of agg with a number: count>1,sum_amount>=100"}
		}
		op := m[2]
		if op == "!=" {
			op = "<>"
		}
		conds = append(conds, names[m[1]]+" "+op+" "+b.arg(m[3])+"::numeric")
	}
	return conds, nil
}

// aggOrder is the ORDER BY of sort, which names groups and aggregates.
func aggOrder(sort string, names map[string]string) ([]string, error) {
	var order []string
	for _, s := range splitTop(sort) {
		if s == "" {
			continue
		}
		desc := strings.HasPrefix(s, "-")
		n := strings.TrimPrefix(s, "-")
		if _, ok := names[n]; !ok {
			return nil, &FieldError{"query.sort", "unknown_field", "sort by a group or an aggregate: " + strconv.Quote(n)}
		}
		dir := " ASC NULLS LAST"
		if desc {
			dir = " DESC NULLS LAST"
		}
		order = append(order, pq.QuoteIdentifier(n)+dir)
	}
	return order, nil
}
