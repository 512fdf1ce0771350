package handlers

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/subtle"
	"errors"
	"image/png"
	"math/big"
	"net/http"
	"strings"
	"time"

	"dataplatform/gen/api"
	"dataplatform/handlers/apierr"
	"dataplatform/handlers/auth"
	"dataplatform/store"
	"dataplatform/store/secrets"

	"github.com/jmoiron/sqlx"
	"github.com/pquerna/otp"
	"github.com/pquerna/otp/totp"
)

// TOTP as authenticator apps expect it (RFC 6238 defaults).
const (
	totpPeriod    = 30
	recoveryCodes = 10
	totpIssuer    = "Data Platform"
)

var totpOpts = totp.ValidateOpts{Period: totpPeriod, Digits: otp.DigitsSix, Algorithm: otp.AlgorithmSHA1}

var (
	errTwoFactorRequired = apierr.New(http.StatusUnauthorized, apierr.CodeTwoFactorCodeRequired,
		"this account signs in with a second factor: send the request again with two_factor_code (the authenticator's code, or a recovery code)")
	errBadTwoFactor = apierr.New(http.StatusUnauthorized, apierr.CodeInvalidTwoFactorCode,
		"the two-factor code is wrong, expired or already used")
	errBadCodeField = apierr.Field("body.code", "invalid_code", "the code is wrong, expired or already used")
)

// totpStep finds the time step whose code is code, among the current one and one either
// side, skipping steps at or before last (a code is used once).
func totpStep(secret, code string, at time.Time, last *int64) (int64, bool) {
	now := at.Unix() / totpPeriod
	for _, s := range []int64{now - 1, now, now + 1} {
		if last != nil && s <= *last {
			continue
		}
		want, err := totp.GenerateCodeCustom(secret, time.Unix(s*totpPeriod, 0), totpOpts)
		if err == nil && subtle.ConstantTimeCompare([]byte(want), []byte(code)) == 1 {
			return s, true
		}
	}
	return 0, false
}

// isRecoveryCode tells recovery codes (xxxxx-xxxxx) from TOTP codes (6 digits).
func isRecoveryCode(code string) bool { return len(code) > 6 }

func normalizeCode(code string) string {
	return strings.ToLower(strings.ReplaceAll(strings.TrimSpace(code), " ", ""))
}

// secondFactor checks and spends a code of the user's second factor in tx: a TOTP code of a
// step not used before, or an unused recovery code.
func (h *Handlers) secondFactor(ctx context.Context, tx *sqlx.Tx, userID, code string) (bool, error) {
	st, err := store.LockTOTP(ctx, tx, userID)
	if err != nil || !st.Enabled {
		return false, err
	}
	code = normalizeCode(code)
	if isRecoveryCode(code) {
		return store.UseRecoveryCode(ctx, tx, userID, secrets.Hash(code), h.Now())
	}
	if len(st.Secret) == 0 {
		return false, nil
	}
	secret, err := h.Secrets.Open(st.Secret)
	if err != nil {
		return false, err
	}
	step, ok := totpStep(string(secret), code, h.Now(), st.LastStep)
	if !ok {
		return false, nil
	}
	return true, store.SpendTOTPStep(ctx, tx, userID, step)
}

// newRecoveryCodes makes a set of recovery codes and their stored hashes.
func newRecoveryCodes() ([]string, [][]byte) {
	const alphabet = "abcdefghjkmnpqrstuvwxyz23456789" // no look-alikes
	codes, hashes := make([]string, recoveryCodes), make([][]byte, recoveryCodes)
	for i := range codes {
		b := make([]byte, 11)
		for j := range b {
			if j == 5 {
				b[j] = '-'
				continue
			}
			n, err := rand.Int(rand.Reader, big.NewInt(int64(len(alphabet))))
			if err != nil {
				panic(err)
			}
			b[j] = alphabet[n.Int64()]
		}
		codes[i], hashes[i] = string(b), secrets.Hash(string(b))
	}
	return codes, hashes
}

// person is the caller when it is a person signed in (not an API key).
func person(ctx context.Context) (*auth.Principal, error) {
	p, err := auth.Caller(ctx)
	if err != nil {
		return nil, err
	}
	if p.KeyID != "" {
		return nil, apierr.Forbidden("two-factor sign-in is managed with a signed-in user's token, not with an API key")
	}
	return p, nil
}

