package mock_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/llmrun/llmrun/providers/mock"
)

// anCached is an Anthropic body whose system block (shared) carries
// cache_control, then a user question q; extra system blocks after the
// first, each with cache_control, extend the cached prefix.
func anCached(model, shared, q string, more ...string) string {
	blocks := []map[string]any{{"type": "text", "text": shared, "cache_control": map[string]string{"type": "ephemeral"}}}
	for _, m := range more {
		blocks = append(blocks, map[string]any{"type": "text", "text": m, "cache_control": map[string]string{"type": "ephemeral"}})
	}
	b, _ := json.Marshal(map[string]any{"model": model, "max_tokens": 16, "system": blocks,
		"messages": []map[string]string{{"role": "user", "content": q}}})
	return string(b)
}

type anUsage struct {
	Input, Write, Read, Output int
}

func anUsageOf(t *testing.T, body []byte) anUsage {
	t.Helper()
	var m struct {
		Usage struct {
			Input  int `json:"input_tokens"`
			Write  int `json:"cache_creation_input_tokens"`
			Read   int `json:"cache_read_input_tokens"`
			Output int `json:"output_tokens"`
		} `json:"usage"`
	}
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatalf("%v: %s", err, body)
	}
	return anUsage(m.Usage)
}

// TestAnthropicPromptCache: the first request whose block carries
// cache_control writes the prefix up to that block; later requests with
// the same prefix (and model) read it; a longer prefix reads what is
// cached and writes the rest. input_tokens is the uncached part, the
// three together the whole input, plain and streamed alike.
func TestAnthropicPromptCache(t *testing.T) {
	shared := strings.Repeat("policy ", 600) // 4,200 bytes: 1,050 tokens
	const sharedTokens = 1050 + 4            // text + the system prompt's overhead
	const q1Tokens = 3 + 4                   // "question 1" (10 bytes) + overhead
	srv, m := start(t, mock.Config{})
	steps := []struct {
		name string
		body string
		want anUsage
	}{
		{"first writes", anCached("claude-mock", shared, "question 1"), anUsage{q1Tokens, sharedTokens, 0, 0}},
		{"same prefix reads", anCached("claude-mock", shared, "question 2!"), anUsage{q1Tokens, 0, sharedTokens, 0}},
		{"other model misses", anCached("claude-other", shared, "question 3"), anUsage{q1Tokens, sharedTokens, 0, 0}},
		{"longer prefix reads and writes", anCached("claude-mock", shared, "question 4", "more rules"), anUsage{q1Tokens, 3, sharedTokens, 0}},
		{"no cache_control", anBody("question 5", ""), anUsage{-1, 0, 0, 0}},
	}
	var reads, writes int
	for _, st := range steps {
		r := post(t, srv, "/v1/messages", st.body)
		wantStatus(t, r, 200)
		got := anUsageOf(t, r.body)
		got.Output = 0
		if st.want.Input < 0 {
			st.want.Input = got.Input
		}
		if got != st.want {
			t.Fatalf("%s: usage %+v, want %+v", st.name, got, st.want)
		}
		reads, writes = reads+got.Read, writes+got.Write
	}
	if s := m.Stats(); s.CacheReadTokens != int64(reads) || s.CacheWriteTokens != int64(writes) {
		t.Errorf("stats %+v, want %d read, %d written", s, reads, writes)
	}
	// Streamed, the usage of message_start says the same.
	r := post(t, srv, "/v1/messages", strings.Replace(anCached("claude-mock", shared, "question 6"), "{", `{"stream":true,`, 1))
	wantStatus(t, r, 200)
	start := parseSSE(t, r.body)[0]
	var ev struct {
		Message json.RawMessage `json:"message"`
	}
	json.Unmarshal([]byte(start.data), &ev)
	if got := anUsageOf(t, ev.Message); got != (anUsage{q1Tokens, 0, sharedTokens, 1}) {
		t.Errorf("streamed usage %+v", got)
	}
}

// TestAnthropicCacheReadsSpareITPM: cache reads do not count toward the
// input-token limit, so a request that reads a prefix too big for what is
// left of the bucket is still admitted; OpenAI counts cached tokens.
func TestAnthropicCacheReadsSpareITPM(t *testing.T) {
	shared := strings.Repeat("policy ", 600)
	clk := newClock()
	srv, _ := start(t, mock.Config{ITPM: 60 * 1100, Now: clk.Now}) // a bucket of 1,100 tokens, not refilled
	wantStatus(t, post(t, srv, "/v1/messages", anCached("claude-mock", shared, "question 1")), 200)
	wantStatus(t, post(t, srv, "/v1/messages", anCached("claude-mock", shared, "question 2")), 200)

	srv, _ = start(t, mock.Config{ITPM: 60 * 1100, Now: clk.Now})
	wantStatus(t, post(t, srv, "/v1/chat/completions", oaLong(shared, "question 1")), 200)
	wantStatus(t, post(t, srv, "/v1/chat/completions", oaLong(shared, "question 2")), 429)
}

