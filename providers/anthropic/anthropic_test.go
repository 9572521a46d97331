package anthropic

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/llmrun/llmrun/providers"
)

const key = "sk-ant-api03-abcdefgh12345678wxyz"

// plainBody is the non-streaming answer equivalent to streamBody (wire-formats §2.2/§2.3).
const plainBody = `{"id":"msg_01MOCK000000000000000002","type":"message","role":"assistant","model":"claude-sonnet-4-5-20250929","content":[{"type":"text","text":"Seven."}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":18,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":5}}`

// streamBody is the exact byte stream of wire-formats §2.3.
const streamBody = `event: message_start
data: {"type":"message_start","message":{"id":"msg_01MOCK000000000000000002","type":"message","role":"assistant","model":"claude-sonnet-4-5-20250929","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":18,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":1}}}

event: content_block_start
data: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}

event: ping
data: {"type":"ping"}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Sev"}}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"en."}}

event: content_block_stop
data: {"type":"content_block_stop","index":0}

event: message_delta
data: {"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":5}}

event: message_stop
data: {"type":"message_stop"}

`

const reqBody = `{"model":"claude-sonnet-4-5","max_tokens":256,"system":"Answer in one word.","messages":[{"role":"user","content":"Name a prime number."}]}`

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

func newServer(t *testing.T, h http.HandlerFunc) *httptest.Server {
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

func newProvider(srv *httptest.Server, stream bool) *Provider {
	return New(providers.Config{BaseURL: srv.URL + "/", APIKey: key, Stream: stream, HTTPClient: srv.Client(),
		FirstByteTimeout: time.Minute, IdleTimeout: time.Minute})
}

func send(t *testing.T, p *Provider, body string) (*providers.Response, error) {
	t.Helper()
	return p.Send(t.Context(), &providers.Request{ID: "r1", Body: []byte(body)})
}

// fakeAPI answers like api.anthropic.com, plain or streamed by the request's
// stream flag, checking what the provider must send.
func fakeAPI(t *testing.T) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if r.URL.Path != "/v1/messages" || r.Method != http.MethodPost {
			t.Errorf("%s %s", r.Method, r.URL.Path)
		}
		if r.Header.Get("x-api-key") != key || r.Header.Get("anthropic-version") != "2023-06-01" || r.Header.Get("content-type") != "application/json" {
			t.Errorf("headers %v", r.Header)
		}
		if r.Header.Get("Authorization") != "" {
			t.Errorf("unexpected Authorization header")
		}
		w.Header().Set("request-id", "req_01MOCK")
		w.Header().Set("anthropic-ratelimit-requests-limit", "1000")
		w.Header().Set("anthropic-ratelimit-requests-remaining", "999")
		w.Header().Set("anthropic-ratelimit-requests-reset", "2999-01-01T00:00:00Z")
		if gjson.GetBytes(body, "stream").Bool() {
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, streamBody)
			return
		}
		if gjson.GetBytes(body, "stream").Exists() {
			t.Errorf("plain request carries stream: %s", body)
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, plainBody)
	}
}

func TestSendPlainAndStreamAgree(t *testing.T) {
	srv := newServer(t, fakeAPI(t))
	for _, stream := range []bool{false, true} {
		for _, in := range []string{reqBody, `{"stream":true,` + reqBody[1:]} {
			t.Run(fmt.Sprint("stream=", stream), func(t *testing.T) {
				req := &providers.Request{Body: []byte(in)}
				resp, err := newProvider(srv, stream).Send(t.Context(), req)
				if err != nil {
					t.Fatal(err)
				}
				if string(req.Body) != in {
					t.Fatalf("request body modified: %s", req.Body)
				}
				jsonEqual(t, resp.Body, []byte(plainBody))
				if resp.Text != "Seven." || resp.Model != "claude-sonnet-4-5-20250929" || resp.RequestID != "req_01MOCK" || resp.Status != 200 {
					t.Errorf("response %+v", resp)
				}
				if resp.Usage != (providers.Usage{InputTokens: 18, OutputTokens: 5}) {
					t.Errorf("usage %+v", resp.Usage)
				}
				if resp.Limits.Requests.Limit != 1000 || resp.Limits.Requests.Remaining != 999 || resp.Limits.Requests.Reset <= 0 {
					t.Errorf("limits %+v", resp.Limits.Requests)
				}
			})
		}
	}
}

