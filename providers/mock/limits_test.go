package mock_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/llmrun/llmrun/providers/mock"
)

// shortBody has 5 input tokens: "abcd" is 1 token plus the 4-token message overhead.
const shortBody = `{"model":"gpt-mock","messages":[{"role":"user","content":"abcd"}]}`

func wantHeaders(t *testing.T, h http.Header, want map[string]string) {
	t.Helper()
	for k, v := range want {
		if got := h.Get(k); got != v {
			t.Errorf("header %s = %q, want %q", k, got, v)
		}
	}
}

func TestRequestLimit(t *testing.T) {
	clk := newClock()
	srv, m := start(t, mock.Config{RPM: 60, Now: clk.Now}) // 1 request/s, bucket of 1
	r := post(t, srv, "/v1/chat/completions", shortBody)
	wantStatus(t, r, 200)
	wantHeaders(t, r.header, map[string]string{
		"x-ratelimit-limit-requests": "60", "x-ratelimit-remaining-requests": "0", "x-ratelimit-reset-requests": "1s",
		"x-ratelimit-limit-tokens": "", "retry-after": "",
	})
	r = post(t, srv, "/v1/chat/completions", shortBody)
	wantStatus(t, r, 429)
	// The refused request is charged too: the bucket is at -1 and needs 2s to hold 1.
	wantHeaders(t, r.header, map[string]string{
		"retry-after": "2", "retry-after-ms": "2000",
		"x-ratelimit-remaining-requests": "0", "x-ratelimit-reset-requests": "2s",
	})
	var e struct {
		Error struct{ Message, Type, Code string }
	}
	if err := json.Unmarshal(r.body, &e); err != nil || e.Error.Type != "requests" || e.Error.Code != "rate_limit_exceeded" ||
		!strings.Contains(e.Error.Message, "requests per min (RPM): Limit 60") {
		t.Errorf("429 body %s", r.body)
	}
	clk.Advance(1999 * time.Millisecond) // 0.999: refused, and charged to -0.001
	r = post(t, srv, "/v1/chat/completions", shortBody)
	wantStatus(t, r, 429)
	wantHeaders(t, r.header, map[string]string{"retry-after": "2", "retry-after-ms": "1001"})
	clk.Advance(1001 * time.Millisecond)
	wantStatus(t, post(t, srv, "/v1/chat/completions", shortBody), 200)
	if s := m.Stats(); s.RateLimited != 2 || s.Completed != 2 || s.Attempts != 4 {
		t.Errorf("stats %+v", s)
	}
}

func TestInputTokenLimit(t *testing.T) {
	clk := newClock()
	srv, _ := start(t, mock.Config{ITPM: 600, Now: clk.Now}) // 10 tokens/s, bucket of 10
	wantStatus(t, post(t, srv, "/v1/chat/completions", shortBody), 200)
	r := post(t, srv, "/v1/chat/completions", shortBody)
	wantStatus(t, r, 200)
	wantHeaders(t, r.header, map[string]string{
		"x-ratelimit-limit-tokens": "600", "x-ratelimit-remaining-tokens": "0", "x-ratelimit-reset-tokens": "1s",
		"x-ratelimit-limit-requests": "",
	})
	r = post(t, srv, "/v1/chat/completions", shortBody)
	wantStatus(t, r, 429)
	wantHeaders(t, r.header, map[string]string{"retry-after": "1", "retry-after-ms": "500"})
	if !strings.Contains(string(r.body), `"type":"tokens","param":null,"code":"rate_limit_exceeded"`) ||
		!strings.Contains(string(r.body), "tokens per min (TPM): Limit 600, Requested 5") {
		t.Errorf("429 body %s", r.body)
	}
	clk.Advance(499 * time.Millisecond)
	wantStatus(t, post(t, srv, "/v1/chat/completions", shortBody), 429)
	clk.Advance(time.Millisecond)
	wantStatus(t, post(t, srv, "/v1/chat/completions", shortBody), 200)

	// A request larger than the bucket is admitted once the bucket is full.
	big := oaBody(strings.Repeat("x", 400), "")
	r = post(t, srv, "/v1/chat/completions", big)
	wantStatus(t, r, 429)
	wantHeaders(t, r.header, map[string]string{"retry-after-ms": "1000"})
	clk.Advance(time.Second)
	wantStatus(t, post(t, srv, "/v1/chat/completions", big), 200)
}

