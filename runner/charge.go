package runner

import (
	"log/slog"
	"sync"
	"time"

	"github.com/llmrun/llmrun/limiter"
	"github.com/llmrun/llmrun/providers"
)

// chargeState is one key's reservation rule: the registry's until the
// key's remaining-tokens headers show what the server really charges (see
// providers.ChargeLearner), then the rule they show.
type chargeState struct {
	mu sync.Mutex
	// rule is the output reservation in force; learned is what the
	// server charges: the registry's word (ChargeUnknown if none) until
	// the headers have shown it.
	rule    providers.OutputRule
	learned providers.ChargeRule
	// learner reads the headers; nil once it has decided or given up.
	learner *providers.ChargeLearner
	ids     uint64
	// Answers to requests that reserved their whole cap, for the tight
	// max_tokens note.
	answers        int
	outSum, capSum int64
	outMax         int64
	noted          bool
}

// charge returns key's charge state, made from route's registry rule on
// first use.
func (r *run) charge(key string, route Route) *chargeState {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.charges == nil {
		r.charges = make(map[string]*chargeState)
	}
	c, ok := r.charges[key]
	if !ok {
		c = &chargeState{rule: route.Admission.Output, learned: route.Admission.Charge, learner: providers.NewChargeLearner()}
		r.charges[key] = c
	}
	return c
}

// reserveRule is the output reservation in force for key.
func (r *run) reserveRule(key string, route Route) providers.OutputRule {
	c := r.charge(key, route)
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.rule
}

// chargeSent tells key's learner that p's attempt was admitted with cost.
func (p *reservation) chargeSent(cost limiter.Cost) {
	h := p.h
	c := p.r.charge(h.key, h.route)
	p.cs = c
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.learner == nil {
		return
	}
	c.ids++
	p.chargeID = c.ids
	c.learner.Sent(p.chargeID, time.Now(), cost.Input, h.route.Admission.OutputCap(h.req))
}

// chargeEnded tells key's learner how p's attempt ended (what the server
// charged, the headers it read) and adopts the rule once it has decided.
func (p *reservation) chargeEnded(o attemptOutcome) {
	r, h, c := p.r, p.h, p.cs
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if o.resp != nil {
		c.noteAnswer(r.cfg.Log, h, o.resp.Usage.OutputTokens)
	}
	if c.learner == nil || p.chargeID == 0 {
		return
	}
	in, out, charged := p.resv.Cost().Input, int64(0), !o.sent.IsZero()
	var limits providers.RateLimits
	at := time.Now()
	if o.resp != nil {
		in, out = h.route.Admission.InputCharged(o.resp.Usage), o.resp.Usage.OutputTokens
		limits, at = o.resp.Limits, o.sent.Add(o.resp.TTFT)
	} else if pe := providerError(o.err); pe != nil {
		limits = pe.Limits
		charged = charged && pe.Class != providers.ClassRateLimited // refused: nothing taken
	}
	c.learner.Ended(p.chargeID, o.sent, time.Now(), in, out, charged)
	if w, output := providers.ChargeCounter(limits); w.Remaining >= 0 {
		if output && !c.learner.OutputOnly {
			// Anthropic's counters: remaining is rounded to the thousand.
			c.learner.OutputOnly, c.learner.Noise = true, 500
		}
		c.learner.Reading(at, w.Remaining, w.Limit)
	}
	rule, done := c.learner.Decide()
	if !done {
		return
	}
	c.learner = nil
	c.adopt(r.cfg.Log, h, rule)
}

// adopt makes rule, which the headers showed, key's reservation rule and
// says so once when it changes what is reserved.
func (c *chargeState) adopt(log *slog.Logger, h *hop, rule providers.ChargeRule) {
	attrs := []any{"provider", h.route.Provider.Name(), "model", h.req.Model, "charged", rule.String()}
	if rule == providers.ChargeUnknown {
		log.Debug("the rate-limit headers did not tell what the server charges: keeping the registry's reservation rule", attrs...)
		return
	}
	c.learned = rule
	switch next := rule.Reserve(); {
	case next == c.rule:
		log.Debug("the rate-limit headers confirm the reservation rule", attrs...)
	case next == providers.ReserveCap:
		log.Info("this deployment charges max_tokens at admission: reserving it", attrs...)
	default:
		log.Info("this deployment does not charge max_tokens at admission: reserving the expected output", attrs...)
	}
	c.rule = rule.Reserve()
}

// settleOutput is the output an answer settles against the budget: what
// it produced, or its whole cap where the headers showed the server keeps
// the cap's charge whatever the answer's length.
func (p *reservation) settleOutput(u providers.Usage) int64 {
	c := p.cs
	if c == nil {
		c = p.r.charge(p.h.key, p.h.route)
	}
	c.mu.Lock()
	keep := c.learned == providers.ChargeCap
	c.mu.Unlock()
	if keep {
		return max(u.OutputTokens, p.resv.Cost().Output)
	}
	return u.OutputTokens
}

// noteAnswer counts an answer to a request that reserved its whole cap
// and, once answers are many and much shorter than the cap, says once
// that the run reserves budget it never uses. c.mu is held.
func (c *chargeState) noteAnswer(log *slog.Logger, h *hop, out int64) {
	capTokens := h.route.Admission.OutputCap(h.req)
	if c.rule != providers.ReserveCap || capTokens <= 0 || c.noted {
		return
	}
	c.answers++
	c.outSum += out
	c.capSum += capTokens
	c.outMax = max(c.outMax, out)
	msg, ok := providers.TightNote(c.answers, c.outSum, c.capSum, c.outMax)
	if !ok {
		return
	}
	c.noted = true
	log.Warn(msg, "provider", h.route.Provider.Name(), "model", h.req.Model)
}
