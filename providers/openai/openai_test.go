package openai

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

	"github.com/llmrun/llmrun/providers"
	"github.com/tidwall/gjson"
)

const key = "sk-abcd1234efgh5678wxyz"

// plainBody is the non-streaming answer equivalent to streamBody (wire-formats §1.2/§1.3).
const plainBody = `{"id":"chatcmpl-MOCK0002","object":"chat.completion","created":1735689600,"model":"gpt-4o-mini-2024-07-18","system_fingerprint":"fp_mock01","choices":[{"index":0,"message":{"role":"assistant","content":"Seven.","refusal":null},"logprobs":null,"finish_reason":"stop"}],"usage":{"prompt_tokens":21,"completion_tokens":2,"total_tokens":23}}`

// streamBody is the exact byte stream of wire-formats §1.3.
const streamBody = `data: {"id":"chatcmpl-MOCK0002","object":"chat.completion.chunk","created":1735689600,"model":"gpt-4o-mini-2024-07-18","system_fingerprint":"fp_mock01","choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}],"usage":null}

data: {"id":"chatcmpl-MOCK0002","object":"chat.completion.chunk","created":1735689600,"model":"gpt-4o-mini-2024-07-18","system_fingerprint":"fp_mock01","choices":[{"index":0,"delta":{"content":"Seven"},"logprobs":null,"finish_reason":null}],"usage":null}

data: {"id":"chatcmpl-MOCK0002","object":"chat.completion.chunk","created":1735689600,"model":"gpt-4o-mini-2024-07-18","system_fingerprint":"fp_mock01","choices":[{"index":0,"delta":{"content":"."},"logprobs":null,"finish_reason":null}],"usage":null}

data: {"id":"chatcmpl-MOCK0002","object":"chat.completion.chunk","created":1735689600,"model":"gpt-4o-mini-2024-07-18","system_fingerprint":"fp_mock01","choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"stop"}],"usage":null}

data: {"id":"chatcmpl-MOCK0002","object":"chat.completion.chunk","created":1735689600,"model":"gpt-4o-mini-2024-07-18","system_fingerprint":"fp_mock01","choices":[],"usage":{"prompt_tokens":21,"completion_tokens":2,"total_tokens":23}}

data: [DONE]

`

const reqBody = `{"model":"gpt-4o-mini","messages":[{"role":"system","content":"You are terse."},{"role":"user","content":"Name a prime number."}],"max_completion_tokens":64}`

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
	return New(providers.Config{BaseURL: srv.URL + "/v1/", APIKey: key, Stream: stream, HTTPClient: srv.Client(),
		FirstByteTimeout: time.Minute, IdleTimeout: time.Minute})
}

func send(t *testing.T, p *Provider, body string) (*providers.Response, error) {
	t.Helper()
	return p.Send(t.Context(), &providers.Request{ID: "r1", Body: []byte(body)})
}

// fakeAPI answers like api.openai.com: plain or streamed by the request's
// stream flag, checking what the provider must send.
func fakeAPI(t *testing.T) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if r.URL.Path != "/v1/chat/completions" || r.Method != http.MethodPost {
			t.Errorf("%s %s", r.Method, r.URL.Path)
		}
		if got := r.Header.Get("Authorization"); got != "Bearer "+key {
			t.Errorf("Authorization %q", got)
		}
		if !gjson.ValidBytes(body) || gjson.GetBytes(body, "model").String() != "gpt-4o-mini" {
			t.Errorf("body %s", body)
		}
		w.Header().Set("x-request-id", "req_abc")
		w.Header().Set("x-ratelimit-limit-tokens", "150000")
		w.Header().Set("x-ratelimit-remaining-tokens", "149984")
		w.Header().Set("x-ratelimit-reset-tokens", "6m0s")
		if gjson.GetBytes(body, "stream").Bool() {
			if !gjson.GetBytes(body, "stream_options.include_usage").Bool() {
				t.Errorf("stream without include_usage: %s", body)
			}
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, streamBody)
			return
		}
		if gjson.GetBytes(body, "stream").Exists() || gjson.GetBytes(body, "stream_options").Exists() {
			t.Errorf("plain request carries stream flags: %s", body)
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, plainBody)
	}
}

