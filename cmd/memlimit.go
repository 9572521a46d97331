package cmd

import "runtime/debug"

// Memory the Go runtime may hold before it collects harder, from the run's
// shape: a base for the runtime, the input check and the writer, plus per
// request in flight its connection's buffers, two goroutine stacks and
// the transient garbage of one exchange. The checkpoint index lives
// outside the Go heap and is not counted. A soft limit: past it the
// collector runs more often (at most about half the CPU), nothing fails;
// GOMEMLIMIT in the environment wins.
const (
	memoryLimitBase       = 24 << 20
	memoryLimitPerRequest = 24 << 10
)

// memoryLimit is the soft memory limit for a run of concurrency requests
// in flight.
func memoryLimit(concurrency int) int64 {
	return memoryLimitBase + int64(max(concurrency, 1))*memoryLimitPerRequest
}

// setMemoryLimit returns what sets the process's soft memory limit, or nil
// when GOMEMLIMIT already set one.
func setMemoryLimit(getenv func(string) string) func(int64) {
	if getenv("GOMEMLIMIT") != "" {
		return nil
	}
	return func(n int64) { debug.SetMemoryLimit(n) }
}

// setGCPercent returns what sets GOGC for a phase of the run (see
// job.IO.GCPercent), or nil when GOGC in the environment set it.
func setGCPercent(getenv func(string) string) func(int) int {
	if getenv("GOGC") != "" {
		return nil
	}
	return debug.SetGCPercent
}
