package runner

import (
	"context"
	"errors"
	"time"

	"github.com/llmrun/llmrun/limiter"
	"github.com/llmrun/llmrun/providers"
)

// reservation is the attempt's budget reservation and the run slot it is
// sent under. The two are one hold because of two orders: the slot is
// taken after the reservation (never held through a budget wait), and
// freed after the budget has heard the outcome (a refusal for the day, a
// 429's pause or a cut must bind the next admission, which the free slot
// lets in). Giving it back reconciles the reservation: Settle on an
// answer, Fail on a sent attempt that failed, Cancel on one never sent;
// headers, a 429's pause and the usage go to the budget and estimator,
// and the key's charge rule learns from it (charge.go).
type reservation struct {
	r    *run
	h    *hop
	resv limiter.Ticket
	// cs is the key's charge rule state and chargeID the attempt's id in
	// its learner (0: none); see charge.go.
	cs       *chargeState
	chargeID uint64
}

func (p *reservation) acquire(ctx context.Context) (func(attemptOutcome), error) {
	r, h := p.r, p.h
	asked := time.Now()
	resv, err := p.reserve(ctx)
	if err != nil {
		return nil, &admitStop{out: r.refused(err), err: err}
	}
	h.waited = time.Since(asked)
	if r.cfg.Observer != nil {
		r.cfg.Observer.AdmissionWait(h.key, h.waited)
	}
	p.resv = resv
	p.chargeSent(resv.Cost())
	// The run-wide in-flight cap (the limiter caps each key; a fallback
	// chain has several keys), held only around the send, never during a
	// backoff or budget wait.
	if !r.takeSlot(ctx) {
		p.end(notSent)
		return nil, stopPending
	}
	return func(o attemptOutcome) {
		p.end(o)
		// The setup watch may probe a plain request through the key's
		// budget: after the reservation ended, before the slot frees.
		r.observeSetup(h, o)
		r.freeSlot()
	}, nil
}

// reserve takes h's cost from the budget. Its input is a placeholder
// unless something reads the count (fillInput); a token limit learned
// while it waited (the first answers' headers) makes it give the
// reservation back and reserve the tokenizer's count instead.
func (p *reservation) reserve(ctx context.Context) (limiter.Ticket, error) {
	r, h := p.r, p.h
	for {
		r.fillInput(h)
		h.reserved = r.cost(h.key, h.route, h.req, h.raw)
		q := r.enqueue(h.key, h.req.Priority)
		resv, err := r.cfg.Limiter.ReservePriority(ctx, h.key, h.reserved, h.req.Priority)
		q.Leave()
		if err != nil || h.rawExact || !r.needsInput(h) {
			return resv, err
		}
		resv.Cancel()
	}
}

// end reconciles the reservation with o.
func (p *reservation) end(o attemptOutcome) {
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

// settle reconciles the reservation with the usage an answer reported and
// teaches the estimator.
func (p *reservation) settle(o attemptOutcome) {
	r, h, u := p.r, p.h, o.resp.Usage
	// The headers came before the first token at the latest. They are
	// taken before the settle frees the slot, so the attempt admitted next
	// sees the limits they teach (a token limit turns counting on).
	p.resv.Observe(observation(o.resp.Limits), o.sent.Add(o.resp.TTFT))
	p.resv.Settle(limiter.Cost{Requests: 1, Input: h.route.Admission.InputCharged(u), Output: p.settleOutput(u)})
	r.c.InputTokens.Add(u.InputTokens)
	r.c.OutputTokens.Add(u.OutputTokens)
	if !u.Estimated && h.rawExact { // our own estimate, a placeholder, calibrate nothing
		r.cfg.Estimator.ObserveInput(h.key, h.raw, u.InputTokens)
	}
	r.cfg.Estimator.ObserveOutput(h.key, u.OutputTokens)
}

// observeFailure ends the reservation of a sent attempt that failed and
// feeds it to the budget: its rate-limit headers, and a refusal for load
// (429, 503/529) with the server's hint, which pauses or slows the whole
// key (see limiter.Ticket.Refused).
func (p *reservation) observeFailure(o attemptOutcome) {
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
			p.r.c.rateLimitedOn(pe.RateLimitDimension())
		}
		d, ok := o.retryAfter()
		p.resv.Refused(refusal(pe, p.h.route.Provider.Format(), d, ok))
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
