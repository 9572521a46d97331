package anthropic

import (
	"bytes"
	"context"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/llmrun/llmrun/providers"
)

// benchStream is a streamed answer of n text deltas in the exact event
// shape api.anthropic.com sends, with a ping every 100 deltas.
func benchStream(n int) []byte {
	var b strings.Builder
	b.WriteString("event: message_start\ndata: " + msgStart + "\n\n")
	b.WriteString("event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n")
	words := []string{" the", " quick", " brown", " fox", "\\n", " jumps", " \\\"over\\\"", " caf\\u00e9"}
	for i := range n {
		if i%100 == 0 {
			b.WriteString("event: ping\ndata: {\"type\": \"ping\"}\n\n")
		}
		b.WriteString("event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"" + words[i%len(words)] + "\"}}\n\n")
	}
	b.WriteString("event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n")
	b.WriteString("event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\",\"stop_sequence\":null},\"usage\":{\"output_tokens\":10000}}\n\n")
	b.WriteString("event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n")
	return []byte(b.String())
}

// BenchmarkStreamDecode measures the streaming path without HTTP: SSE
// decoding, event parsing and reassembly into the final message.
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
