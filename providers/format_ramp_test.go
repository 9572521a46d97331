package providers

import "testing"

// TestIsRampPerFormat: each format knows its own words for a refusal for
// acceleration, and another format's words are not a ramp.
func TestIsRampPerFormat(t *testing.T) {
	slowDown := &Error{Status: 429, Code: "slow_down", Message: "slow down"}
	accel := &Error{Status: 429, Type: "rate_limit_error",
		Message: "Your organization's usage increased too sharply and exceeded the Acceleration Limit."}
	plain := &Error{Status: 429, Type: "rate_limit_error", Code: "rate_limit_exceeded", Message: "Rate limit reached"}
	for _, c := range []struct {
		f    Format
		pe   *Error
		want bool
	}{
		{FormatOpenAI, slowDown, true},
		{FormatOpenAI, accel, false},
		{FormatOpenAI, plain, false},
		{FormatAnthropic, accel, true},
		{FormatAnthropic, slowDown, false},
		{FormatAnthropic, plain, false},
		{FormatGemini, slowDown, false},
		{FormatGemini, accel, false},
		{Format(0), slowDown, true}, // an unknown format reads as Chat Completions
	} {
		if got := c.f.IsRamp(c.pe); got != c.want {
			t.Errorf("%s.IsRamp(%+v) = %v, want %v", c.f, c.pe, got, c.want)
		}
	}
}
