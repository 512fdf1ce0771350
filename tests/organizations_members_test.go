package tests

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestMemberListFilters(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	own := bearer(e.ownerToken)
	base := "/api/v1/organizations/" + e.orgID + "/users"
	adminMail, _ := e.member(e.orgID, "admin")
	devMail, _ := e.member(e.orgID, "developer")
	_, viewer := e.member(e.orgID, "viewer")
	e.do("POST", "/api/v1/organizations/"+e.orgID+"/invitations", map[string]any{"email": "pending.person@example.org", "role": "analyst"}, own).status(201)

	all := e.do("GET", base, nil, own).status(200)
	// Ordered by name: Administrator, pending.person (named after the email), User admin, User developer, User viewer.
	wantNames := []string{"Administrator", "pending.person", "User admin", "User developer", "User viewer"}
	if all.num("pagination.total") != 5 || all.len("users") != 5 {
		t.Fatalf("users: %s", all.Body)
	}
	for i, n := range wantNames {
		if all.str(fmt.Sprintf("users.%d.name", i)) != n {
			t.Fatalf("users not ordered by name, want %v:\n%s", wantNames, all.Body)
		}
	}
	inv := all.get("users.1").(map[string]any)
	if inv["status"] != "invited" || inv["role"] != "analyst" || inv["email"] != "pending.person@example.org" || inv["joined_at"] != nil {
		t.Fatalf("invited placeholder: %v", inv)
	}
	act := all.get("users.2").(map[string]any)
	if act["status"] != "active" || act["role"] != "admin" || act["email"] != adminMail || act["joined_at"] == nil || act["two_factor_enabled"] != false {
		t.Fatalf("active member: %v", act)
	}

	cases := []struct {
		q     string
		total int
		first string // email of the first user listed
	}{
		{"?status=invited", 1, "pending.person@example.org"},
		{"?status=active", 4, adminEmail},
		{"?status=disabled", 0, ""},
		{"?role=developer", 1, devMail},
		{"?role=owner", 1, adminEmail},
		{"?role=analyst&status=invited", 1, "pending.person@example.org"},
		{"?role=analyst&status=active", 0, ""},
		{"?search=DEVELOPER", 1, devMail},                        // email, case-insensitive
		{"?search=user+v", 1, ""},                                // name
		{"?search=example.org", 1, "pending.person@example.org"}, // email domain
		{"?search=user", 3, ""},
		{"?search=%25", 0, ""}, // LIKE wildcards are literal
		{"?search=_", 0, ""},
		{"?search=nobody", 0, ""},
		{"?team_id=tm_1", 0, ""},
		{"?limit=2&page=3", 5, "pending.person@example.org"},
	}
	for _, tc := range cases {
		e.subtest(t, tc.q, func(t *testing.T) {
			l := e.do("GET", base+tc.q, nil, own).status(200)
			if l.num("pagination.total") != tc.total {
				t.Fatalf("total %d, want %d: %s", l.num("pagination.total"), tc.total, l.Body)
			}
			if tc.q == "?limit=2&page=3" {
				if l.len("users") != 1 || l.str("users.0.name") != "User viewer" || l.get("pagination.has_next") != false || l.num("pagination.pages") != 3 {
					t.Fatalf("last page: %s", l.Body)
				}
				return
			}
			if tc.first != "" && l.str("users.0.email") != tc.first {
				t.Fatalf("first user %s, want %s", l.str("users.0.email"), tc.first)
			}
		})
	}
	for _, tc := range []struct{ q, field, code string }{
		{"?role=boss", "query.role", "enum"},
		{"?status=gone", "query.status", "enum"},
		{"?limit=101", "query.limit", "maximum"},
		{"?search=" + strings.Repeat("s", 256), "query.search", "maxLength"},
	} {
		e.do("GET", base+tc.q, nil, own).apiError(400, "VALIDATION_ERROR", tc.field, tc.code)
	}
	// Any member may list; others see no organization.
	e.do("GET", base, nil, bearer(viewer)).status(200)
	other := e.do("POST", "/api/v1/organizations", map[string]any{"name": "Other"}, own).status(201).str("id")
	e.do("GET", "/api/v1/organizations/"+other+"/users", nil, bearer(viewer)).apiError(404, "NOT_FOUND")
	e.do("GET", base, nil).authError(401, "AUTH_REQUIRED")
}