func TestSendPlainAndStreamAgree(t *testing.T) {
	srv := newServer(t, fakeAPI(t))
	for _, stream := range []bool{false, true} {
		for _, in := range []string{reqBody, `{"stream":true,"stream_options":{"include_usage":false},` + reqBody[1:]} {
			name := map[bool]string{false: "plain", true: "stream"}[stream]
			t.Run(name, func(t *testing.T) {
				orig := []byte(in)
				req := &providers.Request{Body: orig}
				resp, err := newProvider(srv, stream).Send(t.Context(), req)
				if err != nil {
					t.Fatal(err)
				}
				if string(req.Body) != in {
					t.Fatalf("request body modified: %s", req.Body)
				}
				jsonEqual(t, resp.Body, []byte(plainBody))
				if resp.Text != "Seven." || resp.Model != "gpt-4o-mini-2024-07-18" || resp.RequestID != "req_abc" || resp.Status != 200 {
					t.Errorf("response %+v", resp)
				}
				if resp.Usage != (providers.Usage{InputTokens: 21, OutputTokens: 2}) {
					t.Errorf("usage %+v", resp.Usage)
				}
				if resp.Limits.Tokens != (providers.Window{Limit: 150000, Remaining: 149984, Reset: 6 * time.Minute}) {
					t.Errorf("limits %+v", resp.Limits.Tokens)
				}
			})
		}
	}
}

// TestStreamTTFT uses a clock that advances one second per reading: headers
// are read at t=1 and the first content delta (not the role chunk) at t=2.
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
		t.Fatalf("TTFT %v, want 2s (3 clock reads: start, headers, first token)", resp.TTFT)
	}
}

// sseOf frames chunks as a data-only stream.
func sseOf(chunks ...string) string {
	var b strings.Builder
	for _, c := range chunks {
		b.WriteString("data: " + c + "\n\n")
	}
	return b.String()
}

