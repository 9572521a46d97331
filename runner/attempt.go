package runner

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/llmrun/llmrun/limiter"
	"github.com/llmrun/llmrun/providers"
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

// process takes one request through the fallback chain and hands the final
// line to the sink. A request stopped by an interrupt or abort is not
// written at all: it stays pending for the rerun.
func (r *run) process(req *providers.Request) {
	start := r.cfg.Now()
	var last hopResult
	attempts := 0
	for hop, route := range r.cfg.Routes {
		if hop > 0 && r.admitCtx.Err() != nil {
			return
		}
		hreq, err := r.shape(req, route)
		if err != nil {
			last = hopResult{out: outFailed, err: err}
			continue
		}
		res := r.tryRoute(hreq, route, hop < len(r.cfg.Routes)-1)
		attempts += res.attempts
		switch res.out {
		case outPending:
			return
		case outSucceeded:
			if hop > 0 {
				r.c.FellBack.Add(1)
			}
			r.emit(req, route, hreq, res, attempts, start)
			return
		}
		last = res
	}
	r.emitFailure(req, last, attempts, start)
}

// shape adapts a request to a route: the route's wire format and model.
func (r *run) shape(req *providers.Request, route Route) (*providers.Request, error) {
	from := r.cfg.Routes[0].Provider.Format()
	to := route.Provider.Format()
	if from == to && (route.Model == "" || route.Model == req.Model) {
		return req, nil
	}
	body := req.Body
	var err error
	if from != to {
		if body, err = providers.Translate(body, from, to); err != nil {
			return nil, err
		}
	}
	if route.Model != "" {
		if body, err = sjson.SetBytes(body, "model", route.Model); err != nil {
			return nil, err
		}
	}
	out := *req
	out.Body = body
	out.Model = gjson.GetBytes(body, "model").String()
	return &out, nil
}

// tryRoute makes attempts on one route until success, a final failure, or
// a stop. canFallBack lets an open breaker send the request onwards instead
// of holding it.
func (r *run) tryRoute(req *providers.Request, route Route, canFallBack bool) hopResult {
	key := r.key(route, req)
	br := r.breaker(key)
	start := r.cfg.Now()
	// Tokenize once per hop: it is the costliest step per request.
	raw := r.cfg.Estimator.RawInputTokens(req.Model, route.Admission.PromptText(req))
	var res hopResult
	// n counts the attempts the retry policy judges; attempts that failed
	// because the provider is down (the breaker opened) do not count, as the
	// request is held, not failed, while the provider recovers.
	for n := 1; ; n++ {
		ticket, held, out, ok := r.waitBreaker(br, canFallBack)
		if !ok {
			res.out = out
			return res
		}
		start = start.Add(held) // time held is not the request's fault
		release, err := r.firstOnKey(key)
		if err != nil {
			br.Release(r.cfg.Now(), ticket)
			res.out = outPending
			return res
		}
		resv, err := r.cfg.Limiter.Reserve(r.admitCtx, key, r.cost(key, route, req, raw))
		if err != nil {
			release()
			br.Release(r.cfg.Now(), ticket)
			res.out, res.err = outPending, err
			switch {
			case errors.Is(err, limiter.ErrTooLarge):
				res.out = outFailed
			case r.admitCtx.Err() == nil:
				// The budget itself failed (a shared budget's Redis is
				// down): no request can be admitted safely.
				r.abortRun(fmt.Errorf("budget: %w", err))
			}
			return res
		}
		// The run-wide in-flight cap (the limiter caps each key; a fallback
		// chain has several keys), held only around the send (attempt
		// releases it), never during a backoff or budget wait.
		select {
		case r.slots <- struct{}{}:
		case <-r.admitCtx.Done():
			resv.Cancel()
			release()
			br.Release(r.cfg.Now(), ticket)
			res.out = outPending
			return res
		}
		if !br.Valid(ticket) {
			<-r.slots
			// The breaker opened while we waited for the budget: this
			// attempt must not reach a provider that is down.
			resv.Cancel()
			release()
			n--
			continue
		}
		if res.attempts == 0 {
			r.cfg.RetryBudget.RecordFirst(r.cfg.Now())
		}
		res.attempts++
		sent := r.cfg.Now()
		resp, err := r.attempt(req, route, start)
		if err == nil {
			resv.Settle(limiter.Cost{Requests: 1, Input: route.Admission.InputCharged(resp.Usage), Output: resp.Usage.OutputTokens})
			// The headers came before the first token at the latest.
			resv.Observe(observation(resp.Limits), sent.Add(resp.TTFT))
			r.learn(key, raw, resp)
			release()
			br.Success(r.cfg.Now(), ticket)
			gerr := r.cfg.Guard.Check(resp.Text)
			if gerr == nil {
				res.out, res.resp, res.err = outSucceeded, resp, nil
				return res
			}
			res.resp = resp
			res.status, res.errBody, res.reqID = resp.Status, resp.Body, resp.RequestID
			err = &providers.Error{Class: providers.ClassUnknown, Status: resp.Status, Code: "rejected_by_guard", Message: gerr.Error(), RequestID: resp.RequestID}
		} else {
			resv.Fail()
			release()
			if r.workCtx.Err() != nil {
				// Shutdown cut the attempt: the request stays pending.
				br.Release(r.cfg.Now(), ticket)
				res.out = outPending
				return res
			}
			br.Observe(r.cfg.Now(), ticket, err)
			r.observeFailure(key, resv, err, &res)
		}
		res.err = err
		class := providers.ClassOf(err)
		if class.AbortsRun() {
			r.abortRun(err)
			res.out = outPending
			return res
		}
		if retry.Unhealthy(class) && br.State(r.cfg.Now()) != retry.Closed {
			// The provider is down: hold (waitBreaker) instead of failing.
			r.c.retried(class)
			n--
			continue
		}
		d := r.cfg.Policy.Decide(retry.AttemptOf(n, err, start), r.cfg.Now(), r.int64n)
		if !d.Retry {
			res.out = outFailed
			return res
		}
		r.c.retried(class)
		if !sleep(r.admitCtx, d.Delay) {
			res.out = outPending
			return res
		}
		if out, ok := r.waitRetryBudget(r.cfg.Policy.DeadlineAt(start)); !ok {
			res.out = out
			return res
		}
	}
}

