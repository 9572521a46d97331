package h1

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"
)

// TestBodies: Content-Length and chunked bodies, with chunk extensions
// and trailers (ignored), read whole; each connection is reused after.
func TestBodies(t *testing.T) {
	for name, answer := range map[string]string{
		"content-length": "HTTP/1.1 200 OK\r\nContent-Length: 11\r\n\r\nhello world",
		"chunked":        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;ext=1\r\nhello\r\n6\r\n world\r\n0\r\n\r\n",
		"trailers":       "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTrailer: X-Sum\r\n\r\nB\r\nhello world\r\n0\r\nX-Sum: 42\r\nX-More: y\r\n\r\n",
		"bare LF":        "HTTP/1.1 200 OK\nContent-Length: 11\n\nhello world",
	} {
		t.Run(name, func(t *testing.T) {
			tr, dials, _ := newTransport(t)
			url := rawServer(t, serveN(answer, nil))
			for range 3 {
				if got := mustRead(t, tr, url); got != "hello world" {
					t.Fatalf("body %q", got)
				}
			}
			if n := dials.Load(); n != 1 {
				t.Errorf("%d dials for 3 sequential requests, want 1", n)
			}
		})
	}
}

// TestResponseFields: status, canonical header keys (lower-case ones
// too), repeated headers, and the framing fields callers look at.
func TestResponseFields(t *testing.T) {
	tr, _, _ := newTransport(t)
	url := rawServer(t, serveN("HTTP/1.1 429 Too Many Requests\r\nx-ratelimit-remaining-requests: 0\r\n"+
		"retry-after: 2\r\nX-custom-THING: a\r\nSet-Cookie: a=1\r\nset-cookie: b=2\r\nContent-Type: application/json\r\n"+
		"Content-Length: 2\r\n\r\n{}", nil))
	resp, err := post(t, tr, t.Context(), url, "{}")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 429 || resp.Status != "429 Too Many Requests" || resp.Proto != "HTTP/1.1" || resp.ContentLength != 2 {
		t.Errorf("status %d %q proto %q length %d", resp.StatusCode, resp.Status, resp.Proto, resp.ContentLength)
	}
	want := http.Header{
		"X-Ratelimit-Remaining-Requests": {"0"}, "Retry-After": {"2"}, "X-Custom-Thing": {"a"},
		"Set-Cookie": {"a=1", "b=2"}, "Content-Type": {"application/json"}, "Content-Length": {"2"},
	}
	if fmt.Sprint(resp.Header) != fmt.Sprint(want) {
		t.Errorf("header\n%v\nwant\n%v", resp.Header, want)
	}
	if b, _ := io.ReadAll(resp.Body); string(b) != "{}" {
		t.Errorf("body %q", b)
	}
}

// TestRequestHead: what reaches the server is what net/http would send.
func TestRequestHead(t *testing.T) {
	tr, _, _ := newTransport(t)
	reqs := make(chan *http.Request, 1)
	bodies := make(chan string, 1)
	url := rawServer(t, func(_ int, c net.Conn, br *bufio.Reader) {
		req, body, err := readRequest(br)
		if err != nil {
			return
		}
		reqs <- req
		bodies <- body
		io.WriteString(c, "HTTP/1.1 204 No Content\r\n\r\n")
	})
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, url+"/v1/chat/completions?api-version=1", strings.NewReader(`{"a":1}`))
	req.Header.Set("Authorization", "Bearer k")
	req.Header["x-lower"] = []string{"  v  "}
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	got := <-reqs
	if got.Method != "POST" || got.RequestURI != "/v1/chat/completions?api-version=1" || got.Host != strings.TrimPrefix(url, "http://") {
		t.Errorf("request line %s %s host %s", got.Method, got.RequestURI, got.Host)
	}
	for k, v := range map[string]string{"Authorization": "Bearer k", "X-Lower": "v", "Content-Length": "7",
		"User-Agent": "Go-http-client/1.1", "Accept-Encoding": "gzip"} {
		if got.Header.Get(k) != v {
			t.Errorf("%s: %q, want %q", k, got.Header.Get(k), v)
		}
	}
	if b := <-bodies; b != `{"a":1}` {
		t.Errorf("body %q", b)
	}
}

