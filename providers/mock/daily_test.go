package mock_test

import (
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/llmrun/llmrun/providers/mock"
)

// TestDailyLimit: RPD admits that many requests per calendar day of the
// mock's clock; the next is refused for the day in each dialect's words;
// the new day admits again.
func TestDailyLimit(t *testing.T) {
	dialects := map[string]struct {
		path, body string
		check      func(r result) bool
	}{
		"openai": {"/v1/chat/completions", `{"model":"m","messages":[{"role":"user","content":"hi"}]}`, func(r result) bool {
			msg := gjson.GetBytes(r.body, "error.message").Str
			// 12:00 → midnight: 12 h, in the header and the message.
			return strings.Contains(msg, "on requests per day (RPD): Limit 2") && strings.Contains(msg, "Please try again in 12h0m0s.") && r.header.Get("retry-after") == "43200"
		}},
		"gemini": {"/v1beta/models/gemini-x:generateContent", `{"contents":[{"parts":[{"text":"hi"}]}]}`, func(r result) bool {
			return gjson.GetBytes(r.body, "error.status").Str == "RESOURCE_EXHAUSTED" &&
				gjson.GetBytes(r.body, `error.details.#(@type%"*QuotaFailure").violations.0.quotaId`).Str == "GenerateRequestsPerDayPerProjectPerModel" &&
				r.header.Get("retry-after") == ""
		}},
		"anthropic": {"/v1/messages", `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`, func(r result) bool {
			return strings.Contains(gjson.GetBytes(r.body, "error.message").Str, "requests per day")
		}},
	}
	for name, d := range dialects {
		t.Run(name, func(t *testing.T) {
			clk := newClock()
			srv, m := start(t, mock.Config{RPD: 2, Now: clk.Now})
			for i := range 2 {
				if r := post(t, srv, d.path, d.body); r.status != 200 {
					t.Fatalf("request %d: %d %s", i, r.status, r.body)
				}
			}
			r := post(t, srv, d.path, d.body)
			if r.status != 429 || !d.check(r) {
				t.Fatalf("over the day: %d %v %s", r.status, r.header, r.body)
			}
			clk.Advance(12 * time.Hour) // midnight UTC
			if r := post(t, srv, d.path, d.body); r.status != 200 {
				t.Fatalf("the next day: %d %s", r.status, r.body)
			}
			if st := m.Stats(); st.DayLimited != 1 || st.RateLimited != 1 || st.Completed != 3 {
				t.Errorf("stats %+v", st)
			}
		})
	}
}

// TestDayHeaders: with DayHeaders the requests headers report the day.
func TestDayHeaders(t *testing.T) {
	clk := newClock()
	srv, _ := start(t, mock.Config{RPD: 5, RPM: 600, DayHeaders: true, Now: clk.Now})
	r := post(t, srv, "/v1/chat/completions", `{"model":"m","messages":[{"role":"user","content":"hi"}]}`)
	if r.status != 200 || r.header.Get("x-ratelimit-limit-requests") != "5" || r.header.Get("x-ratelimit-remaining-requests") != "4" || r.header.Get("x-ratelimit-reset-requests") != "12h0m0s" {
		t.Fatalf("%d %v", r.status, r.header)
	}
}