func TestStreamReassembly(t *testing.T) {
	const head = `"id":"c1","object":"chat.completion.chunk","created":7,"model":"m"`
	tests := map[string]struct {
		stream string
		want   string
		text   string
	}{
		"two choices interleaved, escapes split across chunks": {
			sseOf(
				`{`+head+`,"choices":[{"index":1,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}`,
				`{`+head+`,"choices":[{"index":0,"delta":{"role":"assistant","content":"Line\n"},"logprobs":null,"finish_reason":null}]}`,
				`{`+head+`,"choices":[{"index":1,"delta":{"content":"caf\u00e9 \"q\""},"logprobs":null,"finish_reason":null}]}`,
				`{`+head+`,"choices":[{"index":0,"delta":{"content":"\ud83d"},"logprobs":null,"finish_reason":null}]}`,
				`{`+head+`,"choices":[{"index":0,"delta":{"content":"\ude00 ok"},"logprobs":null,"finish_reason":null}]}`,
				`{`+head+`,"choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"stop"},{"index":1,"delta":{},"logprobs":null,"finish_reason":"length"}]}`,
				`{`+head+`,"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":4,"total_tokens":7}}`,
				`[DONE]`),
			`{"id":"c1","object":"chat.completion","created":7,"model":"m","choices":[
				{"index":0,"message":{"role":"assistant","content":"Line\n😀 ok","refusal":null},"logprobs":null,"finish_reason":"stop"},
				{"index":1,"message":{"role":"assistant","content":"café \"q\"","refusal":null},"logprobs":null,"finish_reason":"length"}],
				"usage":{"prompt_tokens":3,"completion_tokens":4,"total_tokens":7}}`,
			"Line\n😀 ok",
		},
		"tool calls": {
			sseOf(
				`{`+head+`,"choices":[{"index":0,"delta":{"role":"assistant","content":null,"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"get_weather","arguments":""}}]},"logprobs":null,"finish_reason":null}]}`,
				`{`+head+`,"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"ci"}}]},"logprobs":null,"finish_reason":null}]}`,
				`{`+head+`,"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"call_2","type":"function","function":{"name":"now","arguments":"{}"}}]},"logprobs":null,"finish_reason":null}]}`,
				`{`+head+`,"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"ty\":\"Paris\"}"}}]},"logprobs":null,"finish_reason":null}]}`,
				`{`+head+`,"choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"tool_calls"}]}`,
				`[DONE]`),
			`{"id":"c1","object":"chat.completion","created":7,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":null,"refusal":null,
				"tool_calls":[{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}},
				{"id":"call_2","type":"function","function":{"name":"now","arguments":"{}"}}]},"logprobs":null,"finish_reason":"tool_calls"}]}`,
			"",
		},
		"refusal, logprobs, extra string field, service tier": {
			sseOf(
				`{`+head+`,"service_tier":"default","system_fingerprint":null,"choices":[{"index":0,"delta":{"role":"assistant","refusal":"No"},"logprobs":{"content":null,"refusal":[{"token":"No","logprob":-0.1}]},"finish_reason":null}],"obfuscation":"xx"}`,
				`{`+head+`,"service_tier":"default","system_fingerprint":null,"choices":[{"index":0,"delta":{"refusal":".","reasoning_content":"hm"},"logprobs":{"content":null,"refusal":[{"token":".","logprob":-0.2}]},"finish_reason":"stop"}]}`,
				`[DONE]`),
			`{"id":"c1","object":"chat.completion","created":7,"model":"m","service_tier":"default","system_fingerprint":null,"choices":[{"index":0,
				"message":{"role":"assistant","content":null,"refusal":"No.","reasoning_content":"hm"},
				"logprobs":{"content":null,"refusal":[{"token":"No","logprob":-0.1},{"token":".","logprob":-0.2}]},"finish_reason":"stop"}]}`,
			"",
		},
		"comments and keep-alives ignored": {
			": OPENROUTER PROCESSING\n\n" + sseOf(`{`+head+`,"choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":"stop"}]}`) + ": ping\n\n" + sseOf(`[DONE]`),
			`{"id":"c1","object":"chat.completion","created":7,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"hi","refusal":null},"logprobs":null,"finish_reason":"stop"}]}`,
			"hi",
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
			if resp.Text != tc.text {
				t.Errorf("text %q, want %q", resp.Text, tc.text)
			}
		})
	}
}

// TestStreamButJSONAnswer: some compatible servers ignore stream:true.
func TestStreamButJSONAnswer(t *testing.T) {
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		io.WriteString(w, plainBody)
	})
	resp, err := send(t, newProvider(srv, true), reqBody)
	if err != nil {
		t.Fatal(err)
	}
	if string(resp.Body) != plainBody || resp.Text != "Seven." {
		t.Fatalf("resp %+v", resp)
	}
}

func TestStreamFailures(t *testing.T) {
	first := strings.SplitAfter(streamBody, "\n\n")[1]
	tests := map[string]struct {
		handler func(w http.ResponseWriter, r *http.Request)
		class   providers.Class
		typ     string
		msg     string
	}{
		"error event": {
			func(w http.ResponseWriter, r *http.Request) {
				io.WriteString(w, first+`data: {"error":{"message":"The server had an error while processing your request.","type":"server_error","param":null,"code":null}}`+"\n\ndata: [DONE]\n\n")
			}, providers.ClassMidStream, "server_error", "The server had an error",
		},
		"EOF before DONE": {
			func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, first) },
			providers.ClassMidStream, "", "before [DONE]",
		},
		"invalid chunk": {
			func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "data: {\"id\":\n\n") },
			providers.ClassMidStream, "", "not valid JSON",
		},
		"connection cut": {
			func(w http.ResponseWriter, r *http.Request) {
				c, _, _ := w.(http.Hijacker).Hijack()
				defer c.Close()
				io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nx-request-id: req_cut\r\nTransfer-Encoding: chunked\r\n\r\n")
				fmt.Fprintf(c, "%x\r\n%s\r\n", len(first), first) // one chunk, then the close

			},
			providers.ClassMidStream, "", "stream broken",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				w.Header().Set("x-request-id", "req_cut")
				tc.handler(w, r)
			})
			_, err := send(t, newProvider(srv, true), reqBody)
			pe := wantClass(t, err, tc.class)
			if pe.Status != 200 || pe.RequestID != "req_cut" || pe.Type != tc.typ || !strings.Contains(pe.Message, tc.msg) {
				t.Fatalf("error %+v", pe)
			}
		})
	}
}