// TestHeaderInjection: a value or name that would smuggle a line is an
// error before anything is sent.
func TestHeaderInjection(t *testing.T) {
	tr, dials, _ := newTransport(t)
	for name, h := range map[string]http.Header{
		"value": {"X-A": {"ok\r\nX-Evil: 1"}},
		"name":  {"X-A\r\nX-Evil": {"1"}},
		"ua":    {"User-Agent": {"a\nb"}},
	} {
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, "http://127.0.0.1:1/", strings.NewReader("x"))
		req.Header = h
		if _, err := tr.RoundTrip(req); err == nil || !strings.Contains(err.Error(), "invalid header") {
			t.Errorf("%s: err %v", name, err)
		}
	}
	if dials.Load() != 0 {
		t.Errorf("dialed %d times", dials.Load())
	}
}

// TestServerClosedIdle: a connection the server closed (or wrote to)
// while it idled (freshIdle or longer) is dropped at reuse; the request
// dials afresh and succeeds, so it costs no attempt.
func TestServerClosedIdle(t *testing.T) {
	for name, after := range map[string]string{"closed": "", "unsolicited bytes": "HTTP/1.1 200 OK\r\n\r\nsurprise"} {
		t.Run(name, func(t *testing.T) {
			tr, dials, _ := newTransport(t)
			clock := time.Unix(1e9, 0)
			tr.now = func() time.Time { return clock }
			url := rawServer(t, func(n int, c net.Conn, br *bufio.Reader) {
				if _, _, err := readRequest(br); err != nil {
					return
				}
				io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
				if n == 0 {
					io.WriteString(c, after)
					return // closes the connection
				}
				serveN("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", nil)(n, c, br)
			})
			mustRead(t, tr, url)
			waitDead(t, tr, url)
			clock = clock.Add(freshIdle)
			if got := mustRead(t, tr, url); got != "ok" {
				t.Fatalf("body %q", got)
			}
			if n := dials.Load(); n != 2 {
				t.Errorf("%d dials, want 2", n)
			}
		})
	}
}

// TestFreshReuseNotPeeked: a connection back in the pool for less than
// freshIdle is taken without the liveness peek, so a server that closes
// after an answer without saying so fails the one request that meets the
// close (a POST is not replayed). From then on its host is peeked at
// every reuse, and such a close costs nothing again.
func TestFreshReuseNotPeeked(t *testing.T) {
	tr, dials, _ := newTransport(t)
	clock := time.Unix(1e9, 0)
	tr.now = func() time.Time { return clock }
	url := rawServer(t, func(_ int, c net.Conn, br *bufio.Reader) {
		if _, _, err := readRequest(br); err == nil {
			io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok") // then closes
		}
	})
	mustRead(t, tr, url)
	waitDead(t, tr, url)
	if resp, err := post(t, tr, t.Context(), url, `{"n":2}`); err == nil {
		resp.Body.Close()
		t.Fatalf("a fresh connection the server closed answered %d: it was peeked", resp.StatusCode)
	} else if !errors.Is(err, io.EOF) {
		t.Fatalf("second POST: %v, want an error wrapping io.EOF", err)
	}
	if n := dials.Load(); n != 1 {
		t.Fatalf("%d dials before the third request, want 1", n)
	}
	for i := range 2 {
		if got := mustRead(t, tr, url); got != "ok" {
			t.Fatalf("request %d after the close: body %q", i+3, got)
		}
		waitDead(t, tr, url)
	}
	if n := dials.Load(); n != 3 {
		t.Errorf("%d dials, want 3 (each request after the first close on a new connection)", n)
	}
}

