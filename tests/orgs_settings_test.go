package tests

import (
	"context"
	"fmt"
	"net/netip"
	"testing"
	"time"

	"dataplatform/cmd/dataplatform/config"
	"dataplatform/store/datasets"
)

func trustLoopbackProxy(c *config.Config) {
	c.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}
}

// TestOrganizationSettings: settings read and change with settings:manage; bad values are
// 400 with field details and change nothing; every setting applies: the IP allowlist (behind
// a trusted proxy), the two-factor requirement, the session timeout, the default invitation
// role, project visibility and record retention.
func TestOrganizationSettings(t *testing.T) {
	t.Parallel()
	e := newEnv(t, trustLoopbackProxy)
	own := bearer(e.ownerToken)
	org := e.orgID
	path := "/api/v1/organizations/" + org + "/settings"

	s := e.do("GET", path, nil, own).status(200)
	if s.str("defaults.user_role") != "viewer" || s.num("security.session_timeout_minutes") != 480 || s.len("security.ip_allowlist") != 0 ||
		s.get("security.two_factor_required") != false || s.str("defaults.project_visibility") != "organization" || s.get("features.audit_logs") != true {
		t.Fatalf("defaults: %s", s.Body)
	}
	_, devTok := e.member(org, "developer")
	anaEmail, anaTok := e.member(org, "analyst")
	e.do("GET", path, nil, bearer(devTok)).authError(403, "PERMISSION_DENIED")
	e.do("PATCH", path, map[string]any{"notifications": map[string]any{"usage_alerts": false}}, bearer(devTok)).authError(403, "PERMISSION_DENIED")
	e.do("GET", "/api/v1/organizations/org_nothere/settings", nil, own).apiError(404, "NOT_FOUND")

	// Bad values: one detail per field, nothing changed.
	before := e.countAuditRows(org, "organization.settings_update")
	e.do("PATCH", path, map[string]any{"security": map[string]any{"ip_allowlist": []string{"127.0.0.1", "not-a-net", "10.0.0.0/33"}}}, own).
		apiError(400, "VALIDATION_ERROR", "body.security.ip_allowlist[1]", "invalid_cidr", "body.security.ip_allowlist[2]", "invalid_cidr")
	e.do("PATCH", path, map[string]any{"security": map[string]any{"session_timeout_minutes": 1}}, own).apiError(400, "VALIDATION_ERROR")
	e.do("PATCH", path, map[string]any{"defaults": map[string]any{"user_role": "owner"}}, own).apiError(400, "VALIDATION_ERROR")
	e.do("PATCH", path, map[string]any{"features": map[string]any{"sso_enabled": true}}, own).apiError(400, "VALIDATION_ERROR")
	e.do("PATCH", path, map[string]any{"defaults": map[string]any{"dataset_retention_days": 0}}, own).apiError(400, "VALIDATION_ERROR")
	e.do("PATCH", path, map[string]any{}, own).apiError(400, "VALIDATION_ERROR")
	// A list without the caller's own address would lock them out.
	e.do("PATCH", path, map[string]any{"security": map[string]any{"ip_allowlist": []string{"10.0.0.0/8"}}}, own).
		apiError(400, "VALIDATION_ERROR", "body.security.ip_allowlist", "locks_out_caller")
	// Turning on two-factor needs it on the caller's own account.
	e.do("PATCH", path, map[string]any{"security": map[string]any{"two_factor_required": true}}, own).
		apiError(400, "VALIDATION_ERROR", "body.security.two_factor_required", "two_factor_not_enabled")
	if n := e.countAuditRows(org, "organization.settings_update"); n != before {
		t.Fatalf("refused changes were audited: %d", n)
	}
	if s := e.do("GET", path, nil, own).status(200); s.len("security.ip_allowlist") != 0 {
		t.Fatalf("a refused change changed something: %s", s.Body)
	}

	// IP allowlist: addresses become networks; key by key, the rest stays.
	r := e.do("PATCH", path, map[string]any{"security": map[string]any{"ip_allowlist": []string{"127.0.0.1", " 192.0.2.7/24"}},
		"notifications": map[string]any{"email_digest": "daily"}}, own).status(200)
	if r.str("security.ip_allowlist.0") != "127.0.0.1/32" || r.str("security.ip_allowlist.1") != "192.0.2.0/24" ||
		r.str("notifications.email_digest") != "daily" || r.get("notifications.usage_alerts") != true || r.num("security.session_timeout_minutes") != 480 {
		t.Fatalf("allowlist: %s", r.Body)
	}
	from := func(ip string) header { return header{"X-Forwarded-For": ip} }
	// Through the trusted proxy, the forwarded address counts: outside the list is 403 on
	// every resource of the organization, inside is served; the organization list is not
	// the organization's resource.
	if r := e.do("GET", "/api/v1/projects/"+e.projectID, nil, own, from("203.0.113.9")).authError(403, "IP_NOT_ALLOWED"); r.str("ip_address") != "203.0.113.9" {
		t.Fatalf("refusal names the address: %s", r.Body)
	}
	e.do("GET", "/api/v1/organizations/"+org+"/users", nil, own, from("203.0.113.9")).authError(403, "IP_NOT_ALLOWED")
	e.do("GET", "/api/v1/organizations/"+org+"/projects", nil, own, from("203.0.113.9")).authError(403, "IP_NOT_ALLOWED")
	e.do("GET", "/api/v1/projects/"+e.projectID, nil, own, from("192.0.2.200")).status(200)
	e.do("GET", "/api/v1/organizations", nil, own, from("203.0.113.9")).status(200)
	// The projects of every organization of the caller: the refused organization's are left
	// out, and asking for that organization alone is refused.
	inOrg := func(l *resp) int {
		n := 0
		for i := range l.len("projects") {
			if l.str(fmt.Sprintf("projects.%d.organization.id", i)) == org {
				n++
			}
		}
		return n
	}
	if l := e.do("GET", "/api/v1/projects", nil, own, from("203.0.113.9")).status(200); inOrg(l) != 0 {
		t.Fatalf("projects of an organization that refuses the address: %s", l.Body)
	}
	e.do("GET", "/api/v1/projects?organization_id="+org, nil, own, from("203.0.113.9")).authError(403, "IP_NOT_ALLOWED")
	if l := e.do("GET", "/api/v1/projects", nil, own, from("192.0.2.200")).status(200); inOrg(l) == 0 {
		t.Fatalf("no projects from an allowed address: %s", l.Body)
	}
	e.do("PATCH", path, map[string]any{"security": map[string]any{"ip_allowlist": []string{}}}, own).status(200)
	e.do("GET", "/api/v1/projects/"+e.projectID, nil, own, from("203.0.113.9")).status(200)

	// Two-factor required: members without it are refused until they have it.
	e.setTwoFactor(e.userIDOf(adminEmail), true)
	e.do("PATCH", path, map[string]any{"security": map[string]any{"two_factor_required": true}}, own).status(200)
	e.do("GET", "/api/v1/projects/"+e.projectID, nil, bearer(anaTok)).authError(403, "TWO_FACTOR_REQUIRED")
	e.do("GET", "/api/v1/organizations/"+org+"/teams", nil, bearer(anaTok)).authError(403, "TWO_FACTOR_REQUIRED")
	e.do("GET", "/api/v1/projects/"+e.projectID, nil, own).status(200)
	e.setTwoFactor(e.userIDOf(anaEmail), true)
	e.eventually(func() bool { return e.do("GET", "/api/v1/projects/"+e.projectID, nil, bearer(anaTok)).Code == 200 })
	e.do("PATCH", path, map[string]any{"security": map[string]any{"two_factor_required": false}}, own).status(200)
	e.setTwoFactor(e.userIDOf(adminEmail), false) // the flag alone, without a secret, would block password sign-in

	// Session timeout: a refresh token idle longer than the setting is refused; each refresh
	// restarts the count.
	e.do("PATCH", path, map[string]any{"security": map[string]any{"session_timeout_minutes": 30}}, own).status(200)
	l := e.login(adminEmail, adminPassword, org).status(200)
	e.clock.Advance(20 * time.Minute)
	rt := e.do("POST", "/api/v1/auth/refresh", map[string]any{"refresh_token": l.str("refresh_token")}).status(200).str("refresh_token")
	e.clock.Advance(20 * time.Minute)
	rt = e.do("POST", "/api/v1/auth/refresh", map[string]any{"refresh_token": rt}).status(200).str("refresh_token")
	e.clock.Advance(31 * time.Minute)
	e.do("POST", "/api/v1/auth/refresh", map[string]any{"refresh_token": rt}).authError(401, "SESSION_EXPIRED")
	e.ownerToken = e.login(adminEmail, adminPassword, org).str("access_token") // the first one has expired meanwhile
	own = bearer(e.ownerToken)

	// Defaults: the role of an invitation that names none; member is the viewer role; the
	// visibility of a new project.
	e.do("PATCH", path, map[string]any{"defaults": map[string]any{"user_role": "analyst", "project_visibility": "private"}}, own).status(200)
	inv := "/api/v1/organizations/" + org + "/invitations"
	if r := e.do("POST", inv, map[string]any{"email": "dflt@example.com"}, own).status(201); r.str("role") != "analyst" {
		t.Fatalf("default invitation role: %s", r.Body)
	}
	if r := e.do("POST", inv, map[string]any{"email": "mem@example.com", "role": "member"}, own).status(201); r.str("role") != "viewer" {
		t.Fatalf("member invitation role: %s", r.Body)
	}
	if r := e.do("POST", "/api/v1/organizations/"+org+"/projects", map[string]any{"name": "Defaulted"}, own).status(201); r.str("visibility") != "private" {
		t.Fatalf("default visibility: %s", r.Body)
	}

	// Retention: soft-deleted records go after the organization's days, not before.
	e.do("PATCH", path, map[string]any{"defaults": map[string]any{"dataset_retention_days": 2}}, own).status(200)
	ds := e.uploadAndCreate(e.ownerToken, "kept", "kept.csv", "name\nAnn\nBob\n")
	e.waitDataset(e.ownerToken, ds)
	e.do("DELETE", "/api/v1/datasets/"+ds+"/data/1", nil, own).status(200)
	count := func() int { return e.countRows(`SELECT count(*) FROM "` + org + `"."` + ds + `"`) }
	if n, err := datasets.PurgeDeleted(context.Background(), e.st.DB, e.clock.Now().AddDate(0, 0, 1)); err != nil || n != 0 || count() != 2 {
		t.Fatalf("purged before the retention: %d %v", n, err)
	}
	if n, err := datasets.PurgeDeleted(context.Background(), e.st.DB, e.clock.Now().AddDate(0, 0, 3)); err != nil || n != 1 || count() != 1 {
		t.Fatalf("not purged after the retention: %d %v", n, err)
	}

	if n := e.countAuditRows(org, "organization.settings_update"); n != before+7 {
		t.Fatalf("settings audit rows: %d, want %d", n, before+7)
	}
	if n := e.countOutboxRows(org, "organization.updated"); n < 7 {
		t.Fatalf("organization.updated events: %d", n)
	}
}

