package records

import (
	"context"
	"errors"
	"time"

	"dataplatform/handlers/apierr"
	"dataplatform/handlers/auth"
	"dataplatform/store"
)

// accessRecheck bounds how long a stream trusts its caller's access when nothing has been
// notified: a key's expiry, for one, announces nothing.
const accessRecheck = time.Minute

// streamAccess re-checks, for a change stream that may stay open for days, that its caller
// may still read the dataset: whenever the control plane changes (a membership or role, a key
// revoked, an access token revoked, a user disabled, the dataset deleted; from any replica)
// and at least every accessRecheck. A stream that is no longer allowed ends; one opened with
// an access token also at the token's exp (within the stream's poll interval).
type streamAccess struct {
	h   *Records
	p   *auth.Principal
	ds  string
	gen uint64
	at  time.Time
}

func (h *Records) streamAccess(ctx context.Context, rc *recordCtx) *streamAccess {
	// gen 0 and no time: the first check reads, so nothing slips between resolve and here.
	return &streamAccess{h: h, p: auth.FromContext(ctx), ds: rc.d.ID}
}

// check is nil while the caller may read; an *apierr.Error saying why once not, or the
// database's error.
func (a *streamAccess) check(ctx context.Context) error {
	// A stream opened with an access token ends when the token expires or is revoked: both
	// checked on every turn of the stream's loop (a comparison and a map lookup).
	if a.p != nil && a.p.Method == auth.MethodJWT {
		if !a.h.Now().Before(a.p.TokenExpires) {
			return apierr.TokenExpired()
		}
		if revoked, err := a.h.Store.AccessTokenRevoked(ctx, a.p.TokenID); err != nil {
			return err
		} else if revoked {
			return auth.ErrTokenRevoked
		}
	}
	gen := a.h.Store.ControlPlaneGeneration()
	if gen == a.gen && time.Since(a.at) < accessRecheck {
		return nil
	}
	a.gen, a.at = gen, time.Now()
	if a.p == nil {
		return apierr.AuthRequired("authentication required")
	}
	live, err := store.CallerLive(ctx, a.h.Store.DB, a.p.UserID, a.p.KeyID, a.p.SessionID, a.h.Now())
	if err != nil {
		return err
	}
	if !live {
		return apierr.AuthRequired("the credential this stream was opened with is no longer valid (revoked, expired or its user disabled)")
	}
	if a.p.Service { // an organization's key: the member it belongs to may still create keys
		org, role, err := store.OrgKeyOwnerRole(ctx, a.h.Store.DB, a.p.KeyID)
		if err != nil {
			return err
		}
		if _, err := auth.OrgKeyPermissions(a.p.KeyPermissions, role, org, a.p.KeyID); err != nil {
			return err
		}
	}
	d, err := a.h.Store.DatasetForRecords(ctx, a.ds, a.p.UserID)
	if errors.Is(err, store.ErrNotFound) || err == nil && !d.Serving() {
		return apierr.NotFound("dataset", a.ds)
	} else if err != nil {
		return err
	}
	_, err = a.h.Allow(ctx, d.OrgID, d.Reach, "datasets:read")
	return err
}

// ended is what a stream tells its client when access is gone (nil for a database error:
// the stream just ends and the client reconnects).
func ended(err error) map[string]any {
	var ae *apierr.Error
	if !errors.As(err, &ae) {
		return nil
	}
	return map[string]any{"type": "error", "code": ae.Code, "message": ae.Message}
}
