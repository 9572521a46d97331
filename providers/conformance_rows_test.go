package providers_test

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/tidwall/gjson"

	"github.com/llmrun/llmrun/providers"
	"github.com/llmrun/llmrun/providers/anthropic"
	"github.com/llmrun/llmrun/providers/azure"
	"github.com/llmrun/llmrun/providers/openai"
)

// A row is one provider implementation as the conformance suite
// (conformance_test.go) drives it: a constructor, where it talks, how its
// requests look, its canonical answer plain and streamed, and its error
// vocabulary. A new provider gets every test of the suite, against
// scripted servers and against providers/mock, by adding a row here.
type row struct {
	// name is also what the provider's Name returns; label, when set,
	// names the row's subtests instead (one provider, another endpoint).
	name, label string
	format      providers.Format
	// endpoint is the endpoint the row's requests are for.
	endpoint providers.Endpoint
	// new builds the provider under test.
	new func(providers.Config) providers.Provider
	// basePath turns a server root into the provider's BaseURL (the
	// mock serves every dialect under one root); path is where Send posts,
	// with query as its query string; streamPath and streamQuery are
	// where it posts a streamed request ("" for path and query).
	basePath, path, query, streamPath, streamQuery string
	// streamed reports whether a request asks for a stream; nil reads the
	// body's stream flag (Gemini says it in the URL).
	streamed func(req *http.Request, body []byte) bool
	// auth returns the headers carrying key, exactly as sent; every other
	// credential header must be absent.
	auth func(key string) http.Header
	// requestID names the response header with the request id.
	requestID string
	// body builds a request body of this provider's shape.
	body func(prompt string, maxTokens int) string
	// cached builds a body whose first part, shared, the provider (and
	// the mock) caches: cache_control where the API wants it marked, a
	// long enough prefix where it caches on its own; writes says whether
	// the provider reports cache writes.
	cached func(shared, q string) string
	writes bool
	// flags checks that a sent body carries the stream flags (stream)
	// or none of them.
	flags func(body []byte, stream bool) error

	// The canonical answer: plain, and streamed as a list of complete
	// events (terminator included); events[content] is the first that
	// carries text. want is what both must read as.
	plain   string
	events  []string
	content int
	want    providers.Response // Text, Model, Usage
	// errEvent is an error event after a 200, of type errEventType with
	// errEventMsg; terminator is what a complete stream ends with (named
	// in the error of a stream that ends without it).
	errEvent, errEventType, errEventMsg, terminator string
	// limits are rate-limit headers this provider sends, and checkLimits
	// whether Response.Limits read them right at the suite's clock
	// (2026-01-01T00:00:00Z).
	limits      map[string]string
	checkLimits func(providers.RateLimits) error

	// inputWindow picks the input-token window the mock's ITPM limit
	// shows up in; nil for a provider without rate-limit headers.
	inputWindow func(providers.RateLimits) providers.Window

	// errBody renders an error answer; code "" is the provider's "none".
	// bodyRequestID is the request id errBody carries (used when the
	// header is missing), "" when the format has none.
	errBody       func(typ, code, msg string) string
	bodyRequestID string
	// quota and overloaded are this provider's spend-cap and overload
	// answers; extraErrors its own cases beyond the shared table.
	quota, overloaded errCase
	extraErrors       map[string]errCase
	// streams are wire-specific streams and what they must read as.
	streams map[string]streamCase
	// mockIgnore names body members that may differ between two mock
	// answers to the same request.
	mockIgnore []string
	// bench is a stream of n content tokens in the exact shape the real
	// API sends, for BenchmarkStreamDecode; benchText is its text's start.
	bench     func(n int) []byte
	benchText string
}

// errCase is one non-2xx answer and what the provider must make of it.
type errCase struct {
	status int
	header map[string]string
	body   string
	class  providers.Class
	typ    string
	code   string
	// retry is the expected retry-after; -1 for none.
	retry time.Duration
}

var rows = []row{openAIRow, anthropicRow, azureRow, responsesRow, geminiRow}

// target is where a request is posted, streamed or not: path and query.
func (r row) target(stream bool) (path, query string) {
	if stream && r.streamPath != "" {
		return r.streamPath, r.streamQuery
	}
	return r.path, r.query
}

// events splits an SSE text into its complete events.
func events(s string) []string {
	parts := strings.SplitAfter(s, "\n\n")
	return parts[:len(parts)-1] // the empty tail after the last blank line
}