// TestForwardedForIgnoredWithoutTrustedProxy: without DP_TRUSTED_PROXIES a client cannot
// choose its address with X-Forwarded-For.
func TestForwardedForIgnoredWithoutTrustedProxy(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	own := bearer(e.ownerToken)
	path := "/api/v1/organizations/" + e.orgID + "/settings"
	e.do("PATCH", path, map[string]any{"security": map[string]any{"ip_allowlist": []string{"127.0.0.0/8"}}}, own).status(200)
	e.do("GET", "/api/v1/projects/"+e.projectID, nil, own, header{"X-Forwarded-For": "203.0.113.9"}).status(200)
	// And the lockout check judges the real address too.
	e.do("PATCH", path, map[string]any{"security": map[string]any{"ip_allowlist": []string{"203.0.113.9"}}}, own, header{"X-Forwarded-For": "203.0.113.9"}).
		apiError(400, "VALIDATION_ERROR", "body.security.ip_allowlist", "locks_out_caller")
}

// setTwoFactor switches a user's two-factor sign-in flag directly in the database.
func (e *env) setTwoFactor(userID string, on bool) {
	e.t.Helper()
	if _, err := e.st.DB.Exec(`UPDATE platform.users SET two_factor_enabled = $2 WHERE id = $1`, userID, on); err != nil {
		e.t.Fatal(err)
	}
}

// eventually polls cond for up to 5 seconds (a change made behind the server's back reaches
// it by notification).
func (e *env) eventually(cond func() bool) {
	e.t.Helper()
	for i := 0; !cond(); i++ {
		if i == 250 {
			e.t.Fatal("condition never held")
		}
		time.Sleep(20 * time.Millisecond)
	}
}
