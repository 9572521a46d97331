package source

import (
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/llmrun/llmrun/modelrules"
	"github.com/llmrun/llmrun/providers"
)

func rulesParser(f providers.Format, said *[]string) Parser {
	return Parser{Format: f, Defaults: LineDefaults{MaxTokens: 50},
		Models: ModelRules{Rules: modelrules.Default(), Notices: &modelrules.Notices{Say: func(m string) { *said = append(*said, m) }}}}
}

// TestParserModelRules: every shape of line, once in the provider's
// format, passes its model family's rules: rewritten where equivalent
// (said once), refused where not.
func TestParserModelRules(t *testing.T) {
	var said []string
	p := rulesParser(providers.FormatOpenAI, &said)
	for i, tc := range []struct{ line, field string }{
		{`{"prompt":"hi","model":"gpt-5-mini"}`, "max_completion_tokens"},
		{`{"prompt":"hi","model":"gpt-4o-mini"}`, "max_tokens"},
		{`{"body":{"model":"o3-mini","messages":[{"role":"user","content":"x"}],"max_tokens":9}}`, "max_completion_tokens"},
		{`{"params":{"model":"o4-mini","max_tokens":9,"messages":[{"role":"user","content":"x"}]}}`, "max_completion_tokens"},
		{`{"body":{"model":"o3-mini","messages":[{"role":"user","content":"x"}],"max_tokens":9}}`, "max_completion_tokens"},
	} {
		req, err := p.Parse([]byte(tc.line), i+1)
		if err != nil {
			t.Fatalf("line %d: %v", i+1, err)
		}
		if !gjson.GetBytes(req.Body, tc.field).Exists() || req.MaxTokens == 0 {
			t.Errorf("line %d: %s has no %s", i+1, req.Body, tc.field)
		}
		other := "max_tokens"
		if tc.field == other {
			other = "max_completion_tokens"
		}
		if gjson.GetBytes(req.Body, other).Exists() {
			t.Errorf("line %d: %s has %s too", i+1, req.Body, other)
		}
	}
	if len(said) != 1 {
		t.Errorf("said %q, want one note", said)
	}

	a := rulesParser(providers.FormatAnthropic, &said)
	if _, err := a.Parse([]byte(`{"body":{"model":"claude-opus-4-1","messages":[{"role":"user","content":"x"}],"temperature":0.3,"top_p":0.5}}`), 1); err == nil ||
		!strings.Contains(err.Error(), "temperature and top_p cannot both be specified") {
		t.Errorf("err %v", err)
	}
	if _, err := p.Parse([]byte(`{"body":{"model":"gpt-5","messages":[{"role":"user","content":"x"}],"top_p":0.5}}`), 1); err == nil ||
		!strings.Contains(err.Error(), "takes only the default top_p") {
		t.Errorf("err %v", err)
	}
}

// TestParserModelChoice: --override-model replaces every line's model,
// model_map renames, and a destination serving one provider's models
// refuses another's (a custom model passes).
func TestParserModelChoice(t *testing.T) {
	var said []string
	p := rulesParser(providers.FormatGemini, &said)
	p.Models.Serves, p.Models.ServesName = "gemini", "gemini"
	lines := []string{`{"prompt":"hi","model":"gpt-4o-mini"}`, `{"body":{"model":"claude-sonnet-4-5","messages":[{"role":"user","content":"x"}]}}`}
	for i, l := range lines {
		_, err := p.Parse([]byte(l), i+1)
		if err == nil || !strings.Contains(err.Error(), "--provider gemini serves gemini models") {
			t.Errorf("line %d: err %v", i+1, err)
		}
	}
	if _, err := p.Parse([]byte(`{"prompt":"hi","model":"my-tuned-model"}`), 1); err != nil {
		t.Errorf("a model of no family: %v", err)
	}

	o := p
	o.Defaults.Model, o.Models.Override = "gemini-2.5-flash", true
	m := p
	m.Models.Map = map[string]string{"gpt-4o-mini": "gemini-2.5-pro", "claude-sonnet-4-5": "gemini-2.5-flash"}
	for i, l := range lines {
		for name, q := range map[string]Parser{"override": o, "map": m} {
			req, err := q.Parse([]byte(l), i+1)
			if err != nil {
				t.Fatalf("%s line %d: %v", name, i+1, err)
			}
			if got := gjson.GetBytes(req.Body, "model").Str; got != req.Model || !strings.HasPrefix(got, "gemini-2.5-") {
				t.Errorf("%s line %d: body model %q, request model %q", name, i+1, got, req.Model)
			}
		}
	}
}
