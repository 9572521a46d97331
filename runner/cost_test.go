package runner

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tidwall/gjson"

	"github.com/llmrun/llmrun/ending"
	"github.com/llmrun/llmrun/limiter"
	"github.com/llmrun/llmrun/pricing"
	"github.com/llmrun/llmrun/providers"
	"github.com/llmrun/llmrun/source"
)

// cachedProvider answers after latency with a fixed usage: input tokens of
// which cached are cache reads, and out output tokens.
type cachedProvider struct {
	latency            time.Duration
	input, cached, out int64
	sent               atomic.Int64
}

func (p *cachedProvider) Name() string             { return "fake" }
func (p *cachedProvider) Format() providers.Format { return providers.FormatOpenAI }
func (p *cachedProvider) BaseURL() string          { return "http://fake" }
func (p *cachedProvider) Send(ctx context.Context, req *providers.Request) (*providers.Response, error) {
	p.sent.Add(1)
	t := time.NewTimer(p.latency)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return &providers.Response{Status: 200, Body: []byte(`{"ok":true}`), Text: "ok", Model: req.Model,
		Usage: providers.Usage{InputTokens: p.input, CacheReadTokens: p.cached, OutputTokens: p.out}}, nil
}

// Every line's cost_usd is the reported usage at the snapshot's rates, the
// cache reads at the cache-read rate, and the summary adds them up.
func TestCostOfCachedUsage(t *testing.T) {
	dir := t.TempDir()
	p := &cachedProvider{input: 1000, cached: 800, out: 10}
	cfg, store := testRun(t, dir, 5, p, func(c *Config) {
		c.Prices = pricing.Snapshot()
		c.Source.Parser.Defaults.Model = "claude-sonnet-4-5"
	})
	sum, err := Run(context.Background(), cfg)
	store.Close()
	if err != nil {
		t.Fatal(err)
	}
	// claude-sonnet-4-5: $3/M in, $0.30/M cache read, $15/M out:
	// 200 × 3 + 800 × 0.30 + 10 × 15 = 990 per million = $0.00099.
	lines := readOut(t, dir)
	if len(lines) != 5 {
		t.Fatalf("%d lines", len(lines))
	}
	for _, l := range lines {
		if got := pricing.FromUSD(l.Get("llmrun.cost_usd").Float()); got != pricing.FromUSD(0.00099) || l.Get("llmrun.cache_read_tokens").Int() != 800 {
			t.Errorf("line %s: cost %v", l.Get("llmrun").Raw, got)
		}
	}
	if pricing.FromUSD(sum.CostUSD) != 5*pricing.FromUSD(0.00099) || len(sum.Costs) != 1 {
		t.Fatalf("summary cost %v, costs %+v", sum.CostUSD, sum.Costs)
	}
	mc := sum.Costs[0]
	if mc.Model != "claude-sonnet-4-5" || mc.Requests != 5 || mc.CacheHitRatio != 0.8 || mc.CacheReadTokens != 4000 {
		t.Errorf("costs[0] = %+v", mc)
	}
	if !strings.Contains(sum.OneLine(), "cost $0.0049") || !strings.Contains(sum.OneLine(), "cache hits 80%") || !strings.Contains(sum.OneLine(), pricing.Snapshot().Date()) {
		t.Errorf("one line: %s", sum.OneLine())
	}
}

// A model without a price gets cost_usd null, never a number.
func TestCostUnknownModelIsNull(t *testing.T) {
	dir := t.TempDir()
	p := &cachedProvider{input: 10, out: 10}
	cfg, store := testRun(t, dir, 2, p, func(c *Config) { c.Prices = pricing.Snapshot() })
	sum, err := Run(context.Background(), cfg)
	store.Close()
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range readOut(t, dir) {
		if c := l.Get("llmrun.cost_usd"); !c.Exists() || c.Type != gjson.Null {
			t.Errorf("cost_usd = %s, want null", c.Raw)
		}
	}
	if sum.Unpriced != 2 || sum.CostUSD != 0 || sum.Costs[0].CostUSD != nil {
		t.Errorf("summary %+v %+v", sum, sum.Costs)
	}
}

