package handlers

import (
	"sync"
	"time"
)

// TTLCache is a bounded map of entries that expire (query answers, plan facts), per server
// process. When full, expired entries go first, then any.
type TTLCache[V any] struct {
	mu  sync.Mutex
	m   map[string]ttlEntry[V]
	max int
}

type ttlEntry[V any] struct {
	v       V
	expires time.Time
}

func NewTTLCache[V any](max int) *TTLCache[V] {
	return &TTLCache[V]{m: map[string]ttlEntry[V]{}, max: max}
}

// Get is the live entry of k.
func (c *TTLCache[V]) Get(k string) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[k]
	if !ok || time.Now().After(e.expires) {
		var zero V
		return zero, false
	}
	return e.v, true
}

// Put keeps v under k for ttl.
func (c *TTLCache[V]) Put(k string, v V, ttl time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.m) >= c.max {
		now := time.Now()
		for key, e := range c.m {
			if now.After(e.expires) {
				delete(c.m, key)
			}
		}
		for key := range c.m {
			if len(c.m) < c.max {
				break
			}
			delete(c.m, key)
		}
	}
	c.m[k] = ttlEntry[V]{v: v, expires: time.Now().Add(ttl)}
}
