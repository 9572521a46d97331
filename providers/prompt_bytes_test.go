package providers

import "testing"

// TestPromptBodyBytes pins the bytes of a simple prompt's body per format:
// request fingerprints hash them, so a change would send every answered
// request again on resume.
func TestPromptBodyBytes(t *testing.T) {
	p := Prompt{System: "Be <brief>", Prompt: "Say \"hi\"\n", Model: "m-1", MaxTokens: 7}
	bare := Prompt{Prompt: "x", Model: "m"}
	for _, c := range []struct {
		p    Prompt
		f    Format
		want string
	}{
		{p, FormatOpenAI, `{"model":"m-1","messages":[{"content":"Be \u003cbrief\u003e","role":"system"},{"content":"Say \"hi\"\n","role":"user"}],"max_tokens":7}`},
		{Prompt{Prompt: "x", Model: "m", MaxTokens: 3, CompletionTokens: true}, FormatOpenAI, `{"model":"m","messages":[{"content":"x","role":"user"}],"max_completion_tokens":3}`},
		{bare, FormatOpenAI, `{"model":"m","messages":[{"content":"x","role":"user"}]}`},
		{p, FormatAnthropic, `{"model":"m-1","max_tokens":7,"system":"Be <brief>","messages":[{"content":"Say \"hi\"\n","role":"user"}]}`},
		{bare, FormatAnthropic, `{"model":"m","max_tokens":0,"messages":[{"content":"x","role":"user"}]}`},
		{p, FormatGemini, `{"model":"m-1","systemInstruction":{"parts":[{"text":"Be <brief>"}]},"contents":[{"parts":[{"text":"Say \"hi\"\n"}],"role":"user"}],"generationConfig":{"maxOutputTokens":7}}`},
		{bare, FormatGemini, `{"model":"m","contents":[{"parts":[{"text":"x"}],"role":"user"}]}`},
		{bare, Format(0), `{"model":"m","messages":[{"content":"x","role":"user"}]}`},
	} {
		got, err := c.p.Build(c.f)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != c.want {
			t.Errorf("%s %+v:\n got %s\nwant %s", c.f, c.p, got, c.want)
		}
	}
}
