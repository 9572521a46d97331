// Package retry holds the runner's pure failure-handling decisions: the
// per-attempt retry policy (full-jitter backoff, bounded server hints,
// attempt and deadline limits), the sliding-window retry budget, the
// per-key circuit breaker and the answer quality guard.
//
// Nothing here sleeps, starts goroutines, reads the clock or draws from a
// global random source: every time is an explicit now argument and every
// random draw comes from an injected func(int64) int64 (for example the
// method value r.Int64N of a *rand.Rand from math/rand/v2). The runner's
// attempt loop does the waiting.
package retry

import (
	"errors"
	"time"

	"github.com/llmrun/llmrun/providers"
)

// Defaults for a zero Policy field.
const (
	DefaultMaxAttempts    = 6
	DefaultDeadline       = 10 * time.Minute
	DefaultBase           = 500 * time.Millisecond
	DefaultMax            = 30 * time.Second
	DefaultMaxServerDelay = 5 * time.Minute
)

// MinHintJitter is the least spread added above a server's retry-after hint;
// the spread is 10% of the hint or MinHintJitter, whichever is larger, so
// workers told the same instant do not all come back at once.
const MinHintJitter = 250 * time.Millisecond

// Reasons a Decision gives. Reason is always exactly one of these.
const (
	// ReasonBackoff: retry after a full-jitter exponential backoff.
	ReasonBackoff = "backoff"
	// ReasonRetryAfter: retry after the server's retry-after hint (plus jitter),
	// which was longer than the backoff draw.
	ReasonRetryAfter = "retry-after"
	// ReasonNotRetryable: the class can never succeed on another attempt
	// (invalid request, auth, quota).
	ReasonNotRetryable = "not retryable"
	// ReasonMaxAttempts: the attempt that failed was the last one allowed.
	ReasonMaxAttempts = "max attempts"
	// ReasonDeadline: waiting the delay would pass the request's deadline.
	ReasonDeadline = "deadline"
)

// Policy decides whether and when to retry one failed attempt. It is a
// plain value, safe to share between goroutines; a zero field takes its
// Default constant, so the zero Policy is the default policy.
//
// Every failed attempt counts toward MaxAttempts unless the caller marks
// it Paced: a rate limit or an overload says the key is congested, not
// that this request is bad, and a caller that answers it for the whole key
// (the runner's limiter pauses or slows it) bounds such attempts by the
// Deadline alone. Otherwise a provider shedding 40% of calls at random
// would fail one request in 200 after six refusals in a row.
type Policy struct {
	// MaxAttempts is the most attempts one request gets, the first included.
	// 1 means never retry.
	MaxAttempts int
	// Deadline bounds all attempts of one request and the waits between
	// them, measured from the start of the first attempt.
	Deadline time.Duration
	// Base is the backoff cap of the first retry; it doubles per attempt
	// up to Max.
	Base, Max time.Duration
	// MaxServerDelay bounds a server's retry-after hint.
	MaxServerDelay time.Duration
}

// Attempt describes the failed attempt a Policy decides about.
type Attempt struct {
	// N is the 1-based number of the attempt that just failed.
	N int
	// Class is the failure's class.
	Class providers.Class
	// RetryAfter is the server's hint; used only when HasRetryAfter.
	// A negative hint is treated as absent.
	RetryAfter    time.Duration
	HasRetryAfter bool
	// ShouldRetry is the server's x-should-retry verdict (+1, -1, 0 for
	// none); it overrides the class's Retryable (providers.Error.Retryable).
	ShouldRetry int8
	// Start is when the request's first attempt started.
	Start time.Time
	// Paced marks a failure the caller answers for every request on the
	// key (see Paced): MaxAttempts does not apply, only the Deadline. N is
	// then the number of attempts that counted, so the backoff does not
	// grow with refusals either: the key's pause or slowdown paces them.
	Paced bool
}

// Paced reports whether a failure of class c is the key's to answer rather
// than the request's: a rate limit (429) or an overload (503/529). The
// runner hands those to the key's admission control, which pauses or
// slows every request on the key, and marks their Attempt Paced.
func Paced(c providers.Class) bool {
	return c == providers.ClassRateLimited || c == providers.ClassOverloaded
}

