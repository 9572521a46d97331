package runner

import (
	"strings"
	"time"

	"github.com/llmrun/llmrun/limiter"
	"github.com/llmrun/llmrun/providers"
	"github.com/llmrun/llmrun/runner/retry"
)

// Observer watches a live run, for metrics: the runner knows nothing of
// Prometheus, it only tells. Start is called once, before the first
// attempt, with the run's View, which the observer may read at any time
// until the run returns; AdmissionWait is called from the workers after
// every attempt the budget admitted, and must be quick.
type Observer interface {
	Start(v *View)
	AdmissionWait(key string, d time.Duration)
}

// View reads a live run. Its methods are safe for concurrent use.
type View struct{ r *run }

// Counters are the run's live figures.
func (v *View) Counters() *Counters { return v.r.c }

// Budget is the budget's figures per key: limits in force (learned ones
// included), waits by dimension, in flight, 429s.
func (v *View) Budget() []limiter.KeyStats { return v.r.cfg.Limiter.Stats() }

// Breakers are the circuit breakers' figures by key.
func (v *View) Breakers(now time.Time) map[string]retry.BreakerStats {
	v.r.mu.Lock()
	brs := make(map[string]Breaker, len(v.r.breakers))
	for k, b := range v.r.breakers {
		brs[k] = b
	}
	v.r.mu.Unlock()
	out := make(map[string]retry.BreakerStats, len(brs))
	for k, b := range brs {
		out[k] = b.Stats(now)
	}
	return out
}

// rateLimitDimension is what a 429 was about, as far as it says: the
// window its headers show exhausted, else its message's words, else
// "unknown".
func rateLimitDimension(pe *providers.Error) string {
	l := pe.Limits
	switch {
	case l.Requests.Remaining == 0:
		return "requests"
	case l.InputTokens.Remaining == 0:
		return "input_tokens"
	case l.OutputTokens.Remaining == 0:
		return "output_tokens"
	case l.Tokens.Remaining == 0:
		return "tokens"
	}
	msg := strings.ToLower(pe.Message)
	switch {
	case strings.Contains(msg, "input tokens"):
		return "input_tokens"
	case strings.Contains(msg, "output tokens"):
		return "output_tokens"
	case strings.Contains(msg, "tokens per"):
		return "tokens"
	case strings.Contains(msg, "requests per"):
		return "requests"
	}
	return "unknown"
}
