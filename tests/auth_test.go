package tests

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestLoginAndMe(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	r := e.login(adminEmail, adminPassword, "")
	if r.str("token_type") != "Bearer" || r.num("expires_in") != 3600 || r.str("user.email") != adminEmail {
		t.Fatalf("login answer: %s", r.Body)
	}
	if r.str("user.roles.0") != "owner" {
		t.Fatalf("roles: %s", r.Body)
	}
	// Header and claims as the description lists them.
	parts := strings.Split(r.str("access_token"), ".")
	var hdr, claims map[string]any
	b, _ := base64.RawURLEncoding.DecodeString(parts[0])
	json.Unmarshal(b, &hdr)
	b, _ = base64.RawURLEncoding.DecodeString(parts[1])
	json.Unmarshal(b, &claims)
	if hdr["alg"] != "RS256" || hdr["typ"] == nil || hdr["kid"] == nil {
		t.Fatalf("header: %v", hdr)
	}
	for _, c := range []string{"sub", "email", "org", "roles", "permissions", "iat", "exp", "iss"} {
		if claims[c] == nil {
			t.Fatalf("claim %s missing: %v", c, claims)
		}
	}
	me := e.do("GET", "/api/v1/auth/me", nil, bearer(r.str("access_token"))).status(200)
	if me.str("organizations.0.role") != "owner" || me.str("auth_method") != "jwt" {
		t.Fatalf("me: %s", me.Body)
	}

	e.do("POST", "/api/v1/auth/login", map[string]any{"email": adminEmail, "password": "wrong"}).authError(401, "AUTH_REQUIRED")
	e.do("POST", "/api/v1/auth/login", map[string]any{"email": "nobody@example.com", "password": "x"}).authError(401, "AUTH_REQUIRED")
	e.do("POST", "/api/v1/auth/login", map[string]any{"email": "not-an-email", "password": "x"}).apiError(400, "VALIDATION_ERROR", "body.email", "format")
	e.do("POST", "/api/v1/auth/login", map[string]any{"email": adminEmail, "password": adminPassword, "organization_id": "org_nothere"}).authError(401, "AUTH_REQUIRED")
}

func TestJWKSVerifiesIssuedTokens(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	r := e.do("GET", "/.well-known/jwks.json", nil).status(200)
	kid := r.str("keys.0.kid")
	parts := strings.Split(e.ownerToken, ".")
	b, _ := base64.RawURLEncoding.DecodeString(parts[0])
	var hdr map[string]any
	json.Unmarshal(b, &hdr)
	if hdr["kid"] != kid {
		t.Fatalf("token kid %v not in JWKS %s", hdr["kid"], r.Body)
	}
}

func TestTokenExpiryAndSkew(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	tok := e.ownerToken
	e.clock.Advance(time.Hour - time.Second) // just before exp
	e.do("GET", "/api/v1/auth/me", nil, bearer(tok)).status(200)
	// The clock-skew grace is for iat and nbf only: at exp the token is refused, cached or not.
	e.clock.Advance(time.Second)
	e.do("GET", "/api/v1/auth/me", nil, bearer(tok)).authError(401, "TOKEN_EXPIRED")
	e.clock.Advance(4 * time.Minute)
	r := e.do("GET", "/api/v1/auth/me", nil, bearer(tok)).authError(401, "TOKEN_EXPIRED")
	if r.str("error") != "token_expired" {
		t.Fatalf("flat error name: %s", r.Body)
	}
}

func TestRejectedTokens(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	parts := strings.Split(e.ownerToken, ".")
	enc := func(v any) string { b, _ := json.Marshal(v); return base64.RawURLEncoding.EncodeToString(b) }
	var hdr map[string]any
	b, _ := base64.RawURLEncoding.DecodeString(parts[0])
	json.Unmarshal(b, &hdr)

	none := map[string]any{"alg": "none", "typ": "at+jwt", "kid": hdr["kid"]}
	hs := map[string]any{"alg": "HS256", "typ": "at+jwt", "kid": hdr["kid"]}
	unknownKid := map[string]any{"alg": "RS256", "typ": "at+jwt", "kid": "nope"}
	cases := map[string]string{
		"alg none":       enc(none) + "." + parts[1] + ".",
		"alg HS256":      enc(hs) + "." + parts[1] + "." + parts[2],
		"unknown kid":    enc(unknownKid) + "." + parts[1] + "." + parts[2],
		"tampered claim": parts[0] + "." + enc(map[string]any{"sub": "usr_other", "exp": 9999999999, "iss": baseURL}) + "." + parts[2],
		"garbage":        "abc.def",
		"refresh token":  e.login(adminEmail, adminPassword, "").str("refresh_token"),
	}
	for name, tok := range cases {
		t.Run(name, func(t *testing.T) {
			e.t = t
			e.do("GET", "/api/v1/auth/me", nil, bearer(tok)).authError(401, "AUTH_REQUIRED")
		})
	}
	e.t = t
	e.do("GET", "/api/v1/auth/me", nil).authError(401, "AUTH_REQUIRED")
	e.do("GET", "/api/v1/auth/me", nil, header{"Authorization": "Basic abc"}).authError(401, "AUTH_REQUIRED")
}

