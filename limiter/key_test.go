package limiter

import (
	"errors"
	"math"
	"testing"
	"time"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func at(d time.Duration) time.Time { return t0.Add(d) }

func newKey(lim Limits) *keyState { return newKeyState("k", lim, t0) }

// step is one reserveAt call at t0+at.
type step struct {
	at       time.Duration
	cost     Cost
	wantWait time.Duration
	wantDim  Dimension
}

func runSteps(t *testing.T, k *keyState, steps []step) {
	t.Helper()
	for i, s := range steps {
		wait, dim := k.reserveAt(at(s.at), s.cost)
		if dim != s.wantDim || !near(wait, s.wantWait) {
			t.Fatalf("step %d (at %v, %+v): got (%v, %v), want (%v, %v)", i, s.at, s.cost, wait, dim, s.wantWait, s.wantDim)
		}
	}
}

// near compares durations computed from float rates to the microsecond.
func near(a, b time.Duration) bool { return (a - b).Abs() <= time.Microsecond }

func levels(k *keyState) [numBuckets]float64 {
	var l [numBuckets]float64
	for i := range k.b {
		l[i] = k.b[i].level
	}
	return l
}

func TestReserveAtSteps(t *testing.T) {
	tests := map[string]struct {
		lim   Limits
		steps []step
	}{
		"waits for the slowest bucket": {
			// 2 requests/s (cap 2), 10 input tokens/s (cap 10).
			lim: Limits{RPM: 120, ITPM: 600},
			steps: []step{
				{0, Cost{1, 10, 0}, 0, DimNone},
				{0, Cost{1, 5, 0}, 500 * time.Millisecond, DimInput},
				{250 * time.Millisecond, Cost{1, 5, 0}, 250 * time.Millisecond, DimInput},
				{500 * time.Millisecond, Cost{1, 5, 0}, 0, DimNone},
				// requests: 1.5 left after refill to 2 and two takes;
				// input: 0. Requests binds nothing, input binds.
				{500 * time.Millisecond, Cost{1, 1, 0}, 100 * time.Millisecond, DimInput},
			},
		},
		"requests bucket binds": {
			lim: Limits{RPM: 60, ITPM: 60000}, // 1 request/s, cap 1
			steps: []step{
				{0, Cost{1, 10, 0}, 0, DimNone},
				{0, Cost{1, 10, 0}, time.Second, DimRequests},
				{time.Second, Cost{1, 10, 0}, 0, DimNone},
			},
		},
		"burst caps what idle time saves": {
			lim: Limits{RPM: 60, Burst: 2 * time.Second}, // cap 2
			steps: []step{
				{0, Cost{Requests: 2}, 0, DimNone},
				// ten idle seconds refill only to the cap of 2
				{10 * time.Second, Cost{Requests: 1}, 0, DimNone},
				{10 * time.Second, Cost{Requests: 1}, 0, DimNone},
				{10 * time.Second, Cost{Requests: 1}, time.Second, DimRequests},
			},
		},
		"headroom scales the rate": {
			// 0.5/s; cap 0.5, raised to 1 because a request is 1
			lim: Limits{RPM: 60, Headroom: 0.5},
			steps: []step{
				{0, Cost{Requests: 1}, 0, DimNone},
				{0, Cost{Requests: 1}, 2 * time.Second, DimRequests},
				{2 * time.Second, Cost{Requests: 1}, 0, DimNone},
			},
		},
		"combined bucket charges input+output": {
			lim: Limits{TPM: 600}, // 10/s, cap 10
			steps: []step{
				{0, Cost{1, 4, 6}, 0, DimNone},
				{0, Cost{1, 1, 1}, 200 * time.Millisecond, DimTokens},
			},
		},
		"output bucket": {
			lim: Limits{ITPM: 6000, OTPM: 600},
			steps: []step{
				{0, Cost{1, 5, 10}, 0, DimNone},
				{0, Cost{1, 5, 5}, 500 * time.Millisecond, DimOutput},
			},
		},
		"no limits admits everything": {
			lim: Limits{},
			steps: []step{
				{0, Cost{1e6, 1e9, 1e9}, 0, DimNone},
				{0, Cost{1e6, 1e9, 1e9}, 0, DimNone},
			},
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) { runSteps(t, newKey(tt.lim), tt.steps) })
	}
}

