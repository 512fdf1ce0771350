package handlers

import (
	"encoding/json"
	"time"
)

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

// defaultSettings are an organization's settings until changed; stored settings are merged
// over them key by key.
func defaultSettings(ssoEnabled bool) map[string]any {
	return map[string]any{
		"features":      map[string]any{"sso_enabled": ssoEnabled, "audit_logs": true, "custom_roles": false, "data_residency": "default"},
		"security":      map[string]any{"two_factor_required": false, "session_timeout_minutes": 480, "ip_allowlist": []string{}},
		"defaults":      map[string]any{"project_visibility": "organization", "user_role": "viewer", "dataset_retention_days": 365},
		"notifications": map[string]any{"email_digest": "weekly", "usage_alerts": true, "security_alerts": true},
	}
}

// mergeSettings lays stored over the defaults, one level deep.
func mergeSettings(defaults map[string]any, stored string) map[string]any {
	var s map[string]map[string]any
	_ = json.Unmarshal([]byte(stored), &s)
	for section, values := range s {
		d, ok := defaults[section].(map[string]any)
		if !ok {
			continue
		}
		for k, v := range values {
			if _, known := d[k]; known {
				d[k] = v
			}
		}
	}
	return defaults
}
