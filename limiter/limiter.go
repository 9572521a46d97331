// Package limiter schedules attempts against per-key budgets: up to four
// continuously refilled buckets (requests, input tokens, output tokens and
// combined tokens per minute, each holding Burst of refill, never less than
// the largest single cost seen), a concurrency limit and a shared pause.
//
// A key is whatever the caller says shares a budget (provider, base URL and
// model, or a pool name). Budgets are plain numbers: the package knows
// nothing of HTTP or providers; the runner translates responses into
// Observation and Refusal values.
//
// Per attempt the runner calls Budget.ReservePriority (an admission takes
// the cost from every bucket at once, or waits; waiters are served by
// priority, aged by Options.Aging, first come first served within one),
// sends, and ends the Ticket with exactly one of Settle (the response
// reported usage: over- and under-reservation are reconciled), Fail (no
// usage: the request charge stays), Refused (a 429, or a 503/529 as an
// overload: the key pauses for the server's hint, at most MaxPause) or
// Cancel (never sent: everything returns). Ticket.Observe applies the
// response's rate-limit headers, which only ever lower a bucket.
//
// In Auto mode a key learns its limits from *-limit-* headers (never above
// explicit numbers) and a TCP-like concurrency window. Where no headers
// describe a key, 429s teach it request and token rates (AIMD: cut on a
// 429, a backoff pause without a hint; in Auto mode a ramp from the first
// answers). Where limits are known (given, or from headers), a 429 cuts no
// rate: it empties the bucket it names and pauses (calibrate.go).
//
// Against acceleration limits (a sharp start refused even under the
// nominal limits), a key with no history and a high request limit starts
// paced and grows (Limits.WarmUp), and a refusal naming the acceleration
// limit (Refusal.Ramp) holds the admitted rate for a window, then grows it
// (accel.go). Days keeps per-day request and token budgets (the key's own,
// per calendar day in its time zone, and the provider's windows and
// refusals) apart: a spent day stops the run, it is not paced.
//
// Budget is what the runner schedules against: this package's *Limiter
// (AsBudget) or package redisbudget's, shared by several processes through
// Redis. Package budgettest holds the scenarios both must decide alike.
package limiter

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
)

// Cost is what one attempt takes from a key's budget. The combined-tokens
// bucket (TPM) is charged Input+Output.
type Cost struct{ Requests, Input, Output int64 }

// Limits configures one key. All rates are per minute; a zero rate means the
// key has no bucket for that dimension.
type Limits struct {
	RPM, ITPM, OTPM, TPM float64
	// Burst is how many seconds of refill a bucket may hold (default 1s).
	// The capacity is never below the largest single request seen: a
	// request larger than the burst, but within the per-minute limit,
	// raises it (see Reserve).
	Burst time.Duration
	// Headroom is the fraction of each rate to use (default 1; e.g. 0.95).
	Headroom float64
	// Concurrency is the maximum number of attempts in flight (0 =
	// unlimited; in Auto mode, the cap of the learned window).
	Concurrency int
	// Auto learns limits: concurrency starts at 1 and grows (slow start,
	// then +1 per round), halves on RateLimited; *-limit-* headers passed
	// to Observe set the buckets, never above explicit numbers.
	Auto bool
	// Skew is how long after admission the provider may count a request
	// (network and queueing delay; zero for none, DefaultSkew in the CLI).
	// A provider whose bucket is full when we admit but counts the request
	// Skew later has wasted Skew of refill we counted on, so we would
	// overrun it by rate×Skew: admissions therefore keep rate×Skew in each
	// bucket beyond the cost. It costs that much throughput once, not per
	// request.
	Skew time.Duration
	// WarmUp, when positive, starts a key with no history paced from a
	// few requests a second, growing by AccelConfig.Growth per Window,
	// for at most this long, instead of with a full bucket, once its
	// request limit is known to be over about 1,300 RPM (see accel.go):
	// acceleration limits refuse a sharp start. 0 disables it.
	WarmUp time.Duration
}

// DefaultSkew covers the time between admission and the provider counting
// the request on a typical keep-alive connection: the CLI's default.
const DefaultSkew = 100 * time.Millisecond

