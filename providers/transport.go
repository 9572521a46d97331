package providers

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/tidwall/gjson"
)

// This file is the HTTP half every provider shares: one POST with a
// first-byte bound, a response body whose reads are bounded by the idle
// timeout, and the mapping of transport failures onto *Error. Providers only
// deal with their wire format.

// MaxErrorBody bounds how much of an error response is read: error bodies
// are small, and a misbehaving proxy must not make us buffer a stream.
const MaxErrorBody = 1 << 20

// drainLimit and drainGrace bound the read to EOF after a stream's
// terminator: reaching EOF returns the connection to the pool (so the next
// request skips a TLS handshake), but a server that keeps the body open
// after its terminator must not hold the caller up.
const (
	drainLimit = 64 << 10
	drainGrace = 100 * time.Millisecond
)

// timeoutError is the cancel cause of our own timers. Being the cause (not
// the ctx error) is what tells "our timer fired" from "the caller cancelled".
type timeoutError struct {
	what string
	d    time.Duration
}

func (e *timeoutError) Error() string { return fmt.Sprintf("%s within %v", e.what, e.d) }

// Timeout makes timeoutError a net.Error-style timeout for callers that
// check errors.As(err, &interface{ Timeout() bool }).
func (e *timeoutError) Timeout() bool { return true }

// Post sends body as a JSON POST to url with header (never modified; on
// a Ready config it must not change after its first use: it is merged
// once per url) and returns the response as soon as its headers arrived.
//
// FirstByteTimeout bounds the wait for the headers and then, for the body,
// the wait for its first bytes; IdleTimeout bounds every later read (see
// Body). The returned response's Body must be closed on every path: closing
// it aborts the request, so a provider stops generating for a reader that
// stopped reading.
//
// Errors: when ctx is done the error is ctx.Err() itself, unwrapped, so the
// runner can tell its own shutdown or deadline from a provider failure. A
// 3xx answer is a ClassRedirect *Error: redirects are never followed. Any
// other failure is an *Error of ClassTimeout (our timers, dial or TLS
// timeouts) or ClassNetwork (refused, reset, EOF, DNS), with the API key
// redacted from its message.
func (c *Config) Post(ctx context.Context, url string, header http.Header, body []byte) (*http.Response, error) {
	t, err := c.target(url, header)
	if err != nil {
		// A malformed URL fails every request the same way.
		return nil, &Error{Class: ClassInvalid, Message: RedactString(err.Error(), c.Secret()), Err: err}
	}
	rctx, cancel := context.WithCancelCause(ctx)
	// One timer bounds the wait for the headers, then each body read.
	b := newBody(ctx, rctx, nil, cancel, c.FirstByteTimeout, c.IdleTimeout, c.Secret)
	b.src = bodyReader{r: *bytes.NewReader(body), b: body}
	req := t.request(rctx, &b.src)
	if c.FirstByteTimeout > 0 {
		b.timer.Reset(c.FirstByteTimeout)
	}
	resp, err := c.do(req)
	// Stop reports false once the timer fired, even if the cancel races
	// the round trip's return: the request is dead either way.
	fired := c.FirstByteTimeout > 0 && !b.timer.Stop()
	if err == nil && fired {
		resp.Body.Close()
		err = context.Cause(rctx)
	}
	if err != nil {
		cancel(nil)
		if fired {
			return nil, c.transportError(ctx, &timeoutError{"no response headers", c.FirstByteTimeout})
		}
		return nil, c.transportError(ctx, err)
	}
	if isRedirect(resp.StatusCode) {
		resp.Body.Close()
		cancel(nil)
		return nil, c.redirectError(req, resp)
	}
	b.rc = resp.Body
	resp.Body = b
	return resp, nil
}

