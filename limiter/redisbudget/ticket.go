package redisbudget

import (
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/llmrun/llmrun/limiter"
)

// ticket is one admitted attempt. It is safe for concurrent use; the first
// of Settle, Fail, Refused and Cancel ends it, later calls are no-ops.
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
	// ep and ms are the shared AIMD's epoch and measurement at admission
	// (-1: it did not run): a 429 of an older epoch is an echo of a cut.
	ep, ms int64
	// at is when it was admitted, for the latency of its answer.
	at time.Time

	mu   sync.Mutex
	done bool
}

var _ limiter.Ticket = (*ticket)(nil)

// Cost returns what the ticket took.
func (t *ticket) Cost() limiter.Cost { return t.cost }

// Settle ends the attempt with the usage the response reported: refunds
// over-reservation (up to each bucket's capacity), charges
// under-reservation (a bucket may go negative) and frees the slot; the
// shared AIMD counts it answered (a key learning its limits starts its
// ramp from the first answer). actual.Requests is ignored: a sent request
// keeps its request charge.
func (t *ticket) Settle(actual limiter.Cost) {
	actual.Requests = t.cost.Requests
	t.finish('s', actual)
}

// Fail ends an attempt that produced no usage: it keeps the request charge,
// refunds the token charges and frees the slot.
func (t *ticket) Fail() { t.finish('f', limiter.Cost{Requests: t.cost.Requests}) }

// Cancel ends a ticket whose request was never sent: everything is
// returned, the request charge included, and the slot is freed.
func (t *ticket) Cancel() { t.finish('c', limiter.Cost{}) }

// end marks the ticket ended; it reports false if it already was.
func (t *ticket) end() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.done {
		return false
	}
	t.done = true
	return true
}

// leave ends t in this process: false if it had ended already; else it
// leaves its key's in-flight and, in the same critical section, adds one to
// count (nil: none). p and conf are the key's of that moment.
func (t *ticket) leave(count *int64) (p params, conf limiter.Limits, ok bool) {
	if !t.end() {
		return p, conf, false
	}
	k := t.k
	k.mu.Lock()
	defer k.mu.Unlock()
	k.finish(t)
	if count != nil {
		*count++
	}
	return k.p, k.conf, true
}

// args are the arguments finishSrc and refusedSrc share: ticket id,
// state TTL, channel, headroom, burst, then what follows (between), then
// per bucket the parameters and the delta from reserved to actual.
func (t *ticket) args(p params, conf limiter.Limits, actual limiter.Cost, between ...any) []any {
	b, k := t.b, t.k
	args := make([]any, 0, 5+len(between)+4*numBuckets)
	args = append(args, t.id, b.o.StateTTL.Milliseconds(), k.channel, conf.Headroom, conf.Burst.Seconds())
	args = append(args, between...)
	for i := range numBuckets {
		d := 0.0
		if t.mask&(1<<i) != 0 {
			d = t.cost.Amount(i) - actual.Amount(i)
		}
		args = append(args, p.rate[i], p.base[i], p.max[i], d)
	}
	return args
}

// tokens is what c counts in the AIMD's token dimension.
func tokens(c limiter.Cost) int64 { return c.Input + c.Output }

// finish reconciles the buckets from the reserved cost to actual and tells
// the shared AIMD how the attempt ended (kind 's', 'f' or 'c').
func (t *ticket) finish(kind byte, actual limiter.Cost) {
	p, conf, ok := t.leave(nil)
	if !ok {
		return
	}
	k, b := t.k, t.b
	learn := 0
	if conf.Auto {
		learn = 1
	}
	latency := b.now().Sub(t.at)
	args := t.args(p, conf, actual, string(kind), t.ep, t.ms, t.cost.Requests, tokens(t.cost), tokens(actual), micros(max(latency, 0)), learn)
	ctx, cancel := b.opContext()
	defer cancel()
	keys := []string{k.redisKeys[rkState], k.redisKeys[rkInflight], k.redisKeys[rkRoom], k.redisKeys[rkLearned]}
	if err := b.sc.finish.Run(ctx, b.client, keys, args...).Err(); err != nil {
		b.report(fmt.Errorf("redisbudget: settle %q: %w", k.name, err))
	}
}