func TestReserveAtIsAtomic(t *testing.T) {
	k := newKey(Limits{RPM: 120, ITPM: 600})
	k.reserveAt(t0, Cost{1, 10, 0})
	before := levels(k)
	// Requests would cover it, input would not: nothing may be taken.
	if _, dim := k.reserveAt(t0, Cost{1, 5, 0}); dim != DimInput {
		t.Fatalf("dim = %v, want input", dim)
	}
	if got := levels(k); got != before {
		t.Fatalf("a refused reservation changed levels: %v → %v", before, got)
	}
	if k.inflight != 1 || k.reservations != 1 {
		t.Fatalf("inflight=%d reservations=%d, want 1 1", k.inflight, k.reservations)
	}
}

func TestFinishAtRefundsAndCharges(t *testing.T) {
	tests := map[string]struct {
		reserved, actual Cost
		success          bool
		wantLevels       [numBuckets]float64 // requests, input, output, tokens
	}{
		// Limits below: requests cap 10, input cap 100, output cap 100, tokens cap 200.
		"refund over-reservation": {Cost{1, 50, 80}, Cost{1, 20, 30}, true, [4]float64{9, 80, 70, 150}},
		"charge under-reservation, bucket goes negative": {
			Cost{1, 50, 80}, Cost{1, 160, 80}, true, [4]float64{9, -60, 20, -40}},
		"actual.Requests is ignored": {Cost{1, 10, 10}, Cost{0, 10, 10}, true, [4]float64{9, 90, 90, 180}},
		"fail keeps the request charge, refunds tokens": {
			Cost{1, 50, 80}, Cost{}, false, [4]float64{9, 100, 100, 200}},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			k := newKey(Limits{RPM: 600, ITPM: 6000, OTPM: 6000, TPM: 12000})
			if _, dim := k.reserveAt(t0, tt.reserved); dim != DimNone {
				t.Fatalf("not admitted: %v", dim)
			}
			k.finishAt(t0, k.charged(), k.seq, tt.reserved, tt.actual, tt.success)
			if got := levels(k); got != tt.wantLevels {
				t.Fatalf("levels = %v, want %v", got, tt.wantLevels)
			}
			if k.inflight != 0 {
				t.Fatalf("slot not released: inflight = %d", k.inflight)
			}
		})
	}
}

func TestRefundIsCappedAtCapacity(t *testing.T) {
	k := newKey(Limits{ITPM: 600}) // 10/s, cap 10
	k.reserveAt(t0, Cost{Input: 8})
	// The bucket refills to its cap while the attempt is in flight; the
	// refund must not lift it above the cap.
	k.finishAt(at(time.Second), k.charged(), k.seq, Cost{Input: 8}, Cost{Input: 1}, true)
	if got := k.b[1].level; got != 10 {
		t.Fatalf("level = %v, want the cap 10", got)
	}
}

func TestNegativeBucketDelaysLaterAdmissions(t *testing.T) {
	k := newKey(Limits{ITPM: 600}) // 10/s, cap 10
	k.reserveAt(t0, Cost{Input: 10})
	k.finishAt(t0, k.charged(), k.seq, Cost{Input: 10}, Cost{Input: 30}, true) // level -20
	runSteps(t, k, []step{
		{0, Cost{Input: 5}, 2500 * time.Millisecond, DimInput},
		{2 * time.Second, Cost{Input: 5}, 500 * time.Millisecond, DimInput},
		{2500 * time.Millisecond, Cost{Input: 5}, 0, DimNone},
	})
}

func TestObserveClampsOnlyDown(t *testing.T) {
	unknown := Window{Limit: -1, Remaining: -1}
	k := newKey(Limits{RPM: 600, ITPM: 60000}) // caps 10 and 1000
	k.observeAt(t0, Observation{Requests: Window{Limit: 600, Remaining: 3}, Input: unknown, Output: unknown, Tokens: unknown}, t0, nil)
	if got := k.b[0].level; got != 3 {
		t.Fatalf("requests level = %v, want lowered to 3", got)
	}
	if got := k.b[1].level; got != 1000 {
		t.Fatalf("input level = %v, want untouched 1000", got)
	}
	// A later, larger remaining must not raise it (it may be stale).
	k.observeAt(t0, Observation{Requests: Window{Limit: 600, Remaining: 500}, Input: Window{Limit: 60000, Remaining: 59000}}, t0, nil)
	if got := k.b[0].level; got != 3 {
		t.Fatalf("requests level = %v, want still 3", got)
	}
	// Not Auto: limits from headers are ignored.
	if k.effective(0) != 600 || k.effective(1) != 60000 {
		t.Fatalf("explicit limits changed: %v %v", k.effective(0), k.effective(1))
	}
	// Zero windows (Observation{} fields left unset) are unknown, not "0 left".
	k.observeAt(at(time.Second), Observation{}, at(time.Second), nil)
	if got := k.b[0].level; got != 10 {
		t.Fatalf("zero Observation lowered the bucket: %v", got)
	}
}