// TestNoHiddenRetry: a POST the server took and never answered fails to
// the caller, once (net/http's rule: a POST is not replayable); a GET on
// a reused connection is sent again on a new one, as net/http does.
func TestNoHiddenRetry(t *testing.T) {
	for _, method := range []string{http.MethodPost, http.MethodGet} {
		t.Run(method, func(t *testing.T) {
			tr, dials, _ := newTransport(t)
			reqs := make(chan *http.Request, 10)
			url := rawServer(t, func(n int, c net.Conn, br *bufio.Reader) {
				for i := 0; ; i++ {
					req, _, err := readRequest(br)
					if err != nil {
						return
					}
					reqs <- req
					if n == 0 && i == 1 {
						return // takes the second request and hangs up
					}
					io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
				}
			})
			send := func() (*http.Response, error) {
				req, _ := http.NewRequestWithContext(t.Context(), method, url, nil)
				return tr.RoundTrip(req)
			}
			resp, err := send()
			if err != nil {
				t.Fatal(err)
			}
			io.ReadAll(resp.Body)
			resp.Body.Close()
			resp, err = send()
			if method == http.MethodPost {
				if err == nil || !errors.Is(err, io.EOF) {
					t.Fatalf("second POST: %v, want an error wrapping io.EOF", err)
				}
				if len(reqs) != 2 || dials.Load() != 1 {
					t.Errorf("server saw %d requests on %d dials, want 2 on 1", len(reqs), dials.Load())
				}
				return
			}
			if err != nil {
				t.Fatalf("second GET: %v", err)
			}
			resp.Body.Close()
			if len(reqs) != 3 || dials.Load() != 2 {
				t.Errorf("server saw %d requests on %d dials, want 3 on 2", len(reqs), dials.Load())
			}
		})
	}
}

// TestCutMidBody: a body cut short is an error, and that connection is
// not reused.
func TestCutMidBody(t *testing.T) {
	for name, answer := range map[string]string{
		"content-length": "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\npartial",
		"chunked":        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n64\r\npartial",
		"between chunks": "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n7\r\npartial\r\n",
	} {
		t.Run(name, func(t *testing.T) {
			tr, dials, _ := newTransport(t)
			url := rawServer(t, func(n int, c net.Conn, br *bufio.Reader) {
				if n > 0 {
					serveN("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", nil)(n, c, br)
					return
				}
				readRequest(br)
				io.WriteString(c, answer)
			})
			resp, err := post(t, tr, t.Context(), url, "{}")
			if err != nil {
				t.Fatal(err)
			}
			b, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if !errors.Is(err, io.ErrUnexpectedEOF) || string(b) != "partial" {
				t.Fatalf("read %q, %v; want partial, unexpected EOF", b, err)
			}
			if idleConns(tr, url) != 0 {
				t.Fatal("the cut connection went back to the pool")
			}
			mustRead(t, tr, url)
			if dials.Load() != 2 {
				t.Errorf("%d dials, want 2", dials.Load())
			}
		})
	}
}

// TestCloseBeforeEOFAborts: closing a body not read to its end closes
// the connection (the server sees EOF: it stops generating).
func TestCloseBeforeEOFAborts(t *testing.T) {
	tr, _, _ := newTransport(t)
	gone := make(chan error, 1)
	url := rawServer(t, func(_ int, c net.Conn, br *bufio.Reader) {
		readRequest(br)
		io.WriteString(c, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nfirst\r\n")
		_, err := br.ReadByte() // blocks until the client hangs up
		gone <- err
	})
	resp, err := post(t, tr, t.Context(), url, "{}")
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64)
	if n, err := resp.Body.Read(buf); err != nil || string(buf[:n]) != "first" {
		t.Fatalf("read %q, %v", buf[:n], err)
	}
	resp.Body.Close()
	if err := <-gone; err != io.EOF {
		t.Errorf("server read %v, want EOF", err)
	}
	if _, err := resp.Body.Read(buf); !errors.Is(err, errClosedBody) {
		t.Errorf("read after close: %v", err)
	}
	if idleConns(tr, url) != 0 {
		t.Error("an aborted connection was pooled")
	}
}

// TestStreamReadsAsDataArrives: a chunked body's Read returns the first
// event while the server holds back the rest (a test that would hang if
// Read waited to fill its buffer), and several buffered small chunks come
// back from one Read.
func TestStreamReadsAsDataArrives(t *testing.T) {
	tr, _, _ := newTransport(t)
	next := make(chan struct{})
	url := rawServer(t, func(_ int, c net.Conn, br *bufio.Reader) {
		readRequest(br)
		io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"+
			"8\r\ndata: 1\n\r\n")
		<-next
		io.WriteString(c, "8\r\ndata: 2\n\r\n8\r\ndata: 3\n\r\n0\r\n\r\n")
		readRequest(br)
	})
	resp, err := post(t, tr, t.Context(), url, "{}")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	buf := make([]byte, 4096)
	n, err := resp.Body.Read(buf)
	if err != nil || string(buf[:n]) != "data: 1\n" {
		t.Fatalf("first read %q, %v", buf[:n], err)
	}
	close(next)
	var rest []byte
	for err == nil {
		n, err = resp.Body.Read(buf)
		rest = append(rest, buf[:n]...)
	}
	if err != io.EOF || string(rest) != "data: 2\ndata: 3\n" {
		t.Fatalf("rest %q, %v", rest, err)
	}
	if idleConns(tr, url) != 1 {
		t.Error("the connection was not pooled at EOF")
	}
}

