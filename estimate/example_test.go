package estimate_test

import (
	"fmt"

	"github.com/llmrun/llmrun/estimate"
)

// What one request reserves, and how a response calibrates the next
// estimate on the same key.
func Example() {
	est := estimate.NewEstimator()
	const key = "anthropic|https://api.anthropic.com|claude-sonnet-4-5"

	prompt := []byte("Summarise: the quick brown fox jumps over the lazy dog.")
	raw := est.RawInputTokens("claude-sonnet-4-5", prompt) // once per request: tokenizing costs
	fmt.Println(est.Calibrate(key, raw), est.ExpectedOutput(key, 1024))

	// The provider counted 21 input tokens: later estimates on key follow.
	est.ObserveInput(key, raw, 21)
	fmt.Println(est.Calibrate(key, raw))
	// Output:
	// 14 1024
	// 21
}
