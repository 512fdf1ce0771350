package config

import (
	"regexp"
	"testing"
)

// ajvEmail is the email format of ajv-formats ("fast"), which Prism and most JavaScript
// validators apply to the login body's `format: email`.
var ajvEmail = regexp.MustCompile(`(?i)^[a-z0-9!#$%&'*+/=?^_` + "`" + `{|}~-]+(?:\.[a-z0-9!#$%&'*+/=?^_` + "`" + `{|}~-]+)*@(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$`)

// TestDefaultAdminEmailIsAnEmail: the documented first login must pass the description's own
// format check in third-party clients (admin@localhost did not).
func TestDefaultAdminEmailIsAnEmail(t *testing.T) {
	if !ajvEmail.MatchString(DefaultAdminEmail) {
		t.Fatalf("%s fails format: email as ajv checks it", DefaultAdminEmail)
	}
	if ajvEmail.MatchString("admin@localhost") {
		t.Fatal("the check is too lax to tell")
	}
}
