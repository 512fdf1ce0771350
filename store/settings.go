package store

import (
	"context"
	"encoding/json"
	"time"

	"github.com/jmoiron/sqlx"
)

// Settings are an organization's settings. The stored JSON
// holds only what was changed; it is read over the defaults, key by key.
type Settings struct {
	Features struct {
		SSOEnabled    bool   `json:"sso_enabled"`
		AuditLogs     bool   `json:"audit_logs"`
		CustomRoles   bool   `json:"custom_roles"`
		DataResidency string `json:"data_residency"`
	} `json:"features"`
	Security struct {
		TwoFactorRequired     bool     `json:"two_factor_required"`
		SessionTimeoutMinutes int      `json:"session_timeout_minutes"`
		IPAllowlist           []string `json:"ip_allowlist"`
	} `json:"security"`
	Defaults struct {
		ProjectVisibility    string `json:"project_visibility"`
		UserRole             string `json:"user_role"`
		DatasetRetentionDays int    `json:"dataset_retention_days"`
	} `json:"defaults"`
	Notifications struct {
		EmailDigest    string `json:"email_digest"`
		UsageAlerts    bool   `json:"usage_alerts"`
		SecurityAlerts bool   `json:"security_alerts"`
	} `json:"notifications"`
}

// DefaultSettings are the settings of an organization that changed none.
func DefaultSettings() Settings {
	var s Settings
	s.Features.AuditLogs, s.Features.DataResidency = true, "default"
	s.Security.SessionTimeoutMinutes, s.Security.IPAllowlist = 480, []string{}
	s.Defaults.ProjectVisibility, s.Defaults.UserRole, s.Defaults.DatasetRetentionDays = "organization", "viewer", 365
	s.Notifications.EmailDigest, s.Notifications.UsageAlerts, s.Notifications.SecurityAlerts = "weekly", true, true
	return s
}

// Settings reads the organization's stored settings over the defaults.
func (o *Organization) Settings() Settings {
	s := DefaultSettings()
	_ = json.Unmarshal([]byte(o.SettingsJSON), &s) // written only by this service, from a Settings
	if s.Security.IPAllowlist == nil {
		s.Security.IPAllowlist = []string{}
	}
	return s
}

// SaveSettings writes an organization's stored settings (only what was changed).
func SaveSettings(ctx context.Context, q sqlx.ExecerContext, orgID, settings string, now time.Time) error {
	_, err := q.ExecContext(ctx, `UPDATE platform.organizations SET settings = $2, updated_at = $3 WHERE id = $1`, orgID, settings, now)
	return wrap("save settings", err)
}
