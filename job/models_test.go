package job

import (
	"testing"

	"github.com/llmrun/llmrun/providers/registry"
)

// TestModelRulesServes: only a provider's own API (or the mock speaking
// its format) is taken to serve its models alone.
func TestModelRulesServes(t *testing.T) {
	o := &BatchOptions{}
	io := &IO{Getenv: func(string) string { return "" }}
	for _, tc := range []struct{ provider, url, want string }{
		{"openai", "https://api.openai.com/v1", "openai"},
		{"openai", "https://api.openai.com/v1/", "openai"},
		{"openai", "http://localhost:8000/v1", ""},
		{"anthropic", "https://api.anthropic.com", "anthropic"},
		{"gemini", "https://generativelanguage.googleapis.com/v1beta", "gemini"},
		{"groq", "https://api.groq.com/openai/v1", ""},
		{"azure", "https://x.openai.azure.com/openai/v1", ""},
		{"mock-gemini", "http://127.0.0.1:1/v1beta", "gemini"},
		{"mock-azure", "http://127.0.0.1:1/openai", ""},
	} {
		e, err := registry.Lookup(tc.provider)
		if err != nil {
			t.Fatal(err)
		}
		if got := o.modelRules(io, e, tc.url).Serves; got != tc.want {
			t.Errorf("%s at %s serves %q, want %q", tc.provider, tc.url, got, tc.want)
		}
	}
	if err := (&ModelOptions{Override: true}).check(""); err == nil {
		t.Error("--override-model without a model accepted")
	}
}
