package handlers

import "time"

// plan is what an organization's tier allows. Billing is not built yet; every organization
// starts on free and the figures below are what limits are checked against.
type plan struct {
	Name, Tier     string
	PriceMonthly   float64
	Users          int
	Projects       int
	StorageBytes   int64
	QueriesMonthly int
	Next           string // the tier to suggest when a limit is hit
}

var plans = map[string]plan{
	"free":       {"Free", "free", 0, 10, 10, 10 << 30, 10_000, "team"},
	"team":       {"Team", "team", 49, 50, 100, 100 << 30, 100_000, "enterprise"},
	"enterprise": {"Enterprise", "enterprise", 999, 10_000, 10_000, 10 << 40, 10_000_000, "enterprise"},
}

func planOf(tier string) plan {
	if p, ok := plans[tier]; ok {
		return p
	}
	return plans["free"]
}

// nextBillingDate is the first day of the next month (free plans have none).
func nextBillingDate(p plan, now time.Time) *time.Time {
	if p.PriceMonthly == 0 {
		return nil
	}
	d := time.Date(now.Year(), now.Month()+1, 1, 0, 0, 0, 0, time.UTC)
	return &d
}
