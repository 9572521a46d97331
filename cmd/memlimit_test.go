package cmd

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/llmrun/llmrun/providers/mock"
)

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

// TestPrepareGCPercent: a batch prepares (input check, checkpoint load)
// at GOGC 200 and gives the collector its setting back before sending;
// GOGC in the environment leaves the runtime's alone.
func TestPrepareGCPercent(t *testing.T) {
	_, url := mockServer(t, mock.Config{Seed: 3})
	in, _ := promptFile(t, 3)
	var set []int
	gogc := 100
	c := &cli{env: mockEnv(url)}
	io := &IO{In: strings.NewReader(""), Out: &c.stdout, Err: &c.stderr, Getenv: func(k string) string { return c.env[k] },
		GCPercent: func(p int) int {
			set = append(set, p)
			old := gogc
			gogc = p
			return old
		}}
	if code := Execute(context.Background(), io, []string{"batch", in, "--provider", "openai", "--model", "m", "-q"}); code != 0 {
		t.Fatalf("exit %d: %s", code, c.stderr.String())
	}
	if !slices.Equal(set, []int{200, 100}) || gogc != 100 {
		t.Errorf("GOGC set to %v, left at %d; want 200 then 100 given back", set, gogc)
	}
	if setGCPercent(func(k string) string { return map[string]string{"GOGC": "50"}[k] }) != nil {
		t.Error("GOGC set: llmrun set its own over it")
	}
}
