package providers_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"reflect"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tidwall/gjson"

	"github.com/llmrun/llmrun/providers"
	"github.com/llmrun/llmrun/providers/mock"
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

// atSuiteClock stops the provider's clock at 2026-01-01T00:00:00Z, where
// the fixtures' rate-limit resets and retry-after dates are measured from.
func atSuiteClock(c *providers.Config) {
	c.Now = func() time.Time { return time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC) }
}

// request is a request of r's shape, as the runner builds it.
func (r row) request(prompt string, maxTokens int) *providers.Request {
	return &providers.Request{ID: "r1", Body: []byte(r.body(prompt, maxTokens)), MaxTokens: maxTokens, Endpoint: r.endpoint}
}

// title names the row's subtests.
func (r row) title() string {
	if r.label != "" {
		return r.label
	}
	return r.name
}

// each runs fn for every row, as a subtest named after it.
func each(t *testing.T, fn func(t *testing.T, r row)) {
	for _, r := range rows {
		t.Run(r.title(), func(t *testing.T) { fn(t, r) })
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
						path, _ := r.target(stream)
						if resp != nil || pe.Status != status || !strings.Contains(pe.Message, target.URL+path) {
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

// jsonEqual fails unless got and want are the same JSON value.
func jsonEqual(t *testing.T, got, want []byte) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("got invalid JSON %v: %s", err, got)
	}
	if err := json.Unmarshal(want, &w); err != nil {
		t.Fatalf("want invalid JSON %v: %s", err, want)
	}
	if !reflect.DeepEqual(g, w) {
		t.Fatalf("JSON differs\n got: %s\nwant: %s", got, want)
	}
}

// fakeAPI answers like the row's real API: its canonical answer, plain or
// streamed by the request's stream flag, with its rate-limit headers; it
// reports what the provider must send right and must not send at all.
func (r row) fakeAPI(t *testing.T) http.HandlerFunc {
	return func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		stream := gjson.GetBytes(body, "stream").Bool()
		if r.streamed != nil {
			stream = r.streamed(req, body)
		}
		path, query := r.target(stream)
		if req.URL.Path != path || req.URL.RawQuery != query || req.Method != http.MethodPost {
			t.Errorf("%s %s?%s, want POST %s?%s", req.Method, req.URL.Path, req.URL.RawQuery, path, query)
		}
		want := r.auth(key)
		for name := range want {
			if got := req.Header.Values(name); !reflect.DeepEqual(got, want[name]) {
				t.Errorf("header %s: %q, want %q", name, got, want[name])
			}
		}
		for _, cred := range []string{"Authorization", "X-Api-Key", "Api-Key", "X-Goog-Api-Key"} {
			if want.Get(cred) == "" && req.Header.Get(cred) != "" {
				t.Errorf("credential header %s sent", cred)
			}
		}
		if req.Header.Get("Content-Type") != "application/json" || !gjson.ValidBytes(body) {
			t.Errorf("content type %q, body %s", req.Header.Get("Content-Type"), body)
		}
		if err := r.flags(body, stream); err != nil {
			t.Errorf("%v: %s", err, body)
		}
		w.Header().Set(r.requestID, "req_abc")
		for k, v := range r.limits {
			w.Header().Set(k, v)
		}
		if stream {
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, strings.Join(r.events, ""))
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, r.plain)
	}
}

// TestConformancePlainAndStream: the canonical answer reads the same
// plain and streamed (the stream reassembled into exactly the plain body),
// whatever stream flags the input carried, and the caller's body is never
// modified (retries resend it).
func TestConformancePlainAndStream(t *testing.T) {
	each(t, func(t *testing.T, r row) {
		srv := serve(t, r.fakeAPI(t))
		modes(t, func(t *testing.T, stream bool) {
			plainIn := r.body("Name a prime number.", 64)
			for _, in := range []string{plainIn, `{"stream":true,"stream_options":{"include_usage":false},` + plainIn[1:]} {
				req := &providers.Request{ID: "r1", Body: []byte(in), MaxTokens: 64, Endpoint: r.endpoint}
				resp, err := r.provider(srv.URL, stream, atSuiteClock).Send(t.Context(), req)
				if err != nil {
					t.Fatal(err)
				}
				if string(req.Body) != in {
					t.Fatalf("request body modified: %s", req.Body)
				}
				jsonEqual(t, resp.Body, []byte(r.plain))
				if resp.Text != r.want.Text || resp.Model != r.want.Model || resp.RequestID != "req_abc" || resp.Status != 200 {
					t.Errorf("response %+v", resp)
				}
				if resp.Usage != r.want.Usage {
					t.Errorf("usage %+v, want %+v", resp.Usage, r.want.Usage)
				}
				if err := r.checkLimits(resp.Limits); err != nil {
					t.Errorf("limits: %v", err)
				}
			}
		})
	})
}

