package handlers

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"dataplatform/gen/api"
	"dataplatform/handlers/apierr"
	"dataplatform/handlers/auth"
	"dataplatform/store"
	"dataplatform/store/roles"
	"dataplatform/store/secrets"

	"github.com/jmoiron/sqlx"
)

// Auth implements sign-in, tokens and API keys.
type Auth struct{ *Handlers }

var errBadLogin = apierr.AuthRequired("invalid email or password")

func (a *Auth) Login(ctx context.Context, req api.LoginRequestObject) (api.LoginResponseObject, error) {
	var tr api.TokenResponse
	err := a.passwordSignIn(ctx, *req.Body, func(tx *sqlx.Tx, u *store.User, method string) error {
		var err error
		tr, err = a.signIn(ctx, tx, u, deref(req.Body.OrganizationId), method)
		return err
	})
	if err != nil {
		return nil, err
	}
	return api.Login200JSONResponse{Body: tr, Headers: api.Login200ResponseHeaders{CacheControl: noStore, Pragma: noCache}}, nil
}

// passwordSignIn checks a sign-in with email and password (the throttle, the account, its
// second factor) and, once it passes, runs issue in the transaction that records it; issue
// gets the sign-in method (password or password+totp). Tokens and browser sessions are issued
// through it alike.
func (a *Auth) passwordSignIn(ctx context.Context, b api.LoginRequest, issue func(tx *sqlx.Tx, u *store.User, method string) error) error {
	// Failures are counted per address, known or not, so the answers tell nothing about which
	// addresses have accounts.
	key := strings.ToLower(strings.TrimSpace(string(b.Email)))
	now := a.Now()
	if until, err := store.LoginGate(ctx, a.Store.DB, key, now); err != nil {
		return err
	} else if !until.IsZero() {
		return loginThrottled(until.Sub(now))
	}
	u, err := store.UserByEmail(ctx, a.Store.DB, string(b.Email))
	hash := ""
	if err == nil && u.Status == "active" {
		hash = deref(u.PasswordHash)
	} else if err != nil && !errors.Is(err, store.ErrNotFound) {
		return err
	}
	if !a.Passwords.Check(hash, b.Password) {
		if err := store.LoginFailed(ctx, a.Store.DB, key, now); err != nil {
			return err
		}
		return errBadLogin
	}
	if u.TwoFactorEnabled && deref(b.TwoFactorCode) == "" {
		return errTwoFactorRequired
	}
	err = a.Store.Tx(ctx, func(tx *sqlx.Tx) error {
		method := "password"
		if u.TwoFactorEnabled {
			ok, err := a.secondFactor(ctx, tx, u.ID, *b.TwoFactorCode)
			if err != nil {
				return err
			}
			if !ok {
				return errSecondFactor
			}
			method = "password+totp"
		}
		if err := store.LoginSucceeded(ctx, tx, key); err != nil {
			return err
		}
		return issue(tx, u, method)
	})
	if errors.Is(err, errSecondFactor) {
		if err := store.LoginFailed(ctx, a.Store.DB, key, now); err != nil {
			return err
		}
		return errBadTwoFactor
	}
	return err
}

// Answers carrying tokens or secrets must not be cached (RFC 6749 §5.1).
const noStore, noCache = "no-store", "no-cache"

// loginThrottled is the 429 of an address waiting out its failed sign-ins.
func loginThrottled(wait time.Duration) error {
	secs := int64(math.Ceil(wait.Seconds()))
	e := apierr.New(http.StatusTooManyRequests, apierr.CodeLoginThrottled,
		fmt.Sprintf("too many failed sign-ins for this email address; try again in %d seconds", secs)).
		WithDetails(map[string]any{"retry_after_seconds": secs})
	e.Headers = map[string]string{"Retry-After": strconv.FormatInt(secs, 10)}
	return e
}