// TestStreamTTFT: headers at t=1s, first text delta at t=2s (ping and
// block start do not count).
func TestStreamTTFT(t *testing.T) {
	srv := newServer(t, fakeAPI(t))
	p := newProvider(srv, true)
	tick := time.Unix(0, 0)
	p.cfg.Now = func() time.Time { tick = tick.Add(time.Second); return tick }
	resp, err := send(t, p, reqBody)
	if err != nil {
		t.Fatal(err)
	}
	if resp.TTFT != 2*time.Second {
		t.Fatalf("TTFT %v, want 2s", resp.TTFT)
	}
}

// events frames (name, data) pairs as SSE.
func events(kv ...string) string {
	var b strings.Builder
	for i := 0; i < len(kv); i += 2 {
		if kv[i] != "" {
			b.WriteString("event: " + kv[i] + "\n")
		}
		b.WriteString("data: " + kv[i+1] + "\n\n")
	}
	return b.String()
}

const msgStart = `{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"claude-x","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":10,"cache_creation_input_tokens":100,"cache_read_input_tokens":1000,"output_tokens":1,"service_tier":"standard"}}}`

func TestStreamReassembly(t *testing.T) {
	tests := map[string]struct {
		stream string
		want   string
		text   string
		usage  providers.Usage
	}{
		"thinking, text with escapes, tool use, cache usage": {
			events(
				"message_start", msgStart,
				"content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}`,
				"content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"Let me \"think\"\n"}}`,
				"content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"done."}}`,
				"content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"EqQBCgIYAhIM"}}`,
				"content_block_stop", `{"type":"content_block_stop","index":0}`,
				"content_block_start", `{"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}`,
				"ping", `{"type": "ping"}`,
				"content_block_delta", `{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"caf\u00e9 \ud83d"}}`,
				"content_block_delta", `{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"\ude00\n"}}`,
				"content_block_stop", `{"type":"content_block_stop","index":1}`,
				"content_block_start", `{"type":"content_block_start","index":2,"content_block":{"type":"tool_use","id":"toolu_1","name":"get_weather","input":{}}}`,
				"content_block_delta", `{"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":""}}`,
				"content_block_delta", `{"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"{\"city\": \"Pa"}}`,
				"content_block_delta", `{"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"ris\", \"days\": [1,2]}"}}`,
				"content_block_stop", `{"type":"content_block_stop","index":2}`,
				"content_block_start", `{"type":"content_block_start","index":3,"content_block":{"type":"tool_use","id":"toolu_2","name":"now","input":{}}}`,
				"content_block_stop", `{"type":"content_block_stop","index":3}`,
				"some_future_event", `{"type":"some_future_event","x":1}`,
				"message_delta", `{"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":40}}`,
				"message_delta", `{"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null,"stop_details":{"x":1}},"usage":{"output_tokens":42,"server_tool_use":{"web_search_requests":0}}}`,
				"message_stop", `{"type":"message_stop"}`),
			`{"id":"msg_1","type":"message","role":"assistant","model":"claude-x","content":[
				{"type":"thinking","thinking":"Let me \"think\"\ndone.","signature":"EqQBCgIYAhIM"},
				{"type":"text","text":"café 😀\n"},
				{"type":"tool_use","id":"toolu_1","name":"get_weather","input":{"city":"Paris","days":[1,2]}},
				{"type":"tool_use","id":"toolu_2","name":"now","input":{}}],
				"stop_reason":"tool_use","stop_sequence":null,"stop_details":{"x":1},
				"usage":{"input_tokens":10,"cache_creation_input_tokens":100,"cache_read_input_tokens":1000,"output_tokens":42,"service_tier":"standard","server_tool_use":{"web_search_requests":0}}}`,
			"café 😀\n",
			providers.Usage{InputTokens: 1110, OutputTokens: 42},
		},
		"two text blocks, stop sequence, no event names": {
			events(
				"", msgStart,
				"", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`,
				"", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"a"}}`,
				"", `{"type":"content_block_start","index":1,"content_block":{"type":"text","text":"b"}}`,
				"", `{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"c"}}`,
				"", `{"type":"message_delta","delta":{"stop_reason":"stop_sequence","stop_sequence":"END"},"usage":{"output_tokens":3,"input_tokens":11}}`,
				"", `{"type":"message_stop"}`),
			`{"id":"msg_1","type":"message","role":"assistant","model":"claude-x","content":[{"type":"text","text":"a"},{"type":"text","text":"bc"}],
				"stop_reason":"stop_sequence","stop_sequence":"END",
				"usage":{"input_tokens":11,"cache_creation_input_tokens":100,"cache_read_input_tokens":1000,"output_tokens":3,"service_tier":"standard"}}`,
			"abc",
			providers.Usage{InputTokens: 1111, OutputTokens: 3},
		},
		"citations": {
			events(
				"message_start", msgStart,
				"content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":"","citations":[]}}`,
				"content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"citations_delta","citation":{"type":"char_location","cited_text":"x","document_index":0}}}`,
				"content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"X."}}`,
				"message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":2}}`,
				"message_stop", `{"type":"message_stop"}`),
			`{"id":"msg_1","type":"message","role":"assistant","model":"claude-x","content":[{"type":"text","text":"X.","citations":[{"type":"char_location","cited_text":"x","document_index":0}]}],
				"stop_reason":"end_turn","stop_sequence":null,
				"usage":{"input_tokens":10,"cache_creation_input_tokens":100,"cache_read_input_tokens":1000,"output_tokens":2,"service_tier":"standard"}}`,
			"X.",
			providers.Usage{InputTokens: 1110, OutputTokens: 2},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				io.WriteString(w, tc.stream)
			})
			resp, err := send(t, newProvider(srv, true), reqBody)
			if err != nil {
				t.Fatal(err)
			}
			jsonEqual(t, resp.Body, []byte(tc.want))
			if resp.Text != tc.text || resp.Usage != tc.usage {
				t.Errorf("text %q usage %+v, want %q %+v", resp.Text, resp.Usage, tc.text, tc.usage)
			}
		})
	}
}

func TestStreamFailures(t *testing.T) {
	head := strings.Join(strings.SplitAfter(streamBody, "\n\n")[:4], "")
	tests := map[string]struct {
		body  string
		class providers.Class
		typ   string
		msg   string
		reqID string
	}{
		"overloaded error event": {head + "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\",\"details\":null},\"request_id\":\"req_in_body\"}\n\n",
			providers.ClassMidStream, "overloaded_error", "Overloaded", "req_in_body"},
		"error event without request id": {head + "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"api_error\",\"message\":\"Internal\"}}\n\n",
			providers.ClassMidStream, "api_error", "Internal", "req_hdr"},
		"EOF before message_stop": {head, providers.ClassMidStream, "", "before message_stop", "req_hdr"},
		"invalid event":           {head + "event: content_block_delta\ndata: {\"index\":\n\n", providers.ClassMidStream, "", "not valid JSON", "req_hdr"},
		"delta for unknown block": {head + "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":7,\"delta\":{\"type\":\"text_delta\",\"text\":\"x\"}}\n\n",
			providers.ClassMidStream, "", "never started", "req_hdr"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				w.Header().Set("request-id", "req_hdr")
				io.WriteString(w, tc.body)
			})
			_, err := send(t, newProvider(srv, true), reqBody)
			pe := wantClass(t, err, tc.class)
			if pe.Status != 200 || pe.Type != tc.typ || !strings.Contains(pe.Message, tc.msg) || pe.RequestID != tc.reqID {
				t.Fatalf("error %+v", pe)
			}
		})
	}
}

func TestStreamConnectionCut(t *testing.T) {
	first := strings.SplitAfter(streamBody, "\n\n")[0]
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		c, _, _ := w.(http.Hijacker).Hijack()
		defer c.Close()
		io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nrequest-id: req_cut\r\nTransfer-Encoding: chunked\r\n\r\n")
		fmt.Fprintf(c, "%x\r\n%s\r\n", len(first), first)
	})
	_, err := send(t, newProvider(srv, true), reqBody)
	pe := wantClass(t, err, providers.ClassMidStream)
	if pe.Status != 200 || pe.RequestID != "req_cut" || pe.Err == nil {
		t.Fatalf("error %+v", pe)
	}
}

// TestStreamStopsServer checks early exits close the body: the server
// keeps generating until it sees the client go away.
func TestStreamStopsServer(t *testing.T) {
	tests := map[string]struct {
		lead   string
		silent bool
		want   providers.Class
	}{
		"error event": {"event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n", false, providers.ClassMidStream},
		"idle":        {"", true, providers.ClassTimeout},
	}
	parts := strings.SplitAfter(streamBody, "\n\n")
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			gone := make(chan struct{})
			srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
				defer close(gone)
				io.ReadAll(r.Body)
				w.Header().Set("Content-Type", "text/event-stream")
				io.WriteString(w, parts[0]+parts[1]+tc.lead)
				w.(http.Flusher).Flush()
				if tc.silent {
					<-r.Context().Done()
					return
				}
				for r.Context().Err() == nil {
					if _, err := io.WriteString(w, parts[3]); err != nil {
						return
					}
					w.(http.Flusher).Flush()
				}
			})
			p := newProvider(srv, true)
			if tc.silent {
				p.cfg.IdleTimeout = 30 * time.Millisecond
			}
			_, err := send(t, p, reqBody)
			wantClass(t, err, tc.want)
			select {
			case <-gone:
			case <-time.After(10 * time.Second):
				t.Fatal("server still generating: body not closed")
			}
		})
	}
}

func TestSendCancelled(t *testing.T) {
	entered := make(chan struct{})
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, strings.SplitAfter(streamBody, "\n\n")[0])
		w.(http.Flusher).Flush()
		close(entered)
		<-r.Context().Done()
	})
	ctx, cancel := context.WithCancel(t.Context())
	go func() { <-entered; cancel() }()
	_, err := newProvider(srv, true).Send(ctx, &providers.Request{Body: []byte(reqBody)})
	if err != context.Canceled {
		t.Fatalf("err = %#v, want context.Canceled itself", err)
	}
}

func TestStatusErrors(t *testing.T) {
	errBody := func(typ, msg, extra string) string {
		return `{"type":"error","error":{"type":"` + typ + `","message":"` + msg + `"` + extra + `},"request_id":"req_body"}`
	}
	tests := map[string]struct {
		status int
		header map[string]string
		body   string
		class  providers.Class
		typ    string
		code   string
		retry  time.Duration // -1: no hint
	}{
		"400 invalid":         {400, nil, errBody("invalid_request_error", "max_tokens: Field required", ""), providers.ClassInvalid, "invalid_request_error", "", -1},
		"400 spend limit":     {400, nil, errBody("invalid_request_error", "You have reached your specified API usage limits. You will regain access on 2026-09-01 at 00:00 UTC.", ""), providers.ClassQuota, "invalid_request_error", "", -1},
		"401":                 {401, nil, errBody("authentication_error", "invalid x-api-key", ""), providers.ClassAuth, "authentication_error", "", -1},
		"402 billing":         {402, nil, errBody("billing_error", "Your credit balance is too low.", ""), providers.ClassQuota, "billing_error", "", -1},
		"403":                 {403, nil, errBody("permission_error", "no access", ""), providers.ClassAuth, "permission_error", "", -1},
		"404":                 {404, nil, errBody("not_found_error", "model: claude-nope", ""), providers.ClassInvalid, "not_found_error", "", -1},
		"409":                 {409, nil, errBody("conflict_error", "conflict", ""), providers.ClassServer, "conflict_error", "", -1},
		"413 cloudflare":      {413, nil, `<html><head><title>413 Request Entity Too Large</title></head></html>`, providers.ClassInvalid, "", "", -1},
		"413 json":            {413, nil, errBody("request_too_large", "Request exceeds the maximum allowed number of bytes.", ""), providers.ClassInvalid, "request_too_large", "", -1},
		"429 rate limit":      {429, map[string]string{"retry-after": "12", "anthropic-ratelimit-input-tokens-limit": "80000", "anthropic-ratelimit-input-tokens-remaining": "0", "anthropic-ratelimit-input-tokens-reset": "2026-01-01T00:00:30Z"}, errBody("rate_limit_error", "This request would exceed the rate limit for your organization of 80,000 input tokens per minute.", ""), providers.ClassRateLimited, "rate_limit_error", "", 12 * time.Second},
		"429 http date":       {429, map[string]string{"retry-after": "Thu, 01 Jan 2026 00:01:00 GMT"}, errBody("rate_limit_error", "slow down", ""), providers.ClassRateLimited, "rate_limit_error", "", time.Minute},
		"429 spend cap":       {429, nil, errBody("rate_limit_error", "You have reached your API usage limits ... You will regain access on 2026-09-01 at 00:00 UTC.", `,"details":{"error_code":"enforced_spend_limit_reached"}`), providers.ClassQuota, "rate_limit_error", "enforced_spend_limit_reached", -1},
		"429 null details":    {429, nil, errBody("rate_limit_error", "slow down", `,"details":null`), providers.ClassRateLimited, "rate_limit_error", "", -1},
		"500":                 {500, nil, errBody("api_error", "Internal server error", ""), providers.ClassServer, "api_error", "", -1},
		"504":                 {504, nil, errBody("timeout_error", "Request timed out", ""), providers.ClassServer, "timeout_error", "", -1},
		"529 overloaded":      {529, nil, errBody("overloaded_error", "Overloaded", ""), providers.ClassOverloaded, "overloaded_error", "", -1},
		"500 overloaded type": {500, nil, errBody("overloaded_error", "Overloaded", ""), providers.ClassOverloaded, "overloaded_error", "", -1},
		"negative retry":      {429, map[string]string{"retry-after": "-3"}, errBody("rate_limit_error", "x", ""), providers.ClassRateLimited, "rate_limit_error", "", -1},
		"ms retry":            {529, map[string]string{"retry-after-ms": "1500.5"}, errBody("overloaded_error", "Overloaded", ""), providers.ClassOverloaded, "overloaded_error", "", 1500500 * time.Microsecond},
	}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("request-id", "req_hdr")
				for k, v := range tc.header {
					w.Header().Set(k, v)
				}
				w.WriteHeader(tc.status)
				io.WriteString(w, tc.body)
			})
			for _, stream := range []bool{false, true} {
				p := newProvider(srv, stream)
				p.cfg.Now = func() time.Time { return now }
				_, err := send(t, p, reqBody)
				pe := wantClass(t, err, tc.class)
				if pe.Status != tc.status || pe.Type != tc.typ || pe.Code != tc.code || pe.RequestID != "req_hdr" || pe.Message == "" {
					t.Errorf("error %+v", pe)
				}
				if tc.retry >= 0 != pe.HasRetryAfter || (pe.HasRetryAfter && pe.RetryAfter != tc.retry) {
					t.Errorf("retry-after %v %v, want %v", pe.RetryAfter, pe.HasRetryAfter, tc.retry)
				}
				if name == "429 rate limit" && pe.Limits.InputTokens != (providers.Window{Limit: 80000, Remaining: 0, Reset: 30 * time.Second}) {
					t.Errorf("limits %+v", pe.Limits.InputTokens)
				}
			}
		})
	}
}

func TestRequestIDFromBody(t *testing.T) {
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(500)
		io.WriteString(w, `{"type":"error","error":{"type":"api_error","message":"x"},"request_id":"req_body"}`)
	})
	_, err := send(t, newProvider(srv, false), reqBody)
	if pe := wantClass(t, err, providers.ClassServer); pe.RequestID != "req_body" {
		t.Fatalf("request id %q", pe.RequestID)
	}
}

func TestKeyRedaction(t *testing.T) {
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(401)
		io.WriteString(w, `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key `+key+` (sk-ant-a***wxyz)"},"request_id":"req_1"}`)
	})
	_, err := send(t, newProvider(srv, true), reqBody)
	pe := wantClass(t, err, providers.ClassAuth)
	for _, s := range []string{err.Error(), pe.Message, string(pe.Body)} {
		if strings.Contains(s, key[:8]) || strings.Contains(s, "12345678") {
			t.Errorf("key leaked: %s", s)
		}
		if !strings.Contains(s, "[REDACTED]") {
			t.Errorf("no redaction marker: %s", s)
		}
	}
}

func TestProviderIdentity(t *testing.T) {
	p := New(providers.Config{BaseURL: "https://api.anthropic.com"})
	if p.Name() != "anthropic" || p.Format() != providers.FormatAnthropic || p.BaseURL() != "https://api.anthropic.com" || p.wire.URL != "https://api.anthropic.com/v1/messages" {
		t.Fatalf("%s %v %s %s", p.Name(), p.Format(), p.BaseURL(), p.wire.URL)
	}
	_, err := send(t, p, `{"model"`)
	wantClass(t, err, providers.ClassInvalid)
}
