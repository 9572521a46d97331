package providers

import (
	"net/http"
	"testing"
	"time"
)

// TestDayWindows: an x-ratelimit-* window resetting an hour or more away
// counts per day; a provider whose requests headers are per day (Groq)
// says so in its header rules, whatever the reset; Anthropic's windows
// are never a day's.
func TestDayWindows(t *testing.T) {
	now := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	groq := hdr("x-ratelimit-limit-requests", "14400", "x-ratelimit-remaining-requests", "14370", "x-ratelimit-reset-requests", "2m59.56s",
		"x-ratelimit-limit-tokens", "18000", "x-ratelimit-remaining-tokens", "17997", "x-ratelimit-reset-tokens", "7.66s")
	tests := map[string]struct {
		h                 http.Header
		rules             HeaderRules
		requests, dayReqs Window
		tokens, dayTokens Window
	}{
		"reset hours away": {hdr("x-ratelimit-limit-requests", "1000", "x-ratelimit-remaining-requests", "0", "x-ratelimit-reset-requests", "2h13m",
			"x-ratelimit-limit-tokens", "150000", "x-ratelimit-remaining-tokens", "149984", "x-ratelimit-reset-tokens", "6m0s"), HeaderRules{},
			unknown, Window{1000, 0, 2*time.Hour + 13*time.Minute}, Window{150000, 149984, 6 * time.Minute}, unknown},
		"tokens per day by their reset": {hdr("x-ratelimit-limit-tokens", "1000000", "x-ratelimit-remaining-tokens", "5", "x-ratelimit-reset-tokens", "23h59m"), HeaderRules{},
			unknown, unknown, unknown, Window{1000000, 5, 23*time.Hour + 59*time.Minute}},
		"Groq, read as a minute's without its rule": {groq, HeaderRules{},
			Window{14400, 14370, 2*time.Minute + 59560*time.Millisecond}, unknown, Window{18000, 17997, 7660 * time.Millisecond}, unknown},
		"Groq, by its rule": {groq, HeaderRules{RequestsPerDay: true},
			unknown, Window{14400, 14370, 2*time.Minute + 59560*time.Millisecond}, Window{18000, 17997, 7660 * time.Millisecond}, unknown},
		"Anthropic, far reset": {hdr("anthropic-ratelimit-requests-limit", "50", "anthropic-ratelimit-requests-remaining", "49", "anthropic-ratelimit-requests-reset", "2026-03-01T12:00:00Z"), HeaderRules{RequestsPerDay: true},
			Window{50, 49, 2 * time.Hour}, unknown, unknown, unknown},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			c := Config{Headers: tc.rules}
			got := c.RateLimits(tc.h, now)
			if got.Requests != tc.requests || got.DayRequests != tc.dayReqs || got.Tokens != tc.tokens || got.DayTokens != tc.dayTokens || !got.Any() {
				t.Fatalf("%+v", got)
			}
		})
	}
}

func TestMarkDaily(t *testing.T) {
	tests := map[string]struct {
		class Class
		msg   string
		daily bool
		retry time.Duration // -1: none
	}{
		"OpenAI RPD":       {ClassRateLimited, "Rate limit reached for gpt-4o-mini in organization org-x on requests per day (RPD): Limit 200, Used 200, Requested 1. Please try again in 7m12s. Visit https://platform.openai.com/account/rate-limits to learn more.", true, 7*time.Minute + 12*time.Second},
		"Groq TPD, spaced": {ClassRateLimited, "Rate limit reached for model `llama-3.3-70b-versatile` in organization `org_01` service tier `on_demand` on tokens per day (TPD): Limit 200000, Used 199620, Requested 3400. Please try again in 6m 11.52s.", true, 6*time.Minute + 11520*time.Millisecond},
		"hours":            {ClassRateLimited, "... on requests per day (RPD): Limit 1000. Please try again in 1h23m45.6s.", true, time.Hour + 23*time.Minute + 45600*time.Millisecond},
		"no wait given":    {ClassRateLimited, "You have hit your requests per day limit.", true, -1},
		"per minute":       {ClassRateLimited, "Rate limit reached for gpt-4o on tokens per min (TPM): Limit 30000. Please try again in 1.2s.", false, -1},
		"not a 429":        {ClassInvalid, "requests per day", false, -1},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			e := &Error{Class: tc.class, Message: tc.msg}
			MarkDaily(e)
			if e.Daily != tc.daily || e.HasRetryAfter != (tc.retry >= 0) || (tc.retry >= 0 && e.RetryAfter != tc.retry) {
				t.Fatalf("%+v", e)
			}
		})
	}
}
