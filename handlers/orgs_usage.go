package handlers

import (
	"context"
	"math"
	"time"

	"dataplatform/gen/api"
	"dataplatform/handlers/apierr"
	"dataplatform/store"

	"github.com/jmoiron/sqlx"
	openapi_types "github.com/oapi-codegen/runtime/types"
)

// usage are an organization's figures now: seats, storage and this month's usage.
type usage struct {
	Seats        int
	StorageBytes int64
	Month        store.Usage
}

func (o *Handlers) usageFigures(ctx context.Context, q sqlx.QueryerContext, org *store.Organization) (usage, error) {
	var u usage
	var err error
	now := o.Now()
	if u.Seats, err = store.CountMembers(ctx, q, org.ID, now); err != nil {
		return u, err
	}
	if u.StorageBytes, err = o.Store.StorageBytes(ctx, q, org.ID); err != nil {
		return u, err
	}
	first := time.Date(now.Year(), now.Month(), 1, 0, 0, 0, 0, time.UTC)
	u.Month, err = store.UsageBetween(ctx, q, org.ID, first, now)
	return u, err
}

// percent is n of limit in percent, to two decimals.
func percent(n, limit int64) float32 {
	if limit <= 0 {
		return 0
	}
	return float32(math.Round(float64(n)*10000/float64(limit)) / 100)
}

// adminOrg checks that the caller is an admin of the organization and loads it.
func (o *Orgs) adminOrg(ctx context.Context, q sqlx.QueryerContext, orgID string) (*store.Organization, error) {
	p, acc, err := o.access(ctx, q, orgID)
	if err != nil {
		return nil, err
	}
	if err := acc.NeedRole("admin"); err != nil {
		return nil, err
	}
	return store.OrganizationForUser(ctx, q, orgID, p.UserID)
}

func (o *Orgs) GetOrganizationUsage(ctx context.Context, req api.GetOrganizationUsageRequestObject) (api.GetOrganizationUsageResponseObject, error) {
	org, err := o.adminOrg(ctx, o.Store.DB, req.OrganizationId)
	if err != nil {
		return nil, err
	}
	now := o.Now()
	name := string(deref(req.Params.Period))
	var start, end *time.Time
	if d := req.Params.StartDate; d != nil {
		start = &d.Time
	}
	if d := req.Params.EndDate; d != nil {
		end = &d.Time
	}
	from, to, err := periodOf(name, start, end, now)
	if err != nil {
		return nil, err
	}
	if name == "" {
		name = "current_month"
	}
	f, err := o.usageFigures(ctx, o.Store.DB, org)
	if err != nil {
		return nil, err
	}
	used, err := store.UsageBetween(ctx, o.Store.DB, org.ID, from, to)
	if err != nil {
		return nil, err
	}
	changes, err := store.PlanChanges(ctx, o.Store.DB, org.ID)
	if err != nil {
		return nil, err
	}
	p := planOf(org.PlanTier)
	var out api.OrganizationUsage
	out.Period.Name, out.Period.Start, out.Period.End = api.OrganizationUsagePeriodName(name), openapi_types.Date{Time: from}, openapi_types.Date{Time: to}
	// The monthly query limit applies to a month; over another period it is prorated.
	qLimit := int64(p.QueriesMonthly)
	if name == "custom" {
		qLimit = int64(math.Round(float64(p.QueriesMonthly) * (to.Sub(from).Hours()/24 + 1) * 12 / 365))
	}
	out.Usage.Queries = api.UsageFigure{Count: used.Queries, Limit: qLimit, Percentage: percent(used.Queries, qLimit)}
	out.Usage.Compute.Seconds = float32(used.ComputeMS) / 1000
	out.Usage.Storage.UsedBytes, out.Usage.Storage.LimitBytes = f.StorageBytes, p.StorageBytes
	out.Usage.Storage.Percentage = percent(f.StorageBytes, p.StorageBytes)
	out.Usage.Users = api.UsageFigure{Count: int64(f.Seats), Limit: int64(p.Users), Percentage: percent(int64(f.Seats), int64(p.Users))}
	out.Cost.Currency = currency
	out.Cost.Projected = float32(planCost(changes, from, to))
	out.Cost.Current = out.Cost.Projected
	if today := day(now); !today.After(to) {
		out.Cost.Current = 0
		if !today.Before(from) {
			out.Cost.Current = float32(planCost(changes, from, today))
		}
	}
	if by := req.Params.Breakdown; by != nil {
		rows, err := store.UsageBreakdown(ctx, o.Store.DB, org.ID, string(*by), from, to)
		if err != nil {
			return nil, err
		}
		b := make([]struct {
			ComputeSeconds float32                            `json:"compute_seconds"`
			Id             string                             `json:"id"`
			Name           string                             `json:"name"`
			Queries        int64                              `json:"queries"`
			Type           api.OrganizationUsageBreakdownType `json:"type"`
		}, len(rows))
		for i, r := range rows {
			b[i].Type, b[i].Id, b[i].Name, b[i].Queries = api.OrganizationUsageBreakdownType(*by), r.Key, r.Name, r.Queries
			b[i].ComputeSeconds = float32(r.ComputeMS) / 1000
		}
		out.Breakdown = &b
	}
	return api.GetOrganizationUsage200JSONResponse(out), nil
}

