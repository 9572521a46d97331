package providers

import (
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Window is one rate-limit dimension as a response reported it.
type Window struct {
	// Limit and Remaining are -1 when the header was absent.
	Limit, Remaining int64
	// Reset is the time until the window fully replenishes; 0 when absent.
	Reset time.Duration
}

// Known reports whether the response said anything about this dimension.
func (w Window) Known() bool { return w.Limit >= 0 || w.Remaining >= 0 }

// RateLimits are the rate-limit headers of one response, both header families
// (OpenAI x-ratelimit-*, Anthropic anthropic-ratelimit-*) in one shape.
type RateLimits struct {
	Requests Window
	// Tokens is a combined input+output limit (OpenAI's TPM; Anthropic's
	// most restrictive token limit).
	Tokens       Window
	InputTokens  Window
	OutputTokens Window
	// DayRequests and DayTokens are x-ratelimit-* windows that count per
	// day: their reset is DayResetOver or more away, or the provider
	// documents them so (HeaderRules).
	DayRequests, DayTokens Window
}

// Any reports whether any dimension is known.
func (r RateLimits) Any() bool {
	return r.Requests.Known() || r.Tokens.Known() || r.InputTokens.Known() || r.OutputTokens.Known() ||
		r.DayRequests.Known() || r.DayTokens.Known()
}

// ParseRateLimits reads both header families; now resolves Anthropic's
// RFC 3339 reset instants into durations. Unparseable values are ignored.
// An x-ratelimit-* window resetting DayResetOver or more away is read as a
// day's (Config.RateLimits applies a provider's own rules on top).
func ParseRateLimits(h http.Header, now time.Time) RateLimits {
	r := RateLimits{
		Requests:     window(h, now, "X-Ratelimit-Limit-Requests", "X-Ratelimit-Remaining-Requests", "X-Ratelimit-Reset-Requests"),
		Tokens:       window(h, now, "X-Ratelimit-Limit-Tokens", "X-Ratelimit-Remaining-Tokens", "X-Ratelimit-Reset-Tokens"),
		InputTokens:  Window{Limit: -1, Remaining: -1},
		OutputTokens: Window{Limit: -1, Remaining: -1},
	}
	dayWindows(&r)
	if header(h, "Anthropic-Ratelimit-Requests-Limit") != "" || header(h, "Anthropic-Ratelimit-Requests-Remaining") != "" {
		r.Requests = window(h, now, "Anthropic-Ratelimit-Requests-Limit", "Anthropic-Ratelimit-Requests-Remaining", "Anthropic-Ratelimit-Requests-Reset")
	}
	if header(h, "Anthropic-Ratelimit-Tokens-Limit") != "" || header(h, "Anthropic-Ratelimit-Tokens-Remaining") != "" {
		r.Tokens = window(h, now, "Anthropic-Ratelimit-Tokens-Limit", "Anthropic-Ratelimit-Tokens-Remaining", "Anthropic-Ratelimit-Tokens-Reset")
	}
	r.InputTokens = window(h, now, "Anthropic-Ratelimit-Input-Tokens-Limit", "Anthropic-Ratelimit-Input-Tokens-Remaining", "Anthropic-Ratelimit-Input-Tokens-Reset")
	r.OutputTokens = window(h, now, "Anthropic-Ratelimit-Output-Tokens-Limit", "Anthropic-Ratelimit-Output-Tokens-Remaining", "Anthropic-Ratelimit-Output-Tokens-Reset")
	return r
}

func window(h http.Header, now time.Time, limit, remaining, reset string) Window {
	return Window{Limit: headerInt(h, limit), Remaining: headerInt(h, remaining), Reset: parseReset(header(h, reset), now)}
}

func headerInt(h http.Header, name string) int64 {
	v := strings.TrimSpace(header(h, name))
	if v == "" {
		return -1
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		f, ferr := strconv.ParseFloat(v, 64)
		if ferr != nil || f < 0 || math.IsNaN(f) || math.IsInf(f, 0) {
			return -1
		}
		return int64(f)
	}
	return n
}

// header is h.Get(name) for a name already in canonical form (the names
// above): Get would canonicalize, allocating, every name on every response.
func header(h http.Header, name string) string {
	if v := h[name]; len(v) > 0 {
		return v[0]
	}
	return ""
}

// parseReset accepts Go durations ("6m0s", "20ms"), bare seconds ("59.70")
// and RFC 3339 instants (Anthropic).
func parseReset(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if d, err := time.ParseDuration(v); err == nil {
		return max(d, 0)
	}
	if f, err := strconv.ParseFloat(v, 64); err == nil {
		return secondsToDuration(f, MaxRetryAfter)
	}
	if t, err := time.Parse(time.RFC3339, v); err == nil {
		return max(t.Sub(now), 0)
	}
	return 0
}

// MaxRetryAfter bounds any server delay hint to what a reading can mean
// (and a Duration hold). Hints are kept as the server gave them otherwise,
// so messages can say what was asked (an 11.6-day hint, not "1h"): every
// user caps them for itself (--max-pause for retries and key pauses, a day
// for a daily limit).
const MaxRetryAfter = 366 * 24 * time.Hour

// ParseRetryAfter reads retry-after-ms (float milliseconds), then retry-after
// (float seconds or an HTTP date). Negative, NaN and infinite values are
// ignored; huge ones are capped at MaxRetryAfter.
func ParseRetryAfter(h http.Header, now time.Time) (time.Duration, bool) {
	if v := strings.TrimSpace(h.Get("retry-after-ms")); v != "" {
		if f, err := strconv.ParseFloat(v, 64); err == nil && f >= 0 && !math.IsNaN(f) && !math.IsInf(f, 0) {
			return secondsToDuration(f/1000, MaxRetryAfter), true
		}
	}
	v := strings.TrimSpace(h.Get("retry-after"))
	if v == "" {
		return 0, false
	}
	if f, err := strconv.ParseFloat(v, 64); err == nil {
		if f < 0 || math.IsNaN(f) || math.IsInf(f, 0) {
			return 0, false
		}
		return secondsToDuration(f, MaxRetryAfter), true
	}
	if t, err := http.ParseTime(v); err == nil {
		return min(max(t.Sub(now), 0), MaxRetryAfter), true
	}
	return 0, false
}

func secondsToDuration(f float64, ceiling time.Duration) time.Duration {
	if f <= 0 || math.IsNaN(f) {
		return 0
	}
	if f >= ceiling.Seconds() {
		return ceiling
	}
	return time.Duration(f * float64(time.Second))
}
