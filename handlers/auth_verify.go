package handlers

import (
	"context"
	"errors"
	"log/slog"
	"net/http"

	"dataplatform/gen/api"
	"dataplatform/handlers/apierr"
	"dataplatform/handlers/auth"
	"dataplatform/store"
	"dataplatform/store/secrets"

	"github.com/jmoiron/sqlx"
)

// An address is verified by a code mailed to it and entered by the signed-in account: the code
// proves the mailbox, the sign-in the account, so neither an inviter who saw an invitation
// link nor the mailbox's owner alone can verify an account for the other.

const verificationTTL = 24 * 60 * 60 // seconds

var (
	errNoMail   = apierr.New(http.StatusNotImplemented, apierr.CodeMailNotConfigured, "no mail server is configured (DP_SMTP_URL)")
	errBadCode  = apierr.New(http.StatusBadRequest, apierr.CodeInvalidVerificationCode, "wrong, expired or used verification code; ask for a new one")
	errMailSend = apierr.New(http.StatusBadGateway, apierr.CodeMailError, "the mail server could not be reached or refused the message")
)

// mailUser sends mail through the configured server, logging the server's reason.
func (h *Handlers) mailUser(ctx context.Context, to, subject, body string) error {
	if h.Mail == nil {
		return errNoMail
	}
	if err := h.Mail.Send(ctx, to, subject, body); err != nil {
		slog.WarnContext(ctx, "mail: sending failed", "err", err)
		return errMailSend
	}
	return nil
}

// signedInUser is the caller's account for operations that need the person, not a key.
func (a *Auth) signedInUser(ctx context.Context, q sqlx.QueryerContext) (*store.User, error) {
	p, err := auth.Caller(ctx)
	if err != nil {
		return nil, err
	}
	if p.KeyID != "" {
		return nil, apierr.Forbidden("verify an email address signed in with a token, not an API key")
	}
	u, err := store.UserByID(ctx, q, p.UserID)
	if errors.Is(err, store.ErrNotFound) {
		return nil, apierr.AuthRequired("the user of this token no longer exists")
	}
	return u, err
}

func verificationOut(u *store.User) api.EmailVerification {
	return api.EmailVerification{Email: u.Email, EmailVerified: u.EmailVerifiedAt != nil, EmailVerifiedAt: u.EmailVerifiedAt}
}

func (a *Auth) SendEmailVerification(ctx context.Context, _ api.SendEmailVerificationRequestObject) (api.SendEmailVerificationResponseObject, error) {
	var out api.EmailVerification
	err := a.Store.Tx(ctx, func(tx *sqlx.Tx) error {
		u, err := a.signedInUser(ctx, tx)
		if err != nil {
			return err
		}
		out = verificationOut(u)
		if u.EmailVerifiedAt != nil {
			return nil
		}
		if a.Mail == nil {
			return errNoMail
		}
		code := secrets.NewToken()
		now := a.Now()
		exp := now.Add(verificationTTL * 1e9)
		if err := store.PutEmailVerification(ctx, tx, u.ID, u.Email, secrets.Hash(code), exp, now); err != nil {
			return err
		}
		out.CodeExpiresAt = &exp
		// Sent last: a refused mail rolls the code back.
		return a.mailUser(ctx, u.Email, "Verify your email address",
			"Someone signed in as "+u.Email+" asked to verify this address.\n\n"+
				"Your verification code: "+code+"\n\n"+
				"Enter it at POST "+a.Config.BaseURL+"/api/v1/auth/verify-email while signed in. It is valid for 24 hours.\n"+
				"If this was not you, ignore this mail: without the code nobody can claim your address.\n")
	})
	if err != nil {
		return nil, err
	}
	return api.SendEmailVerification200JSONResponse(out), nil
}

func (a *Auth) VerifyEmail(ctx context.Context, req api.VerifyEmailRequestObject) (api.VerifyEmailResponseObject, error) {
	var out api.EmailVerification
	var bad bool
	err := a.Store.Tx(ctx, func(tx *sqlx.Tx) error {
		u, err := a.signedInUser(ctx, tx)
		if err != nil {
			return err
		}
		now := a.Now()
		ok, err := store.ConsumeEmailVerification(ctx, tx, u.ID, u.Email, secrets.Hash(req.Body.Code), now)
		if errors.Is(err, store.ErrNotFound) || (err == nil && !ok) {
			bad = true // commit the counted try
			return nil
		} else if err != nil {
			return err
		}
		if err := store.SetEmailVerified(ctx, tx, u.ID, now); err != nil {
			return err
		}
		if u.EmailVerifiedAt == nil {
			u.EmailVerifiedAt = &now
		}
		out = verificationOut(u)
		return store.Audit(ctx, tx, store.AuditEntry{ActorID: u.ID, ActorEmail: u.Email, Action: "user.verify_email",
			ResourceType: "user", ResourceID: u.ID, ResourceName: u.Name, At: now})
	})
	if err != nil {
		return nil, err
	}
	if bad {
		return nil, errBadCode
	}
	return api.VerifyEmail200JSONResponse(out), nil
}
