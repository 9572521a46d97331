package providers

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

const testKey = "sk-abcd1234efgh5678wxyz"

// failsafe bounds waits on channels a correct implementation closes at once,
// so a broken one fails the test instead of hanging it. It is never reached
// by a passing test.
const failsafe = 10 * time.Second

func waitFor(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(failsafe):
		t.Fatalf("timed out waiting for %s", what)
	}
}

// blocker is a handler helper: it blocks until the test ends or the client
// goes away, and records the latter.
type blocker struct {
	release chan struct{} // closed at test end, before the server closes
	gone    chan struct{} // closed when the server saw the client go away
	entered chan struct{} // closed when the handler started
}

// blockingServer starts a server running h, whose handlers may call
// b.block. Cleanup releases blocked handlers before closing the server,
// which waits for them.
func blockingServer(t *testing.T, h func(b *blocker, w http.ResponseWriter, r *http.Request)) (*blocker, *httptest.Server) {
	b := &blocker{release: make(chan struct{}), gone: make(chan struct{}), entered: make(chan struct{})}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { h(b, w, r) }))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(b.release) }) // runs first
	return b, srv
}

func (b *blocker) block(r *http.Request) {
	// The server notices a vanished client only once the request body has
	// been read (its background read starts then).
	io.Copy(io.Discard, r.Body)
	select {
	case <-b.entered:
	default:
		close(b.entered)
	}
	select {
	case <-r.Context().Done():
		close(b.gone)
	case <-b.release:
	}
}

func wantClass(t *testing.T, err error, c Class) *Error {
	t.Helper()
	var pe *Error
	if !errors.As(err, &pe) {
		t.Fatalf("err = %v (%T), want *Error of class %v", err, err, c)
	}
	if pe.Class != c {
		t.Fatalf("class = %v, want %v (err %v)", pe.Class, c, err)
	}
	return pe
}

func TestPostSendsRequest(t *testing.T) {
	var got *http.Request
	var gotBody []byte
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r
		gotBody, _ = io.ReadAll(r.Body)
		io.WriteString(w, "ok")
	}))
	defer srv.Close()
	cfg := Config{APIKey: testKey, FirstByteTimeout: time.Minute, IdleTimeout: time.Minute}
	h := http.Header{"X-Api-Key": {testKey}}
	resp, err := cfg.Post(t.Context(), srv.URL+"/v1/messages", h, []byte(`{"a":1}`))
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || string(b) != "ok" {
		t.Fatalf("body %q, err %v", b, err)
	}
	if got.Method != http.MethodPost || got.URL.Path != "/v1/messages" {
		t.Errorf("%s %s", got.Method, got.URL.Path)
	}
	if got.Header.Get("X-Api-Key") != testKey || got.Header.Get("Content-Type") != "application/json" {
		t.Errorf("headers %v", got.Header)
	}
	if string(gotBody) != `{"a":1}` {
		t.Errorf("body %q", gotBody)
	}
	if len(h) != 1 {
		t.Errorf("caller's header was modified: %v", h)
	}
}

func TestPostFirstByteTimeout(t *testing.T) {
	b, srv := blockingServer(t, func(b *blocker, w http.ResponseWriter, r *http.Request) { b.block(r) })
	cfg := Config{FirstByteTimeout: 20 * time.Millisecond}
	_, err := cfg.Post(t.Context(), srv.URL, nil, []byte(`{}`))
	pe := wantClass(t, err, ClassTimeout)
	if !strings.Contains(pe.Error(), "no response headers") {
		t.Errorf("message %q", pe.Error())
	}
	waitFor(t, b.gone, "the server to see the request cancelled")
}