func TestOutputTokenLimit(t *testing.T) {
	clk := newClock()
	srv, _ := start(t, mock.Config{OTPM: 60, Now: clk.Now}) // 1 token/s, bucket of 1
	r := post(t, srv, "/v1/messages", anBody("long answer please", ""))
	wantStatus(t, r, 200)
	var ok struct {
		Usage struct {
			OutputTokens int `json:"output_tokens"`
		}
	}
	json.Unmarshal(r.body, &ok)
	out := ok.Usage.OutputTokens
	if out < 10 {
		t.Fatalf("output tokens %d", out)
	}
	// The bucket is at 1-out until refilled past zero.
	r = post(t, srv, "/v1/messages", anBody("again", ""))
	wantStatus(t, r, 429)
	wait := time.Duration(out-1)*time.Second + time.Millisecond
	wantHeaders(t, r.header, map[string]string{
		"retry-after":    strconv.Itoa(out),
		"retry-after-ms": strconv.FormatInt(wait.Milliseconds(), 10),
		"anthropic-ratelimit-output-tokens-limit":     "60",
		"anthropic-ratelimit-output-tokens-remaining": "0",
		"anthropic-ratelimit-output-tokens-reset":     clk.Now().Add(time.Duration(out) * time.Second).Format(time.RFC3339),
	})
	if want := `{"type":"error","error":{"type":"rate_limit_error","message":"This request would exceed the rate limit for your organization of 60 output tokens per minute."},"request_id":"` +
		r.header.Get("request-id") + `"}`; string(r.body) != want {
		t.Errorf("429 body\n got %s\nwant %s", r.body, want)
	}
	clk.Advance(wait - time.Millisecond)
	wantStatus(t, post(t, srv, "/v1/messages", anBody("again", "")), 429)
	clk.Advance(time.Millisecond)
	wantStatus(t, post(t, srv, "/v1/messages", anBody("again", "")), 200)
}

func TestAnthropicLimitHeaders(t *testing.T) {
	clk := newClock()
	srv, _ := start(t, mock.Config{RPM: 120, ITPM: 6000, OTPM: 600, Burst: 2 * time.Second, Now: clk.Now})
	clk.Advance(300 * time.Millisecond) // resets are rounded up to the second
	r := post(t, srv, "/v1/messages", `{"model":"c","max_tokens":1,"messages":[{"role":"user","content":"abcd"}]}`)
	wantStatus(t, r, 200)
	// Now is 12:00:00.3; the resets (0.7s and 0) are rounded up to 12:00:01.
	const next = "2026-03-01T12:00:01Z"
	// Buckets: requests 4 (3 left), input 200 (195 left), output 20 (full when headers are written).
	wantHeaders(t, r.header, map[string]string{
		"anthropic-ratelimit-requests-limit": "120", "anthropic-ratelimit-requests-remaining": "3", "anthropic-ratelimit-requests-reset": next,
		"anthropic-ratelimit-input-tokens-limit": "6000", "anthropic-ratelimit-input-tokens-remaining": "195", "anthropic-ratelimit-input-tokens-reset": next,
		"anthropic-ratelimit-output-tokens-limit": "600", "anthropic-ratelimit-output-tokens-remaining": "20", "anthropic-ratelimit-output-tokens-reset": next,
		"anthropic-ratelimit-tokens-limit": "6600", "anthropic-ratelimit-tokens-remaining": "215", "anthropic-ratelimit-tokens-reset": next,
		"x-ratelimit-limit-requests": "",
	})
	// Unlimited: no rate-limit headers at all.
	srv2, _ := start(t, mock.Config{})
	for _, p := range []string{"/v1/messages", "/v1/chat/completions"} {
		r := post(t, srv2, p, anBody("x", ""))
		wantStatus(t, r, 200)
		for k := range r.header {
			if strings.Contains(strings.ToLower(k), "ratelimit") {
				t.Errorf("%s: unexpected header %s", p, k)
			}
		}
	}
}

func TestConcurrencyLimit(t *testing.T) {
	srv, m := start(t, mock.Config{Concurrency: 1, TokenDelay: time.Hour})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "POST", srv.URL+"/v1/messages", strings.NewReader(anBody("hold", `,"stream":true`)))
	resp, err := srv.Client().Do(req) // returns once message_start is flushed
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	r := post(t, srv, "/v1/messages", anBody("second", ""))
	wantStatus(t, r, 429)
	wantHeaders(t, r.header, map[string]string{"retry-after": "1", "retry-after-ms": "100"})
	if !strings.Contains(string(r.body), `"type":"rate_limit_error"`) {
		t.Errorf("body %s", r.body)
	}
	r = post(t, srv, "/v1/chat/completions", shortBody)
	wantStatus(t, r, 429)
	if !strings.Contains(string(r.body), `"type":"requests"`) {
		t.Errorf("body %s", r.body)
	}
	cancel()
	srv.Close() // waits for the held handler to notice and return
	if s := m.Stats(); s.MaxInFlight != 1 || s.InFlight != 0 || s.RateLimited != 2 || s.Canceled != 1 || s.Completed != 0 {
		t.Errorf("stats %+v", s)
	}
}

// A client that waits for each answer never meets the concurrency limit, and
// Stats already count an answer when the client has read it.
func TestReleaseBeforeLastByte(t *testing.T) {
	srv, m := start(t, mock.Config{Concurrency: 1, ResetRate: 0.2, MidStreamRate: 0.2, OverloadRate: 0.1})
	for i := range 200 {
		extra := ""
		if i%2 == 0 {
			extra = `,"stream":true`
		}
		before := m.Stats()
		r := post(t, srv, "/v1/messages", anBody(strconv.Itoa(i), extra))
		s := m.Stats()
		if r.status == 429 {
			t.Fatalf("request %d refused at the concurrency limit: %s", i, r.body)
		}
		settled := s.Completed + s.Resets + s.MidStream + s.Overloaded - before.Completed - before.Resets - before.MidStream - before.Overloaded
		if settled != 1 || s.InFlight != 0 {
			t.Fatalf("request %d (%s): stats not settled when the client was done: %+v", i, outcome(r), s)
		}
	}
}
