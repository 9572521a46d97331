package forecast

import (
	"testing"

	"github.com/llmrun/llmrun/estimate"
	"github.com/llmrun/llmrun/limiter"
	"github.com/llmrun/llmrun/providers"
)

func TestFitsLimitsUsesTheRule(t *testing.T) {
	rule := providers.Admission{Text: func(*providers.Request) []byte { return make([]byte, 4000) }} // ~1000 tokens
	fits := FitsLimits(limiter.Limits{ITPM: 900}, estimate.NewEstimator(), rule)
	if err := fits(&providers.Request{Model: "m", Body: []byte(`{}`)}); err == nil {
		t.Error("1000 input tokens passed --itpm 900")
	}
	if err := FitsLimits(limiter.Limits{OTPM: 100}, estimate.NewEstimator(), rule)(&providers.Request{MaxTokens: 101}); err == nil {
		t.Error("max_tokens 101 passed --otpm 100")
	}
}
