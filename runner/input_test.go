package runner

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/llmrun/llmrun/limiter"
	"github.com/llmrun/llmrun/providers"
)

// tokenHeaderProvider answers like slowProvider; from its from-th answer
// on, its headers describe a combined token limit (OpenAI's TPM).
type tokenHeaderProvider struct {
	slowProvider
	from int64
}

func (p *tokenHeaderProvider) Send(ctx context.Context, req *providers.Request) (*providers.Response, error) {
	resp, err := p.slowProvider.Send(ctx, req)
	if err == nil {
		unknown := providers.Window{Limit: -1, Remaining: -1}
		resp.Limits = providers.RateLimits{Requests: unknown, Tokens: unknown, InputTokens: unknown, OutputTokens: unknown, DayRequests: unknown, DayTokens: unknown}
		if p.finished.Load() >= p.from {
			resp.Limits.Tokens = providers.Window{Limit: 1_000_000, Remaining: 999_000, Reset: time.Second}
		}
	}
	return resp, err
}

// TestTokenizerOnlyWhereACountIsRead: an OpenAI model's prompts are
// tokenized (tiktoken, the costliest step of a request) only once
// something reads the count: not while no token limit binds, for every
// request under a given --itpm, and from the first admission after a
// token limit is learned from the headers mid-run. A placeholder never
// calibrates the estimator.
func TestTokenizerOnlyWhereACountIsRead(t *testing.T) {
	const n = 8
	for _, tc := range []struct {
		name   string
		lim    limiter.Limits
		from   int64 // headers name a token limit from this answer on; 0: never
		wantLo int64
		wantHi int64
	}{
		{name: "nothing binds", lim: limiter.Limits{Auto: true}, wantLo: 0, wantHi: 0},
		{name: "itpm given", lim: limiter.Limits{ITPM: 1e6}, wantLo: n, wantHi: n},
		// One at a time (the key's concurrency: the run's slot is taken
		// after the reservation): answers 1-3 come before the limit is known (the
		// third one's headers teach it), the other five after.
		{name: "learned mid-run", lim: limiter.Limits{Auto: true, Concurrency: 1}, from: 3, wantLo: n - 3, wantHi: n - 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p := &tokenHeaderProvider{slowProvider: slowProvider{latency: 10 * time.Millisecond}, from: tc.from}
				if tc.from == 0 {
					p.from = 1 << 62
				}
				cfg, store := testRun(t, t.TempDir(), n, p, func(c *Config) {
					c.Source.Parser.Defaults.Model = "gpt-4o-mini"
					c.Limiter = limiter.AsBudget(limiter.New(limiter.Options{Defaults: tc.lim}))
					c.Concurrency = 1
				})
				defer store.Close()
				sum, err := Run(context.Background(), cfg)
				if err != nil || sum.Succeeded != n {
					t.Fatalf("run: %v, %+v", err, sum)
				}
				if got := cfg.Estimator.Tokenized(); got < tc.wantLo || got > tc.wantHi {
					t.Fatalf("tokenized %d prompts, want %d–%d", got, tc.wantLo, tc.wantHi)
				}
				key := "fake|http://fake|gpt-4o-mini"
				if tc.wantHi == 0 && cfg.Estimator.Ratio(key) != 1 {
					t.Fatalf("calibration ratio %v: a placeholder calibrated the estimator", cfg.Estimator.Ratio(key))
				}
			})
		})
	}
}

// TestUntokenizedModelStillCalibrates: a model without a tokenizer is
// counted as bytes/4 of its prompt, cheap, so it is counted, and the
// key's calibration learns from its answers even while no limit binds.
func TestUntokenizedModelStillCalibrates(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := &slowProvider{latency: 10 * time.Millisecond}
		cfg, store := testRun(t, t.TempDir(), 4, p, func(c *Config) {
			c.Limiter = limiter.AsBudget(limiter.New(limiter.Options{Defaults: limiter.Limits{Auto: true}}))
		})
		defer store.Close()
		if sum, err := Run(context.Background(), cfg); err != nil || sum.Succeeded != 4 {
			t.Fatalf("run: %v, %+v", err, sum)
		}
		// "p0" is 1 token by bytes/4; the answers report 3.
		if r := cfg.Estimator.Ratio("fake|http://fake|m"); r == 1 {
			t.Fatal("the calibration learned nothing from the answers")
		}
	})
}