// Anthropic's cache reads do not count toward ITPM: the admission rule
// settles the input bucket with uncached input (cache writes included), so
// a run with 80% cache hits gets about five times the throughput of the
// same input uncached, under the same ITPM. Timed in the bubble's fake
// time.
func TestCacheReadsLeaveITPM(t *testing.T) {
	run := func(cached int64) time.Duration {
		var took time.Duration
		synctest.Test(t, func(t *testing.T) {
			dir := t.TempDir()
			p := &cachedProvider{latency: 10 * time.Millisecond, input: 100, cached: cached, out: 5}
			cfg, store := testRun(t, dir, 50, p, func(c *Config) {
				// 400-byte prompts: bytes/4 estimates 100 tokens, as reported.
				c.Source.Parser.Defaults.Model = "claude-x"
				c.Routes[0].Admission = providers.Admission{Output: providers.ReserveExpected, Charged: providers.UncachedInput}
				c.Limiter = limiter.AsBudget(limiter.New(limiter.Options{Defaults: limiter.Limits{ITPM: 6000, Burst: time.Second, Concurrency: 4}}))
			})
			rewritePrompts(t, cfg.Source, 400)
			start := time.Now()
			if _, err := Run(context.Background(), cfg); err != nil {
				t.Fatal(err)
			}
			took = time.Since(start)
			store.Close()
			if n := p.sent.Load(); n != 50 {
				t.Fatalf("%d sent", n)
			}
		})
		return took
	}
	uncached, cached := run(0), run(80)
	// Uncached: 50 × 100 tokens at 100/s, less the 100-token burst: 49s.
	if uncached < 45*time.Second || uncached > 55*time.Second {
		t.Errorf("uncached run took %v, want about 49s", uncached)
	}
	ratio := cached.Seconds() / uncached.Seconds()
	if ratio < 0.15 || ratio > 0.3 {
		t.Errorf("80%% cache hits took %v vs %v uncached (ratio %.2f), want about a fifth", cached, uncached, ratio)
	}
	t.Logf("uncached %v, 80%% cached %v (ratio %.3f)", uncached, cached, ratio)
}

// --max-cost: reservations stop admitting before the cap; the spend
// recorded stays within it and the run ends with a CostCapError.
func TestMaxCostStopsBeforeTheCap(t *testing.T) {
	dir := t.TempDir()
	p := &cachedProvider{input: 1000, out: 100}
	prices, err := pricing.Snapshot().WithPrices(strings.NewReader(`{"claude-x": {"input_per_mtok": 0.15, "output_per_mtok": 0.6}}`), "p")
	if err != nil {
		t.Fatal(err)
	}
	// 1000 × 0.15 + 100 × 0.60 = 210 per million per answer.
	per := pricing.FromUSD(0.00021)
	cap := 10*per + per/2
	cfg, store := testRun(t, dir, 40, p, func(c *Config) {
		c.Prices = prices
		c.Source.Parser.Defaults.Model = "claude-x" // bytes/4: the 4000-byte prompts estimate as reported
		c.Source.Parser.Defaults.MaxTokens = 100
		c.MaxCost, c.Spent = cap, 2*per // two answers recorded by an earlier run
	})
	rewritePrompts(t, cfg.Source, 4000)
	sum, err := Run(context.Background(), cfg)
	store.Close()
	var ae *ending.AbortError
	var ce *ending.CostCapError
	if !asErr(err, &ae) || !asErr(err, &ce) {
		t.Fatalf("err = %v, want an AbortError with a CostCapError", err)
	}
	lines := readOut(t, dir)
	spent := 2*per + pricing.Cost(len(lines))*per
	if ce.Spent != spent || spent > cap || ce.Cap != cap {
		t.Errorf("CostCapError %+v; %d lines → spent %v, cap %v", ce, len(lines), spent, cap)
	}
	if len(lines) == 0 || len(lines) > 8 {
		t.Errorf("%d answers; want at most 8 (the cap less the earlier spend)", len(lines))
	}
	if !strings.Contains(err.Error(), "rerun with a higher --max-cost to continue") || sum.RecordedCostUSD == nil {
		t.Errorf("err %v, summary %+v", err, sum)
	}
}

// readOut reads the run's output lines.
func readOut(t *testing.T, dir string) []gjson.Result {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "out.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var out []gjson.Result
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if l != "" {
			out = append(out, gjson.Parse(l))
		}
	}
	return out
}

// rewritePrompts makes every prompt of the input n bytes long, ids kept,
// and checks it again (a run refuses an input changed after its check).
func rewritePrompts(t *testing.T, src *source.Source, n int) {
	t.Helper()
	path := src.Path
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		fmt.Fprintf(&out, `{"custom_id":%q,"prompt":%q}`+"\n", gjson.Get(l, "custom_id").Str, strings.Repeat("word ", n/5))
	}
	if err := os.WriteFile(path, []byte(out.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := src.Check(); err != nil {
		t.Fatal(err)
	}
}

func asErr[T error](err error, target *T) bool { return errors.As(err, target) }