// signIn issues an access token and a new refresh-token family for u in organization orgID
// (default: the user's oldest membership; none when the user has no organization).
func (h *Handlers) signIn(ctx context.Context, tx *sqlx.Tx, u *store.User, orgID, method string) (api.TokenResponse, error) {
	orgID, role, err := h.tokenOrg(ctx, tx, u.ID, orgID)
	if err != nil {
		return api.TokenResponse{}, err
	}
	access, claims, err := h.accessToken(u, orgID, role)
	if err != nil {
		return api.TokenResponse{}, err
	}
	refresh, err := h.newRefreshToken(ctx, tx, u.ID, orgID, store.NewID("rtf"), claims)
	if err != nil {
		return api.TokenResponse{}, err
	}
	if err := h.signedIn(ctx, tx, u, orgID, method, nil); err != nil {
		return api.TokenResponse{}, err
	}
	return api.TokenResponse{
		AccessToken: access, RefreshToken: refresh, TokenType: api.TokenResponseTokenTypeBearer,
		ExpiresIn:        int(claims.ExpiresAt.Sub(claims.IssuedAt).Seconds()),
		RefreshExpiresIn: ptr(int(h.Config.RefreshTokenTTL.Seconds())),
		User:             tokenUser(u, orgID, role),
	}, nil
}

// signedIn records a sign-in of u in organization orgID: the audit entry auth.login (details:
// the method, and more) and the user's last activity.
func (h *Handlers) signedIn(ctx context.Context, tx *sqlx.Tx, u *store.User, orgID, method string, details map[string]any) error {
	if details == nil {
		details = map[string]any{}
	}
	details["method"] = method
	if err := h.audit(auth.WithPrincipal(ctx, &auth.Principal{UserID: u.ID, Email: u.Email}), tx, orgID, "auth.login", "user", u.ID, u.Name, details); err != nil {
		return err
	}
	return store.TouchUser(ctx, tx, u.ID, h.Now())
}

// tokenUser is the user part of a sign-in's answer.
func tokenUser(u *store.User, orgID, role string) api.TokenUser {
	tu := api.TokenUser{Id: u.ID, Email: u.Email, Name: u.Name, Roles: []api.MemberRole{}}
	if orgID != "" {
		tu.OrganizationId = &orgID
		tu.Roles = []api.MemberRole{api.MemberRole(role)}
	}
	return tu
}

// tokenOrg picks the organization a token is for and the user's role there.
func (h *Handlers) tokenOrg(ctx context.Context, q sqlx.QueryerContext, userID, orgID string) (string, string, error) {
	if orgID != "" {
		role, err := store.Role(ctx, q, orgID, userID)
		if errors.Is(err, store.ErrNotFound) {
			return "", "", apierr.AuthRequired("you are not an active member of organization " + orgID)
		}
		return orgID, role, err
	}
	orgs, err := store.UserOrganizations(ctx, q, userID)
	if err != nil || len(orgs) == 0 {
		return "", "", err
	}
	return orgs[0].OrgID, orgs[0].Role, nil
}

func (h *Handlers) accessToken(u *store.User, orgID, role string) (string, *auth.AccessClaims, error) {
	c := &auth.AccessClaims{UserID: u.ID, Email: u.Email, Org: orgID}
	if role != "" {
		c.Roles, c.Permissions = []string{role}, roles.Permissions(role)
	}
	tok, err := h.Tokens.Issue(c)
	return tok, c, err
}

// newRefreshToken makes a refresh token of family, issued with the access token of access
// (which ending the family revokes).
func (h *Handlers) newRefreshToken(ctx context.Context, tx *sqlx.Tx, userID, orgID, family string, access *auth.AccessClaims) (string, error) {
	raw := secrets.NewToken()
	now := h.Now()
	t := &store.RefreshToken{ID: store.NewID("rt"), TokenHash: secrets.Hash(raw), FamilyID: family, UserID: userID,
		ExpiresAt: now.Add(h.Config.RefreshTokenTTL), CreatedAt: now, AccessTokenID: &access.ID, AccessExpiresAt: &access.ExpiresAt}
	if orgID != "" {
		t.OrgID = &orgID
	}
	return raw, store.CreateRefreshToken(ctx, tx, t)
}

