package handlers

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/netip"
	"strconv"
	"strings"

	"dataplatform/gen/api"
	"dataplatform/handlers/apierr"
	"dataplatform/handlers/auth"
	"dataplatform/handlers/reqmeta"
	"dataplatform/store"

	"github.com/jmoiron/sqlx"
)

// settings are an organization's settings as they apply: features follow the service's
// configuration, not a stored choice.
func (h *Handlers) settings(org *store.Organization) store.Settings {
	s := org.Settings()
	s.Features.SSOEnabled = h.OIDC != nil
	s.Features.AuditLogs, s.Features.CustomRoles, s.Features.DataResidency = true, false, "default"
	return s
}

// settingsOut is the settings as the API shows them.
func (h *Handlers) settingsOut(org *store.Organization) (api.OrganizationSettings, error) {
	var out api.OrganizationSettings
	b, err := json.Marshal(h.settings(org))
	if err != nil {
		return out, err
	}
	return out, json.Unmarshal(b, &out)
}

// Gate refuses a request for an organization's resources that the organization's security
// settings forbid: one from outside its IP allowlist (IP_NOT_ALLOWED), or one by a person
// without two-factor sign-in where the organization requires it (TWO_FACTOR_REQUIRED). It
// runs once membership is known, so that others still get 404.
func (h *Handlers) Gate(ctx context.Context, orgID string) error {
	sec, err := h.Store.OrgSecurity(ctx, orgID)
	if err != nil {
		return err
	}
	if ip := reqmeta.From(ctx).IP; !sec.Allows(ip) {
		return &apierr.Error{Status: http.StatusForbidden, Code: apierr.CodeIPNotAllowed,
			Message: "this organization accepts requests only from the networks of its IP allowlist; " + ip + " is not in them",
			Extra:   map[string]string{"ip_address": ip}}
	}
	if p := auth.FromContext(ctx); sec.TwoFactor && p != nil && !p.Service {
		on, err := h.Store.UserTwoFactor(ctx, p.UserID)
		if err != nil {
			return err
		}
		if !on {
			return &apierr.Error{Status: http.StatusForbidden, Code: apierr.CodeTwoFactorRequired,
				Message: "this organization requires two-factor sign-in: enrol at /api/v1/auth/2fa/setup, then try again"}
		}
	}
	return nil
}

// Allow is the access check of a project or dataset the caller reaches as r: the
// organization's gate, then each of perms.
func (h *Handlers) Allow(ctx context.Context, orgID string, r store.Reach, perms ...string) (auth.Access, error) {
	p, err := auth.Caller(ctx)
	if err != nil {
		return auth.Access{}, err
	}
	if err := h.Gate(ctx, orgID); err != nil {
		return auth.Access{}, err
	}
	acc := auth.ReachAccess(p, orgID, r)
	for _, perm := range perms {
		if err := acc.Need(perm); err != nil {
			return acc, err
		}
	}
	return acc, nil
}

// settingsOrg checks that the caller manages the organization's settings and loads it.
func (o *Orgs) settingsOrg(ctx context.Context, q sqlx.QueryerContext, orgID string) (*auth.Principal, *store.Organization, error) {
	p, acc, err := o.access(ctx, q, orgID)
	if err != nil {
		return nil, nil, err
	}
	if err := acc.Need("settings:manage"); err != nil {
		return nil, nil, err
	}
	org, err := store.OrganizationForUser(ctx, q, orgID, p.UserID)
	return p, org, err
}

func (o *Orgs) GetOrganizationSettings(ctx context.Context, req api.GetOrganizationSettingsRequestObject) (api.GetOrganizationSettingsResponseObject, error) {
	_, org, err := o.settingsOrg(ctx, o.Store.DB, req.OrganizationId)
	if err != nil {
		return nil, err
	}
	out, err := o.settingsOut(org)
	return api.GetOrganizationSettings200JSONResponse(out), err
}

