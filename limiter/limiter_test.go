package limiter

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// Tests in this file run inside synctest bubbles: time.Now and timers are
// fake, and synctest.Wait returns once every goroutine is blocked, so the
// blocking paths are exercised deterministically with no real sleeps.

// result is what a Reserve in a goroutine produced, and when.
type result struct {
	r   *Reservation
	err error
	at  time.Time
}

func reserveAsync(ctx context.Context, l *Limiter, key string, c Cost) <-chan result {
	ch := make(chan result, 1)
	go func() {
		r, err := l.Reserve(ctx, key, c)
		ch <- result{r, err, time.Now()}
	}()
	return ch
}

func mustReserve(t *testing.T, l *Limiter, key string, c Cost) *Reservation {
	t.Helper()
	r, err := l.Reserve(context.Background(), key, c)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// pending fails the test unless ch has nothing yet.
func pending(t *testing.T, ch <-chan result, what string) {
	t.Helper()
	synctest.Wait()
	select {
	case res := <-ch:
		t.Fatalf("%s: admitted early (err %v)", what, res.err)
	default:
	}
}

func done(t *testing.T, ch <-chan result, what string) result {
	t.Helper()
	synctest.Wait()
	select {
	case res := <-ch:
		if res.err != nil {
			t.Fatalf("%s: %v", what, res.err)
		}
		return res
	default:
		t.Fatalf("%s: still waiting", what)
		return result{}
	}
}

func TestReserveWaitsForSlowestBucketAndTakesAll(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := New(Options{Defaults: Limits{RPM: 120, ITPM: 600}}) // 2 req/s (cap 2), 10 input/s (cap 10)
		start := time.Now()
		mustReserve(t, l, "k", Cost{1, 10, 0})
		ch := reserveAsync(context.Background(), l, "k", Cost{1, 5, 0})
		pending(t, ch, "input-bound request")
		k := l.key("k")
		k.mu.Lock()
		if got := k.b[0].level; got != 1 {
			t.Errorf("requests level = %v while waiting on input, want 1 (nothing taken)", got)
		}
		k.mu.Unlock()
		time.Sleep(499 * time.Millisecond)
		pending(t, ch, "at 499ms")
		time.Sleep(time.Millisecond)
		res := done(t, ch, "at 500ms")
		if d := res.at.Sub(start); d != 500*time.Millisecond {
			t.Fatalf("admitted after %v, want 500ms", d)
		}
		k.mu.Lock()
		defer k.mu.Unlock()
		if got := levels(k); got[0] != 1 || got[1] != 0 {
			t.Fatalf("levels = %v, want requests 1 (2-1), input 0", got)
		}
	})
}

func TestPauseIsSharedByAllWaiters(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := New(Options{Defaults: Limits{Concurrency: 1}})
		start := time.Now()
		r := mustReserve(t, l, "k", Cost{Requests: 1})
		// One worker's 429 with retry-after 5s pauses the key for everyone.
		l.pause("k", start.Add(5*time.Second))
		l.pause("k", start.Add(time.Second)) // must not shorten it
		var chs []<-chan result
		for range 3 {
			chs = append(chs, reserveAsync(context.Background(), l, "k", Cost{Requests: 1}))
		}
		time.Sleep(time.Second)
		r.Settle(Cost{Requests: 1}) // a free slot does not end the pause
		time.Sleep(3999 * time.Millisecond)
		for _, ch := range chs {
			pending(t, ch, "during pause")
		}
		time.Sleep(time.Millisecond)
		// The slot admits them one at a time, all at the pause's end.
		got := map[int]bool{}
		for range chs {
			synctest.Wait()
			admitted := 0
			for i, ch := range chs {
				select {
				case res := <-ch:
					if d := res.at.Sub(start); d != 5*time.Second {
						t.Fatalf("admitted at %v, want 5s", d)
					}
					admitted++
					got[i] = true
					res.r.Settle(Cost{})
				default:
				}
			}
			if admitted != 1 {
				t.Fatalf("%d admitted at once with concurrency 1", admitted)
			}
		}
		if len(got) != 3 {
			t.Fatalf("admitted %v, want all 3", got)
		}
		if s := l.Stats()[0]; s.WaitBy[DimPause] == 0 {
			t.Fatalf("pause wait not attributed: %+v", s.WaitBy)
		}
	})
}

