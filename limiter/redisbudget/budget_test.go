package redisbudget

import (
	"context"
	"errors"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/llmrun/llmrun/limiter"
)

func TestNewValidates(t *testing.T) {
	if _, err := New(Options{}); err == nil {
		t.Error("New without a client: no error")
	}
	c := newClient(t)
	b, err := New(Options{Client: c, Defaults: limiter.Limits{Auto: true}})
	if err != nil {
		t.Fatalf("New in Auto mode: %v", err)
	}
	defer b.Close()
	if got := b.Stats(); len(got) != 0 {
		t.Errorf("Stats before any key: %v", got)
	}
}

func TestReserveWaitsForRefill(t *testing.T) {
	// 10 requests/s, a 100ms burst: one request, then one per 100ms. On
	// the explicit clock the waits are exact, whatever the machine's load.
	clk := newTestClock(t)
	b := clk.budget(t, limiter.Limits{RPM: 600, Burst: 100 * time.Millisecond})
	key := testKey(t)
	ctx := context.Background()

	t1, err := b.Reserve(ctx, key, limiter.Cost{Requests: 1})
	if err != nil {
		t.Fatal(err)
	}
	clk.idle(t, "the first Reserve")
	t1.Settle(limiter.Cost{Requests: 1})

	arrived := clk.Now()
	got := reserveAsync(b, key, limiter.Cost{Requests: 1})
	if d := clk.waiting(t, "the second Reserve"); d != 100*time.Millisecond {
		t.Errorf("second Reserve told to wait %v, want 100ms (one request at 10/s)", d)
	}
	clk.advance(99 * time.Millisecond)
	notYet(t, got, "the second Reserve, 1ms before the refill,")
	clk.advance(time.Millisecond)
	admitted(t, got, "the second Reserve after 100ms").Settle(limiter.Cost{Requests: 1})
	if waited := clk.Now().Sub(arrived); waited != 100*time.Millisecond {
		t.Fatalf("admitted after %v, want 100ms", waited)
	}

	st := b.Stats()
	if len(st) != 1 || st[0].Key != key {
		t.Fatalf("Stats = %+v", st)
	}
	s := st[0]
	if s.Reservations != 2 || s.InFlight != 0 || s.Waiting != 0 {
		t.Errorf("Stats: reservations %d, in flight %d, waiting %d; want 2, 0, 0", s.Reservations, s.InFlight, s.Waiting)
	}
	if s.Binding != limiter.DimRequests || s.Wait != 100*time.Millisecond {
		t.Errorf("Stats: binding %v, wait %v; want requests, 100ms", s.Binding, s.Wait)
	}
	if s.Configured.RPM != 600 || s.Configured.Burst != 100*time.Millisecond || s.Configured.Headroom != 1 {
		t.Errorf("Stats: configured %+v", s.Configured)
	}
}

func TestReserveTakesAllBucketsOrNone(t *testing.T) {
	// Requests: plenty. Input: 1000/s, a 100ms burst holds 100. On the
	// explicit clock the levels and the wait are exact.
	clk := newTestClock(t)
	b := clk.budget(t, limiter.Limits{RPM: 6000, ITPM: 60000, Burst: 100 * time.Millisecond})
	key := testKey(t)
	if _, err := b.Reserve(context.Background(), key, limiter.Cost{Requests: 1, Input: 100}); err != nil {
		t.Fatal(err)
	}
	clk.idle(t, "the first Reserve")
	// A Reserve that waits, then gives up.
	ctx, cancel := context.WithCancel(context.Background())
	gaveUp := make(chan error, 1)
	go func() {
		_, err := b.Reserve(ctx, key, limiter.Cost{Requests: 1, Input: 60})
		gaveUp <- err
	}()
	if d := clk.waiting(t, "Reserve with an empty input bucket"); d != 60*time.Millisecond {
		t.Errorf("Reserve of 60 input on an empty bucket told to wait %v, want 60ms", d)
	}
	cancel()
	if err := <-gaveUp; !errors.Is(err, context.Canceled) {
		t.Fatalf("Reserve with an empty input bucket, given up: err = %v, want Canceled", err)
	}
	// The requests bucket (capacity 10) lost only the first request.
	lv, _ := levels(t, b, key)
	if lv[0] != 9 {
		t.Errorf("requests level = %v, want 9 (the refused reservation took nothing)", lv[0])
	}

	clk.advance(20 * time.Millisecond) // the give-up took 20ms
	got := reserveAsync(b, key, limiter.Cost{Requests: 1, Input: 60})
	if d := clk.waiting(t, "Reserve of 60 input after the give-up"); d != 40*time.Millisecond {
		t.Errorf("Reserve of 60 input 20ms after the give-up told to wait %v, want 40ms more", d)
	}
	clk.advance(39 * time.Millisecond)
	notYet(t, got, "Reserve of 60 input, 1ms before the refill,")
	clk.advance(time.Millisecond)
	admitted(t, got, "Reserve of 60 input after the refill")
}