func TestInvitationAcceptNewPerson(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	own := bearer(e.ownerToken)
	ownerID := e.userIDOf(adminEmail)
	invURL := "/api/v1/organizations/" + e.orgID + "/invitations"
	inv := e.do("POST", invURL, map[string]any{"email": "new@example.com", "name": "New Person", "role": "analyst", "message": "welcome", "expires_in_days": 3}, own).status(201)
	if !strings.HasPrefix(inv.str("invitation_url"), baseURL+"/api/v1/invitations/") || inv.str("status") != "pending" || inv.str("role") != "analyst" ||
		inv.str("email") != "new@example.com" || inv.str("name") != "New Person" || inv.str("organization_id") != e.orgID ||
		!strings.HasPrefix(inv.str("invitation_id"), "inv_") || !strings.HasPrefix(inv.str("user_id"), "usr_") {
		t.Fatalf("invitation: %s", inv.Body)
	}
	exp, _ := time.Parse(time.RFC3339Nano, inv.str("expires_at"))
	if want := e.clock.Now().Add(72 * time.Hour); exp.Sub(want).Abs() > time.Second {
		t.Fatalf("expires_at %s, want %s", exp, want)
	}
	tok := invTokenOf(inv)
	if strings.Contains(string(e.do("GET", "/api/v1/organizations/"+e.orgID+"/users", nil, own).Body), tok) {
		t.Fatal("the token is visible in the user list")
	}

	// Public information about the invitation.
	info := e.do("GET", "/api/v1/invitations/"+tok, nil).status(200)
	if info.str("organization_id") != e.orgID || info.str("organization_name") != "Default organization" || info.str("email") != "new@example.com" ||
		info.str("name") != "New Person" || info.str("role") != "analyst" || info.str("status") != "pending" || info.get("existing_user") != false ||
		info.str("message") != "welcome" || info.str("expires_at") != inv.str("expires_at") {
		t.Fatalf("info: %s", info.Body)
	}
	// Someone else's guess is not an invitation.
	e.do("GET", "/api/v1/invitations/"+strings.Repeat("a", 43), nil).apiError(404, "INVITATION_NOT_FOUND")
	e.do("POST", "/api/v1/invitations/"+strings.Repeat("a", 43)+"/accept", map[string]any{"name": "x", "password": "quiet harbor lantern"}).apiError(404, "INVITATION_NOT_FOUND")

	accept := "/api/v1/invitations/" + tok + "/accept"
	for _, tc := range []struct{ name, body, field, code string }{
		{"name missing", `{"password":"quiet harbor lantern"}`, "body.name", "required"},
		{"password missing", `{"name":"N"}`, "body.password", "required"},
		{"password short", `{"name":"N","password":"short"}`, "body.password", "minLength"},
		{"empty name", `{"name":"","password":"quiet harbor lantern"}`, "body.name", "minLength"},
		{"unknown field", `{"name":"N","password":"quiet harbor lantern","role":"owner"}`, "body.role", "unknown_field"},
	} {
		e.subtest(t, tc.name, func(t *testing.T) {
			e.do("POST", accept, tc.body).apiError(400, "VALIDATION_ERROR", tc.field, tc.code)
		})
	}
	acc := e.do("POST", accept, map[string]any{"name": "New Person", "password": "quiet harbor lantern"}).status(200)
	if acc.str("user.organization_id") != e.orgID || acc.str("user.roles.0") != "analyst" || acc.str("user.email") != "new@example.com" ||
		acc.str("user.name") != "New Person" || acc.str("user.id") != inv.str("user_id") || acc.str("token_type") != "Bearer" || acc.str("refresh_token") == "" {
		t.Fatalf("accept: %s", acc.Body)
	}
	// Signed in: the token works, and so does the password.
	if g := e.do("GET", "/api/v1/organizations/"+e.orgID, nil, bearer(acc.str("access_token"))).status(200); g.str("user_role") != "analyst" {
		t.Fatalf("new member's view: %s", g.Body)
	}
	e.login("new@example.com", "quiet harbor lantern", "")
	if l := e.do("GET", "/api/v1/organizations/"+e.orgID+"/users?search=new@", nil, own).status(200); l.str("users.0.status") != "active" || l.get("users.0.joined_at") == nil {
		t.Fatalf("after accepting: %s", l.Body)
	}
	// An invitation is used once.
	e.do("POST", accept, map[string]any{"name": "x", "password": "quiet harbor lantern"}).apiError(404, "INVITATION_NOT_FOUND")
	e.do("GET", "/api/v1/invitations/"+tok, nil).apiError(404, "INVITATION_NOT_FOUND")

	// Audit and outbox: the invitation by the owner, the join by the new member.
	var rows []struct {
		Action string `db:"action"`
		Actor  string `db:"actor_id"`
		ResID  string `db:"resource_id"`
	}
	if err := e.st.DB.Select(&rows, `SELECT action, actor_id, resource_id FROM platform.audit_log
		WHERE organization_id = $1 AND action IN ('user.invite', 'user.join') ORDER BY id`, e.orgID); err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 || rows[0].Action != "user.invite" || rows[0].Actor != ownerID || rows[0].ResID != inv.str("user_id") ||
		rows[1].Action != "user.join" || rows[1].Actor != inv.str("user_id") || rows[1].ResID != inv.str("user_id") {
		t.Fatalf("audit rows: %+v", rows)
	}
	if e.countOutboxRows(e.orgID, "user.invited") != 1 || e.countOutboxRows(e.orgID, "user.joined") != 1 {
		t.Fatal("user.invited or user.joined missing from the outbox")
	}
	var payloadEmail string
	if err := e.st.DB.Get(&payloadEmail, `SELECT payload->>'email' FROM platform.outbox WHERE organization_id = $1 AND event_type = 'user.invited'`, e.orgID); err != nil || payloadEmail != "new@example.com" {
		t.Fatalf("user.invited payload email %q (%v)", payloadEmail, err)
	}
}