// TestCancel: a context cancelled while the head is awaited, or while a
// body read blocks, ends the blocked call with the context's cause, and
// the connection is closed, not pooled.
func TestCancel(t *testing.T) {
	for _, during := range []string{"head", "body"} {
		t.Run(during, func(t *testing.T) {
			tr, _, _ := newTransport(t)
			got := make(chan struct{})
			url := rawServer(t, func(_ int, c net.Conn, br *bufio.Reader) {
				readRequest(br)
				if during == "body" {
					io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n12345")
				}
				close(got)
				io.Copy(io.Discard, br)
			})
			cause := errors.New("the runner stopped")
			ctx, cancel := context.WithCancelCause(t.Context())
			defer cancel(nil)
			if during == "head" {
				go func() { <-got; cancel(cause) }()
			}
			resp, err := post(t, tr, ctx, url, "{}")
			if during == "body" {
				if err != nil {
					t.Fatal(err)
				}
				buf := make([]byte, 5)
				if _, err := io.ReadFull(resp.Body, buf); err != nil {
					t.Fatal(err)
				}
				go cancel(cause) // the next Read blocks: the server holds the rest
				_, err = io.ReadAll(resp.Body)
				resp.Body.Close()
			}
			if err != cause {
				t.Fatalf("err %v, want the cause", err)
			}
			if idleConns(tr, url) != 0 {
				t.Error("a cancelled connection was pooled")
			}
		})
	}
}

// TestHeaderBound: a head larger than MaxResponseHeaderBytes fails.
func TestHeaderBound(t *testing.T) {
	tr, _, _ := newTransport(t)
	tr.MaxResponseHeaderBytes = 1 << 10
	url := rawServer(t, serveN("HTTP/1.1 200 OK\r\nX-Big: "+strings.Repeat("a", 8<<10)+"\r\nContent-Length: 0\r\n\r\n", nil))
	if _, err := post(t, tr, t.Context(), url, "{}"); err == nil || !strings.Contains(err.Error(), "exceeded 1024 bytes") {
		t.Fatalf("err %v", err)
	}
	tr.MaxResponseHeaderBytes = 16 << 10 // a header line longer than the read buffer is fine
	resp, err := post(t, tr, t.Context(), url, "{}")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if len(resp.Header.Get("X-Big")) != 8<<10 {
		t.Errorf("X-Big has %d bytes", len(resp.Header.Get("X-Big")))
	}
}

// TestInformational: 1xx responses before the answer are skipped.
func TestInformational(t *testing.T) {
	tr, _, _ := newTransport(t)
	url := rawServer(t, serveN("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n"+
		"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", nil))
	if got := mustRead(t, tr, url); got != "ok" {
		t.Fatalf("body %q", got)
	}
	too := rawServer(t, serveN(strings.Repeat("HTTP/1.1 102 Processing\r\n\r\n", 6)+"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", nil))
	if _, err := post(t, tr, t.Context(), too, "{}"); err == nil || !strings.Contains(err.Error(), "too many 1xx") {
		t.Fatalf("err %v", err)
	}
}

