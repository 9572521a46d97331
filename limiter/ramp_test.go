package limiter

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// rampingKey is an Auto key whose first answer came back after latency:
// the 429 learner's ramp paces it from one request per latency, with a
// concurrency window wide enough not to bind, its bucket drained.
func rampingKey(t *testing.T, latency time.Duration) *keyState {
	t.Helper()
	k := newKey(Limits{Auto: true})
	k.cwnd = 1000
	k.answeredAt(t0, t0.Add(-latency), AIMDMark{}, Cost{Requests: 1}, Cost{Requests: 1})
	if !k.b[0].paced {
		t.Fatal("the ramp's bucket is not paced")
	}
	for k.b[0].level >= 1 {
		if _, dim := k.reserveAt(t0, Cost{Requests: 1}); dim != DimNone {
			t.Fatalf("draining the bucket: blocked on %v", dim)
		}
	}
	return k
}

// TestPacedHeadGathersAQuarterGrain: where several wait on a paced bucket,
// the head sleeps until a quarter grain's worth has refilled (or as many
// as wait), so the waiters go in a run rather than each after a timer of its
// own; one waiter alone waits only for its own request.
func TestPacedHeadGathersAQuarterGrain(t *testing.T) {
	for _, tt := range []struct {
		waiting int
		want    time.Duration
	}{
		{1, time.Millisecond},         // one request at 1,000/s
		{2, 2 * time.Millisecond},     // as many as wait
		{40, 2500 * time.Microsecond}, // a quarter of the 10ms grain
	} {
		k := rampingKey(t, time.Millisecond) // 1,000/s, a grain of 10
		lvl := k.b[0].level
		for range tt.waiting {
			k.enqueue(&waiter{cost: Cost{Requests: 1}, arrived: t0, wake: make(chan struct{}, 1)}, PriorityNormal, 0)
		}
		wait, dim := k.reserveAt(t0, Cost{Requests: 1})
		want := tt.want - time.Duration(lvl*float64(time.Millisecond))
		if dim != DimRequests || !near(wait, want) {
			t.Errorf("%d waiting: head waits %v on %v, want %v on requests", tt.waiting, wait, dim, want)
		}
	}
}

// TestFinishWakesHeadOnlyWhenItCanGo: an answer wakes the queue's head
// when it waits for a slot or the answer refunded a bucket it waits on,
// not when it sleeps until a bucket refills (that was a wake-up and a new
// timer per answer).
func TestFinishWakesHeadOnlyWhenItCanGo(t *testing.T) {
	for _, tt := range []struct {
		name      string
		blocked   Dimension
		reserved  Cost
		actual    Cost
		wantWoken bool
	}{
		{"rate-bound head, nothing refunded", DimRequests, Cost{Requests: 1}, Cost{Requests: 1}, false},
		{"slot-bound head", DimConcurrency, Cost{Requests: 1}, Cost{Requests: 1}, true},
		{"tokens refunded", DimInput, Cost{Requests: 1, Input: 50}, Cost{Requests: 1, Input: 10}, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			k := newKey(Limits{RPM: 60, ITPM: 60})
			k.b[1].level = 0
			seq := k.seq
			k.inflight = 1
			w := &waiter{cost: Cost{Requests: 1}, arrived: t0, wake: make(chan struct{}, 1)}
			k.enqueue(w, PriorityNormal, 0)
			k.blocked = tt.blocked
			k.finishAt(t0, k.charged(), seq, tt.reserved, tt.actual, true)
			if woken := len(w.wake) == 1; woken != tt.wantWoken {
				t.Fatalf("head woken = %v, want %v", woken, tt.wantWoken)
			}
		})
	}
	t.Run("cancel refunds the request", func(t *testing.T) {
		k := newKey(Limits{RPM: 60})
		k.reserveAt(t0, Cost{Requests: 1})
		w := &waiter{cost: Cost{Requests: 1}, arrived: t0, wake: make(chan struct{}, 1)}
		k.enqueue(w, PriorityNormal, 0)
		k.blocked = DimRequests
		k.cancelAt(t0, k.charged(), k.seq, Cost{Requests: 1})
		if len(w.wake) != 1 {
			t.Fatal("a cancel refunded the request the head waits for, but did not wake it")
		}
	})
}

// countingTimers is Options.NewTimer over time.NewTimer (fake in a synctest
// bubble) that counts the timers started.
func countingTimers(n *atomic.Int64) func(time.Duration) (<-chan time.Time, func() bool) {
	return func(d time.Duration) (<-chan time.Time, func() bool) {
		n.Add(1)
		tm := time.NewTimer(d)
		return tm.C, tm.Stop
	}
}

// TestWaiterKeepsItsTimer: a waiter woken for nothing (here, limits set
// again unchanged) looks again without starting a second timer.
func TestWaiterKeepsItsTimer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var timers atomic.Int64
		l := New(Options{Defaults: Limits{RPM: 60}, NewTimer: countingTimers(&timers)}) // 1/s, cap 1
		start := time.Now()
		mustReserve(t, l, "k", Cost{Requests: 1})
		ch := reserveAsync(context.Background(), l, "k", Cost{Requests: 1})
		for range 5 {
			synctest.Wait()
			l.SetLimits("k", Limits{RPM: 60}) // wakes the head
		}
		pending(t, ch, "a second request at 1/s")
		time.Sleep(time.Second)
		if res := done(t, ch, "after 1s"); res.at.Sub(start) != time.Second {
			t.Fatalf("admitted after %v, want 1s", res.at.Sub(start))
		}
		if n := timers.Load(); n != 1 {
			t.Fatalf("%d timers started for one wait woken 5 times, want 1", n)
		}
	})
}

// TestRampReachesAFastServerInTensOfMs: 64 workers against a server that
// answers in 2ms and describes no limits. The ramp doubles per round trip
// (10ms, the grain), so in the first 100ms the key admits 800–1,500 (the
// concurrency window's own slow start lags behind the rate); per fixed
// 100ms it admitted 55. The head sleeps per quarter grain, not per
// request: far fewer timers than admissions (it was more timers than
// admissions).
func TestRampReachesAFastServerInTensOfMs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var timers atomic.Int64
		l := New(Options{Defaults: Limits{Auto: true, Concurrency: 64}, NewTimer: countingTimers(&timers)})
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		var admitted atomic.Int64
		var wg sync.WaitGroup
		for range 64 {
			wg.Go(func() {
				for {
					r, err := l.Reserve(ctx, "k", Cost{Requests: 1})
					if err != nil {
						return
					}
					admitted.Add(1)
					time.Sleep(2 * time.Millisecond)
					r.Settle(Cost{Requests: 1})
				}
			})
		}
		wg.Wait()
		// 64 slots over 2ms: at most 3,200 in 100ms.
		n, tm := admitted.Load(), timers.Load()
		t.Logf("%d admitted in 100ms, %d timers", n, tm)
		if n < 600 {
			t.Errorf("%d admitted in the first 100ms, want at least 600 (of 3,200 the slots allow)", n)
		}
		if tm > n/4 {
			t.Errorf("%d timers for %d admissions, want at most one per 4", tm, n)
		}
	})
}