var openAIRow = row{
	name:     "openai",
	format:   providers.FormatOpenAI,
	new:      func(c providers.Config) providers.Provider { return openai.New(c) },
	basePath: "/v1", path: "/v1/chat/completions",
	auth:      func(key string) http.Header { return http.Header{"Authorization": {"Bearer " + key}} },
	requestID: "x-request-id",
	body: func(prompt string, maxTokens int) string {
		return fmt.Sprintf(`{"model":"gpt-4o-mini","messages":[{"role":"system","content":"You are terse."},{"role":"user","content":%q}],"max_completion_tokens":%d}`, prompt, maxTokens)
	},
	cached: func(shared, q string) string {
		return fmt.Sprintf(`{"model":"gpt-4o-mini","messages":[{"role":"system","content":%q},{"role":"user","content":%q}],"max_completion_tokens":16}`, shared, q)
	},
	flags: func(b []byte, stream bool) error {
		s, o := gjson.GetBytes(b, "stream"), gjson.GetBytes(b, "stream_options")
		switch {
		case stream && (!s.Bool() || !gjson.GetBytes(b, "stream_options.include_usage").Bool()):
			return errors.New("stream without stream_options.include_usage (a stream would carry no usage)")
		case !stream && (s.Exists() || o.Exists()):
			return errors.New("plain request carries stream flags")
		}
		return nil
	},
	// wire-formats §1.2 and §1.3, with a cached prompt.
	plain: `{"id":"chatcmpl-MOCK0002","object":"chat.completion","created":1735689600,"model":"gpt-4o-mini-2024-07-18","system_fingerprint":"fp_mock01","choices":[{"index":0,"message":{"role":"assistant","content":"Seven.","refusal":null},"logprobs":null,"finish_reason":"stop"}],"usage":{"prompt_tokens":2006,"completion_tokens":2,"total_tokens":2008,"prompt_tokens_details":{"cached_tokens":1920,"audio_tokens":0}}}`,
	events: events(`data: {"id":"chatcmpl-MOCK0002","object":"chat.completion.chunk","created":1735689600,"model":"gpt-4o-mini-2024-07-18","system_fingerprint":"fp_mock01","choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}],"usage":null}

data: {"id":"chatcmpl-MOCK0002","object":"chat.completion.chunk","created":1735689600,"model":"gpt-4o-mini-2024-07-18","system_fingerprint":"fp_mock01","choices":[{"index":0,"delta":{"content":"Seven"},"logprobs":null,"finish_reason":null}],"usage":null}

data: {"id":"chatcmpl-MOCK0002","object":"chat.completion.chunk","created":1735689600,"model":"gpt-4o-mini-2024-07-18","system_fingerprint":"fp_mock01","choices":[{"index":0,"delta":{"content":"."},"logprobs":null,"finish_reason":null}],"usage":null}

data: {"id":"chatcmpl-MOCK0002","object":"chat.completion.chunk","created":1735689600,"model":"gpt-4o-mini-2024-07-18","system_fingerprint":"fp_mock01","choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"stop"}],"usage":null}

data: {"id":"chatcmpl-MOCK0002","object":"chat.completion.chunk","created":1735689600,"model":"gpt-4o-mini-2024-07-18","system_fingerprint":"fp_mock01","choices":[],"usage":{"prompt_tokens":2006,"completion_tokens":2,"total_tokens":2008,"prompt_tokens_details":{"cached_tokens":1920,"audio_tokens":0}}}

data: [DONE]

`),
	content:      1,
	want:         providers.Response{Text: "Seven.", Model: "gpt-4o-mini-2024-07-18", Usage: providers.Usage{InputTokens: 2006, OutputTokens: 2, CacheReadTokens: 1920}},
	errEvent:     `data: {"error":{"message":"The server had an error while processing your request.","type":"server_error","param":null,"code":null}}` + "\n\ndata: [DONE]\n\n",
	errEventType: "server_error",
	errEventMsg:  "The server had an error",
	terminator:   "[DONE]",
	inputWindow:  func(l providers.RateLimits) providers.Window { return l.Tokens },
	limits:       map[string]string{"x-ratelimit-limit-tokens": "150000", "x-ratelimit-remaining-tokens": "149984", "x-ratelimit-reset-tokens": "6m0s", "x-ratelimit-limit-requests": "60", "x-ratelimit-remaining-requests": "0", "x-ratelimit-reset-requests": "20ms"},
	checkLimits: func(l providers.RateLimits) error {
		if l.Tokens != (providers.Window{Limit: 150000, Remaining: 149984, Reset: 6 * time.Minute}) || l.Requests != (providers.Window{Limit: 60, Remaining: 0, Reset: 20 * time.Millisecond}) {
			return fmt.Errorf("tokens %+v requests %+v", l.Tokens, l.Requests)
		}
		return nil
	},
	errBody: func(typ, code, msg string) string {
		c := "null"
		if code != "" {
			c = fmt.Sprintf("%q", code)
		}
		return fmt.Sprintf(`{"error":{"message":%q,"type":%q,"param":null,"code":%s}}`, msg, typ, c)
	},
	quota: errCase{429, nil, `{"error":{"message":"You exceeded your current quota, please check your plan and billing details.","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}`,
		providers.ClassQuota, "insufficient_quota", "insufficient_quota", -1},
	overloaded: errCase{503, map[string]string{"retry-after": "1e30"}, `{"error":{"message":"The engine is currently overloaded","type":"server_error","param":null,"code":null}}`,
		providers.ClassOverloaded, "server_error", "", providers.MaxRetryAfter},
	extraErrors: map[string]errCase{
		"429 quota, old null code": {429, nil, `{"error":{"message":"You exceeded your current quota.","type":"insufficient_quota","param":null,"code":null}}`,
			providers.ClassQuota, "insufficient_quota", "", -1},
		"401 invalid key": {401, nil, `{"error":{"message":"Incorrect API key provided: sk-abcd1234***wxyz. You can find your API key at https://platform.openai.com/account/api-keys.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`,
			providers.ClassAuth, "invalid_request_error", "invalid_api_key", -1},
		"403 region": {403, nil, `{"error":{"message":"Country, region, or territory not supported","type":"request_forbidden","param":null,"code":"unsupported_country_region_territory"}}`,
			providers.ClassAuth, "request_forbidden", "unsupported_country_region_territory", -1},
		"400 context length": {400, nil, `{"error":{"message":"This model's maximum context length is 128000 tokens.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`,
			providers.ClassInvalid, "invalid_request_error", "context_length_exceeded", -1},
		"vllm shape": {400, nil, `{"object":"error","message":"max_tokens is too large","type":"BadRequestError","param":null,"code":400}`,
			providers.ClassInvalid, "BadRequestError", "400", -1},
	},
	streams:    openAIStreams,
	mockIgnore: []string{"id", "created", "system_fingerprint"},
	bench:      openAIBench,
	benchText:  " the quick brown fox\n jumps \"over\" café the",
}