// TestStreamStopsServer checks every early exit closes the body: the
// server keeps generating until it sees the client go away.
func TestStreamStopsServer(t *testing.T) {
	tests := map[string]struct {
		lead string
		idle time.Duration
		want providers.Class
	}{
		"error event": {`data: {"error":{"message":"boom","type":"server_error"}}` + "\n\n", time.Minute, providers.ClassMidStream},
		"idle":        {"", 30 * time.Millisecond, providers.ClassTimeout},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			gone := make(chan struct{})
			srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
				defer close(gone)
				io.ReadAll(r.Body)
				w.Header().Set("Content-Type", "text/event-stream")
				io.WriteString(w, strings.SplitAfter(streamBody, "\n\n")[0]+tc.lead)
				w.(http.Flusher).Flush()
				if tc.idle > 0 && tc.lead == "" {
					<-r.Context().Done() // silent until the client gives up
					return
				}
				for r.Context().Err() == nil {
					if _, err := io.WriteString(w, strings.SplitAfter(streamBody, "\n\n")[1]); err != nil {
						return
					}
					w.(http.Flusher).Flush()
				}
			})
			p := newProvider(srv, true)
			p.cfg.IdleTimeout = tc.idle
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
	tests := map[string]struct {
		status  int
		header  map[string]string
		body    string
		class   providers.Class
		typ     string
		code    string
		retry   time.Duration // -1: no hint
		limReqs int64
	}{
		"401 invalid key": {401, nil, `{"error":{"message":"Incorrect API key provided: sk-abcd1234***wxyz. You can find your API key at https://platform.openai.com/account/api-keys.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`,
			providers.ClassAuth, "invalid_request_error", "invalid_api_key", -1, -1},
		"403": {403, nil, `{"error":{"message":"Country, region, or territory not supported","type":"request_forbidden","param":null,"code":"unsupported_country_region_territory"}}`,
			providers.ClassAuth, "request_forbidden", "unsupported_country_region_territory", -1, -1},
		"400 context length": {400, nil, `{"error":{"message":"This model's maximum context length is 128000 tokens.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`,
			providers.ClassInvalid, "invalid_request_error", "context_length_exceeded", -1, -1},
		"404 model": {404, nil, `{"error":{"message":"The model does not exist","type":"invalid_request_error","param":null,"code":"model_not_found"}}`,
			providers.ClassInvalid, "invalid_request_error", "model_not_found", -1, -1},
		"429 tokens, retry-after-ms": {429, map[string]string{"retry-after-ms": "800", "x-ratelimit-limit-requests": "60", "x-ratelimit-remaining-requests": "0", "x-ratelimit-reset-requests": "20ms"},
			`{"error":{"message":"Rate limit reached for gpt-4o-mini in organization org-MOCK on tokens per min (TPM): Limit 30000, Used 29500, Requested 900. Please try again in 800ms.","type":"tokens","param":null,"code":"rate_limit_exceeded"}}`,
			providers.ClassRateLimited, "tokens", "rate_limit_exceeded", 800 * time.Millisecond, 60},
		"429 requests, retry-after seconds": {429, map[string]string{"retry-after": "2"}, `{"error":{"message":"Rate limit reached on requests per min (RPM)","type":"requests","param":null,"code":"rate_limit_exceeded"}}`,
			providers.ClassRateLimited, "requests", "rate_limit_exceeded", 2 * time.Second, -1},
		"429 quota": {429, nil, `{"error":{"message":"You exceeded your current quota, please check your plan and billing details.","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}`,
			providers.ClassQuota, "insufficient_quota", "insufficient_quota", -1, -1},
		"429 quota, old null code": {429, nil, `{"error":{"message":"You exceeded your current quota.","type":"insufficient_quota","param":null,"code":null}}`,
			providers.ClassQuota, "insufficient_quota", "", -1, -1},
		"500": {500, nil, `{"error":{"message":"The server had an error while processing your request.","type":"server_error","param":null,"code":null}}`,
			providers.ClassServer, "server_error", "", -1, -1},
		"503 overloaded": {503, map[string]string{"retry-after": "1e30"}, `{"error":{"message":"The engine is currently overloaded","type":"server_error","param":null,"code":null}}`,
			providers.ClassOverloaded, "server_error", "", providers.MaxRetryAfter, -1},
		"502 html": {502, nil, `<html><body>Bad gateway</body></html>`, providers.ClassServer, "", "", -1, -1},
		"vllm shape": {400, nil, `{"object":"error","message":"max_tokens is too large","type":"BadRequestError","param":null,"code":400}`,
			providers.ClassInvalid, "BadRequestError", "400", -1, -1},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("x-request-id", "req_err")
				for k, v := range tc.header {
					w.Header().Set(k, v)
				}
				w.WriteHeader(tc.status)
				io.WriteString(w, tc.body)
			})
			for _, stream := range []bool{false, true} {
				_, err := send(t, newProvider(srv, stream), reqBody)
				pe := wantClass(t, err, tc.class)
				if pe.Status != tc.status || pe.Type != tc.typ || pe.Code != tc.code || pe.RequestID != "req_err" || pe.Message == "" {
					t.Errorf("error %+v", pe)
				}
				if tc.retry >= 0 != pe.HasRetryAfter || (pe.HasRetryAfter && pe.RetryAfter != tc.retry) {
					t.Errorf("retry-after %v %v, want %v", pe.RetryAfter, pe.HasRetryAfter, tc.retry)
				}
				if pe.Limits.Requests.Limit != tc.limReqs {
					t.Errorf("limits %+v", pe.Limits.Requests)
				}
				if len(pe.Body) == 0 {
					t.Error("body not kept")
				}
			}
		})
	}
}