func TestInvitationValidationAndPermissions(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	own := bearer(e.ownerToken)
	invURL := "/api/v1/organizations/" + e.orgID + "/invitations"
	cases := []struct {
		name, body, field, code string
	}{
		{"owner role", `{"email":"o@example.com","role":"owner"}`, "body.role", "enum"},
		{"unknown role", `{"email":"o@example.com","role":"boss"}`, "body.role", "enum"},
		{"teams", `{"email":"t@example.com","teams":["tm_1"]}`, "body.teams", "unknown_team"},
		{"team id", `{"email":"t@example.com","teams":["x"]}`, "body.teams.0", "pattern"},
		{"email missing", `{"role":"viewer"}`, "body.email", "required"},
		{"bad email", `{"email":"not-an-email"}`, "body.email", "format"},
		{"display name email", `{"email":"Bob <bob@example.com>"}`, "body.email", "format"},
		{"zero days", `{"email":"d@example.com","expires_in_days":0}`, "body.expires_in_days", "minimum"},
		{"too many days", `{"email":"d@example.com","expires_in_days":31}`, "body.expires_in_days", "maximum"},
		{"unknown field", `{"email":"d@example.com","admin":true}`, "body.admin", "unknown_field"},
		{"duplicate key", `{"email":"d@example.com","email":"e@example.com"}`, "body.email", "duplicate"},
	}
	for _, tc := range cases {
		e.subtest(t, tc.name, func(t *testing.T) {
			e.do("POST", invURL, tc.body, own).apiError(400, "VALIDATION_ERROR", tc.field, tc.code)
		})
	}
	if n := e.countAuditRows(e.orgID, "user.invite"); n != 0 {
		t.Fatalf("refused invitations audited: %d", n)
	}
	// Defaults: viewer, seven days, empty teams accepted.
	r := e.do("POST", invURL, map[string]any{"email": "plain@example.com", "teams": []string{}}, own).status(201)
	exp, _ := time.Parse(time.RFC3339Nano, r.str("expires_at"))
	if r.str("role") != "viewer" || exp.Sub(e.clock.Now().Add(7*24*time.Hour)).Abs() > time.Second {
		t.Fatalf("defaults: %s", r.Body)
	}
	// Inviting needs admin.
	for _, role := range []string{"developer", "viewer"} {
		_, tok := e.member(e.orgID, role)
		r := e.do("POST", invURL, map[string]any{"email": "x@example.com"}, bearer(tok)).authError(403, "INSUFFICIENT_PERMISSIONS")
		if r.str("required_role") != "admin" || r.str("your_role") != "member" {
			t.Fatalf("403: %s", r.Body)
		}
	}
	_, admin := e.member(e.orgID, "admin")
	e.do("POST", invURL, map[string]any{"email": "by-admin@example.com", "role": "admin"}, bearer(admin)).status(201)
	// Not in the organization: 404; anonymous: 401.
	other := e.do("POST", "/api/v1/organizations", map[string]any{"name": "Other"}, own).status(201).str("id")
	e.do("POST", "/api/v1/organizations/"+other+"/invitations", map[string]any{"email": "x@example.com"}, bearer(admin)).apiError(404, "NOT_FOUND")
	e.do("POST", invURL, map[string]any{"email": "x@example.com"}).authError(401, "AUTH_REQUIRED")

	// An active member, in any letter case, is a conflict on email.
	for _, email := range []string{adminEmail, strings.ToUpper(adminEmail)} {
		r := e.do("POST", invURL, map[string]any{"email": email}, own).apiError(409, "CONFLICT")
		if detailField(r) != "email" {
			t.Fatalf("409: %s", r.Body)
		}
	}
}

