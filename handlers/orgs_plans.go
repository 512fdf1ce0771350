package handlers

import (
	"fmt"
	"math"
	"net/http"
	"time"

	"dataplatform/handlers/apierr"
	"dataplatform/store"
)

// plan is what an organization's tier allows and costs: the one place plans are defined.
type plan struct {
	Name, Tier     string
	PriceMonthly   float64 // on the monthly cycle
	PriceYearly    float64 // on the yearly cycle, for the year
	Users          int
	Projects       int
	StorageBytes   int64
	QueriesMonthly int
	Next           string // the tier to suggest when a limit is hit
}

// currency of every price.
const currency = "USD"

var plans = map[string]plan{
	"free":       {"Free", "free", 0, 0, 10, 10, 10 << 30, 10_000, "pro"},
	"pro":        {"Pro", "pro", 49, 490, 50, 100, 100 << 30, 100_000, "enterprise"},
	"enterprise": {"Enterprise", "enterprise", 999, 9990, 10_000, 10_000, 10 << 40, 10_000_000, "enterprise"},
}

// planTiers in ascending order.
var planTiers = []string{"free", "pro", "enterprise"}

func planOf(tier string) plan {
	if p, ok := plans[tier]; ok {
		return p
	}
	return plans["free"]
}

// daily is what a day of the plan costs on a billing cycle.
func (p plan) daily(cycle string) float64 {
	if cycle == "yearly" {
		return p.PriceYearly / 365
	}
	return p.PriceMonthly * 12 / 365
}

// limitExceeded is 422 PLAN_LIMIT_EXCEEDED for what (users, projects, storage_bytes, queries):
// the current figure, the plan's limit and a plan that allows more.
func (p plan) limitExceeded(what string, current, limit int64, message string) error {
	return apierr.New(http.StatusUnprocessableEntity, apierr.CodePlanLimitExceeded, "the "+p.Name+" plan "+message).
		WithDetails(map[string]any{"limit": what, "current": current, "plan_limit": limit, "suggested_plan": p.Next,
			"current_" + what: current})
}

// nextBillingDate is when the plan renews: the first day of the next month on the monthly
// cycle, the anniversary of the cycle's start on the yearly one; none on a free plan.
func nextBillingDate(p plan, cycle string, since, now time.Time) *time.Time {
	if p.PriceMonthly == 0 {
		return nil
	}
	d := time.Date(now.Year(), now.Month()+1, 1, 0, 0, 0, 0, time.UTC)
	if cycle == "yearly" {
		d = time.Date(since.Year(), since.Month(), since.Day(), 0, 0, 0, 0, time.UTC)
		for !d.After(now) {
			d = d.AddDate(1, 0, 0)
		}
	}
	return &d
}

// day is t's UTC date.
func day(t time.Time) time.Time {
	t = t.UTC()
	return time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)
}

// planCost is what the plans in force cost over the days from from to to (inclusive), day
// by day, each at the price of its plan (planAt).
func planCost(changes []store.PlanChange, from, to time.Time) float64 {
	var sum float64
	for d := day(from); !d.After(day(to)); d = d.AddDate(0, 0, 1) {
		tier, cycle := planAt(changes, d)
		sum += planOf(tier).daily(cycle)
	}
	return math.Round(sum*100) / 100
}

// periodOf resolves the usage endpoint's period: current_month (to today), last_month, or
// custom from start to end (dates, at most 366 days).
func periodOf(name string, start, end *time.Time, now time.Time) (from, to time.Time, err error) {
	today := day(now)
	first := time.Date(today.Year(), today.Month(), 1, 0, 0, 0, 0, time.UTC)
	switch name {
	case "", "current_month":
		if start != nil || end != nil {
			return from, to, apierr.Field("query.start_date", "not_allowed", "start_date and end_date go with period=custom")
		}
		return first, first.AddDate(0, 1, -1), nil
	case "last_month":
		if start != nil || end != nil {
			return from, to, apierr.Field("query.start_date", "not_allowed", "start_date and end_date go with period=custom")
		}
		return first.AddDate(0, -1, 0), first.AddDate(0, 0, -1), nil
	}
	var bad []apierr.FieldError
	if start == nil {
		bad = append(bad, apierr.FieldError{Field: "query.start_date", Code: "required", Message: "period=custom needs start_date"})
	}
	if end == nil {
		bad = append(bad, apierr.FieldError{Field: "query.end_date", Code: "required", Message: "period=custom needs end_date"})
	}
	if len(bad) > 0 {
		return from, to, apierr.Validation(bad...)
	}
	from, to = day(*start), day(*end)
	switch {
	case to.Before(from):
		return from, to, apierr.Field("query.end_date", "minimum", "end_date is before start_date")
	case to.Sub(from) > 366*24*time.Hour:
		return from, to, apierr.Field("query.end_date", "maximum", fmt.Sprintf("a custom period spans at most 366 days, not %d", int(to.Sub(from).Hours()/24)+1))
	}
	return from, to, nil
}
