package runner

import (
	"context"
	"testing"

	"github.com/llmrun/llmrun/limiter"
	"github.com/llmrun/llmrun/providers"
)

// instantProvider answers every request at once with one canned answer:
// what a run costs per request besides the network.
type instantProvider struct{ resp providers.Response }

func (p *instantProvider) Name() string             { return "fake" }
func (p *instantProvider) Format() providers.Format { return providers.FormatOpenAI }
func (p *instantProvider) BaseURL() string          { return "http://fake" }
func (p *instantProvider) Send(context.Context, *providers.Request) (*providers.Response, error) {
	r := p.resp
	return &r, nil
}

// BenchmarkRunPerRequest: the runner's own CPU and allocations per request
// (admission, permit, the output line, checkpoint append), an OpenAI model
// under no limits, against a provider that answers at once. One op is one
// request.
func BenchmarkRunPerRequest(b *testing.B) {
	const n = 2000
	body := `{"id":"x","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"an answer"},"finish_reason":"stop"}],"usage":{"prompt_tokens":12,"completion_tokens":109,"total_tokens":121}}`
	p := &instantProvider{resp: providers.Response{Status: 200, Body: []byte(body), Text: "an answer", Usage: providers.Usage{InputTokens: 12, OutputTokens: 109}}}
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		cfg, store := testRun(b, b.TempDir(), n, p, func(c *Config) {
			c.Source.Parser.Defaults.Model = "gpt-4o-mini"
			c.Limiter = limiter.AsBudget(limiter.New(limiter.Options{Defaults: limiter.Limits{Auto: true}}))
			c.Concurrency = 64
		})
		b.StartTimer()
		if sum, err := Run(context.Background(), cfg); err != nil || sum.Succeeded != n {
			b.Fatalf("run: %v, %+v", err, sum)
		}
		b.StopTimer()
		store.Close()
		b.StartTimer()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/request")
}
