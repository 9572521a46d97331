package providers_test

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/tidwall/gjson"

	"github.com/llmrun/llmrun/providers"
	"github.com/llmrun/llmrun/providers/gemini"
)

// The Gemini row of the conformance suite (wire-formats §5): the model in
// the URL, streaming chosen by the URL (alt=sse), CRLF-framed data-only
// events without a terminator, google.rpc Status errors with their retry
// hint in the body, and no rate-limit headers.

// crlfEvents frames chunks as Gemini's front end does: one data: line per
// event, each ended by a blank line, all with CRLF line ends.
func crlfEvents(chunks ...string) []string {
	out := make([]string, len(chunks))
	for i, c := range chunks {
		out[i] = "data: " + c + "\r\n\r\n"
	}
	return out
}

// geminiStatus renders a google.rpc Status body.
func geminiStatus(code int, status, msg, details string) string {
	d := ""
	if details != "" {
		d = `,"details":[` + details + `]`
	}
	return fmt.Sprintf(`{"error":{"code":%d,"message":%q,"status":%q%s}}`, code, msg, status, d)
}

const (
	gmQuotaFailure = `{"@type":"type.googleapis.com/google.rpc.QuotaFailure","violations":[{"quotaMetric":"generativelanguage.googleapis.com/generate_content_paid_tier_input_token_count","quotaId":"GenerateContentPaidTierInputTokensPerModelPerMinute","quotaDimensions":{"location":"global","model":"gemini-2.5-pro"},"quotaValue":"2000000"}]}`
	gmHelp         = `{"@type":"type.googleapis.com/google.rpc.Help","links":[{"description":"Learn more about Gemini API quotas","url":"https://ai.google.dev/gemini-api/docs/rate-limits"}]}`
	gmNoQuota      = `{"@type":"type.googleapis.com/google.rpc.QuotaFailure","violations":[{"quotaMetric":"generativelanguage.googleapis.com/generate_content_free_tier_requests","quotaId":"GenerateRequestsPerMinutePerProjectPerModel-FreeTier","quotaDimensions":{"location":"global","model":"gemini-2.5-pro"},"quotaValue":"0"}]}`
)

func gmRetry(d string) string {
	return `{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"` + d + `"}`
}

const gmPath = "/v1beta/models/gemini-2.5-flash"