// refuseRedirect is the CheckRedirect of every client a Config sends
// with: the 3xx itself comes back, and neither the key (custom headers such
// as x-api-key survive Go's cross-host redirects) nor the body (307/308)
// is sent anywhere else.
func refuseRedirect(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

func isRedirect(status int) bool { return status >= 300 && status <= 399 }

// redirectError is the ClassRedirect *Error of a 3xx answer to req: it
// names where the server pointed, the likely fix for a misconfigured base
// URL. URLs are shown without userinfo and with the key redacted.
func (c *Config) redirectError(req *http.Request, resp *http.Response) *Error {
	where := "without a Location"
	if loc, err := resp.Location(); err == nil {
		where = "to " + StripUserinfo(loc.String())
	} else if l := resp.Header.Get("Location"); l != "" {
		where = fmt.Sprintf("to %q", l)
	}
	msg := fmt.Sprintf("%s %s was redirected %s; API calls never follow redirects (the API key would go along), so check the base URL",
		req.Method, StripUserinfo(req.URL.String()), where)
	return &Error{Class: ClassRedirect, Status: resp.StatusCode, Message: RedactString(msg, c.Secret())}
}

// transportError maps a failed round trip or body read. See Post.
func (c *Config) transportError(ctx context.Context, err error) error {
	return mapTransport(ctx, err, c.Secret())
}

func mapTransport(ctx context.Context, err error, key string) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		return ctxErr
	}
	var pe *Error
	if errors.As(err, &pe) {
		return err // already mapped (a body read seen twice)
	}
	msg := RedactString(err.Error(), key)
	var te *timeoutError
	var ne net.Error
	switch {
	case errors.As(err, &te):
		return &Error{Class: ClassTimeout, Message: msg, Err: err}
	case errors.As(err, &ne) && ne.Timeout():
		return &Error{Class: ClassTimeout, Message: msg, Err: err}
	}
	return &Error{Class: ClassNetwork, Message: msg, Err: err}
}

// body bounds each Read of a response body: a Read must return within the
// first-byte timeout until the first bytes arrived, and within the idle
// timeout after that; otherwise the request is cancelled and the Read fails
// with a ClassTimeout *Error. One timer is re-armed per Read, so the steady
// state allocates nothing.
type body struct {
	rc     io.ReadCloser
	parent context.Context // the caller's
	rctx   context.Context // the request's, cancelled by our timer
	cancel context.CancelCauseFunc
	first  time.Duration
	idle   time.Duration
	secret func() string // what to redact (Config.Secret), asked only on a failure
	src    bodyReader    // the request's body (Post's)
	// timer and cause are set in newBody and never replaced, so Close and
	// the timer goroutine may use them; the fields below them belong to the
	// reading goroutine.
	timer   *time.Timer
	cause   *timeoutError // identifies our timer as the cancel cause; never mutated
	started bool
	err     error // sticky mapped error
	// limit bounds the bytes read (limit.max 0: no bound); n counts them.
	limit bound
	n     int64
	// events makes the idle timeout count SSE events (Progress), not
	// bytes: a server sending only ": keepalive" comments is idle. last
	// is when the last event (or the first bytes) arrived; fresh that
	// events arrived since the last Read, which then takes the clock once
	// for all of them (a read brings some ten events: a clock read each
	// was a tenth of decoding a stream).
	events bool
	fresh  bool
	last   time.Time
}

// Progress records that an SSE event arrived (sse.Progresser). The
// events of a read are dispatched before the next Read, so that Read's
// time stands for the last of them.
func (b *body) Progress() { b.fresh = true }

// idleByEvents makes rc, a body Post returned, time out for idleness
// between SSE events rather than between reads. Others are left alone.
func idleByEvents(rc io.ReadCloser) {
	if bb, ok := rc.(*body); ok {
		bb.events = true
	}
}

// limitBody bounds what can be read from rc, a body Post returned, to
// b.max bytes: the Read that goes past it fails with b's ClassTooLarge
// error (sticky). Bodies not returned by Post are left alone.
func limitBody(rc io.ReadCloser, b bound) {
	if bb, ok := rc.(*body); ok {
		bb.limit = b
	}
}

// readTimeout is the cancel cause of a body's timer: a Config's own
// timer is the only one that cancels its request's context with it, so
// seeing it as the cause tells that the timer fired. Never modified.
var readTimeout = &timeoutError{what: "read"}