var anthropicRow = row{
	name:     "anthropic",
	format:   providers.FormatAnthropic,
	new:      func(c providers.Config) providers.Provider { return anthropic.New(c) },
	basePath: "", path: "/v1/messages",
	auth: func(key string) http.Header {
		return http.Header{"X-Api-Key": {key}, "Anthropic-Version": {"2023-06-01"}}
	},
	requestID: "request-id",
	body: func(prompt string, maxTokens int) string {
		return fmt.Sprintf(`{"model":"claude-sonnet-4-5","max_tokens":%d,"system":"Answer in one word.","messages":[{"role":"user","content":%q}]}`, maxTokens, prompt)
	},
	cached: func(shared, q string) string {
		return fmt.Sprintf(`{"model":"claude-sonnet-4-5","max_tokens":16,"system":[{"type":"text","text":%q,"cache_control":{"type":"ephemeral"}}],"messages":[{"role":"user","content":%q}]}`, shared, q)
	},
	writes: true,
	flags: func(b []byte, stream bool) error {
		if s := gjson.GetBytes(b, "stream"); s.Bool() != stream || (!stream && s.Exists()) {
			return fmt.Errorf("stream flag %s, want stream=%v", s.Raw, stream)
		}
		return nil
	},
	// wire-formats §2.2 and §2.3, with cache reads and writes.
	plain: `{"id":"msg_01MOCK000000000000000002","type":"message","role":"assistant","model":"claude-sonnet-4-5-20250929","content":[{"type":"text","text":"Seven."}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":18,"cache_creation_input_tokens":200,"cache_read_input_tokens":1800,"output_tokens":5}}`,
	events: events(`event: message_start
data: {"type":"message_start","message":{"id":"msg_01MOCK000000000000000002","type":"message","role":"assistant","model":"claude-sonnet-4-5-20250929","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":18,"cache_creation_input_tokens":200,"cache_read_input_tokens":1800,"output_tokens":1}}}

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

`),
	content:       3,
	want:          providers.Response{Text: "Seven.", Model: "claude-sonnet-4-5-20250929", Usage: providers.Usage{InputTokens: 2018, OutputTokens: 5, CacheReadTokens: 1800, CacheWriteTokens: 200}},
	errEvent:      "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"api_error\",\"message\":\"Internal\"}}\n\n",
	errEventType:  "api_error",
	errEventMsg:   "Internal",
	terminator:    "message_stop",
	inputWindow:   func(l providers.RateLimits) providers.Window { return l.InputTokens },
	bodyRequestID: "req_body",
	limits: map[string]string{"anthropic-ratelimit-requests-limit": "1000", "anthropic-ratelimit-requests-remaining": "999", "anthropic-ratelimit-requests-reset": "2999-01-01T00:00:00Z",
		"anthropic-ratelimit-input-tokens-limit": "80000", "anthropic-ratelimit-input-tokens-remaining": "0", "anthropic-ratelimit-input-tokens-reset": "2026-01-01T00:00:30Z"},
	checkLimits: func(l providers.RateLimits) error {
		if l.Requests.Limit != 1000 || l.Requests.Remaining != 999 || l.Requests.Reset <= 0 || l.InputTokens != (providers.Window{Limit: 80000, Remaining: 0, Reset: 30 * time.Second}) {
			return fmt.Errorf("requests %+v input %+v", l.Requests, l.InputTokens)
		}
		return nil
	},
	errBody: func(typ, code, msg string) string {
		details := ""
		if code != "" {
			details = fmt.Sprintf(`,"details":{"error_code":%q}`, code)
		}
		return fmt.Sprintf(`{"type":"error","error":{"type":%q,"message":%q%s},"request_id":"req_body"}`, typ, msg, details)
	},
	quota: errCase{429, nil, `{"type":"error","error":{"type":"rate_limit_error","message":"You have reached your API usage limits ... You will regain access on 2026-09-01 at 00:00 UTC.","details":{"error_code":"enforced_spend_limit_reached"}},"request_id":"req_body"}`,
		providers.ClassQuota, "rate_limit_error", "enforced_spend_limit_reached", -1},
	overloaded: errCase{529, map[string]string{"retry-after-ms": "1500.5"}, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"},"request_id":"req_body"}`,
		providers.ClassOverloaded, "overloaded_error", "", 1500500 * time.Microsecond},
	extraErrors: map[string]errCase{
		"400 spend limit": {400, nil, `{"type":"error","error":{"type":"invalid_request_error","message":"You have reached your specified API usage limits. You will regain access on 2026-09-01 at 00:00 UTC."},"request_id":"req_body"}`,
			providers.ClassQuota, "invalid_request_error", "", -1},
		"402 billing": {402, nil, `{"type":"error","error":{"type":"billing_error","message":"Your credit balance is too low."},"request_id":"req_body"}`,
			providers.ClassQuota, "billing_error", "", -1},
		"500 overloaded type": {500, nil, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"},"request_id":"req_body"}`,
			providers.ClassOverloaded, "overloaded_error", "", -1},
		"429 null details": {429, nil, `{"type":"error","error":{"type":"rate_limit_error","message":"slow down","details":null},"request_id":"req_body"}`,
			providers.ClassRateLimited, "rate_limit_error", "", -1},
	},
	streams:    anthropicStreams,
	mockIgnore: []string{"id"},
	bench:      anthropicBench,
	benchText:  " the quick brown fox\n jumps \"over\" café the",
}

