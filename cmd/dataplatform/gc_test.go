package main

import (
	"io"
	"log/slog"
	"math"
	"runtime/debug"
	"testing"
)

// TestTuneGC: the collector's target and soft limit follow GOGC, GOMEMLIMIT and the cgroup's
// memory.max as documented; a variable that is set is left to the runtime.
func TestTuneGC(t *testing.T) {
	oldPercent, oldLimit := debug.SetGCPercent(100), debug.SetMemoryLimit(math.MaxInt64)
	t.Cleanup(func() { debug.SetGCPercent(oldPercent); debug.SetMemoryLimit(oldLimit) })
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	envOf := func(vars map[string]string) func(string) string { return func(k string) string { return vars[k] } }
	for _, c := range []struct {
		name      string
		env       map[string]string
		cgroupMax string
		percent   int
		limit     int64
	}{
		{"nothing set, no cgroup limit", nil, "", gcPercent, math.MaxInt64},
		{"nothing set, cgroup without a limit", nil, "max\n", gcPercent, math.MaxInt64},
		{"nothing set, cgroup limit", nil, "1000000000\n", gcPercent, 900000000},
		{"GOGC set", map[string]string{"GOGC": "100"}, "1000000000\n", 100, 900000000},
		{"GOMEMLIMIT set", map[string]string{"GOMEMLIMIT": "1GiB"}, "1000000000\n", gcPercent, math.MaxInt64},
	} {
		debug.SetGCPercent(100)
		debug.SetMemoryLimit(math.MaxInt64)
		tuneGC(envOf(c.env), c.cgroupMax, log)
		if got := debug.SetGCPercent(100); got != c.percent {
			t.Errorf("%s: GC percent %d, want %d", c.name, got, c.percent)
		}
		if got := debug.SetMemoryLimit(math.MaxInt64); got != c.limit {
			t.Errorf("%s: memory limit %d, want %d", c.name, got, c.limit)
		}
	}
}
