package changes

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestWakeAllBounded: a feed wakes every subscriber, never more than feedActive of them at
// work at once while they say when they are done within its wait (a wait no loaded machine
// outlasts here); subscribers that never say so do not stop the others from being woken.
func TestWakeAllBounded(t *testing.T) {
	f := &feed{handled: make(chan struct{}, feedActive)}
	subs := make([]chan struct{}, 10*feedActive)
	var active, most, woken atomic.Int32
	var wg sync.WaitGroup
	for i := range subs {
		subs[i] = make(chan struct{}, 1)
		wg.Add(1)
		go func(ch chan struct{}) {
			defer wg.Done()
			<-ch
			woken.Add(1)
			n := active.Add(1)
			for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
			}
			time.Sleep(time.Millisecond)
			active.Add(-1)
			select { // as Subscription.Handled
			case f.handled <- struct{}{}:
			default:
			}
		}(subs[i])
	}
	f.wakeAll(subs, time.Minute)
	wg.Wait()
	if woken.Load() != int32(len(subs)) || most.Load() > feedActive {
		t.Fatalf("%d of %d woken, at most %d at work at once (bound %d)", woken.Load(), len(subs), most.Load(), feedActive)
	}

	// Nobody answers: every one is woken all the same, feedActive/2 per feedActiveWait.
	silent := make([]chan struct{}, 3*feedActive)
	for i := range silent {
		silent[i] = make(chan struct{}, 1)
	}
	start := time.Now()
	f.wakeAll(silent, feedActiveWait)
	for i, ch := range silent {
		if len(ch) != 1 {
			t.Fatalf("subscriber %d not woken", i)
		}
	}
	if d := time.Since(start); d > 20*feedActiveWait {
		t.Fatalf("waking %d silent subscribers took %v", len(silent), d)
	}
}

// TestSubscriptionClose: a subscription closed with a wake-up pending counts it as handled,
// so the feed does not wait for it; closing the last one removes the dataset's feed.
func TestSubscriptionClose(t *testing.T) {
	h := NewHub("", nil)
	s := h.Subscribe("ds_x")
	s.ch <- struct{}{} // as the feed would
	s.Close()
	if len(s.f.handled) != 1 {
		t.Fatal("a pending wake-up of a closed subscription was not counted as handled")
	}
	if len(h.feeds) != 0 {
		t.Fatal("the feed of a dataset without subscribers was kept")
	}
	// Handled without a wake-up received says nothing.
	s2 := h.Subscribe("ds_x")
	s2.Handled()
	if len(s2.f.handled) != 0 {
		t.Fatal("Handled counted a wake-up never received")
	}
	s2.Close()
}

// sink records what a feed delivers to it and when; it declines when decline is set, waits
// for hold (when not nil) before taking a batch, and takes delay over it.
type sink struct {
	mu      sync.Mutex
	got     []int64
	at      []time.Time
	decline bool
	hold    chan struct{}
	delay   time.Duration
}

func (s *sink) Deliver(batch []Change) bool {
	if s.hold != nil {
		<-s.hold
	}
	s.mu.Lock()
	s.at = append(s.at, time.Now())
	s.mu.Unlock()
	time.Sleep(s.delay)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.decline {
		return false
	}
	for _, c := range batch {
		s.got = append(s.got, c.ID)
	}
	return true
}

func (s *sink) ids() []int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]int64(nil), s.got...)
}

// TestDeliverToSinks: a feed gives each attached sink the changes after the last it had,
// once; a sink is attached only when it has had every change the feed holds; one that
// declines, a batch or being looked at with nothing new, is detached and its subscriber
// woken; one slow to take its batch does not hold up the others.
func TestDeliverToSinks(t *testing.T) {
	h := NewHub("", nil)
	h.live.Store(true)
	subs := make([]*Subscription, 4)
	for i := range subs {
		subs[i] = h.Subscribe("ds_x")
	}
	f := subs[0].f
	f.ready, f.base, f.head = true, 0, 0
	f.add([]Change{{ID: 1}, {ID: 2}})
	if subs[0].Attach(&sink{}, 1) {
		t.Fatal("attached a subscriber that had not had change 2")
	}
	fast, declining, slow := &sink{}, &sink{decline: true}, &sink{hold: make(chan struct{})}
	for i, s := range []Sink{fast, declining, slow} {
		if !subs[i].Attach(s, 2) {
			t.Fatalf("sink %d not attached at the feed's head", i)
		}
	}
	f.add([]Change{{ID: 3}, {ID: 4}})
	done := make(chan struct{})
	go func() { f.deliver(); close(done) }()
	deadline := time.Now().Add(10 * time.Second)
	for len(fast.ids()) == 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if got := fast.ids(); len(got) != 2 || got[0] != 3 || got[1] != 4 {
		t.Fatalf("while a slow sink held its batch, the fast one got %v, want [3 4]", got)
	}
	close(slow.hold)
	<-done
	if got := slow.ids(); len(got) != 2 || got[0] != 3 {
		t.Fatalf("the slow sink got %v", got)
	}
	if subs[1].Attached() || len(subs[1].C) != 1 {
		t.Fatal("a sink that declined stayed attached, or its subscriber was not woken")
	}
	if !subs[0].Attached() || len(subs[0].C) != 0 {
		t.Fatal("a sink that took its batch was detached or woken")
	}
	f.deliver() // nothing new: nothing delivered again
	f.add([]Change{{ID: 5}})
	f.deliver()
	if got := fast.ids(); len(got) != 3 || got[2] != 5 {
		t.Fatalf("the fast sink got %v, want [3 4 5]", got)
	}
	fast.mu.Lock()
	fast.decline = true // as a stream whose caller's access must be re-checked
	fast.mu.Unlock()
	f.deliver()
	if subs[0].Attached() || len(subs[0].C) != 1 {
		t.Fatal("a sink that declined with nothing new stayed attached, or its subscriber was not woken")
	}
	subs[2].Close()
	f.add([]Change{{ID: 6}})
	f.deliver()
	if got := slow.ids(); len(got) != 3 {
		t.Fatalf("a closed subscription's sink was delivered to: %v", got)
	}
}

// TestDeliverySpacing: after a delivery that took longer than feedEvery the next one waits
// as long as it took, so that a feed writes to its subscribers at most half of the time.
func TestDeliverySpacing(t *testing.T) {
	h := NewHub("", nil)
	h.live.Store(true)
	sub := h.Subscribe("ds_y")
	defer sub.Close()
	f := sub.f
	f.ready = true
	const took = 3 * feedEvery
	s := &sink{delay: took}
	if !sub.Attach(s, 0) {
		t.Fatal("not attached at the feed's head")
	}
	f.add([]Change{{ID: 1}})
	f.refresh()
	ended := time.Now()
	f.add([]Change{{ID: 2}})
	f.refresh()
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.at) != 2 || len(s.got) != 2 {
		t.Fatalf("deliveries %d, changes %v; want 2 and [1 2]", len(s.at), s.got)
	}
	if gap := s.at[1].Sub(ended); gap < took*9/10 {
		t.Fatalf("the next delivery began %v after one that took %v", gap, took)
	}
}