// AttemptOf builds the Attempt numbered n (at least 1) of a request
// started at start that failed with err: class and retry-after come from
// err's *providers.Error, if any (otherwise the class is ClassUnknown,
// which retries).
func AttemptOf(n int, err error, start time.Time) Attempt {
	a := Attempt{N: max(n, 1), Start: start}
	var pe *providers.Error
	if errors.As(err, &pe) {
		a.Class = pe.Class
		a.RetryAfter = pe.RetryAfter
		a.HasRetryAfter = pe.HasRetryAfter
		a.ShouldRetry = pe.ShouldRetry
	}
	return a
}

// Decision is what to do about a failed attempt.
type Decision struct {
	// Retry reports whether to make another attempt, after Delay.
	Retry bool
	// Delay is how long to wait before the next attempt; 0 when not retrying.
	Delay time.Duration
	// Reason is one of the Reason constants.
	Reason string
}

func (p Policy) withDefaults() Policy {
	orDefault(&p.MaxAttempts, DefaultMaxAttempts)
	orDefault(&p.Deadline, DefaultDeadline)
	orDefault(&p.Base, DefaultBase)
	orDefault(&p.Max, DefaultMax)
	if p.Max < p.Base {
		p.Max = p.Base
	}
	orDefault(&p.MaxServerDelay, DefaultMaxServerDelay)
	return p
}

// orDefault sets *v to dflt when it is unset (zero or negative).
func orDefault[T int | time.Duration](v *T, dflt T) {
	if *v <= 0 {
		*v = dflt
	}
}

// DeadlineAt is the instant after which no attempt of a request started at
// start may run; the runner should also bound each attempt's context by it.
func (p Policy) DeadlineAt(start time.Time) time.Time {
	return start.Add(p.withDefaults().Deadline)
}

// Decide decides about failed attempt a at time now. int63n draws a
// uniform integer in [0, n) for n > 0 (for example r.Int64N of a
// *rand.Rand); it is called at most twice. A nil int63n means no jitter:
// every draw takes its upper bound, the longest wait.
//
// The checks, in order: a failure that is not retryable (by its class, or
// the server's x-should-retry verdict) never retries; the attempt numbered
// MaxAttempts (or later) is the last, unless it is Paced; otherwise the delay
// is a full-jitter backoff draw, uniform in [0, min(Max, Base·2^(N-1))];
// a retry-after hint, clamped to MaxServerDelay, is a floor: when the hint
// plus its jitter (see MinHintJitter) is longer than the draw, it is the
// delay instead (still at most MaxServerDelay). Finally, no retry when
// now+delay would pass Start+Deadline.
func (p Policy) Decide(a Attempt, now time.Time, int63n func(int64) int64) Decision {
	p = p.withDefaults()
	e := providers.Error{Class: a.Class, ShouldRetry: a.ShouldRetry}
	if !e.Retryable() {
		return Decision{Reason: ReasonNotRetryable}
	}
	if a.N >= p.MaxAttempts && !a.Paced {
		return Decision{Reason: ReasonMaxAttempts}
	}
	delay := draw(int63n, backoffCap(p.Base, p.Max, a.N))
	reason := ReasonBackoff
	if a.HasRetryAfter && a.RetryAfter >= 0 {
		hint := min(a.RetryAfter, p.MaxServerDelay)
		floor := min(hint+draw(int63n, max(hint/10, MinHintJitter)), p.MaxServerDelay)
		if floor > delay {
			delay, reason = floor, ReasonRetryAfter
		}
	}
	if now.Add(delay).After(a.Start.Add(p.Deadline)) {
		return Decision{Reason: ReasonDeadline}
	}
	return Decision{Retry: true, Delay: delay, Reason: reason}
}

// backoffCap is min(limit, base·2^(n-1)) without overflow; n < 1 counts as 1.
func backoffCap(base, limit time.Duration, n int) time.Duration {
	d := base
	for i := 1; i < n && d < limit; i++ {
		if d > limit/2 {
			return limit
		}
		d *= 2
	}
	return min(d, limit)
}

// draw returns a uniform duration in [0, upper], or upper when int63n is nil.
func draw(int63n func(int64) int64, upper time.Duration) time.Duration {
	if upper <= 0 {
		return 0
	}
	if int63n == nil {
		return upper
	}
	n := int64(upper)
	if n == 1<<63-1 {
		return time.Duration(int63n(n))
	}
	return time.Duration(int63n(n + 1))
}