func (a *Auth) SetupTwoFactor(ctx context.Context, _ api.SetupTwoFactorRequestObject) (api.SetupTwoFactorResponseObject, error) {
	p, err := person(ctx)
	if err != nil {
		return nil, err
	}
	key, err := totp.Generate(totp.GenerateOpts{Issuer: totpIssuer, AccountName: p.Email, Period: totpPeriod, Digits: otp.DigitsSix,
		Algorithm: otp.AlgorithmSHA1})
	if err != nil {
		return nil, err
	}
	img, err := key.Image(256, 256)
	if err != nil {
		return nil, err
	}
	var qr bytes.Buffer
	if err := png.Encode(&qr, img); err != nil {
		return nil, err
	}
	err = a.Store.Tx(ctx, func(tx *sqlx.Tx) error {
		st, err := store.LockTOTP(ctx, tx, p.UserID)
		if err != nil {
			return err
		}
		if st.Enabled {
			return apierr.Conflict("two_factor_enabled", "two-factor sign-in is on already; turn it off first to enrol another authenticator")
		}
		return store.SetPendingTOTP(ctx, tx, p.UserID, a.Secrets.Seal([]byte(key.Secret())), a.Now())
	})
	if err != nil {
		return nil, err
	}
	return api.SetupTwoFactor200JSONResponse{Body: api.TwoFactorSetup{Secret: key.Secret(), OtpauthUrl: key.URL(),
		QrPng: qr.Bytes()},
		Headers: api.SetupTwoFactor200ResponseHeaders{CacheControl: noStore, Pragma: noCache}}, nil
}

func (a *Auth) ConfirmTwoFactor(ctx context.Context, req api.ConfirmTwoFactorRequestObject) (api.ConfirmTwoFactorResponseObject, error) {
	p, err := person(ctx)
	if err != nil {
		return nil, err
	}
	codes, hashes := newRecoveryCodes()
	err = a.Store.Tx(ctx, func(tx *sqlx.Tx) error {
		st, err := store.LockTOTP(ctx, tx, p.UserID)
		if err != nil {
			return err
		}
		if st.Enabled || st.Pending == nil {
			return apierr.Conflict("code", "no enrolment waits for a code: start one at /api/v1/auth/2fa/setup")
		}
		secret, err := a.Secrets.Open(st.Pending)
		if err != nil {
			return err
		}
		step, ok := totpStep(string(secret), normalizeCode(req.Body.Code), a.Now(), nil)
		if !ok {
			return errBadCodeField
		}
		if err := store.EnableTOTP(ctx, tx, p.UserID, step, a.Now()); err != nil {
			return err
		}
		if err := store.ReplaceRecoveryCodes(ctx, tx, p.UserID, hashes, a.Now()); err != nil {
			return err
		}
		return a.audit(ctx, tx, p.TokenOrg, "user.two_factor_enable", "user", p.UserID, "", nil)
	})
	if err != nil {
		return nil, err
	}
	return api.ConfirmTwoFactor200JSONResponse{Body: api.TwoFactorRecoveryCodes{TwoFactorEnabled: true, RecoveryCodes: codes},
		Headers: api.ConfirmTwoFactor200ResponseHeaders{CacheControl: noStore, Pragma: noCache}}, nil
}

// withSecondFactor runs f in a transaction once code passes the caller's second factor.
func (a *Auth) withSecondFactor(ctx context.Context, code string, f func(tx *sqlx.Tx, p *auth.Principal) error) error {
	p, err := person(ctx)
	if err != nil {
		return err
	}
	return a.Store.Tx(ctx, func(tx *sqlx.Tx) error {
		st, err := store.LockTOTP(ctx, tx, p.UserID)
		if err != nil {
			return err
		}
		if !st.Enabled {
			return apierr.Conflict("two_factor_enabled", "two-factor sign-in is off")
		}
		ok, err := a.secondFactor(ctx, tx, p.UserID, code)
		if err != nil {
			return err
		}
		if !ok {
			return errBadCodeField
		}
		return f(tx, p)
	})
}

func (a *Auth) DisableTwoFactor(ctx context.Context, req api.DisableTwoFactorRequestObject) (api.DisableTwoFactorResponseObject, error) {
	err := a.withSecondFactor(ctx, req.Body.Code, func(tx *sqlx.Tx, p *auth.Principal) error {
		if err := store.DisableTOTP(ctx, tx, p.UserID, a.Now()); err != nil {
			return err
		}
		return a.audit(ctx, tx, p.TokenOrg, "user.two_factor_disable", "user", p.UserID, "", nil)
	})
	if err != nil {
		return nil, err
	}
	return api.DisableTwoFactor204Response{}, nil
}

func (a *Auth) RegenerateRecoveryCodes(ctx context.Context, req api.RegenerateRecoveryCodesRequestObject) (api.RegenerateRecoveryCodesResponseObject, error) {
	codes, hashes := newRecoveryCodes()
	err := a.withSecondFactor(ctx, req.Body.Code, func(tx *sqlx.Tx, p *auth.Principal) error {
		if err := store.ReplaceRecoveryCodes(ctx, tx, p.UserID, hashes, a.Now()); err != nil {
			return err
		}
		return a.audit(ctx, tx, p.TokenOrg, "user.recovery_codes_regenerate", "user", p.UserID, "", nil)
	})
	if err != nil {
		return nil, err
	}
	return api.RegenerateRecoveryCodes200JSONResponse{Body: api.TwoFactorRecoveryCodes{TwoFactorEnabled: true, RecoveryCodes: codes},
		Headers: api.RegenerateRecoveryCodes200ResponseHeaders{CacheControl: noStore, Pragma: noCache}}, nil
}

// errSecondFactor marks a sign-in refused at its second factor (counted as a failure once
// the transaction is over).
var errSecondFactor = errors.New("second factor refused")
