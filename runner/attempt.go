package runner

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/llmrun/llmrun/checkpoint"
	"github.com/llmrun/llmrun/limiter"
	"github.com/llmrun/llmrun/output"
	"github.com/llmrun/llmrun/providers"
	"github.com/llmrun/llmrun/report"
	"github.com/llmrun/llmrun/runner/retry"
)

// outcome is how one route ended for a request.
type outcome int

const (
	outSucceeded outcome = iota // answered; line written
	outFailed                   // this hop gave up; the next hop may try
	outPending                  // stopped (interrupt, abort, outage): not written, resumable
)

// hopResult carries what the last attempt on a hop left behind.
type hopResult struct {
	out      outcome
	attempts int
	err      error
	resp     *providers.Response // the last error response's status/body, if any
	errBody  []byte
	status   int
	reqID    string
}

// task is one request on its way through the fallback chain.
type task struct {
	req      *providers.Request // as read from the input
	fp       checkpoint.Fingerprint
	start    time.Time
	attempts int // over every hop
	// spent is what its answers cost, over every hop (guard-rejected
	// answers too).
	spent spend
	// ready: the task holds a token of run.ready (see run.unready).
	ready bool
	// The request's end as observers and the tags' book see it
	// (observe_hooks.go): how it ended, on which hop, why it failed, the
	// tokens its answers reported, its observer and current attempt.
	outcome             outcome
	hop                 int
	lastErr             error
	inTokens, outTokens int64
	obs                 RequestObserver
	att                 *Attempt
}

// hop is one request's attempts on one route of the fallback chain.
type hop struct {
	t     *task
	index int                // the route's place in the chain
	req   *providers.Request // shaped for the route
	route Route
	key   string
	br    Breaker
	// raw is the uncalibrated input estimate, tokenized once per hop
	// when something reads it (rawExact), else a placeholder (input.go).
	raw      int64
	rawExact bool
	// start is when the deadline counts from; llmrun's own waits move it
	// on: an open breaker's hold, a wait for --max-cost room, a wait for
	// the day's limit (the budget's wait for the provider's rates counts).
	start time.Time
	// canFallBack lets an open breaker send the request onwards instead
	// of holding it.
	canFallBack bool
	// waited and reserved are the latest admission's wait and
	// reservation, for observers.
	waited   time.Duration
	reserved limiter.Cost
	// judged counts the attempts that count toward --max-attempts;
	// attempts that failed because the provider is down (the breaker
	// opened) do not, as the request is held, not failed, while it
	// recovers, nor do rate-limited or overloaded ones (retry.Paced).
	judged int
	res    hopResult
}

// process takes one request through the fallback chain; the line it
// ends with goes to the sink. A request stopped by an interrupt or abort
// is not written at all: it stays pending for the rerun.
func (r *run) process(req *providers.Request, fp checkpoint.Fingerprint) {
	t := &task{req: req, fp: fp, start: time.Now(), ready: true}
	defer r.unready(t)
	r.observeRequest(t)
	defer r.endRequest(t)
	var last hopResult
	for i, route := range r.cfg.Routes {
		if i > 0 && r.admitCtx.Err() != nil {
			return
		}
		hreq, err := r.shape(req, route)
		if err != nil {
			last = hopResult{out: outFailed, err: err}
			continue
		}
		res := r.tryRoute(t, i, hreq)
		if res.out != outFailed {
			t.outcome = res.out
			return
		}
		last = res
	}
	t.outcome, t.lastErr = outFailed, last.err
	r.emitFailure(t, last)
}

// shape adapts a request to a route: the route's wire format and model.
func (r *run) shape(req *providers.Request, route Route) (*providers.Request, error) {
	from := r.cfg.Routes[0].Provider.Format()
	to := route.Provider.Format()
	if from == to && (route.Model == "" || route.Model == req.Model) {
		return req, nil
	}
	body, ep := req.Body, req.Endpoint
	var err error
	if from != to {
		if body, ep, err = providers.TranslateEndpoint(body, from, ep, to); err != nil {
			return nil, err
		}
	}
	if route.Model != "" {
		if body, err = sjson.SetBytes(body, "model", route.Model); err != nil {
			return nil, err
		}
	}
	if body, err = route.Rules.Hop(body, to, ep); err != nil {
		return nil, err
	}
	out := *req
	out.Body, out.Endpoint = body, ep
	out.Model = gjson.GetBytes(body, "model").String()
	return &out, nil
}

