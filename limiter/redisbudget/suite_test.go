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
	ns, lua := suiteClock(t, clk)
	return suiteProcess(t, clk, c, ns, lua)
}

// suiteClock mirrors clk into a Redis key of a namespace of the test's
// own; it returns the namespace and the Lua that defines now_us() as the
// instant in that key.
func suiteClock(t *testing.T, clk *budgettest.Clock) (ns, lua string) {
	client := newClient(t)
	ns = "suite:" + testKey(t)
	clockKey := ns + ":clock"
	set := func(now time.Time) {
		if err := client.Set(context.Background(), clockKey, now.UnixMicro(), 0).Err(); err != nil {
			t.Errorf("set the scripts' clock: %v", err)
		}
	}
	set(clk.Now())
	clk.OnSet(set)
	return ns, fmt.Sprintf("local function now_us() return tonumber(redis.call('GET', %q)) end\n", clockKey)
}

// suiteProcess is one process's Budget (a client of its own) in the
// namespace ns, on the clock lua defines and clk's timers.
func suiteProcess(t *testing.T, clk *budgettest.Clock, c budgettest.Config, ns, lua string) *Budget {
	day := 24 * time.Hour // no lease expires, no renewal runs, no wait is cut short
	b, err := New(Options{
		Client: newClient(t), Defaults: c.Limits, Aging: c.Aging, MaxPause: c.MaxPause, Prefix: ns,
		Lease: day, RoomLease: day, MaxWait: day,
		OnError:  func(err error) { t.Errorf("OnError: %v", err) },
		clock:    lua,
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
