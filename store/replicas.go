package store

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
)

// Reads from hot standbys (DATABASE_READ_URL). A read that need not see other callers'
// writes of the last moment (record lists and reads, exports, project queries, dashboard
// data) asks Reader for its database: a standby that is up, lags the primary by less than
// the limit, and has replayed its caller's own latest write; otherwise the primary.
//
// Read-your-writes is by LSN: after a caller's write the primary's WAL position is kept for
// that caller (Wrote, before the answer is sent), and a standby serves the caller's reads
// only once its replay position has reached it. This costs one tiny query per write and
// nothing per read while the standbys keep up; stickiness (every read of a caller to the
// primary for some seconds after a write) would send all reads of a busy writer to the
// primary and still guess at the lag. The positions are kept in this process and, with
// REDIS_URL, in Redis for every process (replicas_shared.go); without Redis a write made
// through another process is seen through this one after the standby's lag (at most
// DP_READ_MAX_LAG).

// standby is one hot standby and what its health check last saw.
type standby struct {
	db     *sqlx.DB
	mu     sync.Mutex
	up     bool
	replay uint64 // pg_last_wal_replay_lsn()
	lag    time.Duration
}

// replicas are the standbys of a Store and the callers' latest writes.
type replicas struct {
	list   []*standby
	maxLag time.Duration
	log    *slog.Logger
	next   atomic.Uint32 // round robin
	heads  []headAt      // the primary's positions at the last checks, oldest first (check's only)
	mu     sync.Mutex
	wrote  map[string]written // caller → their latest write
	shared *sharedWrites      // nil without Redis
}

type written struct {
	lsn uint64
	at  time.Time
}

// writtenTTL is how long a caller's write position is kept: past it any standby in use has
// replayed it (one that lags more is not used).
const writtenTTL = 5 * time.Minute

// healthEvery is how often each standby's position and lag are checked.
const healthEvery = 500 * time.Millisecond

type readerKey struct{}

// WithReader marks ctx as a caller's (a user id): Reader then waits for that caller's writes.
func WithReader(ctx context.Context, caller string) context.Context {
	return context.WithValue(ctx, readerKey{}, caller)
}

// AddStandbys opens the standbys at urls and checks them until ctx ends; a standby that
// lags more than maxLag, or does not answer, is not read from until it recovers. With
// redisURL, callers' write positions are shared with the other processes through it.
func (s *Store) AddStandbys(ctx context.Context, urls []string, maxLag time.Duration, redisURL string, log *slog.Logger) error {
	r := &replicas{maxLag: maxLag, log: log, wrote: map[string]written{}}
	if redisURL != "" {
		shared, err := shareWrites(redisURL)
		if err != nil {
			return err
		}
		r.shared = shared
	}
	for _, u := range urls {
		st, err := open(u) // not connected yet: a standby down at start is skipped, not fatal
		if err != nil {
			return err
		}
		r.list = append(r.list, &standby{db: st.DB})
	}
	s.replicas = r
	r.check(ctx, s.DB)
	go func() {
		t := time.NewTicker(healthEvery)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				for _, sb := range r.list {
					_ = sb.db.Close()
				}
				if r.shared != nil {
					_ = r.shared.client.Close()
				}
				return
			case <-t.C:
				r.check(ctx, s.DB)
			}
		}
	}()
	return nil
}

// check reads the primary's WAL position, then each standby's replay position. A standby's
// lag is how long ago the primary was at a position the standby has replayed: measured
// against the positions of the last checks, so it is right to within one check's interval
// whether the primary is idle or busy.
func (r *replicas) check(ctx context.Context, primary *sqlx.DB) {
	var head string
	pctx, cancel := context.WithTimeout(ctx, time.Second)
	err := primary.GetContext(pctx, &head, `SELECT pg_current_wal_lsn()::text`)
	cancel()
	now := time.Now()
	if err == nil {
		r.heads = append(r.heads, headAt{parseLSN(head), now})
		if len(r.heads) > maxHeads {
			r.heads = r.heads[1:]
		}
	}
	for _, sb := range r.list {
		var recovering bool
		var replay string
		sctx, cancel := context.WithTimeout(ctx, time.Second)
		serr := sb.db.QueryRowxContext(sctx, `SELECT pg_is_in_recovery(), coalesce(pg_last_wal_replay_lsn()::text, '0/0')`).Scan(&recovering, &replay)
		cancel()
		sb.mu.Lock()
		was := sb.up
		sb.up = serr == nil && recovering && err == nil
		if sb.up {
			sb.replay = parseLSN(replay)
			sb.lag = now.Sub(r.heads[0].at) + healthEvery // behind every position kept
			for i := len(r.heads) - 1; i >= 0; i-- {
				if sb.replay >= r.heads[i].lsn {
					sb.lag = now.Sub(r.heads[i].at)
					break
				}
			}
		}
		usable := sb.up && sb.lag <= r.maxLag
		sb.mu.Unlock()
		if was && !sb.up && ctx.Err() == nil {
			r.log.Warn("a standby is not read from: it does not answer, or is not in recovery", "error", errors.Join(serr, err))
		} else if !was && sb.up {
			r.log.Info("reading from a standby", "usable", usable)
		}
	}
}