// TestLongPauseHintIsClamped: one retry-after of a day must not stall the
// key for more than MaxPause; the cut is counted and told once per pause.
func TestLongPauseHintIsClamped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var warns []string
		l := New(Options{Warn: func(m string) { warns = append(warns, m) }})
		start := time.Now()
		l.pause("k", start.Add(24*time.Hour))
		l.pause("k", start.Add(time.Hour)) // the same congestion: counted, not told again
		time.Sleep(time.Second)
		l.pause("k", time.Now().Add(time.Hour)) // later, still paused: not told again
		ch := reserveAsync(context.Background(), l, "k", Cost{Requests: 1})
		// The last hint, cut, ends the pause at 1s + MaxPause.
		want := time.Second + DefaultMaxPause
		time.Sleep(want - time.Second - time.Millisecond)
		pending(t, ch, "during the clamped pause")
		time.Sleep(time.Millisecond)
		if res := done(t, ch, "at the maximum pause"); res.at.Sub(start) != want {
			t.Fatalf("admitted after %v, want %v", res.at.Sub(start), want)
		}
		if s := l.Stats()[0]; s.PauseClamped != 3 {
			t.Errorf("PauseClamped = %d, want 3", s.PauseClamped)
		}
		if len(warns) != 1 || !strings.Contains(warns[0], `"k"`) || !strings.Contains(warns[0], "24h0m0s") || !strings.Contains(warns[0], "5m0s") {
			t.Errorf("warnings = %q, want one naming the key, the hint and the maximum", warns)
		}
		// A shorter hint is obeyed as given; MaxPause is configurable.
		l = New(Options{MaxPause: time.Minute})
		l.pause("k", time.Now().Add(30*time.Second))
		l.pause("j", time.Now().Add(2*time.Minute))
		st := l.Stats()
		if got := time.Until(st[1].PausedUntil); got != 30*time.Second || st[1].PauseClamped != 0 {
			t.Errorf("30s hint: paused %v (clamped %d), want 30s (0)", got, st[1].PauseClamped)
		}
		if got := time.Until(st[0].PausedUntil); got != time.Minute || st[0].PauseClamped != 1 {
			t.Errorf("2m hint with MaxPause 1m: paused %v (clamped %d), want 1m (1)", got, st[0].PauseClamped)
		}
	})
}

func TestFIFOBigRequestNotStarved(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := New(Options{Defaults: Limits{ITPM: 600}}) // 10 tokens/s, cap 10
		ctx := context.Background()
		start := time.Now()
		mustReserve(t, l, "k", Cost{Input: 10}) // bucket empty
		big := reserveAsync(ctx, l, "k", Cost{Input: 100})
		synctest.Wait()
		// Small requests arrive at 20 tokens/s, twice the refill: served
		// greedily they would keep the bucket empty forever.
		var order []string
		var mu sync.Mutex
		var wg sync.WaitGroup
		for i := range 100 {
			time.Sleep(50 * time.Millisecond)
			wg.Go(func() {
				if _, err := l.Reserve(ctx, "k", Cost{Input: 1}); err != nil {
					t.Error(err)
				}
				mu.Lock()
				order = append(order, "small")
				mu.Unlock()
			})
			_ = i
		}
		res := <-big
		mu.Lock()
		order = append(order, "big")
		smallsBefore := len(order) - 1
		mu.Unlock()
		if smallsBefore != 0 {
			t.Fatalf("%d small requests that queued behind the big one overtook it", smallsBefore)
		}
		if d := res.at.Sub(start); d != 10*time.Second {
			t.Fatalf("big admitted after %v, want 10s (100 tokens at 10/s)", d)
		}
		wg.Wait()
	})
}

