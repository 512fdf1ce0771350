// Package changes reads the record change log (platform.record_changes, written by a trigger
// on each dataset table) and wakes change-stream subscribers when PostgreSQL notifies a new
// change. The table is the truth: a notification only says "look again", so a subscriber on
// any replica, or one that reconnects with the last id it saw, misses nothing.
package changes

import (
	"context"
	"encoding/json"
	"log/slog"
	"runtime"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
)

// Change is one logged change of a record.
type Change struct {
	ID        int64            `db:"id"`
	RecordID  string           `db:"record_id"` // the record's key, as text
	Op        string           `db:"op"`
	Record    *json.RawMessage `db:"record"`
	Changes   *json.RawMessage `db:"changes"`
	ChangedAt time.Time        `db:"changed_at"`
	// Memo is shared by the subscribers given this change by a Hub (nil otherwise).
	Memo *Memo `db:"-"`
}

// Since reads up to limit changes of a dataset after event afterID, oldest first. An event's
// id is its change's seq, given at commit in commit order per dataset (migration 00033): a
// change numbered below one already read has committed before it, so none is passed over.
func Since(ctx context.Context, q sqlx.QueryerContext, datasetID string, afterID int64, limit int) ([]Change, error) {
	var out []Change
	err := sqlx.SelectContext(ctx, q, &out, `SELECT seq AS id, record_id, op, record, changes, changed_at FROM platform.record_changes
		WHERE dataset_id = $1 AND seq > $2 ORDER BY seq LIMIT $3`, datasetID, afterID, limit)
	return out, err
}

// Latest is the id of a dataset's newest change (a new subscriber starts after it).
func Latest(ctx context.Context, q sqlx.QueryerContext, datasetID string) (int64, error) {
	var id int64
	err := sqlx.GetContext(ctx, q, &id, `SELECT coalesce(max(seq), 0) FROM platform.record_changes WHERE dataset_id = $1`, datasetID)
	return id, err
}

// Hub fans a dataset's changes out to its subscribers in this process. One feed per dataset
// with subscribers reads the change log once per notification (and every feedPoll, which
// covers a lost notification) and keeps the newest changes in memory; a subscriber reads
// them from there (Hub.Since) and falls back to the change log itself only when it is behind
// what the feed holds (resumed with an old Last-Event-ID) or ahead of it. So the database
// work of a change is one query per process and dataset, whatever the number of subscribers,
// and the table stays the truth: a notification only says "look again".
type Hub struct {
	url   string
	log   *slog.Logger
	live  atomic.Bool // the listener runs: feeds are refreshed, so subscribers may read them
	mu    sync.RWMutex
	feeds map[string]*feed
}

// feedKeep is how many of a dataset's newest changes its feed keeps; feedPoll how often a feed
// reads the change log without a notification; feedBatch how many changes one read takes;
// feedEvery the least time from the end of one delivery to the subscribers to the next: under
// a steady stream of changes each subscriber then is written to once per feedEvery, with
// every change since, rather than once per change (a first change after a quiet spell goes
// out at once). Each delivery costs a system call per subscriber: when one takes longer than
// feedEvery, the next waits as long as it took (up to feedMaxEvery), so that a feed delivers
// at most half of the time on any machine and under any other load, what would be late
// arrives a little later together rather than queued behind writes the process cannot make
// in time, and the space after a delivery leaves the processors to the process's other
// requests.
const (
	feedKeep     = 4096
	feedPoll     = 2 * time.Second
	feedBatch    = 1000
	feedEvery    = 100 * time.Millisecond
	feedMaxEvery = 500 * time.Millisecond
	// feedActive subscribers at work on a wake-up at once, or more when they take longer
	// than feedActiveWait (wakeAll).
	feedActive     = 64
	feedActiveWait = 20 * time.Millisecond
)

// every is the least time between two wake-ups of the feed's subscribers (f.mu held).
func (f *feed) every() time.Duration {
	return min(max(f.took, feedEvery), feedMaxEvery)
}

// feed is the shared reader of one dataset's changes.
type feed struct {
	ds   string
	mu   sync.RWMutex
	subs map[chan struct{}]*Subscription
	q    sqlx.QueryerContext // the database subscribers read from (the feed reads with it too)
	// buf holds every change with base < seq <= head, oldest first, when ready.
	ready      bool
	base, head int64
	buf        []Change
	sinks      map[*Subscription]Sink // subscribers the feed writes to itself (Attach)
	waking     []chan struct{}        // the subscribers being woken (reused; one refresh runs at a time)
	handled    chan struct{}          // a subscriber woken has done its work (Subscription.Handled)
	reading    bool                   // a read is under way
	again      bool                   // and another was asked for while it ran
	woke       time.Time
	took       time.Duration // how long the last delivery took (deliver and wakeAll)
}

