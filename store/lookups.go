package store

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lib/pq"
)

// lookups keeps the record API's dataset-and-membership lookups (DatasetForRecords): it is
// the one database round trip of a record request besides the request's own query, and the
// same few datasets are asked for all the time.
//
// An answer is kept only while nothing may have changed it: triggers on platform.datasets
// and platform.memberships notify `control_plane` on every change (from any replica, a job, or
// SQL run by hand), and this replica also says so itself after each control-plane write it
// makes (ControlPlaneChanged), before the client sees the answer. Either bumps a generation;
// an answer read under an older generation is not used. Without a listening connection (not
// started yet, or lost) nothing is kept.
type lookups struct {
	gen       atomic.Uint64
	listening atomic.Bool
	mu        sync.Mutex
	m         map[[2]string]lookup
}

type lookup struct {
	d   Dataset
	gen uint64
	at  time.Time
}

const (
	// lookupMaxAge bounds how long an answer is trusted even when no change is notified.
	lookupMaxAge = time.Minute
	// lookupMax bounds the answers kept (a few hundred bytes each).
	lookupMax = 10000
	// ControlPlaneChannel is the notification channel of the triggers.
	ControlPlaneChannel = "control_plane"
)

func (l *lookups) get(id, user string) (*Dataset, bool) {
	if !l.listening.Load() {
		return nil, false
	}
	l.mu.Lock()
	e, ok := l.m[[2]string{id, user}]
	l.mu.Unlock()
	if !ok || e.gen != l.gen.Load() || time.Since(e.at) > lookupMaxAge {
		return nil, false
	}
	d := e.d
	return &d, true
}

// put keeps d as read under generation gen (read before the query: a change notified while
// the query ran makes the answer unusable at once).
func (l *lookups) put(id, user string, d *Dataset, gen uint64) {
	if !l.listening.Load() || gen != l.gen.Load() {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.m == nil || len(l.m) >= lookupMax {
		l.m = map[[2]string]lookup{}
	}
	l.m[[2]string{id, user}] = lookup{d: *d, gen: gen, at: time.Now()}
}

// ControlPlaneChanged says that this replica has just changed datasets or memberships: no
// answer read before is used again. Other replicas learn it from the triggers' notification.
func (s *Store) ControlPlaneChanged() { s.look.gen.Add(1) }

// ControlPlaneGeneration changes whenever datasets, memberships, API keys or users' status may
// have changed (or notifications may have been missed): long-lived streams re-check their
// caller's access when it moves.
func (s *Store) ControlPlaneGeneration() uint64 { return s.look.gen.Load() }

// WatchControlPlane listens for the triggers' notifications on the database at url until ctx
// ends; the lookups are kept only while it listens.
func (s *Store) WatchControlPlane(ctx context.Context, url string, log *slog.Logger) {
	if url == "" {
		return
	}
	events := func(ev pq.ListenerEventType, err error) {
		// Whatever happened to the connection, notifications may have been missed.
		s.look.gen.Add(1)
		switch ev {
		case pq.ListenerEventReconnected: // listening again
			s.look.listening.Store(true)
		case pq.ListenerEventDisconnected, pq.ListenerEventConnectionAttemptFailed:
			s.look.listening.Store(false)
		}
	}
	l := pq.NewListener(url, time.Second, time.Minute, events)
	if err := l.Listen(ControlPlaneChannel); err != nil {
		log.Warn("control-plane notifications unavailable; dataset lookups are not cached", "error", err)
		s.look.listening.Store(false)
		_ = l.Close()
		return
	}
	s.look.gen.Add(1)
	s.look.listening.Store(true)
	go func() {
		defer func() { _ = l.Close() }()
		defer s.look.listening.Store(false)
		for {
			select {
			case <-ctx.Done():
				return
			case <-l.Notify: // a change, or nil after a reconnection
				s.look.gen.Add(1)
			}
		}
	}()
}