func TestCancelWhileWaitingLeavesBucketsUntouched(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := New(Options{Defaults: Limits{ITPM: 600}})
		mustReserve(t, l, "k", Cost{Input: 10})
		ctx, cancel := context.WithCancel(context.Background())
		head := reserveAsync(ctx, l, "k", Cost{Input: 50}) // raises the cap to 50, waits 5s
		synctest.Wait()
		behind := reserveAsync(context.Background(), l, "k", Cost{Input: 3})
		time.Sleep(2 * time.Second)
		cancel()
		res := <-head
		if !errors.Is(res.err, context.Canceled) || res.r != nil {
			t.Fatalf("cancelled Reserve = %v, %v", res.r, res.err)
		}
		// The request behind the cancelled head is admitted at once from the
		// 20 tokens accrued in 2s.
		r := done(t, behind, "request behind a cancelled head")
		k := l.key("k")
		k.mu.Lock()
		defer k.mu.Unlock()
		if got := k.b[1].level; got != 17 {
			t.Fatalf("input level = %v, want 17 (20 - 3): the cancelled request took something", got)
		}
		if k.inflight != 2 || len(k.q) != 0 {
			t.Fatalf("inflight=%d queued=%d, want 2 0", k.inflight, len(k.q))
		}
		_ = r
	})
}

func TestCancelledContextBeforeReserve(t *testing.T) {
	l := New(Options{Defaults: Limits{RPM: 60}})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := l.Reserve(ctx, "k", Cost{Requests: 1}); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if s := l.Stats(); len(s) != 0 {
		t.Fatalf("a refused Reserve created state: %+v", s)
	}
}

func TestConcurrencySlotReleasedOnFailAndSettle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := New(Options{Defaults: Limits{Concurrency: 1, RPM: 6000}})
		r1 := mustReserve(t, l, "k", Cost{Requests: 1})
		w2 := reserveAsync(context.Background(), l, "k", Cost{Requests: 1})
		pending(t, w2, "second attempt while the slot is held")
		r1.Fail()
		r2 := done(t, w2, "after Fail").r
		w3 := reserveAsync(context.Background(), l, "k", Cost{Requests: 1})
		pending(t, w3, "third attempt")
		r2.Settle(Cost{Requests: 1})
		r2.Settle(Cost{Requests: 1}) // second end is a no-op, not a second release
		r2.Fail()
		r3 := done(t, w3, "after Settle").r
		w4 := reserveAsync(context.Background(), l, "k", Cost{Requests: 1})
		pending(t, w4, "fourth attempt: a double Settle must not free a slot")
		r3.Settle(Cost{})
		done(t, w4, "after third Settle")
		if s := l.Stats()[0]; s.WaitBy[DimConcurrency] != 0 || s.Reservations != 4 || s.InFlight != 1 {
			// no time passed, so no wait
			t.Fatalf("stats = %+v", s)
		}
	})
}

func TestTooLargeFailsAtOnce(t *testing.T) {
	l := New(Options{Defaults: Limits{ITPM: 1000}})
	_, err := l.Reserve(context.Background(), "k", Cost{Requests: 1, Input: 1001})
	var tl *TooLargeError
	if !errors.Is(err, ErrTooLarge) || !errors.As(err, &tl) || tl.Dimension != DimInput || tl.Limit != 1000 {
		t.Fatalf("err = %v, want a TooLargeError on input with limit 1000", err)
	}
	if want := `limiter: key "k": request needs 1001 input but the limit is 1000 per minute`; err.Error() != want {
		t.Fatalf("message %q, want %q", err, want)
	}
}

func TestTooLargeAfterLimitsShrinkWhileQueued(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := New(Options{Defaults: Limits{ITPM: 600}})
		mustReserve(t, l, "k", Cost{Input: 10})
		ch := reserveAsync(context.Background(), l, "k", Cost{Input: 500})
		synctest.Wait()
		l.SetLimits("k", Limits{ITPM: 100})
		synctest.Wait()
		res := <-ch
		if !errors.Is(res.err, ErrTooLarge) {
			t.Fatalf("err = %v, want ErrTooLarge", res.err)
		}
	})
}

func TestStatsAttributeWaitToBindingDimension(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := New(Options{Defaults: Limits{RPM: 60}}) // 1 req/s, cap 1
		mustReserve(t, l, "k", Cost{Requests: 1})
		a := reserveAsync(context.Background(), l, "k", Cost{Requests: 1})
		synctest.Wait()
		b := reserveAsync(context.Background(), l, "k", Cost{Requests: 1})
		time.Sleep(2 * time.Second)
		done(t, a, "a")
		done(t, b, "b")
		s := l.Stats()[0]
		// a waited 1s, b 2s, both on requests.
		if s.Wait != 3*time.Second || s.WaitBy[DimRequests] != 3*time.Second || s.Binding != DimRequests {
			t.Fatalf("Wait=%v WaitBy=%v Binding=%v, want 3s all requests", s.Wait, s.WaitBy, s.Binding)
		}
		if s.Effective.RPM != 60 || s.Reservations != 3 || s.InFlight != 3 {
			t.Fatalf("stats = %+v", s)
		}
	})
}

