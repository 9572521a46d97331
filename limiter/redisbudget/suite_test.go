package redisbudget

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/llmrun/llmrun/limiter"
	"github.com/llmrun/llmrun/limiter/budgettest"
)

// TestBudgetSuiteMatchesLimiter plays the budget conformance scenarios
// against the in-process limiter and against this package's Lua on a real
// Redis, on the same explicit clock, and fails on the first decision that
// differs: the Lua twin cannot drift from limiter/key.go unnoticed.
func TestBudgetSuiteMatchesLimiter(t *testing.T) {
	budgettest.Compare(t, budgettest.Limiter, suiteBudget)
}

// suiteBudget is the budgettest.Factory of a Redis budget whose scripts,
// clock and timers all follow clk: the scripts read the instant from a
// Redis key clk's moves are written to.
func suiteBudget(t *testing.T, clk *budgettest.Clock, c budgettest.Config) limiter.Budget {
	client := newClient(t)
	ns := "suite:" + testKey(t)
	clockKey := ns + ":clock"
	set := func(now time.Time) {
		if err := client.Set(context.Background(), clockKey, now.UnixMicro(), 0).Err(); err != nil {
			t.Errorf("set the scripts' clock: %v", err)
		}
	}
	set(clk.Now())
	clk.OnSet(set)
	day := 24 * time.Hour // no lease expires, no renewal runs, no wait is cut short
	b, err := New(Options{
		Client: client, Defaults: c.Limits, Aging: c.Aging, MaxPause: c.MaxPause, Prefix: ns,
		Lease: day, RoomLease: day, MaxWait: day,
		OnError:  func(err error) { t.Errorf("OnError: %v", err) },
		clock:    fmt.Sprintf("local function now_us() return tonumber(redis.call('GET', %q)) end\n", clockKey),
		now:      clk.Now,
		newTimer: clk.NewTimer,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	// Set the key up now: its setup passes Reserve's context to Redis,
	// which would read as waiting (see budgettest.Factory).
	if err := b.ready(context.Background(), b.key(budgettest.Key)); err != nil {
		t.Fatal(err)
	}
	return b
}
