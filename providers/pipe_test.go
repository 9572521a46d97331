package providers_test

import (
	"context"
	"net"
	"net/http"
	"sync"
	"testing"

	"github.com/llmrun/llmrun/providers"
)

// pipeListener is a listener of in-memory connections (net.Pipe), so that
// a server and its client can run inside a synctest bubble: there a
// goroutine blocked on a pipe counts as blocked and the bubble's clock
// moves on, where one blocked on a loopback socket would not.
type pipeListener struct {
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

func (l *pipeListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *pipeListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

func (l *pipeListener) Addr() net.Addr { return pipeAddr{} }

// dial hands the server the far end of a new pipe.
func (l *pipeListener) dial(ctx context.Context, _, _ string) (net.Conn, error) {
	client, server := net.Pipe()
	select {
	case l.conns <- server:
		return client, nil
	case <-l.done:
		return nil, net.ErrClosed
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

type pipeAddr struct{}

func (pipeAddr) Network() string { return "pipe" }
func (pipeAddr) String() string  { return "pipe" }

// servePipe runs h on an in-memory server, for a test inside a synctest
// bubble, and returns its root URL and an option that sends a provider's
// requests to it. Cleanup closes both ends.
func servePipe(t *testing.T, h http.HandlerFunc) (string, func(*providers.Config)) {
	l := &pipeListener{conns: make(chan net.Conn), done: make(chan struct{})}
	srv := &http.Server{Handler: h}
	go srv.Serve(l)
	tr := &http.Transport{DialContext: l.dial}
	t.Cleanup(func() {
		tr.CloseIdleConnections()
		srv.Close()
	})
	return "http://pipe.test", func(c *providers.Config) { c.HTTPClient = &http.Client{Transport: tr} }
}
