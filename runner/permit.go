package runner

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/llmrun/llmrun/limiter"
	"github.com/llmrun/llmrun/pricing"
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

// permit is one attempt's hold on everything that admits it: the key's
// breaker ticket, the key's first-on-key gate, the budget reservation and
// a run slot. admit acquires them, or none; end releases every one it
// holds exactly once, whatever the attempt's fate, and feeds the outcome
// back to the budget, the estimator and the breaker. The worker that
// admitted it owns it: a permit is not shared between goroutines.
type permit struct {
	r      *run
	h      *hop
	day    limiter.DayTicket // the attempt's charge to its key's day
	ticket retry.Ticket
	gate   func()         // opens the key's gate; nil until acquired
	resv   limiter.Ticket // nil until reserved
	// spend is the --max-cost reservation (the attempt's worst case);
	// spendHeld reports that it is held.
	spend     pricing.Cost
	spendHeld bool
	slot      bool // holds a run slot
	// ff reports that the attempt holds a place of the fail-fast window.
	ff    bool
	ended bool
	// cs is the key's charge rule state and chargeID the attempt's id in
	// its learner (0: none); see charge.go.
	cs       *chargeState
	chargeID uint64
}

// attemptOutcome is what happened to one attempt, as the permit's end and
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

// admit acquires what one attempt needs, in this order: a breaker ticket
// (holding while the key's breaker is open), the key's first-on-key gate,
// a budget reservation and a run slot, and returns the permit holding them.
// If it cannot, it holds nothing and says why: outFailed (the breaker is
// open and a fallback hop exists, or the request is too large for the
// budget), outPending (the run is stopping), with the error if any.
func (r *run) admit(h *hop) (*permit, outcome, error) {
	for {
		if !r.dayOpen(h) {
			return nil, outPending, nil
		}
		ff, ok := r.ff.acquire(r.admitCtx)
		if !ok {
			return nil, outPending, nil
		}
		ticket, held, out, ok := r.waitBreaker(h)
		if !ok {
			if ff {
				r.ff.release()
			}
			return nil, out, nil
		}
		h.start = h.start.Add(held) // time held is not the request's fault
		p := &permit{r: r, h: h, ticket: ticket, ff: ff}
		gate, err := r.firstOnKey(h.key)
		if err != nil {
			p.end(notSent)
			return nil, outPending, nil
		}
		p.gate = gate
		if p.spend, p.spendHeld = r.reserveSpend(h); !p.spendHeld && r.spend != nil {
			p.end(notSent)
			return nil, outPending, nil
		}
		if p.day, err = r.takeDay(h); err != nil {
			p.end(notSent) // the day was spent since dayOpen looked
			continue
		}
		asked := time.Now()
		h.reserved = r.cost(h.key, h.route, h.req, h.raw)
		resv, err := r.cfg.Limiter.ReservePriority(r.admitCtx, h.key, h.reserved, h.req.Priority)
		if err != nil {
			p.end(notSent)
			return nil, r.refused(err), err
		}
		h.waited = time.Since(asked)
		if r.cfg.Observer != nil {
			r.cfg.Observer.AdmissionWait(h.key, h.waited)
		}
		p.resv = resv
		p.chargeSent(resv.Cost())
		// The run-wide in-flight cap (the limiter caps each key; a fallback
		// chain has several keys), held only around the send, never during
		// a backoff or budget wait.
		select {
		case r.slots <- struct{}{}:
			p.slot = true
		case <-r.admitCtx.Done():
			p.end(notSent)
			return nil, outPending, nil
		}
		if h.br.Valid(ticket) && r.dayValid(h) {
			return p, 0, nil
		}
		// The breaker opened while we waited for the budget: this attempt
		// must not reach a provider that is down.
		p.end(notSent)
	}
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

// end releases everything p holds, once; later calls do nothing. It
// reconciles the reservation with o (Settle on an answer, Fail on a sent
// attempt that failed, Cancel on one never sent), feeds headers, a 429's
// pause and the usage to the budget and estimator, opens the key's gate,
// and tells the breaker.
func (p *permit) end(o attemptOutcome) {
	if p.ended {
		return
	}
	p.ended = true
	r, h := p.r, p.h
	r.observeAttempt(p, o) // may stop the run: before the gate opens
	r.observeAttemptEnd(h, o)
	r.logAttempt(h, o)
	if p.spendHeld {
		r.spend.settle(p.spend, o.cost.cost)
	}
	r.endDay(p, o)
	if p.resv != nil {
		p.chargeEnded(o)
		switch {
		case o.sent.IsZero():
			p.resv.Cancel()
		case o.resp != nil:
			p.settle(o)
		case o.cut:
			p.resv.Fail()
		default:
			p.observeFailure(o)
		}
	}
	r.observeSetup(p, o) // may stop the run: before the gate opens, after the reservation ends
	// The slot frees after the budget has heard the outcome: a refusal
	// for the day, a 429's pause or a cut must bind the next admission,
	// which the free slot lets in.
	if p.slot {
		<-r.slots
	}
	if p.gate != nil {
		p.gate() // after settle: the key's first answer has calibrated the estimate
	}
	now := time.Now()
	switch {
	case o.resp != nil:
		h.br.Observe(now, p.ticket, nil)
	case o.sent.IsZero() || o.cut:
		h.br.Release(now, p.ticket)
	default:
		h.br.Observe(now, p.ticket, o.err)
	}
}

// settle reconciles the reservation with the usage an answer reported and
// teaches the estimator.
func (p *permit) settle(o attemptOutcome) {
	r, h, u := p.r, p.h, o.resp.Usage
	p.resv.Settle(limiter.Cost{Requests: 1, Input: h.route.Admission.InputCharged(u), Output: p.settleOutput(u)})
	// The headers came before the first token at the latest.
	p.resv.Observe(observation(o.resp.Limits), o.sent.Add(o.resp.TTFT))
	r.c.InputTokens.Add(u.InputTokens)
	r.c.OutputTokens.Add(u.OutputTokens)
	if !u.Estimated { // our own estimate calibrates nothing
		r.cfg.Estimator.ObserveInput(h.key, h.raw, u.InputTokens)
	}
	r.cfg.Estimator.ObserveOutput(h.key, u.OutputTokens)
}

// observeFailure ends the reservation of a sent attempt that failed and
// feeds it to the budget: its rate-limit headers, and a refusal for load
// (429, 503/529) with the server's hint, which pauses or slows the whole
// key (see limiter.Ticket.Refused).
func (p *permit) observeFailure(o attemptOutcome) {
	var pe *providers.Error
	if !errors.As(o.err, &pe) {
		p.resv.Fail()
		return
	}
	p.resv.Observe(observation(pe.Limits), time.Now())
	if _, daily := p.r.dailyRefusal(o); daily {
		// Refused for the day: no pace or pause of minutes helps.
		p.r.c.RateLimited.Add(1)
		p.r.dayRefused(p.h, pe)
		p.resv.Fail()
		return
	}
	switch pe.Class {
	case providers.ClassRateLimited, providers.ClassOverloaded:
		if pe.Class == providers.ClassRateLimited {
			p.r.c.RateLimited.Add(1)
			p.r.c.rateLimitedOn(rateLimitDimension(pe))
		}
		d, ok := o.retryAfter()
		p.resv.Refused(refusal(pe, d, ok))
	default:
		p.resv.Fail()
	}
}

func observation(l providers.RateLimits) limiter.Observation {
	return limiter.Observation{
		Requests: limiter.Window(l.Requests),
		Tokens:   limiter.Window(l.Tokens),
		Input:    limiter.Window(l.InputTokens),
		Output:   limiter.Window(l.OutputTokens),
	}
}

// waitBreaker holds while the key's breaker is open and returns the
// ticket for the next attempt and how long it held. When it cannot, it
// says why: outFailed to move the request to the next hop, outPending when
// the run is stopping (outage longer than --max-outage, interrupt).
func (r *run) waitBreaker(h *hop) (t retry.Ticket, held time.Duration, out outcome, ok bool) {
	br, canFallBack, watch := h.br, h.canFallBack, r.connectWatch(h)
	start := time.Now()
	holding := false
	defer func() {
		if holding {
			r.c.Holding.Add(-1)
		}
	}()
	for {
		now := time.Now()
		changed := br.Changed()
		if t, ok := br.Allow(now); ok {
			return t, now.Sub(start), 0, true
		}
		if canFallBack {
			return retry.Ticket{}, 0, outFailed, false
		}
		if br.OutageExceeded(now) {
			r.abortRun(r.outageError())
			return retry.Ticket{}, 0, outPending, false
		}
		wait := br.WaitTime(now)
		if err, left := r.setupFailed(h, now); err != nil {
			r.abortRun(err)
			return retry.Ticket{}, 0, outPending, false
		} else if left > 0 {
			wait = min(wait, left)
		}
		if watch != nil {
			err, left := watch.exceeded(now, r.cfg.ConnectDeadline)
			if err != nil {
				r.abortRun(r.unreachable(h, err))
				return retry.Ticket{}, 0, outPending, false
			}
			if left > 0 {
				wait = min(wait, left)
			}
		}
		if !holding {
			holding = true
			r.c.Holding.Add(1)
		}
		timer := time.NewTimer(max(wait, time.Millisecond))
		select {
		case <-timer.C:
		case <-changed:
			timer.Stop()
		case <-r.admitCtx.Done():
			timer.Stop()
			return retry.Ticket{}, 0, outPending, false
		}
	}
}

// calibrationWait bounds how long the other requests of a key wait for the
// key's first response (see firstOnKey).
const calibrationWait = 5 * time.Second

// keyGate holds a key's admissions until its first response is in.
type keyGate struct {
	done  chan struct{}
	once  sync.Once
	until time.Time
}

func (g *keyGate) open() { g.once.Do(func() { close(g.done) }) }

// firstOnKey lets the first attempt on a key go alone: until its response
// has calibrated the token estimate against the provider's own count (or
// calibrationWait has passed), the others wait, so the opening burst, up
// to a whole bucket, is not admitted on an uncalibrated estimate, which
// would overrun a strict provider's limit by the estimate's error. The
// caller calls release once the attempt is over.
func (r *run) firstOnKey(key string) (release func(), err error) {
	r.mu.Lock()
	g, ok := r.gates[key]
	if !ok {
		g = &keyGate{done: make(chan struct{}), until: time.Now().Add(calibrationWait)}
		r.gates[key] = g
		r.mu.Unlock()
		return g.open, nil
	}
	r.mu.Unlock()
	select {
	case <-g.done:
		return func() {}, nil
	default:
	}
	t := time.NewTimer(max(time.Until(g.until), 0))
	defer t.Stop()
	select {
	case <-g.done:
	case <-t.C:
		g.open()
	case <-r.admitCtx.Done():
		return nil, context.Cause(r.admitCtx)
	}
	return func() {}, nil
}