// benchWords are the bench streams' tokens, escaped as the APIs send them.
var benchWords = []string{" the", " quick", " brown", " fox", "\\n", " jumps", " \\\"over\\\"", " caf\\u00e9"}

// openAIBench is a streamed answer of n content tokens in the exact chunk
// shape api.openai.com sends (usage:null on every chunk, obfuscation padding).
func openAIBench(n int) []byte {
	const head = `data: {"id":"chatcmpl-BENCH0001","object":"chat.completion.chunk","created":1735689600,"model":"gpt-4o-mini-2024-07-18","service_tier":"default","system_fingerprint":"fp_mock01","choices":[{"index":0,"delta":{`
	var b strings.Builder
	b.WriteString(head + `"role":"assistant","content":"","refusal":null},"logprobs":null,"finish_reason":null}],"usage":null,"obfuscation":"x"}` + "\n\n")
	for i := range n {
		b.WriteString(head + `"content":"` + benchWords[i%len(benchWords)] + `"},"logprobs":null,"finish_reason":null}],"usage":null,"obfuscation":"abcde"}` + "\n\n")
	}
	b.WriteString(head + `},"logprobs":null,"finish_reason":"stop"}],"usage":null}` + "\n\n")
	fmt.Fprintf(&b, `data: {"id":"chatcmpl-BENCH0001","object":"chat.completion.chunk","created":1735689600,"model":"gpt-4o-mini-2024-07-18","system_fingerprint":"fp_mock01","choices":[],"usage":{"prompt_tokens":21,"completion_tokens":%d,"total_tokens":%d}}`+"\n\ndata: [DONE]\n\n", n, n+21)
	return []byte(b.String())
}

// anthropicBench is a streamed answer of n text deltas in the exact event
// shape api.anthropic.com sends, with a ping every 100 deltas.
func anthropicBench(n int) []byte {
	var b strings.Builder
	b.WriteString(`event: message_start
data: {"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"claude-x","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":10,"cache_creation_input_tokens":100,"cache_read_input_tokens":1000,"output_tokens":1,"service_tier":"standard"}}}

`)
	b.WriteString("event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n")
	for i := range n {
		if i%100 == 0 {
			b.WriteString("event: ping\ndata: {\"type\": \"ping\"}\n\n")
		}
		b.WriteString("event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"" + benchWords[i%len(benchWords)] + "\"}}\n\n")
	}
	b.WriteString("event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n")
	fmt.Fprintf(&b, "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\",\"stop_sequence\":null},\"usage\":{\"output_tokens\":%d}}\n\n", n)
	b.WriteString("event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n")
	return []byte(b.String())
}

// azureFilter is Azure's content filter result for text that passed.
const azureFilter = `{"hate":{"filtered":false,"severity":"safe"},"self_harm":{"filtered":false,"severity":"safe"},"sexual":{"filtered":false,"severity":"safe"},"violence":{"filtered":false,"severity":"safe"}}`

