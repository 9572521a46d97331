package job

import (
	"testing"

	"github.com/llmrun/llmrun/providers"
	"github.com/llmrun/llmrun/providers/registry"
)

// TestRouteModelIsTheDeployment: a route to an Azure deployment URL sends
// every request as that deployment, so the budget has one model key for
// it whatever models the lines name; a bare endpoint leaves the model to
// the lines (it names the deployment there).
func TestRouteModelIsTheDeployment(t *testing.T) {
	env := map[string]string{"AZURE_OPENAI_API_KEY": "k", "OPENAI_API_VERSION": "2024-10-21"}
	b := &batch{io: &IO{Getenv: func(k string) string { return env[k] }}, set: registry.NewSet(func(k string) string { return env[k] }, providers.Config{})}
	defer b.set.Close()
	for base, want := range map[string]string{
		"https://x.openai.azure.com/openai/deployments/dep1": "dep1",
		"https://x.openai.azure.com":                         "",
		"https://x.openai.azure.com/openai/v1":               "",
	} {
		rt, _, err := b.route("azure", providers.FormatOpenAI, base)
		if err != nil || rt.Model != want {
			t.Errorf("%s: model %q, %v; want %q", base, rt.Model, err, want)
		}
	}
	if _, _, err := b.route("azure", providers.FormatOpenAI, "https://x.openai.azure.com/openai/models"); err == nil {
		t.Error("a path Azure does not serve was accepted")
	} else if _, ok := err.(*UsageError); !ok {
		t.Errorf("a bad endpoint is a usage error (exit 2): %T %v", err, err)
	}
}