func planDetail(p plan) api.PlanDetail {
	d := api.PlanDetail{Tier: api.PlanDetailTier(p.Tier), Name: p.Name, PriceMonthly: float32(p.PriceMonthly), PriceYearly: float32(p.PriceYearly),
		Currency: currency}
	d.Limits.Users, d.Limits.Projects, d.Limits.StorageBytes, d.Limits.QueriesMonthly = p.Users, p.Projects, p.StorageBytes, p.QueriesMonthly
	return d
}

// billing is the billing answer: the plan, the cycle, and an invoice per closed month.
func (o *Orgs) billing(ctx context.Context, q sqlx.QueryerContext, org *store.Organization) (api.Billing, error) {
	now := o.Now()
	p := planOf(org.PlanTier)
	out := api.Billing{Plan: planDetail(p), BillingCycle: api.BillingBillingCycle(org.BillingCycle), Invoices: []api.Invoice{}}
	for _, t := range planTiers {
		out.Plans = append(out.Plans, planDetail(plans[t]))
	}
	if d := nextBillingDate(p, org.BillingCycle, org.PlanSince, now); d != nil {
		out.NextBillingDate = &openapi_types.Date{Time: *d}
	}
	changes, err := store.PlanChanges(ctx, q, org.ID)
	if err != nil {
		return out, err
	}
	thisMonth := time.Date(now.Year(), now.Month(), 1, 0, 0, 0, 0, time.UTC)
	for m := thisMonth.AddDate(0, -1, 0); !m.Before(time.Date(org.CreatedAt.Year(), org.CreatedAt.Month(), 1, 0, 0, 0, 0, time.UTC)); m = m.AddDate(0, -1, 0) {
		from, to := m, m.AddDate(0, 1, -1)
		if from.Before(day(org.CreatedAt)) {
			from = day(org.CreatedAt)
		}
		used, err := store.UsageBetween(ctx, q, org.ID, from, to)
		if err != nil {
			return out, err
		}
		inv := api.Invoice{Id: "inv_" + m.Format("200601"), PeriodStart: openapi_types.Date{Time: from}, PeriodEnd: openapi_types.Date{Time: to},
			Currency: currency, Status: api.Issued}
		inv.Usage.Queries, inv.Usage.ComputeSeconds = used.Queries, float32(used.ComputeMS)/1000
		// One line per run of days on the same plan and cycle.
		for d := from; !d.After(to); {
			tier, cycle := planAt(changes, d)
			end := d
			for n := d.AddDate(0, 0, 1); !n.After(to); n = n.AddDate(0, 0, 1) {
				if t, c := planAt(changes, n); t != tier || c != cycle {
					break
				}
				end = n
			}
			amount := planCost([]store.PlanChange{{Tier: tier, BillingCycle: cycle}}, d, end)
			days := int(end.Sub(d).Hours()/24) + 1
			inv.Lines = append(inv.Lines, struct {
				Amount      float32 `json:"amount"`
				Days        int     `json:"days"`
				Description string  `json:"description"`
			}{float32(amount), days, planOf(tier).Name + " plan (" + cycle + "), " + d.Format("Jan 2") + " to " + end.Format("Jan 2")})
			inv.Amount += float32(amount)
			d = end.AddDate(0, 0, 1)
		}
		inv.Amount = float32(math.Round(float64(inv.Amount)*100) / 100)
		out.Invoices = append(out.Invoices, inv)
	}
	return out, nil
}

