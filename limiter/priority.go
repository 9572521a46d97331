package limiter

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Priorities. A key admits its waiting attempts highest effective priority
// first, first come first served within one; an attempt's effective
// priority is its priority plus one per Options.Aging it has waited, so
// work of low priority always makes progress: a new arrival of priority p
// overtakes a waiter of priority q < p only within (p-q)×Aging of the
// waiter's own arrival.
//
// Aging that rises linearly with the wait leaves the order of two waiters
// fixed (both rise alike), so it is the order of their virtual arrivals,
// arrival − priority×Aging: a priority queue with a static key, no
// re-sorting as time passes, and the same number orders waiters of many
// processes in Redis.
const (
	MinPriority = -1000
	MaxPriority = 1000
	// PriorityHigh, PriorityNormal and PriorityLow are what the names
	// high, normal and low stand for: one class apart, so with the CLI's
	// aging of 30s a low request overtakes new high ones after a minute.
	PriorityHigh   = 1
	PriorityNormal = 0
	PriorityLow    = -1
	// MaxAging is the longest aging taken as such; a longer one (or 0)
	// means none: admissions go strictly by priority.
	MaxAging = 1_000_000 * time.Second
)

// DefaultAging is how long a waiting attempt waits to rise one priority,
// the CLI's default.
const DefaultAging = 30 * time.Second

// ParsePriority reads a priority: an integer from MinPriority to
// MaxPriority, or high, normal or low.
func ParsePriority(s string) (int, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "high":
		return PriorityHigh, nil
	case "normal":
		return PriorityNormal, nil
	case "low":
		return PriorityLow, nil
	}
	p, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil || p < MinPriority || p > MaxPriority {
		return 0, fmt.Errorf("priority %q: want an integer from %d to %d, or high, normal or low", s, MinPriority, MaxPriority)
	}
	return p, nil
}

// ClampPriority brings p within [MinPriority, MaxPriority].
func ClampPriority(p int) int { return min(max(p, MinPriority), MaxPriority) }

// agingOf is aging as the queues use it: 0 for none.
func agingOf(d time.Duration) time.Duration {
	if d <= 0 || d > MaxAging {
		return 0
	}
	return d
}

// VirtualArrival is the instant that orders a waiter that arrived at
// arrived with priority p under aging (0: none): the smaller first. Without
// aging it is arrived less p×MaxAging, so priority decides and arrival
// breaks ties (for waits shorter than MaxAging).
func VirtualArrival(arrived time.Time, p int, aging time.Duration) time.Time {
	if aging = agingOf(aging); aging == 0 {
		aging = MaxAging
	}
	return arrived.Add(-time.Duration(ClampPriority(p)) * aging)
}

// waitQueue is a key's waiters, a binary min-heap by (virtual arrival,
// sequence): q[0] is the only one that may be admitted. Each waiter knows
// its index, so one that gives up leaves in O(log n).
type waitQueue []*waiter

// less orders waiters: the earlier virtual arrival first, then the earlier
// call.
func (q waitQueue) less(i, j int) bool {
	a, b := q[i], q[j]
	if a.vt != b.vt {
		return a.vt < b.vt
	}
	return a.seq < b.seq
}

func (q waitQueue) swap(i, j int) {
	q[i], q[j] = q[j], q[i]
	q[i].idx, q[j].idx = i, j
}

func (q waitQueue) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !q.less(i, p) {
			return
		}
		q.swap(i, p)
		i = p
	}
}

func (q waitQueue) down(i int) bool {
	start, n := i, len(q)
	for {
		l := 2*i + 1
		if l >= n {
			break
		}
		c := l
		if r := l + 1; r < n && q.less(r, l) {
			c = r
		}
		if !q.less(c, i) {
			break
		}
		q.swap(i, c)
		i = c
	}
	return i > start
}

// push adds w.
func (q *waitQueue) push(w *waiter) {
	w.idx = len(*q)
	*q = append(*q, w)
	q.up(w.idx)
}

// removeAt takes out the waiter at index i and returns it.
func (q *waitQueue) removeAt(i int) *waiter {
	h := *q
	n := len(h) - 1
	w := h[i]
	if i != n {
		h.swap(i, n)
	}
	h[n] = nil
	h = h[:n]
	if i < n && !h.down(i) {
		h.up(i)
	}
	w.idx = -1
	if len(h) == 0 {
		h = nil
	}
	*q = h
	return w
}

// remove takes w out if it is queued; it reports whether it was the head.
func (q *waitQueue) remove(w *waiter) (wasHead, ok bool) {
	i := w.idx
	if i < 0 || i >= len(*q) || (*q)[i] != w {
		return false, false
	}
	q.removeAt(i)
	return i == 0, true
}