func newBody(parent, rctx context.Context, rc io.ReadCloser, cancel context.CancelCauseFunc, first, idle time.Duration, secret func() string) *body {
	b := &body{rc: rc, parent: parent, rctx: rctx, cancel: cancel, first: first, idle: idle, secret: secret, cause: readTimeout}
	b.timer = time.AfterFunc(time.Hour, b.fire)
	b.timer.Stop()
	return b
}

// fire runs on the timer goroutine.
func (b *body) fire() { b.cancel(b.cause) }

func (b *body) Read(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	d, what := b.idle, "no stream data"
	shown := d // the timeout a failure names
	if !b.started && b.first > 0 {
		d, what = b.first, "no response body"
		shown = d
	} else if b.events && b.started && d > 0 {
		if b.fresh {
			b.last, b.fresh = time.Now(), false
		} else if d -= time.Since(b.last); d <= 0 {
			// Only what was left of the idle time since the last event.
			b.cancel(b.cause)
			b.err = mapTransport(b.parent, &timeoutError{"no stream data", b.idle}, b.secret())
			return 0, b.err
		}
		what = "no stream data"
	}
	if b.limit.max > 0 {
		// One byte past the bound is enough to know it was crossed.
		if left := b.limit.max - b.n + 1; int64(len(p)) > left {
			p = p[:left]
		}
	}
	if d > 0 {
		b.timer.Reset(d)
	}
	n, err := b.rc.Read(p)
	fired := d > 0 && !b.timer.Stop()
	if n > 0 {
		if !b.started {
			b.last = time.Now()
		}
		b.started = true
		b.n += int64(n)
		if b.limit.max > 0 && b.n > b.limit.max {
			b.err = b.limit.tooLarge(0)
			return n, b.err
		}
	}
	if err == nil || err == io.EOF {
		return n, err
	}
	// The timer may also have fired just after an earlier Read returned;
	// the cancel cause tells, whichever Read sees the failure.
	if fired || context.Cause(b.rctx) == error(b.cause) {
		err = &timeoutError{what, shown}
	}
	b.err = mapTransport(b.parent, err, b.secret())
	return n, b.err
}

// Close aborts the request if the body was not read to its end (the
// transport closes the connection, which is how the provider learns to stop
// generating), and releases the request's context.
func (b *body) Close() error {
	b.timer.Stop()
	err := b.rc.Close()
	b.cancel(nil)
	return err
}

// Drain reads what is left of a stream body after its terminator, briefly
// and boundedly, so that reaching EOF returns the connection to the pool.
// It does not close rc. Bodies not returned by Post are left alone.
func Drain(rc io.ReadCloser) {
	b, ok := rc.(*body)
	if !ok || b.err != nil {
		return
	}
	b.started, b.events = true, false // after the terminator, bytes count
	idle := b.idle
	b.idle = drainGrace
	if idle > 0 {
		b.idle = min(idle, drainGrace)
	}
	_, _ = io.CopyN(io.Discard, b, drainLimit)
	b.idle = idle
}

// ReadErrorBody reads at most MaxErrorBody bytes of r (an error response
// body) and redacts key from them. A read failure keeps what was read: a
// partial error body still explains more than none.
func ReadErrorBody(r io.Reader, key string) []byte {
	b, _ := io.ReadAll(io.LimitReader(r, MaxErrorBody))
	return Redact(b, key)
}

// StatusError builds the *Error of a non-2xx response from what every
// provider shares: the status class, the request id from requestIDHeader,
// the retry-after hint, the rate-limit headers and the (bounded, redacted)
// body. Providers then refine Class, Type, Code and Message from the body.
// The caller still closes resp.Body.
func (c *Config) StatusError(resp *http.Response, requestIDHeader string) *Error {
	now := c.Clock()()
	ra, ok := ParseRetryAfter(resp.Header, now)
	return &Error{
		Class:         ClassifyStatus(resp.StatusCode),
		Status:        resp.StatusCode,
		RequestID:     resp.Header.Get(requestIDHeader),
		RetryAfter:    ra,
		HasRetryAfter: ok,
		ShouldRetry:   parseShouldRetry(resp.Header.Get("x-should-retry")),
		Body:          ReadErrorBody(resp.Body, c.Secret()),
		Limits:        c.RateLimits(resp.Header, now),
	}
}