func (o *Orgs) UpdateOrganizationSettings(ctx context.Context, req api.UpdateOrganizationSettingsRequestObject) (api.UpdateOrganizationSettingsResponseObject, error) {
	// The body as sections of changed keys (the schema has refused anything else).
	var patch map[string]map[string]any
	if b, err := json.Marshal(req.Body); err != nil {
		return nil, err
	} else if err := json.Unmarshal(b, &patch); err != nil {
		return nil, err
	}
	var bad []apierr.FieldError
	if sec := req.Body.Security; sec != nil && sec.IpAllowlist != nil {
		nets := make([]string, 0, len(*sec.IpAllowlist))
		for i, s := range *sec.IpAllowlist {
			n, ok := network(s)
			if !ok {
				bad = append(bad, apierr.FieldError{Field: fmt.Sprintf("body.security.ip_allowlist[%d]", i), Code: "invalid_cidr",
					Message: strconv.Quote(s) + " is neither a network in CIDR notation (203.0.113.0/24) nor an address"})
			}
			nets = append(nets, n)
		}
		if ip := reqmeta.From(ctx).IP; len(bad) == 0 && !(store.OrgSecurity{Allowlist: store.Prefixes(nets)}).Allows(ip) {
			bad = append(bad, apierr.FieldError{Field: "body.security.ip_allowlist", Code: "locks_out_caller",
				Message: "the list leaves out your own address " + ip + ": add it, or you could not reach the organization any more"})
		}
		patch["security"]["ip_allowlist"] = nets
	}
	if d := req.Body.Defaults; d != nil && d.UserRole != nil && *d.UserRole == "member" {
		patch["defaults"]["user_role"] = "viewer" // as invitations take it
	}
	var out api.OrganizationSettings
	err := o.Store.Tx(ctx, func(tx *sqlx.Tx) error {
		p, org, err := o.settingsOrg(ctx, tx, req.OrganizationId)
		if err != nil {
			return err
		}
		if err := store.LockOrganization(ctx, tx, req.OrganizationId); err != nil {
			return err
		}
		if sec := req.Body.Security; sec != nil && sec.TwoFactorRequired != nil && *sec.TwoFactorRequired && !p.Service {
			st, err := store.LockTOTP(ctx, tx, p.UserID)
			if err != nil {
				return err
			}
			if !st.Enabled {
				bad = append(bad, apierr.FieldError{Field: "body.security.two_factor_required", Code: "two_factor_not_enabled",
					Message: "enable two-factor sign-in on your own account first (/api/v1/auth/2fa/setup), or you could not reach the organization any more"})
			}
		}
		if len(bad) > 0 {
			return apierr.Validation(bad...)
		}
		stored := map[string]map[string]any{}
		_ = json.Unmarshal([]byte(org.SettingsJSON), &stored)
		for section, values := range patch {
			if stored[section] == nil {
				stored[section] = map[string]any{}
			}
			for k, v := range values {
				stored[section][k] = v
			}
		}
		b, err := json.Marshal(stored)
		if err != nil {
			return err
		}
		org.SettingsJSON = string(b)
		if err := store.SaveSettings(ctx, tx, org.ID, org.SettingsJSON, o.Now()); err != nil {
			return err
		}
		if out, err = o.settingsOut(org); err != nil {
			return err
		}
		if err := o.audit(ctx, tx, org.ID, "organization.settings_update", "organization", org.ID, org.Name, map[string]any{"changes": patch}); err != nil {
			return err
		}
		return store.Emit(ctx, tx, "organization.updated", org.ID, map[string]any{"id": org.ID, "changes": map[string]any{"settings": patch}}, o.Now())
	})
	if err != nil {
		return nil, err
	}
	return api.UpdateOrganizationSettings200JSONResponse(out), nil
}

// network reads a CIDR network or a single address as a network, in canonical form.
func network(s string) (string, bool) {
	s = strings.TrimSpace(s)
	if strings.Contains(s, "/") {
		p, err := netip.ParsePrefix(s)
		return p.Masked().String(), err == nil
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return "", false
	}
	a = a.Unmap()
	return netip.PrefixFrom(a, a.BitLen()).String(), true
}
