package handlers

import (
	"encoding/json"

	"dataplatform/gen/api"
	"dataplatform/store"
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
