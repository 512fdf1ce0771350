package store

import (
	"context"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// Callers' write positions shared through Redis (REDIS_URL), so that read-your-writes holds
// across server processes: behind a load balancer a caller's next read may reach another
// process than its write did. Each write sets the caller's key to the greater of its value and
// the write's position; each read of a caller (only with standbys) reads it, one round trip.
// While Redis does not answer, reads of callers go to the primary: slower, never stale.

// sharedTimeout bounds each Redis call; sharedRetry is how long reads go to the primary after
// Redis failed before it is tried again.
const (
	sharedTimeout = 250 * time.Millisecond
	sharedRetry   = 5 * time.Second
)

// keepGreater sets KEYS[1] to ARGV[1] unless it holds a greater position (positions are
// 16 hexadecimal digits, so they compare as strings), and makes it expire in ARGV[2] ms.
var keepGreater = redis.NewScript(`
local cur = redis.call('GET', KEYS[1])
if (not cur) or cur < ARGV[1] then
  return redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
end
return redis.call('PEXPIRE', KEYS[1], ARGV[2])`)

type sharedWrites struct {
	client    *redis.Client
	downUntil atomic.Int64 // Unix nanoseconds
}

// shareWrites connects to the Redis at url (lazily: a Redis down at start is not fatal).
func shareWrites(url string) (*sharedWrites, error) {
	opt, err := redis.ParseURL(url)
	if err != nil {
		return nil, fmt.Errorf("REDIS_URL: %w", err)
	}
	opt.DialTimeout, opt.ReadTimeout, opt.WriteTimeout, opt.MaxRetries = sharedTimeout, sharedTimeout, sharedTimeout, -1
	return &sharedWrites{client: redis.NewClient(opt)}, nil
}

func writtenKey(caller string) string { return "dp:wrote:" + caller }

// put shares a caller's write position. While Redis is taken for down it is not tried: a write
// made then is not shared (reads of callers go to the primary meanwhile, and after it the
// standbys' lag bounds how late another process sees it).
func (w *sharedWrites) put(ctx context.Context, caller string, lsn uint64, r *replicas) {
	if time.Now().UnixNano() < w.downUntil.Load() {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), sharedTimeout)
	defer cancel()
	err := keepGreater.Run(ctx, w.client, []string{writtenKey(caller)}, fmt.Sprintf("%016X", lsn), writtenTTL.Milliseconds()).Err()
	if err != nil {
		w.failed(err, r)
	}
}

// get is the caller's latest write position of any process; ok is false when Redis does not
// answer (the caller's read must then go to the primary).
func (w *sharedWrites) get(ctx context.Context, caller string, r *replicas) (lsn uint64, ok bool) {
	if time.Now().UnixNano() < w.downUntil.Load() {
		return 0, false
	}
	cctx, cancel := context.WithTimeout(ctx, sharedTimeout)
	defer cancel()
	v, err := w.client.Get(cctx, writtenKey(caller)).Result()
	switch {
	case err == redis.Nil:
		return 0, true
	case err != nil:
		if ctx.Err() == nil { // not the caller gone
			w.failed(err, r)
		}
		return 0, false
	}
	n, err := strconv.ParseUint(v, 16, 64)
	return n, err == nil
}

func (w *sharedWrites) failed(err error, r *replicas) {
	if time.Now().UnixNano() >= w.downUntil.Load() { // one warning per retry period
		r.log.Warn("read-your-writes: Redis unreachable; callers' reads go to the primary for now", "error", err, "retry_in", sharedRetry.String())
	}
	w.downUntil.Store(time.Now().Add(sharedRetry).UnixNano())
}
