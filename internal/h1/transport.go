// Package h1 is a synchronous HTTP/1.1 client transport: RoundTrip runs
// the whole exchange on the caller's goroutine, and a connection between
// requests is only a socket and a read buffer in a pool. net/http's
// Transport keeps a reader and a writer goroutine per connection and hands
// every request and response between them over channels; for a batch runner
// holding hundreds of connections that is most of its per-request CPU and
// megabytes of stacks. What this package does not do (proxies, other
// schemes, Expect: 100-continue, bodies of unknown length) it hands to a
// fallback http.RoundTripper unchanged.
package h1

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"net/http"
	"net/url"
	"sync"
	"time"
)

// Transport is an http.RoundTripper for HTTP/1.1 over TCP and TLS. Its
// zero value dials with a zero net.Dialer and falls back to
// http.DefaultTransport. A Transport must not be copied after first use.
type Transport struct {
	// Dial opens TCP connections (a net.Dialer's DialContext).
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// TLSConfig is cloned per host; nil means the defaults. Its NextProtos
	// is replaced: this transport offers only http/1.1.
	TLSConfig *tls.Config
	// TLSHandshakeTimeout bounds a handshake (0: only the request's ctx).
	TLSHandshakeTimeout time.Duration
	// IdleConnTimeout closes connections idle that long (0: never).
	IdleConnTimeout time.Duration
	// MaxIdleConnsPerHost caps the pool per host (0: 2, as net/http).
	MaxIdleConnsPerHost int
	// ReadBufferSize is each connection's read buffer (0: 4 KiB).
	ReadBufferSize int
	// MaxResponseHeaderBytes bounds a response head (0: 1 MiB).
	MaxResponseHeaderBytes int
	// DisableCompression stops the transparent gzip net/http's Transport
	// does: without it a request that names no Accept-Encoding asks for
	// gzip and a gzip answer is decompressed (Response.Uncompressed).
	DisableCompression bool
	// Proxy, as http.Transport's: a request it routes through a proxy goes
	// to Fallback.
	Proxy func(*http.Request) (*url.URL, error)
	// Fallback takes every request this transport does not handle.
	Fallback http.RoundTripper

	bufs    sync.Pool // *[]byte: requests being written
	gzips   sync.Pool // *gzip.Reader
	mu      sync.Mutex
	hosts   map[hostKey]*host
	janitor *time.Timer // closes connections idle past IdleConnTimeout
	armed   bool        // janitor is scheduled

	now func() time.Time // the clock of idle ages; nil: time.Now (tests set it)
}

// freshIdle is how long a pooled connection may idle and still be taken
// without the liveness peek (a syscall, 3% of a fast exchange): far below
// any keep-alive timeout servers use (1-75 s), so a server closing an idle
// connection has had no reason to yet. A server that closes after an answer
// without saying so (no "Connection: close") is found by the one request
// that meets such a close; its host is peeked every time from then on.
const freshIdle = 100 * time.Millisecond

func (t *Transport) clock() time.Time {
	if t.now != nil {
		return t.now()
	}
	return time.Now()
}

// hostKey names a pool: scheme and the URL's host as written. A struct
// of a bool and the URL's own string makes the lookup allocation-free.
type hostKey struct {
	tls  bool
	host string
}

// host is one pool: idle connections, oldest first (the stack is used
// from its end, so idleAt ascends), and what dialing it needs.
type host struct {
	idle []*conn
	addr string      // host:port to dial
	tls  *tls.Config // nil for http
	// unannounced: a reused connection of this host got no answer at all
	// (the server closed it unannounced, or it broke), so every reuse is
	// peeked, however fresh. Guarded by Transport.mu.
	unannounced bool
}

// RoundTrip sends req and returns its response as soon as the head
// arrived; see the package doc for what goes to Fallback.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if !t.handles(req) {
		if t.Fallback == nil {
			return http.DefaultTransport.RoundTrip(req)
		}
		return t.Fallback.RoundTrip(req)
	}
	ctx := req.Context()
	if ctx.Err() != nil {
		closeBody(req)
		return nil, context.Cause(ctx)
	}
	w, err := t.newWrite(req)
	if err != nil {
		return nil, err
	}
	defer w.release()
	key := hostKey{tls: req.URL.Scheme == "https", host: req.URL.Host}
	for {
		c, err := t.getConn(ctx, key)
		if err != nil {
			w.closeBody()
			return nil, err
		}
		resp, retry, err := c.roundTrip(ctx, req, w)
		if !retry {
			w.closeBody()
			return resp, err
		}
	}
}

// handles reports whether RoundTrip sends req itself: http or https
// without a proxy, a body of known length, no Expect or Upgrade and no
// request trailers; a host in plain ASCII.
func (t *Transport) handles(req *http.Request) bool {
	u := req.URL
	if u == nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return false
	}
	switch req.Method {
	case "", http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete, http.MethodHead, http.MethodOptions:
	default:
		return false
	}
	if noBody := req.Body == nil || req.Body == http.NoBody; noBody != (req.ContentLength <= 0) || req.ContentLength < 0 {
		return false // unknown length, which net/http probes or sends chunked, or a missing body it reports
	}
	if len(req.TransferEncoding) > 0 || req.Trailer != nil || req.Header.Get("Expect") != "" || req.Header.Get("Upgrade") != "" {
		return false
	}
	if !asciiHost(u.Host) || (req.Host != "" && !asciiHost(req.Host)) {
		return false // IDNA, or an invalid host net/http reports
	}
	if t.Proxy != nil {
		if p, err := t.Proxy(req); p != nil || err != nil {
			return false
		}
	}
	return true
}

