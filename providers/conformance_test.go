package providers_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/llmrun/llmrun/providers"
)

// The provider conformance suite: every test here runs against every row
// of conformance_rows_test.go, plain and streamed where it applies.

const key = "sk-abcd1234efgh5678wxyz"

// failsafe bounds waits a correct implementation ends at once, so a broken
// one fails instead of hanging; a passing test never reaches it.
const failsafe = 10 * time.Second

func serve(t *testing.T, h http.HandlerFunc) *httptest.Server {
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

// provider builds r's provider on the server rooted at root, with the
// suite's defaults changed by opts.
func (r row) provider(root string, stream bool, opts ...func(*providers.Config)) providers.Provider {
	cfg := providers.Config{BaseURL: root + r.basePath, APIKey: key, Stream: stream, FirstByteTimeout: time.Minute, IdleTimeout: time.Minute}
	for _, o := range opts {
		o(&cfg)
	}
	return r.new(cfg)
}

// request is a request of r's shape, as the runner builds it.
func (r row) request(prompt string, maxTokens int) *providers.Request {
	return &providers.Request{ID: "r1", Body: []byte(r.body(prompt, maxTokens)), MaxTokens: maxTokens}
}

// each runs fn for every row, as a subtest named after it.
func each(t *testing.T, fn func(t *testing.T, r row)) {
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) { fn(t, r) })
	}
}

// modes runs fn plain and streamed.
func modes(t *testing.T, fn func(t *testing.T, stream bool)) {
	for _, stream := range []bool{false, true} {
		t.Run(map[bool]string{false: "plain", true: "stream"}[stream], func(t *testing.T) { fn(t, stream) })
	}
}

func wantClass(t *testing.T, err error, c providers.Class) *providers.Error {
	t.Helper()
	var pe *providers.Error
	if !errors.As(err, &pe) {
		t.Fatalf("err = %v (%T), want *providers.Error of class %v", err, err, c)
	}
	if pe.Class != c {
		t.Fatalf("class = %v, want %v (%v)", pe.Class, c, err)
	}
	return pe
}

// countingClient counts the bytes read from its connections: what a
// response cost in memory at most, whatever the layers above kept.
func countingClient() (*http.Client, *atomic.Int64) {
	var n atomic.Int64
	var d net.Dialer
	tr := &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return countingConn{c, &n}, nil
	}}
	return &http.Client{Transport: tr}, &n
}

type countingConn struct {
	net.Conn
	n *atomic.Int64
}

func (c countingConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.n.Add(int64(n))
	return n, err
}

// elsewhere is a server the user never named; it records what reaches it.
type elsewhere struct {
	*httptest.Server
	mu   sync.Mutex
	hits []string
}

func newElsewhere(t *testing.T) *elsewhere {
	e := &elsewhere{}
	e.Server = serve(t, func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		e.mu.Lock()
		e.hits = append(e.hits, r.Method+" "+r.URL.Path+" headers="+strings.Join(r.Header.Values("Authorization"), ",")+r.Header.Get("X-Api-Key")+" body="+string(b))
		e.mu.Unlock()
	})
	return e
}

func (e *elsewhere) seen() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.hits...)
}

// TestConformanceRedirects: a base URL that redirects, with any 3xx, is a
// ClassRedirect error naming the Location; the key and the prompt never
// reach the other host (issue 9 item 1).
func TestConformanceRedirects(t *testing.T) {
	each(t, func(t *testing.T, r row) {
		modes(t, func(t *testing.T, stream bool) {
			for _, status := range []int{301, 302, 307, 308} {
				t.Run(strconv.Itoa(status), func(t *testing.T) {
					target := newElsewhere(t)
					origin := serve(t, func(w http.ResponseWriter, req *http.Request) {
						io.Copy(io.Discard, req.Body)
						http.Redirect(w, req, target.URL+req.URL.Path, status)
					})
					for name, client := range map[string]*http.Client{"default client": nil, "following client": {}} {
						p := r.provider(origin.URL, stream, func(c *providers.Config) { c.HTTPClient = client })
						resp, err := p.Send(t.Context(), r.request("the secret prompt", 16))
						pe := wantClass(t, err, providers.ClassRedirect)
						if resp != nil || pe.Status != status || !strings.Contains(pe.Message, target.URL+r.path) {
							t.Errorf("%s: response %v, error %+v", name, resp, pe)
						}
					}
					if hits := target.seen(); len(hits) > 0 {
						t.Fatalf("the redirect was followed: %q", hits)
					}
				})
			}
		})
	})
}