// Options configures a Limiter. The zero value is usable: no limits, real
// clock and timers.
type Options struct {
	// Defaults is applied to every key unless SetLimits overrides it.
	Defaults Limits
	// Now reads the clock; nil means time.Now.
	Now func() time.Time
	// NewTimer starts a timer that fires once after d and returns its
	// channel and stop function; nil means time.NewTimer.
	NewTimer func(d time.Duration) (<-chan time.Time, func() bool)
	// MaxPause is the longest key-wide pause (DefaultMaxPause when zero):
	// a longer retry-after stalls every request of the key, so it is cut to
	// MaxPause, counted (KeyStats.PauseClamped) and reported to Warn.
	MaxPause time.Duration
	// Warn receives one line per event worth telling the user (a pause
	// hint cut to MaxPause); nil drops them. It is called without locks
	// held.
	Warn func(msg string)
	// Aging is how long a waiting attempt waits to rise one priority (see
	// ReservePriority); 0 (or more than MaxAging) means no aging: strictly
	// by priority, first come first served within one.
	Aging time.Duration
}

// DefaultMaxPause caps a key-wide pause as retry policies cap one
// request's retry-after (retry.DefaultMaxServerDelay): a server asking for
// more is misconfigured or down, which the circuit breaker handles.
const DefaultMaxPause = 5 * time.Minute

// Dimension names what made a request wait.
type Dimension int

// The dimensions of a budget. DimNone is "nothing" (and, in
// KeyStats.WaitBy, waiting not yet attributed).
const (
	DimNone Dimension = iota
	DimRequests
	DimInput
	DimOutput
	DimTokens
	DimConcurrency
	DimPause
	// NumDimensions is the number of dimensions, DimNone included.
	NumDimensions
)

var dimNames = [NumDimensions]string{"none", "requests", "input", "output", "tokens", "concurrency", "pause"}

// String returns the dimension's lower-case name, as used in summaries.
func (d Dimension) String() string {
	if d < 0 || d >= NumDimensions {
		return fmt.Sprintf("Dimension(%d)", int(d))
	}
	return dimNames[d]
}

// ErrTooLarge is matched (errors.Is) by every *TooLargeError.
var ErrTooLarge = errors.New("limiter: request larger than the budget allows")

// TooLargeError says a cost exceeds what one of the key's buckets could ever
// hold (its per-minute limit), so Reserve refuses it at once instead of
// waiting forever.
type TooLargeError struct {
	Key       string
	Dimension Dimension
	Cost      int64 // the request's cost in that dimension
	Limit     int64 // the most the bucket admits in one request
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("limiter: key %q: request needs %d %s but the limit is %d per minute", e.Key, e.Cost, e.Dimension, e.Limit)
}

// Is makes errors.Is(err, ErrTooLarge) true.
func (e *TooLargeError) Is(target error) bool { return target == ErrTooLarge }

// Window is one rate-limit dimension as a response reported it. Limit and
// Remaining are -1 when unknown; the zero Window is also treated as unknown.
type Window struct {
	Limit, Remaining int64
	Reset            time.Duration
}

// Observation is the rate-limit headers of one response. Tokens is the
// combined input+output limit (OpenAI's TPM, Anthropic's tokens-*).
type Observation struct{ Requests, Tokens, Input, Output Window }

// Limiter holds the budgets of many keys. It is safe for concurrent use;
// keys are independent (one mutex each). The zero Limiter is not usable
// (it has no clock): make one with New.
type Limiter struct {
	defaults Limits
	now      func() time.Time
	newTimer func(time.Duration) (<-chan time.Time, func() bool)
	maxPause time.Duration
	warn     func(string)
	aging    time.Duration
	keys     sync.Map // string → *keyState
}

// New returns a Limiter configured by o.
func New(o Options) *Limiter {
	l := &Limiter{defaults: o.Defaults, now: o.Now, newTimer: o.NewTimer, maxPause: o.MaxPause, warn: o.Warn, aging: agingOf(o.Aging)}
	if l.maxPause <= 0 {
		l.maxPause = DefaultMaxPause
	}
	if l.now == nil {
		l.now = time.Now
	}
	if l.newTimer == nil {
		l.newTimer = func(d time.Duration) (<-chan time.Time, func() bool) {
			t := time.NewTimer(d)
			return t.C, t.Stop
		}
	}
	return l
}

func (l *Limiter) key(name string) *keyState {
	if k, ok := l.keys.Load(name); ok {
		return k.(*keyState)
	}
	k, _ := l.keys.LoadOrStore(name, newKeyState(name, l.defaults, l.now()))
	return k.(*keyState)
}

// SetLimits configures key, replacing the defaults for it. Bucket levels are
// kept (clamped to the new capacities); learned limits are kept.
func (l *Limiter) SetLimits(key string, lim Limits) {
	k := l.key(key)
	k.mu.Lock()
	defer k.mu.Unlock()
	k.setLimitsAt(l.now(), lim)
	k.wakeHead()
}

