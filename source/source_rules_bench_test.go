package source

import (
	"testing"

	"github.com/llmrun/llmrun/modelrules"
	"github.com/llmrun/llmrun/providers"
)

// BenchmarkCheckRules is the check pass over simple lines without the
// model rules, with them for a reasoning model (each line rewritten to
// max_completion_tokens), and with them for a model of no family.
func BenchmarkCheckRules(b *testing.B) {
	const n = 200_000
	path := writeLines(b, b.TempDir(), n)
	for _, tc := range []struct {
		name  string
		rules *modelrules.Rules
		model string
	}{{"off", nil, "gpt-5-mini"}, {"on-reasoning", modelrules.Default(), "gpt-5-mini"}, {"on-unknown", modelrules.Default(), "m"}} {
		b.Run(tc.name, func(b *testing.B) {
			p := Parser{Format: providers.FormatOpenAI, Defaults: LineDefaults{Model: tc.model, MaxTokens: 20},
				Models: ModelRules{Rules: tc.rules, Notices: &modelrules.Notices{}}}
			for b.Loop() {
				src := &Source{Path: path, Parser: p}
				if _, err := src.Check(); err != nil {
					b.Fatal(err)
				}
				src.Close()
			}
		})
	}
}
