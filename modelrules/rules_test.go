package modelrules

import (
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"
)

// TestSnapshotModelsHaveTheirProvidersFamily reads the price snapshot
// (LiteLLM's list, as pricing/gen keeps it) and checks every model of the
// providers llmrun speaks falls in a family of its own provider: a model
// matched by another provider's pattern would be refused for the wrong
// reason.
func TestSnapshotModelsHaveTheirProvidersFamily(t *testing.T) {
	data, err := os.ReadFile("../pricing/snapshot.json")
	if err != nil {
		t.Fatal(err)
	}
	var snap map[string]json.RawMessage
	if err := json.Unmarshal(data, &snap); err != nil {
		t.Fatal(err)
	}
	r := Default()
	n := 0
	for name, raw := range snap {
		var e struct {
			Provider string `json:"litellm_provider"`
		}
		if json.Unmarshal(raw, &e) != nil || e.Provider == "" || e.Provider == "azure" {
			continue
		}
		model := strings.TrimPrefix(name, "gemini/")
		f := r.Family(model)
		if f == nil {
			t.Errorf("%s (%s) is in no family", model, e.Provider)
			continue
		}
		if f.Provider != e.Provider {
			t.Errorf("%s is a %s model but falls in family %s of %s", model, e.Provider, f.Name, f.Provider)
		}
		n++
	}
	if n < 100 {
		t.Fatalf("only %d models checked", n)
	}
}

func TestFamilies(t *testing.T) {
	r := Default()
	for model, want := range map[string]string{
		"gpt-5-mini":                 "openai-reasoning",
		"gpt-5":                      "openai-reasoning",
		"gpt-5-2025-08-07":           "openai-reasoning",
		"o3-mini":                    "openai-reasoning",
		"o1":                         "openai-reasoning",
		"o4-mini-2025-04-16":         "openai-reasoning",
		"gpt-5.1":                    "openai-gpt-5.x",
		"gpt-5-1-mini":               "openai-gpt-5.x",
		"gpt-5-chat-latest":          "openai-gpt-5-chat",
		"gpt-5.2-chat-latest":        "openai-gpt-5-chat",
		"gpt-4o-mini":                "openai",
		"claude-sonnet-4-5":          "anthropic-exclusive-sampling",
		"claude-sonnet-4-5-20250929": "anthropic-exclusive-sampling",
		"claude-opus-4-1":            "anthropic-exclusive-sampling",
		"claude-opus-4.6":            "anthropic-exclusive-sampling",
		"claude-haiku-4-5":           "anthropic-exclusive-sampling",
		"claude-4-5-opus":            "anthropic-exclusive-sampling",
		"claude-sonnet-4":            "anthropic",
		"claude-sonnet-4-20250514":   "anthropic",
		"claude-opus-4-0":            "anthropic",
		"claude-3-5-haiku":           "anthropic",
		"gemini-2.5-flash":           "gemini",
		"models/gemini-2.5-pro":      "gemini",
		"llama3.1":                   "",
		"mock-1":                     "",
		"Qwen/Qwen2.5-7B-Instruct":   "",
	} {
		got := ""
		if f := r.Family(model); f != nil {
			got = f.Name
		}
		if got != want {
			t.Errorf("Family(%q) = %q, want %q", model, got, want)
		}
	}
}

func TestApply(t *testing.T) {
	r := Default()
	cases := []struct {
		name, format, ep, body string
		want                   string // the body out; "" when refused
		refuse                 string // in the error
		changes                int
	}{
		{"reasoning max_tokens renamed", "openai", Chat,
			`{"model":"o3-mini","messages":[],"max_tokens":64}`,
			`{"model":"o3-mini","messages":[],"max_completion_tokens":64}`, "", 1},
		{"both caps refused", "openai", Chat,
			`{"model":"o3-mini","max_tokens":64,"max_completion_tokens":64}`, "", "remove max_tokens", 0},
		{"default temperature kept (accepted, and the fingerprint stays)", "openai", Chat,
			`{"model":"gpt-5-mini","temperature":1.0,"max_completion_tokens":5}`,
			`{"model":"gpt-5-mini","temperature":1.0,"max_completion_tokens":5}`, "", 0},
		{"other temperature refused", "openai", Chat,
			`{"model":"gpt-5-mini","temperature":0.2}`, "", "only the default temperature (1), not 0.2", 0},
		{"5.x temperature with reasoning none", "openai", Chat,
			`{"model":"gpt-5.1","temperature":0.2,"reasoning_effort":"none"}`,
			`{"model":"gpt-5.1","temperature":0.2,"reasoning_effort":"none"}`, "", 0},
		{"gpt-4o untouched", "openai", Chat,
			`{"model":"gpt-4o-mini","temperature":0.2,"max_tokens":9}`,
			`{"model":"gpt-4o-mini","temperature":0.2,"max_tokens":9}`, "", 0},
		{"unknown model untouched", "openai", Chat,
			`{"model":"llama3","response_format":{"type":"json_object"},"messages":[{"role":"user","content":"hi"}]}`,
			`{"model":"llama3","response_format":{"type":"json_object"},"messages":[{"role":"user","content":"hi"}]}`, "", 0},
		{"json mode without the word", "openai", Chat,
			`{"model":"gpt-4o-mini","response_format":{"type":"json_object"},"messages":[{"role":"user","content":"hi"}]}`, "", `word "json"`, 0},
		{"json mode with the word in a part", "openai", Chat,
			`{"model":"gpt-4o-mini","response_format":{"type":"json_object"},"messages":[{"role":"user","content":[{"type":"text","text":"Answer in JSON"}]}]}`,
			`{"model":"gpt-4o-mini","response_format":{"type":"json_object"},"messages":[{"role":"user","content":[{"type":"text","text":"Answer in JSON"}]}]}`, "", 0},
		{"claude temperature with top_p", "anthropic", Chat,
			`{"model":"claude-sonnet-4-5","temperature":0.5,"top_p":0.9}`, "", "temperature and top_p cannot both be specified", 0},
		{"older claude takes both", "anthropic", Chat,
			`{"model":"claude-sonnet-4","temperature":0.5,"top_p":0.9}`,
			`{"model":"claude-sonnet-4","temperature":0.5,"top_p":0.9}`, "", 0},
		{"claude temperature above 1", "anthropic", Chat,
			`{"model":"claude-3-5-haiku","temperature":1.5}`, "", "at most 1", 0},
		{"embeddings untouched", "openai", Embeddings,
			`{"model":"o3-mini","max_tokens":5}`, `{"model":"o3-mini","max_tokens":5}`, "", 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, changes, err := r.Apply([]byte(c.body), c.format, c.ep)
			if c.refuse != "" {
				var re *Error
				if !errors.As(err, &re) || !strings.Contains(err.Error(), c.refuse) {
					t.Fatalf("err = %v, want an *Error saying %q", err, c.refuse)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if string(out) != c.want {
				t.Errorf("body = %s, want %s", out, c.want)
			}
			if len(changes) != c.changes {
				t.Errorf("changes = %v, want %d", changes, c.changes)
			}
		})
	}
}

func TestNoticesSayEachKeyOnce(t *testing.T) {
	var said []string
	n := &Notices{Say: func(m string) { said = append(said, m) }}
	n.Note([]Change{{Key: "a", Msg: "A"}})
	n.Note([]Change{{Key: "a", Msg: "A"}, {Key: "b", Msg: "B"}})
	if strings.Join(said, ",") != "A,B" {
		t.Fatalf("said %v", said)
	}
}