// tryRoute makes attempts on route i until success, a final failure or a
// stop. Each attempt holds one permit; next decides what follows a
// failure.
func (r *run) tryRoute(t *task, i int, req *providers.Request) hopResult {
	route := r.cfg.Routes[i]
	h := &hop{t: t, index: i, req: req, route: route, start: time.Now(), canFallBack: i < len(r.cfg.Routes)-1}
	h.key = r.hopKey(i, route, req)
	h.br = r.breaker(h.key)
	if r.cacheHit(h) {
		h.res.out = outSucceeded
		return h.res
	}
	for {
		r.fillInput(h)
		p, out, err := r.admit(h)
		if p == nil {
			h.res.out, h.res.err = out, cmpErr(err, h.res.err)
			return h.res
		}
		o, gerr := r.sendUnder(h, p)
		if o.resp != nil {
			if gerr == nil {
				h.res.out = outSucceeded
				return h.res
			}
			h.res.resp = o.resp
			h.res.status, h.res.errBody, h.res.reqID = o.resp.Status, o.resp.Body, o.resp.RequestID
			o.err = &providers.Error{Class: providers.ClassUnknown, Status: o.resp.Status, Code: "rejected_by_guard", Message: gerr.Error(), RequestID: o.resp.RequestID}
		}
		if out, done := r.next(h, o); done {
			h.res.out = out
			return h.res
		}
	}
}

// sendUnder makes one attempt under p and releases p, the one place a permit
// is released, with how it ended. An answer is handed to the writer
// first (answers not yet written stay within the concurrency); a fatal
// failure stops admissions first (so no other attempt starts on a key
// that just failed fatally once the key's gate opens). gerr is the
// guard's rejection of the answer, if any.
func (r *run) sendUnder(h *hop, p *permit) (o attemptOutcome, gerr error) {
	defer func() { p.release(o) }()
	o = r.attempt(h)
	if o.resp == nil {
		if !o.cut && o.class().AbortsRun() {
			r.abortRun(o.err)
		}
		return o, nil
	}
	r.estimateUsage(h, o.resp)
	o.cost = r.price(h.route, h.req, o.resp)
	h.t.spent.add(o.cost)
	if gerr = r.cfg.Guard.Check(o.resp.Text); gerr == nil {
		r.emit(h, o.resp)
	}
	return o, gerr
}

// cmpErr returns err, or last when err is nil.
func cmpErr(err, last error) error {
	if err != nil {
		return err
	}
	return last
}

// attempt sends one attempt under the request's deadline.
func (r *run) attempt(h *hop) attemptOutcome {
	if h.res.attempts == 0 {
		r.cfg.RetryBudget.RecordFirst(time.Now())
	}
	h.res.attempts++
	h.t.attempts++
	r.c.Attempts.Add(1)
	r.c.InFlight.Add(1)
	defer r.c.InFlight.Add(-1)
	ctx, cancel := context.WithDeadline(r.workCtx, r.cfg.Policy.DeadlineAt(h.start))
	defer cancel()
	sent := time.Now()
	r.observeSend(h, sent)
	resp, err := h.route.Provider.Send(ctx, h.req)
	if err != nil && ctx.Err() == context.DeadlineExceeded && r.workCtx.Err() == nil {
		err = &providers.Error{Class: providers.ClassTimeout, Message: "request deadline exceeded", Err: err}
	}
	return attemptOutcome{resp: resp, err: err, sent: sent, cut: err != nil && r.workCtx.Err() != nil}
}

// next decides what follows a failed attempt (o.err): another attempt,
// after the backoff and the retry budget (done false), or the end of the
// hop and how it ended.
func (r *run) next(h *hop, o attemptOutcome) (out outcome, done bool) {
	if o.cut {
		return outPending, true // shutdown cut the attempt: the request stays pending
	}
	h.res.err = o.err
	var pe *providers.Error
	if errors.As(o.err, &pe) && o.resp == nil {
		h.res.status, h.res.errBody, h.res.reqID = pe.Status, pe.Body, pe.RequestID
	}
	if _, daily := r.dailyRefusal(o); daily {
		// The key's day is spent (endDay saw to it): the next admission
		// waits for the reset or stops the run; the request loses nothing.
		return 0, false
	}
	class := o.class()
	if class.AbortsRun() {
		r.abortRun(o.err)
		return outPending, true
	}
	if retry.Unhealthy(class) && h.br.State(time.Now()) != retry.Closed {
		// The provider is down: hold (in admit) instead of failing.
		r.c.retried(class)
		return 0, false
	}
	// A rate limit or an overload is the key's to answer: the permit told
	// the limiter, which pauses or slows every request on the key. It
	// counts neither toward the request's --max-attempts nor against the
	// retry budget; the deadline still bounds it.
	paced := retry.Paced(class)
	if !paced {
		h.judged++
	}
	a := retry.AttemptOf(h.judged, o.err, h.start)
	a.Paced = paced
	d := r.cfg.Policy.Decide(a, time.Now(), r.int64n)
	if !d.Retry {
		return outFailed, true
	}
	r.c.retried(class)
	r.unready(h.t)
	if !sleep(r.admitCtx, d.Delay) {
		return outPending, true
	}
	if paced {
		return 0, false
	}
	if out, ok := r.waitRetryBudget(r.cfg.Policy.DeadlineAt(h.start)); !ok {
		return out, true
	}
	return 0, false
}

