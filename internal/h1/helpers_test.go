package h1

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// fallback records the requests h1 handed over and answers them 299.
type fallback struct{ got []*http.Request }

func (f *fallback) RoundTrip(req *http.Request) (*http.Response, error) {
	f.got = append(f.got, req)
	if req.Body != nil {
		req.Body.Close()
	}
	return &http.Response{StatusCode: 299, Body: http.NoBody, Header: http.Header{}, Request: req}, nil
}

// newTransport is a Transport dialing loopback that counts its dials.
func newTransport(t *testing.T) (*Transport, *atomic.Int32, *fallback) {
	t.Helper()
	var dials atomic.Int32
	fb := &fallback{}
	d := &net.Dialer{}
	tr := &Transport{
		Dial: func(ctx context.Context, network, addr string) (net.Conn, error) {
			dials.Add(1)
			return d.DialContext(ctx, network, addr)
		},
		MaxIdleConnsPerHost: 4,
		IdleConnTimeout:     90 * time.Second,
		Fallback:            fb,
	}
	t.Cleanup(tr.CloseIdleConnections)
	return tr, &dials, fb
}

// rawServer accepts on a loopback port and runs serve for each connection
// on its own goroutine; the connection is closed when serve returns.
func rawServer(t *testing.T, serve func(n int, c net.Conn, br *bufio.Reader)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for n := 0; ; n++ {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				serve(n, c, bufio.NewReader(c))
			}()
		}
	}()
	return "http://" + ln.Addr().String()
}

// readRequest reads one request and its body off a server connection.
func readRequest(br *bufio.Reader) (*http.Request, string, error) {
	req, err := http.ReadRequest(br)
	if err != nil {
		return nil, "", err
	}
	b, err := io.ReadAll(req.Body)
	return req, string(b), err
}

// serveN answers every request on a connection with answer until the
// client closes it; each request is sent on reqs.
func serveN(answer string, reqs chan<- *http.Request) func(int, net.Conn, *bufio.Reader) {
	return func(_ int, c net.Conn, br *bufio.Reader) {
		for {
			req, _, err := readRequest(br)
			if err != nil {
				return
			}
			if reqs != nil {
				reqs <- req
			}
			if _, err := io.WriteString(c, answer); err != nil {
				return
			}
		}
	}
}

func post(t *testing.T, tr http.RoundTripper, ctx context.Context, url, body string) (*http.Response, error) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	return tr.RoundTrip(req)
}

func get(t *testing.T, tr http.RoundTripper, url string) (*http.Response, error) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	return tr.RoundTrip(req)
}

// mustRead posts body and returns the answer's body, failing on any error.
func mustRead(t *testing.T, tr http.RoundTripper, url string) string {
	t.Helper()
	resp, err := post(t, tr, t.Context(), url, `{"n":1}`)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading body: %v", err)
	}
	return string(b)
}

// idleConns is how many connections the pool holds for url's host.
func idleConns(tr *Transport, url string) int {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	n := 0
	for k, h := range tr.hosts {
		if strings.HasSuffix(url, k.host) {
			n += len(h.idle)
		}
	}
	return n
}

// waitDead spins until the pooled connection to url sees the server's
// close (on loopback it has once the server's Close returned; the spin
// covers a slow kernel), so the next request meets a closed idle
// connection.
func waitDead(t *testing.T, tr *Transport, url string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		tr.mu.Lock()
		var c *conn
		for k, h := range tr.hosts {
			if strings.HasSuffix(url, k.host) && len(h.idle) == 1 {
				c = h.idle[0]
			}
		}
		tr.mu.Unlock()
		if c == nil {
			t.Fatal("no idle connection")
		}
		if !c.peek() {
			return
		}
		runtime.Gosched()
	}
	t.Fatal("the server's close never reached the client")
}
