package openai

import (
	"bytes"
	"context"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/llmrun/llmrun/providers"
)

// benchStream is a streamed answer of n content tokens in the exact chunk
// shape api.openai.com sends (usage:null on every chunk, obfuscation padding).
func benchStream(n int) []byte {
	const head = `data: {"id":"chatcmpl-BENCH0001","object":"chat.completion.chunk","created":1735689600,"model":"gpt-4o-mini-2024-07-18","service_tier":"default","system_fingerprint":"fp_mock01","choices":[{"index":0,"delta":{`
	var b strings.Builder
	b.WriteString(head + `"role":"assistant","content":"","refusal":null},"logprobs":null,"finish_reason":null}],"usage":null,"obfuscation":"x"}` + "\n\n")
	words := []string{" the", " quick", " brown", " fox", "\\n", " jumps", " \\\"over\\\"", " caf\\u00e9"}
	for i := range n {
		b.WriteString(head + `"content":"` + words[i%len(words)] + `"},"logprobs":null,"finish_reason":null}],"usage":null,"obfuscation":"abcde"}` + "\n\n")
	}
	b.WriteString(head + `},"logprobs":null,"finish_reason":"stop"}],"usage":null}` + "\n\n")
	b.WriteString(`data: {"id":"chatcmpl-BENCH0001","object":"chat.completion.chunk","created":1735689600,"model":"gpt-4o-mini-2024-07-18","system_fingerprint":"fp_mock01","choices":[],"usage":{"prompt_tokens":21,"completion_tokens":` + "10000" + `,"total_tokens":10021}}` + "\n\ndata: [DONE]\n\n")
	return []byte(b.String())
}

// BenchmarkStreamDecode measures the streaming path without HTTP: SSE
// decoding, chunk parsing and reassembly into the final body.
func BenchmarkStreamDecode(b *testing.B) {
	const tokens = 10000
	stream := benchStream(tokens)
	p := New(providers.Config{})
	ctx := context.Background()
	b.SetBytes(int64(len(stream)))
	var ms0, ms1 runtime.MemStats
	runtime.ReadMemStats(&ms0)
	b.ResetTimer()
	for b.Loop() {
		out := &providers.Response{Status: 200}
		if err := p.readStream(ctx, bytes.NewReader(stream), out, time.Time{}); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	runtime.ReadMemStats(&ms1)
	per := float64(b.N) * tokens
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/per, "ns/token")
	b.ReportMetric(float64(ms1.Mallocs-ms0.Mallocs)/per, "allocs/token")
}

func TestBenchStreamIsValid(t *testing.T) {
	out := &providers.Response{Status: 200}
	if err := New(providers.Config{}).readStream(t.Context(), bytes.NewReader(benchStream(16)), out, time.Time{}); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out.Text, " the quick brown fox\n jumps \"over\" café the") || out.Usage.OutputTokens != 10000 {
		t.Fatalf("text %q usage %+v", out.Text, out.Usage)
	}
}
