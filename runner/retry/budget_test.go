package retry

import (
	"math"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func at(d time.Duration) time.Time { return t0.Add(d) }

func tryN(b *Budget, now time.Time, n int) int {
	ok := 0
	for range n {
		if b.TryRetry(now) {
			ok++
		}
	}
	return ok
}

func TestBudgetAllowance(t *testing.T) {
	b := NewBudget(0.2, time.Minute, 10)
	if got := tryN(b, t0, 15); got != 10 {
		t.Fatalf("with no first attempts, %d retries allowed, want the allowance 10", got)
	}
	if got := b.WaitTime(t0); got != time.Minute {
		t.Errorf("WaitTime = %v, want the whole window", got)
	}
	if f, r, d := b.Counts(t0); f != 0 || r != 10 || d != 5 {
		t.Errorf("Counts = %d, %d, %d; want 0, 10, 5", f, r, d)
	}
}

func TestBudgetRatio(t *testing.T) {
	b := NewBudget(0.2, time.Minute, 10)
	for range 100 {
		b.RecordFirst(t0)
	}
	if got := tryN(b, at(time.Second), 50); got != 30 {
		t.Fatalf("100 first attempts: %d retries allowed, want 10 + 0.2×100 = 30", got)
	}
	// Each five more first attempts buy one retry.
	for range 5 {
		b.RecordFirst(at(2 * time.Second))
	}
	if got := tryN(b, at(2*time.Second), 5); got != 1 {
		t.Errorf("5 more first attempts: %d more retries, want 1", got)
	}
}

func TestBudgetZeroRatioAndAllowance(t *testing.T) {
	b := NewBudget(0, time.Minute, 0)
	b.RecordFirst(t0)
	if b.TryRetry(t0) {
		t.Error("ratio 0, allowance 0: retry allowed")
	}
	for _, b := range []*Budget{NewBudget(-1, time.Minute, -3), NewBudget(math.NaN(), 0, 0)} {
		b.RecordFirst(t0)
		if b.TryRetry(t0) {
			t.Error("negative/NaN ratio and negative allowance: retry allowed")
		}
	}
	b = NewBudget(math.Inf(1), time.Minute, 1)
	if got := tryN(b, t0, 3); got != 1 {
		t.Errorf("ratio +Inf, no first attempts: %d allowed, want the allowance 1", got)
	}
	b.RecordFirst(t0)
	if got := tryN(b, t0, 100); got != 100 {
		t.Errorf("ratio +Inf: %d of 100 allowed", got)
	}
}

// TestBudgetSlidingWindow: with 6s buckets, an event counts from its
// bucket until ten buckets later.
func TestBudgetSlidingWindow(t *testing.T) {
	b := NewBudget(0, time.Minute, 2)
	if !b.TryRetry(at(1*time.Second)) || !b.TryRetry(at(31*time.Second)) {
		t.Fatal("allowance refused")
	}
	steps := []struct {
		now  time.Duration
		ok   bool
		wait time.Duration // WaitTime before trying
	}{
		{32 * time.Second, false, 28 * time.Second}, // bucket 0 (retry at 1s) leaves at 60s
		{59*time.Second + 999*time.Millisecond, false, time.Millisecond},
		{60 * time.Second, true, 0},                 // bucket 0 gone; 1 retry (31s) left
		{61 * time.Second, false, 29 * time.Second}, // 31s retry (bucket 5) leaves at 90s; 60s one at 120s
		{90 * time.Second, true, 0},
		{91 * time.Second, false, 29 * time.Second},
		{10 * time.Minute, true, 0}, // long gap clears the ring
		{10 * time.Minute, true, 0},
		{10 * time.Minute, false, time.Minute},
	}
	for _, s := range steps {
		if got := b.WaitTime(at(s.now)); got != s.wait {
			t.Errorf("at %v: WaitTime = %v, want %v", s.now, got, s.wait)
		}
		if got := b.TryRetry(at(s.now)); got != s.ok {
			t.Errorf("at %v: TryRetry = %v, want %v", s.now, got, s.ok)
		}
	}
}

// TestBudgetWaitTimeFirstsExpire: when the first attempts that earned the
// retries leave the window before the retries do, the budget shrinks, and
// WaitTime looks past that to when the retries leave too.
func TestBudgetWaitTimeFirstsExpire(t *testing.T) {
	b := NewBudget(0.5, time.Minute, 1)
	for range 10 {
		b.RecordFirst(t0)
	}
	if got := tryN(b, at(30*time.Second), 10); got != 6 {
		t.Fatalf("allowed %d, want 1 + 0.5×10 = 6", got)
	}
	// At 60s the firsts leave (budget 1, retries 6): still refused.
	// At 90s the retries leave: allowed.
	if got, want := b.WaitTime(at(31*time.Second)), 59*time.Second; got != want {
		t.Errorf("WaitTime = %v, want %v", got, want)
	}
	if b.TryRetry(at(60 * time.Second)) {
		t.Error("allowed at 60s")
	}
	if !b.TryRetry(at(90 * time.Second)) {
		t.Error("refused at 90s")
	}
}

// TestBudgetWaitTimeIsExact: for many random histories, TryRetry fails
// just before now+WaitTime and (with nothing recorded in between)
// succeeds at it.
func TestBudgetWaitTimeIsExact(t *testing.T) {
	waited := 0
	for seed := range uint64(200) {
		b := NewBudget(0.3, time.Minute, 2)
		now := t0
		x := seed*2654435761 + 1
		next := func(n uint64) uint64 { x ^= x << 13; x ^= x >> 7; x ^= x << 17; return x % n }
		for range 40 {
			now = now.Add(time.Duration(next(4000)) * time.Millisecond)
			if next(3) == 0 {
				b.RecordFirst(now)
			} else {
				b.TryRetry(now)
			}
		}
		w := b.WaitTime(now)
		if w == 0 {
			continue
		}
		waited++
		probe := &Budget{ratio: b.ratio, allowance: b.allowance, width: b.width,
			started: b.started, head: b.head, firsts: b.firsts, retries: b.retries}
		if probe.TryRetry(now.Add(w - time.Nanosecond)) {
			t.Errorf("seed %d: TryRetry succeeded before WaitTime %v", seed, w)
		}
		if !b.TryRetry(now.Add(w)) {
			t.Errorf("seed %d: TryRetry failed at WaitTime %v", seed, w)
		}
	}
	if waited < 50 {
		t.Errorf("only %d of 200 histories ended over budget; the test checks too little", waited)
	}
}

func TestBudgetClockBackwards(t *testing.T) {
	b := NewBudget(0, time.Minute, 1)
	b.RecordFirst(at(time.Minute))
	if !b.TryRetry(t0) { // earlier than seen: counts in the newest bucket
		t.Fatal("refused")
	}
	if b.TryRetry(at(time.Minute)) {
		t.Error("the backdated retry was not counted")
	}
}

func TestBudgetNil(t *testing.T) {
	var b *Budget
	b.RecordFirst(t0)
	if !b.TryRetry(t0) || b.WaitTime(t0) != 0 {
		t.Error("nil budget limits")
	}
	if f, r, d := b.Counts(t0); f|r|d != 0 {
		t.Error("nil budget counts")
	}
}

func TestBudgetConcurrent(t *testing.T) {
	b := NewBudget(0.2, time.Minute, 10)
	var wg sync.WaitGroup
	var ok atomic.Int64
	for g := range 16 {
		wg.Go(func() {
			for i := range 100 {
				now := at(time.Duration(g*100+i) * time.Microsecond)
				b.RecordFirst(now)
				if b.TryRetry(now) {
					ok.Add(1)
				}
				b.WaitTime(now)
			}
		})
	}
	wg.Wait()
	// 1600 first attempts within one bucket: at most 10 + 320 retries.
	if got := ok.Load(); got > 330 {
		t.Errorf("%d retries allowed, want at most 330", got)
	}
	if f, r, _ := b.Counts(at(time.Second)); f != 1600 || int64(r) != ok.Load() {
		t.Errorf("Counts = %d, %d; want 1600, %d", f, r, ok.Load())
	}
}