// TestConformanceIdentity: Name, Format and BaseURL as configured; a nil
// HTTPClient gets a working default; a body that is not JSON never leaves.
func TestConformanceIdentity(t *testing.T) {
	each(t, func(t *testing.T, r row) {
		srv := serve(t, r.fakeAPI(t))
		p := r.provider(srv.URL, true, func(c *providers.Config) { c.HTTPClient = nil })
		if p.Name() != r.name || p.Format() != r.format || p.BaseURL() != srv.URL+r.basePath {
			t.Fatalf("%s %v %s", p.Name(), p.Format(), p.BaseURL())
		}
		if _, err := p.Send(t.Context(), r.request("x", 8)); err != nil {
			t.Fatalf("default client: %v", err)
		}
		unreachable := r.provider("http://127.0.0.1:1", false)
		_, err := unreachable.Send(t.Context(), &providers.Request{Body: []byte(`{"model":`)})
		wantClass(t, err, providers.ClassInvalid)
	})
}

// TestConformanceTTFT uses a clock advancing one second per reading: the
// request starts at 1, headers arrive at 2 and, streamed, the first
// content event (not the role or start events) at 3.
func TestConformanceTTFT(t *testing.T) {
	each(t, func(t *testing.T, r row) {
		srv := serve(t, r.fakeAPI(t))
		modes(t, func(t *testing.T, stream bool) {
			tick := time.Unix(0, 0)
			clock := func(c *providers.Config) { c.Now = func() time.Time { tick = tick.Add(time.Second); return tick } }
			resp, err := r.provider(srv.URL, stream, clock).Send(t.Context(), r.request("x", 8))
			if err != nil {
				t.Fatal(err)
			}
			want := map[bool]time.Duration{false: time.Second, true: 2 * time.Second}[stream]
			if resp.TTFT != want {
				t.Fatalf("TTFT %v, want %v", resp.TTFT, want)
			}
		})
	})
}

// TestConformanceStreamButJSON: some compatible servers ignore the stream
// flag and answer plain JSON; the body is then kept as received.
func TestConformanceStreamButJSON(t *testing.T) {
	each(t, func(t *testing.T, r row) {
		srv := serve(t, func(w http.ResponseWriter, req *http.Request) {
			w.Header().Set("Content-Type", "application/json; charset=utf-8")
			io.WriteString(w, r.plain)
		})
		resp, err := r.provider(srv.URL, true).Send(t.Context(), r.request("x", 8))
		if err != nil {
			t.Fatal(err)
		}
		if string(resp.Body) != r.plain || resp.Text != r.want.Text {
			t.Fatalf("resp %+v", resp)
		}
	})
}

// broken is ev with its data cut in the middle of the JSON.
func broken(ev string) string {
	i := strings.Index(ev, "data: ") + len("data: ")
	return ev[:i+(len(ev)-i)/2] + "\n\n"
}

