package redisbudget

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/llmrun/llmrun/limiter"
	"github.com/llmrun/llmrun/limiter/budgettest"
)

// testClock drives budgets at explicit instants, so a test of a wait
// asserts its length and not how fast the machine ran: the scripts read
// the instant from a Redis key every move is written to, the budgets'
// clocks and timers follow it, and every timer a budget starts is
// announced on started (a Reserve that starts one is waiting, for that
// long). Budgets on one testClock are processes sharing one Redis clock.
type testClock struct {
	*budgettest.Clock
	lua     string // defines now_us() as the instant in the clock key
	started chan time.Duration
}

// newTestClock returns a clock at budgettest.Start, mirrored into a Redis
// key of the test's own.
func newTestClock(t *testing.T) *testClock {
	client := newClient(t)
	clockKey := "clock:" + testKey(t)
	set := func(now time.Time) {
		if err := client.Set(context.Background(), clockKey, now.UnixMicro(), 0).Err(); err != nil {
			t.Errorf("set the scripts' clock: %v", err)
		}
	}
	c := &testClock{
		Clock:   budgettest.NewClock(),
		lua:     fmt.Sprintf("local function now_us() return tonumber(redis.call('GET', %q)) end\n", clockKey),
		started: make(chan time.Duration, 64),
	}
	set(c.Now())
	c.OnSet(set)
	return c
}

// budget is newBudget on this clock.
func (c *testClock) budget(t *testing.T, lim limiter.Limits, opt ...func(*Options)) *Budget {
	return newBudget(t, lim, append(opt, func(o *Options) {
		o.MaxWait = 24 * time.Hour // a timer is the whole wait: no retry cuts it short
		o.clock, o.now = c.lua, c.Now
		o.newTimer = func(d time.Duration) (<-chan time.Time, func() bool) {
			fire, stop := c.NewTimer(d)
			c.started <- d
			return fire, stop
		}
	})...)
}

// ready sets key up in each budget (subscription, reclaim), so that a
// Reserve is one script from then on.
func ready(t *testing.T, key string, bs ...*Budget) {
	t.Helper()
	for _, b := range bs {
		if err := b.ready(context.Background(), b.key(key)); err != nil {
			t.Fatal(err)
		}
	}
}

// advance moves the clock d on, firing the timers due by then.
func (c *testClock) advance(d time.Duration) { c.Set(c.Now().Add(d)) }

// waiting returns the length of the next timer a budget starts: the wait
// a refused Reserve was told.
func (c *testClock) waiting(t *testing.T, what string) time.Duration {
	t.Helper()
	select {
	case d := <-c.started:
		return d
	case <-time.After(failsafe):
		t.Fatalf("%s: no Reserve started waiting", what)
		return 0
	}
}

// idle fails the test if a budget started a timer since the last look: a
// Reserve that returned without one was admitted at once.
func (c *testClock) idle(t *testing.T, what string) {
	t.Helper()
	select {
	case d := <-c.started:
		t.Errorf("%s waited (a timer of %v), want admitted at once", what, d)
	default:
	}
}

// failsafe bounds waits on what a correct budget does at once (on the
// explicit clock), so a broken one fails instead of hanging. It is never
// reached by a passing test.
const failsafe = 10 * time.Second

// reservation is the outcome of a Reserve run in the background.
type reservation struct {
	tk  limiter.Ticket
	err error
}

// reserveAsync runs b.Reserve in the background.
func reserveAsync(b *Budget, key string, c limiter.Cost) <-chan reservation {
	got := make(chan reservation, 1)
	go func() {
		tk, err := b.Reserve(context.Background(), key, c)
		got <- reservation{tk, err}
	}()
	return got
}

// admitted returns the ticket got brings, failing the test if it brings
// an error or nothing within failsafe.
func admitted(t *testing.T, got <-chan reservation, what string) limiter.Ticket {
	t.Helper()
	select {
	case r := <-got:
		if r.err != nil {
			t.Fatalf("%s: %v", what, r.err)
		}
		return r.tk
	case <-time.After(failsafe):
		t.Fatalf("%s: not admitted", what)
		return nil
	}
}

// notYet fails the test if got already brought a reservation.
func notYet(t *testing.T, got <-chan reservation, what string) {
	t.Helper()
	select {
	case r := <-got:
		t.Fatalf("%s admitted too early (err %v)", what, r.err)
	default:
	}
}