// Memo holds what a reader derives from a change once for all the subscribers sharing it (a
// rendered event, say), keyed by what it was derived with: a few keys (streams opened before
// and after a schema change hold different tables), each made once.
type Memo struct {
	mu   sync.Mutex
	last atomic.Pointer[memoed]
	made []*memoed // at most memoKeys; a further key is derived each time it is asked for
}

type memoed struct{ key, val any }

const memoKeys = 4

// Get is the value derived under key, made by build when there is none yet for that key.
func (m *Memo) Get(key any, build func() any) any {
	if m == nil {
		return build()
	}
	if v := m.last.Load(); v != nil && v.key == key {
		return v.val
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, v := range m.made {
		if v.key == key {
			m.last.Store(v)
			return v.val
		}
	}
	v := &memoed{key, build()}
	if len(m.made) < memoKeys {
		m.made = append(m.made, v)
	}
	m.last.Store(v)
	return v.val
}

// NewHub makes a hub listening on the database at url ("" : no notifications; subscribers
// then read the change log themselves at every poll).
func NewHub(url string, log *slog.Logger) *Hub {
	return &Hub{url: url, log: log, feeds: map[string]*feed{}}
}

// Start listens until ctx ends.
func (h *Hub) Start(ctx context.Context) {
	if h.url == "" {
		return
	}
	l := pq.NewListener(h.url, time.Second, time.Minute, nil)
	if err := l.Listen("record_changes"); err != nil {
		h.log.Warn("record change notifications unavailable; streams poll", "error", err)
		_ = l.Close()
		return
	}
	h.live.Store(true)
	go func() {
		defer func() { _ = l.Close() }()
		defer h.live.Store(false)
		poll := time.NewTicker(feedPoll)
		defer poll.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-poll.C:
				h.wakeAll()
			case n := <-l.Notify:
				if n == nil { // reconnected: anything may have been missed
					h.wakeAll()
				} else {
					h.wake(n.Extra)
				}
			}
		}
	}()
}

// Subscription is a subscriber of a dataset's changes: C receives (at most one pending)
// wake-up when the dataset's feed has read new changes (or, without notifications, never:
// the subscriber polls). A subscriber calls Handled once it has written what a wake-up
// brought, and Close when it ends.
type Subscription struct {
	C    <-chan struct{}
	ch   chan struct{}
	h    *Hub
	f    *feed
	woke bool
	// last is the newest change given to the sink, while attached (the feed's own).
	last     int64
	attached atomic.Bool
}

// Subscribe subscribes to the dataset's changes.
func (h *Hub) Subscribe(datasetID string) *Subscription {
	ch := make(chan struct{}, 1)
	h.mu.Lock()
	f := h.feeds[datasetID]
	if f == nil {
		f = &feed{ds: datasetID, subs: map[chan struct{}]*Subscription{}, sinks: map[*Subscription]Sink{}, handled: make(chan struct{}, feedActive)}
		h.feeds[datasetID] = f
	}
	s := &Subscription{C: ch, ch: ch, h: h, f: f}
	f.mu.Lock()
	f.subs[ch] = s
	f.mu.Unlock()
	h.mu.Unlock()
	return s
}

// Woken marks a wake-up received from C; Handled says it has been dealt with.
func (s *Subscription) Woken() { s.woke = true }

// Handled tells the feed that this subscriber is done with its wake-up, so that it wakes
// the next one (see feedActive).
func (s *Subscription) Handled() {
	if s.woke {
		s.woke = false
		select {
		case s.f.handled <- struct{}{}:
		default:
		}
	}
}

// Close unsubscribes.
func (s *Subscription) Close() {
	s.h.mu.Lock()
	s.f.mu.Lock()
	delete(s.f.subs, s.ch)
	delete(s.f.sinks, s)
	s.attached.Store(false)
	if len(s.f.subs) == 0 && s.h.feeds[s.f.ds] == s.f {
		delete(s.h.feeds, s.f.ds)
	}
	s.f.mu.Unlock()
	s.h.mu.Unlock()
	select { // a wake-up sent and not taken counts as handled
	case <-s.ch:
		s.woke = true
	default:
	}
	s.Handled()
}