// TestConformanceStreamFailures: a stream that fails after its 200 is
// ClassMidStream with the status and request id, and no part of its answer
// is returned (partial text is discarded, never spliced into a retry).
func TestConformanceStreamFailures(t *testing.T) {
	each(t, func(t *testing.T, r row) {
		head := strings.Join(r.events[:r.content+1], "")
		tests := map[string]struct {
			body    string // "" with cut
			cut     bool   // the connection drops after head
			typ     string
			msg     string
			wrapped bool // the transport error is kept
		}{
			"error event":           {body: head + r.errEvent, typ: r.errEventType, msg: r.errEventMsg},
			"EOF before terminator": {body: head, msg: "before " + r.terminator},
			"invalid event":         {body: head + broken(r.events[r.content]), msg: "not valid JSON"},
			"connection cut":        {cut: true, msg: "stream broken", wrapped: true},
		}
		for name, tc := range tests {
			t.Run(name, func(t *testing.T) {
				srv := serve(t, func(w http.ResponseWriter, req *http.Request) {
					io.Copy(io.Discard, req.Body)
					if tc.cut {
						c, _, _ := w.(http.Hijacker).Hijack()
						defer c.Close()
						io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"+r.requestID+": req_cut\r\nTransfer-Encoding: chunked\r\n\r\n")
						fmt.Fprintf(c, "%x\r\n%s\r\n", len(head), head) // one chunk, then the close
						return
					}
					w.Header().Set("Content-Type", "text/event-stream")
					w.Header().Set(r.requestID, "req_cut")
					io.WriteString(w, tc.body)
				})
				resp, err := r.provider(srv.URL, true).Send(t.Context(), r.request("x", 8))
				pe := wantClass(t, err, providers.ClassMidStream)
				if resp != nil || pe.Status != 200 || pe.RequestID != "req_cut" || pe.Type != tc.typ || !strings.Contains(pe.Message, tc.msg) || (tc.wrapped && pe.Err == nil) {
					t.Fatalf("response %v, error %+v", resp, pe)
				}
			})
		}
	})
}

// TestConformanceStopsServer: every early exit closes the body, which is
// how the server learns to stop generating (and billing): an error event,
// an idle stream, a silent server before its headers. It runs in a
// synctest bubble on an in-memory server, so the timeouts strike when
// client and server are both waiting, never before the request arrived.
func TestConformanceStopsServer(t *testing.T) {
	each(t, func(t *testing.T, r row) {
		head := strings.Join(r.events[:r.content+1], "")
		tests := map[string]struct {
			lead    string // after the headers; "" with silent sends nothing more
			silent  bool
			headers bool // send the headers before going silent
			cfg     func(*providers.Config)
			class   providers.Class
			msg     string
		}{
			"error event":        {lead: head + r.errEvent, headers: true, class: providers.ClassMidStream},
			"idle timeout":       {lead: head, silent: true, headers: true, cfg: func(c *providers.Config) { c.IdleTimeout = 30 * time.Millisecond }, class: providers.ClassTimeout, msg: "no stream data"},
			"first-byte timeout": {silent: true, cfg: func(c *providers.Config) { c.FirstByteTimeout = 30 * time.Millisecond }, class: providers.ClassTimeout, msg: "no response headers"},
		}
		for name, tc := range tests {
			t.Run(name, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					gone := make(chan struct{})
					root, viaPipe := servePipe(t, func(w http.ResponseWriter, req *http.Request) {
						defer close(gone)
						io.ReadAll(req.Body)
						if tc.headers {
							w.Header().Set("Content-Type", "text/event-stream")
							io.WriteString(w, tc.lead)
							w.(http.Flusher).Flush()
						}
						if tc.silent {
							<-req.Context().Done() // until the client gives up
							return
						}
						for req.Context().Err() == nil {
							if _, err := io.WriteString(w, r.events[r.content]); err != nil {
								return
							}
							w.(http.Flusher).Flush()
						}
					})
					opts := []func(*providers.Config){viaPipe}
					if tc.cfg != nil {
						opts = append(opts, tc.cfg)
					}
					_, err := r.provider(root, true, opts...).Send(t.Context(), r.request("x", 8))
					pe := wantClass(t, err, tc.class)
					if !strings.Contains(pe.Error(), tc.msg) {
						t.Errorf("error %v", pe)
					}
					select {
					case <-gone:
					case <-time.After(failsafe):
						t.Fatal("server still generating: body not closed")
					}
				})
			})
		}
	})
}