func TestInvitationReplaceAndExpiry(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	own := bearer(e.ownerToken)
	invURL := "/api/v1/organizations/" + e.orgID + "/invitations"
	first := e.do("POST", invURL, map[string]any{"email": "late@example.com", "role": "viewer", "expires_in_days": 2}, own).status(201)
	again := e.do("POST", invURL, map[string]any{"email": "Late@example.com", "role": "developer", "expires_in_days": 2}, own).status(201)
	if again.str("user_id") != first.str("user_id") || invTokenOf(again) == invTokenOf(first) {
		t.Fatalf("re-invitation: %s / %s", first.Body, again.Body)
	}
	// The first token is withdrawn; the user is listed once with the new role.
	e.do("GET", "/api/v1/invitations/"+invTokenOf(first), nil).apiError(404, "INVITATION_NOT_FOUND")
	e.do("POST", "/api/v1/invitations/"+invTokenOf(first)+"/accept", map[string]any{"name": "L", "password": "quiet harbor lantern"}).apiError(404, "INVITATION_NOT_FOUND")
	if l := e.do("GET", "/api/v1/organizations/"+e.orgID+"/users?status=invited", nil, own).status(200); l.num("pagination.total") != 1 || l.str("users.0.role") != "developer" {
		t.Fatalf("invited list: %s", l.Body)
	}

	// Valid up to its expiry, gone after it.
	e.clock.Advance(48*time.Hour - time.Second)
	e.do("GET", "/api/v1/invitations/"+invTokenOf(again), nil).status(200)
	e.clock.Advance(2 * time.Second)
	e.do("POST", "/api/v1/invitations/"+invTokenOf(again)+"/accept", map[string]any{"name": "L", "password": "quiet harbor lantern"}).apiError(410, "INVITATION_EXPIRED")
	e.clock.Advance(-48 * time.Hour)
	// Still acceptable before it expires; the accepted role is the last invitation's.
	acc := e.do("POST", "/api/v1/invitations/"+invTokenOf(again)+"/accept", map[string]any{"name": "L", "password": "quiet harbor lantern"}).status(200)
	if acc.str("user.roles.0") != "developer" {
		t.Fatalf("accepted role: %s", acc.Body)
	}
}

// GET of an expired invitation answers 410 like accept does; the description must allow it.
func TestInvitationExpiredInfo(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	inv := e.do("POST", "/api/v1/organizations/"+e.orgID+"/invitations", map[string]any{"email": "late@example.com", "expires_in_days": 1}, bearer(e.ownerToken)).status(201)
	e.clock.Advance(24*time.Hour + time.Second)
	e.do("GET", "/api/v1/invitations/"+invTokenOf(inv), nil).apiError(410, "INVITATION_EXPIRED")
}

func TestInvitationExistingUser(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	own := bearer(e.ownerToken)
	second := e.do("POST", "/api/v1/organizations", map[string]any{"name": "Second"}, own).status(201).str("id")
	email, _ := e.member(e.orgID, "viewer") // name "User viewer", password "password-viewer"
	inv := e.do("POST", "/api/v1/organizations/"+second+"/invitations", map[string]any{"email": strings.ToUpper(email), "name": "Other Name", "role": "developer"}, own).status(201)
	tok := invTokenOf(inv)
	if info := e.do("GET", "/api/v1/invitations/"+tok, nil).status(200); info.get("existing_user") != true {
		t.Fatalf("existing user not recognised: %s", info.Body)
	}
	accept := "/api/v1/invitations/" + tok + "/accept"
	// An existing account accepts signed in, never with a password at the door (that would let
	// whoever set the password, such as an inviter who accepted their own link, in).
	e.do("POST", accept, map[string]any{"name": "Changed", "password": "not-their-password"}).authError(401, "AUTH_REQUIRED")
	e.do("POST", accept, map[string]any{"password": "password-viewer"}).authError(401, "AUTH_REQUIRED")
	e.do("POST", accept, map[string]any{}, bearer(e.ownerToken)).authError(403, "PERMISSION_DENIED")
	signedIn := bearer(e.login(email, "password-viewer", "").str("access_token"))
	// Set up through a link its inviter saw, the account's address is not verified: it joins
	// no second organization until it is.
	e.do("POST", accept, map[string]any{}, signedIn).authError(403, "EMAIL_NOT_VERIFIED")
	e.do("GET", "/api/v1/invitations/"+tok, nil).status(200)
	e.verified(email)
	// Accepting signed in: name and password kept.
	acc := e.do("POST", accept, map[string]any{"password": "password-viewer", "name": "Changed"}, signedIn).status(200)
	if acc.str("user.name") != "User viewer" || acc.str("user.organization_id") != second || acc.str("user.roles.0") != "developer" || acc.str("user.email") != email {
		t.Fatalf("accept changed the account or joined the wrong organization: %s", acc.Body)
	}
	me := e.do("GET", "/api/v1/auth/me", nil, bearer(e.login(email, "password-viewer", second).str("access_token"))).status(200)
	if me.str("name") != "User viewer" || me.len("organizations") != 2 {
		t.Fatalf("me: %s", me.Body)
	}
	e.do("POST", "/api/v1/auth/login", map[string]any{"email": email, "password": "Changed"}).authError(401, "AUTH_REQUIRED")
	// One account, two memberships.
	var n int
	if err := e.st.DB.Get(&n, `SELECT count(*) FROM platform.users WHERE lower(email) = lower($1)`, email); err != nil || n != 1 {
		t.Fatalf("%d accounts for %s (%v)", n, email, err)
	}
}

