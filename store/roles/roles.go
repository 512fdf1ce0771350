package auth

import "slices"

// Roles from least to most privileged; each inherits the permissions of the ones before it
// (SPEC.md, Authentication §10).
var Roles = []string{"viewer", "analyst", "developer", "admin", "owner"}

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
	for _, r := range Roles {
		acc = append(acc, adds[r]...)
		out[r] = slices.Clone(acc)
	}
	return out
}()

// AllPermissions lists every permission, in inheritance order.
var AllPermissions = rolePermissions["owner"]

// RolePermissions returns the permissions of a role (nil for an unknown role).
func RolePermissions(role string) []string { return rolePermissions[role] }

// RoleRank orders roles: viewer 1 ... owner 5, unknown 0.
func RoleRank(role string) int { return slices.Index(Roles, role) + 1 }

// OrgRole maps a role to the organization roles of SPEC.md §9: owner, admin or member.
func OrgRole(role string) string {
	if role == "owner" || role == "admin" {
		return role
	}
	return "member"
}
