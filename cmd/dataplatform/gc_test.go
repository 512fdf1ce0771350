package main

import (
	"io"
	"log/slog"
	"math"
	"runtime"
	"runtime/debug"
	"testing"
	"time"
)

func TestGCPercentFor(t *testing.T) {
	for live, want := range map[uint64]int{0: gcMaxPercent, 8 << 20: gcMaxPercent, 64 << 20: 200, 100 << 20: 128, 128 << 20: 100, 2 << 30: 100} {
		if got := gcPercentFor(live); got != want {
			t.Errorf("live heap %d MB: %d%%, want %d%%", live>>20, got, want)
		}
	}
}

// TestTuneGC: the collector's percent follows the live heap (re-set after collections) unless
// GOGC is set, and the soft limit follows the cgroup's memory.max unless GOMEMLIMIT is set.
func TestTuneGC(t *testing.T) {
	oldPercent, oldLimit := debug.SetGCPercent(100), debug.SetMemoryLimit(math.MaxInt64)
	t.Cleanup(func() { gcTuning.Store(false); debug.SetGCPercent(oldPercent); debug.SetMemoryLimit(oldLimit) })
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	envOf := func(vars map[string]string) func(string) string { return func(k string) string { return vars[k] } }
	for _, c := range []struct {
		name      string
		env       map[string]string
		cgroupMax string
		tuned     bool
		limit     int64
	}{
		{"GOGC set", map[string]string{"GOGC": "100"}, "1000000000\n", false, 900000000},
		{"GOMEMLIMIT set", map[string]string{"GOGC": "100", "GOMEMLIMIT": "1GiB"}, "1000000000\n", false, math.MaxInt64},
		{"cgroup without a limit", map[string]string{"GOGC": "100"}, "max\n", false, math.MaxInt64},
		{"nothing set, no cgroup", nil, "", true, math.MaxInt64},
	} {
		debug.SetGCPercent(100)
		debug.SetMemoryLimit(math.MaxInt64)
		tuneGC(envOf(c.env), c.cgroupMax, log)
		if got := debug.SetMemoryLimit(math.MaxInt64); got != c.limit {
			t.Errorf("%s: memory limit %d, want %d", c.name, got, c.limit)
		}
		want := 100
		if c.tuned {
			want = gcPercentFor(liveHeap())
		}
		if got := debug.SetGCPercent(50); got != want {
			t.Errorf("%s: GC percent %d, want %d", c.name, got, want)
		}
		if c.tuned { // set again after a collection
			gcPercent.Store(50)
			for i := 0; i < 100 && gcPercent.Load() == 50; i++ {
				runtime.GC()
				time.Sleep(10 * time.Millisecond) // the finalizers' goroutine
			}
			if got := debug.SetGCPercent(100); got == 50 {
				t.Errorf("%s: the GC percent was not set again after a collection", c.name)
			}
		}
	}
}