// headAt is the primary's WAL position at a check.
type headAt struct {
	lsn uint64
	at  time.Time
}

// maxHeads is how many checks' positions are kept: lags up to a minute are measured.
const maxHeads = int(time.Minute / healthEvery)

// parseLSN reads PostgreSQL's text form of a WAL position (16/B374D848).
func parseLSN(s string) uint64 {
	var hi, lo uint64
	i := 0
	for ; i < len(s) && s[i] != '/'; i++ {
		hi = hi<<4 | hexDigit(s[i])
	}
	for i++; i < len(s); i++ {
		lo = lo<<4 | hexDigit(s[i])
	}
	return hi<<32 | lo
}

func hexDigit(c byte) uint64 {
	switch {
	case c >= '0' && c <= '9':
		return uint64(c - '0')
	case c >= 'a' && c <= 'f':
		return uint64(c-'a') + 10
	case c >= 'A' && c <= 'F':
		return uint64(c-'A') + 10
	}
	return 0
}

// Wrote keeps the primary's WAL position as ctx's caller's latest write: call it after the
// write commits and before its answer is sent. Without standbys it does nothing.
func (s *Store) Wrote(ctx context.Context) {
	r := s.replicas
	caller, _ := ctx.Value(readerKey{}).(string)
	if r == nil || caller == "" {
		return
	}
	// The insert position: past the caller's commit record even when that commit did not wait
	// for its flush (synchronous_commit off), when the write position may still be short of it.
	var lsn string
	if err := s.DB.GetContext(context.WithoutCancel(ctx), &lsn, `SELECT pg_current_wal_insert_lsn()::text`); err != nil {
		lsn = "FFFFFFFF/FFFFFFFF" // unknown: the caller's reads go to the primary for a while
	}
	now := time.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.wrote) > 100000 { // forget the expired ones
		for k, w := range r.wrote {
			if now.Sub(w.at) > writtenTTL {
				delete(r.wrote, k)
			}
		}
	}
	r.wrote[caller] = written{lsn: parseLSN(lsn), at: now}
	if r.shared != nil {
		r.shared.put(ctx, caller, parseLSN(lsn), r)
	}
}

// Reader is the database for a read that need not see others' latest writes: a standby
// that is up, lags less than DP_READ_MAX_LAG and has replayed ctx's caller's latest write;
// otherwise the primary, s.DB. Without standbys it is s.DB.
func (s *Store) Reader(ctx context.Context) *sqlx.DB {
	r := s.replicas
	if r == nil || len(r.list) == 0 {
		return s.DB
	}
	var need uint64
	if caller, _ := ctx.Value(readerKey{}).(string); caller != "" {
		r.mu.Lock()
		if w, ok := r.wrote[caller]; ok && time.Since(w.at) < writtenTTL {
			need = w.lsn
		}
		r.mu.Unlock()
		if r.shared != nil {
			lsn, ok := r.shared.get(ctx, caller, r)
			if !ok {
				return s.DB
			}
			need = max(need, lsn)
		}
	}
	start := int(r.next.Add(1))
	for i := range r.list {
		sb := r.list[(start+i)%len(r.list)]
		sb.mu.Lock()
		up, lag, replay := sb.up, sb.lag, sb.replay
		sb.mu.Unlock()
		if !up || lag > r.maxLag {
			continue
		}
		if replay < need { // the last check is older than the write: look again
			var now string
			cctx, cancel := context.WithTimeout(ctx, time.Second)
			err := sb.db.GetContext(cctx, &now, `SELECT coalesce(pg_last_wal_replay_lsn()::text, '0/0')`)
			cancel()
			if err != nil || parseLSN(now) < need {
				continue
			}
		}
		return sb.db
	}
	return s.DB
}

// OnReader runs read on Reader(ctx). When that was a standby and the read failed as only a
// standby read can — the standby went away, or has not replayed an object made a moment ago
// (a table, column, role or schema) — read runs again on the primary. read must not have
// answered anything yet when it fails.
func (s *Store) OnReader(ctx context.Context, read func(db *sqlx.DB) error) error {
	db := s.Reader(ctx)
	err := read(db)
	if err == nil || db == s.DB || ctx.Err() != nil || !standbyMiss(err) {
		return err
	}
	for _, sb := range s.replicas.list {
		if sb.db == db && Unavailable(err) {
			sb.mu.Lock()
			sb.up = false // until the next check finds it answering
			sb.mu.Unlock()
		}
	}
	return read(s.DB)
}

// standbyMiss is an error a read on a standby can meet where the primary's would not.
func standbyMiss(err error) bool {
	if Unavailable(err) {
		return true
	}
	var pe *pq.Error
	if !errors.As(err, &pe) {
		return false
	}
	switch pe.Code {
	// undefined table, column, object (role), schema; a grant not replayed yet; a recovery conflict
	case "42P01", "42703", "42704", "3F000", "42501", "40001":
		return true
	case "22023": // SET ROLE to a query role not replayed yet
		return strings.HasPrefix(pe.Message, "role ")
	}
	return false
}
