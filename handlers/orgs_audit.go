package handlers

import (
	"context"
	"encoding/json"
	"strconv"
	"time"

	"dataplatform/gen/api"
	"dataplatform/handlers/apierr"
	"dataplatform/store"
)

// auditTime reads a start_date or end_date: an RFC 3339 instant or a date. Bounds are
// inclusive; the store's upper bound is exclusive, so an end moves past its instant or day.
func auditTime(field, s string, end bool) (*time.Time, error) {
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		if end {
			t = t.Add(time.Microsecond)
		}
		return &t, nil
	}
	t, err := time.Parse(time.DateOnly, s)
	if err != nil {
		return nil, apierr.Field("query."+field, "format", strconv.Quote(s)+" is neither an RFC 3339 instant (2026-11-01T09:00:00Z) nor a date (2026-11-01)")
	}
	if end {
		t = t.AddDate(0, 0, 1)
	}
	return &t, nil
}

func (o *Orgs) ListAuditLogs(ctx context.Context, req api.ListAuditLogsRequestObject) (api.ListAuditLogsResponseObject, error) {
	p, acc, err := o.access(ctx, o.Store.DB, req.OrganizationId)
	if err != nil {
		return nil, err
	}
	if err := acc.NeedRole("admin"); err != nil {
		return nil, err
	}
	if p.KeyID != "" { // a key reads the log only when made to manage the organization
		if err := acc.Need("organizations:manage"); err != nil {
			return nil, err
		}
	}
	f := store.AuditFilter{ActorID: deref(req.Params.ActorId), Action: deref(req.Params.Action), ResourceType: deref(req.Params.ResourceType)}
	if s := req.Params.StartDate; s != nil {
		if f.From, err = auditTime("start_date", *s, false); err != nil {
			return nil, err
		}
	}
	if s := req.Params.EndDate; s != nil {
		if f.To, err = auditTime("end_date", *s, true); err != nil {
			return nil, err
		}
	}
	if f.From != nil && f.To != nil && !f.From.Before(*f.To) {
		return nil, apierr.Field("query.end_date", "minimum", "end_date is before start_date")
	}
	pg, limit, offset := page(req.Params.Page, req.Params.Limit)
	rows, total, capped, err := store.ListAudit(ctx, o.Store.DB, req.OrganizationId, f, limit, offset)
	if err != nil {
		return nil, err
	}
	out := api.ListAuditLogs200JSONResponse{Logs: make([]api.AuditLogEntry, len(rows)), TotalCapped: capped}
	for i, r := range rows {
		e := api.AuditLogEntry{Id: strconv.FormatInt(r.ID, 10), Timestamp: r.At, Action: r.Action, IpAddress: r.IP, UserAgent: r.UserAgent,
			Details: map[string]any{}}
		if r.ActorID != nil || r.ActorName != nil || r.ActorEmail != nil {
			e.Actor = &struct {
				Email *string `json:"email"`
				Id    *string `json:"id"`
				Name  *string `json:"name"`
			}{r.ActorEmail, r.ActorID, r.ActorName}
		}
		e.Resource.Type, e.Resource.Id, e.Resource.Name = r.ResourceType, r.ResourceID, r.ResourceName
		if err := json.Unmarshal([]byte(r.Details), &e.Details); err != nil {
			return nil, err
		}
		out.Logs[i] = e
	}
	// Past the counted entries, whether there is more is known from the page: a full one
	// may have a next.
	seen := total
	if capped && len(rows) == limit && offset+limit >= total {
		seen = offset + limit + 1
	}
	out.Pagination = paginate(ctx, pg, limit, seen)
	out.Pagination.Total = total
	return out, nil
}