// azureRow is Azure OpenAI at a classic deployment URL (wire-formats §6):
// OpenAI's bodies with the api-key header, the api-version in the query,
// a stream that opens with a filter-only chunk whose id, model and created
// are empty, content filter results on every choice, and its own error
// bodies (429 code "429" with the wait in the message, the content filter).
var azureRow = func() row {
	r := openAIRow
	r.name = "azure"
	r.new = func(c providers.Config) providers.Provider { return azure.New(c) }
	r.basePath, r.path, r.query = "/openai/deployments/dep1?api-version=2024-10-21", "/openai/deployments/dep1/chat/completions", "api-version=2024-10-21"
	r.auth = func(key string) http.Header { return http.Header{"Api-Key": {key}} }
	r.plain = `{"choices":[{"content_filter_results":` + azureFilter + `,"finish_reason":"stop","index":0,"logprobs":null,"message":{"content":"Seven.","refusal":null,"role":"assistant"}}],"created":1735689600,"id":"chatcmpl-AZ0002","model":"gpt-4o-mini-2024-07-18","object":"chat.completion","prompt_filter_results":[{"prompt_index":0,"content_filter_results":` + azureFilter + `}],"system_fingerprint":"fp_az01","usage":{"completion_tokens":2,"prompt_tokens":21,"total_tokens":23}}`
	r.events = events(sseOf(
		`{"choices":[],"created":0,"id":"","model":"","object":"","prompt_filter_results":[{"prompt_index":0,"content_filter_results":`+azureFilter+`}]}`,
		`{"choices":[{"content_filter_results":{},"delta":{"content":"","refusal":null,"role":"assistant"},"finish_reason":null,"index":0,"logprobs":null}],"created":1735689600,"id":"chatcmpl-AZ0002","model":"gpt-4o-mini-2024-07-18","object":"chat.completion.chunk","system_fingerprint":"fp_az01","usage":null}`,
		`{"choices":[{"content_filter_results":`+azureFilter+`,"delta":{"content":"Seven"},"finish_reason":null,"index":0,"logprobs":null}],"created":1735689600,"id":"chatcmpl-AZ0002","model":"gpt-4o-mini-2024-07-18","object":"chat.completion.chunk","system_fingerprint":"fp_az01","usage":null}`,
		`{"choices":[{"content_filter_results":`+azureFilter+`,"delta":{"content":"."},"finish_reason":null,"index":0,"logprobs":null}],"created":1735689600,"id":"chatcmpl-AZ0002","model":"gpt-4o-mini-2024-07-18","object":"chat.completion.chunk","system_fingerprint":"fp_az01","usage":null}`,
		`{"choices":[{"content_filter_results":{},"delta":{},"finish_reason":"stop","index":0,"logprobs":null}],"created":1735689600,"id":"chatcmpl-AZ0002","model":"gpt-4o-mini-2024-07-18","object":"chat.completion.chunk","system_fingerprint":"fp_az01","usage":null}`,
		`{"choices":[],"created":1735689600,"id":"chatcmpl-AZ0002","model":"gpt-4o-mini-2024-07-18","object":"chat.completion.chunk","system_fingerprint":"fp_az01","usage":{"completion_tokens":2,"prompt_tokens":21,"total_tokens":23}}`,
		`[DONE]`))
	r.content = 2
	r.want.Usage = providers.Usage{InputTokens: 21, OutputTokens: 2}
	// Azure sends the remaining-only pair most of the time.
	r.limits = map[string]string{"x-ratelimit-remaining-tokens": "149984", "x-ratelimit-remaining-requests": "0", "x-ratelimit-limit-tokens": "150000", "x-ratelimit-limit-requests": "60", "x-ratelimit-reset-tokens": "6m0s", "x-ratelimit-reset-requests": "20ms"}
	r.extraErrors = map[string]errCase{
		"400 content filter": {400, nil, `{"error":{"message":"The response was filtered due to the prompt triggering Azure OpenAI's content management policy.","type":null,"param":"prompt","code":"content_filter","status":400,"innererror":{"code":"ResponsibleAIPolicyViolation","content_filter_result":{"hate":{"filtered":false,"severity":"safe"},"sexual":{"filtered":true,"severity":"high"}}}}}`,
			providers.ClassInvalid, "", "content_filter", -1},
		"429 wait in the message": {429, nil, `{"error":{"code":"429","message":"Requests to the ChatCompletions_Create Operation under Azure OpenAI API version 2024-10-21 have exceeded token rate limit of your current OpenAI S0 pricing tier. Please retry after 6 seconds."}}`,
			providers.ClassRateLimited, "", "429", 6 * time.Second},
		"401 subscription key": {401, nil, `{"error":{"code":"401","message":"Access denied due to invalid subscription key or wrong API endpoint."}}`,
			providers.ClassAuth, "", "401", -1},
		"404 no api-version": {404, nil, `{"error":{"code":"404","message":"Resource not found"}}`,
			providers.ClassInvalid, "", "404", -1},
	}
	r.streams = azureStreams
	r.bench = azureBench
	return r
}()