// Reservation is one admitted attempt. End it with exactly one Settle or
// Fail; later calls are no-ops. It is safe for concurrent use.
type Reservation struct {
	l    *Limiter
	k    *keyState
	cost Cost
	seq  uint64
	mark AIMDMark  // what the key's AIMD remembers of it
	at   time.Time // when it was admitted
	mask uint8
	done bool // guarded by k.mu
	// after is the key's cumulative charges right after this admission:
	// what was charged since then is what a header computed when this
	// request reached the provider cannot know about.
	after [numBuckets]float64
}

// Observe applies the rate-limit headers of this attempt's response, which
// the provider computed at headersAt or before (when the request reached
// it). Like Limiter.Observe it learns limits in Auto mode and only ever
// lowers buckets, but it lowers each to what the header says remained,
// plus the refill since headersAt, minus everything this key admitted after
// this reservation (requests the provider may not have seen yet). A bare
// remaining count would forget those and let the key overrun the limit
// by whatever is in flight. It may be called before or after Settle/Fail.
func (r *Reservation) Observe(o Observation, headersAt time.Time) {
	k := r.k
	k.mu.Lock()
	defer k.mu.Unlock()
	k.observeAt(r.l.now(), o, headersAt, &r.after)
}

// Cost returns what the reservation took.
func (r *Reservation) Cost() Cost { return r.cost }

// Settle ends the attempt with the usage the response reported: refunds
// over-reservation (up to each bucket's capacity), charges
// under-reservation (a bucket may go negative, delaying later admissions),
// and releases the concurrency slot. actual.Requests is ignored: a sent
// request keeps its request charge. In Auto mode a Settle counts as a
// success for the concurrency window. Token-estimate calibration is the
// caller's job (package estimate), not Settle's.
func (r *Reservation) Settle(actual Cost) {
	r.end(func(k *keyState, now time.Time) {
		k.finishAt(now, r.mask, r.seq, r.cost, actual, true)
		k.answeredAt(now, r.at, r.mark, r.cost, actual)
	})
}

// Fail ends an attempt that produced no usage (transport error, 429, 5xx):
// it keeps the request charge, refunds the token charges and releases the
// slot. Call it before RateLimited for the same attempt.
func (r *Reservation) Fail() {
	r.end(func(k *keyState, now time.Time) {
		k.finishAt(now, r.mask, r.seq, r.cost, Cost{}, false)
		k.rc.Failed(r.mark, r.cost)
	})
}

// Refused ends an attempt the server turned away for load: a 429, or with
// f.Overloaded a 503/529. Like Fail it keeps the request charge and
// returns the rest; then it tells the key (see Refusal): a 429 pauses the
// key for the server's hint or, without one, for a backoff that grows with
// consecutive 429s, and where no rate-limit headers describe the key it
// cuts the rates learned from 429s (and empties their buckets); an
// overload pauses the key only for a hint. Pauses are capped at MaxPause.
// Call it instead of Fail (and of Limiter.RateLimited and Pause).
func (r *Reservation) Refused(f Refusal) {
	var clamped, wasPaused bool
	var asked time.Duration
	r.end(func(k *keyState, now time.Time) {
		asked = f.RetryAfter
		clamped, wasPaused = k.refusedAt(now, r.mask, r.seq, r.mark, r.cost, f, r.l.maxPause)
	})
	if clamped && !wasPaused && r.l.warn != nil {
		r.l.warn(PauseClampedMessage(r.k.name, asked, r.l.maxPause))
	}
}

// Cancel ends a reservation whose request was never sent: it returns
// everything, the request charge included, and releases the slot.
func (r *Reservation) Cancel() {
	r.end(func(k *keyState, now time.Time) {
		k.cancelAt(now, r.mask, r.seq, r.cost)
		k.rc.Unsent(r.mark, r.cost)
	})
}

// end runs the reservation's one ending under the key's lock; later calls
// do nothing.
func (r *Reservation) end(fn func(k *keyState, now time.Time)) {
	k := r.k
	k.mu.Lock()
	defer k.mu.Unlock()
	if r.done {
		return
	}
	r.done = true
	fn(k, r.l.now())
}

// Reserve is shorthand for ReservePriority(ctx, key, c, PriorityNormal).
func (l *Limiter) Reserve(ctx context.Context, key string, c Cost) (*Reservation, error) {
	return l.ReservePriority(ctx, key, c, PriorityNormal)
}