// Since is changes.Since for a subscriber of the dataset: from its feed's memory when the
// feed holds every change after afterID, else from the change log (q).
func (h *Hub) Since(ctx context.Context, q sqlx.QueryerContext, datasetID string, afterID int64, limit int) ([]Change, error) {
	h.mu.RLock()
	f := h.feeds[datasetID]
	h.mu.RUnlock()
	if f == nil || !h.live.Load() {
		return Since(ctx, q, datasetID, afterID, limit)
	}
	f.mu.RLock()
	if f.ready && afterID >= f.base && afterID <= f.head {
		// buf is sorted by seq: the first change after afterID, and up to limit from there.
		i := sort.Search(len(f.buf), func(i int) bool { return f.buf[i].ID > afterID })
		out := f.buf[i:min(len(f.buf), i+limit)]
		f.mu.RUnlock()
		return out, nil
	}
	f.mu.RUnlock()
	out, err := Since(ctx, q, datasetID, afterID, limit)
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	if !f.ready { // what was read is every change in (afterID, its last]: the feed starts there
		f.ready, f.base, f.head, f.buf, f.q = true, afterID, afterID, nil, q
		f.add(out)
	}
	f.mu.Unlock()
	return out, nil
}

// add appends changes read after head (f.mu held) and drops the oldest beyond feedKeep.
func (f *feed) add(batch []Change) {
	for _, c := range batch {
		c.Memo = &Memo{}
		f.buf = append(f.buf, c)
		f.head = c.ID
	}
	if n := len(f.buf) - feedKeep; n > 0 {
		f.base = f.buf[n-1].ID
		f.buf = append([]Change(nil), f.buf[n:]...) // a new array: subscribers may hold the old
	}
}

// refresh reads the change log after the feed's head until it has read everything, then
// wakes the subscribers; one read at a time, another one after it when asked meanwhile.
func (f *feed) refresh() {
	f.mu.Lock()
	if f.reading {
		f.again = true
		f.mu.Unlock()
		return
	}
	f.reading = true
	f.mu.Unlock()
	for {
		f.mu.Lock()
		wait := time.Until(f.woke.Add(f.every()))
		f.mu.Unlock()
		if wait > 0 {
			time.Sleep(wait)
		}
		f.mu.Lock()
		f.again = false
		ready, after, q := f.ready, f.head, f.q
		f.mu.Unlock()
		more := false
		if ready && q != nil {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			batch, err := Since(ctx, q, f.ds, after, feedBatch)
			cancel()
			f.mu.Lock()
			if err != nil { // subscribers read the change log themselves until one restarts the feed
				f.ready, f.buf = false, nil
				for sub := range f.sinks {
					f.detach(sub)
				}
			} else if f.ready && f.head == after {
				f.add(batch)
				more = len(batch) == feedBatch
			}
			f.mu.Unlock()
		}
		start := time.Now()
		f.deliver()
		// The wake-ups are sent without the feed's lock: each subscriber woken reads the feed
		// (RLock) at once, and would otherwise wait for every other one to be woken.
		f.mu.Lock()
		f.woke = time.Now() // the next delivery leaves the processors this long for other work
		f.waking = f.waking[:0]
		for ch, s := range f.subs {
			if !s.attached.Load() { // the feed has delivered to it
				f.waking = append(f.waking, ch)
			}
		}
		waking := f.waking
		f.mu.Unlock()
		f.wakeAll(waking, feedActiveWait)
		f.mu.Lock()
		f.took = time.Since(start)
		if !more && !f.again {
			f.reading = false
			f.mu.Unlock()
			return
		}
		f.mu.Unlock()
	}
}

// wakeAll wakes the subscribers, at most feedActive at work at once: when that many are, the
// next ones are woken once half of them say they are done (Handled), or after wait (the
// feed's is feedActiveWait) when they do not. Thousands woken together would each queue for
// the processor, and every other request of the process (the writes whose changes they await
// among them) behind them all; the feed itself waits for a few answers at a time, not one by
// one.
func (f *feed) wakeAll(subs []chan struct{}, wait time.Duration) {
	for len(f.handled) > 0 { // late word of the previous round
		<-f.handled
	}
	var t *time.Timer
	active := 0
	for _, ch := range subs {
		if active >= feedActive {
			if t == nil {
				t = time.NewTimer(wait)
				defer t.Stop()
			} else {
				t.Reset(wait)
			}
			for active > feedActive/2 {
				select {
				case <-f.handled:
					active--
				case <-t.C:
					active = feedActive / 2 // some are slow to write to their clients: go on
				}
			}
		}
		select {
		case ch <- struct{}{}:
			active++
		default: // a wake-up is pending there already
		}
	}
}

