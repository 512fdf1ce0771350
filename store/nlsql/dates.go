package nlsql

import (
	"regexp"
	"strconv"
	"strings"
	"time"

	dps "github.com/markusmobius/go-dateparser"
	"github.com/markusmobius/go-dateparser/date"
)

// Dates as people write them ("March 1, 2024", "3/1/2024", "1st of June", "since June") are
// read by a date parser anchored to the question's clock; the ranges around them (halves,
// quarters, "between ... and ...") are read here.

var (
	slashed = regexp.MustCompile(`^\d{1,2}/\d{1,2}(/\d{2}|/\d{4})?$`)
	dayNum  = regexp.MustCompile(`^(\d{1,2})(st|nd|rd|th)?$`)
	quarter = regexp.MustCompile(`^q([1-4])$`)
	half    = regexp.MustCompile(`^h([12])$`)
)

// dateSpan reads a date written with a month name or slashes at token i: its first day and
// the day after its last, how many tokens it took and the year it names (0: none, the
// parser chose the latest one not after now).
func (q *query) dateSpan(i int) (start, end *time.Time, n, year int) {
	first := q.tok(i)
	_, day := months[first]
	if !day && !slashed.MatchString(first) && !(dayNum.MatchString(first) && (months[q.tok(i+1)] != 0 || q.tok(i+1) == "of" && months[q.tok(i+2)] != 0)) {
		return nil, nil, 0, 0
	}
	// the longest run of date words: a month, a day, "of", a year
	k := i
	for k < len(q.p.toks) && k < i+4 {
		t := q.tok(k)
		if months[t] == 0 && !slashed.MatchString(t) && !dayNum.MatchString(t) && !isYear.MatchString(t) && t != "of" {
			break
		}
		k++
	}
	cfg := &dps.Configuration{CurrentTime: q.p.now, DateOrder: dps.MDY, Languages: []string{"en"}, PreferredDateSource: dps.Past}
	for j := k; j > i; j-- {
		text := strings.Join(q.p.toks[i:j], " ")
		if j-i == 1 && months[text] != 0 {
			// a month alone: the latest one not after now
			m := months[text]
			y := q.p.now.Year()
			if m > q.p.now.Month() {
				y--
			}
			s := time.Date(y, m, 1, 0, 0, 0, 0, time.UTC)
			e := s.AddDate(0, 1, 0)
			return &s, &e, 1, 0
		}
		d, err := dps.Parse(cfg, text)
		if err != nil || d.Time.IsZero() {
			continue
		}
		t := d.Time.UTC()
		s := time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)
		var e time.Time
		switch d.Period {
		case date.Year:
			s = time.Date(t.Year(), 1, 1, 0, 0, 0, 0, time.UTC)
			e = s.AddDate(1, 0, 0)
		case date.Month:
			s = time.Date(t.Year(), t.Month(), 1, 0, 0, 0, 0, time.UTC)
			e = s.AddDate(0, 1, 0)
		default:
			e = s.AddDate(0, 0, 1)
		}
		for _, w := range q.p.toks[i:j] {
			if isYear.MatchString(w) {
				year, _ = strconv.Atoi(w)
			} else if slashed.MatchString(w) && strings.Count(w, "/") == 2 {
				year = s.Year()
			}
		}
		return &s, &e, j - i, year
	}
	return nil, nil, 0, 0
}

// inYear is the same day of year y.
func inYear(t *time.Time, y int) *time.Time {
	d := time.Date(y, t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)
	return &d
}

// partOfYear reads a quarter or a half at token i ("q3", "q3 2024", "the first half of
// 2024", "h2", "the third quarter of 2025"): its range, tokens taken and how it reads. A
// part without a year is of the current year.
func (q *query) partOfYear(i int) (start, end *time.Time, n int, desc string) {
	j := i
	if q.tok(j) == "the" {
		j++
	}
	months, part := 0, 0
	switch t := q.tok(j); {
	case quarter.MatchString(t):
		part, _ = strconv.Atoi(t[1:])
		months, j = 3, j+1
	case half.MatchString(t):
		part, _ = strconv.Atoi(t[1:])
		months, j = 6, j+1
	default:
		ord := map[string]int{"first": 1, "1st": 1, "second": 2, "2nd": 2, "third": 3, "3rd": 3, "fourth": 4, "4th": 4}[t]
		switch q.tok(j + 1) {
		case "quarter":
			months = 3
		case "half":
			months = 6
		}
		if ord == 0 || months == 0 || months == 6 && ord > 2 {
			return nil, nil, 0, ""
		}
		part, j = ord, j+2
	}
	y := q.p.now.Year()
	named := false
	if q.tok(j) == "of" && isYear.MatchString(q.tok(j+1)) {
		y, _ = strconv.Atoi(q.tok(j + 1))
		j, named = j+2, true
	} else if isYear.MatchString(q.tok(j)) {
		y, _ = strconv.Atoi(q.tok(j))
		j, named = j+1, true
	}
	s := time.Date(y, time.Month((part-1)*months+1), 1, 0, 0, 0, 0, time.UTC)
	e := s.AddDate(0, months, 0)
	name := map[int]string{3: "Q", 6: "H"}[months] + strconv.Itoa(part) + " " + strconv.Itoa(y)
	if !named {
		name += " (this year)"
	}
	return &s, &e, j - i, name
}

// spanDesc says a range as dates: "2025-03-01 to 2025-06-30".
func spanDesc(s, e *time.Time) string {
	switch {
	case s != nil && e != nil:
		return s.Format(time.DateOnly) + " to " + e.AddDate(0, 0, -1).Format(time.DateOnly)
	case s != nil:
		return "from " + s.Format(time.DateOnly)
	case e != nil:
		return "before " + e.Format(time.DateOnly)
	}
	return ""
}

// partOf reports whether a quarter or a half is named at token i.
func (q *query) partOf(i int) bool {
	_, _, n, _ := q.partOfYear(i)
	return n > 0
}
