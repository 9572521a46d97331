package runner

import (
	"time"

	"github.com/llmrun/llmrun/limiter"
	"github.com/llmrun/llmrun/providers"
)

// refusal is what the budget is told of a refusal for load: the server's
// hint, whether the answer carried rate-limit headers (then they calibrate
// the key and no rate is learned from the 429) and the dimension it
// names, so a rate is learned only for that one. f is the format pe was
// answered in: it knows how a refusal for acceleration is worded.
func refusal(pe *providers.Error, f providers.Format, retryAfter time.Duration, hinted bool) limiter.Refusal {
	l := pe.Limits
	return limiter.Refusal{
		Overloaded:    pe.Class == providers.ClassOverloaded,
		RetryAfter:    retryAfter,
		HasRetryAfter: hinted,
		Described:     l.Requests.Known() || l.Tokens.Known() || l.InputTokens.Known() || l.OutputTokens.Known(),
		Dimension:     refusalDimension(pe.RateLimitDimension()),
		Ramp:          f.IsRamp(pe),
	}
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