// attempt sends one attempt under the request's deadline; the caller holds
// a run slot, which attempt gives back.
func (r *run) attempt(req *providers.Request, route Route, start time.Time) (*providers.Response, error) {
	defer func() { <-r.slots }()
	r.c.Attempts.Add(1)
	r.c.InFlight.Add(1)
	defer r.c.InFlight.Add(-1)
	ctx, cancel := context.WithDeadline(r.workCtx, r.cfg.Policy.DeadlineAt(start))
	defer cancel()
	resp, err := route.Provider.Send(ctx, req)
	if err != nil && ctx.Err() == context.DeadlineExceeded && r.workCtx.Err() == nil {
		err = &providers.Error{Class: providers.ClassTimeout, Message: "request deadline exceeded", Err: err}
	}
	return resp, err
}

// learn feeds a success back into the limiter and the estimator.
func (r *run) learn(key string, rawInput int64, resp *providers.Response) {
	r.c.InputTokens.Add(resp.Usage.InputTokens)
	r.c.OutputTokens.Add(resp.Usage.OutputTokens)
	r.cfg.Estimator.ObserveInput(key, rawInput, resp.Usage.InputTokens)
	r.cfg.Estimator.ObserveOutput(key, resp.Usage.OutputTokens)
}

// observeFailure feeds a failed attempt into the limiter: its rate-limit
// headers, and on a 429 the key-wide pause.
func (r *run) observeFailure(key string, resv limiter.Ticket, err error, res *hopResult) {
	var pe *providers.Error
	if !errors.As(err, &pe) {
		return
	}
	res.status, res.errBody, res.reqID = pe.Status, pe.Body, pe.RequestID
	resv.Observe(observation(pe.Limits), r.cfg.Now())
	if pe.Class == providers.ClassRateLimited {
		r.c.RateLimited.Add(1)
		r.cfg.Limiter.RateLimited(key)
		if pe.HasRetryAfter {
			r.cfg.Limiter.Pause(key, r.cfg.Now().Add(pe.RetryAfter))
		}
	}
}

