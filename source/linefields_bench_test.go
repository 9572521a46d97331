package source

import (
	"testing"

	"github.com/tidwall/gjson"
)

// BenchmarkLineFields is the one pass that gathers a line's members, over
// the line shapes the check pass meets: simple, OpenAI batch, Anthropic
// batch, Gemini batch.
func BenchmarkLineFields(b *testing.B) {
	lines := []gjson.Result{
		gjson.Parse(`{"custom_id":"request-00000001","prompt":"Tell me one fact about the number 1.","model":"m","max_tokens":20}`),
		gjson.Parse(`{"custom_id":"r2","method":"POST","url":"/v1/chat/completions","body":{"model":"m","messages":[{"role":"user","content":"hi"}]}}`),
		gjson.Parse(`{"custom_id":"r3","params":{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}}`),
		gjson.Parse(`{"key":"r4","request":{"contents":[{"parts":[{"text":"hi"}]}]},"tags":{"t":"a"},"priority":1}`),
	}
	b.ReportAllocs()
	for b.Loop() {
		for _, root := range lines {
			var f lineFields
			f.read(root)
			if !f.id.Exists() && !f.key.Exists() {
				b.Fatal("no id")
			}
		}
	}
}
