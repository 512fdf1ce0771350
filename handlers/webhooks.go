package handlers

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net"
	"net/netip"
	"net/url"
	"slices"
	"sort"
	"strings"
	"time"

	"dataplatform/gen/api"
	"dataplatform/handlers/apierr"
	"dataplatform/store"
	"dataplatform/store/extdb"
	"dataplatform/store/webhooks"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
)

// Webhooks implements webhook endpoints.
type Webhooks struct{ *Handlers }

// secretGrace is how long the secret before a rotation keeps signing.
const secretGrace = 24 * time.Hour

// checkWebhookURL checks an endpoint's address: absolute http(s) without credentials, https
// unless every address of the host is in DP_WEBHOOK_NETWORKS, and no address outside the
// public internet and DP_WEBHOOK_NETWORKS. Deliveries check the address dialled again. It
// resolves the host, so call it only once the caller is known to manage the organization,
// and its errors never say what the name resolved to or which resolver answered.
func (h *Handlers) checkWebhookURL(ctx context.Context, raw string) error {
	bad := func(code, msg string) error { return apierr.Field("body.url", code, msg) }
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
		return bad("format", "url must be an absolute https:// (or http://) address")
	}
	if u.User != nil {
		return bad("format", "url must not carry credentials; put a token in the path or query instead")
	}
	host := u.Hostname()
	var addrs []netip.Addr
	if a, err := netip.ParseAddr(host); err == nil {
		addrs = []netip.Addr{a}
	} else {
		ips, err := net.DefaultResolver.LookupNetIP(ctx, "ip", host)
		if err != nil || len(ips) == 0 {
			return bad("unresolvable", "the host "+host+" does not resolve")
		}
		addrs = ips
	}
	configured := extdb.Networks(h.Config.WebhookNetworks)
	for _, a := range addrs {
		if !configured.Allows(a) {
			// Never where the name led: the answer would map the internal network.
			return bad("refused_address", "the host "+host+" is not allowed: webhooks reach public addresses, and DP_WEBHOOK_NETWORKS only")
		}
		inConfigured := slices.ContainsFunc(h.Config.WebhookNetworks, func(p netip.Prefix) bool { return p.Contains(a.Unmap()) })
		if u.Scheme == "http" && !inConfigured {
			return bad("https_required", "plain http is allowed only to addresses in DP_WEBHOOK_NETWORKS; use https")
		}
	}
	return nil
}

// newWebhookSecret is a Standard Webhooks signing secret: whsec_ and base64 of 24 random
// bytes.
func newWebhookSecret() string {
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return "whsec_" + base64.StdEncoding.EncodeToString(b)
}

func webhookOut(w *store.Webhook, now time.Time) api.Webhook {
	out := api.Webhook{Id: w.ID, OrganizationId: w.OrgID, Url: w.URL, Description: w.Description, Events: []api.WebhookEvent{},
		ProjectIds: []api.ProjectId{}, Enabled: w.Enabled, DisabledReason: w.DisabledReason, FailingSince: w.FailingSince,
		CreatedAt: w.CreatedAt, UpdatedAt: w.UpdatedAt}
	for _, e := range w.Events {
		out.Events = append(out.Events, api.WebhookEvent(e))
	}
	for _, p := range w.ProjectIDs {
		out.ProjectIds = append(out.ProjectIds, api.ProjectId(p))
	}
	if w.PreviousUntil != nil && w.PreviousUntil.After(now) {
		out.PreviousSecretExpiresAt = w.PreviousUntil
	}
	return out
}

func withSecret(w api.Webhook, secret string) api.WebhookWithSecret {
	return api.WebhookWithSecret{Id: w.Id, OrganizationId: w.OrganizationId, Url: w.Url, Description: w.Description, Events: w.Events,
		ProjectIds: w.ProjectIds, Enabled: w.Enabled, DisabledReason: w.DisabledReason, FailingSince: w.FailingSince,
		PreviousSecretExpiresAt: w.PreviousSecretExpiresAt,
		CreatedAt:               w.CreatedAt, UpdatedAt: w.UpdatedAt, Secret: secret}
}