func TestInvitationPlanLimit(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	own := bearer(e.ownerToken)
	invURL := "/api/v1/organizations/" + e.orgID + "/invitations"
	_, _ = e.member(e.orgID, "developer") // an active member counts
	for i := 0; i < 8; i++ {              // pending invitations count too: 1 + 1 + 8 = the free plan's 10
		e.do("POST", invURL, map[string]any{"email": fmt.Sprintf("p%d@example.com", i)}, own).status(201)
	}
	r := e.do("POST", invURL, map[string]any{"email": "eleventh@example.com"}, own).apiError(422, "PLAN_LIMIT_EXCEEDED")
	if r.num("error.details.current_users") != 10 || r.num("error.details.plan_limit") != 10 || r.str("error.details.suggested_plan") != "pro" {
		t.Fatalf("plan limit: %s", r.Body)
	}
	if !strings.HasSuffix(r.str("error.documentation_url"), "/api/v1/errors/PLAN_LIMIT_EXCEEDED") {
		t.Fatalf("documentation_url: %s", r.Body)
	}
	// Nothing of the refused invitation was kept.
	var n int
	if err := e.st.DB.Get(&n, `SELECT count(*) FROM platform.users WHERE email = 'eleventh@example.com'`); err != nil || n != 0 {
		t.Fatalf("refused invitee stored (%d, %v)", n, err)
	}
	// Re-inviting someone already pending takes no new seat.
	e.do("POST", invURL, map[string]any{"email": "p0@example.com", "role": "analyst"}, own).status(201)
	// Withdrawing an invitation frees its seat.
	l := e.do("GET", "/api/v1/organizations/"+e.orgID+"/users?search=p1@", nil, own).status(200)
	e.do("DELETE", "/api/v1/organizations/"+e.orgID+"/users/"+l.str("users.0.id"), nil, own).status(204)
	e.do("POST", invURL, map[string]any{"email": "eleventh@example.com"}, own).status(201)
	e.do("POST", invURL, map[string]any{"email": "twelfth@example.com"}, own).apiError(422, "PLAN_LIMIT_EXCEEDED")
	// A bigger plan has room.
	e.setPlan(e.orgID, "pro")
	e.do("POST", invURL, map[string]any{"email": "twelfth@example.com"}, own).status(201)
}

func TestInvitationWithdrawn(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	own := bearer(e.ownerToken)
	inv := e.do("POST", "/api/v1/organizations/"+e.orgID+"/invitations", map[string]any{"email": "gone@example.com"}, own).status(201)
	e.do("DELETE", "/api/v1/organizations/"+e.orgID+"/users/"+inv.str("user_id"), nil, own).status(204)
	e.do("GET", "/api/v1/invitations/"+invTokenOf(inv), nil).apiError(404, "INVITATION_NOT_FOUND")
	e.do("POST", "/api/v1/invitations/"+invTokenOf(inv)+"/accept", map[string]any{"name": "G", "password": "quiet harbor lantern"}).apiError(404, "INVITATION_NOT_FOUND")
	var n int
	if err := e.st.DB.Get(&n, `SELECT count(*) FROM platform.users WHERE email = 'gone@example.com'`); err != nil || n != 0 {
		t.Fatalf("placeholder account kept (%d, %v)", n, err)
	}
	if l := e.do("GET", "/api/v1/organizations/"+e.orgID+"/users?status=invited", nil, own).status(200); l.num("pagination.total") != 0 {
		t.Fatalf("withdrawn invitation listed: %s", l.Body)
	}
}