func TestRefreshRotationAndReuse(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	first := e.login(adminEmail, adminPassword, "").str("refresh_token")
	r := e.do("POST", "/api/v1/auth/refresh", map[string]any{"refresh_token": first}).status(200)
	second := r.str("refresh_token")
	if second == first {
		t.Fatal("refresh token not rotated")
	}
	e.do("GET", "/api/v1/auth/me", nil, bearer(r.str("access_token"))).status(200)
	// Reusing the spent token revokes the family: the second one dies with it.
	e.do("POST", "/api/v1/auth/refresh", map[string]any{"refresh_token": first}).authError(401, "AUTH_REQUIRED")
	e.do("POST", "/api/v1/auth/refresh", map[string]any{"refresh_token": second}).authError(401, "AUTH_REQUIRED")
	// An access token is not a refresh token.
	e.do("POST", "/api/v1/auth/refresh", map[string]any{"refresh_token": e.ownerToken}).authError(401, "AUTH_REQUIRED")
	// Expiry after 30 days.
	third := e.login(adminEmail, adminPassword, "").str("refresh_token")
	e.clock.Advance(30*24*time.Hour + time.Second)
	e.do("POST", "/api/v1/auth/refresh", map[string]any{"refresh_token": third}).authError(401, "AUTH_REQUIRED")
	// Logout revokes.
	e.clock.Advance(-30*24*time.Hour - time.Second)
	fourth := e.login(adminEmail, adminPassword, "").str("refresh_token")
	e.do("POST", "/api/v1/auth/logout", map[string]any{"refresh_token": fourth}).status(204)
	e.do("POST", "/api/v1/auth/refresh", map[string]any{"refresh_token": fourth}).authError(401, "AUTH_REQUIRED")
}

func TestAPIKeysRotateAndGrace(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := e.do("POST", "/api/v1/api-keys", map[string]any{"name": "ci", "permissions": []string{"datasets:list"}}, bearer(e.ownerToken)).status(201)
	key := c.str("key")
	if !strings.HasPrefix(key, "dpk_") || !strings.HasPrefix(c.str("key_preview"), "dpk_") || strings.Contains(c.str("key_preview"), key[8:30]) {
		t.Fatalf("key format: %s", c.Body)
	}
	e.do("GET", "/api/v1/projects/"+e.projectID, nil, apiKey(key)).status(200)
	e.do("GET", "/api/v1/projects/"+e.projectID+"?api_key="+key, nil).status(200)
	// Its own permissions bound it: no datasets:write.
	e.do("PATCH", "/api/v1/projects/"+e.projectID, map[string]any{"name": "x"}, apiKey(key)).authError(403, "PERMISSION_DENIED")
	// A key cannot mint keys.
	e.do("POST", "/api/v1/api-keys", map[string]any{"name": "x", "permissions": []string{"datasets:list"}}, apiKey(key)).authError(403, "PERMISSION_DENIED")

	l := e.do("GET", "/api/v1/api-keys", nil, bearer(e.ownerToken)).status(200)
	if l.len("api_keys") != 1 || strings.Contains(string(l.Body), key) {
		t.Fatalf("list: %s", l.Body)
	}

	rot := e.do("POST", "/api/v1/api-keys/"+c.str("id")+"/rotate", map[string]any{"grace_period_seconds": 3600}, bearer(e.ownerToken)).status(200)
	newKey := rot.str("new_key")
	e.do("GET", "/api/v1/projects/"+e.projectID, nil, apiKey(key)).status(200)
	e.do("GET", "/api/v1/projects/"+e.projectID, nil, apiKey(newKey)).status(200)
	e.do("POST", "/api/v1/api-keys/"+c.str("id")+"/rotate", nil, bearer(e.ownerToken)).apiError(409, "CONFLICT")
	e.clock.Advance(time.Hour + time.Second)
	e.do("GET", "/api/v1/projects/"+e.projectID, nil, apiKey(key)).authError(401, "AUTH_REQUIRED")
	e.do("GET", "/api/v1/projects/"+e.projectID, nil, apiKey(newKey)).status(200)

	owner := e.login(adminEmail, adminPassword, "").str("access_token") // the first one expired with the hour
	e.do("DELETE", "/api/v1/api-keys/"+rot.str("id"), nil, bearer(owner)).status(204)
	e.do("GET", "/api/v1/projects/"+e.projectID, nil, apiKey(newKey)).authError(401, "AUTH_REQUIRED")
	e.do("DELETE", "/api/v1/api-keys/"+rot.str("id"), nil, bearer(owner)).apiError(404, "NOT_FOUND")

	// A mistyped key fails its checksum; expiry in the past is refused.
	e.do("GET", "/api/v1/auth/me", nil, apiKey(newKey[:len(newKey)-1]+"x")).authError(401, "AUTH_REQUIRED")
	e.do("POST", "/api/v1/api-keys", map[string]any{"name": "old", "permissions": []string{"datasets:list"}, "expires_at": "2001-01-01T00:00:00Z"},
		bearer(owner)).apiError(400, "VALIDATION_ERROR", "body.expires_at", "minimum")
}

