package cmd

import "testing"

// The soft limit grows with the requests in flight, never drops below the
// base, and GOMEMLIMIT in the environment leaves the runtime's alone.
func TestMemoryLimit(t *testing.T) {
	if got, want := memoryLimit(512), int64(36<<20); got != want {
		t.Errorf("memoryLimit(512) = %d, want %d", got, want)
	}
	if memoryLimit(0) <= memoryLimitBase || memoryLimit(64) >= memoryLimit(512) {
		t.Errorf("memoryLimit(0) = %d, memoryLimit(64) = %d, memoryLimit(512) = %d", memoryLimit(0), memoryLimit(64), memoryLimit(512))
	}
	env := func(v string) func(string) string {
		return func(k string) string {
			if k == "GOMEMLIMIT" {
				return v
			}
			return ""
		}
	}
	if setMemoryLimit(env("100MiB")) != nil {
		t.Error("GOMEMLIMIT set: llmrun set its own limit over it")
	}
	if setMemoryLimit(env("")) == nil {
		t.Error("no GOMEMLIMIT: no limit set")
	}
}
