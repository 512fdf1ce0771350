package auth

import (
	"errors"
	"slices"
	"testing"

	"dataplatform/handlers/apierr"
)

// TestOrgKeyPermissions: an organization key works only while the member it belongs to may
// create keys (admin, owner), and never beyond that member's current role.
func TestOrgKeyPermissions(t *testing.T) {
	perms := []string{"datasets:read", "users:manage", "organizations:manage", "billing:manage"}
	for _, tc := range []struct {
		role string
		want []string // nil: refused
	}{
		{"owner", perms},
		{"admin", []string{"datasets:read", "users:manage", "organizations:manage"}},
		{"developer", nil},
		{"viewer", nil},
		{"", nil}, // removed, disabled or deleted
	} {
		got, err := OrgKeyPermissions(perms, tc.role, "org_a", "key_b")
		if tc.want == nil {
			var ae *apierr.Error
			if !errors.As(err, &ae) || ae.Status != 401 || ae.Code != apierr.CodeAPIKeyOwnerAccessLost {
				t.Fatalf("%q: %v, want 401 API_KEY_OWNER_ACCESS_LOST", tc.role, err)
			}
			if OrgKeyOwnerMay(tc.role) {
				t.Fatalf("%q may own keys", tc.role)
			}
			continue
		}
		if err != nil || !slices.Equal(got, tc.want) || !OrgKeyOwnerMay(tc.role) {
			t.Fatalf("%q: %v %v, want %v", tc.role, got, err, tc.want)
		}
	}
}
