package changes

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestWakeAllBounded: a feed wakes every subscriber, never more than feedActive of them at
// work at once while they say when they are done; subscribers that never say so do not stop
// the others from being woken.
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
	f.wakeAll(subs)
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
	f.wakeAll(silent)
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
