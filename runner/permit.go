package runner

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/llmrun/llmrun/limiter"
	"github.com/llmrun/llmrun/providers"
	"github.com/llmrun/llmrun/runner/retry"
)

// Breaker is what a run needs of one key's circuit breaker.
// *retry.Breaker implements it; Config.NewBreaker plugs in another.
type Breaker interface {
	// Allow hands out the ticket of one attempt, or refuses while open.
	Allow(now time.Time) (retry.Ticket, bool)
	// Valid reports whether a ticket still lets its attempt start.
	Valid(t retry.Ticket) bool
	// Observe reports a sent attempt's outcome (nil: success).
	Observe(now time.Time, t retry.Ticket, err error)
	// Release ends a ticket whose attempt says nothing about the provider.
	Release(now time.Time, t retry.Ticket)
	State(now time.Time) retry.State
	// WaitTime is how long until Allow may succeed; Changed is closed at
	// the next state change.
	WaitTime(now time.Time) time.Duration
	Changed() <-chan struct{}
	// OutageExceeded reports an outage longer than the run may hold.
	OutageExceeded(now time.Time) bool
	Stats(now time.Time) retry.BreakerStats
}

var _ Breaker = (*retry.Breaker)(nil)

// hold is one thing an attempt holds while admitted: a place, a ticket,
// a reservation. acquire waits for it (until ctx ends) and returns how to
// give it back; release hears how the attempt ended, so it can feed the
// outcome back to what it holds. A failed acquire holds nothing and says
// why with an *admitStop, or errReadmit to start admission over. A nil
// release gives nothing back. The next admission rule is a new hold.
type hold interface {
	acquire(ctx context.Context) (release func(attemptOutcome), err error)
}

// lapsing is a hold whose grant can lapse while the later holds are
// awaited (the breaker opening, the provider refusing the day): once all
// are acquired, a lapsed one starts admission over.
type lapsing interface {
	valid() bool
}

// admitStop ends an admission: out is what becomes of the request
// (outFailed, outPending), err why, if any.
type admitStop struct {
	out outcome
	err error
}

func (e *admitStop) Error() string {
	if e.err == nil {
		return "admission stopped"
	}
	return e.err.Error()
}

func (e *admitStop) Unwrap() error { return e.err }

// stopPending ends an admission with the request left pending: the run is
// stopping.
var stopPending = &admitStop{out: outPending}

// errReadmit starts admission over: what was acquired was released, and
// the holds are acquired anew.
var errReadmit = errors.New("admission lapsed: start over")

// permit is one attempt's holds, in the order acquired. release gives
// them back in reverse order, each once; the worker that admitted it owns
// it and releases it in one place (a defer around the send).
type permit struct {
	releases []func(attemptOutcome)
	buf      [9]func(attemptOutcome) // releases' array for up to nine holds
}

// acquirePermit acquires holds in order. If one fails, those acquired are
// released (as never sent) and the error is returned; if all are held but
// one has lapsed meanwhile, all are released and errReadmit returned.
func acquirePermit(ctx context.Context, holds []hold) (*permit, error) {
	p := &permit{}
	p.releases = p.buf[:0]
	for _, h := range holds {
		rel, err := h.acquire(ctx)
		if err != nil {
			p.release(notSent)
			return nil, err
		}
		p.releases = append(p.releases, rel)
	}
	for _, h := range holds {
		if l, ok := h.(lapsing); ok && !l.valid() {
			p.release(notSent)
			return nil, errReadmit
		}
	}
	return p, nil
}

// release gives back every hold, last acquired first, telling each how
// the attempt ended. A second call gives back nothing.
func (p *permit) release(o attemptOutcome) {
	rels := p.releases
	p.releases = nil
	for i := len(rels) - 1; i >= 0; i-- {
		if rels[i] != nil {
			rels[i](o)
		}
	}
}

