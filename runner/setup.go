package runner

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/llmrun/llmrun/ending"
	"github.com/llmrun/llmrun/limiter"
	"github.com/llmrun/llmrun/providers"
)

// A server that has never worked is set up wrong, not down: behind a
// gateway that answers every streamed request 500 {"status":"failure"},
// a run held "provider down" for --max-outage (10 minutes) at 0 done,
// where --stream=false took 42s. So a key that has had no success since
// the run started, and whose last SetupFailures attempts failed the same
// way (status and message) over at least SetupDeadline, stops the run
// (exit 3, resumable) naming the failure and the likely fix. A key that
// answered once keeps the outage rules: hold, resume, --max-outage.

// DefaultSetupDeadline is the CLI's: how long a key that never worked may
// fail the same way before the run stops.
const DefaultSetupDeadline = 30 * time.Second

// setupFailures is how many attempts in a row must fail the same way.
const setupFailures = 5

// setupWatch is one key's record. Pure: every method takes now. Safe for
// concurrent use.
type setupWatch struct {
	mu        sync.Mutex
	succeeded bool
	sig       string    // the failures' status and message
	n         int       // attempts in a row failing as sig
	first     time.Time // when the first of them was sent
	last      *providers.Error
	probe     sync.Once // one plain probe per key
	probed    string
}

// observe records one sent attempt's outcome: a success ends the watch;
// a server failure (5xx, not a refusal for load) counts when it fails as
// the ones before; anything else starts over.
func (w *setupWatch) observe(o attemptOutcome) {
	if o.sent.IsZero() || o.cut {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if o.resp != nil {
		w.succeeded = true
		return
	}
	var pe *providers.Error
	if !errors.As(o.err, &pe) || pe.Status < 500 || pe.Class == providers.ClassRateLimited {
		w.n, w.sig = 0, ""
		return
	}
	sig := providers.Cause(pe)
	if sig != w.sig {
		w.sig, w.n, w.first = sig, 0, o.sent
	}
	w.n++
	w.last = pe
}

// exceeded returns the error that stops the run when, by now, the key
// never succeeded and its last setupFailures or more attempts failed the
// same way for deadline; left is how long until it would (for a holding
// wait), -1 when it cannot yet.
//
//lint:ignore ST1008 err first, as connectWatch.exceeded: "the error, and how long until it would be one"
func (w *setupWatch) exceeded(now time.Time, deadline time.Duration) (err error, left time.Duration) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.succeeded || w.n < setupFailures || deadline <= 0 {
		return nil, -1
	}
	if left = w.first.Add(deadline).Sub(now); left > 0 {
		return nil, left
	}
	return &ending.SetupError{Attempts: w.n, Since: now.Sub(w.first), Err: w.last}, 0
}

// setupWatch is the watch of h's key, or nil when h can fall back to
// another hop or the run keeps none.
func (r *run) setupWatch(h *hop) *setupWatch {
	if h.canFallBack || r.cfg.SetupDeadline <= 0 {
		return nil
	}
	if w, ok := r.setups.Load(h.key); ok {
		return w.(*setupWatch) // the common case: no allocation
	}
	w, _ := r.setups.LoadOrStore(h.key, &setupWatch{})
	return w.(*setupWatch)
}

// setupFailed is the error that stops the run for h's key, or nil; left
// bounds a holding wait.
//
//lint:ignore ST1008 err first, as setupWatch.exceeded whose pair it passes on
func (r *run) setupFailed(h *hop, now time.Time) (error, time.Duration) {
	w := r.setupWatch(h)
	if w == nil {
		return nil, -1
	}
	err, left := w.exceeded(now, r.cfg.SetupDeadline)
	if se, ok := err.(*ending.SetupError); ok {
		se.Where = h.route.Provider.Name() + " at " + h.route.Provider.BaseURL()
		se.Streamed = r.cfg.Streaming
		if se.Streamed && h.route.Plain != nil {
			w.probe.Do(func() { w.probed = r.probePlain(h) })
			se.Probe = w.probed
		}
	}
	return err, left
}

// probeTimeout bounds the plain probe of a setup failure.
const probeTimeout = 30 * time.Second

// probePlain sends h's request once without streaming, admitted by the
// key's budget like any attempt: ending.ProbeOK, or the failure's cause.
func (r *run) probePlain(h *hop) string {
	ctx, cancel := context.WithTimeout(r.workCtx, probeTimeout)
	defer cancel()
	t, err := r.cfg.Limiter.ReservePriority(ctx, h.key, limiter.Cost{Requests: 1}, limiter.MaxPriority)
	if err != nil {
		return providers.Cause(err)
	}
	resp, err := h.route.Plain.Send(ctx, h.req)
	if err != nil {
		t.Fail()
		return providers.Cause(err)
	}
	t.Settle(limiter.Cost{Requests: 1, Input: resp.Usage.InputTokens, Output: resp.Usage.OutputTokens})
	return ending.ProbeOK
}
