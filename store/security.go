package store

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"sync"
	"time"
)

// OrgSecurity is what an organization's security settings say about every request for its
// resources.
type OrgSecurity struct {
	Allowlist      []netip.Prefix // empty: any address
	TwoFactor      bool           // members must sign in with a second factor
	SessionTimeout time.Duration  // a refresh token unused longer is refused
}

// Allows reports whether a client address may reach the organization's resources.
func (o OrgSecurity) Allows(ip string) bool {
	if len(o.Allowlist) == 0 {
		return true
	}
	a, err := netip.ParseAddr(ip)
	if err != nil {
		return false
	}
	a = a.Unmap()
	for _, p := range o.Allowlist {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// Prefixes parses an allowlist's entries (validated when written).
func Prefixes(list []string) []netip.Prefix {
	out := make([]netip.Prefix, 0, len(list))
	for _, s := range list {
		if p, err := netip.ParsePrefix(s); err == nil {
			out = append(out, p.Masked())
		}
	}
	return out
}

// OrgSecurity reads an organization's security settings, kept in memory like the dataset
// lookups (a change of settings notifies; see lookups). ErrNotFound for no organization.
func (s *Store) OrgSecurity(ctx context.Context, orgID string) (OrgSecurity, error) {
	if v, ok := s.security.get(&s.look, orgID); ok {
		return v, nil
	}
	gen := s.look.gen.Load()
	var raw string
	if err := s.DB.GetContext(ctx, &raw, `SELECT settings FROM platform.organizations WHERE id = $1`, orgID); err != nil {
		return OrgSecurity{}, fmt.Errorf("read organization security: %w", notFound(err))
	}
	st := DefaultSettings()
	_ = json.Unmarshal([]byte(raw), &st)
	v := OrgSecurity{Allowlist: Prefixes(st.Security.IPAllowlist), TwoFactor: st.Security.TwoFactorRequired,
		SessionTimeout: time.Duration(st.Security.SessionTimeoutMinutes) * time.Minute}
	s.security.put(&s.look, orgID, v, gen)
	return v, nil
}

// UserTwoFactor reports whether the user signs in with a second factor, kept like OrgSecurity.
func (s *Store) UserTwoFactor(ctx context.Context, userID string) (bool, error) {
	if v, ok := s.twoFactor.get(&s.look, userID); ok {
		return v, nil
	}
	gen := s.look.gen.Load()
	var on bool
	if err := s.DB.GetContext(ctx, &on, `SELECT two_factor_enabled FROM platform.users WHERE id = $1`, userID); err != nil {
		return false, fmt.Errorf("read user two-factor: %w", notFound(err))
	}
	s.twoFactor.put(&s.look, userID, on, gen)
	return on, nil
}

// genCache keeps small answers under the control-plane generation of lookups: an answer
// read under an older generation, or older than lookupMaxAge, is not used.
type genCache[V any] struct {
	mu sync.Mutex
	m  map[string]genEntry[V]
}

type genEntry[V any] struct {
	v   V
	gen uint64
	at  time.Time
}

func (c *genCache[V]) get(l *lookups, key string) (V, bool) {
	var zero V
	if !l.listening.Load() {
		return zero, false
	}
	c.mu.Lock()
	e, ok := c.m[key]
	c.mu.Unlock()
	if !ok || e.gen != l.gen.Load() || time.Since(e.at) > lookupMaxAge {
		return zero, false
	}
	return e.v, true
}

func (c *genCache[V]) put(l *lookups, key string, v V, gen uint64) {
	if !l.listening.Load() || gen != l.gen.Load() {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= lookupMax {
		c.m = map[string]genEntry[V]{}
	}
	c.m[key] = genEntry[V]{v: v, gen: gen, at: time.Now()}
}