func TestReserveTooLargeAndBeyondBurst(t *testing.T) {
	clk := newTestClock(t)
	b := clk.budget(t, limiter.Limits{ITPM: 6000}) // 100/s, burst 1s holds 100
	key := testKey(t)
	_, err := b.Reserve(context.Background(), key, limiter.Cost{Input: 6001})
	var tl *limiter.TooLargeError
	if !errors.As(err, &tl) || !errors.Is(err, limiter.ErrTooLarge) || tl.Dimension != limiter.DimInput || tl.Limit != 6000 {
		t.Fatalf("Reserve above the per-minute limit: err = %v", err)
	}
	// Above the burst but within the limit: the capacity rises to it and
	// an idle key admits it at once (the explicit clock stands still).
	tk, err := b.Reserve(context.Background(), key, limiter.Cost{Input: 500})
	if err != nil {
		t.Fatal(err)
	}
	clk.idle(t, "Reserve beyond the burst on an idle key")
	tk.Settle(limiter.Cost{Input: 500})
	if _, err := b.Reserve(context.Background(), key, limiter.Cost{Input: -1}); err == nil {
		t.Error("negative cost: no error")
	}
}

// TestProcessesShareOneBudget runs four budgets, each with its own client
// (four processes), against one key: together they must admit no more than
// the rate allows plus one burst, and not much less.
func TestProcessesShareOneBudget(t *testing.T) {
	const (
		rps     = 40.0 // requests per second
		workers = 4    // per process
		window  = 1500 * time.Millisecond
	)
	lim := limiter.Limits{RPM: rps * 60, Burst: time.Second}
	key := testKey(t)
	var procs [4]*Budget
	for i := range procs {
		procs[i] = newBudget(t, lim)
	}
	var (
		counts [len(procs)]atomic.Int64
		wg     sync.WaitGroup
	)
	start := time.Now()
	ctx, cancel := context.WithDeadline(context.Background(), start.Add(window))
	defer cancel()
	for i, b := range procs {
		for range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					tk, err := b.Reserve(ctx, key, limiter.Cost{Requests: 1})
					if err != nil {
						if !errors.Is(err, context.DeadlineExceeded) {
							t.Errorf("Reserve: %v", err)
						}
						return
					}
					if time.Now().Before(start.Add(window)) {
						counts[i].Add(1)
					}
					tk.Settle(limiter.Cost{Requests: 1})
				}
			}()
		}
	}
	wg.Wait()
	var total int64
	var per [len(procs)]int64
	for i := range counts {
		per[i] = counts[i].Load()
		total += per[i]
	}
	bound := rps*window.Seconds() + rps // rate × window + one burst
	t.Logf("admitted %d in %v across 4 processes %v (bound %.0f)", total, window, per, bound)
	if float64(total) > bound {
		t.Errorf("admitted %d, more than rate × window + capacity = %.0f", total, bound)
	}
	if float64(total) < 0.8*bound {
		t.Errorf("admitted %d, less than 80%% of %.0f", total, bound)
	}
	for i, n := range per {
		if n == 0 {
			t.Errorf("process %d admitted nothing", i)
		}
	}
}

// near reports whether got is want, up to the refill of rate over slack.
func near(got, want, rate float64, slack time.Duration) bool {
	return got >= want-1e-6 && got <= want+rate*slack.Seconds()+1e-6
}

