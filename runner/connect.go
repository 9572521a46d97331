package runner

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/llmrun/llmrun/ending"
	"github.com/llmrun/llmrun/providers"
	"github.com/llmrun/llmrun/report"
	"github.com/llmrun/llmrun/runner/retry"
)

// DefaultConnectDeadline is how long a run may fail to reach a server it
// never reached before it stops (the CLI's --connect-deadline default).
const DefaultConnectDeadline = 30 * time.Second

// connectWatch tells a server that was never reached from one that is
// down for a while: a wrong host or port, a server not started, a TLS
// mismatch fail every attempt at the connection, and holding for
// --max-outage (10 minutes) would only hide the cause. Once any attempt
// on the key got an HTTP answer, the watch has nothing more to say and
// the breaker's outage rules apply. Pure: every method takes now. Safe
// for concurrent use.
type connectWatch struct {
	mu      sync.Mutex
	first   time.Time // the first attempt sent
	reached bool      // some attempt got an HTTP answer
	last    error     // the latest connection-level failure
}

// observe records one sent attempt's outcome.
func (w *connectWatch) observe(o attemptOutcome) {
	if o.sent.IsZero() || o.cut {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.first.IsZero() || o.sent.Before(w.first) {
		w.first = o.sent
	}
	if o.resp != nil || !providers.ConnectionLevel(o.err) {
		w.reached = true
		return
	}
	w.last = o.err
}

// exceeded returns the error that stops the run when, by now, the key has
// failed to connect for deadline since its first attempt without ever
// being reached; left is how long until it would (for a holding wait).
//
//lint:ignore ST1008 err first reads as "the error, and how long until it would be one" at the call sites and tests
func (w *connectWatch) exceeded(now time.Time, deadline time.Duration) (err error, left time.Duration) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.reached || w.last == nil || deadline <= 0 {
		return nil, -1
	}
	if left = w.first.Add(deadline).Sub(now); left > 0 {
		return nil, left
	}
	return &ending.UnreachableError{Deadline: deadline, Err: w.last}, 0
}

// connectWatch is the watch of h's key, or nil when h can fall back to
// another hop (a dead primary is what a fallback is for).
func (r *run) connectWatch(h *hop) *connectWatch {
	if h.canFallBack || r.cfg.ConnectDeadline <= 0 {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	w, ok := r.conns[h.key]
	if !ok {
		w = &connectWatch{}
		r.conns[h.key] = w
	}
	return w
}

// observeAttempt feeds one attempt's outcome to what judges the run as a
// whole: the latest cause (for hold and outage messages) and the connect
// watch, which may stop the run. (The fail-fast window judges in its own
// hold, failFastHold; the setup watch once the reservation has ended,
// observeSetup.)
func (r *run) observeAttempt(h *hop, o attemptOutcome) {
	if o.err != nil && !o.cut && !o.sent.IsZero() {
		cause := providers.Cause(o.err)
		r.lastCause.Store(&cause)
	}
	if w := r.connectWatch(h); w != nil {
		w.observe(o)
		if err, _ := w.exceeded(time.Now(), r.cfg.ConnectDeadline); err != nil {
			r.abortRun(r.unreachable(h, err))
		}
	}
}

// observeSetup feeds one attempt's outcome to the setup watch, which may
// stop the run. The reservation's release calls it once the reservation
// has ended, before the slot frees: a streamed setup failure probes one
// plain request through the key's budget, and with the reservation still
// held that probe waited for the concurrency slot the caller held (Auto
// starts at one) until its 30s timeout.
func (r *run) observeSetup(h *hop, o attemptOutcome) {
	if w := r.setupWatch(h); w != nil {
		w.observe(o)
		if err, _ := r.setupFailed(h, time.Now()); err != nil {
			r.abortRun(err)
		}
	}
}

// unreachable names h's server in a connect watch's error.
func (r *run) unreachable(h *hop, err error) error {
	if ue, ok := err.(*ending.UnreachableError); ok {
		ue.Where = h.route.Provider.Name() + " at " + h.route.Provider.BaseURL()
	}
	return err
}

// outageError is why a run held past --max-outage stops, with the latest
// failure's cause.
func (r *run) outageError() error {
	msg := fmt.Sprintf("provider down for longer than --max-outage (%v)", cmp.Or(r.cfg.Breaker.MaxOutage, retry.DefaultMaxOutage))
	if cause := r.latestCause(); cause != "" {
		msg += "; the latest failure: " + cause
	}
	return errors.New(msg)
}

// latestCause is the cause of the latest failed attempt, or "".
func (r *run) latestCause() string {
	if c := r.lastCause.Load(); c != nil {
		return *c
	}
	return ""
}

// logAttempt logs one sent attempt at Debug level (-v; report.LogAttempt).
func (r *run) logAttempt(h *hop, o attemptOutcome) {
	if o.sent.IsZero() || !r.cfg.Log.Enabled(context.Background(), slog.LevelDebug) {
		return
	}
	report.LogAttempt(r.cfg.Log, report.AttemptLog{ID: h.t.req.ID, Line: h.t.req.Line, Provider: h.route.Provider.Name(), Model: h.req.Model,
		Hop: h.index, Attempt: h.t.attempts, Sent: o.sent, Cut: o.cut, Resp: o.resp, Err: o.err})
}