func TestMemberRoleChange(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	own := bearer(e.ownerToken)
	users := "/api/v1/organizations/" + e.orgID + "/users/"
	adminMail, admin := e.member(e.orgID, "admin")
	devMail, dev := e.member(e.orgID, "developer")
	ownerID, adminID, devID := e.userIDOf(adminEmail), e.userIDOf(adminMail), e.userIDOf(devMail)

	// An admin changes roles below owner.
	r := e.do("PATCH", users+devID, map[string]any{"role": "analyst"}, bearer(admin)).status(200)
	if r.str("role") != "analyst" || r.str("id") != devID || r.str("email") != devMail || r.str("status") != "active" {
		t.Fatalf("role change: %s", r.Body)
	}
	e.do("PATCH", users+devID, map[string]any{"role": "developer"}, bearer(admin)).status(200)
	if g := e.do("GET", "/api/v1/organizations/"+e.orgID, nil, bearer(dev)).status(200); g.str("user_role") != "developer" {
		t.Fatalf("the member's own view: %s", g.Body)
	}
	// Owner is granted and taken by owners only.
	for _, tc := range []struct {
		target, role string
	}{
		{devID, "owner"},
		{ownerID, "viewer"},
		{ownerID, "owner"},
	} {
		r := e.do("PATCH", users+tc.target, map[string]any{"role": tc.role}, bearer(admin)).authError(403, "INSUFFICIENT_PERMISSIONS")
		if r.str("required_role") != "owner" || r.str("your_role") != "admin" {
			t.Fatalf("403: %s", r.Body)
		}
	}
	// Below admin: no role changes at all.
	if r := e.do("PATCH", users+adminID, map[string]any{"role": "viewer"}, bearer(dev)).authError(403, "INSUFFICIENT_PERMISSIONS"); r.str("required_role") != "admin" {
		t.Fatalf("403: %s", r.Body)
	}
	// The last owner cannot be demoted, not even by themselves.
	r = e.do("PATCH", users+ownerID, map[string]any{"role": "admin"}, own).apiError(409, "CONFLICT")
	if detailField(r) != "role" {
		t.Fatalf("409: %s", r.Body)
	}
	// With a second owner, the first may step down; then the second is the last.
	if r := e.do("PATCH", users+adminID, map[string]any{"role": "owner"}, own).status(200); r.str("role") != "owner" {
		t.Fatalf("grant owner: %s", r.Body)
	}
	e.do("PATCH", users+ownerID, map[string]any{"role": "admin"}, own).status(200)
	e.do("PATCH", users+adminID, map[string]any{"role": "developer"}, bearer(admin)).apiError(409, "CONFLICT")
	// The former owner is now an admin and cannot touch the owner.
	e.do("PATCH", users+adminID, map[string]any{"role": "viewer"}, own).authError(403, "INSUFFICIENT_PERMISSIONS")

	e.do("PATCH", users+"usr_nobody", map[string]any{"role": "viewer"}, bearer(admin)).apiError(404, "NOT_FOUND")
	e.do("PATCH", users+devID, map[string]any{"role": "king"}, bearer(admin)).apiError(400, "VALIDATION_ERROR", "body.role", "enum")
	e.do("PATCH", users+devID, map[string]any{}, bearer(admin)).apiError(400, "VALIDATION_ERROR", "body.role", "required")
	e.do("PATCH", users+devID, map[string]any{"role": "viewer", "status": "disabled"}, bearer(admin)).apiError(400, "VALIDATION_ERROR", "body.status", "unknown_field")
	// A former member is not found here.
	outsider, _ := e.member(e.orgID, "viewer")
	outsiderID := e.userIDOf(outsider)
	e.do("DELETE", users+outsiderID, nil, bearer(admin)).status(204)
	e.do("PATCH", users+outsiderID, map[string]any{"role": "viewer"}, bearer(admin)).apiError(404, "NOT_FOUND")

	var rows []struct {
		Actor string `db:"actor_id"`
		ResID string `db:"resource_id"`
		From  string `db:"from_role"`
		To    string `db:"to_role"`
	}
	if err := e.st.DB.Select(&rows, `SELECT actor_id, resource_id, details->>'from' AS from_role, details->>'to' AS to_role
		FROM platform.audit_log WHERE organization_id = $1 AND action = 'user.role_change' ORDER BY id`, e.orgID); err != nil {
		t.Fatal(err)
	}
	if len(rows) != 4 || rows[0].Actor != adminID || rows[0].ResID != devID || rows[0].From != "developer" || rows[0].To != "analyst" ||
		rows[2].Actor != ownerID || rows[2].ResID != adminID || rows[2].To != "owner" {
		t.Fatalf("user.role_change rows: %+v", rows)
	}
}