func TestSettleFailCancelReconcile(t *testing.T) {
	// Capacities 60, refill 1/s: the test's own time barely moves them.
	b := newBudget(t, limiter.Limits{RPM: 60, ITPM: 60, Burst: time.Minute})
	key := testKey(t)
	ctx := context.Background()
	start := time.Now()
	check := func(step string, req, in float64) {
		t.Helper()
		lv, _ := levels(t, b, key)
		slack := time.Since(start)
		if !near(lv[0], req, 1, slack) || !near(lv[1], in, 1, slack) {
			t.Errorf("%s: levels requests %.3f input %.3f, want %v %v", step, lv[0], lv[1], req, in)
		}
	}
	setInput := func(v float64) {
		t.Helper()
		if err := b.client.HSet(ctx, b.key(key).redisKeys[0], "l2", v).Err(); err != nil {
			t.Fatal(err)
		}
	}
	reserve := func(c limiter.Cost) limiter.Ticket {
		t.Helper()
		tk, err := b.Reserve(ctx, key, c)
		if err != nil {
			t.Fatal(err)
		}
		return tk
	}

	t1 := reserve(limiter.Cost{Requests: 1, Input: 50})
	check("reserve 50", 59, 10)
	t1.Settle(limiter.Cost{Requests: 5, Input: 20}) // refund 30; the request charge stays 1
	check("settle at 20", 59, 40)
	t1.Settle(limiter.Cost{}) // no-op
	t1.Cancel()               // no-op
	check("second end", 59, 40)

	t2 := reserve(limiter.Cost{Requests: 1, Input: 30})
	t2.Settle(limiter.Cost{Input: 100}) // under-reserved by 70: negative
	check("settle above the reservation", 58, -60)
	short, cancel := context.WithTimeout(ctx, 30*time.Millisecond)
	_, err := b.Reserve(short, key, limiter.Cost{Requests: 1, Input: 1})
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Reserve on a negative bucket: err = %v, want DeadlineExceeded", err)
	}

	setInput(50)
	t3 := reserve(limiter.Cost{Requests: 1, Input: 10})
	check("reserve 10", 57, 40)
	t3.Fail() // tokens back, request charge kept
	check("fail", 57, 50)

	t4 := reserve(limiter.Cost{Requests: 1, Input: 10})
	t4.Cancel() // everything back
	check("cancel", 57, 50)

	t5 := reserve(limiter.Cost{Requests: 1, Input: 10})
	setInput(58)
	t5.Cancel() // 58 + 10 is capped at the capacity, 60
	check("refund capped at capacity", 57, 60)

	_, cum := levels(t, b, key)
	if cum[0] != 3 || cum[1] != 120 {
		t.Errorf("cumulative charges: requests %v input %v, want 3 and 120", cum[0], cum[1])
	}
}

// TestLongPauseHintIsClamped: a retry-after of an hour pauses every
// process for MaxPause only; the cut is counted and told once.
func TestLongPauseHintIsClamped(t *testing.T) {
	lim := limiter.Limits{RPM: 60000}
	var warns []string
	// The cut pause is long, as Redis expires a pause's key on its own
	// clock: on the explicit one it cannot lapse mid-test.
	const maxPause = 20 * time.Second
	clk := newTestClock(t)
	a := clk.budget(t, lim, func(o *Options) {
		o.MaxPause = maxPause
		o.Warn = func(m string) { warns = append(warns, m) }
	})
	b := clk.budget(t, lim)
	key := testKey(t)
	ready(t, key, a, b)
	a.pause(key, clk.Now().Add(time.Hour))
	a.pause(key, clk.Now().Add(time.Hour)) // the same pause: counted, not told again
	got := reserveAsync(b, key, limiter.Cost{Requests: 1})
	if d := clk.waiting(t, "Reserve in another process during a clamped pause"); d != maxPause {
		t.Errorf("Reserve in another process during an hour's hint cut to %v told to wait %v", maxPause, d)
	}
	clk.advance(maxPause - time.Millisecond)
	notYet(t, got, "Reserve in another process, 1ms before the clamped pause ends,")
	clk.advance(time.Millisecond)
	admitted(t, got, "Reserve in another process when the clamped pause ends").Cancel()
	if st := a.Stats(); st[0].PauseClamped != 2 {
		t.Errorf("PauseClamped = %d, want 2", st[0].PauseClamped)
	}
	if len(warns) != 1 || !strings.Contains(warns[0], "1h0m0s") {
		t.Errorf("warnings = %q, want one naming the hint", warns)
	}
}