// azureStreams: what Azure's streams add to OpenAI's.
var azureStreams = map[string]streamCase{
	"output filtered: a result, not an error": okUsage(sseOf(
		`{"choices":[],"created":0,"id":"","model":"","object":"","prompt_filter_results":[{"prompt_index":0,"content_filter_results":{}}]}`,
		`{"choices":[{"content_filter_results":{},"delta":{"content":"","role":"assistant"},"finish_reason":null,"index":0}],"created":7,"id":"c1","model":"m","object":"chat.completion.chunk"}`,
		`{"choices":[{"content_filter_results":{"violence":{"filtered":false,"severity":"low"}},"delta":{"content":"Par"},"finish_reason":null,"index":0}],"created":7,"id":"c1","model":"m","object":"chat.completion.chunk"}`,
		`{"choices":[{"content_filter_results":{"violence":{"filtered":true,"severity":"medium"}},"delta":{},"finish_reason":"content_filter","index":0}],"created":7,"id":"c1","model":"m","object":"chat.completion.chunk"}`,
		`{"choices":[],"created":7,"id":"c1","model":"m","object":"chat.completion.chunk","usage":{"prompt_tokens":5,"completion_tokens":1,"total_tokens":6}}`,
		`[DONE]`),
		`{"id":"c1","object":"chat.completion","created":7,"model":"m","prompt_filter_results":[{"prompt_index":0,"content_filter_results":{}}],"choices":[{"index":0,"message":{"role":"assistant","content":"Par","refusal":null},"logprobs":null,"finish_reason":"content_filter","content_filter_results":{"violence":{"filtered":true,"severity":"medium"}}}],"usage":{"prompt_tokens":5,"completion_tokens":1,"total_tokens":6}}`,
		"Par", providers.Usage{InputTokens: 5, OutputTokens: 1}),
}

// azureBench is openAIBench as Azure sends it: a filter-only chunk first
// and content filter results on every chunk.
func azureBench(n int) []byte {
	const head = `data: {"choices":[{"content_filter_results":` + azureFilter + `,"delta":{`
	const tail = `"created":1735689600,"id":"chatcmpl-BENCH0001","model":"gpt-4o-mini-2024-07-18","object":"chat.completion.chunk","system_fingerprint":"fp_az01","usage":null}` + "\n\n"
	var b strings.Builder
	b.WriteString(`data: {"choices":[],"created":0,"id":"","model":"","object":"","prompt_filter_results":[{"prompt_index":0,"content_filter_results":` + azureFilter + `}]}` + "\n\n")
	b.WriteString(`data: {"choices":[{"content_filter_results":{},"delta":{"role":"assistant","content":"","refusal":null},"finish_reason":null,"index":0,"logprobs":null}],` + tail)
	for i := range n {
		b.WriteString(head + `"content":"` + benchWords[i%len(benchWords)] + `"},"finish_reason":null,"index":0,"logprobs":null}],` + tail)
	}
	b.WriteString(`data: {"choices":[{"content_filter_results":{},"delta":{},"finish_reason":"stop","index":0,"logprobs":null}],` + tail)
	fmt.Fprintf(&b, `data: {"choices":[],"created":1735689600,"id":"chatcmpl-BENCH0001","model":"gpt-4o-mini-2024-07-18","object":"chat.completion.chunk","usage":{"prompt_tokens":21,"completion_tokens":%d,"total_tokens":%d}}`+"\n\ndata: [DONE]\n\n", n, n+21)
	return []byte(b.String())
}

// respObj is a Responses API response object (wire-formats §7.2) with
// status, output items and usage as raw JSON.
func respObj(status, output, usage string) string {
	return `{"id":"resp_MOCK0002","object":"response","created_at":1735689600,"status":"` + status + `","error":null,"incomplete_details":null,"model":"gpt-4.1-mini-2025-04-14","output":` + output + `,"usage":` + usage + `}`
}

const (
	respMsg   = `{"type":"message","id":"msg_MOCK0002","status":"completed","role":"assistant","content":[{"type":"output_text","text":"Seven.","annotations":[]}]}`
	respUsage = `{"input_tokens":2006,"input_tokens_details":{"cached_tokens":1920,"cache_write_tokens":0},"output_tokens":2,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":2008}`
	respIdx   = `"item_id":"msg_MOCK0002","output_index":0,"content_index":0`
)

