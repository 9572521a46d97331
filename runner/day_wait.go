package runner

import (
	"context"
	"time"
)

// dayWait holds h's attempt for wait, a wait for its key's day: its reset
// (with --wait-daily; reset is then when) or the attempts in flight that
// hold the day's last units (reset zero). Either is llmrun's own wait, not
// the request's: like a breaker's hold or --max-cost room, it moves the
// request's deadline on. Progress and the summary show it as a wait for
// the daily limit (DayWaiting, DayReset, DayWaitNanos), not as the
// breaker's "provider down, holding". It reports what wait reported.
func (r *run) dayWait(h *hop, reset time.Time, wait func() bool) bool {
	r.dayWaiters(reset, 1)
	began := time.Now()
	ok := wait()
	held := time.Since(began)
	r.dayWaiters(reset, -1)
	r.c.DayWaitNanos.Add(int64(held))
	h.start = h.start.Add(held)
	return ok
}

// dayWaiters counts n more requests waiting for reset (zero: for no
// reset) and keeps DayReset the soonest reset still waited for. A new
// waiter's reset is stored before it is counted, and a leaving one
// uncounted first, so progress never shows a waiter without its reset.
func (r *run) dayWaiters(reset time.Time, n int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if n < 0 {
		r.c.DayWaiting.Add(int64(n))
	}
	if !reset.IsZero() {
		if r.dayResets == nil {
			r.dayResets = make(map[int64]int)
		}
		at := reset.UnixNano()
		if r.dayResets[at] += n; r.dayResets[at] <= 0 {
			delete(r.dayResets, at)
		}
		soonest := int64(0)
		for at := range r.dayResets {
			if soonest == 0 || at < soonest {
				soonest = at
			}
		}
		r.c.DayReset.Store(soonest)
	}
	if n > 0 {
		r.c.DayWaiting.Add(int64(n))
	}
}

// waitOn waits until ready is closed or ctx ends; it reports whether
// ready was.
func waitOn(ctx context.Context, ready <-chan struct{}) bool {
	select {
	case <-ready:
		return true
	case <-ctx.Done():
		return false
	}
}