func TestBodyFirstReadTimeout(t *testing.T) {
	b, srv := blockingServer(t, func(b *blocker, w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(200)
		w.(http.Flusher).Flush()
		b.block(r)
	})
	// Long enough for the head to arrive on a loaded machine (20ms was
	// not, at load 30), since the head's wait is bounded by it too.
	cfg := Config{FirstByteTimeout: 300 * time.Millisecond}
	resp, err := cfg.Post(t.Context(), srv.URL, nil, []byte(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	_, err = resp.Body.Read(make([]byte, 10))
	pe := wantClass(t, err, ClassTimeout)
	if !strings.Contains(pe.Error(), "no response body") {
		t.Errorf("message %q", pe.Error())
	}
	waitFor(t, b.gone, "the server to see the request cancelled")
	// The error is sticky.
	if _, err2 := resp.Body.Read(make([]byte, 10)); err2 != err {
		t.Errorf("second read: %v", err2)
	}
}

func TestBodyIdleTimeout(t *testing.T) {
	b, srv := blockingServer(t, func(b *blocker, w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "data: 1\n\n")
		w.(http.Flusher).Flush()
		b.block(r)
	})
	cfg := Config{FirstByteTimeout: time.Minute, IdleTimeout: 20 * time.Millisecond}
	resp, err := cfg.Post(t.Context(), srv.URL, nil, []byte(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	buf := make([]byte, 100)
	n, err := resp.Body.Read(buf)
	if err != nil || string(buf[:n]) != "data: 1\n\n" {
		t.Fatalf("first read %q, %v", buf[:n], err)
	}
	_, err = io.ReadAll(resp.Body)
	pe := wantClass(t, err, ClassTimeout)
	if !strings.Contains(pe.Error(), "no stream data") {
		t.Errorf("message %q", pe.Error())
	}
	waitFor(t, b.gone, "the server to see the request cancelled")
}

// slowReader stands for a response body: each Read delivers one byte after
// its delay, unless the request's context is cancelled first.
type slowReader struct {
	ctx    context.Context
	delays []time.Duration
}

func (r *slowReader) Read(p []byte) (int, error) {
	if len(r.delays) == 0 {
		return 0, io.EOF
	}
	d := r.delays[0]
	r.delays = r.delays[1:]
	select {
	case <-time.After(d):
		p[0] = 'x'
		return 1, nil
	case <-r.ctx.Done():
		return 0, context.Cause(r.ctx)
	}
}

func (r *slowReader) Close() error { return nil }

// TestBodyIdleIsPerRead checks, on a fake clock, that the idle bound
// applies to each read and not to the whole body, that the first read gets
// the first-byte bound, and that the read which overruns fails as a timeout.
func TestBodyIdleIsPerRead(t *testing.T) {
	const first, idle = 5 * time.Second, time.Second
	tests := map[string]struct {
		delays  []time.Duration
		wantN   int
		timeout bool
	}{
		"steady stream longer than idle": {[]time.Duration{4 * time.Second, 900 * time.Millisecond, 900 * time.Millisecond, 900 * time.Millisecond}, 4, false},
		"slow first byte within bound":   {[]time.Duration{4900 * time.Millisecond}, 1, false},
		"first byte too slow":            {[]time.Duration{5100 * time.Millisecond}, 0, true},
		"gap after progress":             {[]time.Duration{time.Second, 900 * time.Millisecond, 1100 * time.Millisecond}, 2, true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				rctx, cancel := context.WithCancelCause(t.Context())
				b := newBody(t.Context(), rctx, &slowReader{rctx, tc.delays}, cancel, first, idle, func() string { return testKey })
				defer b.Close()
				got, err := io.ReadAll(b)
				if len(got) != tc.wantN {
					t.Errorf("read %d bytes, want %d", len(got), tc.wantN)
				}
				if !tc.timeout {
					if err != nil {
						t.Fatalf("err = %v", err)
					}
					return
				}
				wantClass(t, err, ClassTimeout)
			})
		})
	}
}