// responsesRow is the OpenAI Responses API (wire-formats §7): typed events
// with event: lines and sequence numbers, no [DONE], the whole response in
// the terminal event; mid-stream failures as error events (nested, as
// captured) or response.failed.
var responsesRow = func() row {
	r := openAIRow
	r.label, r.endpoint, r.path = "openai-responses", providers.EndpointResponses, "/v1/responses"
	r.body = func(prompt string, maxTokens int) string {
		return fmt.Sprintf(`{"model":"gpt-4.1-mini","instructions":"You are terse.","input":%q,"max_output_tokens":%d,"store":false}`, prompt, max(maxTokens, 16))
	}
	r.flags = func(b []byte, stream bool) error {
		s := gjson.GetBytes(b, "stream")
		switch {
		case stream && (!s.Bool() || gjson.GetBytes(b, "stream_options.include_usage").Exists()):
			return errors.New("stream without stream:true, or with Chat's include_usage (the Responses API rejects it)")
		case !stream && (s.Exists() || gjson.GetBytes(b, "stream_options").Exists()):
			return errors.New("plain request carries stream flags")
		}
		return nil
	}
	r.cached = func(shared, q string) string {
		return fmt.Sprintf(`{"model":"gpt-4.1-mini","instructions":%q,"input":%q,"max_output_tokens":16}`, shared, q)
	}
	r.plain = respObj("completed", "["+respMsg+"]", respUsage)
	r.events = events(sseEvents(
		"response.created", `{"type":"response.created","sequence_number":0,"response":`+respObj("in_progress", "[]", "null")+`}`,
		"response.in_progress", `{"type":"response.in_progress","sequence_number":1,"response":`+respObj("in_progress", "[]", "null")+`}`,
		"response.output_item.added", `{"type":"response.output_item.added","sequence_number":2,"output_index":0,"item":{"type":"message","id":"msg_MOCK0002","status":"in_progress","role":"assistant","content":[]}}`,
		"response.content_part.added", `{"type":"response.content_part.added","sequence_number":3,`+respIdx+`,"part":{"type":"output_text","text":"","annotations":[]}}`,
		"response.output_text.delta", `{"type":"response.output_text.delta","sequence_number":4,`+respIdx+`,"delta":"Sev","logprobs":[],"obfuscation":"ab"}`,
		"response.output_text.delta", `{"type":"response.output_text.delta","sequence_number":5,`+respIdx+`,"delta":"en.","logprobs":[]}`,
		"response.output_text.done", `{"type":"response.output_text.done","sequence_number":6,`+respIdx+`,"text":"Seven.","logprobs":[]}`,
		"response.content_part.done", `{"type":"response.content_part.done","sequence_number":7,`+respIdx+`,"part":{"type":"output_text","text":"Seven.","annotations":[]}}`,
		"response.output_item.done", `{"type":"response.output_item.done","sequence_number":8,"output_index":0,"item":`+respMsg+`}`,
		"response.completed", `{"type":"response.completed","sequence_number":9,"response":`+r.plain+`}`,
	))
	r.content = 4
	r.want = providers.Response{Text: "Seven.", Model: "gpt-4.1-mini-2025-04-14", Usage: providers.Usage{InputTokens: 2006, OutputTokens: 2, CacheReadTokens: 1920}}
	r.errEvent = "event: error\ndata: " + `{"type":"error","sequence_number":6,"error":{"type":"server_error","code":"server_error","message":"The server had an error while processing your request.","param":null}}` + "\n\n"
	r.terminator = "response.completed"
	r.streams = responsesStreams
	r.mockIgnore = []string{"id", "created_at"}
	r.bench = responsesBench
	return r
}()

// responsesStreams: the other endings of a Responses stream.
var responsesStreams = map[string]streamCase{
	"incomplete at max_output_tokens: a result": okUsage(sseEvents(
		"response.created", `{"type":"response.created","sequence_number":0,"response":`+respObj("in_progress", "[]", "null")+`}`,
		"response.output_text.delta", `{"type":"response.output_text.delta","sequence_number":1,`+respIdx+`,"delta":"Sev"}`,
		"response.incomplete", `{"type":"response.incomplete","sequence_number":2,"response":`+respObj("incomplete", `[{"type":"message","id":"m","status":"incomplete","role":"assistant","content":[{"type":"output_text","text":"Sev","annotations":[]}]}]`, `{"input_tokens":5,"output_tokens":16,"total_tokens":21}`)+`}`),
		respObj("incomplete", `[{"type":"message","id":"m","status":"incomplete","role":"assistant","content":[{"type":"output_text","text":"Sev","annotations":[]}]}]`, `{"input_tokens":5,"output_tokens":16,"total_tokens":21}`),
		"Sev", providers.Usage{InputTokens: 5, OutputTokens: 16}),
	"reasoning first, two messages, unknown events and no event lines": ok(sseEvents(
		"", `{"type":"response.created","sequence_number":0,"response":`+respObj("in_progress", "[]", "null")+`}`,
		"", `{"type":"response.reasoning_summary_text.delta","sequence_number":1,"delta":"thinking"}`,
		"", `{"type":"response.some_future_event","sequence_number":2}`,
		"", `{"type":"response.completed","sequence_number":3,"response":`+respObj("completed", `[{"type":"reasoning","id":"rs","summary":[]},{"type":"message","id":"a","role":"assistant","content":[{"type":"output_text","text":"one "},{"type":"refusal","refusal":"no"}]},{"type":"message","id":"b","role":"assistant","content":[{"type":"output_text","text":"two"}]}]`, `{"input_tokens":1,"output_tokens":2,"total_tokens":3}`)+`}`),
		respObj("completed", `[{"type":"reasoning","id":"rs","summary":[]},{"type":"message","id":"a","role":"assistant","content":[{"type":"output_text","text":"one "},{"type":"refusal","refusal":"no"}]},{"type":"message","id":"b","role":"assistant","content":[{"type":"output_text","text":"two"}]}]`, `{"input_tokens":1,"output_tokens":2,"total_tokens":3}`),
		"one two"),
	"flat error event (the spec's shape)": {stream: sseEvents(
		"response.created", `{"type":"response.created","sequence_number":0,"response":`+respObj("in_progress", "[]", "null")+`}`,
		"response.output_text.delta", `{"type":"response.output_text.delta","sequence_number":1,`+respIdx+`,"delta":"Sev"}`,
		"error", `{"type":"error","sequence_number":2,"code":"rate_limit_exceeded","message":"Too many tokens","param":null}`),
		msg: "Too many tokens", reqID: "req_hdr"},
	"response.failed": {stream: sseEvents(
		"response.created", `{"type":"response.created","sequence_number":0,"response":`+respObj("in_progress", "[]", "null")+`}`,
		"response.failed", `{"type":"response.failed","sequence_number":1,"response":{"id":"resp_1","status":"failed","error":{"code":"server_error","message":"The model crashed"},"output":[],"usage":null}}`),
		msg: "The model crashed", reqID: "req_hdr"},
	"a chat completions stream is not this API's": {stream: sseOf(`{"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"hi"}}]}`, `[DONE]`),
		msg: "not valid JSON", reqID: "req_hdr"},
}