func (h *Hub) wake(datasetID string) {
	h.mu.RLock()
	f := h.feeds[datasetID]
	h.mu.RUnlock()
	if f != nil {
		go f.refresh()
	}
}

func (h *Hub) wakeAll() {
	h.mu.Lock()
	fs := make([]*feed, 0, len(h.feeds))
	for _, f := range h.feeds {
		fs = append(fs, f)
	}
	h.mu.Unlock()
	for _, f := range fs {
		go f.refresh()
	}
}

// A Sink is a subscriber the feed writes to itself: at every read of new changes, a few of
// the feed's goroutines hand each attached sink the changes it has not had, instead of waking
// a goroutine per subscriber to fetch them. With thousands of subscribers the wake-ups (a
// channel, a scheduler's turn, a select) cost as much as the writes to the clients.
type Sink interface {
	// Deliver writes changes (the sink's next ones, oldest first) to the subscriber without
	// waiting long: false when it did not, or could not without waiting (the subscriber's own
	// goroutine then takes over, woken through C, from the last change it was given). The
	// batch is empty when the feed looked and found nothing new (at least every feedPoll):
	// false then asks the subscriber's goroutine to look at the subscription itself.
	Deliver(batch []Change) bool
}

// feedWriters is how many goroutines of a feed deliver to its sinks at once, per processor.
const feedWriters = 2

// Attach hands the subscription's delivery to the feed, from change last on, when the feed
// is live and last is its newest change (the subscriber has had every change it holds);
// false otherwise, and the subscriber goes on reading itself. Attached, the sink is given
// every change after last until Deliver says false, then the subscription is detached
// (Attached false) and woken.
func (s *Subscription) Attach(sink Sink, last int64) bool {
	if !s.h.live.Load() {
		return false
	}
	f := s.f
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.ready || last != f.head || !s.open() {
		return false
	}
	s.last = last
	f.sinks[s] = sink
	s.attached.Store(true)
	return true
}

// open says the subscription is still the feed's (f.mu held).
func (s *Subscription) open() bool {
	_, ok := s.f.subs[s.ch]
	return ok
}

// Attached says the feed delivers to the subscription's sink.
func (s *Subscription) Attached() bool { return s.attached.Load() }

// Detach takes delivery back from the feed, without a wake-up. A delivery already under way
// may still reach the sink: it ignores changes it has had, and what comes while it is not
// attached.
func (s *Subscription) Detach() {
	s.f.mu.Lock()
	defer s.f.mu.Unlock()
	delete(s.f.sinks, s)
	s.attached.Store(false)
}

// detach takes delivery back from the feed and wakes the subscriber (f.mu held).
func (f *feed) detach(s *Subscription) {
	delete(f.sinks, s)
	s.attached.Store(false)
	select {
	case s.ch <- struct{}{}:
	default:
	}
}

// deliver gives every attached sink the changes after its last (none, to one that has had
// them all: it may decline to be looked at), feedWriters goroutines per processor at a time (a client slow to take its bytes holds up one of them, not the feed);
// the sinks that decline are detached.
func (f *feed) deliver() {
	type job struct {
		s     *Subscription
		sink  Sink
		batch []Change
	}
	f.mu.RLock()
	jobs := make([]job, 0, len(f.sinks))
	for s, sink := range f.sinks {
		i := sort.Search(len(f.buf), func(i int) bool { return f.buf[i].ID > s.last })
		jobs = append(jobs, job{s, sink, f.buf[i:]})
	}
	f.mu.RUnlock()
	if len(jobs) == 0 {
		return
	}
	var next atomic.Int64
	declined := make([]bool, len(jobs))
	var wg sync.WaitGroup
	for range min(len(jobs), feedWriters*runtime.GOMAXPROCS(0)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1) - 1); i < len(jobs); i = int(next.Add(1) - 1) {
				declined[i] = !jobs[i].sink.Deliver(jobs[i].batch)
			}
		}()
	}
	wg.Wait()
	f.mu.Lock()
	for i, j := range jobs {
		switch {
		case f.sinks[j.s] == nil: // detached meanwhile
		case declined[i]:
			f.detach(j.s)
		case len(j.batch) > 0: // not below a last set by an Attach meanwhile
			j.s.last = max(j.s.last, j.batch[len(j.batch)-1].ID)
		}
	}
	f.mu.Unlock()
}
