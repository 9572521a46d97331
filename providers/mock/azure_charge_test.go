package mock_test

import (
	"strconv"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/llmrun/llmrun/providers/mock"
)

// TestAzureChargeMaxTokens: with the switch, an Azure request takes its
// prompt + max_tokens from the token counter the headers report, keeps it
// whatever the answer's length, and is refused (429) once the counter
// cannot cover it; OpenAI's route and the switch off take the input only.
func TestAzureChargeMaxTokens(t *testing.T) {
	const azurePath = "/openai/deployments/dep1/chat/completions?api-version=2024-10-21"
	key := []string{"api-key", "k"}
	body := oaBody("Name a prime number.", `,"max_tokens":400`)
	for _, tc := range []struct {
		name   string
		on     bool
		path   string
		charge func(in int64) int64
	}{
		{"azure, switch on", true, azurePath, func(in int64) int64 { return in + 400 }},
		{"azure, switch off", false, azurePath, func(in int64) int64 { return in }},
		{"openai, switch on", true, "/v1/chat/completions", func(in int64) int64 { return in }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clock := newClock() // stopped: nothing refills
			srv, m := start(t, mock.Config{ITPM: 120000, AzureChargeMaxTokens: tc.on, Now: clock.Now})
			last := int64(2000) // 120,000 a minute, 1 s burst
			refused, inSum := false, int64(0)
			for i := range 12 {
				res := post(t, srv, tc.path, body, key...)
				rem, err := strconv.ParseInt(res.header.Get("x-ratelimit-remaining-tokens"), 10, 64)
				if err != nil {
					t.Fatalf("request %d: %d, remaining %q", i, res.status, res.header.Get("x-ratelimit-remaining-tokens"))
				}
				if res.status == 429 {
					if want := tc.charge(gjson.GetBytes(res.body, "usage.prompt_tokens").Int()); last >= want && tc.on && tc.path == azurePath {
						t.Fatalf("request %d refused with %d remaining", i, last)
					}
					refused = true
					break
				}
				if res.status != 200 {
					t.Fatalf("request %d: %d %s", i, res.status, res.body)
				}
				in := gjson.GetBytes(res.body, "usage.prompt_tokens").Int()
				if out := gjson.GetBytes(res.body, "usage.completion_tokens").Int(); out >= 400 {
					t.Fatalf("answer of %d tokens: the test needs short answers", out)
				}
				if got, want := last-rem, tc.charge(in); got != want {
					t.Fatalf("request %d: remaining dropped by %d, want %d", i, got, want)
				}
				last = rem
				inSum += in
			}
			if st := m.Stats(); st.InputTokens != inSum {
				t.Errorf("stats count %d input tokens, the answers %d: the cap charge is not input", st.InputTokens, inSum)
			}
			if refused != (tc.on && tc.path == azurePath) {
				t.Errorf("refused %v", refused)
			}
		})
	}
}
