package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

func TestFilter(t *testing.T) {
	raw := []byte(`{
 "sample_spec": {"litellm_provider": "one of the providers", "mode": "chat", "input_cost_per_token": 0},
 "gpt-4o-mini": {"litellm_provider": "openai", "mode": "chat", "input_cost_per_token": 1.5e-7, "output_cost_per_token": 6e-7,
   "input_cost_per_token_batches": 7.5e-8, "input_cost_per_token_flex": 7.5e-8, "supports_vision": true, "max_tokens": 16384},
 "claude-sonnet-4-5": {"litellm_provider": "anthropic", "mode": "chat", "input_cost_per_token": 3e-6, "output_cost_per_token": 1.5e-5,
   "input_cost_per_token_above_200k_tokens": 6e-6, "source": "https://example.invalid/pricing"},
 "bedrock/anthropic.claude": {"litellm_provider": "bedrock", "mode": "chat", "input_cost_per_token": 3e-6},
 "dall-e-3": {"litellm_provider": "openai", "mode": "image_generation", "input_cost_per_pixel": 1e-8},
 "gemini/gemini-embedding-001": {"litellm_provider": "gemini", "mode": "embedding", "input_cost_per_token": 1.5e-7},
 "azure/gpt-4o": {"litellm_provider": "azure", "mode": "chat"}
}`)
	got, err := filter(raw)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"gpt-4o-mini": map[string]any{"litellm_provider": "openai", "mode": "chat", "input_cost_per_token": 1.5e-7,
			"output_cost_per_token": 6e-7, "input_cost_per_token_batches": 7.5e-8},
		"claude-sonnet-4-5": map[string]any{"litellm_provider": "anthropic", "mode": "chat", "input_cost_per_token": 3e-6,
			"output_cost_per_token": 1.5e-5, "input_cost_per_token_above_200k_tokens": 6e-6, "source": "https://example.invalid/pricing"},
		"gemini/gemini-embedding-001": map[string]any{"litellm_provider": "gemini", "mode": "embedding", "input_cost_per_token": 1.5e-7},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("filter =\n%v\nwant\n%v", got, want)
	}
}

func TestRunRefusesBrokenList(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.json")
	out := filepath.Join(dir, "out.json")
	os.WriteFile(in, []byte(`{"gpt-4o": {"litellm_provider": "openai", "mode": "chat", "input_cost_per_token": 1e-6}}`), 0o644)
	if err := run("", in, out, "2026-01-02", "test"); err == nil {
		t.Fatal("a one-model list was accepted")
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Error("the old snapshot was overwritten")
	}
	// A whole-enough list is written with its dated header.
	m := map[string]any{}
	for i := range 25 {
		m["m"+string(rune('a'+i))] = map[string]any{"litellm_provider": "openai", "mode": "chat", "input_cost_per_token": 1e-6}
	}
	b, _ := json.Marshal(m)
	os.WriteFile(in, b, 0o644)
	if err := run("", in, out, "2026-01-02", "test"); err != nil {
		t.Fatal(err)
	}
	var got map[string]map[string]any
	b, _ = os.ReadFile(out)
	json.Unmarshal(b, &got)
	if got["_snapshot"]["date"] != "2026-01-02" || got["_snapshot"]["source"] != "test" || len(got) != 26 {
		t.Errorf("written: %v", got["_snapshot"])
	}
}
