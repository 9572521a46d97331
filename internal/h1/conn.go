package h1

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"syscall"
	"time"
)

// conn is one connection, owned by one request at a time or idle in its
// host's pool. It has no goroutine of its own.
type conn struct {
	t      *Transport
	key    hostKey
	c      net.Conn // what requests are written to and read from
	raw    net.Conn // the socket under c: closing it interrupts c's I/O
	br     *bufio.Reader
	tls    *tls.ConnectionState
	idleAt time.Time
	reused bool // taken from the pool for this request

	interrupt func()          // closes raw, for context.AfterFunc
	rc        syscall.RawConn // raw's, for the liveness peek; nil if none
	peekFn    func(fd uintptr) bool
	peekOK    bool
}

// errHandshakeTimeout is TLSHandshakeTimeout's failure; its words are
// net/http's, which callers recognise.
var errHandshakeTimeout error = handshakeTimeout{}

type handshakeTimeout struct{}

func (handshakeTimeout) Error() string   { return "h1: TLS handshake timeout" }
func (handshakeTimeout) Timeout() bool   { return true }
func (handshakeTimeout) Temporary() bool { return true }

// dial connects to h, with TLS for https. Errors are the dialer's and
// the handshake's own, as net/http returns them, or ctx's cause.
func (t *Transport) dial(ctx context.Context, key hostKey, h *host) (*conn, error) {
	dial := t.Dial
	if dial == nil {
		dial = (&net.Dialer{}).DialContext
	}
	raw, err := dial(ctx, "tcp", h.addr)
	if err != nil {
		return nil, canceled(ctx, err)
	}
	c := &conn{t: t, key: key, c: raw, raw: raw}
	if h.tls != nil {
		if c.c, err = t.handshake(ctx, raw, h.tls); err != nil {
			raw.Close()
			return nil, err
		}
		cs := c.c.(*tls.Conn).ConnectionState()
		c.tls = &cs
	}
	size := t.ReadBufferSize
	if size <= 0 {
		size = 4 << 10
	}
	c.br = bufio.NewReaderSize(c.c, size)
	c.interrupt = func() { c.raw.Close() }
	c.initPeek()
	return c, nil
}

func (t *Transport) handshake(ctx context.Context, raw net.Conn, cfg *tls.Config) (net.Conn, error) {
	tc := tls.Client(raw, cfg)
	hctx := ctx
	if t.TLSHandshakeTimeout > 0 {
		var cancel context.CancelFunc
		hctx, cancel = context.WithTimeoutCause(ctx, t.TLSHandshakeTimeout, errHandshakeTimeout)
		defer cancel()
	}
	if err := tc.HandshakeContext(hctx); err != nil {
		if ctx.Err() != nil {
			return nil, context.Cause(ctx)
		}
		if hctx.Err() != nil {
			return nil, errHandshakeTimeout
		}
		return nil, err
	}
	if p := tc.ConnectionState().NegotiatedProtocol; p != "" && p != "http/1.1" {
		return nil, fmt.Errorf("h1: server chose protocol %q, not http/1.1", p)
	}
	return tc, nil
}

func (c *conn) close() { c.c.Close() }

// alive reports whether an idle c may take a request: the server has
// neither closed it nor sent anything (an answer to nothing is a broken
// server; a TLS alert a closing one). Only what is in the read buffer is
// looked at, unless peek asks to check the socket too.
func (c *conn) alive(peek bool) bool {
	return c.br.Buffered() == 0 && (!peek || c.peek())
}

// noAnswer marks c's host as one that closes connections unannounced:
// a reused c got no byte of an answer.
func (c *conn) noAnswer() {
	c.t.mu.Lock()
	if h := c.t.hosts[c.key]; h != nil {
		h.unannounced = true
	}
	c.t.mu.Unlock()
}

// roundTrip writes w on c and reads the response head. retry reports
// that nothing of the request reached the server on this reused
// connection (or that a request safe to repeat got no answer at all from
// it), so RoundTrip sends it on another connection; the error is then
// dropped, as net/http drops it.
func (c *conn) roundTrip(ctx context.Context, req *http.Request, w *write) (resp *http.Response, retry bool, err error) {
	stop := context.AfterFunc(ctx, c.interrupt)
	n, err := c.c.Write(*w.buf)
	local := false
	if err == nil {
		local, err = w.stream(c.c)
	} else if n == 0 && c.reused && stop() {
		c.close()
		c.noAnswer()
		return nil, true, nil
	}
	if err != nil && (w.n == 0 || local) {
		stop()
		c.close()
		return nil, false, canceled(ctx, err)
	}
	if !replayable(req) {
		w.release() // not needed again: no buffer waits with the request
	}
	// A server refusing a large upload may have answered before it
	// stopped reading: its answer explains more than the broken write.
	writeErr := err
	resp, got, err := c.readResponse()
	if err != nil {
		stopped := stop()
		c.close()
		if !got && c.reused && stopped {
			c.noAnswer() // (not when ctx's end cut the read)
		}
		if writeErr != nil {
			return nil, false, canceled(ctx, writeErr)
		}
		if !got && c.reused && stopped && w.body == nil && w.n == 0 && replayable(req) {
			return nil, true, nil
		}
		return nil, false, canceled(ctx, err)
	}
	resp.Request = req
	resp.TLS = c.tls
	if err := c.attachBody(ctx, req, resp, stop, w.gzip, writeErr == nil); err != nil {
		return nil, false, canceled(ctx, err)
	}
	return resp, false, nil
}

// replayable is net/http's rule for repeating a request that got no
// answer on a reused connection: a method that changes nothing, or an
// idempotency key.
func replayable(req *http.Request) bool {
	switch req.Method {
	case "", http.MethodGet, http.MethodHead, http.MethodOptions:
		return true
	}
	_, a := req.Header["Idempotency-Key"]
	_, b := req.Header["X-Idempotency-Key"]
	return a || b
}

// readResponse reads the next final response head on c, skipping up to
// five 1xx informational ones as net/http does. got reports that any
// bytes of a response arrived.
func (c *conn) readResponse() (resp *http.Response, got bool, err error) {
	for n1xx := 0; ; n1xx++ {
		head, any, err := readHead(c.br, c.t.maxHeader())
		if err != nil {
			return nil, got || any, err
		}
		got = true
		if resp, err = parseHead(head); err != nil {
			return nil, true, err
		}
		switch code := resp.StatusCode; {
		case code == http.StatusSwitchingProtocols:
			return nil, true, errors.New("h1: unexpected 101 Switching Protocols")
		case code >= 100 && code < 200:
			if n1xx >= 5 {
				return nil, true, errors.New("h1: too many 1xx informational responses")
			}
			continue
		}
		return resp, true, nil
	}
}

func (t *Transport) maxHeader() int {
	if t.MaxResponseHeaderBytes > 0 {
		return t.MaxResponseHeaderBytes
	}
	return 1 << 20
}

// errNoAnswer: the server closed the connection before a response began.
var errNoAnswer = fmt.Errorf("h1: server closed the connection without a response: %w", io.EOF)

// errCutHead: the connection ended in the middle of a response head.
var errCutHead = fmt.Errorf("h1: connection closed in the response head: %w", io.ErrUnexpectedEOF)
