package tests

import (
	"bytes"
	"encoding/base64"
	"image/png"
	"net/url"
	"testing"
	"time"

	"github.com/pquerna/otp"
	"github.com/pquerna/otp/totp"
)

// code is the authenticator's code for secret at the harness clock's time plus skew.
func (e *env) totpCode(secret string, skew time.Duration) string {
	e.t.Helper()
	c, err := totp.GenerateCodeCustom(secret, e.clock.Now().Add(skew), totp.ValidateOpts{Period: 30, Digits: otp.DigitsSix, Algorithm: otp.AlgorithmSHA1})
	if err != nil {
		e.t.Fatal(err)
	}
	return c
}

// TestTwoFactor: enrol (secret, otpauth URI, QR PNG), confirm with a code (a wrong one is
// refused), then sign-in asks for a code; codes are single use; recovery codes sign in once;
// regenerating replaces them; disabling needs a code; an organization's requirement lets the
// member in once enrolled.
func TestTwoFactor(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	email, tok := e.member(e.orgID, "analyst")
	me := bearer(tok)
	pass := "password-analyst"
	login := func(code string) *resp {
		body := map[string]any{"email": email, "password": pass}
		if code != "" {
			body["two_factor_code"] = code
		}
		return e.do("POST", "/api/v1/auth/login", body)
	}

	e.do("POST", "/api/v1/auth/2fa/setup", nil).authError(401, "AUTH_REQUIRED")
	e.do("POST", "/api/v1/auth/2fa/confirm", map[string]any{"code": "123456"}, me).apiError(409, "CONFLICT")
	s := e.do("POST", "/api/v1/auth/2fa/setup", nil, me).status(200)
	secret := s.str("secret")
	u, err := url.Parse(s.str("otpauth_url"))
	if err != nil || u.Scheme != "otpauth" || u.Host != "totp" || u.Query().Get("secret") != secret || s.Header.Get("Cache-Control") != "no-store" {
		t.Fatalf("setup: %s", s.Body)
	}
	raw, _ := base64.StdEncoding.DecodeString(s.str("qr_png"))
	if img, err := png.Decode(bytes.NewReader(raw)); err != nil || img.Bounds().Dx() != 256 {
		t.Fatalf("QR code PNG: %v", err)
	}
	// Not on until confirmed; a wrong code changes nothing.
	login("").status(200)
	e.do("POST", "/api/v1/auth/2fa/confirm", map[string]any{"code": "000000"}, me).apiError(400, "VALIDATION_ERROR", "body.code", "invalid_code")
	c := e.do("POST", "/api/v1/auth/2fa/confirm", map[string]any{"code": e.totpCode(secret, 0)}, me).status(200)
	recovery := c.get("recovery_codes").([]any)
	if c.get("two_factor_enabled") != true || len(recovery) != 10 {
		t.Fatalf("confirm: %s", c.Body)
	}
	e.do("POST", "/api/v1/auth/2fa/setup", nil, me).apiError(409, "CONFLICT")
	if n := e.countRows(`SELECT count(*) FROM platform.users WHERE email = '` + email + `' AND two_factor_enabled`); n != 1 {
		t.Fatal("two_factor_enabled not set")
	}

	// Sign-in asks for the code; wrong, replayed and stale codes are refused.
	login("").authError(401, "TWO_FACTOR_CODE_REQUIRED")
	login("999999").authError(401, "INVALID_TWO_FACTOR_CODE")
	e.clock.Advance(30 * time.Second)
	code := e.totpCode(secret, 0)
	login(code).status(200)
	login(code).authError(401, "INVALID_TWO_FACTOR_CODE") // used
	login(e.totpCode(secret, -90*time.Second)).authError(401, "INVALID_TWO_FACTOR_CODE")
	// A recovery code signs in once.
	rc := recovery[0].(string)
	login(rc).status(200)
	login(rc).authError(401, "INVALID_TWO_FACTOR_CODE")

	// New recovery codes replace the old ones.
	e.clock.Advance(30 * time.Second)
	tok = login(e.totpCode(secret, 0)).str("access_token")
	me = bearer(tok)
	e.do("POST", "/api/v1/auth/2fa/recovery-codes", map[string]any{"code": "000000"}, me).apiError(400, "VALIDATION_ERROR", "body.code", "invalid_code")
	n := e.do("POST", "/api/v1/auth/2fa/recovery-codes", map[string]any{"code": recovery[1].(string)}, me).status(200)
	login(recovery[2].(string)).authError(401, "INVALID_TWO_FACTOR_CODE")
	fresh := n.get("recovery_codes").([]any)[0].(string)

	// The organization's requirement lets the enrolled member in.
	e.setTwoFactor(e.userIDOf(adminEmail), true)
	e.do("PATCH", "/api/v1/organizations/"+e.orgID+"/settings", map[string]any{"security": map[string]any{"two_factor_required": true}}, bearer(e.ownerToken)).status(200)
	e.do("GET", "/api/v1/projects/"+e.projectID, nil, me).status(200)

	// Off with a code; then sign-in needs none and the organization refuses the member.
	e.do("POST", "/api/v1/auth/2fa/disable", map[string]any{"code": "000000"}, me).apiError(400, "VALIDATION_ERROR", "body.code", "invalid_code")
	e.do("POST", "/api/v1/auth/2fa/disable", map[string]any{"code": fresh}, me).status(204)
	e.do("POST", "/api/v1/auth/2fa/disable", map[string]any{"code": fresh}, me).apiError(409, "CONFLICT")
	login("").status(200)
	e.do("GET", "/api/v1/projects/"+e.projectID, nil, me).authError(403, "TWO_FACTOR_REQUIRED")
	for _, a := range []string{"user.two_factor_enable", "user.recovery_codes_regenerate", "user.two_factor_disable"} {
		if e.countAuditRows(e.orgID, a) != 1 {
			t.Fatalf("no audit row %s", a)
		}
	}
	// Keys do not manage two-factor sign-in.
	k := e.do("POST", "/api/v1/api-keys", map[string]any{"name": "k", "permissions": []string{"datasets:list"}}, bearer(e.ownerToken)).status(201).str("key")
	e.do("POST", "/api/v1/auth/2fa/setup", nil, header{"X-API-Key": k}).authError(403, "PERMISSION_DENIED")
}
