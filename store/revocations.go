package store

import (
	"context"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
)

// The access-token deny-list: the `jti` of access tokens ended before their expiry (signing
// out, a reused refresh token), in platform.revoked_access_tokens until the token expires.
//
// Every server keeps a copy in memory, so that checking a token costs a map lookup and no
// query: it loads the unexpired rows when it starts listening, and each insert (from any
// server) notifies `access_revoked` with the jti. The server that revokes adds the tokens to
// its own copy before answering (AccessRevoked); another server refuses them from the moment
// the notification arrives — PostgreSQL delivers it at the commit, milliseconds before the
// revoking server's answer reaches its client. While a server is not listening (not started,
// or the connection lost and not yet reloaded) each check is one primary-key lookup instead.
type revocations struct {
	listening atomic.Int32 // listeners whose copy is complete
	mu        sync.RWMutex
	m         map[string]time.Time // jti → expiry
}

// accessRevokedChannel is the notification channel of the deny-list's trigger.
const accessRevokedChannel = "access_revoked"

// RevokedAccess is an access token on the deny-list.
type RevokedAccess struct {
	JTI       string    `db:"jti"`
	ExpiresAt time.Time `db:"expires_at"`
}

// AccessRevoked adds revoked access tokens to this server's copy of the deny-list (after the
// transaction that revoked them committed).
func (s *Store) AccessRevoked(list ...RevokedAccess) {
	r := &s.revoked
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.m == nil {
		r.m = map[string]time.Time{}
	}
	for _, x := range list {
		r.m[x.JTI] = x.ExpiresAt
	}
}

// AccessTokenRevoked says whether the access token jti is on the deny-list: from memory
// while listening, otherwise one primary-key lookup.
func (s *Store) AccessTokenRevoked(ctx context.Context, jti string) (bool, error) {
	ok, known := s.AccessTokenRevokedKnown(jti)
	if known {
		return ok, nil
	}
	err := sqlx.GetContext(ctx, s.DB, &ok, `SELECT EXISTS (SELECT 1 FROM platform.revoked_access_tokens WHERE jti = $1)`, jti)
	return ok, wrap("check access token revocation", err)
}

// AccessTokenRevokedKnown is AccessTokenRevoked from memory alone: known is false when the
// answer needs the database.
func (s *Store) AccessTokenRevokedKnown(jti string) (revoked, known bool) {
	r := &s.revoked
	r.mu.RLock()
	_, revoked = r.m[jti]
	r.mu.RUnlock()
	return revoked, revoked || r.listening.Load() > 0
}

// reload replaces the copy with the unexpired rows (expired ones are refused anyway).
func (s *Store) reloadRevoked(ctx context.Context, now time.Time) error {
	var list []RevokedAccess
	if err := sqlx.SelectContext(ctx, s.DB, &list, `SELECT jti, expires_at FROM platform.revoked_access_tokens WHERE expires_at > $1`, now); err != nil {
		return err
	}
	m := make(map[string]time.Time, len(list))
	for _, x := range list {
		m[x.JTI] = x.ExpiresAt
	}
	r := &s.revoked
	r.mu.Lock()
	for k, exp := range r.m { // what was added meanwhile stays
		if _, ok := m[k]; !ok && exp.After(now) {
			m[k] = exp
		}
	}
	r.m = m
	r.mu.Unlock()
	return nil
}

// WatchRevokedAccess keeps this server's copy of the deny-list from the database at url
// until ctx ends; now is the server's clock.
func (s *Store) WatchRevokedAccess(ctx context.Context, url string, now func() time.Time, log *slog.Logger) {
	if url == "" {
		return
	}
	r := &s.revoked
	var complete atomic.Bool // this listener's share of r.listening
	setComplete := func(v bool) {
		if complete.Swap(v) != v {
			if v {
				r.listening.Add(1)
			} else {
				r.listening.Add(-1)
			}
		}
	}
	events := func(ev pq.ListenerEventType, err error) {
		switch ev {
		case pq.ListenerEventDisconnected, pq.ListenerEventConnectionAttemptFailed:
			setComplete(false) // notifications may be missed: ask the database until reloaded
		}
	}
	l := pq.NewListener(url, time.Second, time.Minute, events)
	if err := l.Listen(accessRevokedChannel); err != nil {
		log.Warn("access-token revocations not announced; every bearer request looks the deny-list up", "error", err)
		_ = l.Close()
		return
	}
	load := func() {
		if err := s.reloadRevoked(ctx, now()); err != nil {
			if ctx.Err() == nil {
				log.Warn("loading the access-token deny-list; looking it up per request meanwhile", "error", err)
			}
			return
		}
		setComplete(true)
	}
	load()
	go func() {
		defer func() { _ = l.Close() }()
		defer setComplete(false)
		prune := time.NewTicker(10 * time.Minute)
		defer prune.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case n := <-l.Notify:
				if n == nil { // reconnected: notifications may have been missed
					load()
					continue
				}
				jti, exp, _ := strings.Cut(n.Extra, " ") // "<jti> <exp, Unix seconds>"
				sec, err := strconv.ParseInt(exp, 10, 64)
				if err != nil {
					sec = now().Add(24 * time.Hour).Unix() // kept until a prune's reload
				}
				s.AccessRevoked(RevokedAccess{JTI: jti, ExpiresAt: time.Unix(sec, 0)})
			case <-prune.C:
				load()
			}
		}
	}()
}