// A role changed while the invitation is pending is the role the person gets on accepting.
func TestMemberRoleChangeOfInvitedUser(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	own := bearer(e.ownerToken)
	inv := e.do("POST", "/api/v1/organizations/"+e.orgID+"/invitations", map[string]any{"email": "pending@example.com", "role": "admin"}, own).status(201)
	r := e.do("PATCH", "/api/v1/organizations/"+e.orgID+"/users/"+inv.str("user_id"), map[string]any{"role": "viewer"}, own).status(200)
	if r.str("role") != "viewer" || r.str("status") != "invited" {
		t.Fatalf("role change of an invited user: %s", r.Body)
	}
	if info := e.do("GET", "/api/v1/invitations/"+invTokenOf(inv), nil).status(200); info.str("role") != "viewer" {
		t.Fatalf("invitation after the role change: %s", info.Body)
	}
	acc := e.do("POST", "/api/v1/invitations/"+invTokenOf(inv)+"/accept", map[string]any{"name": "P", "password": "quiet harbor lantern"}).status(200)
	if acc.str("user.roles.0") != "viewer" {
		t.Fatalf("accepted with role %s, want viewer", acc.str("user.roles.0"))
	}
}

func TestMemberRemove(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	own := bearer(e.ownerToken)
	users := "/api/v1/organizations/" + e.orgID + "/users/"
	adminMail, admin := e.member(e.orgID, "admin")
	devMail, dev := e.member(e.orgID, "developer")
	anaMail, analyst := e.member(e.orgID, "analyst")
	ownerID, adminID, devID, anaID := e.userIDOf(adminEmail), e.userIDOf(adminMail), e.userIDOf(devMail), e.userIDOf(anaMail)
	devKey := e.do("POST", "/api/v1/api-keys", map[string]any{"name": "dev", "permissions": []string{"datasets:list"}}, bearer(dev)).status(201).str("key")
	e.do("GET", "/api/v1/projects/"+e.projectID, nil, apiKey(devKey)).status(200)

	// Below admin, nobody else can be removed.
	if r := e.do("DELETE", users+anaID, nil, bearer(dev)).authError(403, "INSUFFICIENT_PERMISSIONS"); r.str("required_role") != "admin" || r.str("your_role") != "member" {
		t.Fatalf("403: %s", r.Body)
	}
	// An admin cannot remove an owner.
	if r := e.do("DELETE", users+ownerID, nil, bearer(admin)).authError(403, "INSUFFICIENT_PERMISSIONS"); r.str("required_role") != "owner" {
		t.Fatalf("403: %s", r.Body)
	}
	// An admin removes a member: the member's token and key lose the organization at once.
	e.do("DELETE", users+devID, nil, bearer(admin)).status(204)
	e.do("GET", "/api/v1/organizations/"+e.orgID, nil, bearer(dev)).apiError(404, "NOT_FOUND")
	e.do("GET", "/api/v1/projects/"+e.projectID, nil, bearer(dev)).apiError(404, "NOT_FOUND")
	e.do("GET", "/api/v1/projects/"+e.projectID, nil, apiKey(devKey)).apiError(404, "NOT_FOUND")
	if l := e.do("GET", "/api/v1/organizations", nil, bearer(dev)).status(200); l.num("pagination.total") != 0 {
		t.Fatalf("removed member still lists the organization: %s", l.Body)
	}
	e.do("DELETE", users+devID, nil, bearer(admin)).apiError(404, "NOT_FOUND")
	e.do("DELETE", users+"usr_nobody", nil, bearer(admin)).apiError(404, "NOT_FOUND")
	// The account survives: they can still sign in.
	e.login(devMail, "password-developer", "")

	// Anyone may leave on their own.
	e.do("DELETE", users+anaID, nil, bearer(analyst)).status(204)
	e.do("GET", "/api/v1/organizations/"+e.orgID, nil, bearer(analyst)).apiError(404, "NOT_FOUND")
	// The last owner cannot leave; nor be removed.
	if r := e.do("DELETE", users+ownerID, nil, own).apiError(409, "CONFLICT"); detailField(r) != "role" {
		t.Fatalf("409: %s", r.Body)
	}
	// With a second owner, one owner can leave.
	e.do("PATCH", users+adminID, map[string]any{"role": "owner"}, own).status(200)
	e.do("DELETE", users+ownerID, nil, own).status(204)
	e.do("DELETE", users+adminID, nil, bearer(admin)).apiError(409, "CONFLICT")
	if l := e.do("GET", "/api/v1/organizations/"+e.orgID+"/users", nil, bearer(admin)).status(200); l.num("pagination.total") != 1 || l.str("users.0.role") != "owner" {
		t.Fatalf("what is left: %s", l.Body)
	}

	// user.remove for removals by an admin, user.leave for leaving; user.removed events for all.
	type row struct {
		Action string `db:"action"`
		Actor  string `db:"actor_id"`
		ResID  string `db:"resource_id"`
	}
	var rows []row
	if err := e.st.DB.Select(&rows, `SELECT action, actor_id, resource_id FROM platform.audit_log
		WHERE organization_id = $1 AND action IN ('user.remove', 'user.leave') ORDER BY id`, e.orgID); err != nil {
		t.Fatal(err)
	}
	want := []row{{"user.remove", adminID, devID}, {"user.leave", anaID, anaID}, {"user.leave", ownerID, ownerID}}
	if fmt.Sprint(rows) != fmt.Sprint(want) {
		t.Fatalf("audit rows %+v, want %+v", rows, want)
	}
	if n := e.countOutboxRows(e.orgID, "user.removed"); n != 3 {
		t.Fatalf("%d user.removed events, want 3", n)
	}
	var removed string
	if err := e.st.DB.Get(&removed, `SELECT payload->>'user_id' FROM platform.outbox WHERE organization_id = $1 AND event_type = 'user.removed' ORDER BY id LIMIT 1`, e.orgID); err != nil || removed != devID {
		t.Fatalf("user.removed payload user_id %q (%v)", removed, err)
	}
}