// ReservePriority blocks until key has a free concurrency slot, is not
// paused and every bucket covers c, then takes c from all buckets at once
// and returns the reservation. Waiters are served highest effective
// priority first (priority p, rising by one per Options.Aging of waiting;
// see MinPriority), first come first served within one, and only the first
// in that order may be admitted, so a large request is not starved by a
// stream of small ones (it holds up those behind it instead) nor, thanks to
// aging, by a stream of higher priority. A cost larger than a bucket's
// burst capacity raises that capacity to it for good (topping the bucket
// up if it was full, so an idle key admits it at once); a cost that exceeds
// a bucket's per-minute limit fails at once with a *TooLargeError. If ctx
// ends first, it returns ctx.Err() and the buckets are untouched.
func (l *Limiter) ReservePriority(ctx context.Context, key string, c Cost, p int) (*Reservation, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if c.Requests < 0 || c.Input < 0 || c.Output < 0 {
		return nil, fmt.Errorf("limiter: negative cost %+v", c)
	}
	k := l.key(key)
	now := l.now()
	k.mu.Lock()
	if err := k.tooLarge(c); err != nil {
		k.mu.Unlock()
		return nil, err
	}
	if len(k.q) == 0 {
		if _, dim := k.reserveAt(now, c); dim == DimNone {
			r := k.newReservation(l, c)
			k.mu.Unlock()
			return r, nil
		}
	}
	k.syncAt(now)
	w := &waiter{cost: c, arrived: now, wake: make(chan struct{}, 1)}
	k.enqueue(w, p, l.aging)
	return l.wait(ctx, k, w, now)
}

// newReservation wraps the admission reserveAt just made.
func (k *keyState) newReservation(l *Limiter, c Cost) *Reservation {
	return &Reservation{l: l, k: k, cost: c, seq: k.seq, mark: k.mark, at: k.last, mask: k.charged(), after: k.cum}
}

// wait is Reserve's slow path: w is queued. It requires k.mu held and
// releases it before returning.
func (l *Limiter) wait(ctx context.Context, k *keyState, w *waiter, now time.Time) (*Reservation, error) {
	var t waitTimer
	defer t.disarm()
	for {
		t.want(time.Time{})
		if k.q[0] == w {
			if err := k.tooLarge(w.cost); err != nil { // limits may have changed while queued
				k.remove(w, now)
				k.mu.Unlock()
				return nil, err
			}
			d, dim := k.reserveAt(now, w.cost)
			if dim == DimNone {
				k.popHead(now)
				r := k.newReservation(l, w.cost)
				k.mu.Unlock()
				return r, nil
			}
			k.blocked = dim
			if dim != DimConcurrency {
				t.want(now.Add(d))
			}
		}
		k.mu.Unlock()
		t.arm(l, now)
		select {
		case <-ctx.Done():
		case <-t.fire:
			t.fire, t.stop = nil, nil
		case <-w.wake:
		}
		now = l.now()
		k.mu.Lock()
		if err := ctx.Err(); err != nil {
			k.remove(w, now)
			k.mu.Unlock()
			return nil, err
		}
	}
}

// waitTimer is a waiter's timer, kept across its looks at the queue: a
// look that needs it at the same instant or later keeps the one running
// (an early firing only makes the waiter look again), so a waiter woken
// for nothing does not start a new timer.
type waitTimer struct {
	fire <-chan time.Time
	stop func() bool
	due  time.Time // when the running timer fires
	need time.Time // when the waiter must look again (zero: only when woken)
}

// want sets when the waiter must look again (zero: only when woken).
func (t *waitTimer) want(at time.Time) { t.need = at }

// arm makes the timer fire by need: it keeps a running timer due no later,
// and stops one when nothing is needed.
func (t *waitTimer) arm(l *Limiter, now time.Time) {
	if t.need.IsZero() {
		t.disarm()
		return
	}
	if t.fire != nil && !t.due.After(t.need) {
		return
	}
	t.disarm()
	t.fire, t.stop = l.newTimer(t.need.Sub(now))
	t.due = t.need
}

// disarm stops the running timer, if any.
func (t *waitTimer) disarm() {
	if t.stop != nil {
		t.stop()
	}
	t.fire, t.stop = nil, nil
}

// Observe applies rate-limit headers that belong to no reservation: in Auto
// mode it sets the key's limits from o's Limit fields (never above explicit
// numbers), and it lowers each bucket to what o says remained minus
// everything still in flight on the key (a header cannot know about
// requests the provider has not seen yet). Prefer Reservation.Observe,
// which knows which admissions came after the observed request. Windows
// with Limit and Remaining of -1, or zero Windows, are ignored.
func (l *Limiter) Observe(key string, o Observation) {
	k := l.key(key)
	k.mu.Lock()
	defer k.mu.Unlock()
	now := l.now()
	k.observeAt(now, o, now, nil)
}

