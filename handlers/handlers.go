// Package handlers implements the generated server interfaces: decode, authorize, call the
// store, encode. Errors are returned as *apierr.Error and rendered centrally.
package handlers

import (
	"context"
	"errors"
	"log/slog"
	"net/url"
	"strconv"
	"time"

	"dataplatform/gen/api"
	"dataplatform/handlers/apierr"
	"dataplatform/handlers/auth"
	"dataplatform/handlers/reqmeta"
	"dataplatform/handlers/settings"
	"dataplatform/store"
	"dataplatform/store/changes"
	"dataplatform/store/secrets"
	"dataplatform/templates/descriptions"

	"github.com/jmoiron/sqlx"
)

// Handlers holds what every area's handlers need.
type Handlers struct {
	Store     *store.Store
	Config    settings.Settings
	Clock     func() time.Time
	Log       *slog.Logger
	Tokens    *auth.Tokens
	Keys      *auth.KeyStore
	Passwords *auth.Passwords
	OIDC      *auth.OIDC   // nil when no identity provider is configured
	Mail      *auth.Mailer // nil when no mail server is configured (DP_SMTP_URL)
	Secrets   *secrets.Box
	Changes   *changes.Hub // wakes change streams
	// Descriptions renders and keeps the datasets' descriptions (the record API's and the
	// published ones).
	Descriptions *descriptions.Cache
}

// Now is the service clock's time, in UTC at the database's precision.
func (h *Handlers) Now() time.Time { return h.Clock().UTC().Truncate(time.Microsecond) }

// access resolves what the caller may do in an organization. Not being an active member of it
// is indistinguishable from the organization not existing (404).
func (h *Handlers) access(ctx context.Context, q sqlx.QueryerContext, orgID string) (*auth.Principal, auth.Access, error) {
	p, err := auth.Caller(ctx)
	if err != nil {
		return nil, auth.Access{}, err
	}
	role, err := store.Role(ctx, q, orgID, p.UserID)
	if errors.Is(err, store.ErrNotFound) {
		return nil, auth.Access{}, apierr.NotFound("organization", orgID)
	} else if err != nil {
		return nil, auth.Access{}, err
	}
	if err := h.Gate(ctx, orgID); err != nil {
		return nil, auth.Access{}, err
	}
	return p, auth.AccessFor(p, orgID, role), nil
}

// Audit is audit for the record API's package.
func (h *Handlers) Audit(ctx context.Context, tx sqlx.ExecerContext, orgID, action, resType, resID, resName string, details map[string]any) error {
	return h.audit(ctx, tx, orgID, action, resType, resID, resName, details)
}

// audit writes an audit entry for the caller in transaction tx.
func (h *Handlers) audit(ctx context.Context, tx sqlx.ExecerContext, orgID, action, resType, resID, resName string, details map[string]any) error {
	m := reqmeta.From(ctx)
	e := store.AuditEntry{OrgID: orgID, Action: action, ResourceType: resType, ResourceID: resID, ResourceName: resName,
		Details: details, IP: m.IP, UserAgent: m.UserAgent, At: h.Now()}
	if p := auth.FromContext(ctx); p != nil {
		e.ActorID, e.ActorEmail = p.UserID, p.Email
		if p.KeyID != "" {
			if e.Details == nil {
				e.Details = map[string]any{}
			}
			e.Details["api_key_id"] = p.KeyID
		}
	}
	return store.Audit(ctx, tx, e)
}

// page turns the optional page and limit parameters into values and an offset.
func page(p, l *int) (pg, limit, offset int) {
	pg, limit = 1, 20
	if p != nil {
		pg = *p
	}
	if l != nil {
		limit = *l
	}
	return pg, limit, (pg - 1) * limit
}

// paginate builds the pagination object with relative page URLs that keep the request's other
// query parameters.
func paginate(ctx context.Context, pg, limit, total int) api.Pagination {
	pages := (total + limit - 1) / limit
	m := reqmeta.From(ctx)
	link := func(n int) *string {
		q := url.Values{}
		for k, v := range m.Query {
			if k != "api_key" { // a secret: never echo it into a body
				q[k] = v
			}
		}
		q.Set("page", strconv.Itoa(n))
		q.Set("limit", strconv.Itoa(limit))
		s := m.Path + "?" + q.Encode()
		return &s
	}
	last := pages
	if last < 1 {
		last = 1
	}
	p := api.Pagination{Page: pg, Limit: limit, Total: total, Pages: pages, HasNext: pg < pages, HasPrev: pg > 1 && total > 0,
		FirstPageUrl: link(1), LastPageUrl: link(last)}
	if p.HasNext {
		p.NextPageUrl = link(pg + 1)
	}
	if p.HasPrev {
		p.PrevPageUrl = link(min(pg-1, last))
	}
	return p
}

// conflictOn maps a unique violation to a 409 on field; other errors pass through.
func conflictOn(err error, field, message string) error {
	if _, ok := store.UniqueViolation(err); ok {
		return apierr.Conflict(field, message)
	}
	return err
}

// patchText applies optional PATCH fields: a nil value leaves dst alone; for clearable fields
// (dst a **string) an empty string sets NULL. It records what changed under name in changes.
func patchText(changes map[string]any, name string, v *string, dst any) {
	if v == nil {
		return
	}
	changes[name] = *v
	switch d := dst.(type) {
	case *string:
		*d = *v
	case **string:
		if *d = v; *v == "" {
			*d = nil
		}
	}
}

func ptr[T any](v T) *T { return &v }

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

// API implements the generated strict server interface, one embedded type per API area.
type API struct {
	*Auth
	*Orgs
	*Projects
	*Datasets
	*Queries
	*Views
	*Webhooks
	*Dashboards
	*System
}

var _ api.StrictServerInterface = (*API)(nil)

// NewAPI is the API over h.
func NewAPI(h *Handlers) *API {
	return &API{Auth: &Auth{h}, Orgs: &Orgs{h}, Projects: &Projects{h}, Datasets: &Datasets{h}, Queries: &Queries{h}, Views: &Views{h}, Webhooks: &Webhooks{h}, Dashboards: &Dashboards{h}, System: &System{h}}
}
