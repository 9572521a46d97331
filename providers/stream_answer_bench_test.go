package providers_test

import (
	"context"
	"testing"
)

// BenchmarkStreamAnswer is BenchmarkStreamDecode at a chat answer's size
// (109 tokens, as scripts/sdkbench.sh's): what a stream costs once, its
// request's shaping, the decoder, the buffers' growth and the final body,
// weighs here as it does in a batch; B/op and allocs/op are per answer.
func BenchmarkStreamAnswer(b *testing.B) {
	const tokens = 109
	for _, r := range rows {
		b.Run(r.title(), func(b *testing.B) {
			stream := r.bench(tokens)
			p := r.replaying(string(stream))
			req := r.request("x", 1<<20)
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if _, err := p.Send(ctx, req); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/tokens, "ns/token")
		})
	}
}
