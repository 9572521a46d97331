package mock

import (
	"fmt"
	"net/http"
	"strconv"
	"time"
)

// A per-day request limit (Config.RPD), counted per calendar day of
// Config.DayZone by Now: what the real providers enforce on their free
// and low tiers (wire-formats §9). A request over it is refused with the
// dialect's 429 for the day: OpenAI's "on requests per day (RPD) … Please
// try again in …", Gemini's RESOURCE_EXHAUSTED naming a PerDay quota
// (with a RetryInfo, which for a day says nothing true), Anthropic's plain
// rate-limit error (Anthropic has no daily limits). With DayHeaders the
// x-ratelimit-*-requests headers report the day's window, as Groq's do.

// dayState is the server's day: requests admitted and when it ends.
// Guarded by Server.mu.
type dayState struct {
	used int64
	end  time.Time
}

// dayZone is the zone whose midnight ends the mock's day.
func (s *Server) dayZone() *time.Location {
	if s.cfg.DayZone != nil {
		return s.cfg.DayZone
	}
	return time.UTC
}

// rollDay starts a new day if the last one ended by now. Requires s.mu.
func (s *Server) rollDay(now time.Time) {
	if !now.Before(s.day.end) {
		y, m, d := now.In(s.dayZone()).Date()
		s.day.used, s.day.end = 0, time.Date(y, m, d+1, 0, 0, 0, 0, s.dayZone())
	}
}

// admitDay takes one request from the day, or returns the refusal of a
// day spent. Requires s.mu.
func (s *Server) admitDay(now time.Time, model string) *apiError {
	if s.cfg.RPD <= 0 {
		return nil
	}
	s.rollDay(now)
	if float64(s.day.used) < s.cfg.RPD {
		s.day.used++
		return nil
	}
	s.stats.RateLimited++
	s.stats.DayLimited++
	wait := s.day.end.Sub(now)
	limit := formatLimit(s.cfg.RPD)
	return &apiError{status: 429, oaType: "requests", oaCode: "rate_limit_exceeded", anType: "rate_limit_error", retryAfter: wait,
		message: fmt.Sprintf("Rate limit reached for %s in organization org-mock on requests per day (RPD): Limit %s, Used %s, Requested 1. Please try again in %s. Visit https://platform.openai.com/account/rate-limits to learn more.",
			model, limit, limit, wait.Round(time.Millisecond)),
		anMessage:   fmt.Sprintf("This request would exceed the rate limit for your organization of %s requests per day.", limit),
		quotaID:     "GenerateRequestsPerDayPerProjectPerModel",
		quotaMetric: "generate_requests_per_model_per_day",
		limit:       s.cfg.RPD,
	}
}

// writeDayHeaders reports the day as the x-ratelimit-*-requests window
// (DayHeaders), in place of any per-minute one.
func (s *Server) writeDayHeaders(h http.Header, now time.Time) {
	if !s.cfg.DayHeaders || s.cfg.RPD <= 0 {
		return
	}
	s.mu.Lock()
	s.rollDay(now)
	left, end := max(int64(s.cfg.RPD)-s.day.used, 0), s.day.end
	s.mu.Unlock()
	h.Set("x-ratelimit-limit-requests", formatLimit(s.cfg.RPD))
	h.Set("x-ratelimit-remaining-requests", strconv.FormatInt(left, 10))
	h.Set("x-ratelimit-reset-requests", goDuration(end.Sub(now)))
}