// planAt is the plan of day d: the one in force at its end (a plan taken during a day is
// that day's plan).
func planAt(changes []store.PlanChange, d time.Time) (tier, cycle string) {
	tier, cycle = "free", "monthly"
	end := d.AddDate(0, 0, 1)
	for i, c := range changes {
		if i == 0 || c.ChangedAt.Before(end) {
			tier, cycle = c.Tier, c.BillingCycle
		}
	}
	return tier, cycle
}

func (o *Orgs) GetOrganizationBilling(ctx context.Context, req api.GetOrganizationBillingRequestObject) (api.GetOrganizationBillingResponseObject, error) {
	org, err := o.adminOrg(ctx, o.Store.DB, req.OrganizationId)
	if err != nil {
		return nil, err
	}
	out, err := o.billing(ctx, o.Store.DB, org)
	return api.GetOrganizationBilling200JSONResponse(out), err
}

func (o *Orgs) UpdateOrganizationBilling(ctx context.Context, req api.UpdateOrganizationBillingRequestObject) (api.UpdateOrganizationBillingResponseObject, error) {
	var out api.Billing
	err := o.Store.Tx(ctx, func(tx *sqlx.Tx) error {
		p, acc, err := o.access(ctx, tx, req.OrganizationId)
		if err != nil {
			return err
		}
		if err := acc.Need("billing:manage"); err != nil {
			return err
		}
		if err := store.LockOrganization(ctx, tx, req.OrganizationId); err != nil {
			return err
		}
		org, err := store.OrganizationForUser(ctx, tx, req.OrganizationId, p.UserID)
		if err != nil {
			return err
		}
		tier, cycle := org.PlanTier, org.BillingCycle
		if req.Body.Plan != nil {
			tier = string(*req.Body.Plan)
		}
		if req.Body.BillingCycle != nil {
			cycle = string(*req.Body.BillingCycle)
		}
		// The organization must fit the plan it moves to.
		np := planOf(tier)
		f, err := o.usageFigures(ctx, tx, org)
		if err != nil {
			return err
		}
		switch {
		case f.Seats > np.Users:
			return np.limitExceeded("users", int64(f.Seats), int64(np.Users), "allows fewer users than the organization has")
		case org.ProjectCount > np.Projects:
			return np.limitExceeded("projects", int64(org.ProjectCount), int64(np.Projects), "allows fewer projects than the organization has")
		case f.StorageBytes > np.StorageBytes:
			return np.limitExceeded("storage_bytes", f.StorageBytes, np.StorageBytes, "allows less storage than the organization uses")
		}
		now := o.Now()
		if err := store.SetPlan(ctx, tx, org.ID, tier, cycle, now); err != nil {
			return err
		}
		changes := map[string]any{"plan": map[string]string{"from": org.PlanTier, "to": tier}, "billing_cycle": map[string]string{"from": org.BillingCycle, "to": cycle}}
		org.PlanTier, org.BillingCycle, org.PlanSince = tier, cycle, now
		if out, err = o.billing(ctx, tx, org); err != nil {
			return err
		}
		if err := o.audit(ctx, tx, org.ID, "organization.plan_change", "organization", org.ID, org.Name, changes); err != nil {
			return err
		}
		return store.Emit(ctx, tx, "organization.updated", org.ID, map[string]any{"id": org.ID, "changes": changes}, now)
	})
	if err != nil {
		return nil, err
	}
	return api.UpdateOrganizationBilling200JSONResponse(out), nil
}

// storageAllowance refuses more data once the organization's storage plus extra bytes would
// pass its plan's limit (at the limit, nothing more goes in).
func (h *Handlers) storageAllowance(ctx context.Context, q sqlx.QueryerContext, orgID string, extra int64) error {
	tier, err := store.PlanTier(ctx, q, orgID)
	if err != nil {
		return err
	}
	used, err := h.Store.StorageBytes(ctx, q, orgID)
	if err != nil {
		return err
	}
	if p := planOf(tier); used+extra > p.StorageBytes || extra == 0 && used >= p.StorageBytes {
		return p.limitExceeded("storage_bytes", used+extra, p.StorageBytes, "allows "+apierr.HumanBytes(p.StorageBytes)+" of storage")
	}
	return nil
}