func TestObserveAutoLearnsLimitsBelowExplicitCeiling(t *testing.T) {
	k := newKey(Limits{Auto: true, RPM: 120})
	if k.b[1].on() {
		t.Fatal("auto key has an input bucket before any header")
	}
	k.observeAt(t0, Observation{
		Requests: Window{Limit: 1000, Remaining: 999},
		Input:    Window{Limit: 60000, Remaining: 59000},
		Output:   Window{Limit: -1, Remaining: -1},
		Tokens:   Window{Limit: -1, Remaining: -1},
	}, t0, nil)
	if got := k.effective(0); got != 120 {
		t.Fatalf("RPM = %v: a header raised an explicit limit", got)
	}
	if got := k.effective(1); got != 60000 {
		t.Fatalf("ITPM = %v, want learned 60000", got)
	}
	if k.b[1].level != 1000 {
		t.Fatalf("new input bucket level = %v, want full 1000", k.b[1].level)
	}
	k.observeAt(t0, Observation{Requests: Window{Limit: 60, Remaining: 60}}, t0, nil)
	if got := k.effective(0); got != 60 {
		t.Fatalf("RPM = %v, want learned 60 (below the explicit 120)", got)
	}
}

func TestPauseAt(t *testing.T) {
	k := newKey(Limits{})
	k.pauseAt(t0, at(5*time.Second), 0)
	k.pauseAt(t0, at(2*time.Second), 0) // an earlier pause never shortens a later one
	runSteps(t, k, []step{
		{0, Cost{Requests: 1}, 5 * time.Second, DimPause},
		{4 * time.Second, Cost{Requests: 1}, time.Second, DimPause},
		{5 * time.Second, Cost{Requests: 1}, 0, DimNone},
	})
	// A bucket that needs longer than the pause binds instead.
	k = newKey(Limits{RPM: 6}) // 0.1/s, cap 1
	k.pauseAt(t0, at(time.Second), 0)
	k.pause = time.Time{}
	runSteps(t, k, []step{{0, Cost{Requests: 1}, 0, DimNone}})
	k.pauseAt(t0, at(time.Second), 0)
	runSteps(t, k, []step{{0, Cost{Requests: 1}, 10 * time.Second, DimRequests}})
}

func TestTooLarge(t *testing.T) {
	k := newKey(Limits{RPM: 60, ITPM: 600, OTPM: 100})
	for _, tt := range []struct {
		c    Cost
		want Dimension
	}{
		{Cost{1, 601, 0}, DimInput},
		{Cost{1, 10, 101}, DimOutput},
		{Cost{61, 0, 0}, DimRequests},
		{Cost{1, 600, 100}, DimNone}, // exactly the per-minute limit is allowed
	} {
		err := k.tooLarge(tt.c)
		var tl *TooLargeError
		switch {
		case tt.want == DimNone && err != nil:
			t.Errorf("%+v: unexpected %v", tt.c, err)
		case tt.want != DimNone && (!errors.Is(err, ErrTooLarge) || !errors.As(err, &tl) || tl.Dimension != tt.want):
			t.Errorf("%+v: err = %v, want ErrTooLarge on %v", tt.c, err, tt.want)
		}
	}
}