func TestPauseIsSharedAcrossProcesses(t *testing.T) {
	// Two processes on one Redis clock, explicit: the pause's length is
	// asserted exactly, whatever the machine's load. It is long, as Redis
	// expires a pause's key on its own clock: it cannot lapse mid-test.
	const pause = 20 * time.Second
	lim := limiter.Limits{RPM: 60000}
	clk := newTestClock(t)
	a, b := clk.budget(t, lim), clk.budget(t, lim)
	key := testKey(t)
	ready(t, key, a, b)

	start := clk.Now()
	a.pause(key, start.Add(pause))
	a.pause(key, start.Add(10*time.Millisecond)) // never shortens
	a.pause(key, start.Add(-time.Second))        // in the past: nothing
	got := reserveAsync(b, key, limiter.Cost{Requests: 1})
	if d := clk.waiting(t, "Reserve in another process during the pause"); d != pause {
		t.Errorf("Reserve in another process during a %v pause told to wait %v", pause, d)
	}
	clk.advance(pause - time.Millisecond)
	notYet(t, got, "Reserve in another process, 1ms before the pause ends,")
	clk.advance(time.Millisecond)
	admitted(t, got, "Reserve in another process when the pause ends").Cancel()
	st := b.Stats()
	if st[0].Binding != limiter.DimPause || !st[0].PausedUntil.Equal(start.Add(pause)) {
		t.Errorf("Stats of the paused process: binding %v, paused until %v after the start, want pause, %v",
			st[0].Binding, st[0].PausedUntil.Sub(start), pause)
	}
	// Over: admitted at once.
	tk, err := a.Reserve(context.Background(), key, limiter.Cost{Requests: 1})
	if err != nil {
		t.Fatal(err)
	}
	tk.Cancel()
	clk.idle(t, "Reserve after the pause")
}

func TestObserveOnlyLowers(t *testing.T) {
	const rate = 1000.0 // input per second; the burst of 1s holds 1000
	lim := limiter.Limits{ITPM: rate * 60, TPM: 1e9}
	a, b := newBudget(t, lim), newBudget(t, lim)
	key := testKey(t)
	ctx := context.Background()
	t1, err := a.Reserve(ctx, key, limiter.Cost{Input: 100})
	if err != nil {
		t.Fatal(err)
	}
	// Another process admits 200 after t1: t1's headers cannot know.
	t2, err := b.Reserve(ctx, key, limiter.Cost{Input: 200})
	if err != nil {
		t.Fatal(err)
	}

	start := time.Now()
	t1.Observe(limiter.Observation{
		Input:  limiter.Window{Limit: 60000, Remaining: 500},
		Tokens: limiter.Window{Limit: 1, Remaining: 0}, // ignored: input is known
	}, start)
	lv, _ := levels(t, a, key)
	if !near(lv[1], 500-200, rate, time.Since(start)) {
		t.Errorf("after Ticket.Observe: input level %.2f, want 300 (500 remaining - 200 admitted since)", lv[1])
	}
	if lv[3] < 1e6 {
		t.Errorf("combined level %.0f lowered by a tokens window next to an input one", lv[3])
	}

	t2.Observe(limiter.Observation{Input: limiter.Window{Limit: 60000, Remaining: 100000}}, time.Now())
	lv2, _ := levels(t, a, key)
	if lv2[1] > 300+rate*time.Since(start).Seconds()+1e-6 {
		t.Errorf("Observe raised the input level to %.2f", lv2[1])
	}

	// Headers computed a while ago count the refill since.
	start = time.Now()
	t1.Observe(limiter.Observation{Input: limiter.Window{Limit: 60000, Remaining: 0}}, start.Add(-50*time.Millisecond))
	lv, _ = levels(t, a, key)
	if !near(lv[1], 50-200, rate, time.Since(start)) {
		t.Errorf("after Observe of 50ms-old headers: input level %.2f, want -150", lv[1])
	}

	// Without a ticket, this process's in-flight charges are subtracted:
	// b holds t2 (200).
	setLevel := func(v float64) {
		if err := b.client.HSet(ctx, b.key(key).redisKeys[0], "l2", v).Err(); err != nil {
			t.Fatal(err)
		}
	}
	setLevel(1000)
	start = time.Now()
	b.Observe(key, limiter.Observation{Input: limiter.Window{Limit: 60000, Remaining: 250}})
	lv, _ = levels(t, b, key)
	if !near(lv[1], 50, rate, time.Since(start)) {
		t.Errorf("after Budget.Observe: input level %.2f, want 50 (250 - 200 in flight)", lv[1])
	}
	t1.Settle(limiter.Cost{Input: 100})
	t2.Settle(limiter.Cost{Input: 200})
}

