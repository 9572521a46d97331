package runner

import (
	"time"
)

// The runner's side of Observer: each hook costs a nil check when no
// observer watches the run.

// observeRequest starts t's observation.
func (r *run) observeRequest(t *task) {
	t.outcome = outPending // until a hop says otherwise
	if r.cfg.Observer != nil {
		t.obs = r.cfg.Observer.Request(t.req)
	}
}

// observeSend tells t's observer that h's attempt is about to be sent.
func (r *run) observeSend(h *hop, sent time.Time) {
	t := h.t
	t.hop = h.index
	if t.obs == nil {
		return
	}
	t.att = &Attempt{
		Request: h.req, Provider: h.route.Provider.Name(), Key: h.key,
		Hop: h.index, Number: t.attempts, Waited: h.waited, Reserved: h.reserved, Sent: sent,
	}
	t.obs.AttemptStart(t.att)
}

// observeAttemptEnd tells t's observer how the attempt it was told of
// ended, and counts the answer's tokens toward the request's.
func (r *run) observeAttemptEnd(h *hop, o attemptOutcome) {
	t := h.t
	if o.resp != nil {
		t.inTokens += o.resp.Usage.InputTokens
		t.outTokens += o.resp.Usage.OutputTokens
	}
	a := t.att
	if a == nil || o.sent.IsZero() {
		return
	}
	t.att = nil
	a.End = AttemptEnd{At: time.Now(), Resp: o.resp, Err: o.err, Cut: o.cut, CostUSD: o.cost.cost.USD(), Priced: o.cost.priced > 0}
	t.obs.AttemptEnd(a)
}

// endRequest tells t's observer and the tags' book how t ended.
func (r *run) endRequest(t *task) {
	if len(t.req.Tags) > 0 {
		r.tags.add(t)
	}
	if t.obs == nil {
		return
	}
	e := &RequestEnd{Outcome: OutcomePending, Attempts: t.attempts, Hop: t.hop, Err: t.lastErr}
	switch t.outcome {
	case outSucceeded:
		e.Outcome = OutcomeSucceeded
	case outFailed:
		e.Outcome = OutcomeFailed
	}
	t.obs.End(e)
}