func TestPostParentCancelled(t *testing.T) {
	b, srv := blockingServer(t, func(b *blocker, w http.ResponseWriter, r *http.Request) { b.block(r) })
	ctx, cancel := context.WithCancel(t.Context())
	go func() {
		<-b.entered
		cancel()
	}()
	cfg := Config{FirstByteTimeout: time.Minute}
	_, err := cfg.Post(ctx, srv.URL, nil, nil)
	if err != context.Canceled { // unwrapped on purpose: the runner compares
		t.Fatalf("err = %#v, want context.Canceled itself", err)
	}
	waitFor(t, b.gone, "the server to see the request cancelled")
}

func TestPostParentDeadline(t *testing.T) {
	b, srv := blockingServer(t, func(b *blocker, w http.ResponseWriter, r *http.Request) { b.block(r) })
	// The deadline passes once the server holds the request (a 20ms
	// timeout could pass before it arrived on a loaded machine, and the
	// server then never saw a client go away).
	ctx := expiresOn{t.Context(), b.entered}
	cfg := Config{FirstByteTimeout: time.Minute, IdleTimeout: time.Minute}
	_, err := cfg.Post(ctx, srv.URL, nil, nil)
	if err != context.DeadlineExceeded {
		t.Fatalf("err = %#v, want context.DeadlineExceeded itself", err)
	}
	waitFor(t, b.gone, "the server to see the request cancelled")
}

func TestBodyParentCancelledMidStream(t *testing.T) {
	b, srv := blockingServer(t, func(b *blocker, w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "data: 1\n\n")
		w.(http.Flusher).Flush()
		b.block(r)
	})
	ctx, cancel := context.WithCancel(t.Context())
	cfg := Config{IdleTimeout: time.Minute}
	resp, err := cfg.Post(ctx, srv.URL, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if _, err := resp.Body.Read(make([]byte, 100)); err != nil {
		t.Fatal(err)
	}
	cancel()
	if _, err := io.ReadAll(resp.Body); err != context.Canceled {
		t.Fatalf("err = %#v, want context.Canceled", err)
	}
	if err := StreamError(ctx, context.Canceled, 200, "r"); err != context.Canceled {
		t.Fatalf("StreamError = %#v, want context.Canceled", err)
	}
	waitFor(t, b.gone, "the server to see the request cancelled")
}

func TestPostConnectionRefused(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	cfg := Config{APIKey: testKey}
	// The key in the URL stands for any secret a transport error could echo.
	_, err = cfg.Post(t.Context(), "http://"+addr+"/v1?key="+testKey, nil, nil)
	pe := wantClass(t, err, ClassNetwork)
	if strings.Contains(pe.Error(), testKey) || strings.Contains(pe.Error(), testKey[:8]) {
		t.Fatalf("key leaked: %s", pe.Error())
	}
	if pe.Err == nil {
		t.Error("underlying error not kept")
	}
}

func TestPostBadURL(t *testing.T) {
	cfg := Config{}
	_, err := cfg.Post(t.Context(), "http://[::1", nil, nil)
	wantClass(t, err, ClassInvalid)
}

// hijackServer runs fn on the raw connection of every request.
func hijackServer(t *testing.T, fn func(c net.Conn)) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, _, err := w.(http.Hijacker).Hijack()
		if err != nil {
			t.Error(err)
			return
		}
		defer c.Close()
		fn(c)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestPostServerClosesBeforeHeaders(t *testing.T) {
	srv := hijackServer(t, func(c net.Conn) {})
	cfg := Config{}
	_, err := cfg.Post(t.Context(), srv.URL, nil, nil)
	wantClass(t, err, ClassNetwork)
}