var geminiRow = row{
	name:     "gemini",
	format:   providers.FormatGemini,
	new:      func(c providers.Config) providers.Provider { return gemini.New(c) },
	basePath: "/v1beta", path: gmPath + ":generateContent", streamPath: gmPath + ":streamGenerateContent", streamQuery: "alt=sse",
	streamed: func(req *http.Request, _ []byte) bool {
		return strings.HasSuffix(req.URL.Path, ":streamGenerateContent") && req.URL.Query().Get("alt") == "sse"
	},
	auth:      func(key string) http.Header { return http.Header{"X-Goog-Api-Key": {key}} },
	requestID: "x-request-id",
	body: func(prompt string, maxTokens int) string {
		return fmt.Sprintf(`{"model":"gemini-2.5-flash","systemInstruction":{"parts":[{"text":"You are terse."}]},"contents":[{"role":"user","parts":[{"text":%q}]}],"generationConfig":{"maxOutputTokens":%d}}`, prompt, maxTokens)
	},
	cached: func(shared, q string) string {
		return fmt.Sprintf(`{"model":"gemini-2.5-flash","systemInstruction":{"parts":[{"text":%q}]},"contents":[{"role":"user","parts":[{"text":%q}]}],"generationConfig":{"maxOutputTokens":16}}`, shared, q)
	},
	flags: func(b []byte, _ bool) error {
		for _, k := range []string{"model", "stream", "stream_options"} {
			if gjson.GetBytes(b, k).Exists() {
				return errors.New("body carries " + k + " (the URL says it)")
			}
		}
		return nil
	},
	// wire-formats §5.3 and §5.4, with implicit caching.
	plain: `{"candidates":[{"content":{"parts":[{"text":"Seven."}],"role":"model"},"finishReason":"STOP","index":0}],"usageMetadata":{"promptTokenCount":2006,"candidatesTokenCount":2,"totalTokenCount":2008,"cachedContentTokenCount":1920,"promptTokensDetails":[{"modality":"TEXT","tokenCount":2006}]},"modelVersion":"gemini-2.5-flash","responseId":"MOCKresp02"}`,
	events: crlfEvents(
		`{"candidates":[{"content":{"parts":[{"text":"Sev"}],"role":"model"},"index":0}],"usageMetadata":{"promptTokenCount":2006,"totalTokenCount":2006,"promptTokensDetails":[{"modality":"TEXT","tokenCount":2006}]},"modelVersion":"gemini-2.5-flash","responseId":"MOCKresp02"}`,
		`{"candidates":[{"content":{"parts":[{"text":"en."}],"role":"model"},"finishReason":"STOP","index":0}],"usageMetadata":{"promptTokenCount":2006,"candidatesTokenCount":2,"totalTokenCount":2008,"cachedContentTokenCount":1920,"promptTokensDetails":[{"modality":"TEXT","tokenCount":2006}]},"modelVersion":"gemini-2.5-flash","responseId":"MOCKresp02"}`,
	),
	content:      0,
	want:         providers.Response{Text: "Seven.", Model: "gemini-2.5-flash", Usage: providers.Usage{InputTokens: 2006, OutputTokens: 2, CacheReadTokens: 1920}},
	errEvent:     "data: " + geminiStatus(500, "INTERNAL", "Internal error encountered.", "") + "\r\n\r\n",
	errEventType: "INTERNAL",
	errEventMsg:  "Internal error",
	terminator:   "a finishReason",
	// Gemini sends no rate-limit headers: only what the fixtures set is read.
	limits: map[string]string{"x-ratelimit-limit-requests": "60", "x-ratelimit-remaining-requests": "59", "x-ratelimit-reset-requests": "1s"},
	checkLimits: func(l providers.RateLimits) error {
		if l.Requests != (providers.Window{Limit: 60, Remaining: 59, Reset: time.Second}) {
			return fmt.Errorf("requests %+v", l.Requests)
		}
		return nil
	},
	errBody: func(typ, code, msg string) string {
		details := ""
		if code != "" {
			details = fmt.Sprintf(`{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":%q,"domain":"googleapis.com"}`, code)
		}
		d := ""
		if details != "" {
			d = `,"details":[` + details + `]`
		}
		return fmt.Sprintf(`{"error":{"message":%q,"status":%q%s}}`, msg, typ, d)
	},
	quota: errCase{429, nil, geminiStatus(429, "RESOURCE_EXHAUSTED", "You exceeded your current quota, please check your plan and billing details. Quota exceeded for metric: generativelanguage.googleapis.com/generate_content_free_tier_requests, limit: 0", gmNoQuota+","+gmHelp+","+gmRetry("12s")),
		providers.ClassQuota, "RESOURCE_EXHAUSTED", "", 12 * time.Second},
	overloaded: errCase{503, nil, geminiStatus(503, "UNAVAILABLE", "The model is overloaded. Please try again later.", ""),
		providers.ClassOverloaded, "UNAVAILABLE", "", -1},
	extraErrors: map[string]errCase{
		"429 quota with RetryInfo": {429, nil, geminiStatus(429, "RESOURCE_EXHAUSTED", "You exceeded your current quota, please check your plan and billing details.", gmQuotaFailure+","+gmHelp+","+gmRetry("38s")),
			providers.ClassRateLimited, "RESOURCE_EXHAUSTED", "", 38 * time.Second},
		"429 RetryInfo beats a proxy's header": {429, map[string]string{"retry-after": "5"}, geminiStatus(429, "RESOURCE_EXHAUSTED", "Resource exhausted.", gmRetry("1.5s")),
			providers.ClassRateLimited, "RESOURCE_EXHAUSTED", "", 1500 * time.Millisecond},
		"429 without details": {429, nil, geminiStatus(429, "RESOURCE_EXHAUSTED", "Resource has been exhausted (e.g. check quota).", ""),
			providers.ClassRateLimited, "RESOURCE_EXHAUSTED", "", -1},
		"429 per day drops its retryDelay": {429, nil, geminiStatus(429, "RESOURCE_EXHAUSTED", "You exceeded your current quota.",
			`{"@type":"type.googleapis.com/google.rpc.QuotaFailure","violations":[{"quotaMetric":"generativelanguage.googleapis.com/generate_content_free_tier_requests","quotaId":"GenerateRequestsPerDayPerProjectPerModel-FreeTier","quotaValue":"250"}]},`+gmRetry("21s")),
			providers.ClassRateLimited, "RESOURCE_EXHAUSTED", "", -1},
		"400 bad key": {400, nil, geminiStatus(400, "INVALID_ARGUMENT", "API key not valid. Please pass a valid API key.",
			`{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"API_KEY_INVALID","domain":"googleapis.com","metadata":{"service":"generativelanguage.googleapis.com"}}`),
			providers.ClassAuth, "INVALID_ARGUMENT", "API_KEY_INVALID", -1},
		"400 region": {400, nil, geminiStatus(400, "FAILED_PRECONDITION", "User location is not supported for the API use.", ""),
			providers.ClassAuth, "FAILED_PRECONDITION", "", -1},
		"400 invalid argument": {400, nil, geminiStatus(400, "INVALID_ARGUMENT", `Invalid JSON payload received. Unknown name "foo": Cannot find field.`, ""),
			providers.ClassInvalid, "INVALID_ARGUMENT", "", -1},
		"403 permission": {403, nil, geminiStatus(403, "PERMISSION_DENIED", "You do not have permission to access tuned model tunedModels/x.", ""),
			providers.ClassAuth, "PERMISSION_DENIED", "", -1},
		"500 internal": {500, nil, geminiStatus(500, "INTERNAL", "An internal error has occurred.", ""),
			providers.ClassServer, "INTERNAL", "", -1},
		"503 with RetryInfo": {503, nil, geminiStatus(503, "UNAVAILABLE", "The service is currently unavailable.", gmRetry("2s")),
			providers.ClassOverloaded, "UNAVAILABLE", "", 2 * time.Second},
		"504 deadline": {504, nil, geminiStatus(504, "DEADLINE_EXCEEDED", "Deadline expired before operation could complete.", ""),
			providers.ClassServer, "DEADLINE_EXCEEDED", "", -1},
		"error in an array": {429, nil, "[" + geminiStatus(429, "RESOURCE_EXHAUSTED", "Resource exhausted.", gmRetry("3s")) + "]",
			providers.ClassRateLimited, "RESOURCE_EXHAUSTED", "", 3 * time.Second},
	},
	streams:    geminiStreams,
	mockIgnore: []string{"responseId"},
	bench:      geminiBench,
	benchText:  " the quick brown fox\n jumps \"over\" café the",
}

