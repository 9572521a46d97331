package cmd

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestEstimateLabels is issue 24 item 3: a single request is "1 request";
// a gpt-4o line sent to Anthropic is refused at the check (issue 31's family
// rules), and through a gateway (another base URL, which may serve any
// model) priced with a warning; --max-cost under the bound says so; a
// --config endpoint's limits give the wall time.
func TestEstimateLabels(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "one.jsonl")
	if err := os.WriteFile(in, []byte(`{"custom_id":"a","model":"gpt-4o","prompt":"hello","max_tokens":100000}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c := &cli{}
	if code := c.run(t, "estimate", in, "--provider", "anthropic", "--offline"); code != 2 || !strings.Contains(c.stderr.String(), "gpt-4o is an OpenAI model but --provider anthropic") {
		t.Fatalf("gpt-4o to anthropic's own API: exit %d, want 2 naming the family: %s", code, c.stderr.String())
	}
	if code := c.run(t, "estimate", in, "--provider", "anthropic", "--base-url", "http://127.0.0.1:1", "--offline", "--max-cost", "0.01"); code != 0 {
		t.Fatalf("exit %d: %s", code, c.stderr.String())
	}
	got := c.stdout.String()
	for _, want := range []string{
		"1 request to send to anthropic;",
		"gpt-4o is priced at openai's price for gpt-4o, but is sent to anthropic",
		"the bound $1.0000 is over --max-cost $0.0100",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %q in:\n%s", want, got)
		}
	}
	gem := filepath.Join(dir, "gem.jsonl")
	if err := os.WriteFile(gem, []byte(`{"custom_id":"a","model":"gemini-2.5-flash","prompt":"hello","max_tokens":10}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code := c.run(t, "estimate", gem, "--offline"); code != 2 || !strings.Contains(c.stderr.String(), "did you mean --provider gemini?") {
		t.Errorf("gemini line to openai: exit %d, want 2 with a --provider gemini hint:\n%s", code, c.stderr.String())
	}
	cfg := filepath.Join(dir, "llmrun.yaml")
	if err := os.WriteFile(cfg, []byte("endpoints:\n  gw:\n    provider: openai\n    base_url: http://127.0.0.1:1/v1\n    key_env: GW_KEY\n    limits: {rpm: 30}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code := c.run(t, "estimate", in, "--config", cfg, "--provider", "gw"); code != 0 {
		t.Fatalf("--config: exit %d: %s", code, c.stderr.String())
	}
	if got := c.stdout.String(); !strings.Contains(got, "wall time: about") || strings.Contains(got, "unknown without limits") || strings.Contains(got, "but is sent to") {
		t.Errorf("--config limits not used for the wall time:\n%s", got)
	}
}
