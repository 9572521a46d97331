package retry

import (
	"math"
	"sync"
	"time"
)

// Defaults for NewBudget.
const (
	DefaultBudgetRatio     = 0.2
	DefaultBudgetWindow    = time.Minute
	DefaultBudgetAllowance = 10
)

// budgetBuckets is how many buckets one window is cut into.
const budgetBuckets = 10

// Budget caps retries at a fraction of first attempts over a sliding window,
// so a struggling provider sees at most 1+Ratio times the normal load
// instead of MaxAttempts times. Within any window, retries may number at
// most Allowance + Ratio × first attempts; the fixed Allowance lets small
// runs retry at all.
//
// The window is a ring of 10 buckets, each a tenth of the window and
// aligned to the Unix epoch, so memory is constant; an event counts until
// its bucket leaves the ring, that is for between 0.9 and 1 window. An
// instant earlier than one already seen counts in the newest bucket.
//
// A Budget is safe for concurrent use. A nil *Budget is no budget: every
// retry is allowed.
type Budget struct {
	ratio     float64
	allowance int
	width     time.Duration // of one bucket

	mu      sync.Mutex
	started bool
	head    int64 // index of the newest bucket, counted from the Unix epoch
	firsts  [budgetBuckets]int
	retries [budgetBuckets]int
	denied  int
}

// NewBudget returns a budget allowing allowance + ratio × first attempts
// retries per window. A negative or NaN ratio or negative allowance counts
// as 0; a window under 10ns is DefaultBudgetWindow.
func NewBudget(ratio float64, window time.Duration, allowance int) *Budget {
	if ratio < 0 || math.IsNaN(ratio) {
		ratio = 0
	}
	if window < budgetBuckets {
		window = DefaultBudgetWindow
	}
	return &Budget{ratio: ratio, allowance: max(allowance, 0), width: window / budgetBuckets}
}

// advance moves the ring to now's bucket, emptying the buckets that left
// the window. advance requires that b.mu is held.
func (b *Budget) advance(now time.Time) {
	k := bucketOf(now, b.width)
	if !b.started {
		b.head, b.started = k, true
		return
	}
	if k <= b.head {
		return
	}
	if k-b.head >= budgetBuckets {
		b.firsts, b.retries = [budgetBuckets]int{}, [budgetBuckets]int{}
	} else {
		for i := b.head + 1; i <= k; i++ {
			b.firsts[slot(i)], b.retries[slot(i)] = 0, 0
		}
	}
	b.head = k
}

// bucketOf is the index of now's bucket of the given width.
func bucketOf(now time.Time, width time.Duration) int64 {
	n, w := now.UnixNano(), int64(width)
	k := n / w
	if n%w < 0 {
		k--
	}
	return k
}

// slot is bucket k's place in the ring.
func slot(k int64) int64 {
	return (k%budgetBuckets + budgetBuckets) % budgetBuckets
}

// sums returns the first attempts and retries in the window, leaving out
// the oldest skip buckets. sums requires that b.mu is held.
func (b *Budget) sums(skip int) (firsts, retries int) {
	for i := int64(skip); i < budgetBuckets; i++ {
		j := slot(b.head - budgetBuckets + 1 + i)
		firsts += b.firsts[j]
		retries += b.retries[j]
	}
	return firsts, retries
}

func (b *Budget) allows(firsts, retries int) bool {
	limit := float64(b.allowance)
	if firsts > 0 { // +Inf × 0 would be NaN
		limit += b.ratio * float64(firsts)
	}
	return float64(retries) < limit
}

// RecordFirst counts a request's first attempt at now.
func (b *Budget) RecordFirst(now time.Time) {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.advance(now)
	b.firsts[slot(b.head)]++
}

// TryRetry reports whether a retry may start at now and, if so, counts it.
func (b *Budget) TryRetry(now time.Time) bool {
	if b == nil {
		return true
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.advance(now)
	if !b.allows(b.sums(0)) {
		b.denied++
		return false
	}
	b.retries[slot(b.head)]++
	return true
}

// WaitTime is how long from now until TryRetry would succeed if nothing
// else were recorded meanwhile: 0 when it would succeed now. It is a
// snapshot: other workers' first attempts may free budget sooner and their
// retries may take it first, so the runner waits min(WaitTime, its own
// delay bound) and then calls TryRetry again. If the budget cannot free up
// without new first attempts (allowance 0), WaitTime is at most one window.
func (b *Budget) WaitTime(now time.Time) time.Duration {
	if b == nil {
		return 0
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.advance(now)
	if b.allows(b.sums(0)) {
		return 0
	}
	bucketStart := time.Unix(0, b.head*int64(b.width))
	for skip := 1; skip <= budgetBuckets; skip++ {
		if b.allows(b.sums(skip)) {
			// The oldest skip buckets have left the ring once the
			// bucket head+skip begins.
			return bucketStart.Add(time.Duration(skip) * b.width).Sub(now)
		}
	}
	return b.width * budgetBuckets
}

// Counts returns the first attempts and retries counted in the window at
// now, and how many retries TryRetry has refused in all.
func (b *Budget) Counts(now time.Time) (firsts, retries, denied int) {
	if b == nil {
		return 0, 0, 0
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.advance(now)
	firsts, retries = b.sums(0)
	return firsts, retries, b.denied
}