// oaLong is an OpenAI body with a long system prompt and question q.
func oaLong(system, q string) string {
	b, _ := json.Marshal(map[string]any{"model": "gpt-mock", "messages": []map[string]string{
		{"role": "system", "content": system}, {"role": "user", "content": q}}})
	return string(b)
}

func cachedTokens(t *testing.T, body []byte) int {
	t.Helper()
	var m struct {
		Usage struct {
			Prompt  int `json:"prompt_tokens"`
			Details struct {
				Cached *int `json:"cached_tokens"`
			} `json:"prompt_tokens_details"`
		} `json:"usage"`
	}
	if err := json.Unmarshal(body, &m); err != nil || m.Usage.Details.Cached == nil {
		t.Fatalf("no cached_tokens: %v %s", err, body)
	}
	if *m.Usage.Details.Cached > m.Usage.Prompt {
		t.Fatalf("cached %d of %d prompt tokens", *m.Usage.Details.Cached, m.Usage.Prompt)
	}
	return *m.Usage.Details.Cached
}

// TestOpenAIPromptCache: a request repeating a prefix of at least 1,024
// tokens of an earlier one reads the longest 128-token step of it; shorter
// prompts are never cached.
func TestOpenAIPromptCache(t *testing.T) {
	srv, m := start(t, mock.Config{})
	long := strings.Repeat("x", 5000)
	// The prompt as cached: "system\x00" + long + "\x00user\x00" + q + "\x00".
	// "question 1" and "question 2" share 9 bytes: 5,022 bytes in common,
	// 9 steps of 512 bytes past none: 9×128 = 1,152 tokens.
	tests := []struct {
		name string
		body string
		want int
	}{
		{"first", oaLong(long, "question 1"), 0},
		{"repeat", oaLong(long, "question 2"), 1152},
		{"streamed repeat", strings.Replace(oaLong(long, "question 3"), "{", `{"stream":true,"stream_options":{"include_usage":true},`, 1), 1152},
		{"short prompts are not cached", oaBody("short", ""), 0},
		{"short again", oaBody("short", ""), 0},
	}
	total := 0
	for _, tc := range tests {
		r := post(t, srv, "/v1/chat/completions", tc.body)
		wantStatus(t, r, 200)
		body := r.body
		if strings.Contains(tc.body, `"stream":true`) {
			evs := parseSSE(t, r.body)
			body = []byte(evs[len(evs)-2].data) // the usage chunk before [DONE]
		}
		if got := cachedTokens(t, body); got != tc.want {
			t.Errorf("%s: cached %d, want %d", tc.name, got, tc.want)
		}
		total += tc.want
	}
	if s := m.Stats(); s.CacheReadTokens != int64(total) || s.CacheWriteTokens != 0 {
		t.Errorf("stats %+v", s)
	}
}

// TestNoLimitHeadersNoRetryAfter: the switches for servers that describe
// nothing (issue 16): no rate-limit headers on answers or 429s, and 429s
// without retry-after; the limits themselves still hold.
func TestNoLimitHeadersNoRetryAfter(t *testing.T) {
	for _, path := range []string{"/v1/chat/completions", "/v1/messages"} {
		body := oaBody("x", "")
		if path == "/v1/messages" {
			body = anBody("x", "")
		}
		clk := newClock()
		srv, m := start(t, mock.Config{RPM: 60, NoLimitHeaders: true, NoRetryAfter: true, Now: clk.Now})
		for i, want := range []int{200, 429} {
			r := post(t, srv, path, body)
			wantStatus(t, r, want)
			for k := range r.header {
				if k = strings.ToLower(k); strings.Contains(k, "ratelimit") || strings.HasPrefix(k, "retry-after") {
					t.Errorf("%s, request %d: header %s sent", path, i, k)
				}
			}
		}
		if s := m.Stats(); s.RateLimited != 1 {
			t.Errorf("stats %+v", s)
		}
		// Without the switches the same server describes itself.
		srv, _ = start(t, mock.Config{RPM: 60, Now: clk.Now})
		post(t, srv, path, body)
		r := post(t, srv, path, body)
		if r.header.Get("retry-after") == "" || (r.header.Get("x-ratelimit-limit-requests") == "" && r.header.Get("anthropic-ratelimit-requests-limit") == "") {
			t.Errorf("%s: headers %v", path, r.header)
		}
	}
}

// TestRememberBodiesBounded: the server remembers at most RememberBodies
// bodies; a body forgotten and sent again is not a duplicate, one still
// remembered is.
func TestRememberBodiesBounded(t *testing.T) {
	srv, m := start(t, mock.Config{RememberBodies: 4})
	for i := range 5 {
		wantStatus(t, post(t, srv, "/v1/messages", anBody(fmt.Sprint("q", i), "")), 200)
	}
	wantStatus(t, post(t, srv, "/v1/messages", anBody("q0", "")), 200) // forgotten: q1..q4 remain
	if s := m.Stats(); s.Duplicates != 0 {
		t.Fatalf("stats %+v", s)
	}
	wantStatus(t, post(t, srv, "/v1/messages", anBody("q4", "")), 200)
	if s := m.Stats(); s.Duplicates != 1 || s.Completed != 7 {
		t.Fatalf("stats %+v", s)
	}
}