// webhookManager checks that the caller manages the organization (organizations:manage).
func (h *Webhooks) webhookManager(ctx context.Context, q sqlx.QueryerContext, orgID string) (string, error) {
	p, acc, err := h.access(ctx, q, orgID)
	if err != nil {
		return "", err
	}
	return p.UserID, acc.Need("organizations:manage")
}

// checkWebhook validates what a request sets: events and projects of this organization.
func (h *Webhooks) checkWebhook(ctx context.Context, q sqlx.QueryerContext, orgID string, events, projects []string) error {
	if bad := webhooks.Unknown(events); len(bad) > 0 {
		known := slices.Clone(webhooks.Kinds)
		sort.Strings(known)
		return apierr.Field("body.events", "unknown_event", "unknown event kinds "+strings.Join(bad, ", ")+
			"; the kinds are "+strings.Join(known, ", ")+", and wildcards such as dataset.* or *")
	}
	missing, err := store.MissingProjects(ctx, q, orgID, projects)
	if err != nil {
		return err
	}
	if len(missing) > 0 {
		return apierr.Field("body.project_ids", "unknown_project", "no project "+strings.Join(missing, ", ")+" in this organization")
	}
	return nil
}

func strs[T ~string](xs []T) pq.StringArray {
	out := pq.StringArray{}
	for _, x := range xs {
		out = append(out, string(x))
	}
	return out
}

func (h *Webhooks) ListWebhooks(ctx context.Context, req api.ListWebhooksRequestObject) (api.ListWebhooksResponseObject, error) {
	if _, err := h.webhookManager(ctx, h.Store.DB, req.OrganizationId); err != nil {
		return nil, err
	}
	pg, limit, offset := page(req.Params.Page, req.Params.Limit)
	ws, total, err := store.ListWebhooks(ctx, h.Store.DB, req.OrganizationId, limit, offset)
	if err != nil {
		return nil, err
	}
	out := api.ListWebhooks200JSONResponse{Webhooks: []api.Webhook{}, Pagination: paginate(ctx, pg, limit, total)}
	for i := range ws {
		out.Webhooks = append(out.Webhooks, webhookOut(&ws[i], h.Now()))
	}
	return out, nil
}

func (h *Webhooks) CreateWebhook(ctx context.Context, req api.CreateWebhookRequestObject) (api.CreateWebhookResponseObject, error) {
	b := req.Body
	now := h.Now()
	secret := newWebhookSecret()
	w := &store.Webhook{ID: store.NewID("wh"), OrgID: req.OrganizationId, URL: strings.TrimSpace(b.Url), Events: strs(b.Events),
		ProjectIDs: pq.StringArray{}, Enabled: b.Enabled == nil || *b.Enabled, Secret: h.Secrets.Seal([]byte(secret)), CreatedAt: now, UpdatedAt: now}
	if d := deref(b.Description); d != "" {
		w.Description = &d
	}
	if b.ProjectIds != nil {
		w.ProjectIDs = strs(*b.ProjectIds)
	}
	// Who may ask comes first: the address check resolves the host, and its answer is for the
	// organization's managers only. It resolves outside the transaction; the transaction checks
	// access again.
	if _, err := h.webhookManager(ctx, h.Store.DB, req.OrganizationId); err != nil {
		return nil, err
	}
	if err := h.checkWebhookURL(ctx, w.URL); err != nil {
		return nil, err
	}
	err := h.Store.Tx(ctx, func(tx *sqlx.Tx) error {
		uid, err := h.webhookManager(ctx, tx, req.OrganizationId)
		if err != nil {
			return err
		}
		w.CreatedBy = &uid
		if err := h.checkWebhook(ctx, tx, w.OrgID, w.Events, w.ProjectIDs); err != nil {
			return err
		}
		if err := store.CreateWebhook(ctx, tx, w); err != nil {
			return err
		}
		return h.audit(ctx, tx, w.OrgID, "webhook.create", "webhook", w.ID, w.URL, map[string]any{"events": w.Events, "project_ids": w.ProjectIDs})
	})
	if err != nil {
		return nil, err
	}
	return api.CreateWebhook201JSONResponse{Body: withSecret(webhookOut(w, now), secret),
		Headers: api.CreateWebhook201ResponseHeaders{CacheControl: noStore, Pragma: noCache}}, nil
}