// endless writes lead, then repeat until the client is gone or (failsafe)
// 64 MiB were written.
func endless(w http.ResponseWriter, lead, repeat string) {
	io.WriteString(w, lead)
	for n := 0; n < 64<<20; n += len(repeat) {
		if _, err := io.WriteString(w, repeat); err != nil {
			return
		}
	}
}

// TestConformanceOversize: an endless stream, an endless plain body and a
// body announcing 5 GB each fail their attempt with ClassTooLarge once the
// response's bound is crossed, having read no more than the bound from the
// connection (issue 9 item 2): memory stays bounded whatever the server.
func TestConformanceOversize(t *testing.T) {
	const maxTokens = 16
	each(t, func(t *testing.T, r row) {
		tests := map[string]struct {
			stream  bool
			handler http.HandlerFunc
			// most bytes the client may read: the bound, or just the headers
			bodyRead bool
		}{
			"endless stream": {true, func(w http.ResponseWriter, req *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				endless(w, strings.Join(r.events[:r.content+1], ""), r.events[r.content])
			}, true},
			"endless plain body": {false, func(w http.ResponseWriter, req *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				endless(w, r.plain[:len(r.plain)/2], strings.Repeat("a", 4096))
			}, true},
			"5 GB plain body": {false, func(w http.ResponseWriter, req *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				w.Header().Set("Content-Length", "5000000000")
				endless(w, "", strings.Repeat("a", 1<<16))
			}, false},
			"5 GB stream": {true, func(w http.ResponseWriter, req *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				w.Header().Set("Content-Length", "5000000000")
				endless(w, "", strings.Repeat(r.events[r.content], 64))
			}, false},
		}
		for name, tc := range tests {
			t.Run(name, func(t *testing.T) {
				srv := serve(t, func(w http.ResponseWriter, req *http.Request) {
					io.Copy(io.Discard, req.Body)
					w.Header().Set(r.requestID, "req_big")
					tc.handler(w, req)
				})
				client, read := countingClient()
				var cfg providers.Config
				p := r.provider(srv.URL, tc.stream, func(c *providers.Config) { c.HTTPClient = client; cfg = *c })
				resp, err := p.Send(t.Context(), r.request("go on forever", maxTokens))
				pe := wantClass(t, err, providers.ClassTooLarge)
				if resp != nil || pe.Status != 200 || pe.RequestID != "req_big" || !strings.Contains(pe.Message, "--max-response-bytes") {
					t.Errorf("response %v, error %+v", resp, pe)
				}
				if pe.Class.Retryable() {
					t.Error("an oversize answer must not be retried")
				}
				most := int64(64 << 10) // headers and buffers
				if tc.bodyRead {
					most += cfg.ResponseLimit(maxTokens, tc.stream)
				}
				if n := read.Load(); n > most {
					t.Fatalf("read %d bytes from the connection, want at most %d", n, most)
				}
			})
		}
	})
}

// TestConformanceResponseLimit: MaxResponseBytes moves the bound: the
// canonical answer fails under a tiny one and passes under the default.
func TestConformanceResponseLimit(t *testing.T) {
	each(t, func(t *testing.T, r row) {
		srv := serve(t, func(w http.ResponseWriter, req *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, r.plain)
		})
		tiny := func(c *providers.Config) { c.MaxResponseBytes = 1 }
		_, err := r.provider(srv.URL, false, tiny).Send(t.Context(), r.request("x", 1))
		wantClass(t, err, providers.ClassTooLarge)
		if _, err := r.provider(srv.URL, false).Send(t.Context(), r.request("x", 1)); err != nil {
			t.Fatal(err)
		}
	})
}