// pause stops all admissions for key until the given instant (a 429 with
// retry-after): every waiter of the key waits, not just the caller. An
// earlier pause never shortens a later one. A pause longer than MaxPause is
// cut to it and counted; it is reported to Warn when it starts a pause (the
// 429s of one congestion tell once). Runs pause a key through
// Reservation.Refused; tests set a pause directly.
func (l *Limiter) pause(key string, until time.Time) {
	k := l.key(key)
	now := l.now()
	k.mu.Lock()
	asked := until.Sub(now)
	clamped, wasPaused := k.pauseAt(now, until, l.maxPause)
	k.mu.Unlock()
	if clamped && !wasPaused && l.warn != nil {
		l.warn(PauseClampedMessage(key, asked, l.maxPause))
	}
}

// PauseClampedMessage is the warning for a pause hint cut to the maximum,
// shared with the Redis budget so both say the same.
func PauseClampedMessage(key string, asked, maxPause time.Duration) string {
	return fmt.Sprintf("key %q: the server asked to pause for %v; pausing %v (the maximum pause)", key, asked.Round(time.Second), maxPause)
}

// rateLimited tells key a 429 happened. In Auto mode it halves the
// concurrency window (at most once per round of attempts); otherwise it is
// only counted.
//
// Runs report 429s through Reservation.Refused; tests count one directly.
func (l *Limiter) rateLimited(key string) {
	k := l.key(key)
	k.mu.Lock()
	defer k.mu.Unlock()
	k.rateLimitedAt(l.now())
}

// KeyStats is a snapshot of one key for progress and the summary.
type KeyStats struct {
	Key string
	// Configured is the key's configuration (defaults applied).
	Configured Limits
	// Effective is what is in force: per-minute limits including learned
	// ones, and Concurrency the current window (0 = unlimited).
	Effective Limits
	// Learned reports whether any limit came from response headers.
	Learned bool
	// Wait is the total time Reserve calls spent waiting (including those
	// still waiting); WaitBy splits it by what blocked the queue's head.
	Wait   time.Duration
	WaitBy [NumDimensions]time.Duration
	// Binding is the dimension with the most WaitBy (DimNone if none).
	Binding      Dimension
	InFlight     int
	Waiting      int
	Reservations int64
	RateLimited  int64
	PausedUntil  time.Time
	// PauseClamped counts pause hints longer than the maximum pause, which
	// were cut to it.
	PauseClamped int64
	// Overloaded counts attempts refused as overloaded (503/529).
	Overloaded int64
	// RefusalRPM and RefusalTPM are the request and combined-token rates
	// per minute learned from 429s alone (no rate-limit headers), 0 when
	// none; Effective includes them (as RPM and TPM).
	RefusalRPM, RefusalTPM float64
}

// Refusal is how a server turned an attempt away for load rather than for
// anything in the request.
type Refusal struct {
	// Overloaded marks a 503/529 (the provider is busy) as opposed to a
	// 429 (this key is over its limits). An overload says little about
	// the key's limits, and providers shed a share of calls at random
	// when degraded: it cuts nothing unless most attempts are refused.
	Overloaded bool
	// RetryAfter is the server's hint, if HasRetryAfter.
	RetryAfter    time.Duration
	HasRetryAfter bool
	// Described marks a refusal that carried rate-limit headers (passed
	// to Observe): they calibrate the buckets, so nothing is learned from
	// the 429 itself. Rates are learned from 429s only where nothing
	// describes the key: no limits given, no headers ever.
	Described bool
	// Dimension is what the refusal says it was about (its headers or
	// message): DimRequests, DimTokens, DimInput or DimOutput; DimNone
	// when it does not say. Only that rate is learned or clamped.
	Dimension Dimension
	// Ramp marks a refusal for the key's acceleration (OpenAI's
	// slow_down, Anthropic's acceleration limit): the rate grew too
	// fast, whatever the limits. It holds the rate the key admitted,
	// then grows it slowly (see AccelConfig); no limit is learned.
	Ramp bool
}

// Stats returns a snapshot of every key, sorted by key.
func (l *Limiter) Stats() []KeyStats {
	now := l.now()
	var out []KeyStats
	l.keys.Range(func(_, v any) bool {
		k := v.(*keyState)
		k.mu.Lock()
		out = append(out, k.statsAt(now))
		k.mu.Unlock()
		return true
	})
	slices.SortFunc(out, func(a, b KeyStats) int { return strings.Compare(a.Key, b.Key) })
	return out
}