// webhook loads one of the organization's webhooks for a manager; lock for a change.
func (h *Webhooks) webhook(ctx context.Context, q sqlx.QueryerContext, orgID, id string, lock bool) (*store.Webhook, error) {
	if _, err := h.webhookManager(ctx, q, orgID); err != nil {
		return nil, err
	}
	w, err := store.WebhookByID(ctx, q, orgID, id, lock)
	if errors.Is(err, store.ErrNotFound) {
		return nil, apierr.NotFound("webhook", id)
	}
	return w, err
}

func (h *Webhooks) GetWebhook(ctx context.Context, req api.GetWebhookRequestObject) (api.GetWebhookResponseObject, error) {
	w, err := h.webhook(ctx, h.Store.DB, req.OrganizationId, req.WebhookId, false)
	if err != nil {
		return nil, err
	}
	return api.GetWebhook200JSONResponse(webhookOut(w, h.Now())), nil
}

func (h *Webhooks) UpdateWebhook(ctx context.Context, req api.UpdateWebhookRequestObject) (api.UpdateWebhookResponseObject, error) {
	b := req.Body
	if b.Url != nil {
		// As on creation: access first (a manager, and the webhook exists), then the address.
		if _, err := h.webhook(ctx, h.Store.DB, req.OrganizationId, req.WebhookId, false); err != nil {
			return nil, err
		}
		if err := h.checkWebhookURL(ctx, strings.TrimSpace(*b.Url)); err != nil {
			return nil, err
		}
	}
	var w *store.Webhook
	err := h.Store.Tx(ctx, func(tx *sqlx.Tx) error {
		var err error
		if w, err = h.webhook(ctx, tx, req.OrganizationId, req.WebhookId, true); err != nil {
			return err
		}
		changes := map[string]any{}
		if b.Url != nil {
			w.URL, changes["url"] = strings.TrimSpace(*b.Url), strings.TrimSpace(*b.Url)
		}
		patchText(changes, "description", b.Description, &w.Description)
		if b.Events != nil {
			w.Events, changes["events"] = strs(*b.Events), *b.Events
		}
		if b.ProjectIds != nil {
			w.ProjectIDs, changes["project_ids"] = strs(*b.ProjectIds), *b.ProjectIds
		}
		if err := h.checkWebhook(ctx, tx, w.OrgID, w.Events, w.ProjectIDs); err != nil {
			return err
		}
		resume := false
		if b.Enabled != nil {
			resume = *b.Enabled && !w.Enabled
			w.Enabled, changes["enabled"] = *b.Enabled, *b.Enabled
			if *b.Enabled {
				w.DisabledReason = nil
			}
		}
		w.UpdatedAt = h.Now()
		if err := store.UpdateWebhook(ctx, tx, w); err != nil {
			return err
		}
		if resume { // what the endpoint held back goes out now
			if err := webhooks.Resume(ctx, tx, w.ID, w.UpdatedAt); err != nil {
				return err
			}
			w.FailingSince = nil
		}
		return h.audit(ctx, tx, w.OrgID, "webhook.update", "webhook", w.ID, w.URL, map[string]any{"changes": changes})
	})
	if err != nil {
		return nil, err
	}
	return api.UpdateWebhook200JSONResponse(webhookOut(w, h.Now())), nil
}