func TestRequestLargerThanBurstRaisesCapacity(t *testing.T) {
	// Burst capacity 10 input tokens, per-minute limit 600: a 100-token
	// request is allowed. On an idle (full) bucket it goes at once.
	k := newKey(Limits{ITPM: 600})
	runSteps(t, k, []step{
		{0, Cost{Input: 100}, 0, DimNone},
		{0, Cost{Input: 100}, 10 * time.Second, DimInput},
		{10 * time.Second, Cost{Input: 100}, 0, DimNone},
	})
	// The capacity stays at the largest request seen.
	k.syncAt(at(time.Hour))
	if k.b[1].cap != 100 || k.b[1].level != 100 {
		t.Fatalf("cap %v level %v, want 100 100", k.b[1].cap, k.b[1].level)
	}
	// A bucket that was not full is not topped up: it accrues.
	k = newKey(Limits{ITPM: 600})
	runSteps(t, k, []step{
		{0, Cost{Input: 5}, 0, DimNone},
		{0, Cost{Input: 100}, 9500 * time.Millisecond, DimInput},
		{9500 * time.Millisecond, Cost{Input: 100}, 0, DimNone},
	})
	// SetLimits keeps the raised capacity (within the new per-minute limit).
	k.setLimitsAt(at(10*time.Second), Limits{ITPM: 1200})
	if k.b[1].cap != 100 {
		t.Fatalf("cap after SetLimits = %v, want 100", k.b[1].cap)
	}
	k.setLimitsAt(at(10*time.Second), Limits{ITPM: 60})
	if k.b[1].cap != 60 {
		t.Fatalf("cap after lowering the limit = %v, want the per-minute 60", k.b[1].cap)
	}
}

func TestConcurrencyAt(t *testing.T) {
	k := newKey(Limits{Concurrency: 2})
	runSteps(t, k, []step{
		{0, Cost{Requests: 1}, 0, DimNone},
		{0, Cost{Requests: 1}, 0, DimNone},
		{0, Cost{Requests: 1}, 0, DimConcurrency},
	})
	k.finishAt(t0, k.charged(), k.seq, Cost{Requests: 1}, Cost{}, false)
	runSteps(t, k, []step{{0, Cost{Requests: 1}, 0, DimNone}, {0, Cost{Requests: 1}, 0, DimConcurrency}})
	k.finishAt(t0, k.charged(), k.seq, Cost{Requests: 1}, Cost{Requests: 1}, true)
	runSteps(t, k, []step{{0, Cost{Requests: 1}, 0, DimNone}})
}

// fill admits attempts until the concurrency window is full and returns
// their seqs.
func fill(t *testing.T, k *keyState) []uint64 {
	t.Helper()
	var seqs []uint64
	for {
		_, dim := k.reserveAt(t0, Cost{Requests: 1})
		if dim == DimConcurrency {
			return seqs
		}
		if dim != DimNone {
			t.Fatalf("blocked on %v", dim)
		}
		seqs = append(seqs, k.seq)
	}
}

func TestAutoSlowStartThenAIMD(t *testing.T) {
	k := newKey(Limits{Auto: true, Concurrency: 64})
	// round finishes every attempt in flight, in order, keeping the key
	// backlogged (each freed slot is refilled at once, as the runner's
	// waiting workers do); failed[i] makes the i-th attempt a 429.
	round := func(inflight []uint64, failed map[int]bool) []uint64 {
		var next []uint64
		for i, s := range inflight {
			if failed[i] {
				k.finishAt(t0, 0, s, Cost{Requests: 1}, Cost{}, false)
				k.rateLimitedAt(t0)
			} else {
				k.finishAt(t0, 0, s, Cost{Requests: 1}, Cost{Requests: 1}, true)
			}
			next = append(next, fill(t, k)...)
		}
		return next
	}
	inflight := fill(t, k)
	if len(inflight) != 1 {
		t.Fatalf("slow start begins with %d in flight, want 1", len(inflight))
	}
	// Slow start doubles the window per round of successes.
	for _, want := range []int{2, 4, 8, 16, 32} {
		inflight = round(inflight, nil)
		if k.inflight != want {
			t.Fatalf("in flight = %d, want %d", k.inflight, want)
		}
	}
	// Three 429s in one round are one congestion event: one halving.
	inflight = append(inflight[3:], round(inflight[:3], map[int]bool{0: true, 1: true, 2: true})...)
	if got := k.concLimit(); got != 16 {
		t.Fatalf("window = %d after 429s in one round, want 16", got)
	}
	if k.rateLimited != 3 {
		t.Fatalf("rateLimited = %d, want 3", k.rateLimited)
	}
	// Additive increase: about +1 per window of successes.
	for range 3 {
		before := k.concLimit()
		inflight = append(inflight[before:], round(inflight[:before], nil)...)
		if got := k.concLimit(); got != before+1 {
			t.Fatalf("window = %d after a round, want %d", got, before+1)
		}
	}
	// A 429 of an attempt admitted after the cut halves again.
	before := k.concLimit()
	round(inflight[len(inflight)-1:], map[int]bool{0: true})
	if got := k.concLimit(); got != before/2 {
		t.Fatalf("window = %d, want %d", got, before/2)
	}
}

