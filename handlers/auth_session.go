package handlers

import (
	"context"
	"errors"
	"net/http"
	"strings"

	"dataplatform/gen/api"
	"dataplatform/handlers/apierr"
	"dataplatform/handlers/auth"
	"dataplatform/handlers/reqmeta"
	"dataplatform/store"
	"dataplatform/store/secrets"
	"dataplatform/templates/docs"

	"github.com/jmoiron/sqlx"
)

// Browser sessions: the sign-in of Login, answered as a server-side session in a cookie
// (handlers/auth/session.go authenticates it and checks CSRF).

var (
	errNoSession = apierr.AuthRequired("this request has no browser session: GET and DELETE /api/v1/auth/session read the session cookie (a bearer token or API key is not a session)")
	errLoginCSRF = apierr.New(http.StatusForbidden, apierr.CodeCSRFCheckFailed,
		"the browser says this sign-in comes from another site; sign in from this service's own page ("+auth.SignInPath+")")
)

// SecureCookies says whether cookies are Secure: when the service is served over https
// (DP_BASE_URL).
func (h *Handlers) SecureCookies() bool { return strings.HasPrefix(h.Config.BaseURL, "https://") }

func (a *Auth) CreateSession(ctx context.Context, req api.CreateSessionRequestObject) (api.CreateSessionResponseObject, error) {
	// Login CSRF: another site must not sign a visitor into an account of its choosing.
	if m := reqmeta.From(ctx); !auth.SameOrigin(m.Header, m.Host, auth.OriginOf(a.Config.BaseURL)) {
		return nil, errLoginCSRF
	}
	raw := secrets.NewToken()
	var s *store.BrowserSession
	var u *store.User
	var role string
	err := a.passwordSignIn(ctx, *req.Body, func(tx *sqlx.Tx, user *store.User, method string) error {
		orgID, r, err := a.tokenOrg(ctx, tx, user.ID, deref(req.Body.OrganizationId))
		if err != nil {
			return err
		}
		now, m := a.Now(), reqmeta.From(ctx)
		s = &store.BrowserSession{ID: store.NewID("ses"), TokenHash: secrets.Hash(raw), UserID: user.ID, CreatedAt: now, LastSeenAt: now,
			ExpiresAt: now.Add(a.Config.SessionMaxAge), IP: &m.IP, UserAgent: &m.UserAgent}
		if orgID != "" {
			s.OrgID = &orgID
		}
		if err := store.CreateBrowserSession(ctx, tx, s); err != nil {
			return err
		}
		details := map[string]any{"session_id": s.ID}
		// The browser's previous session, if it had one, is replaced: it ends rather than
		// living on server-side without its cookie.
		if old, err := (&http.Request{Header: m.Header}).Cookie(auth.SessionCookie); err == nil && old.Value != "" {
			prev, err := store.RevokeBrowserSessionByHash(ctx, tx, secrets.Hash(old.Value), now)
			if err != nil {
				return err
			}
			if prev != "" {
				details["replaced_session_id"] = prev
			}
		}
		u, role = user, r
		return a.signedIn(ctx, tx, user, orgID, method, details)
	})
	if err != nil {
		return nil, err
	}
	out, err := a.sessionBody(ctx, u, role, s, auth.CSRFToken(raw))
	if err != nil {
		return nil, err
	}
	return api.CreateSession200JSONResponse{Body: out, Headers: api.CreateSession200ResponseHeaders{CacheControl: noStore, Pragma: noCache,
		SetCookie: auth.SessionCookieHeader(raw, a.Config.SessionMaxAge, a.SecureCookies())}}, nil
}

// sessionBody describes session s of u (role: in the session's organization).
func (a *Auth) sessionBody(ctx context.Context, u *store.User, role string, s *store.BrowserSession, csrf string) (api.BrowserSession, error) {
	idle, err := a.Store.SessionIdleTimeout(ctx, s.OrgID)
	if err != nil {
		return api.BrowserSession{}, err
	}
	idleEnd := s.LastSeenAt.Add(idle)
	if idleEnd.After(s.ExpiresAt) {
		idleEnd = s.ExpiresAt
	}
	orgID := ""
	if role != "" {
		orgID = deref(s.OrgID)
	}
	return api.BrowserSession{User: tokenUser(u, orgID, role), ExpiresAt: s.ExpiresAt, IdleExpiresAt: idleEnd,
		IdleTimeoutSeconds: int(idle.Seconds()), CsrfToken: csrf}, nil
}

// session is the caller's browser session, or errNoSession.
func (a *Auth) session(ctx context.Context) (*auth.Principal, *store.BrowserSession, error) {
	p, err := auth.Caller(ctx)
	if err != nil {
		return nil, nil, err
	}
	if p.Method != auth.MethodSession {
		return nil, nil, errNoSession
	}
	s, err := store.BrowserSessionByID(ctx, a.Store.DB, p.SessionID)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil, errNoSession
	}
	return p, s, err
}

func (a *Auth) GetSession(ctx context.Context, _ api.GetSessionRequestObject) (api.GetSessionResponseObject, error) {
	p, s, err := a.session(ctx)
	if err != nil {
		return nil, err
	}
	u, err := store.UserByID(ctx, a.Store.DB, p.UserID)
	if err != nil {
		return nil, err
	}
	// The role now: the session's organization may have changed it, or removed the member.
	role := ""
	if s.OrgID != nil {
		if role, err = store.Role(ctx, a.Store.DB, *s.OrgID, u.ID); err != nil && !errors.Is(err, store.ErrNotFound) {
			return nil, err
		}
	}
	out, err := a.sessionBody(ctx, u, role, s, p.CSRF)
	if err != nil {
		return nil, err
	}
	return api.GetSession200JSONResponse{Body: out, Headers: api.GetSession200ResponseHeaders{CacheControl: noStore, Pragma: noCache}}, nil
}

func (a *Auth) DeleteSession(ctx context.Context, _ api.DeleteSessionRequestObject) (api.DeleteSessionResponseObject, error) {
	p, s, err := a.session(ctx)
	if err != nil {
		return nil, err
	}
	err = a.Store.Tx(ctx, func(tx *sqlx.Tx) error {
		if _, err := store.RevokeBrowserSession(ctx, tx, s.ID, a.Now()); err != nil {
			return err
		}
		return a.audit(ctx, tx, deref(s.OrgID), "auth.logout", "user", p.UserID, "", map[string]any{"session_id": s.ID})
	})
	if err != nil {
		return nil, err
	}
	return api.DeleteSession204Response{Headers: api.DeleteSession204ResponseHeaders{SetCookie: auth.SessionCookieHeader("", 0, a.SecureCookies())}}, nil
}

func (f raw) VisitGetSignInPageResponse(w http.ResponseWriter) error { return f(w) }

// GetSignInPage is the sign-in page; next must stay on this service (no open redirect).
func (a *Auth) GetSignInPage(_ context.Context, req api.GetSignInPageRequestObject) (api.GetSignInPageResponseObject, error) {
	next := deref(req.Params.Next)
	if next != "" && !auth.SafeNext(next) {
		return nil, apierr.Field("query.next", "invalid_redirect",
			"next must be a path of this service: one leading slash, no scheme, host, backslash or whitespace")
	}
	return raw(func(w http.ResponseWriter) error { return docs.RenderSignIn(w, next) }), nil
}
