package runner

import (
	"reflect"
	"time"

	"github.com/llmrun/llmrun/providers"
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

// Observers is one Observer that tells each of obs (nil ones skipped); nil
// when none is left, so that an unwatched run pays nothing.
func Observers(obs ...Observer) Observer {
	var m multiObserver
	for _, o := range obs {
		if o != nil && !isNilObserver(o) {
			m = append(m, o)
		}
	}
	switch len(m) {
	case 0:
		return nil
	case 1:
		return m[0]
	}
	return m
}

// isNilObserver catches a typed nil pointer in the interface.
func isNilObserver(o Observer) bool {
	v := reflect.ValueOf(o)
	return v.Kind() == reflect.Pointer && v.IsNil()
}

type multiObserver []Observer

func (m multiObserver) Start(v *View) {
	for _, o := range m {
		o.Start(v)
	}
}

func (m multiObserver) AdmissionWait(key string, d time.Duration) {
	for _, o := range m {
		o.AdmissionWait(key, d)
	}
}

func (m multiObserver) Request(req *providers.Request) RequestObserver {
	var rs multiRequest
	for _, o := range m {
		if r := o.Request(req); r != nil {
			rs = append(rs, r)
		}
	}
	if len(rs) == 0 {
		return nil
	}
	return rs
}

type multiRequest []RequestObserver

func (m multiRequest) AttemptStart(a *Attempt) {
	for _, r := range m {
		r.AttemptStart(a)
	}
}

func (m multiRequest) AttemptEnd(a *Attempt) {
	for _, r := range m {
		r.AttemptEnd(a)
	}
}

func (m multiRequest) End(e *RequestEnd) {
	for _, r := range m {
		r.End(e)
	}
}