// waitRetryBudget waits until the retry budget allows one more retry: a
// struggling provider sees at most 1+ratio times the first-attempt load.
// Once every request has made its first attempt, retries can no longer
// crowd out first attempts and the concurrency cap and breaker bound the
// load, so the tail of a run retries without waiting for first attempts
// that will never come to refill the budget. Past the request's deadline
// the request fails; a stop leaves it pending.
func (r *run) waitRetryBudget(deadline time.Time) (outcome, bool) {
	for {
		now := time.Now()
		if r.cfg.RetryBudget.TryRetry(now) {
			return 0, true
		}
		if !now.Before(deadline) {
			return outFailed, false
		}
		t := time.NewTimer(min(max(r.cfg.RetryBudget.WaitTime(now), 10*time.Millisecond), deadline.Sub(now)))
		select {
		case <-t.C:
		case <-r.produced:
			t.Stop()
			return 0, true
		case <-r.admitCtx.Done():
			t.Stop()
			return outPending, false
		}
	}
}

// emit writes a success line.
func (r *run) emit(h *hop, resp *providers.Response) {
	if h.index > 0 {
		r.c.FellBack.Add(1)
	}
	model := resp.Model
	if model == "" {
		model = h.req.Model
	}
	l := output.Line{
		CustomID: h.t.req.ID,
		Response: &output.LineResp{StatusCode: resp.Status, RequestID: resp.RequestID, Body: resp.Body, Valid: resp.BodyValid},
		Llmrun: output.LineDetails{
			Provider:     h.route.Provider.Name(),
			Model:        model,
			Attempts:     h.t.attempts,
			LatencyMS:    time.Since(h.t.start).Milliseconds(),
			TTFTMS:       resp.TTFT.Milliseconds(),
			InputTokens:  resp.Usage.InputTokens,
			OutputTokens: resp.Usage.OutputTokens,
			CacheRead:    resp.Usage.CacheReadTokens,
			CacheWrite:   resp.Usage.CacheWriteTokens,
			Estimated:    resp.Usage.Estimated,
			CostUSD:      h.t.spent.json(),
			Vars:         h.t.req.Vars,
			Tags:         h.t.req.Tags,
		},
	}
	r.cachePut(h, resp, model, l.Llmrun.CostUSD)
	r.send(h.t, &l, true)
}

// emitFailure writes an errors-file line.
func (r *run) emitFailure(t *task, last hopResult) {
	l := output.Line{
		CustomID: t.req.ID,
		Error:    &output.LineError{Code: "error", Message: "failed"},
		Llmrun: output.LineDetails{
			Attempts:  t.attempts,
			Model:     t.req.Model,
			LatencyMS: time.Since(t.start).Milliseconds(),
			CostUSD:   t.spent.json(),
			Vars:      t.req.Vars,
			Tags:      t.req.Tags,
		},
	}
	if len(r.cfg.Routes) > 0 {
		l.Llmrun.Provider = r.cfg.Routes[len(r.cfg.Routes)-1].Provider.Name()
	}
	if last.err != nil {
		l.Error.Message = last.err.Error()
		l.Error.Cause = providers.Cause(last.err)
		var pe *providers.Error
		if errors.As(last.err, &pe) {
			l.Error.Code = pe.Class.String()
			if pe.Code != "" {
				l.Error.Code = pe.Code
			}
		} else if errors.Is(last.err, limiter.ErrTooLarge) {
			l.Error.Code = "too_large"
		}
	}
	if last.status != 0 {
		l.Response = &output.LineResp{StatusCode: last.status, RequestID: last.reqID, Body: last.errBody}
	} else if last.resp != nil {
		l.Response = &output.LineResp{StatusCode: last.resp.Status, RequestID: last.resp.RequestID, Body: last.resp.Body}
	}
	r.send(t, &l, false)
}

func (r *run) send(t *task, l *output.Line, ok bool) {
	r.c.RequestNanos.Add(int64(time.Since(t.start)))
	cause := ""
	if !ok && l.Error != nil {
		cause = l.Error.Cause
	}
	buf := r.lineBuf()
	b, err := l.AppendMarshal((*buf)[:0])
	if err != nil {
		// Marshal of our own struct fails only on a broken body; keep the
		// request pending rather than writing a bad line.
		r.stopAdmitting(fmt.Errorf("encoding result for %s: %w", t.req.ID, err))
		return
	}
	r.results <- result{id: t.req.ID, fp: t.fp, line: b, buf: buf, ok: ok, cause: cause}
}

// statusWord summarises the run's state for progress.
func (r *run) statusWord() string {
	var parts []string
	if r.holding() {
		if cause := r.latestCause(); cause != "" {
			parts = append(parts, "provider down ("+cause+"), holding")
		} else {
			parts = append(parts, "provider down, holding")
		}
	}
	if r.admitCtx.Err() != nil {
		parts = append(parts, "draining")
	}
	bound := limiter.DimNone
	for _, st := range r.cfg.Limiter.Stats() {
		if st.Binding != limiter.DimNone {
			bound = st.Binding
		}
	}
	if bound != limiter.DimNone {
		parts = append(parts, "waiting for "+report.Words(bound.String()))
	}
	return strings.Join(parts, ", ")
}
