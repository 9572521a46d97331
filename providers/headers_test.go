package providers

import (
	"net/http"
	"testing"
	"time"
)

func hdr(kv ...string) http.Header {
	h := http.Header{}
	for i := 0; i < len(kv); i += 2 {
		h.Set(kv[i], kv[i+1])
	}
	return h
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	tests := map[string]struct {
		h      http.Header
		want   time.Duration
		wantOK bool
	}{
		"absent":              {hdr(), 0, false},
		"seconds":             {hdr("retry-after", "7"), 7 * time.Second, true},
		"float seconds":       {hdr("retry-after", "1.5"), 1500 * time.Millisecond, true},
		"zero":                {hdr("retry-after", "0"), 0, true},
		"ms wins":             {hdr("retry-after-ms", "250", "retry-after", "7"), 250 * time.Millisecond, true},
		"float ms":            {hdr("retry-after-ms", "0.5"), 500 * time.Microsecond, true},
		"bad ms falls back":   {hdr("retry-after-ms", "soon", "retry-after", "3"), 3 * time.Second, true},
		"negative ms ignored": {hdr("retry-after-ms", "-5", "retry-after", "2"), 2 * time.Second, true},
		"http date":           {hdr("retry-after", now.Add(90*time.Second).Format(http.TimeFormat)), 90 * time.Second, true},
		"http date past":      {hdr("retry-after", now.Add(-time.Hour).Format(http.TimeFormat)), 0, true},
		"http date far":       {hdr("retry-after", now.Add(48*time.Hour).Format(http.TimeFormat)), 48 * time.Hour, true},
		"11.6 days as given":  {hdr("retry-after", "1002240"), 278*time.Hour + 24*time.Minute, true},
		"negative":            {hdr("retry-after", "-1"), 0, false},
		"NaN":                 {hdr("retry-after", "NaN"), 0, false},
		"NaN ms":              {hdr("retry-after-ms", "NaN"), 0, false},
		"Inf":                 {hdr("retry-after", "+Inf"), 0, false},
		"huge capped":         {hdr("retry-after", "1e30"), MaxRetryAfter, true},
		"huge ms capped":      {hdr("retry-after-ms", "99999999999"), MaxRetryAfter, true},
		"garbage":             {hdr("retry-after", "tomorrow"), 0, false},
		"spaces":              {hdr("retry-after", " 4 "), 4 * time.Second, true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, ok := ParseRetryAfter(tc.h, now)
			if got != tc.want || ok != tc.wantOK {
				t.Fatalf("got %v %v, want %v %v", got, ok, tc.want, tc.wantOK)
			}
		})
	}
}

func TestParseRateLimits(t *testing.T) {
	now := time.Date(2025, 8, 21, 12, 40, 0, 0, time.UTC)
	unknown := Window{Limit: -1, Remaining: -1}
	tests := map[string]struct {
		h    http.Header
		want RateLimits
	}{
		"none": {hdr(), RateLimits{unknown, unknown, unknown, unknown, unknown, unknown}},
		"openai": {hdr(
			"x-ratelimit-limit-requests", "60",
			"x-ratelimit-remaining-requests", "59",
			"x-ratelimit-reset-requests", "1s",
			"x-ratelimit-limit-tokens", "150000",
			"x-ratelimit-remaining-tokens", "149984",
			"x-ratelimit-reset-tokens", "6m0s",
		), RateLimits{
			Requests:     Window{60, 59, time.Second},
			Tokens:       Window{150000, 149984, 6 * time.Minute},
			InputTokens:  unknown,
			OutputTokens: unknown,
			DayRequests:  unknown,
			DayTokens:    unknown,
		}},
		"openai ms and bare seconds": {hdr(
			"x-ratelimit-remaining-requests", "3",
			"x-ratelimit-reset-requests", "20ms",
			"x-ratelimit-remaining-tokens", "10",
			"x-ratelimit-reset-tokens", "59.70",
		), RateLimits{
			Requests:     Window{-1, 3, 20 * time.Millisecond},
			Tokens:       Window{-1, 10, 59700 * time.Millisecond},
			InputTokens:  unknown,
			OutputTokens: unknown,
			DayRequests:  unknown,
			DayTokens:    unknown,
		}},
		"openai zero reset and junk": {hdr(
			"x-ratelimit-limit-requests", "lots",
			"x-ratelimit-remaining-requests", "-4",
			"x-ratelimit-reset-requests", "0",
		), RateLimits{unknown, unknown, unknown, unknown, unknown, unknown}},
		"anthropic": {hdr(
			"anthropic-ratelimit-requests-limit", "1000",
			"anthropic-ratelimit-requests-remaining", "999",
			"anthropic-ratelimit-requests-reset", "2025-08-21T12:40:59Z",
			"anthropic-ratelimit-tokens-limit", "96000",
			"anthropic-ratelimit-tokens-remaining", "95000",
			"anthropic-ratelimit-tokens-reset", "2025-08-21T12:40:01Z",
			"anthropic-ratelimit-input-tokens-limit", "80000",
			"anthropic-ratelimit-input-tokens-remaining", "80000",
			"anthropic-ratelimit-input-tokens-reset", "2025-08-21T12:40:00Z",
			"anthropic-ratelimit-output-tokens-limit", "16000",
			"anthropic-ratelimit-output-tokens-remaining", "15000",
			"anthropic-ratelimit-output-tokens-reset", "2025-08-21T12:39:00Z", // past → 0
		), RateLimits{
			Requests:     Window{1000, 999, 59 * time.Second},
			Tokens:       Window{96000, 95000, time.Second},
			InputTokens:  Window{80000, 80000, 0},
			OutputTokens: Window{16000, 15000, 0},
			DayRequests:  unknown,
			DayTokens:    unknown,
		}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := ParseRateLimits(tc.h, now)
			if got != tc.want {
				t.Fatalf("got  %+v\nwant %+v", got, tc.want)
			}
			if got.Any() != (name != "none" && name != "openai zero reset and junk") {
				t.Fatalf("Any() = %v", got.Any())
			}
		})
	}
}
