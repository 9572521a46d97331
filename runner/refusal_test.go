package runner

import (
	"testing"

	"github.com/llmrun/llmrun/providers"
)

// TestRefusalRampByFormat: a refusal is a ramp by the words of the format
// that answered it, the mock's acceleration 429s among them.
func TestRefusalRampByFormat(t *testing.T) {
	slowDown := &providers.Error{Class: providers.ClassRateLimited, Status: 429, Code: "slow_down"}
	accel := &providers.Error{Class: providers.ClassRateLimited, Status: 429, Type: "rate_limit_error",
		Message: "Your organization's usage increased too sharply and exceeded the acceleration limit."}
	if !refusal(slowDown, providers.FormatOpenAI, 0, false).Ramp {
		t.Error("OpenAI slow_down: not a ramp")
	}
	if !refusal(accel, providers.FormatAnthropic, 0, false).Ramp {
		t.Error("Anthropic acceleration limit: not a ramp")
	}
	if refusal(accel, providers.FormatGemini, 0, false).Ramp {
		t.Error("Gemini documents no acceleration limit, yet a ramp")
	}
}
