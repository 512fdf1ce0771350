package main

import (
	"log/slog"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync/atomic"
)

// gcHeadroom is the heap growth between collections the server aims for when GOGC is unset.
// A request allocates a few KB, so with Go's default (grow by the live heap) a server whose
// live heap is tens of MB collects several times a second under load, and marking is a
// tenth of its CPU. The percent is set after each collection so that the heap may grow by
// gcHeadroom, between Go's 100 (a large live heap: many datasets' descriptions, which would
// otherwise cost that much memory again) and gcMaxPercent.
const (
	gcHeadroom   = 128 << 20
	gcMaxPercent = 400
)

// gcPercentFor is the GC percent for a live heap of live bytes.
func gcPercentFor(live uint64) int {
	if live == 0 {
		return gcMaxPercent
	}
	return int(min(max(gcHeadroom*100/live, 100), gcMaxPercent))
}

// gcTuning is set while the percent follows the live heap.
var gcTuning atomic.Bool

// tuneGC makes the GC percent follow the live heap (gcPercentFor) when GOGC is unset and,
// when GOMEMLIMIT is unset and the process runs under a cgroup memory limit (memory.max), sets
// a soft limit of 90% of it, so that the collector works harder near the container's limit
// instead of the process being killed. env reads a variable, cgroupMax is the cgroup's
// memory.max ("" when there is none).
func tuneGC(env func(string) string, cgroupMax string, log *slog.Logger) {
	if env("GOGC") == "" && !gcTuning.Swap(true) {
		p := gcPercentFor(liveHeap())
		gcPercent.Store(int64(p))
		debug.SetGCPercent(p)
		afterGC()
	}
	if env("GOMEMLIMIT") != "" {
		return
	}
	if limit, err := strconv.ParseInt(strings.TrimSpace(cgroupMax), 10, 64); err == nil && limit > 0 {
		debug.SetMemoryLimit(limit / 10 * 9)
		log.Info("soft memory limit from the cgroup's", "bytes", limit/10*9)
	}
}

// afterGC sets the percent for the live heap after the next collection, and again after each
// one while gcTuning is set: a finalizer runs once the collection found its object unreachable.
func afterGC() {
	s := &struct{ p *int }{} // a pointer in it: the tiny allocator would batch a pointer-free object with others, and its finalizer would wait for them
	runtime.SetFinalizer(s, func(any) {
		if !gcTuning.Load() {
			return
		}
		setGCPercent(gcPercentFor(liveHeap()))
		afterGC()
	})
}

// gcPercent is the percent last set by setGCPercent.
var gcPercent atomic.Int64

// setGCPercent sets the GC percent to p unless it is that already.
func setGCPercent(p int) {
	if gcPercent.Swap(int64(p)) != int64(p) {
		debug.SetGCPercent(p)
	}
}

// liveHeap is the heap the last collection found reachable.
func liveHeap() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64()
}

// cgroupMemoryMax is the cgroup v2 memory limit of this process ("max" or "" when none).
func cgroupMemoryMax() string {
	b, err := os.ReadFile("/sys/fs/cgroup/memory.max")
	if err != nil {
		return ""
	}
	return string(b)
}
