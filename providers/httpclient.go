package providers

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/llmrun/llmrun/internal/h1"
)

// NewHTTPClient returns the one client all providers of a run share. It keeps
// at least conns idle connections per host so a pool of that many workers
// reuses connections instead of dialing, and it has no overall timeout:
// streams are bounded by the providers' first-byte and idle timeouts and by
// the runner's per-request deadline instead. It never follows redirects
// (Config refuses them whatever the client, see Config.Post).
//
// http and https requests go through h1, a synchronous HTTP/1.1 transport:
// the exchange runs on the caller's goroutine, so a connection costs no
// goroutines and no channel hand-offs per request (net/http's reader and
// writer goroutines and their wake-ups cost some 35 µs of client CPU a
// request: 0.83x the plain client CPU, see the README). HTTPS is HTTP/1.1
// only: one request per connection, as the workers are. A proxy from the environment,
// Expect: 100-continue and bodies of unknown length go to net/http's
// Transport, set up as before.
func NewHTTPClient(conns int) *http.Client {
	conns = max(conns, 8)
	dialer := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
	fallback := newNetHTTPTransport(conns, dialer)
	tr := &h1.Transport{
		Dial:                dialer.DialContext,
		TLSHandshakeTimeout: fallback.TLSHandshakeTimeout,
		IdleConnTimeout:     fallback.IdleConnTimeout,
		MaxIdleConnsPerHost: conns,
		ReadBufferSize:      2 << 10, // as net/http's below: see there
		Proxy:               fallback.Proxy,
		Fallback:            fallback,
	}
	return &http.Client{Transport: tr, CheckRedirect: refuseRedirect}
}

// newNetHTTPTransport is net/http's Transport for what h1 hands over.
//
// Each of its HTTP/1.1 connections keeps a read and a write buffer for its
// whole life, so at --concurrency 512 their size is megabytes of live heap
// (twice that in the collector's goal). A request's head is a few hundred
// bytes and a larger body goes past the write buffer straight to the socket
// once the head is flushed, so 1 KiB costs at most one extra write; 2 KiB
// still reads a typical head and answer in one or two calls, and a stream's
// SSE reader reads through it into its own larger buffer.
func newNetHTTPTransport(conns int, dialer *net.Dialer) *http.Transport {
	return &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           dialer.DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          conns * 2,
		MaxIdleConnsPerHost:   conns,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   15 * time.Second,
		ExpectContinueTimeout: time.Second,
		WriteBufferSize:       1 << 10,
		ReadBufferSize:        2 << 10,
	}
}

// unsolicited starts the line net/http logs when a server sends bytes on an
// idle keep-alive connection; the line quotes up to 4 KiB of those bytes.
const unsolicited = "Unsolicited response received on idle HTTP channel"

// QuietHTTPLog returns w minus net/http's "Unsolicited response received
// on idle HTTP channel" lines, for log.SetOutput. net/http prints them with
// the standard logger (a Transport has no logger of its own), quoting what
// a misbehaving server sent, straight onto the user's terminal; the
// transport closes that connection either way, so nothing is lost by
// dropping the line. Every other line passes unchanged. Only a program's
// main should install it: the standard logger is process-wide.
func QuietHTTPLog(w io.Writer) io.Writer { return quietLog{w} }

type quietLog struct{ w io.Writer }

// Write relies on log.Logger writing each message with one Write.
func (q quietLog) Write(p []byte) (int, error) {
	if bytes.Contains(p, []byte(unsolicited)) {
		return len(p), nil
	}
	return q.w.Write(p)
}
