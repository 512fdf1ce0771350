package dashboards

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

var lastRE = regexp.MustCompile(`^last_([0-9]{1,4})_(days|weeks|months|years)$`)

// fixedNow is any instant: Check reads a range's syntax only.
var fixedNow = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

// ParseTimeRange reads a time range: all (no bounds), last_<n>_days|weeks|months|years (up to
// now), this_month, this_year, or <from>..<to> with dates or RFC 3339 times, either side
// empty. It answers [from, to) in UTC; nil is unbounded.
func ParseTimeRange(s string, now time.Time) (from, to *time.Time, err error) {
	now = now.UTC()
	day := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, time.UTC)
	switch {
	case s == "" || s == "all":
		return nil, nil, nil
	case s == "this_month":
		f := time.Date(now.Year(), now.Month(), 1, 0, 0, 0, 0, time.UTC)
		return &f, nil, nil
	case s == "this_year":
		f := time.Date(now.Year(), 1, 1, 0, 0, 0, 0, time.UTC)
		return &f, nil, nil
	}
	if m := lastRE.FindStringSubmatch(s); m != nil {
		n, _ := strconv.Atoi(m[1])
		if n == 0 {
			return nil, nil, fmt.Errorf("time range %q covers nothing", s)
		}
		var f time.Time
		switch m[2] {
		case "days":
			f = day.AddDate(0, 0, -n+1)
		case "weeks":
			f = day.AddDate(0, 0, -7*n+1)
		case "months":
			f = day.AddDate(0, -n, 1)
		case "years":
			f = day.AddDate(-n, 0, 1)
		}
		return &f, nil, nil
	}
	a, b, ok := strings.Cut(s, "..")
	if !ok {
		return nil, nil, fmt.Errorf("time range %q is not all, last_<n>_days (weeks, months, years), this_month, this_year or <from>..<to>", s)
	}
	if from, err = bound(a, false); err != nil {
		return nil, nil, err
	}
	if to, err = bound(b, true); err != nil {
		return nil, nil, err
	}
	if from != nil && to != nil && !from.Before(*to) {
		return nil, nil, fmt.Errorf("time range %q ends before it starts", s)
	}
	return from, to, nil
}

// bound is one side of <from>..<to>: a date (the end's date is included) or an RFC 3339 time.
func bound(s string, end bool) (*time.Time, error) {
	if s == "" {
		return nil, nil
	}
	if t, err := time.Parse(time.DateOnly, s); err == nil {
		if end {
			t = t.AddDate(0, 0, 1)
		}
		return &t, nil
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return nil, fmt.Errorf("%q is not a date (2024-01-31) or an RFC 3339 time", s)
	}
	t = t.UTC()
	return &t, nil
}

// PartialPeriod is the period of a time series' last row when its data ends before the
// period does (the current month, or a file that stops mid-quarter): a drop there is the
// period being incomplete, not the measure falling. nil when the tile is no time series with
// a latest column, or its last period is whole. A date column's period is whole once it
// reaches the period's last day; a timestamp's once it reaches its last day (hour for a day,
// minute for an hour).
func PartialPeriod(t *Tile, columns []string, rows [][]any) any {
	e := t.Encoding
	xi, li := slices.Index(columns, e.X), slices.Index(columns, e.Latest)
	if e.TimeGrain == "" || e.Latest == "" || xi < 0 || li < 0 || len(rows) == 0 {
		return nil
	}
	last := rows[len(rows)-1]
	start, _, okS := instantOf(last[xi])
	latest, dateOnly, okL := instantOf(last[li])
	if !okS || !okL {
		return nil
	}
	var end time.Time
	granule := 24 * time.Hour
	switch e.TimeGrain {
	case "hour":
		end, granule = start.Add(time.Hour), time.Minute
	case "day":
		end, granule = start.AddDate(0, 0, 1), time.Hour
	case "week":
		end = start.AddDate(0, 0, 7)
	case "month":
		end = start.AddDate(0, 1, 0)
	case "quarter":
		end = start.AddDate(0, 3, 0)
	case "year":
		end = start.AddDate(1, 0, 0)
	default:
		return nil
	}
	if dateOnly {
		granule = 24 * time.Hour
	}
	if latest.Before(end.Add(-granule)) {
		return last[xi]
	}
	return nil
}

// instantOf reads a result cell as a time: RFC 3339 text, or a date (dateOnly).
func instantOf(v any) (t time.Time, dateOnly bool, ok bool) {
	s, isText := v.(string)
	if !isText {
		return time.Time{}, false, false
	}
	if t, err := time.Parse("2006-01-02", s); err == nil {
		return t, true, true
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02 15:04:05Z07:00", "2006-01-02 15:04:05"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t, false, true
		}
	}
	return time.Time{}, false, false
}