func TestManyWorkersStayWithinLimits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const workers, perWorker = 64, 10
		l := New(Options{Defaults: Limits{RPM: 600, ITPM: 60000, Concurrency: 8}})
		start := time.Now()
		var inflight, peak atomic.Int64
		var mu sync.Mutex
		var admitted []time.Duration
		var wg sync.WaitGroup
		for range workers {
			wg.Go(func() {
				for range perWorker {
					r, err := l.Reserve(context.Background(), "k", Cost{Requests: 1, Input: 135})
					if err != nil {
						t.Error(err)
						return
					}
					mu.Lock()
					admitted = append(admitted, time.Since(start))
					mu.Unlock()
					n := inflight.Add(1)
					for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
					}
					time.Sleep(300 * time.Millisecond)
					inflight.Add(-1)
					r.Settle(Cost{Requests: 1, Input: 130})
				}
			})
		}
		wg.Wait()
		if p := peak.Load(); p > 8 {
			t.Fatalf("peak in flight %d > 8", p)
		}
		// 640 requests; ITPM binds: 1000 tokens/s ≈ 7.4 req/s (settled at
		// 130, so ≈ 7.7/s). Any 1s window holds at most cap + 1s of refill.
		for i := range admitted {
			n := 0
			for j := i; j < len(admitted) && admitted[j]-admitted[i] <= time.Second; j++ {
				n++
			}
			if n > 20 {
				t.Fatalf("%d admissions within 1s of %v, want ≤ 20 (10 req/s + cap 10)", n, admitted[i])
			}
		}
		total := time.Since(start)
		lower := time.Duration(float64(workers*perWorker*130-1000) / 1000 * float64(time.Second))
		if total < lower || total > lower*11/10 {
			t.Fatalf("took %v, want within 10%% of the ITPM bound %v", total, lower)
		}
		if s := l.Stats()[0]; s.Binding != DimInput {
			t.Fatalf("binding = %v, want input (WaitBy %v)", s.Binding, s.WaitBy)
		}
	})
}

// fakeClock drives a Limiter through Options.Now and Options.NewTimer.
type fakeClock struct {
	mu      sync.Mutex
	now     time.Time
	created chan time.Duration // every NewTimer announces itself
	timers  []fakeTimer
}

type fakeTimer struct {
	at time.Time
	c  chan time.Time
}

func newFakeClock() *fakeClock { return &fakeClock{now: t0, created: make(chan time.Duration, 16)} }

func (f *fakeClock) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

func (f *fakeClock) NewTimer(d time.Duration) (<-chan time.Time, func() bool) {
	f.mu.Lock()
	c := make(chan time.Time, 1)
	f.timers = append(f.timers, fakeTimer{f.now.Add(d), c})
	f.mu.Unlock()
	f.created <- d
	return c, func() bool { return true }
}

// Advance moves the clock and fires every timer due.
func (f *fakeClock) Advance(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.now = f.now.Add(d)
	keep := f.timers[:0]
	for _, t := range f.timers {
		if !t.at.After(f.now) {
			t.c <- f.now
		} else {
			keep = append(keep, t)
		}
	}
	f.timers = keep
}

func TestInjectedClockAndTimer(t *testing.T) {
	fc := newFakeClock()
	l := New(Options{Defaults: Limits{OTPM: 6000}, Now: fc.Now, NewTimer: fc.NewTimer}) // 100/s, cap 100
	mustReserve(t, l, "k", Cost{Output: 100})
	ch := make(chan error, 1)
	go func() {
		_, err := l.Reserve(context.Background(), "k", Cost{Output: 50})
		ch <- err
	}()
	if d := <-fc.created; d != 500*time.Millisecond {
		t.Fatalf("timer for %v, want 500ms", d)
	}
	fc.Advance(499 * time.Millisecond)
	select {
	case err := <-ch:
		t.Fatalf("admitted before its time (%v)", err)
	default:
	}
	fc.Advance(time.Millisecond)
	if err := <-ch; err != nil {
		t.Fatal(err)
	}
	if s := l.Stats()[0]; s.Wait != 500*time.Millisecond || s.Binding != DimOutput {
		t.Fatalf("stats = %+v", s)
	}
}