var errBadRefresh = apierr.AuthRequired("invalid, expired or revoked refresh token")

func (a *Auth) RefreshToken(ctx context.Context, req api.RefreshTokenRequestObject) (api.RefreshTokenResponseObject, error) {
	var out api.RefreshResponse
	var reuse bool
	var revoked []store.RevokedAccess
	err := a.Store.Tx(ctx, func(tx *sqlx.Tx) error {
		t, err := store.RefreshTokenForUpdate(ctx, tx, secrets.Hash(req.Body.RefreshToken))
		if errors.Is(err, store.ErrNotFound) {
			return errBadRefresh
		} else if err != nil {
			return err
		}
		now := a.Now()
		if t.RevokedAt != nil {
			return errBadRefresh
		}
		if t.UsedAt != nil {
			// A spent token came back: someone holds a copy. Revoke the whole family (and
			// commit that) so that neither copy works any more.
			reuse = true
			if revoked, err = store.RevokeRefreshFamily(ctx, tx, t.FamilyID, now); err != nil {
				return err
			}
			return a.audit(auth.WithPrincipal(ctx, &auth.Principal{UserID: t.UserID}), tx, deref(t.OrgID), "auth.refresh_reuse", "user", t.UserID, "",
				map[string]any{"family_id": t.FamilyID})
		}
		if !now.Before(t.ExpiresAt) {
			return errBadRefresh
		}
		// The token was issued at the session's last sign-in or refresh: idle since then.
		if t.OrgID != nil {
			sec, err := a.Store.OrgSecurity(ctx, *t.OrgID)
			if err != nil && !errors.Is(err, store.ErrNotFound) {
				return err
			}
			if err == nil && sec.SessionTimeout > 0 && now.Sub(t.CreatedAt) > sec.SessionTimeout {
				return auth.SessionExpired(sec.SessionTimeout)
			}
		}
		u, err := store.UserByID(ctx, tx, t.UserID)
		if err != nil || u.Status != "active" {
			return errBadRefresh
		}
		if err := store.SpendRefreshToken(ctx, tx, t.ID, now); err != nil {
			return err
		}
		orgID, role, err := a.tokenOrg(ctx, tx, u.ID, deref(t.OrgID))
		if err != nil {
			// No longer a member of the token's organization: fall back to the default one.
			if orgID, role, err = a.tokenOrg(ctx, tx, u.ID, ""); err != nil {
				return err
			}
		}
		access, claims, err := a.accessToken(u, orgID, role)
		if err != nil {
			return err
		}
		refresh, err := a.newRefreshToken(ctx, tx, u.ID, orgID, t.FamilyID, claims)
		if err != nil {
			return err
		}
		if err := store.TouchUser(ctx, tx, u.ID, now); err != nil {
			return err
		}
		out = api.RefreshResponse{AccessToken: access, RefreshToken: refresh, TokenType: api.RefreshResponseTokenTypeBearer,
			ExpiresIn: int(claims.ExpiresAt.Sub(claims.IssuedAt).Seconds()), RefreshExpiresIn: ptr(int(a.Config.RefreshTokenTTL.Seconds()))}
		return nil
	})
	if err != nil {
		return nil, err
	}
	a.Store.AccessRevoked(revoked...)
	if reuse {
		return nil, apierr.AuthRequired("this refresh token was already used; every token of its sign-in has been revoked, sign in again")
	}
	return api.RefreshToken200JSONResponse{Body: out, Headers: api.RefreshToken200ResponseHeaders{CacheControl: noStore, Pragma: noCache}}, nil
}