// TestConformanceCallerContext: the caller's cancellation, and a deadline
// that expires, come back as ctx.Err() itself, unwrapped, wherever they
// strike (before the headers, inside a stream, inside an error body), so
// the runner tells its own shutdown or deadline from a provider failure.
func TestConformanceCallerContext(t *testing.T) {
	each(t, func(t *testing.T, r row) {
		head := map[string]func(w http.ResponseWriter){
			"before the headers": func(http.ResponseWriter) {},
			"inside a stream": func(w http.ResponseWriter) {
				w.Header().Set("Content-Type", "text/event-stream")
				io.WriteString(w, r.events[0])
			},
			"inside an error body": func(w http.ResponseWriter) {
				w.WriteHeader(500)
				body := r.errBody("api_error", "", "Internal server error")
				io.WriteString(w, body[:len(body)/2])
			},
		}
		for name, write := range head {
			t.Run(name, func(t *testing.T) {
				sent := make(chan struct{}, 1)
				srv := serve(t, func(w http.ResponseWriter, req *http.Request) {
					io.ReadAll(req.Body)
					write(w)
					w.(http.Flusher).Flush()
					sent <- struct{}{}
					<-req.Context().Done() // silent until the client gives up
				})
				ctx, cancel := context.WithCancel(t.Context())
				go func() { <-sent; cancel() }()
				if _, err := r.provider(srv.URL, true).Send(ctx, r.request("x", 8)); err != context.Canceled {
					t.Fatalf("cancelled: err = %#v, want context.Canceled itself", err)
				}
				// A deadline the server outlasts: it may strike a little
				// earlier than meant under load, never with another error.
				ctx, stop := context.WithTimeout(t.Context(), 100*time.Millisecond)
				defer stop()
				if _, err := r.provider(srv.URL, true).Send(ctx, r.request("x", 8)); err != context.DeadlineExceeded {
					t.Fatalf("deadline: err = %#v, want context.DeadlineExceeded itself", err)
				}
			})
		}
	})
}

// sharedErrors are the answers every provider classifies alike; each row
// renders them in its own error shape (errBody) and adds its quota,
// overload and own cases.
var sharedErrors = map[string]struct {
	errCase
	html string // a proxy's page instead of errBody
}{
	"400 invalid":              {errCase: errCase{400, nil, "", providers.ClassInvalid, "invalid_request_error", "", -1}},
	"401 auth":                 {errCase: errCase{401, nil, "", providers.ClassAuth, "authentication_error", "invalid_api_key", -1}},
	"403 forbidden":            {errCase: errCase{403, nil, "", providers.ClassAuth, "permission_error", "", -1}},
	"404 model":                {errCase: errCase{404, nil, "", providers.ClassInvalid, "not_found_error", "model_not_found", -1}},
	"409 conflict":             {errCase: errCase{409, nil, "", providers.ClassServer, "conflict_error", "", -1}},
	"413 json":                 {errCase: errCase{413, nil, "", providers.ClassInvalid, "request_too_large", "", -1}},
	"413 proxy page":           {errCase: errCase{413, nil, "", providers.ClassInvalid, "", "", -1}, html: `<html><head><title>413 Request Entity Too Large</title></head></html>`},
	"422 unprocessable":        {errCase: errCase{422, nil, "", providers.ClassInvalid, "invalid_request_error", "", -1}},
	"429 retry-after":          {errCase: errCase{429, map[string]string{"retry-after": "12"}, "", providers.ClassRateLimited, "rate_limit_error", "rate_limit_exceeded", 12 * time.Second}},
	"429 retry-after-ms":       {errCase: errCase{429, map[string]string{"retry-after-ms": "800", "retry-after": "1"}, "", providers.ClassRateLimited, "tokens", "rate_limit_exceeded", 800 * time.Millisecond}},
	"429 http date":            {errCase: errCase{429, map[string]string{"retry-after": "Thu, 01 Jan 2026 00:01:00 GMT"}, "", providers.ClassRateLimited, "rate_limit_error", "", time.Minute}},
	"429 negative hint":        {errCase: errCase{429, map[string]string{"retry-after": "-3"}, "", providers.ClassRateLimited, "rate_limit_error", "", -1}},
	"429 no hint":              {errCase: errCase{429, nil, "", providers.ClassRateLimited, "rate_limit_error", "", -1}},
	"500 server":               {errCase: errCase{500, nil, "", providers.ClassServer, "api_error", "", -1}},
	"502 proxy page":           {errCase: errCase{502, nil, "", providers.ClassServer, "", "", -1}, html: `<html><body>Bad gateway</body></html>`},
	"503 overloaded":           {errCase: errCase{503, map[string]string{"retry-after": "2"}, "", providers.ClassOverloaded, "server_error", "", 2 * time.Second}},
	"504 gateway timeout":      {errCase: errCase{504, nil, "", providers.ClassServer, "timeout_error", "", -1}},
	"529 overloaded":           {errCase: errCase{529, nil, "", providers.ClassOverloaded, "overloaded_error", "", -1}},
	"429 with rate limits":     {errCase: errCase{429, map[string]string{"retry-after": "1"}, "", providers.ClassRateLimited, "rate_limit_error", "", time.Second}},
	"500 x-should-retry false": {errCase: errCase{500, map[string]string{"x-should-retry": "false"}, "", providers.ClassServer, "api_error", "", -1}},
	"400 x-should-retry true":  {errCase: errCase{400, map[string]string{"x-should-retry": "true"}, "", providers.ClassInvalid, "invalid_request_error", "", -1}},
}

