package nlsql

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// The time phrases of a question ("in 2024", "last month", "since March 1", "between ... and
// ...", "in Q3") and the conditions they put on the date column the question means.

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
		if s, _, n, y1, _ := q.pointYear(i + 1); n > 0 && q.tok(i+1+n) == "and" {
			if _, e, n2, y2, _ := q.pointYear(i + 2 + n); n2 > 0 {
				if y1 == 0 && y2 != 0 {
					s = inYear(s, y2) // "between March 1 and June 30, 2025": the year said once
				}
				per.from, per.to = s, e
				p.mark(i, i+2+n+n2)
				per.desc = "between " + s.Format(time.DateOnly) + " and " + e.AddDate(0, 0, -1).Format(time.DateOnly)
			}
		}
	case (t == "in" || t == "during" || t == "for") && q.partOf(i+1):
		s, e, n, desc := q.partOfYear(i + 1)
		per.from, per.to = s, e
		p.mark(i, i+1+n)
		per.desc = "in " + desc + " (" + spanDesc(s, e) + ")"
		i += n
	case t == "in" || t == "during" || t == "for" || t == "on":
		if m, ok := months[q.tok(i+1)]; ok && !dayNum.MatchString(q.tok(i+2)) {
			if y, ok := q.yearAt(i + 2); ok {
				per.from, per.to = dateAt(y, m, 1), dateAt(y, m+1, 1)
				p.mark(i, i+3)
				per.desc = fmt.Sprintf("in %s %d", m, y)
			} else {
				per.monthFrom, per.monthTo = m, m
				p.mark(i, i+2)
				per.desc = fmt.Sprintf("in %s (any year)", m)
			}
		} else if s, e, n, _, r := q.pointYear(i + 1); n > 0 {
			per.from, per.to = s, e
			p.mark(i, i+1+n)
			per.desc = "in " + strings.Join(p.toks[i+1:i+1+n], " ") + r
		} else if s, e, n, _, r := q.pointYear(i + 2); n > 0 && q.tok(i+1) == "the" && r != "" {
			per.from, per.to = s, e // "on the 1st of March"
			p.mark(i, i+2+n)
			per.desc = t + " " + strings.Join(p.toks[i+2:i+2+n], " ") + r
		}
	case t == "from":
		// "from March 1 to June 30, 2025", "from 1/1/2024 through 3/31/2024": both ends
		s, _, n, y1, r := q.pointYear(i + 1)
		if to := q.tok(i + 1 + n); n > 0 && (to == "to" || to == "through" || to == "thru" || to == "till" || to == "until") {
			if _, e, n2, y2, _ := q.pointYear(i + 2 + n); n2 > 0 {
				if y1 == 0 && y2 != 0 {
					s = inYear(s, y2)
				}
				per.from, per.to = s, e
				p.mark(i, i+2+n+n2)
				per.desc = "from " + s.Format(time.DateOnly) + " through " + e.AddDate(0, 0, -1).Format(time.DateOnly)
				return i + 1 + n + n2
			}
		}
		if n > 0 {
			per.from = s
			p.mark(i, i+1+n)
			per.desc = t + " " + strings.Join(p.toks[i+1:i+1+n], " ") + r
		}
	case t == "since" || t == "after" || t == "before" || t == "until":
		// since and before take the point's start, after and until its end.
		if s, e, n, _, r := q.pointYear(i + 1); n > 0 {
			at := s
			if t == "after" || t == "until" {
				at = e
			}
			if t == "since" || t == "after" {
				per.from = at
			} else {
				per.to = at
			}
			p.mark(i, i+1+n)
			per.desc = t + " " + strings.Join(p.toks[i+1:i+1+n], " ") + r
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

// pointYear reads a moment at token i (a date, a month with a year, a year): start, end,
// tokens, the year the phrase names (0: none) and, for a date read by the date parser, the
// range it resolved to (said in the explanation).
func (q *query) pointYear(i int) (start, end *time.Time, n, year int, resolved string) {
	s, e, n := q.simplePoint(i)
	if n > 0 {
		return s, e, n, s.Year(), ""
	}
	if s, e, n, y := q.dateSpan(i); n > 0 {
		return s, e, n, y, " (" + spanDesc(s, e) + ")"
	}
	return nil, nil, 0, 0, ""
}

// simplePoint reads an ISO date, a month with a year, or a year at token i.
func (q *query) simplePoint(i int) (start, end *time.Time, n int) {
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
