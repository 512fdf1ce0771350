package auth

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode"

	"dataplatform/handlers/apierr"
	"dataplatform/handlers/reqmeta"
	"dataplatform/store"
	"dataplatform/store/secrets"
)

// Browser sessions: the cookie holds an opaque token (secrets.NewToken) whose SHA-256 is the
// stored session; the CSRF token is derived from it, so it is never stored, cannot be turned
// back into the cookie, and every replica computes the same one.
const (
	SessionCookie = "dp_session"
	CSRFHeader    = "X-CSRF-Token"
	// SignInPath is the sign-in page; pages send browsers without credentials there.
	SignInPath = "/sign-in"
	// sessionTouch is how often a session's last use is written (not on every request).
	sessionTouch = time.Minute
)

// CSRFToken is the CSRF token of the session with cookie token raw.
func CSRFToken(raw string) string {
	m := hmac.New(sha256.New, []byte(raw))
	m.Write([]byte("dataplatform csrf"))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// SessionCookieHeader is the Set-Cookie value of a session (raw empty: one that clears it).
// HttpOnly keeps it from scripts, SameSite=Lax from other sites' subrequests and forms.
func SessionCookieHeader(raw string, maxAge time.Duration, secure bool) string {
	c := &http.Cookie{Name: SessionCookie, Value: raw, Path: "/", MaxAge: int(maxAge.Seconds()), HttpOnly: true,
		Secure: secure, SameSite: http.SameSiteLaxMode}
	if raw == "" {
		c.MaxAge = -1 // Max-Age=0: the browser drops it now
	}
	return c.String()
}

var (
	errBadSession = apierr.AuthRequired("the browser session is unknown, signed out or ended; sign in again at " + SignInPath)
	errCSRF       = apierr.New(http.StatusForbidden, apierr.CodeCSRFCheckFailed,
		"a request made with the session cookie that changes something must send the session's csrf_token as X-CSRF-Token (see GET /api/v1/auth/session)")
	errCrossSite = apierr.New(http.StatusForbidden, apierr.CodeCSRFCheckFailed,
		"a request made with the session cookie that changes something, or opens a WebSocket, must come from this service's own pages, not from another origin")
)

// session authenticates the session cookie raw of request r: live, not idle longer than its
// organization allows, and for unsafe methods and WebSockets, same-origin with the session's
// CSRF token.
func (a *Authenticator) session(r *http.Request, raw string) (*Principal, error) {
	ctx := r.Context()
	now := a.Clock()
	s, err := store.BrowserSessionByHash(ctx, a.Store.DB, secrets.Hash(raw), now)
	if errors.Is(err, store.ErrNotFound) {
		return nil, errBadSession
	} else if err != nil {
		return nil, err
	}
	idle, err := a.Store.SessionIdleTimeout(ctx, s.OrgID)
	if err != nil {
		return nil, err
	}
	if now.Sub(s.LastSeenAt) > idle {
		return nil, SessionExpired(idle)
	}
	p := &Principal{UserID: s.UserID, Email: s.Email, Method: MethodSession, SessionID: s.ID, CSRF: CSRFToken(raw)}
	if s.OrgID != nil {
		p.TokenOrg = *s.OrgID
	}
	if err := CheckCSRF(r, p, a.Origin); err != nil {
		return nil, err
	}
	if now.Sub(s.LastSeenAt) >= sessionTouch {
		if err := store.TouchBrowserSession(ctx, a.Store.DB, s.ID, now); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// SessionExpired is the 401 of a session (or refresh token) unused for longer than idle.
func SessionExpired(idle time.Duration) *apierr.Error {
	return apierr.New(http.StatusUnauthorized, apierr.CodeSessionExpired,
		"the session was idle for more than the organization's "+strconv.Itoa(int(idle.Minutes()))+
			" minutes (settings.security.session_timeout_minutes); sign in again")
}

// CheckCSRF refuses, for a principal of the session cookie, an unsafe request without the
// session's CSRF token, and an unsafe request or WebSocket handshake that the browser says
// comes from another origin (ownOrigin: DP_BASE_URL's; the request's own Host counts too).
// Safe requests pass: following a link from elsewhere must work, and SameSite=Lax keeps the
// cookie off other sites' subrequests.
func CheckCSRF(r *http.Request, p *Principal, ownOrigin string) error {
	if p.Method != MethodSession {
		return nil
	}
	unsafe := r.Method != http.MethodGet && r.Method != http.MethodHead && r.Method != http.MethodOptions
	socket := strings.EqualFold(r.Header.Get("Upgrade"), "websocket")
	if !unsafe && !socket {
		return nil
	}
	if !SameOrigin(r.Header, r.Host, ownOrigin) {
		return errCrossSite
	}
	if unsafe && subtle.ConstantTimeCompare([]byte(r.Header.Get(CSRFHeader)), []byte(p.CSRF)) != 1 {
		return errCSRF
	}
	return nil
}

// SameOrigin reads what a browser says about where a request to host comes from:
// Sec-Fetch-Site (same-origin, or none for one the user started), else Origin, which must be
// ownOrigin or host's. A request with neither is not from a browser that would send a cookie
// on another site's behalf.
func SameOrigin(h http.Header, host, ownOrigin string) bool {
	if site := h.Get("Sec-Fetch-Site"); site != "" && site != "same-origin" && site != "none" {
		return false
	}
	o := h.Get("Origin")
	if o == "" || o == ownOrigin {
		return true
	}
	u, err := url.Parse(o)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Path == "" && u.Host != "" && strings.EqualFold(u.Host, host)
}

// OriginOf is the origin (scheme://host[:port]) of a base URL such as DP_BASE_URL.
func OriginOf(baseURL string) string {
	u, err := url.Parse(baseURL)
	if err != nil {
		return ""
	}
	return u.Scheme + "://" + u.Host
}

// SafeNext reports whether next is a place of this service to send a browser after sign-in:
// a path starting with one slash, with no scheme, host, backslash, control character or
// space (browsers drop tabs and newlines from URLs, so "/\t/evil" would become "//evil").
func SafeNext(next string) bool {
	if !strings.HasPrefix(next, "/") || strings.HasPrefix(next, "//") || strings.Contains(next, `\`) {
		return false
	}
	for _, c := range next {
		if unicode.IsControl(c) || unicode.IsSpace(c) {
			return false
		}
	}
	u, err := url.Parse(next)
	return err == nil && u.Scheme == "" && u.Host == "" && u.User == nil && u.Opaque == ""
}

// Redirect is an answer that sends the browser elsewhere (303 See Other); the central error
// handler writes it.
type Redirect struct{ Location string }

func (r *Redirect) Error() string { return "redirect to " + r.Location }

// SignInRedirect sends a browser to the sign-in page, to come back to path?query (without
// any api_key: a secret does not belong in a link).
func SignInRedirect(path string, query url.Values) *Redirect {
	next := path
	q := url.Values{}
	for k, v := range query {
		if k != "api_key" {
			q[k] = v
		}
	}
	if len(q) > 0 {
		next += "?" + q.Encode()
	}
	return &Redirect{Location: SignInPath + "?next=" + url.QueryEscape(next)}
}

// WantsHTML reports whether a request's Accept header asks for a page (a browser navigating).
func WantsHTML(accept string) bool { return strings.Contains(accept, "text/html") }

// PageCaller is the caller of an HTML page: the principal the authentication middleware found
// (bearer token, API key, or the browser session cookie); for a browser without one, the
// redirect to the sign-in page that comes back to this page; otherwise AUTH_REQUIRED.
// Operations whose 200 answer is text/html get that redirect from the middleware already;
// this is for handlers that decide themselves.
func PageCaller(ctx context.Context) (*Principal, error) {
	if p := FromContext(ctx); p != nil {
		return p, nil
	}
	if m := reqmeta.From(ctx); WantsHTML(m.Accept) {
		return nil, SignInRedirect(m.Path, m.Query)
	}
	return nil, apierr.AuthRequired("authentication required: sign in at " + SignInPath + ", or send a bearer token or API key")
}