// TestConformanceStatusErrors: every non-2xx answer is a typed error with
// its class, status, type, code, message, request id (header first, the
// body's otherwise), retry-after hint, rate-limit headers and the body
// itself, plain and streamed alike.
func TestConformanceStatusErrors(t *testing.T) {
	each(t, func(t *testing.T, r row) {
		cases := map[string]errCase{"quota": r.quota, "overloaded": r.overloaded}
		for name, c := range r.extraErrors {
			cases[name] = c
		}
		for name, c := range sharedErrors {
			c.body = c.html
			if c.html == "" {
				c.body = r.errBody(c.typ, c.code, "a message for "+name)
			}
			cases[name] = c.errCase
		}
		for name, tc := range cases {
			t.Run(name, func(t *testing.T) {
				withLimits := name == "429 with rate limits"
				for _, idHeader := range []bool{true, false} {
					srv := serve(t, func(w http.ResponseWriter, req *http.Request) {
						if idHeader {
							w.Header().Set(r.requestID, "req_hdr")
						}
						for k, v := range tc.header {
							w.Header().Set(k, v)
						}
						if withLimits {
							for k, v := range r.limits {
								w.Header().Set(k, v)
							}
						}
						w.WriteHeader(tc.status)
						io.WriteString(w, tc.body)
					})
					wantID := "req_hdr"
					if !idHeader && gjson.Valid(tc.body) {
						wantID = r.bodyRequestID
					} else if !idHeader {
						wantID = ""
					}
					modes(t, func(t *testing.T, stream bool) {
						resp, err := r.provider(srv.URL, stream, atSuiteClock).Send(t.Context(), r.request("x", 8))
						pe := wantClass(t, err, tc.class)
						if resp != nil || pe.Status != tc.status || pe.Type != tc.typ || pe.Code != tc.code || pe.RequestID != wantID || pe.Message == "" || len(pe.Body) == 0 {
							t.Errorf("response %v, error %+v (want type %q code %q request %q)", resp, pe, tc.typ, tc.code, wantID)
						}
						if tc.retry >= 0 != pe.HasRetryAfter || (pe.HasRetryAfter && pe.RetryAfter != tc.retry) {
							t.Errorf("retry-after %v %v, want %v", pe.RetryAfter, pe.HasRetryAfter, tc.retry)
						}
						verdict := map[string]int8{"true": 1, "false": -1}[tc.header["x-should-retry"]]
						if pe.ShouldRetry != verdict || pe.Retryable() != (pe.Class.Retryable() && verdict == 0 || verdict > 0) {
							t.Errorf("x-should-retry: verdict %d, retryable %v", pe.ShouldRetry, pe.Retryable())
						}
						if withLimits {
							if err := r.checkLimits(pe.Limits); err != nil {
								t.Errorf("limits: %v", err)
							}
						} else if pe.Limits.Any() {
							t.Errorf("limits from nowhere: %+v", pe.Limits)
						}
					})
				}
			})
		}
	})
}