func TestConcurrencyLeaseExpires(t *testing.T) {
	const lease = 300 * time.Millisecond
	lim := limiter.Limits{RPM: 60000, Concurrency: 1}
	fast := func(o *Options) { o.Lease = lease }
	a, b := newBudget(t, lim, fast), newBudget(t, lim, fast)
	key := testKey(t)
	ctx := context.Background()

	if _, err := a.Reserve(ctx, key, limiter.Cost{Requests: 1}); err != nil { // never ended
		t.Fatal(err)
	}
	// a is alive and renews its lease: the slot stays taken beyond it.
	short, cancel := context.WithTimeout(ctx, lease+150*time.Millisecond)
	_, err := b.Reserve(short, key, limiter.Cost{Requests: 1})
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Reserve while another process holds the only slot: err = %v, want DeadlineExceeded", err)
	}
	if st := b.Stats()[0]; st.Binding != limiter.DimConcurrency {
		t.Errorf("binding = %v, want concurrency", st.Binding)
	}
	// a "crashes": its slot frees itself within a lease.
	a.Close()
	start := time.Now()
	tk, err := b.Reserve(ctx, key, limiter.Cost{Requests: 1})
	if err != nil {
		t.Fatal(err)
	}
	d := time.Since(start)
	if d < lease/2 || d > lease+200*time.Millisecond {
		t.Errorf("slot of a stopped process freed after %v, want within the %v lease", d, lease)
	}
	if st := b.Stats()[0]; st.InFlight != 1 {
		t.Errorf("in flight = %d, want 1", st.InFlight)
	}
	// Ending a ticket frees its slot at once.
	tk.Fail()
	start = time.Now()
	tk, err = b.Reserve(ctx, key, limiter.Cost{Requests: 1})
	if err != nil {
		t.Fatal(err)
	}
	tk.Settle(limiter.Cost{})
	if d := time.Since(start); d > 50*time.Millisecond {
		t.Errorf("Reserve after Fail freed the slot took %v", d)
	}
}

func TestReserveHonoursContext(t *testing.T) {
	b := newBudget(t, limiter.Limits{RPM: 60, Burst: time.Second}) // one request, then one per second
	key := testKey(t)
	if _, err := b.Reserve(context.Background(), key, limiter.Cost{Requests: 1}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := b.Reserve(ctx, key, limiter.Cost{Requests: 1})
		done <- err
	}()
	time.Sleep(30 * time.Millisecond)
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("err = %v, want Canceled", err)
		}
	case <-time.After(time.Second):
		t.Fatal("Reserve did not return after cancel")
	}
	if _, err := b.Reserve(ctx, key, limiter.Cost{Requests: 1}); !errors.Is(err, context.Canceled) {
		t.Errorf("Reserve with a cancelled context: err = %v", err)
	}
	st := b.Stats()[0]
	if st.Waiting != 0 || st.Reservations != 1 || st.Wait < 20*time.Millisecond {
		t.Errorf("Stats: waiting %d reservations %d wait %v", st.Waiting, st.Reservations, st.Wait)
	}
	lv, _ := levels(t, b, key)
	if lv[0] > 0.2 || math.IsNaN(lv[0]) {
		t.Errorf("requests level %v: the cancelled Reserve took or returned something", lv[0])
	}
}

func TestRedisErrorsAreReturned(t *testing.T) {
	b := newBudget(t, limiter.Limits{RPM: 60}, func(o *Options) { o.OnError = nil })
	b.client.Close()
	if _, err := b.Reserve(context.Background(), testKey(t), limiter.Cost{Requests: 1}); err == nil {
		t.Error("Reserve on a closed client: no error")
	}
}