// asciiHost reports whether h is printable ASCII without spaces or an
// IPv6 zone, the only hosts written as they are.
func asciiHost(h string) bool {
	for i := 0; i < len(h); i++ {
		if h[i] <= ' ' || h[i] >= 0x7f || h[i] == '%' {
			return false
		}
	}
	return true
}

// getConn returns an idle connection to key that is still open, or dials
// a new one. Connections idle past IdleConnTimeout, or that the server
// closed or wrote to while idle (looked for on the socket only past
// freshIdle, or always for an unannounced host), are closed on the way.
func (t *Transport) getConn(ctx context.Context, key hostKey) (*conn, error) {
	t.mu.Lock()
	h := t.hosts[key]
	if h == nil {
		h = newHost(t, key)
		if t.hosts == nil {
			t.hosts = make(map[hostKey]*host)
		}
		t.hosts[key] = h
	}
	for n := len(h.idle); n > 0; n = len(h.idle) {
		c := h.idle[n-1]
		h.idle[n-1] = nil
		h.idle = h.idle[:n-1]
		peek := h.unannounced
		t.mu.Unlock()
		idle := t.clock().Sub(c.idleAt)
		if (t.IdleConnTimeout <= 0 || idle < t.IdleConnTimeout) && c.alive(peek || idle >= freshIdle) {
			c.reused = true
			return c, nil
		}
		c.close()
		t.mu.Lock()
	}
	t.mu.Unlock()
	return t.dial(ctx, key, h)
}

func newHost(t *Transport, key hostKey) *host {
	u := url.URL{Host: key.host}
	port := u.Port()
	if port == "" {
		port = "80"
		if key.tls {
			port = "443"
		}
	}
	h := &host{addr: net.JoinHostPort(u.Hostname(), port)}
	if key.tls {
		h.tls = &tls.Config{}
		if t.TLSConfig != nil {
			h.tls = t.TLSConfig.Clone()
		}
		h.tls.NextProtos = []string{"http/1.1"}
		if h.tls.ClientSessionCache == nil {
			// A connection dialed again (after an idle close, an
			// aborted stream) resumes its session: no full handshake.
			h.tls.ClientSessionCache = tls.NewLRUClientSessionCache(64)
		}
		if h.tls.ServerName == "" {
			h.tls.ServerName = u.Hostname()
		}
	}
	return h
}

// putIdle pools c for its next request, or closes it when the pool is
// full.
func (t *Transport) putIdle(c *conn) {
	max := t.MaxIdleConnsPerHost
	if max <= 0 {
		max = 2
	}
	c.idleAt = t.clock()
	c.reused = false
	t.mu.Lock()
	h := t.hosts[c.key]
	if h == nil || len(h.idle) >= max {
		t.mu.Unlock()
		c.close()
		return
	}
	h.idle = append(h.idle, c)
	if t.IdleConnTimeout > 0 && !t.armed {
		t.armed = true
		if t.janitor == nil {
			t.janitor = time.AfterFunc(t.IdleConnTimeout, t.sweep)
		} else {
			t.janitor.Reset(t.IdleConnTimeout)
		}
	}
	t.mu.Unlock()
}

// sweep runs on the janitor's timer: it closes the connections idle past
// IdleConnTimeout and re-arms for the oldest that remains.
func (t *Transport) sweep() {
	now := t.clock()
	var expired []*conn
	var next time.Duration
	t.mu.Lock()
	for _, h := range t.hosts {
		i := 0
		for i < len(h.idle) && now.Sub(h.idle[i].idleAt) >= t.IdleConnTimeout {
			i++
		}
		expired = append(expired, h.idle[:i]...)
		n := copy(h.idle, h.idle[i:])
		clear(h.idle[n:])
		h.idle = h.idle[:n]
		if len(h.idle) > 0 {
			left := t.IdleConnTimeout - now.Sub(h.idle[0].idleAt)
			if next == 0 || left < next {
				next = left
			}
		}
	}
	t.armed = next > 0
	if t.armed {
		t.janitor.Reset(next)
	}
	t.mu.Unlock()
	for _, c := range expired {
		c.close()
	}
}

// CloseIdleConnections closes every pooled connection, and the
// fallback's (http.Client.CloseIdleConnections calls it).
func (t *Transport) CloseIdleConnections() {
	var idle []*conn
	t.mu.Lock()
	for _, h := range t.hosts {
		idle = append(idle, h.idle...)
		clear(h.idle)
		h.idle = h.idle[:0]
	}
	t.mu.Unlock()
	for _, c := range idle {
		c.close()
	}
	if ci, ok := t.Fallback.(interface{ CloseIdleConnections() }); ok {
		ci.CloseIdleConnections()
	}
}

// closeBody closes req's body, which a RoundTripper must do on every path.
func closeBody(req *http.Request) {
	if req.Body != nil {
		req.Body.Close()
	}
}

// canceled is ctx's cause once it is done, else err: a request whose
// context ended fails with that, as net/http's do, whatever the broken
// socket said.
func canceled(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	return err
}

// errClosedBody is a read after Close, as net/http's.
var errClosedBody = errors.New("h1: read on closed response body")

// tokenByte reports whether b may appear in a header field name.
func tokenByte(b byte) bool {
	if b <= ' ' || b >= 0x7f {
		return false
	}
	switch b {
	case '"', '(', ')', ',', '/', ':', ';', '<', '=', '>', '?', '@', '[', '\\', ']', '{', '}':
		return false
	}
	return true
}