// TestConformanceKeyRedaction: a server echoing the key, whole or masked,
// never gets it into an error's text, message or kept body.
func TestConformanceKeyRedaction(t *testing.T) {
	each(t, func(t *testing.T, r row) {
		srv := serve(t, func(w http.ResponseWriter, req *http.Request) {
			w.WriteHeader(401)
			io.WriteString(w, r.errBody("authentication_error", "invalid_api_key", "Incorrect API key provided: "+key+". Also known as "+key[:8]+"***wxyz."))
		})
		modes(t, func(t *testing.T, stream bool) {
			_, err := r.provider(srv.URL, stream).Send(t.Context(), r.request("x", 8))
			pe := wantClass(t, err, providers.ClassAuth)
			for _, s := range []string{err.Error(), pe.Message, string(pe.Body)} {
				if strings.Contains(s, key[:8]) || strings.Contains(s, "wxyz") {
					t.Errorf("key leaked: %s", s)
				}
				if !strings.Contains(s, "[REDACTED]") {
					t.Errorf("no redaction marker: %s", s)
				}
			}
		})
	})
}

// TestConformanceConnectionReset: a server that resets the connection
// before answering is ClassNetwork (retried), the key out of its message.
func TestConformanceConnectionReset(t *testing.T) {
	each(t, func(t *testing.T, r row) {
		srv := serve(t, func(w http.ResponseWriter, req *http.Request) {
			io.Copy(io.Discard, req.Body)
			c, _, _ := w.(http.Hijacker).Hijack()
			if tc, ok := c.(*net.TCPConn); ok {
				tc.SetLinger(0) // RST, not FIN
			}
			c.Close()
		})
		modes(t, func(t *testing.T, stream bool) {
			_, err := r.provider(srv.URL, stream).Send(t.Context(), r.request("x", 8))
			pe := wantClass(t, err, providers.ClassNetwork)
			if pe.Err == nil || strings.Contains(pe.Error(), key[:8]) {
				t.Errorf("error %+v", pe)
			}
		})
	})
}

// mockKey is the key the built-in mock is started with.
const mockKey = "sk-interop-0123456789abcdef"

// onMock builds r's provider against a fresh built-in mock.
func (r row) onMock(t *testing.T, cfg mock.Config, stream bool, key string) providers.Provider {
	t.Helper()
	srv := httptest.NewServer(mock.New(cfg))
	t.Cleanup(srv.Close)
	return r.provider(srv.URL, stream, func(c *providers.Config) {
		c.APIKey, c.HTTPClient, c.FirstByteTimeout, c.IdleTimeout = key, srv.Client(), 5*time.Second, 5*time.Second
	})
}

// withoutIDs decodes a body and drops what may differ between two answers.
func (r row) withoutIDs(t *testing.T, b []byte) map[string]any {
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
	for _, k := range r.mockIgnore {
		delete(m, k)
	}
	return m
}

// TestConformanceMockPlainAndStream runs each provider against the mock,
// so the two cannot drift apart: the mock's deterministic answer arrives
// whole, the same plain and streamed.
func TestConformanceMockPlainAndStream(t *testing.T) {
	const prompt = "Name a prime number."
	each(t, func(t *testing.T, r row) {
		plain, err := r.onMock(t, mock.Config{}, false, mockKey).Send(t.Context(), r.request(prompt, 64))
		if err != nil {
			t.Fatal(err)
		}
		streamed, err := r.onMock(t, mock.Config{}, true, mockKey).Send(t.Context(), r.request(prompt, 64))
		if err != nil {
			t.Fatal(err)
		}
		if a, b := r.withoutIDs(t, plain.Body), r.withoutIDs(t, streamed.Body); !reflect.DeepEqual(a, b) {
			t.Fatalf("plain %s\nstream %s", plain.Body, streamed.Body)
		}
		if plain.Text != mock.Answer(prompt, 64) || plain.Text != streamed.Text || plain.Usage != streamed.Usage || plain.Usage.OutputTokens == 0 {
			t.Fatalf("plain %+v\nstream %+v", plain, streamed)
		}
		if plain.RequestID == "" || streamed.RequestID == "" {
			t.Error("request ids not read")
		}
	})
}

