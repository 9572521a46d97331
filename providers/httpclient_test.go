package providers

import (
	"bytes"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// syncBuffer is a bytes.Buffer safe for the transport's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// unsolicitedServer answers one request with a complete response and,
// once the client has read it (read is closed), sends more bytes on the
// now idle connection; done is closed when the client has dropped it.
func unsolicitedServer(t *testing.T, read <-chan struct{}) (addr string, done <-chan struct{}) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	d := make(chan struct{})
	go func() {
		defer close(d)
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		buf := make([]byte, 4096)
		c.Read(buf) // the request
		io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
		<-read
		io.WriteString(c, "HTTP/1.1 200 OK\r\n\r\nserver-secret-bytes")
		io.Copy(io.Discard, c) // until the client closes the connection
	}()
	return ln.Addr().String(), d
}

// provoke makes net/http log the unsolicited-response line through the
// standard logger, whose output is out during the call.
func provoke(t *testing.T, out io.Writer) {
	prev, flags := log.Writer(), log.Flags()
	log.SetOutput(out)
	defer func() { log.SetOutput(prev); log.SetFlags(flags) }()
	read := make(chan struct{})
	addr, done := unsolicitedServer(t, read)
	// The line is net/http's: h1 has no reader to see the bytes while the
	// connection idles, so the fallback transport provokes it.
	cfg := Config{HTTPClient: &http.Client{Transport: newNetHTTPTransport(1, &net.Dialer{})}}
	resp, err := cfg.Get(t.Context(), "http://"+addr+"/", nil)
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := io.ReadAll(resp.Body); string(b) != "ok" {
		t.Fatalf("body %q", b)
	}
	resp.Body.Close() // the connection goes back to the pool, idle
	close(read)
	waitFor(t, done, "the transport to drop the connection")
}

// TestQuietHTTPLog: the line net/http prints (quoting the server's bytes)
// is dropped; everything else the standard logger writes passes.
func TestQuietHTTPLog(t *testing.T) {
	var raw syncBuffer
	provoke(t, &raw)
	if !strings.Contains(raw.String(), unsolicited) || !strings.Contains(raw.String(), "server-secret-bytes") {
		t.Fatalf("the test did not provoke the line; standard log got %q", raw.String())
	}
	var quiet syncBuffer
	provoke(t, QuietHTTPLog(&quiet))
	if quiet.String() != "" {
		t.Fatalf("printed %q", quiet.String())
	}
	l := log.New(QuietHTTPLog(&quiet), "", 0)
	l.Print("something else")
	if quiet.String() != "something else\n" {
		t.Fatalf("other lines: %q", quiet.String())
	}
}

// TestNewHTTPClientReusesConnections: through Post and the readers the
// providers use, the run's client keeps one connection for sequential
// plain answers and drained streams, and drops it for an aborted stream
// (which is how the server learns to stop).
func TestNewHTTPClientReusesConnections(t *testing.T) {
	var dials atomic.Int32
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/stream" {
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, "data: 1\n\ndata: [DONE]\n\n")
			w.(http.Flusher).Flush()
			return
		}
		io.WriteString(w, `{"choices":[]}`)
	}))
	srv.Config.ConnState = func(c net.Conn, s http.ConnState) {
		if s == http.StateNew {
			dials.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()
	cfg := Config{HTTPClient: NewHTTPClient(1), IdleTimeout: time.Minute}
	send := func(path string, read func(io.ReadCloser)) {
		t.Helper()
		resp, err := cfg.Post(t.Context(), srv.URL+path, nil, []byte(`{}`))
		if err != nil {
			t.Fatal(err)
		}
		read(resp.Body)
		resp.Body.Close()
	}
	for range 3 {
		send("/plain", func(b io.ReadCloser) {
			if got, err := readAll(b, int64(len(`{"choices":[]}`))); err != nil || string(got) != `{"choices":[]}` {
				t.Fatalf("plain: %q, %v", got, err)
			}
		})
		send("/stream", func(b io.ReadCloser) {
			if _, err := b.Read(make([]byte, 9)); err != nil {
				t.Fatal(err)
			}
			Drain(b)
		})
	}
	if n := dials.Load(); n != 1 {
		t.Fatalf("%d connections for 6 requests, want 1", n)
	}
	send("/stream", func(b io.ReadCloser) { b.Read(make([]byte, 4)) }) // aborted
	send("/plain", func(b io.ReadCloser) { io.ReadAll(b) })
	if n := dials.Load(); n != 2 {
		t.Fatalf("%d connections after an aborted stream, want 2", n)
	}
}