func TestBodyServerCutsStream(t *testing.T) {
	srv := hijackServer(t, func(c net.Conn) {
		io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n9\r\ndata: 1\n\n\r\n")
	})
	cfg := Config{}
	resp, err := cfg.Post(t.Context(), srv.URL, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if string(b) != "data: 1\n\n" {
		t.Errorf("read %q", b)
	}
	wantClass(t, err, ClassNetwork)
	pe := wantClass(t, StreamError(t.Context(), err, 200, "req_1"), ClassMidStream)
	if pe.Status != 200 || pe.RequestID != "req_1" {
		t.Errorf("StreamError = %+v", pe)
	}
}

func TestBodyCloseAbortsRequest(t *testing.T) {
	gone := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for {
			if _, err := io.WriteString(w, "data: token\n\n"); err != nil {
				break
			}
			w.(http.Flusher).Flush()
			if r.Context().Err() != nil {
				break
			}
		}
		close(gone)
	}))
	defer srv.Close()
	cfg := Config{IdleTimeout: time.Minute}
	resp, err := cfg.Post(t.Context(), srv.URL, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := resp.Body.Read(make([]byte, 64)); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	waitFor(t, gone, "the server to stop generating")
}

// TestDrainReusesConnection checks that finishing a stream with Drain lets
// the next request reuse the connection instead of dialing again.
func TestDrainReusesConnection(t *testing.T) {
	var dials atomic.Int32
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "data: 1\n\ndata: [DONE]\n\n")
		w.(http.Flusher).Flush()
		io.WriteString(w, strings.Repeat(": pad\n", 100))
	}))
	srv.Config.ConnState = func(c net.Conn, s http.ConnState) {
		if s == http.StateNew {
			dials.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()
	cfg := Config{HTTPClient: srv.Client(), IdleTimeout: time.Minute}
	for range 3 {
		resp, err := cfg.Post(t.Context(), srv.URL, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		// Read only the first event, as a provider stopping at its terminator does.
		if _, err := resp.Body.Read(make([]byte, 9)); err != nil {
			t.Fatal(err)
		}
		Drain(resp.Body)
		resp.Body.Close()
	}
	if n := dials.Load(); n != 1 {
		t.Fatalf("%d connections for 3 requests, want 1", n)
	}
}

func TestStatusError(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("x-request-id", "req_42")
		w.Header().Set("retry-after", "7")
		w.Header().Set("x-ratelimit-limit-requests", "60")
		w.Header().Set("x-ratelimit-remaining-requests", "0")
		w.Header().Set("x-ratelimit-reset-requests", "6m0s")
		w.WriteHeader(429)
		io.WriteString(w, `{"error":{"message":"key `+testKey+` and sk-abcd1234***wxyz"}}`)
		io.WriteString(w, strings.Repeat(" ", 2*MaxErrorBody))
	}))
	defer srv.Close()
	cfg := Config{APIKey: testKey, Now: func() time.Time { return now }}
	resp, err := cfg.Post(t.Context(), srv.URL, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	e := cfg.StatusError(resp, "x-request-id")
	if e.Class != ClassRateLimited || e.Status != 429 || e.RequestID != "req_42" {
		t.Errorf("got %+v", e)
	}
	if !e.HasRetryAfter || e.RetryAfter != 7*time.Second {
		t.Errorf("retry-after %v %v", e.RetryAfter, e.HasRetryAfter)
	}
	if e.Limits.Requests != (Window{Limit: 60, Remaining: 0, Reset: 6 * time.Minute}) {
		t.Errorf("limits %+v", e.Limits.Requests)
	}
	if len(e.Body) > MaxErrorBody {
		t.Errorf("body %d bytes, want at most %d", len(e.Body), MaxErrorBody)
	}
	if bytes.Contains(e.Body, []byte(testKey[:8])) || !bytes.Contains(e.Body, []byte(redacted)) {
		t.Errorf("body not redacted: %.200s", e.Body)
	}
}

// expiresOn is a context whose deadline passes when done is closed.
type expiresOn struct {
	context.Context
	done <-chan struct{}
}

func (e expiresOn) Done() <-chan struct{} { return e.done }

func (e expiresOn) Err() error {
	select {
	case <-e.done:
		return context.DeadlineExceeded
	default:
		return nil
	}
}