func (h *Webhooks) DeleteWebhook(ctx context.Context, req api.DeleteWebhookRequestObject) (api.DeleteWebhookResponseObject, error) {
	err := h.Store.Tx(ctx, func(tx *sqlx.Tx) error {
		w, err := h.webhook(ctx, tx, req.OrganizationId, req.WebhookId, true)
		if err != nil {
			return err
		}
		if err := store.DeleteWebhook(ctx, tx, w.OrgID, w.ID); err != nil {
			return err
		}
		return h.audit(ctx, tx, w.OrgID, "webhook.delete", "webhook", w.ID, w.URL, nil)
	})
	if err != nil {
		return nil, err
	}
	return api.DeleteWebhook204Response{}, nil
}

func (h *Webhooks) RotateWebhookSecret(ctx context.Context, req api.RotateWebhookSecretRequestObject) (api.RotateWebhookSecretResponseObject, error) {
	secret := newWebhookSecret()
	var w *store.Webhook
	err := h.Store.Tx(ctx, func(tx *sqlx.Tx) error {
		var err error
		if w, err = h.webhook(ctx, tx, req.OrganizationId, req.WebhookId, true); err != nil {
			return err
		}
		now := h.Now()
		until := now.Add(secretGrace)
		w.PreviousSecret, w.PreviousUntil, w.Secret, w.UpdatedAt = w.Secret, &until, h.Secrets.Seal([]byte(secret)), now
		if err := store.UpdateWebhook(ctx, tx, w); err != nil {
			return err
		}
		return h.audit(ctx, tx, w.OrgID, "webhook.rotate_secret", "webhook", w.ID, w.URL, map[string]any{"previous_secret_expires_at": until})
	})
	if err != nil {
		return nil, err
	}
	return api.RotateWebhookSecret200JSONResponse{Body: withSecret(webhookOut(w, h.Now()), secret),
		Headers: api.RotateWebhookSecret200ResponseHeaders{CacheControl: noStore, Pragma: noCache}}, nil
}

func deliveryOut(d *webhooks.Delivery) api.WebhookDelivery {
	return api.WebhookDelivery{Id: d.ID, WebhookId: d.WebhookID, EventType: d.EventType, Status: api.WebhookDeliveryStatus(d.Status),
		Attempts: d.Attempts, NextAttemptAt: d.NextAttemptAt, LastAttemptAt: d.LastAttemptAt, LastResponseStatus: d.LastStatusCode,
		LastResponseBody: d.LastResponse, LastError: d.LastError, LastDurationMs: d.LastDurationMs, CreatedAt: d.CreatedAt, FinishedAt: d.FinishedAt}
}

// sendable loads an endpoint for queuing a delivery to it: a disabled one would hold it.
func (h *Webhooks) sendable(ctx context.Context, tx sqlx.QueryerContext, orgID, id string) (*store.Webhook, error) {
	w, err := h.webhook(ctx, tx, orgID, id, true)
	if err != nil {
		return nil, err
	}
	if !w.Enabled {
		return nil, apierr.Conflict("enabled", "the endpoint is disabled; enable it first (PATCH enabled: true sends what it held back)")
	}
	return w, nil
}

func (h *Webhooks) TestWebhook(ctx context.Context, req api.TestWebhookRequestObject) (api.TestWebhookResponseObject, error) {
	var d *webhooks.Delivery
	err := h.Store.Tx(ctx, func(tx *sqlx.Tx) error {
		w, err := h.sendable(ctx, tx, req.OrganizationId, req.WebhookId)
		if err != nil {
			return err
		}
		if d, err = webhooks.Ping(ctx, tx, w.ID, w.OrgID, h.Now()); err != nil {
			return err
		}
		return h.audit(ctx, tx, w.OrgID, "webhook.test", "webhook", w.ID, w.URL, map[string]any{"delivery_id": d.ID})
	})
	if err != nil {
		return nil, err
	}
	return api.TestWebhook202JSONResponse(deliveryOut(d)), nil
}