func TestAutoDoesNotGrowWhenWindowUnused(t *testing.T) {
	k := newKey(Limits{Auto: true})
	k.cwnd = 4
	k.reserveAt(t0, Cost{Requests: 1})
	for range 100 {
		k.finishAt(t0, 0, k.seq, Cost{Requests: 1}, Cost{Requests: 1}, true)
		k.reserveAt(t0, Cost{Requests: 1})
	}
	if k.cwnd != 4 {
		t.Fatalf("cwnd = %v, want 4: one attempt at a time says nothing about 5", k.cwnd)
	}
}

func TestNormalize(t *testing.T) {
	got := normalize(Limits{RPM: -1, ITPM: math.NaN(), Headroom: 2, Concurrency: -3})
	want := Limits{Burst: time.Second, Headroom: 1}
	if got != want {
		t.Fatalf("normalize = %+v, want %+v", got, want)
	}
}

// TestSkewMargin: with Skew, admission keeps rate×Skew in the bucket
// beyond the cost (but never asks for more than the capacity), so a
// provider that counts the request up to Skew later is not overrun.
func TestSkewMargin(t *testing.T) {
	k := newKeyState("k", Limits{ITPM: 60000, Skew: 100 * time.Millisecond}, t0) // 1000/s, capacity 1000, margin 100
	if _, dim := k.reserveAt(t0, Cost{Input: 850}); dim != DimNone {
		t.Fatalf("full bucket refused 850 + 100 margin: %v", dim)
	}
	// Level 150: 100 more needs 200, i.e. 50 ms of refill.
	wait, dim := k.reserveAt(t0, Cost{Input: 100})
	if dim != DimInput || wait != 50*time.Millisecond {
		t.Fatalf("wait %v on %v, want 50ms on input", wait, dim)
	}
	// A request of the whole capacity needs only the capacity.
	k2 := newKeyState("k", Limits{ITPM: 60000, Skew: 100 * time.Millisecond}, t0)
	if _, dim := k2.reserveAt(t0, Cost{Input: 1000}); dim != DimNone {
		t.Fatalf("full bucket refused a capacity-sized request: %v", dim)
	}
}

// TestCancelReturnsEverything: a reservation whose request was never sent
// gives back the request charge too, and its slot.
func TestCancelReturnsEverything(t *testing.T) {
	k := newKey(Limits{RPM: 600, ITPM: 6000, OTPM: 6000, TPM: 12000, Concurrency: 1})
	if _, dim := k.reserveAt(t0, Cost{1, 50, 80}); dim != DimNone {
		t.Fatalf("not admitted: %v", dim)
	}
	k.cancelAt(t0, k.charged(), k.seq, Cost{1, 50, 80})
	if got, want := levels(k), [4]float64{10, 100, 100, 200}; got != want {
		t.Fatalf("levels = %v, want %v", got, want)
	}
	if k.inflight != 0 {
		t.Fatalf("slot not released")
	}
}

// TestAutoIgnoresDerivedTokensWindow: Anthropic sends a tokens window that
// restates the most restrictive of its input and output limits; learning it
// as a combined budget would charge input+output against the input limit.
func TestAutoIgnoresDerivedTokensWindow(t *testing.T) {
	k := newKeyState("k", Limits{Auto: true}, t0)
	k.observeAt(t0, Observation{
		Requests: Window{Limit: 600, Remaining: 599},
		Input:    Window{Limit: 60000, Remaining: 59000},
		Output:   Window{Limit: -1, Remaining: -1},
		Tokens:   Window{Limit: 60000, Remaining: 59000},
	}, t0, nil)
	if k.effective(1) != 60000 || k.effective(3) != 0 {
		t.Fatalf("learned ITPM %v, TPM %v; want 60000 and none", k.effective(1), k.effective(3))
	}
	// OpenAI sends only the combined window: that one is learned.
	k2 := newKeyState("k", Limits{Auto: true}, t0)
	k2.observeAt(t0, Observation{Requests: Window{Limit: 600, Remaining: 599}, Tokens: Window{Limit: 150000, Remaining: 149000},
		Input: Window{Limit: -1, Remaining: -1}, Output: Window{Limit: -1, Remaining: -1}}, t0, nil)
	if k2.effective(3) != 150000 {
		t.Fatalf("OpenAI TPM not learned: %v", k2.effective(3))
	}
}
