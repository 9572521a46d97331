package redisbudget

import (
	"fmt"
	"sync"
	"time"

	"github.com/llmrun/llmrun/limiter"
)

// ticket is one admitted attempt. It is safe for concurrent use; the first
// of Settle, Fail and Cancel ends it, later calls are no-ops.
type ticket struct {
	b    *Budget
	k    *keyState
	id   string // member of the key's in-flight set
	cost limiter.Cost
	mask uint8 // buckets charged
	// after is the key's cumulative charges right after this admission
	// (all processes): what was charged since is what a header computed
	// when this request reached the provider cannot know about.
	after [numBuckets]float64
	// n is the key's local admission count at this ticket: a refusal of a
	// ticket admitted before the last one is its echo.
	n int64

	mu   sync.Mutex
	done bool
}

var _ limiter.Ticket = (*ticket)(nil)

// Cost returns what the ticket took.
func (t *ticket) Cost() limiter.Cost { return t.cost }

// Settle ends the attempt with the usage the response reported: refunds
// over-reservation (up to each bucket's capacity), charges
// under-reservation (a bucket may go negative) and frees the slot.
// actual.Requests is ignored: a sent request keeps its request charge.
func (t *ticket) Settle(actual limiter.Cost) {
	actual.Requests = t.cost.Requests
	t.finish(actual)
	t.k.mu.Lock()
	t.k.streak = max(t.k.streak-1, 0)
	t.k.mu.Unlock()
}

// Fail ends an attempt that produced no usage: it keeps the request charge,
// refunds the token charges and frees the slot.
func (t *ticket) Fail() { t.finish(limiter.Cost{Requests: t.cost.Requests}) }

// Refused ends an attempt the server turned away for load, as Fail does,
// and pauses the key in every process: for the server's hint, or after a
// 429 without one for a backoff (limiter.DefaultAIMD.BackoffBase, doubling
// per further hint-less 429 until a success; 429s of tickets admitted
// before the last one are echoes and pause nothing more). Rates are not
// learned from 429s here (see the package comment).
func (t *ticket) Refused(r limiter.Refusal) {
	t.mu.Lock()
	done := t.done
	t.mu.Unlock()
	if done {
		return
	}
	t.finish(limiter.Cost{Requests: t.cost.Requests})
	b, k := t.b, t.k
	var d time.Duration
	k.mu.Lock()
	switch {
	case r.Overloaded:
		k.overloaded++
	default:
		k.rateLimited++
	}
	switch {
	case r.HasRetryAfter:
		d = r.RetryAfter
	case !r.Overloaded && t.n > k.refusedAt:
		k.refusedAt = k.reserved
		k.streak++
		d = min(limiter.DefaultAIMD.BackoffBase<<min(k.streak-1, 30), b.o.MaxPause)
	}
	k.mu.Unlock()
	if d > 0 {
		b.Pause(k.name, b.now().Add(d))
	}
}

// Cancel ends a ticket whose request was never sent: everything is
// returned, the request charge included, and the slot is freed.
func (t *ticket) Cancel() { t.finish(limiter.Cost{}) }

// finish reconciles the buckets from the reserved cost to actual.
func (t *ticket) finish(actual limiter.Cost) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.done {
		return
	}
	t.done = true
	k, b := t.k, t.b
	k.mu.Lock()
	p := k.p
	k.finish(t)
	k.mu.Unlock()
	args := make([]any, 0, 3+4*numBuckets)
	args = append(args, t.id, b.o.StateTTL.Milliseconds(), k.channel)
	for i := range numBuckets {
		d := 0.0
		if t.mask&(1<<i) != 0 {
			d = t.cost.Amount(i) - actual.Amount(i)
		}
		args = append(args, p.rate[i], p.base[i], p.max[i], d)
	}
	ctx, cancel := b.opContext()
	defer cancel()
	keys := []string{k.redisKeys[rkState], k.redisKeys[rkInflight], k.redisKeys[rkRoom]}
	if err := finishScript.Run(ctx, b.client, keys, args...).Err(); err != nil {
		b.report(fmt.Errorf("redisbudget: settle %q: %w", k.name, err))
	}
}

// Observe applies the rate-limit headers of this attempt's response, which
// the provider computed at headersAt or before. It only ever lowers
// buckets: each to what the header says remained, plus the refill since
// headersAt, minus everything charged to the key (by any process) after
// this ticket. It may be called before or after Settle/Fail.
func (t *ticket) Observe(o limiter.Observation, headersAt time.Time) {
	t.b.observe(t.k, o, t.b.now().Sub(headersAt), 't', t.after)
}