func TestKeyRedaction(t *testing.T) {
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(401)
		io.WriteString(w, `{"error":{"message":"Incorrect API key provided: `+key+`. Also known as sk-abcd1234***wxyz.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`)
	})
	_, err := send(t, newProvider(srv, false), reqBody)
	pe := wantClass(t, err, providers.ClassAuth)
	for _, s := range []string{err.Error(), pe.Message, string(pe.Body)} {
		if strings.Contains(s, key[:8]) || strings.Contains(s, "wxyz") {
			t.Errorf("key leaked: %s", s)
		}
		if !strings.Contains(s, "[REDACTED]") {
			t.Errorf("no redaction marker: %s", s)
		}
	}
}

func TestInvalidRequestBody(t *testing.T) {
	p := New(providers.Config{BaseURL: "http://127.0.0.1:1", APIKey: key})
	_, err := send(t, p, `{"model":`)
	wantClass(t, err, providers.ClassInvalid)
}

func TestProviderIdentity(t *testing.T) {
	p := New(providers.Config{BaseURL: "https://api.openai.com/v1"})
	if p.Name() != "openai" || p.Format() != providers.FormatOpenAI || p.BaseURL() != "https://api.openai.com/v1" || p.wire.URL != "https://api.openai.com/v1/chat/completions" {
		t.Fatalf("%s %v %s %s", p.Name(), p.Format(), p.BaseURL(), p.wire.URL)
	}
	if p.cfg.HTTPClient == nil {
		t.Fatal("no default client")
	}
}