// Refused ends an attempt the server turned away for load, as Fail does,
// and tells the key, in every process: a 429 pauses it for the server's
// hint (at most MaxPause) and, where no headers describe the key, feeds
// the shared AIMD, which cuts the rates it learned from 429s and, without
// a hint, pauses the key for its backoff (with limits given, the backoff
// alone); a 429 of a ticket admitted before the last cut or backoff, in
// any process, is an echo: it cuts nothing and backs off no further. An
// overload (503/529) pauses it only for a hint.
func (t *ticket) Refused(r limiter.Refusal) {
	count := &t.k.rateLimited
	if r.Overloaded {
		count = &t.k.overloaded
	}
	p, conf, ok := t.leave(count)
	if !ok {
		return
	}
	k, b := t.k, t.b
	hint := int64(-1)
	if r.HasRetryAfter {
		hint = micros(max(r.RetryAfter, 0))
	}
	overloaded := 0
	if r.Overloaded {
		overloaded = 1
	}
	args := t.args(p, conf, limiter.Cost{Requests: t.cost.Requests}, overloaded, t.ep, t.ms, t.cost.Requests, tokens(t.cost), hint, micros(b.o.MaxPause))
	args = append(args, refusalArgs(r, p)...)
	ctx, cancel := b.opContext()
	defer cancel()
	keys := []string{k.redisKeys[rkState], k.redisKeys[rkInflight], k.redisKeys[rkRoom], k.redisKeys[rkLearned], k.redisKeys[rkPause]}
	res, err := b.sc.refused.Run(ctx, b.client, keys, args...).Slice()
	if err != nil {
		b.report(fmt.Errorf("redisbudget: refused %q: %w", k.name, err))
		return
	}
	if len(res) != 6 {
		b.report(fmt.Errorf("redisbudget: refused %q: unexpected reply %v", k.name, res))
		return
	}
	set, _ := res[1].(int64)
	before, _ := res[2].(int64)
	now := b.now()
	clamped := hint > micros(b.o.MaxPause)
	k.mu.Lock()
	k.aimd(res[3], res[4], res[5])
	if clamped {
		k.pauseClamped++
	}
	if until := now.Add(time.Duration(set) * time.Microsecond); set > 0 && until.After(k.paused) {
		k.paused = until
	}
	k.mu.Unlock()
	// Told when it starts a pause: the 429s of one congestion tell once.
	if clamped && before == 0 && b.o.Warn != nil {
		b.o.Warn(limiter.PauseClampedMessage(k.name, r.RetryAfter, b.o.MaxPause))
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

// aimd takes the shared AIMD's rates (per second, as strings) and cuts
// from a script's reply, for Stats. It requires k.mu held.
func (k *keyState) aimd(r1, r2, cuts any) {
	s1, _ := r1.(string)
	s2, _ := r2.(string)
	k.aimdRate[0], _ = strconv.ParseFloat(s1, 64)
	k.aimdRate[1], _ = strconv.ParseFloat(s2, 64)
	k.aimdCuts, _ = cuts.(int64)
}

// refusalArgs are refusedScript's last arguments for a 429 r on a key
// with params p: whether it is bare (nothing describes the key: no limits
// given or learned, no headers on the 429), so the shared AIMD learns from
// it, as limiter does; what it names for the AIMD; and the bucket a
// described key's 429 without headers or hint empties (1-4, 0: none;
// -1: the 429 had headers, which calibrate the key instead).
func refusalArgs(r limiter.Refusal, p params) []any {
	bare := !r.Described
	for i := range numBuckets {
		bare = bare && p.rate[i] <= 0
	}
	named := 0
	switch r.Dimension {
	case limiter.DimRequests:
		named = 1
	case limiter.DimTokens, limiter.DimInput, limiter.DimOutput:
		named = 2
	}
	drain := 0
	if r.Described {
		drain = -1
	}
	if d := r.Dimension; !bare && !r.Described && d >= limiter.DimRequests && d <= limiter.DimTokens {
		i := int(d - limiter.DimRequests)
		switch {
		case p.rate[i] > 0:
			drain = i + 1
		case d == limiter.DimTokens && p.rate[1] > 0:
			drain = 2
		}
	}
	b := 0
	if bare {
		b = 1
	}
	return []any{b, named, drain}
}