// TestMalformed: broken status lines and framings are errors naming what
// was wrong.
func TestMalformed(t *testing.T) {
	for answer, want := range map[string]string{
		"HTP/1.1 200 OK\r\n\r\n":                                            "malformed HTTP status line",
		"HTTP/1.1 2x0 OK\r\n\r\n":                                           "malformed HTTP status code",
		"HTTP/1.1 200 OK\r\nBad Key: v\r\n\r\n":                             "malformed response header name",
		"HTTP/1.1 200 OK\r\nNoColon\r\n\r\n":                                "malformed response header line",
		"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n": "multiple Content-Length",
		"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n":                     "bad Content-Length",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n":                "unsupported transfer encoding",
		"HTTP/1.1 101 Switching Protocols\r\n\r\n":                          "101",
		"HTTP/1.1 200 OK\r\nContent-Le":                                     "unexpected EOF",
		"":                                                                  "without a response",
	} {
		tr, _, _ := newTransport(t)
		url := rawServer(t, func(_ int, c net.Conn, br *bufio.Reader) {
			readRequest(br)
			io.WriteString(c, answer)
		})
		if _, err := post(t, tr, t.Context(), url, "{}"); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: err %v, want %q", answer, err, want)
		}
	}
	tr, _, _ := newTransport(t)
	url := rawServer(t, serveN("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", nil))
	resp, err := post(t, tr, t.Context(), url, "{}")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadAll(resp.Body); err == nil || !strings.Contains(err.Error(), "invalid chunk size") {
		t.Errorf("chunk size: %v", err)
	}
	resp.Body.Close()
}

// TestUntilClose: a body with neither length nor chunks ends with the
// connection, which is not reused.
func TestUntilClose(t *testing.T) {
	tr, dials, _ := newTransport(t)
	url := rawServer(t, func(_ int, c net.Conn, br *bufio.Reader) {
		readRequest(br)
		io.WriteString(c, "HTTP/1.1 200 OK\r\n\r\nall of it")
	})
	for range 2 {
		if got := mustRead(t, tr, url); got != "all of it" {
			t.Fatalf("body %q", got)
		}
	}
	if dials.Load() != 2 {
		t.Errorf("%d dials, want 2", dials.Load())
	}
}

// TestConnectionClose: a server's Connection: close, or HTTP/1.0, ends
// the connection after the body.
func TestConnectionClose(t *testing.T) {
	for _, answer := range []string{
		"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok",
		"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok",
	} {
		tr, dials, _ := newTransport(t)
		url := rawServer(t, serveN(answer, nil))
		mustRead(t, tr, url)
		mustRead(t, tr, url)
		if dials.Load() != 2 {
			t.Errorf("%q: %d dials, want 2", answer, dials.Load())
		}
	}
}

// TestGzip: like net/http's Transport, gzip is asked for and undone
// unless the caller named an Accept-Encoding; DisableCompression stops it.
func TestGzip(t *testing.T) {
	var zipped bytes.Buffer
	zw := gzip.NewWriter(&zipped)
	io.WriteString(zw, `{"answer":42}`)
	zw.Close()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Accept-Encoding") == "gzip" {
			w.Header().Set("Content-Encoding", "gzip")
			w.Write(zipped.Bytes())
			return
		}
		io.WriteString(w, "identity")
	}))
	defer srv.Close()
	tr, dials, _ := newTransport(t)
	for range 2 { // the second with the first's pooled gzip reader
		resp, err := get(t, tr, srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || string(b) != `{"answer":42}` || !resp.Uncompressed || resp.Header.Get("Content-Encoding") != "" {
			t.Errorf("body %q, %v, uncompressed %v, header %v", b, err, resp.Uncompressed, resp.Header)
		}
	}
	if dials.Load() != 1 {
		t.Errorf("%d dials: a decompressed body's end did not free its connection", dials.Load())
	}
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, srv.URL, nil)
	req.Header.Set("Accept-Encoding", "gzip")
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !bytes.Equal(b, zipped.Bytes()) || resp.Uncompressed {
		t.Errorf("caller's own Accept-Encoding: body decompressed (%q)", b)
	}
	tr.DisableCompression = true
	if got := mustRead(t, tr, srv.URL); got != "identity" {
		t.Errorf("DisableCompression: body %q", got)
	}
}