// TestConformanceMockFaults: each fault the mock injects lands in its
// class, with retry hints where the mock gives them, and the key (which
// the mock echoes, masked, on a 401) never in the error.
func TestConformanceMockFaults(t *testing.T) {
	tests := map[string]struct {
		cfg    mock.Config
		stream bool
		key    string
		want   providers.Class
		hint   bool
	}{
		"mid-stream error":   {mock.Config{MidStreamRate: 1}, true, mockKey, providers.ClassMidStream, false},
		"reset mid-stream":   {mock.Config{ResetRate: 1}, true, mockKey, providers.ClassMidStream, false},
		"reset before reply": {mock.Config{ResetRate: 1}, false, mockKey, providers.ClassNetwork, false},
		"overloaded":         {mock.Config{OverloadRate: 1}, true, mockKey, providers.ClassOverloaded, false},
		"outage":             {mock.Config{Outage: true}, false, mockKey, providers.ClassServer, false},
		"spend cap":          {mock.Config{SpendCap: true}, true, mockKey, providers.ClassQuota, false},
		"wrong key":          {mock.Config{APIKey: "sk-other-key-0000000000"}, false, mockKey, providers.ClassAuth, false},
		// One request a minute with a minute of burst: the second waits.
		"rate limited":                 {mock.Config{RPM: 1, Burst: time.Minute}, false, mockKey, providers.ClassRateLimited, true},
		"rate limited, no retry-after": {mock.Config{RPM: 1, Burst: time.Minute, NoRetryAfter: true, NoLimitHeaders: true}, true, mockKey, providers.ClassRateLimited, false},
	}
	each(t, func(t *testing.T, r row) {
		for name, tc := range tests {
			t.Run(name, func(t *testing.T) {
				p := r.onMock(t, tc.cfg, tc.stream, tc.key)
				resp, err := p.Send(t.Context(), r.request("Name a prime number.", 64))
				if tc.want == providers.ClassRateLimited {
					if err != nil {
						t.Fatalf("first request: %v", err)
					}
					resp, err = p.Send(t.Context(), r.request("Name another.", 64))
				}
				pe := wantClass(t, err, tc.want)
				if resp != nil || pe.HasRetryAfter != tc.hint {
					t.Errorf("response %v, retry-after %v %v", resp, pe.RetryAfter, pe.HasRetryAfter)
				}
				if strings.Contains(err.Error(), tc.key[:8]) || strings.Contains(string(pe.Body), tc.key[:8]) {
					t.Fatalf("key leaked: %v %s", err, pe.Body)
				}
			})
		}
	})
}

// TestConformanceMockLimits: the mock's rate-limit headers reach
// Response.Limits, plain and streamed.
func TestConformanceMockLimits(t *testing.T) {
	each(t, func(t *testing.T, r row) {
		if r.inputWindow == nil {
			t.Skip("the provider sends no rate-limit headers")
		}
		modes(t, func(t *testing.T, stream bool) {
			resp, err := r.onMock(t, mock.Config{RPM: 600, ITPM: 60000}, stream, mockKey).Send(t.Context(), r.request("x", 8))
			if err != nil {
				t.Fatal(err)
			}
			if resp.Limits.Requests.Limit != 600 || r.inputWindow(resp.Limits).Limit != 60000 || r.inputWindow(resp.Limits).Remaining >= 60000 {
				t.Fatalf("limits %+v", resp.Limits)
			}
			quiet := mock.Config{RPM: 600, ITPM: 60000, NoLimitHeaders: true}
			if resp, err = r.onMock(t, quiet, stream, mockKey).Send(t.Context(), r.request("x", 8)); err != nil || resp.Limits.Any() {
				t.Fatalf("no headers: limits %+v, err %v", resp.Limits, err)
			}
		})
	})
}

