// Package ratelimit counts requests per principal and category with ulule/limiter: in memory by
// default, in Redis (shared by every replica) when REDIS_URL is set. While Redis cannot be
// reached, each process counts in its own memory instead (fail open per process: the limits
// hold per replica, not across them) and tries Redis again a few seconds later.
package ratelimit

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/ulule/limiter/v3"
	"github.com/ulule/limiter/v3/drivers/store/memory"
	sredis "github.com/ulule/limiter/v3/drivers/store/redis"
)

// Defaults are the limits per category, in ulule's "<limit>-<S|M|H|D>" form. Categories and
// figures are the published limits; `auth` (unauthenticated sign-in endpoints, per client
// address) and `default` (everything else, per principal) are this service's own. The
// records_* categories are the generated record API's, counted per principal and dataset.
var Defaults = map[string]string{
	"default":        "1000-M", // the platform API, per principal
	"records_read":   "1000-M", // GET of records, lists, streams and sockets (at connect)
	"records_write":  "100-M",  // POST, PUT, PATCH of records
	"records_delete": "50-M",   // DELETE of a record
	"records_query":  "100-M",  // SQL queries and aggregations of the dataset
	"records_export": "10-M",   // exports
	"records_bulk":   "20-M",   // bulk requests
	"auth":           "30-M",   // login, refresh, OAuth, invitation acceptance: per IP, against guessing
	"org_write":      "100-H",  // organization operations
	"invitations":    "50-D",   // user invitations
	"api_keys":       "10-D",   // API key creation and rotation
	"uploads":        "10-H",   // file uploads, per project
	"datasets":       "50-H",   // dataset creation, per project
	"schema_refresh": "100-H",  // dataset re-analysis, per project
	"queries":        "100-M",  // project query executions
	"downloads":      "60-M",   // signed export links, per client address
	"mcp":            "300-M",  // requests to the MCP server (/api/v1/mcp), per principal
}

// Limiter holds one ulule limiter per category over a shared store, and, with Redis, the same
// in memory for when Redis is down.
type Limiter struct {
	limiters map[string]*limiter.Limiter
	local    map[string]*limiter.Limiter // nil without Redis
	// downUntil (Unix nanoseconds): Redis failed; count locally until then
	downUntil atomic.Int64
	close     func() error
}

// Result is the state of a principal's window after counting a request.
type Result = limiter.Context

// redisRetry is how long the limiter counts locally after Redis failed before trying it again;
// redisTimeout bounds each Redis call, so an outage costs a request at most that.
const (
	redisRetry   = 5 * time.Second
	redisTimeout = 250 * time.Millisecond
)

// New builds the limiter. overrides is "category=limit-period,..." (DP_RATE_LIMITS).
func New(redisURL, overrides string) (*Limiter, error) {
	rates := map[string]limiter.Rate{}
	for k, v := range Defaults {
		r, err := limiter.NewRateFromFormatted(v)
		if err != nil {
			return nil, fmt.Errorf("rate limit %s=%s: %w", k, v, err)
		}
		rates[k] = r
	}
	for _, o := range strings.Split(overrides, ",") {
		if o = strings.TrimSpace(o); o == "" {
			continue
		}
		k, v, ok := strings.Cut(o, "=")
		if !ok {
			return nil, fmt.Errorf("DP_RATE_LIMITS: %q is not category=limit-period", o)
		}
		r, err := limiter.NewRateFromFormatted(strings.TrimSpace(v))
		if err != nil {
			return nil, fmt.Errorf("rate limit %s: %w", o, err)
		}
		rates[strings.TrimSpace(k)] = r
	}
	l := &Limiter{close: func() error { return nil }}
	memoryStore := memory.NewStore()
	if redisURL == "" {
		l.limiters = over(memoryStore, rates)
		return l, nil
	}
	opt, err := redis.ParseURL(redisURL)
	if err != nil {
		return nil, fmt.Errorf("REDIS_URL: %w", err)
	}
	opt.DialTimeout, opt.ReadTimeout, opt.WriteTimeout, opt.MaxRetries = redisTimeout, redisTimeout, redisTimeout, -1
	client := redis.NewClient(opt)
	if err := client.Ping(context.Background()).Err(); err != nil {
		_ = client.Close()
		return nil, fmt.Errorf("REDIS_URL: %w", err)
	}
	store, err := sredis.NewStoreWithOptions(client, limiter.StoreOptions{Prefix: "dp:ratelimit"})
	if err != nil {
		_ = client.Close()
		return nil, err
	}
	l.limiters, l.local, l.close = over(store, rates), over(memoryStore, rates), client.Close
	return l, nil
}

func over(store limiter.Store, rates map[string]limiter.Rate) map[string]*limiter.Limiter {
	out := map[string]*limiter.Limiter{}
	for cat, r := range rates {
		out[cat] = limiter.New(store, r)
	}
	return out
}

// Take counts one request of key in category. An unknown category counts as default.
func (l *Limiter) Take(ctx context.Context, category, key string) (Result, error) {
	if _, ok := l.limiters[category]; !ok {
		category = "default"
	}
	if l.local != nil && time.Now().UnixNano() < l.downUntil.Load() {
		return l.local[category].Get(ctx, category+":"+key)
	}
	r, err := l.limiters[category].Get(ctx, category+":"+key)
	if err != nil && l.local != nil {
		l.downUntil.Store(time.Now().Add(redisRetry).UnixNano()) // one warning per retry period
		slog.Warn("rate limits: Redis unreachable; counting in this process's memory for now", "error", err, "retry_in", redisRetry.String())
		return l.local[category].Get(ctx, category+":"+key)
	}
	return r, err
}

// Close releases the Redis client, if any.
func (l *Limiter) Close() error { return l.close() }