func TestViewerDeniedWrite(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	_, viewer := e.member(e.orgID, "viewer")
	e.do("GET", "/api/v1/projects/"+e.projectID, nil, bearer(viewer)).status(200)
	r := e.do("POST", "/api/v1/organizations/"+e.orgID+"/projects", map[string]any{"name": "nope"}, bearer(viewer)).authError(403, "PERMISSION_DENIED")
	if r.str("required_permission") != "datasets:write" || r.str("error") != "forbidden" {
		t.Fatalf("403 body: %s", r.Body)
	}
	r = e.do("POST", "/api/v1/organizations/"+e.orgID+"/invitations", map[string]any{"email": "x@example.com"}, bearer(viewer)).authError(403, "INSUFFICIENT_PERMISSIONS")
	if r.str("required_role") != "admin" || r.str("your_role") != "member" {
		t.Fatalf("403 body: %s", r.Body)
	}
	// The viewer cannot create keys either (api-keys:manage is developer and up).
	e.do("POST", "/api/v1/api-keys", map[string]any{"name": "x", "permissions": []string{"datasets:list"}}, bearer(viewer)).authError(403, "PERMISSION_DENIED")
}

func TestOrganizationIsolation(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	// B is another organization, created by the owner; the member of A is not in it.
	b := e.do("POST", "/api/v1/organizations", map[string]any{"name": "Org B"}, bearer(e.ownerToken)).status(201)
	orgB := b.str("id")
	pb := e.do("POST", "/api/v1/organizations/"+orgB+"/projects", map[string]any{"name": "secret"}, bearer(e.ownerToken)).status(201)
	_, memberA := e.member(e.orgID, "developer")
	for _, path := range []string{"/api/v1/projects/" + pb.str("id"), "/api/v1/organizations/" + orgB, "/api/v1/organizations/" + orgB + "/projects", "/api/v1/organizations/" + orgB + "/users"} {
		e.do("GET", path, nil, bearer(memberA)).apiError(404, "NOT_FOUND")
	}
	e.do("DELETE", "/api/v1/projects/"+pb.str("id"), nil, bearer(memberA)).apiError(404, "NOT_FOUND")
	// And the same 404 as a project that does not exist at all.
	e.do("GET", "/api/v1/projects/prj_doesnotexist", nil, bearer(memberA)).apiError(404, "NOT_FOUND")
	l := e.do("GET", "/api/v1/organizations", nil, bearer(memberA)).status(200)
	if l.num("pagination.total") != 1 {
		t.Fatalf("member of A sees: %s", l.Body)
	}
}

// TestLoginBodyBounded: the audit's pre-authentication body (9,900 nested objects keyed by
// 95-character names, 990 KB) is refused at the depth limit, as are over-long keys and
// objects with too many keys; a reasonable body still signs in.
func TestLoginBodyBounded(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	key := `"` + strings.Repeat("k", 95) + `":`
	attack := strings.Repeat("{"+key, 9900) + "1" + strings.Repeat("}", 9900)
	e.do("POST", "/api/v1/auth/login", attack).apiError(400, "VALIDATION_ERROR", "body"+strings.Repeat("."+strings.Repeat("k", 95), 64), "max_depth")
	e.do("POST", "/api/v1/auth/login", `{"`+strings.Repeat("e", 2000)+`": "x"}`).apiError(400, "VALIDATION_ERROR", "body", "max_length")
	var wide strings.Builder
	wide.WriteString(`{"email": "a@example.com", "password": "x", "extra": {`)
	for i := range 10001 {
		if i > 0 {
			wide.WriteString(",")
		}
		fmt.Fprintf(&wide, `"k%d": 1`, i)
	}
	wide.WriteString("}}")
	e.do("POST", "/api/v1/auth/login", wide.String()).apiError(400, "VALIDATION_ERROR", "body.extra", "max_properties")
	e.login(adminEmail, adminPassword, "").status(200)
}
