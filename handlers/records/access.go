package records

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"time"

	"dataplatform/handlers/apierr"
	"dataplatform/handlers/auth"
	"dataplatform/store"

	"golang.org/x/sync/singleflight"
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
	if a.settled() {
		return nil
	}
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
	key := a.p.UserID + "|" + a.p.KeyID + "|" + a.p.SessionID + "|" + a.p.TokenID + "|" + a.ds
	if v, ok := a.h.verdicts.get(key, gen); ok {
		return v.err
	}
	// One check for all of a caller's streams of the dataset, on a context no one stream's
	// end cancels.
	_, err, _ := a.h.verdicts.group.Do(key+"|"+strconv.FormatUint(gen, 10), func() (any, error) {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		err := a.recheck(cctx)
		var ae *apierr.Error
		if err == nil || errors.As(err, &ae) || errors.Is(err, auth.ErrTokenRevoked) {
			a.h.verdicts.put(key, gen, err)
		}
		return nil, err
	})
	return err
}

// settled says, without asking the database, that the caller may still read: the last check
// holds (the same control-plane generation, younger than accessRecheck) and an access token
// has neither expired nor been revoked, as far as the server's copy of revocations tells.
func (a *streamAccess) settled() bool {
	if a.p == nil || a.at.IsZero() || a.gen != a.h.Store.ControlPlaneGeneration() || time.Since(a.at) >= accessRecheck {
		return false
	}
	if a.p.Method == auth.MethodJWT {
		if !a.h.Now().Before(a.p.TokenExpires) {
			return false
		}
		if revoked, known := a.h.Store.AccessTokenRevokedKnown(a.p.TokenID); revoked || !known {
			return false
		}
	}
	return true
}

// A verdictCache shares access checks among the streams of one caller and dataset: after a
// control-plane change every open stream re-checks at once, and thousands of one caller's
// streams would each ask the database. A verdict holds for its control-plane generation (of
// the server's own store) and at most accessRecheck.

type verdict struct {
	err error
	at  time.Time
}

type verdictCache struct {
	group singleflight.Group
	mu    sync.Mutex
	gen   uint64
	m     map[string]verdict
}

func (c *verdictCache) get(key string, gen uint64) (verdict, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.m[key]
	if !ok || c.gen != gen || time.Since(v.at) >= accessRecheck {
		return verdict{}, false
	}
	return v, true
}

func (c *verdictCache) put(key string, gen uint64, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if gen < c.gen {
		return // a newer generation's verdicts are here already
	}
	if gen > c.gen || len(c.m) >= 100_000 {
		c.gen, c.m = gen, map[string]verdict{}
	}
	c.m[key] = verdict{err: err, at: time.Now()}
}

// recheck reads whether the caller may still read the dataset.
func (a *streamAccess) recheck(ctx context.Context) error {
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
