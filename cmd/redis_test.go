package cmd

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/llmrun/llmrun/limiter/redisbudget/redistest"
	"github.com/llmrun/llmrun/providers/mock"
)

// TestShardsShareOneBudgetThroughRedis: two llmrun processes (two shards of
// one input), each given the account's whole limits, would together send
// twice what a strict provider allows; sharing the budget through a real
// Redis, they draw no 429 between them.
func TestShardsShareOneBudgetThroughRedis(t *testing.T) {
	addr := redistest.StartOrSkip(t)
	// 20 requests/s and 1,000 input tokens/s, in one-second windows.
	m, url := mockServer(t, mock.Config{RPM: 1200, ITPM: 60000, Burst: time.Second})
	in, prompts := promptFile(t, 80)
	var wg sync.WaitGroup
	codes := make([]int, 2)
	errs := make([]string, 2)
	start := time.Now()
	for i := range 2 {
		wg.Go(func() {
			c := &cli{env: mockEnv(url)}
			codes[i] = c.run(t, "batch", in, "--provider", "anthropic", "--model", "m", "--quiet",
				"--shard", fmt.Sprintf("%d/2", i+1), "--rpm", "1200", "--itpm", "60000",
				"--redis", "redis://"+addr+"/0", "--concurrency", "8")
			errs[i] = c.stderr.String()
		})
	}
	wg.Wait()
	for i := range 2 {
		if codes[i] != 0 {
			t.Fatalf("shard %d/2: exit %d: %s", i+1, codes[i], errs[i])
		}
	}
	st := m.Stats()
	if st.RateLimited != 0 {
		t.Errorf("%d 429s: the shards did not share the budget", st.RateLimited)
	}
	if st.Completed != int64(len(prompts)) {
		t.Errorf("%d completed, want %d", st.Completed, len(prompts))
	}
	// The limits were binding: 80 requests at 20/s after a burst of 20
	// take at least 3s, whoever sends them.
	if took := time.Since(start); took < 2900*time.Millisecond {
		t.Errorf("took %v: faster than the limits allow, so they were not binding", took)
	}
	t.Logf("2 shards, %d requests, %v, 429s %d", len(prompts), time.Since(start).Round(time.Millisecond), st.RateLimited)
}

func TestRedisUnreachable(t *testing.T) {
	_, url := mockServer(t, mock.Config{})
	in, _ := promptFile(t, 2)
	c := &cli{env: mockEnv(url)}
	if code := c.run(t, "batch", in, "--provider", "openai", "--model", "m", "--quiet", "--rpm", "60", "--redis", "redis://127.0.0.1:1"); code == 0 || !strings.Contains(c.stderr.String(), "--redis") {
		t.Fatalf("unreachable Redis: exit %d: %s", code, c.stderr.String())
	}
}
