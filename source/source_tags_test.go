package source

import (
	"maps"
	"strings"
	"testing"

	"github.com/llmrun/llmrun/providers"
)

// TestParseTags: a line's top-level tags are read in every shape, never
// reach the body nor the fingerprint; bad tags are input errors; a
// body's own "tags" is not the line's.
func TestParseTags(t *testing.T) {
	p := Parser{Format: providers.FormatOpenAI, Defaults: LineDefaults{Model: "m"}}
	fps := NewFingerprinter(Route{Provider: &slowProvider{}})
	for line, want := range map[string]map[string]string{
		`{"custom_id":"a","prompt":"x","tags":{"team":"search","n":3,"ok":true}}`:                                             {"team": "search", "n": "3", "ok": "true"},
		`{"custom_id":"a","prompt":"x","tags":null}`:                                                                          nil,
		`{"custom_id":"a","prompt":"x","tags":{}}`:                                                                            nil,
		`{"custom_id":"a","body":{"messages":[{"role":"user","content":"x"}]},"tags":{"team":"ads"}}`:                         {"team": "ads"},
		`{"custom_id":"a","body":{"messages":[{"role":"user","content":"x"}],"tags":{"team":"ads"}}}`:                         nil,
		`{"custom_id":"a","params":{"model":"c","max_tokens":5,"messages":[{"role":"user","content":"x"}]},"tags":{"t":"1"}}`: {"t": "1"},
	} {
		req, err := p.Parse([]byte(line), 1)
		if err != nil {
			t.Errorf("%s: %v", line, err)
			continue
		}
		if !maps.Equal(req.Tags, want) {
			t.Errorf("%s: tags %v, want %v", line, req.Tags, want)
		}
		if want != nil && strings.Contains(string(req.Body), "tags") {
			t.Errorf("%s: the tags reached the body %s", line, req.Body)
		}
	}
	a, _ := p.Parse([]byte(`{"custom_id":"a","prompt":"x","tags":{"team":"search"}}`), 1)
	b, _ := p.Parse([]byte(`{"custom_id":"a","prompt":"x","tags":{"team":"ads"}}`), 1)
	c, _ := p.Parse([]byte(`{"custom_id":"a","prompt":"x"}`), 1)
	if fps.Of(a) != fps.Of(b) || fps.Of(a) != fps.Of(c) {
		t.Error("the tags change the fingerprint")
	}
	for _, line := range []string{
		`{"prompt":"x","tags":"search"}`, `{"prompt":"x","tags":["a"]}`, `{"prompt":"x","tags":{"team":{"a":1}}}`,
		`{"prompt":"x","tags":{"team":null}}`, `{"prompt":"x","tags":{"":"x"}}`, `{"prompt":"x","tags":{"t":"` + strings.Repeat("v", 300) + `"}}`,
	} {
		if _, err := p.Parse([]byte(line), 1); err == nil || !strings.Contains(err.Error(), "tags") {
			t.Errorf("%s: err = %v, want a tags error", line, err)
		}
	}
}