// TestConformanceMockCache: cache usage read end to end, plain and
// streamed: the mock caches the shared part of the first request, and the
// second, repeating it, reports reading it; InputTokens counts every input
// token either way.
func TestConformanceMockCache(t *testing.T) {
	shared := strings.Repeat("Follow the house rules. ", 250) // 6,000 bytes, 1,500 tokens
	each(t, func(t *testing.T, r row) {
		modes(t, func(t *testing.T, stream bool) {
			p := r.onMock(t, mock.Config{}, stream, mockKey)
			var u [2]providers.Usage
			for i := range u {
				body := r.cached(shared, fmt.Sprint("question ", i))
				resp, err := p.Send(t.Context(), &providers.Request{ID: "c", Body: []byte(body), MaxTokens: 16, Endpoint: r.endpoint})
				if err != nil {
					t.Fatal(err)
				}
				u[i] = resp.Usage
			}
			first, second := u[0], u[1]
			switch {
			case first.CacheReadTokens != 0 || second.CacheReadTokens < 1024 || second.CacheReadTokens > second.InputTokens,
				first.InputTokens != second.InputTokens || first.InputTokens < 1500,
				r.writes && (first.CacheWriteTokens != second.CacheReadTokens || second.CacheWriteTokens != 0),
				!r.writes && (first.CacheWriteTokens != 0 || second.CacheWriteTokens != 0):
				t.Fatalf("first %+v\nsecond %+v", first, second)
			}
		})
	})
}

// replay answers every request with one fixed stream, without a network.
type replay struct {
	body   []byte
	header http.Header
}

func (rp replay) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body != nil {
		io.Copy(io.Discard, req.Body)
		req.Body.Close()
	}
	h := http.Header{"Content-Type": {"text/event-stream"}}
	for k, v := range rp.header {
		h[k] = v
	}
	return &http.Response{StatusCode: 200, Header: h, Body: io.NopCloser(bytes.NewReader(rp.body)), ContentLength: -1, Request: req}, nil
}

// replaying builds r's provider, streaming, on a replay of stream.
func (r row) replaying(stream string) providers.Provider {
	rp := replay{[]byte(stream), http.Header{http.CanonicalHeaderKey(r.requestID): {"req_hdr"}}}
	return r.provider("http://replay.invalid", true, func(c *providers.Config) { c.HTTPClient = &http.Client{Transport: rp} })
}

// TestConformanceStreams runs each row's wire-specific streams: what they
// reassemble into, or how they fail.
func TestConformanceStreams(t *testing.T) {
	each(t, func(t *testing.T, r row) {
		for name, tc := range r.streams {
			t.Run(name, func(t *testing.T) {
				resp, err := r.replaying(tc.stream).Send(t.Context(), r.request("x", 1024))
				if tc.want == "" {
					pe := wantClass(t, err, providers.ClassMidStream)
					if resp != nil || pe.Status != 200 || pe.Type != tc.typ || !strings.Contains(pe.Message, tc.msg) || pe.RequestID != tc.reqID {
						t.Fatalf("response %v, error %+v", resp, pe)
					}
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				jsonEqual(t, resp.Body, []byte(tc.want))
				if resp.Text != tc.text || (tc.usage != nil && resp.Usage != *tc.usage) {
					t.Errorf("text %q usage %+v, want %q %+v", resp.Text, resp.Usage, tc.text, tc.usage)
				}
			})
		}
	})
}

// TestConformanceBenchStreams: each benchmark stream is a valid answer.
func TestConformanceBenchStreams(t *testing.T) {
	each(t, func(t *testing.T, r row) {
		resp, err := r.replaying(string(r.bench(16))).Send(t.Context(), r.request("x", 1<<20))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(resp.Text, r.benchText) || resp.Usage.OutputTokens != 16 {
			t.Fatalf("text %q usage %+v", resp.Text, resp.Usage)
		}
	})
}

// BenchmarkStreamDecode measures the streaming path of each provider
// without a network: Send with its request shaping, the response body's
// reader, SSE decoding, event parsing and reassembly into the final body.
func BenchmarkStreamDecode(b *testing.B) {
	const tokens = 10000
	for _, r := range rows {
		b.Run(r.title(), func(b *testing.B) {
			stream := r.bench(tokens)
			p := r.replaying(string(stream))
			req := r.request("x", 1<<20)
			ctx := context.Background()
			b.SetBytes(int64(len(stream)))
			var ms0, ms1 runtime.MemStats
			runtime.ReadMemStats(&ms0)
			b.ResetTimer()
			for b.Loop() {
				if _, err := p.Send(ctx, req); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			runtime.ReadMemStats(&ms1)
			per := float64(b.N) * tokens
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/per, "ns/token")
			b.ReportMetric(float64(ms1.Mallocs-ms0.Mallocs)/per, "allocs/token")
		})
	}
}