// Logout ends the refresh token's family and the access tokens issued with it (the deny-list:
// this server refuses them before answering, the others when the database's notification
// arrives).
func (a *Auth) Logout(ctx context.Context, req api.LogoutRequestObject) (api.LogoutResponseObject, error) {
	var revoked []store.RevokedAccess
	err := a.Store.Tx(ctx, func(tx *sqlx.Tx) error {
		t, err := store.RefreshTokenForUpdate(ctx, tx, secrets.Hash(req.Body.RefreshToken))
		if errors.Is(err, store.ErrNotFound) {
			return nil
		} else if err != nil {
			return err
		}
		if revoked, err = store.RevokeRefreshFamily(ctx, tx, t.FamilyID, a.Now()); err != nil {
			return err
		}
		return a.audit(auth.WithPrincipal(ctx, &auth.Principal{UserID: t.UserID}), tx, deref(t.OrgID), "auth.logout", "user", t.UserID, "", nil)
	})
	if err != nil {
		return nil, err
	}
	a.Store.AccessRevoked(revoked...)
	return api.Logout204Response{}, nil
}

func (a *Auth) GetCurrentUser(ctx context.Context, _ api.GetCurrentUserRequestObject) (api.GetCurrentUserResponseObject, error) {
	p, err := auth.Caller(ctx)
	if err != nil {
		return nil, err
	}
	u, err := store.UserByID(ctx, a.Store.DB, p.UserID)
	if errors.Is(err, store.ErrNotFound) {
		return nil, apierr.AuthRequired("the user of this token no longer exists")
	} else if err != nil {
		return nil, err
	}
	orgs, err := store.UserOrganizations(ctx, a.Store.DB, u.ID)
	if err != nil {
		return nil, err
	}
	out := api.CurrentUser{Id: u.ID, Email: u.Email, Name: u.Name, EmailVerified: u.EmailVerifiedAt != nil, AuthMethod: api.CurrentUserAuthMethod(p.Method),
		Organizations: make([]api.CurrentUserOrganization, 0, len(orgs))}
	if p.KeyID != "" {
		out.ApiKeyId = &p.KeyID
	}
	for _, o := range orgs {
		acc := auth.AccessFor(p, o.OrgID, o.Role)
		perms := make([]api.Permission, len(acc.Permissions))
		for i, x := range acc.Permissions {
			perms[i] = api.Permission(x)
		}
		out.Organizations = append(out.Organizations, api.CurrentUserOrganization{
			Id: o.OrgID, Name: o.Name, Slug: o.Slug, Role: api.MemberRole(o.Role), Permissions: perms})
	}
	return api.GetCurrentUser200JSONResponse(out), nil
}

var errNoOIDC = apierr.New(http.StatusNotImplemented, apierr.CodeOidcNotConfigured, "no OpenID Connect identity provider is configured (DP_OIDC_ISSUER)")

func (a *Auth) OauthAuthorize(ctx context.Context, req api.OauthAuthorizeRequestObject) (api.OauthAuthorizeResponseObject, error) {
	if a.OIDC == nil {
		return nil, errNoOIDC
	}
	u, err := a.OIDC.AuthorizeURL(ctx, deref(req.Params.Scope))
	if err != nil {
		return nil, err
	}
	return api.OauthAuthorize302Response{Headers: api.OauthAuthorize302ResponseHeaders{Location: u}}, nil
}

func (a *Auth) OauthCallback(ctx context.Context, req api.OauthCallbackRequestObject) (api.OauthCallbackResponseObject, error) {
	if a.OIDC == nil {
		return nil, errNoOIDC
	}
	p := req.Params
	if p.Error != nil {
		return nil, apierr.AuthRequired("the identity provider refused the sign-in: " + *p.Error + " " + deref(p.ErrorDescription))
	}
	if p.Code == nil || *p.Code == "" {
		return nil, apierr.Field("query.code", "required", "code is required when error is absent")
	}
	u, err := a.OIDC.Callback(ctx, *p.Code, p.State)
	if err != nil {
		return nil, err
	}
	var tr api.TokenResponse
	err = a.Store.Tx(ctx, func(tx *sqlx.Tx) error {
		var err error
		tr, err = a.signIn(ctx, tx, u, "", "oidc")
		return err
	})
	if err != nil {
		return nil, err
	}
	return api.OauthCallback200JSONResponse{Body: tr, Headers: api.OauthCallback200ResponseHeaders{CacheControl: noStore, Pragma: noCache}}, nil
}
