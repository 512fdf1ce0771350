// Package roles is the role and permission vocabulary: the five roles, what each may do, and
// the organization role each maps to. Authentication, the handlers and the descriptions
// derive from it.
package roles

import "slices"

// All are the roles from least to most privileged; each inherits the permissions of the ones before it.
var All = []string{"viewer", "analyst", "developer", "admin", "owner"}

var rolePermissions = func() map[string][]string {
	adds := map[string][]string{
		"viewer":    {"datasets:list", "queries:read", "dashboards:view"},
		"analyst":   {"queries:execute", "datasets:read", "visualizations:create"},
		"developer": {"datasets:write", "datasets:delete", "api-keys:manage"},
		"admin":     {"organizations:manage", "users:manage", "settings:manage"},
		"owner":     {"organizations:delete", "billing:manage"},
	}
	out := map[string][]string{}
	var acc []string
	for _, r := range All {
		acc = append(acc, adds[r]...)
		out[r] = slices.Clone(acc)
	}
	return out
}()

// AllPermissions lists every permission, in inheritance order.
var AllPermissions = rolePermissions["owner"]

// Permissions returns the permissions of a role (nil for an unknown role).
func Permissions(role string) []string { return rolePermissions[role] }

// Rank orders roles: viewer 1 ... owner 5, unknown 0.
func Rank(role string) int { return slices.Index(All, role) + 1 }

// OrgRole maps a role to the three organization roles: owner, admin or member.
func OrgRole(role string) string {
	if role == "owner" || role == "admin" {
		return role
	}
	return "member"
}
