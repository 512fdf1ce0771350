package auth

import (
	"strings"
	"testing"
)

// TestWeakPassword: commonly used passwords, the account's own words and what the estimate
// finds guessable are refused, each with a code and a reason; unrelated words pass.
func TestWeakPassword(t *testing.T) {
	for _, tc := range []struct {
		pw, code, says string
		personal       []string
	}{
		{"short", "too_short", "at least 8", nil},
		{"password", "common_password", "most commonly used", nil},
		{"12345678", "common_password", "most commonly used", nil},
		{"Password", "common_password", "most commonly used", nil},
		{"iloveyou", "common_password", "most commonly used", nil},
		{"qwertyuiop", "common_password", "most commonly used", nil},
		{"Password1!", "weak_password", "commonly used password", nil},
		{"aaaaaaaaaaaa", "weak_password", "repeated", nil},
		{"abcdefghijkl", "weak_password", "sequences", nil},
		{"zxcvbnm,./", "weak_password", "keyboard", nil},
		{"kim.lee@example.com", "weak_password", "your email address or name", []string{"kim.lee@example.com", "Kim Lee"}},
		{"Kimberly1990", "weak_password", "your email address or name", []string{"kimberly.lee@example.com", "Kimberly Lee"}},
		{"dataplatform1", "weak_password", "service's name", nil},
		{"KimLee2024", "weak_password", "your email address or name", []string{"kim.lee@example.com", "Kim Lee"}},
		{"sunshine2024", "weak_password", "", nil},
		{"kettle-orbit-viewer-42", "", "", []string{"viewer1@example.com", "User viewer"}},
		{"correct horse battery staple", "", "", nil},
		{"Tq7!vR2#kLp9", "", "", nil},
	} {
		code, reason := WeakPassword(tc.pw, tc.personal...)
		if code != tc.code || !strings.Contains(reason, tc.says) || (code != "") != (reason != "") {
			t.Errorf("%q: %s %q, want %s %q", tc.pw, code, reason, tc.code, tc.says)
		}
	}
}