// attemptOutcome is what happened to one attempt, as the permit's holds and
// the retry decision see it.
type attemptOutcome struct {
	// resp is the answer (nil if none); err the failure.
	resp *providers.Response
	err  error
	// sent is when the attempt was sent; zero if it never was.
	sent time.Time
	// cut reports that the run's shutdown cut the attempt: it says
	// nothing about the provider.
	cut bool
	// cost is what the answer cost by its reported usage (set once
	// priced); a failure reports no usage, so its cost is not known.
	cost spend
}

// notSent is the outcome of an attempt that never reached the provider.
var notSent = attemptOutcome{}

// class is the failure's retry class (ClassUnknown without an error).
func (o attemptOutcome) class() providers.Class { return providers.ClassOf(o.err) }

// retryAfter is the server's retry-after hint, if the failure carried one.
func (o attemptOutcome) retryAfter() (time.Duration, bool) {
	var pe *providers.Error
	if errors.As(o.err, &pe) && pe.HasRetryAfter {
		return pe.RetryAfter, true
	}
	return 0, false
}

// admit acquires the holds one attempt needs (see holds) and returns the
// permit holding them. If it cannot, it holds nothing and says why:
// outFailed (the breaker is open and a fallback hop exists, or the request
// is too large for the budget), outPending (the run is stopping), with the
// error if any.
func (r *run) admit(h *hop) (*permit, outcome, error) {
	for {
		p, err := acquirePermit(r.admitCtx, r.holds(h))
		if err == nil {
			return p, 0, nil
		}
		var stop *admitStop
		if errors.As(err, &stop) {
			return nil, stop.out, stop.err
		}
		if !errors.Is(err, errReadmit) {
			return nil, outPending, err
		}
	}
}

// holds are what admits one attempt on h, in the order acquired (and
// released in reverse): the key's day not spent and room in --max-cost
// beside the attempts in flight (both wait holding nothing), a fail-fast
// place, a breaker ticket (holding while the key's breaker is open), the
// key's first-on-key gate, the budget reservation with its run slot, the
// --max-cost reservation, the day's charge, and the run's hearing of the
// outcome, released first so what it decides (a stop) binds before any
// other hold lets the next attempt in. The slot is given back after the
// spend and the day have read the answer, so the next attempt is admitted
// against what it taught (a day limit in its headers, its real cost); the
// spend and day holds never wait, so taking them after the budget's wait
// charges them only for an attempt about to be sent. When the room the
// first two saw is gone by then, admission starts over and waits there.
func (r *run) holds(h *hop) []hold {
	s := &holdSet{
		dayOpen: dayOpenHold{r, h}, spendRoom: spendRoomHold{r, h}, failFast: failFastHold{r: r}, breaker: breakerHold{r: r, h: h},
		gate: gateHold{r, h.key}, spend: spendHold{r, h}, day: dayHold{r: r, h: h},
		resv: reservation{r: r, h: h}, hearing: hearingHold{r, h},
	}
	s.list = [...]hold{&s.dayOpen, &s.spendRoom, &s.failFast, &s.breaker, &s.gate, &s.resv, &s.spend, &s.day, &s.hearing}
	return s.list[:]
}

// holdSet is one admission's holds in one allocation (boxing each into a
// hold was nine, for every attempt).
type holdSet struct {
	dayOpen   dayOpenHold
	spendRoom spendRoomHold
	failFast  failFastHold
	breaker   breakerHold
	gate      gateHold
	spend     spendHold
	day       dayHold
	resv      reservation
	hearing   hearingHold
	list      [9]hold
}

// refused says what a budget's refusal means for the request: too large
// fails it; anything else while the run goes on is the budget itself
// failing (a shared budget's Redis is down), and no request can be
// admitted safely.
func (r *run) refused(err error) outcome {
	if errors.Is(err, limiter.ErrTooLarge) {
		return outFailed
	}
	if r.admitCtx.Err() == nil {
		r.abortRun(fmt.Errorf("budget: %w", err))
	}
	return outPending
}
