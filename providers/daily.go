package providers

import (
	"net/http"
	"regexp"
	"strings"
	"sync"
	"time"
)

// Per-day limits as providers signal them (wire-formats §9): rate-limit
// headers whose window is a day, and 429s from a per-day limit.

// DayResetOver is the reset beyond which an x-ratelimit-* window counts
// per day: a per-minute window is whole again within a minute, and none
// between a minute and a day is documented (OpenAI's docs show a
// per-minute token window resetting in 6m0s, so the line is drawn at an
// hour).
const DayResetOver = time.Hour

// HeaderRules say what a provider's x-ratelimit-* headers count where it
// documents a window other than a minute. The zero value reads every
// window as per minute unless its reset is DayResetOver or more away.
type HeaderRules struct {
	// RequestsPerDay: x-ratelimit-*-requests count requests per day
	// (Groq documents them so, whatever their reset).
	RequestsPerDay bool
}

// RateLimits reads h's rate-limit headers by c's header rules: windows
// that count per day are moved to DayRequests and DayTokens.
func (c *Config) RateLimits(h http.Header, now time.Time) RateLimits {
	r := ParseRateLimits(h, now)
	if c.Headers.RequestsPerDay && header(h, "Anthropic-Ratelimit-Requests-Limit") == "" && r.Requests.Known() {
		r.DayRequests, r.Requests = r.Requests, unknown
	}
	return r
}

// unknown is a window no header spoke of.
var unknown = Window{Limit: -1, Remaining: -1}

// dayWindows moves x-ratelimit-* windows whose reset is a day's, not a
// minute's, to the day fields of r.
func dayWindows(r *RateLimits) {
	r.DayRequests, r.DayTokens = unknown, unknown
	if r.Requests.Reset >= DayResetOver {
		r.DayRequests, r.Requests = r.Requests, unknown
	}
	if r.Tokens.Reset >= DayResetOver {
		r.DayTokens, r.Tokens = r.Tokens, unknown
	}
}

// dailyWords are how OpenAI's and Groq's 429 messages name a per-day
// limit: "on requests per day (RPD)", "on tokens per day (TPD)".
var dailyWords = []string{"per day", "(rpd)", "(tpd)"}

// tryAgainIn reads the wait of "Please try again in 7m12s", also written
// "6m 11.52s" or "1h23m45.6s".
var tryAgainIn = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?i)try again in ((?:\d+(?:\.\d+)?\s*(?:h|ms|m|s)\s*)+)`)
})

// MarkDaily marks a rate-limit error whose message names a per-day limit
// (OpenAI's and Groq's wording) as Daily, and takes its "try again in"
// as the hint of when the day's budget admits again: for a rolling day,
// sooner than a calendar day's end.
func MarkDaily(e *Error) {
	if e.Class != ClassRateLimited {
		return
	}
	msg := strings.ToLower(e.Message)
	for _, w := range dailyWords {
		if strings.Contains(msg, w) {
			e.Daily = true
		}
	}
	if !e.Daily {
		return
	}
	if m := tryAgainIn().FindStringSubmatch(e.Message); m != nil {
		if d, err := time.ParseDuration(strings.Join(strings.Fields(m[1]), "")); err == nil && d > 0 {
			e.RetryAfter, e.HasRetryAfter = min(d, 24*time.Hour), true
		}
	}
}