func (h *Webhooks) ListWebhookDeliveries(ctx context.Context, req api.ListWebhookDeliveriesRequestObject) (api.ListWebhookDeliveriesResponseObject, error) {
	w, err := h.webhook(ctx, h.Store.DB, req.OrganizationId, req.WebhookId, false)
	if err != nil {
		return nil, err
	}
	pg, limit, offset := page(req.Params.Page, req.Params.Limit)
	f := webhooks.Filter{EventType: deref(req.Params.EventType)}
	if req.Params.Status != nil {
		f.Status = string(*req.Params.Status)
	}
	ds, total, err := webhooks.List(ctx, h.Store.DB, w.ID, f, limit, offset)
	if err != nil {
		return nil, err
	}
	out := api.ListWebhookDeliveries200JSONResponse{Deliveries: []api.WebhookDelivery{}, Pagination: paginate(ctx, pg, limit, total)}
	for i := range ds {
		out.Deliveries = append(out.Deliveries, deliveryOut(&ds[i]))
	}
	return out, nil
}

func (h *Webhooks) GetWebhookDelivery(ctx context.Context, req api.GetWebhookDeliveryRequestObject) (api.GetWebhookDeliveryResponseObject, error) {
	w, err := h.webhook(ctx, h.Store.DB, req.OrganizationId, req.WebhookId, false)
	if err != nil {
		return nil, err
	}
	d, as, err := webhooks.Get(ctx, h.Store.DB, w.ID, req.DeliveryId)
	if errors.Is(err, store.ErrNotFound) {
		return nil, apierr.NotFound("delivery", req.DeliveryId)
	}
	if err != nil {
		return nil, err
	}
	var msg api.WebhookMessage
	if err := json.Unmarshal([]byte(d.Body), &msg); err != nil {
		return nil, err
	}
	o := deliveryOut(d)
	out := api.GetWebhookDelivery200JSONResponse{Id: o.Id, WebhookId: o.WebhookId, EventType: o.EventType,
		Status: api.WebhookDeliveryDetailStatus(o.Status), Attempts: o.Attempts, NextAttemptAt: o.NextAttemptAt, LastAttemptAt: o.LastAttemptAt,
		LastResponseStatus: o.LastResponseStatus, LastResponseBody: o.LastResponseBody, LastError: o.LastError,
		LastDurationMs: o.LastDurationMs, CreatedAt: o.CreatedAt, FinishedAt: o.FinishedAt, Payload: msg, AttemptHistory: []api.WebhookAttempt{}}
	for _, a := range as {
		out.AttemptHistory = append(out.AttemptHistory, api.WebhookAttempt{Attempt: a.Attempt, StartedAt: a.StartedAt,
			ResponseStatus: a.StatusCode, ResponseBody: a.Response, Error: a.Error, DurationMs: a.DurationMs})
	}
	return out, nil
}

func (h *Webhooks) RedeliverWebhookDelivery(ctx context.Context, req api.RedeliverWebhookDeliveryRequestObject) (api.RedeliverWebhookDeliveryResponseObject, error) {
	var d *webhooks.Delivery
	err := h.Store.Tx(ctx, func(tx *sqlx.Tx) error {
		w, err := h.sendable(ctx, tx, req.OrganizationId, req.WebhookId)
		if err != nil {
			return err
		}
		d, err = webhooks.Redeliver(ctx, tx, w.ID, req.DeliveryId, h.Now())
		if errors.Is(err, store.ErrNotFound) {
			return apierr.NotFound("delivery", req.DeliveryId)
		}
		if err != nil {
			return err
		}
		return h.audit(ctx, tx, w.OrgID, "webhook.redeliver", "webhook", w.ID, w.URL, map[string]any{"delivery_id": d.ID})
	})
	if err != nil {
		return nil, err
	}
	return api.RedeliverWebhookDelivery202JSONResponse(deliveryOut(d)), nil
}
