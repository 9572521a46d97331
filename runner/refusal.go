package runner

import (
	"strings"
	"time"

	"github.com/llmrun/llmrun/limiter"
	"github.com/llmrun/llmrun/providers"
)

// refusal is what the budget is told of a refusal for load: the server's
// hint, whether the answer carried rate-limit headers (then they calibrate
// the key and no rate is learned from the 429) and the dimension it
// names, so a rate is learned only for that one.
func refusal(pe *providers.Error, retryAfter time.Duration, hinted bool) limiter.Refusal {
	l := pe.Limits
	return limiter.Refusal{
		Overloaded:    pe.Class == providers.ClassOverloaded,
		RetryAfter:    retryAfter,
		HasRetryAfter: hinted,
		Described:     l.Requests.Known() || l.Tokens.Known() || l.InputTokens.Known() || l.OutputTokens.Known(),
		Dimension:     refusalDimension(pe.RateLimitDimension()),
		Ramp:          isRamp(pe),
	}
}

// isRamp reports a refusal for acceleration (a sharp increase), whatever
// the limits: OpenAI's slow_down (as a 429 or a 503), Anthropic's
// rate_limit_error whose message names the acceleration limit. Gemini
// documents none (wire-formats).
func isRamp(pe *providers.Error) bool {
	if pe.Code == "slow_down" {
		return true
	}
	return pe.Type == "rate_limit_error" && strings.Contains(strings.ToLower(pe.Message), "acceleration limit")
}

// refusalDimension maps providers.Error.RateLimitDimension's words to the budget's.
func refusalDimension(s string) limiter.Dimension {
	switch s {
	case "requests":
		return limiter.DimRequests
	case "input_tokens":
		return limiter.DimInput
	case "output_tokens":
		return limiter.DimOutput
	case "tokens":
		return limiter.DimTokens
	}
	return limiter.DimNone
}