// waitBreaker holds while the key's breaker is open and returns the
// ticket for the next attempt and how long it held. When it cannot, it
// says why: outFailed to
// move the request to the next hop, outPending when the run is stopping
// (outage longer than --max-outage, interrupt).
func (r *run) waitBreaker(br *retry.Breaker, canFallBack bool) (t retry.Ticket, held time.Duration, out outcome, ok bool) {
	start := r.cfg.Now()
	holding := false
	defer func() {
		if holding {
			r.c.Holding.Add(-1)
		}
	}()
	for {
		now := r.cfg.Now()
		changed := br.Changed()
		if t, ok := br.Allow(now); ok {
			return t, now.Sub(start), 0, true
		}
		if canFallBack {
			return retry.Ticket{}, 0, outFailed, false
		}
		if br.OutageExceeded(now) {
			r.abortRun(fmt.Errorf("provider down for longer than --max-outage (%v)", br.Config().MaxOutage))
			return retry.Ticket{}, 0, outPending, false
		}
		if !holding {
			holding = true
			r.c.Holding.Add(1)
		}
		timer := time.NewTimer(max(br.WaitTime(now), time.Millisecond))
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
		g = &keyGate{done: make(chan struct{}), until: r.cfg.Now().Add(calibrationWait)}
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
	t := time.NewTimer(max(g.until.Sub(r.cfg.Now()), 0))
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

// waitRetryBudget waits until the retry budget allows one more retry: a
// struggling provider sees at most 1+ratio times the first-attempt load.
// Once every request has made its first attempt, retries can no longer
// crowd out first attempts and the concurrency cap and breaker bound the
// load, so the tail of a run retries without waiting for first attempts
// that will never come to refill the budget. Past the request's deadline
// the request fails; a stop leaves it pending.
func (r *run) waitRetryBudget(deadline time.Time) (outcome, bool) {
	for {
		now := r.cfg.Now()
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

func observation(l providers.RateLimits) limiter.Observation {
	return limiter.Observation{
		Requests: limiter.Window(l.Requests),
		Tokens:   limiter.Window(l.Tokens),
		Input:    limiter.Window(l.InputTokens),
		Output:   limiter.Window(l.OutputTokens),
	}
}

// emit writes a success line.
func (r *run) emit(req *providers.Request, route Route, hreq *providers.Request, res hopResult, attempts int, start time.Time) {
	resp := res.resp
	model := resp.Model
	if model == "" {
		model = hreq.Model
	}
	l := Line{
		CustomID: req.ID,
		Response: &LineResp{StatusCode: resp.Status, RequestID: resp.RequestID, Body: resp.Body},
		Llmrun: LineDetails{
			Provider:     route.Provider.Name(),
			Model:        model,
			Attempts:     attempts,
			LatencyMS:    r.cfg.Now().Sub(start).Milliseconds(),
			TTFTMS:       resp.TTFT.Milliseconds(),
			InputTokens:  resp.Usage.InputTokens,
			OutputTokens: resp.Usage.OutputTokens,
		},
	}
	r.send(req.ID, &l, true)
}

// emitFailure writes an errors-file line.
func (r *run) emitFailure(req *providers.Request, last hopResult, attempts int, start time.Time) {
	l := Line{
		CustomID: req.ID,
		Error:    &LineError{Code: "error", Message: "failed"},
		Llmrun: LineDetails{
			Attempts:  attempts,
			Model:     req.Model,
			LatencyMS: r.cfg.Now().Sub(start).Milliseconds(),
		},
	}
	if len(r.cfg.Routes) > 0 {
		l.Llmrun.Provider = r.cfg.Routes[len(r.cfg.Routes)-1].Provider.Name()
	}
	if last.err != nil {
		l.Error.Message = last.err.Error()
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
		l.Response = &LineResp{StatusCode: last.status, RequestID: last.reqID, Body: last.errBody}
	} else if last.resp != nil {
		l.Response = &LineResp{StatusCode: last.resp.Status, RequestID: last.resp.RequestID, Body: last.resp.Body}
	}
	r.send(req.ID, &l, false)
}

func (r *run) send(id string, l *Line, ok bool) {
	b, err := l.Marshal()
	if err != nil {
		// Marshal of our own struct fails only on a broken body; keep the
		// request pending rather than writing a bad line.
		r.stopAdmitting(fmt.Errorf("encoding result for %s: %w", id, err))
		return
	}
	r.results <- result{id: id, line: b, ok: ok}
}

// statusWord summarises the run's state for progress.
func (r *run) statusWord() string {
	var parts []string
	if r.holding() {
		parts = append(parts, "provider down, holding")
	}
	if r.admitCtx.Err() != nil {
		parts = append(parts, "draining")
	}
	var wait time.Duration
	bound := limiter.DimNone
	for _, st := range r.cfg.Limiter.Stats() {
		wait += st.Wait
		if st.Binding != limiter.DimNone {
			bound = st.Binding
		}
	}
	if bound != limiter.DimNone {
		parts = append(parts, fmt.Sprintf("budget wait %s, bound by %s", wait.Round(time.Second), bound))
	}
	return strings.Join(parts, ", ")
}
