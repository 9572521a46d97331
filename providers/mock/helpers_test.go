package mock_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/llmrun/llmrun/providers/mock"
)

// fakeClock is a Config.Now that only moves when told to.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *fakeClock {
	return &fakeClock{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// start runs a mock server for the test.
func start(t *testing.T, cfg mock.Config) (*httptest.Server, *mock.Server) {
	t.Helper()
	m := mock.New(cfg)
	srv := httptest.NewServer(m)
	t.Cleanup(srv.Close)
	return srv, m
}

type result struct {
	status int
	header http.Header
	body   []byte
	err    error // transport error (Do or body read)
}

// post sends body to path; headers are name, value pairs.
func post(t *testing.T, srv *httptest.Server, path, body string, headers ...string) result {
	t.Helper()
	req, err := http.NewRequest("POST", srv.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	return do(srv, req)
}

// do sends req and reads the whole answer; a transport error is the
// result's err.
func do(srv *httptest.Server, req *http.Request) result {
	resp, err := srv.Client().Do(req)
	if err != nil {
		return result{err: err}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return result{status: resp.StatusCode, header: resp.Header, body: b, err: err}
}

func oaBody(prompt string, extra string) string {
	p, _ := json.Marshal(prompt)
	return `{"model":"gpt-mock","messages":[{"role":"system","content":"Be terse."},{"role":"user","content":` + string(p) + `}]` + extra + `}`
}

func anBody(prompt string, extra string) string {
	p, _ := json.Marshal(prompt)
	return `{"model":"claude-mock","max_tokens":256,"system":"Be terse.","messages":[{"role":"user","content":` + string(p) + `}]` + extra + `}`
}

type sseEvent struct {
	name, data string
}

// parseSSE splits a body the mock wrote into events, insisting on the exact
// framing: "event: x\n" (optional), "data: y\n", blank line.
func parseSSE(t *testing.T, body []byte) []sseEvent {
	t.Helper()
	if !bytes.HasSuffix(body, []byte("\n\n")) {
		t.Fatalf("stream does not end with a blank line: %q", tail(body))
	}
	var evs []sseEvent
	for _, block := range strings.Split(strings.TrimSuffix(string(body), "\n\n"), "\n\n") {
		var ev sseEvent
		lines := strings.Split(block, "\n")
		if name, ok := strings.CutPrefix(lines[0], "event: "); ok {
			ev.name = name
			lines = lines[1:]
		}
		if len(lines) != 1 || !strings.HasPrefix(lines[0], "data: ") {
			t.Fatalf("malformed event %q", block)
		}
		ev.data = strings.TrimPrefix(lines[0], "data: ")
		evs = append(evs, ev)
	}
	return evs
}

func tail(b []byte) []byte {
	if len(b) > 200 {
		return b[len(b)-200:]
	}
	return b
}

func decode(t *testing.T, data []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatalf("bad JSON %q: %v", data, err)
	}
	return m
}

// path walks decoded JSON: path(m, "choices", 0, "message", "content").
func path(v any, keys ...any) any {
	for _, k := range keys {
		switch k := k.(type) {
		case string:
			m, ok := v.(map[string]any)
			if !ok {
				return nil
			}
			v = m[k]
		case int:
			a, ok := v.([]any)
			if !ok || k >= len(a) {
				return nil
			}
			v = a[k]
		}
	}
	return v
}

func wantStatus(t *testing.T, r result, status int) {
	t.Helper()
	if r.err != nil {
		t.Fatalf("transport error: %v", r.err)
	}
	if r.status != status {
		t.Fatalf("status %d, want %d; body %s", r.status, status, r.body)
	}
}