// Every password length the description accepts can be set when accepting an invitation.
func TestInvitationPasswordLengthAsDescribed(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	own := bearer(e.ownerToken)
	op := doc.Paths.Find("/api/v1/invitations/{token}/accept").Post
	max := int(*op.RequestBody.Value.Content.Get("application/json").Schema.Value.Properties["password"].Value.MaxLength)
	strong := "Tq7!vR2#kettle orbit lantern quartz meadow violet harbor pepper cobalt sierra"
	for _, n := range slices.Compact([]int{8, 72, max}) {
		inv := e.do("POST", "/api/v1/organizations/"+e.orgID+"/invitations", map[string]any{"email": fmt.Sprintf("pw%d@example.com", n)}, own).status(201)
		r := e.do("POST", "/api/v1/invitations/"+invTokenOf(inv)+"/accept", map[string]any{"name": "P", "password": strong[:n]})
		r.status(200)
		e.login(fmt.Sprintf("pw%d@example.com", n), strong[:n], "")
	}
}

// TestInvitationPasswordRule: a new password is refused when it is one of the most commonly
// used, made of the account's own email or name, or easy to guess by zxcvbn's estimate: 400
// on body.password saying why, and nothing changes; the rule is in the description.
func TestInvitationPasswordRule(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	own := bearer(e.ownerToken)
	inv := e.do("POST", "/api/v1/organizations/"+e.orgID+"/invitations", map[string]any{"email": "kim.lee@example.com", "name": "Kim Lee"}, own).status(201)
	accept := "/api/v1/invitations/" + invTokenOf(inv) + "/accept"
	for _, tc := range []struct{ pw, code, says string }{
		{"password", "common_password", "most commonly used"},
		{"12345678", "common_password", "most commonly used"},
		{"iloveyou", "common_password", "most commonly used"},
		{"kim.lee@example.com", "weak_password", "email address or name"},
		{"Password1!", "weak_password", "too easy to guess"},
		{"KimLee2024", "weak_password", "email address or name"},
		{"qwertyuiop[]", "weak_password", "keyboard"},
	} {
		r := e.do("POST", accept, map[string]any{"name": "Kim Lee", "password": tc.pw}).apiError(400, "VALIDATION_ERROR", "body.password", tc.code)
		if !strings.Contains(r.str("error.message"), tc.says) || !strings.Contains(r.str("error.message"), "body.password") {
			t.Fatalf("%q: %s", tc.pw, r.Body)
		}
	}
	e.do("GET", "/api/v1/invitations/"+invTokenOf(inv), nil).status(200) // still pending
	e.do("POST", accept, map[string]any{"name": "Kim Lee", "password": "kettle orbit lantern"}).status(200)
	e.login("kim.lee@example.com", "kettle orbit lantern", "")
	schema := doc.Paths.Find("/api/v1/invitations/{token}/accept").Post.RequestBody.Value.Content.Get("application/json").Schema.Value
	if d := schema.Properties["password"].Value.Description; !strings.Contains(d, "commonly used") || !strings.Contains(d, "weak_password") {
		t.Fatalf("the description does not give the rule: %q", d)
	}
}