func TestAutoLearnsFromObserve(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := New(Options{Defaults: Limits{Auto: true}})
		r := mustReserve(t, l, "k", Cost{Requests: 1, Input: 100})
		w := reserveAsync(context.Background(), l, "k", Cost{Requests: 1, Input: 100})
		pending(t, w, "slow start admits one at a time")
		l.Observe("k", Observation{
			Requests: Window{Limit: 60, Remaining: 59},
			Input:    Window{Limit: 6000, Remaining: 5900},
			Output:   Window{Limit: -1, Remaining: -1},
			Tokens:   Window{Limit: -1, Remaining: -1},
		})
		r.Settle(Cost{Requests: 1, Input: 100})
		r2 := done(t, w, "after the first success").r
		s := l.Stats()[0]
		if !s.Learned || s.Effective.RPM != 60 || s.Effective.ITPM != 6000 || s.Effective.Concurrency != 2 {
			t.Fatalf("effective = %+v learned=%v", s.Effective, s.Learned)
		}
		// The learned 1 req/s now paces admissions.
		w3 := reserveAsync(context.Background(), l, "k", Cost{Requests: 1, Input: 100})
		time.Sleep(999 * time.Millisecond)
		pending(t, w3, "paced by the learned RPM")
		time.Sleep(time.Millisecond)
		done(t, w3, "after 1s")
		l.rateLimited("k")
		if s := l.Stats()[0]; s.Effective.Concurrency != 1 || s.RateLimited != 1 {
			t.Fatalf("after a 429: %+v", s)
		}
		r2.Fail()
	})
}

// TestReservationObserveCountsUnseenAdmissions: a header computed when
// request A reached the provider cannot know about B, admitted after A.
// Clamping to the bare remaining count would forget B's charge and let the
// key overrun the limit by whatever is in flight.
func TestReservationObserveCountsUnseenAdmissions(t *testing.T) {
	now := time.Unix(1000, 0)
	l := New(Options{Defaults: Limits{ITPM: 60000}, Now: func() time.Time { return now }}) // 1000/s, capacity 1000
	ctx := context.Background()
	a, err := l.Reserve(ctx, "k", Cost{Requests: 1, Input: 100})
	if err != nil {
		t.Fatal(err)
	}
	b, err := l.Reserve(ctx, "k", Cost{Requests: 1, Input: 100})
	if err != nil {
		t.Fatal(err)
	}
	level := func() float64 {
		k := l.key("k")
		k.mu.Lock()
		defer k.mu.Unlock()
		k.syncAt(now)
		return k.b[1].level
	}
	if got := level(); got != 800 {
		t.Fatalf("level %v after two reservations, want 800", got)
	}
	// Another client used 400 tokens: when A arrived the provider had 500 left.
	headersAt := now
	now = now.Add(100 * time.Millisecond) // A's stream ends later; 100 tokens refilled meanwhile
	a.Settle(Cost{Requests: 1, Input: 100})
	a.Observe(Observation{Input: Window{Limit: 60000, Remaining: 500}}, headersAt)
	// The provider now holds 500 + 100 refill - 100 (B) = 500.
	if got := level(); got != 500 {
		t.Fatalf("level %v after the header, want 500 (remaining + refill - B)", got)
	}
	// A stale header showing more than we hold never raises the bucket.
	b.Observe(Observation{Input: Window{Limit: 60000, Remaining: 1000}}, now)
	if got := level(); got != 500 {
		t.Fatalf("level %v: a header raised the bucket", got)
	}
	b.Settle(Cost{Requests: 1, Input: 100})
	// Without a reservation, everything in flight counts as unseen.
	c, _ := l.Reserve(ctx, "k", Cost{Requests: 1, Input: 200}) // level 300, 200 in flight
	l.Observe("k", Observation{Input: Window{Limit: 60000, Remaining: 400}})
	if got := level(); got != 200 {
		t.Fatalf("level %v after a reservation-less header, want 400 - 200 in flight", got)
	}
	c.Fail()
}
