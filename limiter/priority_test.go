package limiter

import (
	"context"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

func TestParsePriority(t *testing.T) {
	for in, want := range map[string]int{"high": 1, "HIGH": 1, "normal": 0, "low": -1, "7": 7, "-1000": -1000, " 3 ": 3} {
		if got, err := ParsePriority(in); err != nil || got != want {
			t.Errorf("ParsePriority(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "urgent", "1.5", "1001", "-1001"} {
		if _, err := ParsePriority(in); err == nil {
			t.Errorf("ParsePriority(%q): no error", in)
		}
	}
}

// TestWaitQueueOrder pushes and removes waiters at random and checks that
// the head is always the least by (virtual arrival, call).
func TestWaitQueueOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var q waitQueue
	var all []*waiter
	for i := range 2000 {
		if len(all) > 0 && rng.IntN(3) == 0 {
			j := rng.IntN(len(all))
			if _, ok := q.remove(all[j]); !ok {
				t.Fatalf("waiter %d not found", j)
			}
			all = slices.Delete(all, j, j+1)
		} else {
			w := &waiter{vt: rng.Int64N(50), seq: uint64(i)}
			q.push(w)
			all = append(all, w)
		}
		if len(q) != len(all) {
			t.Fatalf("len %d, want %d", len(q), len(all))
		}
		if len(all) == 0 {
			continue
		}
		best := slices.MinFunc(all, func(a, b *waiter) int {
			if a.vt != b.vt {
				return int(a.vt - b.vt)
			}
			return int(a.seq) - int(b.seq)
		})
		if q[0] != best {
			t.Fatalf("step %d: head (%d,%d), want (%d,%d)", i, q[0].vt, q[0].seq, best.vt, best.seq)
		}
		for k, w := range q {
			if w.idx != k {
				t.Fatalf("step %d: waiter at %d says %d", i, k, w.idx)
			}
		}
	}
}

// admissions starts one Reserve per priority, each a second after the
// previous, and returns their admission order once the slot the test
// holds is released and every Reserve ends.
func admissions(t *testing.T, l *Limiter, prios []int, release func()) []int {
	t.Helper()
	var (
		mu    sync.Mutex
		order []int
		wg    sync.WaitGroup
	)
	for i, p := range prios {
		wg.Go(func() {
			r, err := l.ReservePriority(context.Background(), "k", Cost{Requests: 1}, p)
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			order = append(order, i)
			mu.Unlock()
			time.Sleep(time.Second)
			r.Settle(Cost{Requests: 1})
		})
		time.Sleep(time.Second)
		synctest.Wait()
	}
	release()
	wg.Wait()
	return order
}

// TestPriorityOrderAndFIFOWithin: a key at its concurrency limit admits its
// waiters highest priority first, first come first served within one.
func TestPriorityOrderAndFIFOWithin(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := New(Options{Defaults: Limits{Concurrency: 1}}) // no aging: strictly by priority
		hold := mustReserve(t, l, "k", Cost{Requests: 1})
		prios := []int{PriorityLow, PriorityNormal, PriorityHigh, 5, PriorityNormal, PriorityHigh, PriorityLow, 5}
		got := admissions(t, l, prios, func() { hold.Settle(Cost{Requests: 1}) })
		want := []int{3, 7, 2, 5, 1, 4, 0, 6}
		if !slices.Equal(got, want) {
			t.Fatalf("admitted %v, want %v (by priority, then arrival)", got, want)
		}
	})
}

// TestAgingOrdersByVirtualArrival: with aging, a waiter of priority p that
// arrived d earlier than one of priority p+1 goes first when d > aging.
func TestAgingOrdersByVirtualArrival(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := New(Options{Defaults: Limits{Concurrency: 1}, Aging: 2500 * time.Millisecond})
		hold := mustReserve(t, l, "k", Cost{Requests: 1})
		// Arrivals one second apart: low at 0s, normal at 1s, high at 2s,
		// high at 3s, normal at 4s. Virtual arrivals (arrival − p×2.5s):
		// 2.5, 1, -0.5, 0.5, 4.
		prios := []int{PriorityLow, PriorityNormal, PriorityHigh, PriorityHigh, PriorityNormal}
		got := admissions(t, l, prios, func() { hold.Settle(Cost{Requests: 1}) })
		want := []int{2, 3, 1, 0, 4}
		if !slices.Equal(got, want) {
			t.Fatalf("admitted %v, want %v (by virtual arrival)", got, want)
		}
	})
}

