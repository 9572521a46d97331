package providers

import "testing"

func TestAdmissionDefaults(t *testing.T) {
	var a Admission
	req := &Request{Body: []byte(`{"system":"Be brief.","messages":[{"role":"user","content":"Hi"},{"role":"user","content":[{"type":"text","text":"there"},{"type":"image"}]}]}`)}
	if got := string(a.PromptText(req)); got != "Be brief.\nHi\nthere\n" {
		t.Errorf("PromptText = %q", got)
	}
	if a.OutputCap(req) != DefaultOutputReserve {
		t.Errorf("OutputCap without max_tokens = %d", a.OutputCap(req))
	}
	req.MaxTokens = 64
	if a.OutputCap(req) != 64 {
		t.Errorf("OutputCap = %d", a.OutputCap(req))
	}
	if a.InputCharged(Usage{InputTokens: 10, CacheReadTokens: 4}) != 10 {
		t.Error("the zero Admission charges all input")
	}
	a.Text = func(*Request) []byte { return []byte("x") }
	if string(a.PromptText(req)) != "x" {
		t.Error("Text overrides the chat reader")
	}
	if UncachedInput(Usage{InputTokens: 10, CacheReadTokens: 4}) != 6 || UncachedInput(Usage{CacheReadTokens: 4}) != 0 {
		t.Error("UncachedInput")
	}
}