// responsesBench is a Responses stream of n text deltas in the exact event
// shape api.openai.com sends (obfuscation padding on every delta), with
// the done events and the terminal response repeating the whole text.
func responsesBench(n int) []byte {
	var b, text strings.Builder
	ev := func(typ, data string) { b.WriteString("event: " + typ + "\ndata: " + data + "\n\n") }
	obj := func(status, output, usage string) string {
		return `{"id":"resp_BENCH0001","object":"response","created_at":1735689600,"status":"` + status + `","background":false,"error":null,"incomplete_details":null,"instructions":null,"max_output_tokens":null,"model":"gpt-4.1-mini-2025-04-14","output":` + output + `,"parallel_tool_calls":true,"store":false,"temperature":1.0,"text":{"format":{"type":"text"},"verbosity":"medium"},"tool_choice":"auto","tools":[],"top_p":1.0,"truncation":"disabled","usage":` + usage + `}`
	}
	ev("response.created", `{"type":"response.created","sequence_number":0,"response":`+obj("in_progress", "[]", "null")+`}`)
	ev("response.in_progress", `{"type":"response.in_progress","sequence_number":1,"response":`+obj("in_progress", "[]", "null")+`}`)
	ev("response.output_item.added", `{"type":"response.output_item.added","sequence_number":2,"output_index":0,"item":{"id":"msg_BENCH0001","type":"message","status":"in_progress","content":[],"role":"assistant"}}`)
	ev("response.content_part.added", `{"type":"response.content_part.added","sequence_number":3,"item_id":"msg_BENCH0001","output_index":0,"content_index":0,"part":{"type":"output_text","annotations":[],"logprobs":[],"text":""}}`)
	for i := range n {
		w := benchWords[i%len(benchWords)]
		text.WriteString(w)
		ev("response.output_text.delta", fmt.Sprintf(`{"type":"response.output_text.delta","sequence_number":%d,"item_id":"msg_BENCH0001","output_index":0,"content_index":0,"delta":"%s","logprobs":[],"obfuscation":"abcde"}`, 4+i, w))
	}
	t := text.String()
	msg := `{"id":"msg_BENCH0001","type":"message","status":"completed","content":[{"type":"output_text","annotations":[],"logprobs":[],"text":"` + t + `"}],"role":"assistant"}`
	ev("response.output_text.done", fmt.Sprintf(`{"type":"response.output_text.done","sequence_number":%d,"item_id":"msg_BENCH0001","output_index":0,"content_index":0,"text":"%s","logprobs":[]}`, n+4, t))
	ev("response.content_part.done", fmt.Sprintf(`{"type":"response.content_part.done","sequence_number":%d,"item_id":"msg_BENCH0001","output_index":0,"content_index":0,"part":{"type":"output_text","annotations":[],"logprobs":[],"text":"%s"}}`, n+5, t))
	ev("response.output_item.done", fmt.Sprintf(`{"type":"response.output_item.done","sequence_number":%d,"output_index":0,"item":%s}`, n+6, msg))
	ev("response.completed", fmt.Sprintf(`{"type":"response.completed","sequence_number":%d,"response":%s}`, n+7,
		obj("completed", "["+msg+"]", fmt.Sprintf(`{"input_tokens":21,"input_tokens_details":{"cached_tokens":0},"output_tokens":%d,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":%d}`, n, n+21))))
	return []byte(b.String())
}