func TestLocalEndWakesTheHead(t *testing.T) {
	// Nothing polls: ending a ticket wakes the room's first at once. On the
	// explicit clock no timer fires, so only the wake-up can admit it.
	clk := newTestClock(t)
	b := clk.budget(t, limiter.Limits{RPM: 60000, Concurrency: 1})
	key := testKey(t)
	t1, err := b.Reserve(context.Background(), key, limiter.Cost{Requests: 1})
	if err != nil {
		t.Fatal(err)
	}
	got := reserveAsync(b, key, limiter.Cost{Requests: 1})
	clk.waiting(t, "the second Reserve, for the only slot")
	notYet(t, got, "the second Reserve, while the slot is held,")
	t1.Settle(limiter.Cost{})
	admitted(t, got, "the waiter after the slot was freed (the clock standing still)").Settle(limiter.Cost{})
}

func TestSkewKeepsAMargin(t *testing.T) {
	// 10/s, capacity 10; a 200ms skew keeps 2 requests in reserve: 8 go at
	// once, the 9th waits until the bucket holds 1 + 2.
	clk := newTestClock(t)
	b := clk.budget(t, limiter.Limits{RPM: 600, Skew: 200 * time.Millisecond})
	key := testKey(t)
	for range 8 {
		if _, err := b.Reserve(context.Background(), key, limiter.Cost{Requests: 1}); err != nil {
			t.Fatal(err)
		}
	}
	clk.idle(t, "8 of a capacity of 10")
	got := reserveAsync(b, key, limiter.Cost{Requests: 1})
	if d := clk.waiting(t, "the 9th"); d != 100*time.Millisecond {
		t.Errorf("the 9th told to wait %v, want 100ms (the skew margin)", d)
	}
	clk.advance(99 * time.Millisecond)
	notYet(t, got, "the 9th, 1ms before the skew margin refills,")
	clk.advance(time.Millisecond)
	admitted(t, got, "the 9th after 100ms")
}

// TestRefusedPausesEveryProcess: a 429 without retry-after pauses the key
// in every process for the backoff, doubling with each further one in a
// row; overloads are counted and pause only for a hint. With limits given
// no rate is learned, but a 429 of a ticket admitted before the last
// backoff (an echo) doubles nothing, as in limiter.
func TestRefusedPausesEveryProcess(t *testing.T) {
	lim := limiter.Limits{RPM: 60000}
	clk := newTestClock(t)
	a, b := clk.budget(t, lim), clk.budget(t, lim)
	key := testKey(t)
	// Set up before the pauses, which Redis expires on its own clock: a
	// Reserve is then one script, well within them.
	ready(t, key, a, b)
	ctx := context.Background()
	base := limiter.DefaultAIMD.BackoffBase
	// waitOut runs a Reserve of bg through a pause of want, on the
	// explicit clock, and returns its ticket.
	waitOut := func(bg *Budget, want time.Duration, what string) limiter.Ticket {
		t.Helper()
		got := reserveAsync(bg, key, limiter.Cost{Requests: 1})
		if d := clk.waiting(t, what); d != want {
			t.Errorf("%s: told to wait %v, want %v", what, d, want)
		}
		clk.advance(want - time.Millisecond)
		notYet(t, got, what+", 1ms before the pause ends,")
		clk.advance(time.Millisecond)
		return admitted(t, got, what)
	}
	reserve := func(bg *Budget) limiter.Ticket {
		t.Helper()
		tk, err := bg.Reserve(ctx, key, limiter.Cost{Requests: 1})
		if err != nil {
			t.Fatal(err)
		}
		return tk
	}
	t1, t2 := reserve(a), reserve(a)
	clk.advance(time.Millisecond) // their answers come a little later
	t1.Refused(limiter.Refusal{})
	t2.Refused(limiter.Refusal{}) // admitted before the first refusal: an echo
	waitOut(b, base, "another process during a's pause").Refused(limiter.Refusal{Overloaded: true})
	t3 := reserve(a)
	clk.idle(t, "a's Reserve after the first pause")
	clk.advance(time.Millisecond)
	t3.Refused(limiter.Refusal{}) // no success since: doubled
	waitOut(b, 2*base, "after a second 429 in a row").Cancel()
	if s := a.Stats()[0]; s.RateLimited != 3 {
		t.Errorf("429s = %d, want 3", s.RateLimited)
	}
	if s := b.Stats()[0]; s.Overloaded != 1 || s.RateLimited != 0 {
		t.Errorf("b: overloads %d, 429s %d; want 1, 0", s.Overloaded, s.RateLimited)
	}
}