// gmUsage is a usageMetadata with the given counters.
func gmUsage(prompt, cands, thoughts, cached int) string {
	return fmt.Sprintf(`"usageMetadata":{"promptTokenCount":%d,"candidatesTokenCount":%d,"thoughtsTokenCount":%d,"cachedContentTokenCount":%d,"totalTokenCount":%d}`,
		prompt, cands, thoughts, cached, prompt+cands+thoughts)
}

// geminiStreams: thoughts and their signature, escapes and surrogate
// pairs split across chunks, several candidates, running usage, function
// calls, and the failures of a stream without a terminator.
var geminiStreams = map[string]streamCase{
	"thoughts, answer and signature; running usage, last wins": okUsage(
		strings.Join(crlfEvents(
			`{"candidates":[{"content":{"parts":[{"text":"Let me \"think\".\n","thought":true}],"role":"model"},"index":0}],`+gmUsage(9, 0, 5, 0)+`,"modelVersion":"gemini-2.5-pro","responseId":"r1"}`,
			`{"candidates":[{"content":{"parts":[{"text":"Done.","thought":true}],"role":"model"},"index":0}],`+gmUsage(9, 0, 8, 0)+`,"modelVersion":"gemini-2.5-pro","responseId":"r1"}`,
			`{"candidates":[{"content":{"parts":[{"text":"caf\u00e9 \ud83d"}],"role":"model"},"index":0}],`+gmUsage(9, 2, 8, 0)+`,"modelVersion":"gemini-2.5-pro","responseId":"r1"}`,
			`{"candidates":[{"content":{"parts":[{"text":"\ude00\n"}],"role":"model"},"index":0}],`+gmUsage(9, 3, 8, 0)+`,"modelVersion":"gemini-2.5-pro","responseId":"r1"}`,
			`{"candidates":[{"content":{"parts":[{"text":"","thoughtSignature":"CiQB"}],"role":"model"},"finishReason":"STOP","index":0,"safetyRatings":[]}],`+gmUsage(9, 4, 8, 0)+`,"modelVersion":"gemini-2.5-pro","responseId":"r1"}`,
		), ""),
		`{"candidates":[{"content":{"parts":[{"text":"Let me \"think\".\nDone.","thought":true},{"text":"café 😀\n","thoughtSignature":"CiQB"}],"role":"model"},"index":0,"finishReason":"STOP","safetyRatings":[]}],`+
			gmUsage(9, 4, 8, 0)+`,"modelVersion":"gemini-2.5-pro","responseId":"r1"}`,
		"café 😀\n", providers.Usage{InputTokens: 9, OutputTokens: 12}),
	"two candidates interleaved, LF frames, a function call": ok(
		sseOf(
			`{"candidates":[{"content":{"parts":[{"text":"A"}],"role":"model"},"index":0},{"content":{"parts":[{"text":"B"}],"role":"model"},"index":1}]}`,
			`{"candidates":[{"index":1,"content":{"parts":[{"text":"b"}],"role":"model"},"finishReason":"MAX_TOKENS"}]}`,
			`{"candidates":[{"content":{"parts":[{"functionCall":{"name":"now","args":{}}}],"role":"model"},"finishReason":"STOP","index":0}],`+gmUsage(3, 4, 0, 2)+`}`,
		),
		`{"candidates":[{"content":{"parts":[{"text":"A"},{"functionCall":{"name":"now","args":{}}}],"role":"model"},"index":0,"finishReason":"STOP"},
			{"content":{"parts":[{"text":"Bb"}],"role":"model"},"index":1,"finishReason":"MAX_TOKENS"}],`+gmUsage(3, 4, 0, 2)+`}`,
		"A"),
	"comments ignored": ok(
		": keep-alive\r\n\r\n"+strings.Join(crlfEvents(`{"candidates":[{"content":{"parts":[{"text":"hi"}],"role":"model"},"finishReason":"STOP","index":0}]}`), ""),
		`{"candidates":[{"content":{"parts":[{"text":"hi"}],"role":"model"},"finishReason":"STOP","index":0}]}`,
		"hi"),
	"error after content": {
		stream: strings.Join(crlfEvents(`{"candidates":[{"content":{"parts":[{"text":"Sev"}],"role":"model"},"index":0}]}`,
			geminiStatus(503, "UNAVAILABLE", "The model is overloaded.", "")), ""),
		msg: "overloaded", typ: "UNAVAILABLE", reqID: "req_hdr"},
	"EOF without a finishReason": {
		stream: strings.Join(crlfEvents(`{"candidates":[{"content":{"parts":[{"text":"Sev"}],"role":"model"},"index":0}],"usageMetadata":{"promptTokenCount":3}}`), ""),
		msg:    "before a finishReason", reqID: "req_hdr"},
}

// geminiBench is a streamed answer of n text chunks in the exact shape
// Gemini sends (CRLF frames, running usage on every chunk).
func geminiBench(n int) []byte {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"%s\"}],\"role\":\"model\"},\"index\":0}],\"usageMetadata\":{\"promptTokenCount\":21,\"candidatesTokenCount\":%d,\"totalTokenCount\":%d},\"modelVersion\":\"gemini-2.5-flash\",\"responseId\":\"BENCH01\"}\r\n\r\n",
			benchWords[i%len(benchWords)], i+1, i+22)
	}
	fmt.Fprintf(&b, "data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"\"}],\"role\":\"model\"},\"finishReason\":\"STOP\",\"index\":0}],\"usageMetadata\":{\"promptTokenCount\":21,\"candidatesTokenCount\":%d,\"totalTokenCount\":%d},\"modelVersion\":\"gemini-2.5-flash\",\"responseId\":\"BENCH01\"}\r\n\r\n", n, n+21)
	return []byte(b.String())
}
