package runner

import (
	"time"

	"github.com/llmrun/llmrun/limiter"
	"github.com/llmrun/llmrun/providers"
	"github.com/llmrun/llmrun/report"
	"github.com/llmrun/llmrun/runner/retry"
)

// Observer watches a live run, for metrics and traces: the runner knows
// nothing of Prometheus or OpenTelemetry, it only tells. Start is called
// once, before the first attempt, with the run's View, which the observer
// may read at any time until the run returns; AdmissionWait is called
// from the workers after every attempt the budget admitted, and must be
// quick. Request is called as a request starts its way through the
// chain; the RequestObserver it returns (nil: none) hears of that
// request's attempts and of its end, all from the one worker that
// carries the request, so it needs no lock of its own.
type Observer interface {
	Start(v *View)
	AdmissionWait(key string, d time.Duration)
	Request(req *providers.Request) RequestObserver
}

// RequestObserver hears of one request's attempts, in order, and of its end.
type RequestObserver interface {
	// AttemptStart: the attempt is about to be sent.
	AttemptStart(a *Attempt)
	// AttemptEnd: the attempt a is over (a.End says how).
	AttemptEnd(a *Attempt)
	// End: the request is over (answered, failed or left pending).
	End(e *RequestEnd)
}

// Attempt is one attempt as observers see it. The runner fills the first
// part before AttemptStart and End before AttemptEnd.
type Attempt struct {
	// Request is the request as shaped for the hop (its body, model,
	// endpoint and max tokens); read-only.
	Request  *providers.Request
	Provider string
	// Key is the budget key the attempt was admitted from.
	Key string
	// Hop is the route's place in the fallback chain (0: primary);
	// Number the attempt's number over the whole request, from 1.
	Hop, Number int
	// Waited is how long admission waited for the budget; Reserved what
	// it reserved.
	Waited   time.Duration
	Reserved limiter.Cost
	Sent     time.Time
	End      AttemptEnd
}

// AttemptEnd is how an attempt ended.
type AttemptEnd struct {
	At time.Time
	// Resp is the answer, nil on a failure (Err).
	Resp *providers.Response
	Err  error
	// Cut: the run's shutdown cut the attempt.
	Cut bool
	// CostUSD is what the answer cost; Priced reports that it is known.
	CostUSD float64
	Priced  bool
}

// Request outcomes, as RequestEnd.Outcome says them.
const (
	OutcomeSucceeded = "succeeded"
	OutcomeFailed    = "failed"
	OutcomePending   = "pending"
)

// RequestEnd is how a request ended.
type RequestEnd struct {
	// Outcome is OutcomeSucceeded, OutcomeFailed or OutcomePending.
	Outcome string
	// Attempts over every hop; Hop the hop of the last attempt (above 0:
	// the request fell back).
	Attempts, Hop int
	// Err is why a failed request failed.
	Err error
}

// View reads a live run. Its methods are safe for concurrent use.
type View struct{ r *run }

// Counters are the run's live figures.
func (v *View) Counters() *report.Counters { return v.r.c.Counters }

// Budget is the budget's figures per key: limits in force (learned ones
// included), waits by dimension, in flight, 429s.
func (v *View) Budget() []limiter.KeyStats { return v.r.cfg.Limiter.Stats() }

// Breakers are the circuit breakers' figures by key.
func (v *View) Breakers(now time.Time) map[string]retry.BreakerStats {
	v.r.mu.Lock()
	brs := make(map[string]Breaker, len(v.r.breakers))
	for k, b := range v.r.breakers {
		brs[k] = b
	}
	v.r.mu.Unlock()
	out := make(map[string]retry.BreakerStats, len(brs))
	for k, b := range brs {
		out[k] = b.Stats(now)
	}
	return out
}