// TestFallback: what h1 does not do goes to the fallback untouched.
func TestFallback(t *testing.T) {
	tr, dials, fb := newTransport(t)
	tr.Proxy = func(r *http.Request) (*url.URL, error) {
		if r.URL.Host == "proxied.example" {
			return url.Parse("http://127.0.0.1:3128")
		}
		return nil, nil
	}
	mk := func(method, u string, body io.Reader, h http.Header) *http.Request {
		req, err := http.NewRequestWithContext(t.Context(), method, u, body)
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range h {
			req.Header[k] = v
		}
		return req
	}
	unknown := mk(http.MethodPost, "http://127.0.0.1:1/", io.MultiReader(strings.NewReader("x")), nil)
	for name, req := range map[string]*http.Request{
		"proxy":          mk(http.MethodPost, "http://proxied.example/v1", strings.NewReader("{}"), nil),
		"scheme":         mk(http.MethodGet, "ftp://127.0.0.1/x", nil, nil),
		"expect":         mk(http.MethodPost, "http://127.0.0.1:1/", strings.NewReader("{}"), http.Header{"Expect": {"100-continue"}}),
		"unknown length": unknown,
		"CONNECT":        mk(http.MethodConnect, "http://127.0.0.1:1/", nil, nil),
		"IDNA host":      mk(http.MethodGet, "http://bücher.example/", nil, nil),
	} {
		fb.got = nil
		resp, err := tr.RoundTrip(req)
		if err != nil || resp.StatusCode != 299 || len(fb.got) != 1 || fb.got[0] != req {
			t.Errorf("%s: not handed to the fallback (%v)", name, err)
		}
	}
	if dials.Load() != 0 {
		t.Errorf("h1 dialed %d times", dials.Load())
	}
}

// TestRequestBodyLength: a body shorter or longer than ContentLength is
// an error and nothing is sent; a large body is streamed after the head.
func TestRequestBodyLength(t *testing.T) {
	tr, dials, _ := newTransport(t)
	for _, body := range []string{"abc", "abcdefgh"} {
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, "http://127.0.0.1:1/", strings.NewReader(body))
		req.ContentLength = 5
		if _, err := tr.RoundTrip(req); err == nil || !strings.Contains(err.Error(), "ContentLength=5") {
			t.Errorf("%q: err %v", body, err)
		}
	}
	if dials.Load() != 0 {
		t.Errorf("dialed %d times", dials.Load())
	}
	bodies := make(chan string, 1)
	url := rawServer(t, func(_ int, c net.Conn, br *bufio.Reader) {
		_, body, _ := readRequest(br)
		bodies <- body
		io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
	})
	big := strings.Repeat("0123456789", 20<<10) // past maxInline
	resp, err := post(t, tr, t.Context(), url, big)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got := <-bodies; got != big {
		t.Errorf("server got %d bytes of %d", len(got), len(big))
	}
	// A large body shorter than announced fails at once; the server,
	// still waiting for the rest, is not waited for.
	held := rawServer(t, func(_ int, c net.Conn, br *bufio.Reader) { io.Copy(io.Discard, br) })
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, held, strings.NewReader(big))
	req.ContentLength = int64(len(big)) + 1
	if _, err := tr.RoundTrip(req); err == nil || !strings.Contains(err.Error(), "ContentLength=") {
		t.Errorf("short large body: err %v", err)
	}
}

// TestNoBodyAnswers: a HEAD's Content-Length and a 204 or 304 announce no
// body to read; the connection serves the next request at once.
func TestNoBodyAnswers(t *testing.T) {
	for _, tc := range []struct{ method, answer string }{
		{http.MethodHead, "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n"},
		{http.MethodPost, "HTTP/1.1 204 No Content\r\nContent-Length: 0\r\n\r\n"},
		{http.MethodGet, "HTTP/1.1 304 Not Modified\r\n\r\n"},
	} {
		tr, dials, _ := newTransport(t)
		url := rawServer(t, serveN(tc.answer, nil))
		for range 2 {
			req, _ := http.NewRequestWithContext(t.Context(), tc.method, url, nil)
			resp, err := tr.RoundTrip(req)
			if err != nil {
				t.Fatalf("%s %q: %v", tc.method, tc.answer, err)
			}
			if b, err := io.ReadAll(resp.Body); len(b) != 0 || err != nil {
				t.Errorf("%s: body %q, %v", tc.method, b, err)
			}
			resp.Body.Close()
			if tc.method == http.MethodHead && resp.ContentLength != 10 {
				t.Errorf("HEAD: ContentLength %d", resp.ContentLength)
			}
		}
		if dials.Load() != 1 {
			t.Errorf("%s %q: %d dials, want 1", tc.method, tc.answer, dials.Load())
		}
	}
}