// starvation runs a continuous stream of high-priority requests on a key
// that admits one per second (RPM 60, no burst beyond one request), with
// three workers each asking again as soon as it is admitted, so the key
// always has high-priority waiters; a low-priority request arrives 10s
// in. It returns how long the low one waited (-1: not admitted within
// limit) and how many high ones were admitted in the meantime.
func starvation(t *testing.T, aging, limit time.Duration, cost Cost, lim Limits) (time.Duration, int) {
	t.Helper()
	var wait time.Duration = -1
	highs := 0
	synctest.Test(t, func(t *testing.T) {
		l := New(Options{Defaults: lim, Aging: aging})
		ctx, cancel := context.WithCancel(context.Background())
		var (
			mu      sync.Mutex
			lowDone bool
			wg      sync.WaitGroup
		)
		for range 3 {
			wg.Go(func() {
				for {
					r, err := l.ReservePriority(ctx, "k", Cost{Requests: 1, Input: 10}, PriorityHigh)
					if err != nil {
						return
					}
					r.Settle(Cost{Requests: 1, Input: 10})
					mu.Lock()
					if !lowDone {
						highs++
					}
					mu.Unlock()
				}
			})
		}
		time.Sleep(10 * time.Second)
		mu.Lock()
		highs = 0
		mu.Unlock()
		lctx, lcancel := context.WithTimeout(ctx, limit)
		start := time.Now()
		r, err := l.ReservePriority(lctx, "k", cost, PriorityLow)
		lcancel()
		mu.Lock()
		lowDone = true
		mu.Unlock()
		if err == nil {
			wait = time.Since(start)
			r.Settle(cost)
		}
		cancel()
		wg.Wait()
	})
	return wait, highs
}

// TestAgingPreventsStarvation: under a continuous stream of high-priority
// requests, a low-priority one is admitted within the aging bound (two
// classes × aging, plus the few high ones that arrived just before the
// bound), and high ones were served first until then; without aging it
// waits as long as the stream lasts.
func TestAgingPreventsStarvation(t *testing.T) {
	lim := Limits{RPM: 60, ITPM: 6000, Burst: time.Second}
	const aging = 30 * time.Second
	bound := 2 * aging // low (-1) to high (+1)

	wait, highs := starvation(t, aging, 10*time.Minute, Cost{Requests: 1, Input: 10}, lim)
	if wait < 0 {
		t.Fatal("the low-priority request was never admitted")
	}
	// The high ones waiting when the bound passes arrived before it:
	// three workers at one admission a second, so three seconds at most.
	if wait < bound-3*time.Second || wait > bound+3100*time.Millisecond {
		t.Errorf("low-priority request waited %v, want the aging bound %v (-3s, +3s)", wait, bound)
	}
	t.Logf("low-priority request admitted after %v, %d high ones first", wait, highs)
	if highs < 55 {
		t.Errorf("%d high-priority requests admitted while the low one waited, want about 60: priority did not hold", highs)
	}

	// A big low-priority request (the whole input bucket's minute) is not
	// starved either: once it heads the queue, the bucket fills for it.
	big := Cost{Requests: 1, Input: 6000}
	wait, _ = starvation(t, aging, 10*time.Minute, big, lim)
	t.Logf("big low-priority request admitted after %v", wait)
	if wait < 0 || wait > bound+3*time.Second+time.Minute {
		t.Errorf("big low-priority request waited %v, want at most the aging bound plus a minute's refill", wait)
	}

	// Without aging the stream starves it.
	if wait, highs := starvation(t, 0, 5*time.Minute, Cost{Requests: 1, Input: 10}, lim); wait >= 0 {
		t.Errorf("without aging the low-priority request was admitted after %v (%d high ones first), want never while the stream lasts", wait, highs)
	}
}
