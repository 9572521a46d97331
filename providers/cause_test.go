package providers

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"
)

// post makes one real POST with cfg to u and returns its error.
func post(t *testing.T, cfg Config, u string) error {
	t.Helper()
	resp, err := cfg.Post(context.Background(), u, nil, []byte(`{}`))
	if err == nil {
		resp.Body.Close()
		t.Fatalf("POST %s succeeded", u)
	}
	return err
}

func TestCauseOfRealFailures(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	ln.Close()
	tlsSrv := httptest.NewTLSServer(http.NotFoundHandler())
	defer tlsSrv.Close()
	plain := httptest.NewServer(http.NotFoundHandler())
	defer plain.Close()
	cut := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, _, _ := w.(http.Hijacker).Hijack()
		conn.Close()
	}))
	defer cut.Close()
	for _, tc := range []struct {
		name, url, want string
		connLevel       bool
	}{
		{"refused", "http://" + closed + "/v1/chat/completions", "connection refused by " + closed, true},
		{"unknown authority", tlsSrv.URL + "/v1", "TLS: ", true},
		{"https to a plain server", strings.Replace(plain.URL, "http://", "https://", 1) + "/v1", "TLS: ", true},
		{"connection cut before an answer", cut.URL + "/v1", "the server closed the connection without answering", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := post(t, Config{HTTPClient: NewHTTPClient(1), APIKey: "sk-secret-key-123"}, tc.url)
			if got := Cause(err); !strings.Contains(got, tc.want) {
				t.Errorf("Cause = %q, want it to contain %q (error: %v)", got, tc.want, err)
			}
			if got := ConnectionLevel(err); got != tc.connLevel {
				t.Errorf("ConnectionLevel = %v, want %v (error: %v)", got, tc.connLevel, err)
			}
		})
	}
}

func TestCauseOfErrors(t *testing.T) {
	dns := &url.Error{Op: "Post", URL: "https://api.opnai.invalid/v1/chat/completions",
		Err: &net.OpError{Op: "dial", Net: "tcp", Err: &net.DNSError{Err: "no such host", Name: "api.opnai.invalid", IsNotFound: true}}}
	dialTimeout := &net.OpError{Op: "dial", Net: "tcp", Err: &timeoutErr{}}
	firstByte := &timeoutError{"no response headers", 2 * time.Minute}
	for _, tc := range []struct {
		name      string
		err       error
		want      string
		connLevel bool
	}{
		{"no such host", mapTransport(context.Background(), dns, ""), "no such host api.opnai.invalid", true},
		{"dial timeout", mapTransport(context.Background(), dialTimeout, ""), "timeout connecting to", true},
		{"first byte timeout", mapTransport(context.Background(), firstByte, ""), "timeout: no response headers within 2m0s", false},
		{"http status", &Error{Class: ClassInvalid, Status: 404, Message: "The model `x` does not exist"}, "HTTP 404: The model `x` does not exist", false},
		{"rate limited", &Error{Class: ClassRateLimited, Status: 429}, "HTTP 429", false},
		{"mid stream", &Error{Class: ClassMidStream, Status: 200, Message: "stream broken: EOF"}, "mid_stream (HTTP 200): stream broken: EOF", false},
		{"plain error", errors.New("something else"), "something else", false},
		{"long message clipped", &Error{Class: ClassInvalid, Status: 400, Message: strings.Repeat("x", 500)}, "…", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Cause(tc.err)
			if !strings.Contains(got, tc.want) || len(got) > maxCause+len("…") {
				t.Errorf("Cause = %q, want it to contain %q", got, tc.want)
			}
			if cl := ConnectionLevel(tc.err); cl != tc.connLevel {
				t.Errorf("ConnectionLevel = %v, want %v", cl, tc.connLevel)
			}
		})
	}
}

type timeoutErr struct{}

func (timeoutErr) Error() string   { return "i/o timeout" }
func (timeoutErr) Timeout() bool   { return true }
func (timeoutErr) Temporary() bool { return true }

func TestHint(t *testing.T) {
	req := &Request{Model: "gpt-4o-mini"}
	for _, tc := range []struct {
		name   string
		stream bool
		url    string
		e      Error
		want   string
	}{
		{"missing /v1", true, "http://localhost:8000/chat/completions", Error{Status: 404, Message: "Invalid URL (POST /chat/completions)"}, "does the base URL need /v1?"},
		{"doubled /v1", true, "http://localhost:8000/v1/v1/messages", Error{Status: 404, Message: "Not found"}, "ends in /v1 and the provider adds its own"},
		{"other 404 path", true, "http://localhost:8000/v1/chat/completions", Error{Status: 404}, "check the base URL"},
		{"unknown model by code", true, "http://h/v1/chat/completions", Error{Status: 404, Code: "model_not_found", Message: "nope"}, `is the model name "gpt-4o-mini" right?`},
		{"unknown model by name", true, "http://h/v1/chat/completions", Error{Status: 404, Message: "The model `gpt-4o-mini` does not exist."}, `is the model name "gpt-4o-mini" right?`},
		{"stream_options rejected", true, "http://h/v1/chat/completions", Error{Status: 400, Message: "Unrecognized request argument supplied: stream_options"}, "try --stream=false"},
		{"stream rejected in body", true, "http://h/v1/chat/completions", Error{Status: 400, Body: []byte(`{"detail":"extra field: stream"}`)}, "try --stream=false"},
		{"stream off: no stream hint", false, "http://h/v1/chat/completions", Error{Status: 400, Message: "stream_options"}, ""},
		{"upstream is not stream", true, "http://h/v1/chat/completions", Error{Status: 400, Message: "upstream rejected the prompt"}, ""},
		{"other 400", true, "http://h/v1/chat/completions", Error{Status: 400, Message: "max_tokens too large"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &Config{Stream: tc.stream}
			e := tc.e
			c.hint(&e, tc.url, req)
			if (tc.want == "") != (e.Hint == "") || !strings.Contains(e.Hint, tc.want) {
				t.Errorf("hint %q, want %q", e.Hint, tc.want)
			}
			if tc.want != "" && !strings.Contains(e.Error(), e.Hint) {
				t.Errorf("Error() %q lacks the hint", e.Error())
			}
		})
	}
	// A one-letter model is not named by the path in the message.
	e := Error{Status: 404, Message: "Invalid URL (POST /chat/completions)"}
	(&Config{}).hint(&e, "http://h/chat/completions", &Request{Model: "m"})
	if !strings.Contains(e.Hint, "/v1?") {
		t.Errorf("model m: hint %q, want the /v1 one", e.Hint)
	}
	for _, tc := range []struct {
		s, word string
		want    bool
	}{{"The model `m` does not exist", "m", true}, {"/chat/completions", "m", false}, {"model: claude-x", "claude-x", true}, {"claude-x-2", "claude-x", false}} {
		if got := namesWord(tc.s, tc.word); got != tc.want {
			t.Errorf("namesWord(%q, %q) = %v", tc.s, tc.word, got)
		}
	}
}