// RefinedStatusError is StatusError refined by a dialect's reading of the
// error body: classify returns the class, type, code and message it finds
// for the status and (redacted) body, which replace StatusError's.
func (c *Config) RefinedStatusError(resp *http.Response, requestIDHeader string, classify func(status int, body []byte) *Error) error {
	e := c.StatusError(resp, requestIDHeader)
	ce := classify(resp.StatusCode, e.Body)
	e.Class, e.Type, e.Code, e.Message = ce.Class, ce.Type, ce.Code, ce.Message
	return e
}

// InStream completes a failure an event of a 2xx stream reported (an error
// event, a malformed chunk) for the caller: the response's status and,
// unless the event named its own, its request id; key is redacted from the
// message and body, which can quote the request. Every dialect's stream
// reader ends with it, so none can forget the redaction.
func (e *Error) InStream(out *Response, key string) *Error {
	e.Status = out.Status
	if e.RequestID == "" {
		e.RequestID = out.RequestID
	}
	e.Message = RedactString(e.Message, key)
	e.Body = Redact(e.Body, key)
	return e
}

// StreamEnded is the failure of a stream that stopped before its end (the
// event named by end): the transport's failure decErr as StreamError maps
// it, else the caller's cancellation, else a cut by the server, retried
// whole as a mid-stream failure.
func StreamEnded(ctx context.Context, decErr error, out *Response, end string) error {
	if decErr != nil {
		return StreamError(ctx, decErr, out.Status, out.RequestID)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return &Error{Class: ClassMidStream, Status: out.Status, RequestID: out.RequestID, Message: "stream ended before " + end}
}

// ReadWholeJSON reads, in a stream reader's place, an answer that is one
// JSON body whatever content type came with it (a proxy's or a local
// server's text/plain) and hands it to parse, the plain answer's reader: a
// read failure is StreamError's, a body that is not JSON a ClassMidStream
// error carrying its start with apiKey redacted.
func ReadWholeJSON(ctx context.Context, r io.Reader, out *Response, apiKey string, parse func(b []byte, out *Response) error) error {
	b, err := io.ReadAll(r)
	if err != nil {
		return StreamError(ctx, err, out.Status, out.RequestID)
	}
	if !gjson.ValidBytes(b) {
		return &Error{Class: ClassMidStream, Status: out.Status, RequestID: out.RequestID,
			Message: "response body is not valid JSON", Body: Redact(b[:min(len(b), MaxErrorBody)], apiKey)}
	}
	return parse(b, out)
}

// AnswerError is the failure a 200 answer reports in place of the answer:
// the error object in body b (parsed: root), which fill, the dialect's
// reader of error bodies, reads into it. It is retried like a broken
// stream; apiKey is redacted from its body and message.
func AnswerError(root gjson.Result, b []byte, out *Response, apiKey string, fill func(*Error, gjson.Result)) *Error {
	e := &Error{Class: ClassMidStream, Status: out.Status, RequestID: out.RequestID, Body: Redact(b, apiKey)}
	fill(e, root)
	e.Message = RedactString(e.Message, apiKey)
	return e
}

// StreamError maps a failure while reading a 2xx stream: the caller's
// cancellation stays ctx.Err(); our timeouts stay ClassTimeout; anything else
// (a reset or cut connection) is ClassMidStream, because the answer was
// already under way and its partial text is lost. Status and RequestID are
// filled in from the response.
func StreamError(ctx context.Context, err error, status int, requestID string) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		return ctxErr
	}
	var pe *Error
	if !errors.As(err, &pe) {
		pe = &Error{Class: ClassMidStream, Message: err.Error(), Err: err}
	} else if pe.Class != ClassTimeout && pe.Class != ClassTooLarge {
		pe = &Error{Class: ClassMidStream, Message: "stream broken: " + pe.Message, Err: pe.Err}
	}
	pe.Status = status
	pe.RequestID = requestID
	return pe
}
