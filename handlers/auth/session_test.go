package auth

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"
	"time"

	"dataplatform/handlers/apierr"
	"dataplatform/handlers/reqmeta"
	"dataplatform/store/secrets"
)

func TestSafeNext(t *testing.T) {
	for next, want := range map[string]bool{
		"/api/v1/datasets/ds_a/docs":           true,
		"/dashboards/dsh_1?tab=2#tile":         true,
		"/%2F%2Fevil.example":                  true, // a path of this service, however odd
		"":                                     false,
		"//evil.example":                       false,
		"///evil.example":                      false,
		"/\\evil.example":                      false,
		"\\\\evil.example":                     false,
		"https://evil.example/":                false,
		"javascript:alert(1)":                  false,
		"evil.example/x":                       false,
		"/\t/evil.example":                     false, // browsers drop tabs: //evil.example
		"/\n/evil.example":                     false,
		"/ x":                                  false,
		"/\u2028":                              false,
		"/x\x00":                               false,
		"/%zz":                                 false, // not a URL
		"/ok/\u00e9":                           true,
		"/sign-in?next=https://evil.example/x": true, // the page checks its own next again
	} {
		if got := SafeNext(next); got != want {
			t.Errorf("SafeNext(%q) = %v, want %v", next, got, want)
		}
	}
}

func TestCheckCSRF(t *testing.T) {
	session := &Principal{Method: MethodSession, CSRF: "tok"}
	req := func(method string, h map[string]string) *http.Request {
		r := httptest.NewRequest(method, "http://app.example:8080/api/v1/x", nil)
		for k, v := range h {
			r.Header.Set(k, v)
		}
		return r
	}
	const own = "https://app.example"
	for _, tc := range []struct {
		name string
		p    *Principal
		r    *http.Request
		ok   bool
	}{
		{"GET needs nothing", session, req("GET", map[string]string{"Sec-Fetch-Site": "cross-site"}), true},
		{"POST with the token", session, req("POST", map[string]string{"X-CSRF-Token": "tok"}), true},
		{"POST without it", session, req("POST", nil), false},
		{"DELETE with another", session, req("DELETE", map[string]string{"X-CSRF-Token": "tok2"}), false},
		{"PATCH from the base URL's origin", session, req("PATCH", map[string]string{"X-CSRF-Token": "tok", "Origin": own}), true},
		{"PUT from the request's own host", session, req("PUT", map[string]string{"X-CSRF-Token": "tok", "Origin": "http://app.example:8080"}), true},
		{"POST from elsewhere", session, req("POST", map[string]string{"X-CSRF-Token": "tok", "Origin": "https://evil.example"}), false},
		{"POST from a sibling", session, req("POST", map[string]string{"X-CSRF-Token": "tok", "Sec-Fetch-Site": "same-site"}), false},
		{"POST the user typed", session, req("POST", map[string]string{"X-CSRF-Token": "tok", "Sec-Fetch-Site": "none"}), true},
		{"WebSocket from elsewhere", session, req("GET", map[string]string{"Upgrade": "websocket", "Origin": "https://evil.example"}), false},
		{"WebSocket from here", session, req("GET", map[string]string{"Upgrade": "websocket", "Origin": own}), true},
		{"a bearer token is not checked", &Principal{Method: MethodJWT}, req("POST", map[string]string{"Origin": "https://evil.example"}), true},
	} {
		if err := CheckCSRF(tc.r, tc.p, own); (err == nil) != tc.ok {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
}

func TestCSRFTokenIsTheSessions(t *testing.T) {
	a, b := secrets.NewToken(), secrets.NewToken()
	if CSRFToken(a) != CSRFToken(a) || CSRFToken(a) == CSRFToken(b) || CSRFToken(a) == a { //nolint:staticcheck // SA4000: the same call twice is the point, a deterministic token
		t.Fatal("the CSRF token is not a function of its session alone")
	}
}

func TestPageCaller(t *testing.T) {
	page := func(accept string) context.Context {
		return reqmeta.With(context.Background(), &reqmeta.Meta{Path: "/dashboards/dsh_1", Accept: accept,
			Query: url.Values{"tab": {"2"}, "api_key": {"dpk_secret"}}})
	}
	_, err := PageCaller(page("text/html,application/xhtml+xml,*/*;q=0.8"))
	var rd *Redirect
	if !errors.As(err, &rd) || rd.Location != "/sign-in?next=%2Fdashboards%2Fdsh_1%3Ftab%3D2" {
		t.Fatalf("a browser without credentials: %v", err)
	}
	var ae *apierr.Error
	if _, err := PageCaller(page("application/json")); !errors.As(err, &ae) || ae.Code != apierr.CodeAuthRequired {
		t.Fatalf("an API client without credentials: %v", err)
	}
	p := &Principal{UserID: "usr_1", Method: MethodSession}
	if got, err := PageCaller(WithPrincipal(page("text/html"), p)); got != p || err != nil {
		t.Fatalf("a signed-in browser: %v %v", got, err)
	}
}

func TestSessionCookieHeader(t *testing.T) {
	for _, tc := range []struct {
		raw    string
		secure bool
		want   string
	}{
		{"abc", false, "dp_session=abc; Path=/; Max-Age=3600; HttpOnly; SameSite=Lax"},
		{"abc", true, "dp_session=abc; Path=/; Max-Age=3600; HttpOnly; Secure; SameSite=Lax"},
		{"", true, "dp_session=; Path=/; Max-Age=0; HttpOnly; Secure; SameSite=Lax"},
	} {
		if got := SessionCookieHeader(tc.raw, time.Hour, tc.secure); got != tc.want {
			t.Errorf("got %q, want %q", got, tc.want)
		}
	}
}
