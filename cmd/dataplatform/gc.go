package main

import (
	"log/slog"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
)

// gcPercent is the garbage collector's target when GOGC is unset: a request allocates a few
// KB and the live heap (descriptions, caches, pools) is tens of MB, so Go's default of 100
// collects several times a second under load; 200 halves that for about one more live heap
// of memory.
const gcPercent = 200

// tuneGC applies gcPercent when GOGC is unset and, when GOMEMLIMIT is unset and the process
// runs under a cgroup memory limit (memory.max), a soft limit of 90% of it, so that the
// collector works harder near the container's limit instead of the process being killed.
// env reads a variable, cgroupMax the cgroup's memory.max ("" when there is none).
func tuneGC(env func(string) string, cgroupMax string, log *slog.Logger) {
	if env("GOGC") == "" {
		debug.SetGCPercent(gcPercent)
	}
	if env("GOMEMLIMIT") != "" {
		return
	}
	if limit, err := strconv.ParseInt(strings.TrimSpace(cgroupMax), 10, 64); err == nil && limit > 0 {
		debug.SetMemoryLimit(limit / 10 * 9)
		log.Info("soft memory limit from the cgroup's", "bytes", limit/10*9)
	}
}

// cgroupMemoryMax is the cgroup v2 memory limit of this process ("max" or "" when none).
func cgroupMemoryMax() string {
	b, err := os.ReadFile("/sys/fs/cgroup/memory.max")
	if err != nil {
		return ""
	}
	return string(b)
}
