// Package ratelimit counts requests per principal and category with ulule/limiter: in memory by
// default, in Redis (shared by every replica) when REDIS_URL is set.
package ratelimit

import (
	"context"
	"fmt"
	"strings"

	"github.com/redis/go-redis/v9"
	"github.com/ulule/limiter/v3"
	"github.com/ulule/limiter/v3/drivers/store/memory"
	sredis "github.com/ulule/limiter/v3/drivers/store/redis"
)

// Defaults are the limits per category, in ulule's "<limit>-<S|M|H|D>" form. Categories and
// figures follow SPEC.md "Limits"; `auth` (unauthenticated sign-in endpoints, per client
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
}

// Limiter holds one ulule limiter per category over a shared store.
type Limiter struct {
	limiters map[string]*limiter.Limiter
	close    func() error
}

// Result is the state of a principal's window after counting a request.
type Result = limiter.Context

// New builds the limiter. overrides is "category=limit-period,..." (DP_RATE_LIMITS).
func New(redisURL, overrides string) (*Limiter, error) {
	rates := map[string]string{}
	for k, v := range Defaults {
		rates[k] = v
	}
	for _, o := range strings.Split(overrides, ",") {
		if o = strings.TrimSpace(o); o == "" {
			continue
		}
		k, v, ok := strings.Cut(o, "=")
		if !ok {
			return nil, fmt.Errorf("DP_RATE_LIMITS: %q is not category=limit-period", o)
		}
		rates[strings.TrimSpace(k)] = strings.TrimSpace(v)
	}
	l := &Limiter{limiters: map[string]*limiter.Limiter{}, close: func() error { return nil }}
	var store limiter.Store
	if redisURL != "" {
		opt, err := redis.ParseURL(redisURL)
		if err != nil {
			return nil, fmt.Errorf("REDIS_URL: %w", err)
		}
		client := redis.NewClient(opt)
		if err := client.Ping(context.Background()).Err(); err != nil {
			client.Close()
			return nil, fmt.Errorf("REDIS_URL: %w", err)
		}
		if store, err = sredis.NewStoreWithOptions(client, limiter.StoreOptions{Prefix: "dp:ratelimit"}); err != nil {
			client.Close()
			return nil, err
		}
		l.close = client.Close
	} else {
		store = memory.NewStore()
	}
	for cat, f := range rates {
		r, err := limiter.NewRateFromFormatted(f)
		if err != nil {
			return nil, fmt.Errorf("rate limit %s=%s: %w", cat, f, err)
		}
		l.limiters[cat] = limiter.New(store, r)
	}
	return l, nil
}

// Take counts one request of key in category. An unknown category counts as default.
func (l *Limiter) Take(ctx context.Context, category, key string) (Result, error) {
	lim, ok := l.limiters[category]
	if !ok {
		category, lim = "default", l.limiters["default"]
	}
	return lim.Get(ctx, category+":"+key)
}

// Close releases the Redis client, if any.
func (l *Limiter) Close() error { return l.close() }
