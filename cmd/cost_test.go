package cmd

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
	"github.com/tiktoken-go/tokenizer"

	"github.com/llmrun/llmrun/pricing"
	"github.com/llmrun/llmrun/providers/mock"
)

// costModels are priced models served by the mock, with their snapshot
// rates in dollars per million tokens (input, output).
var costModels = map[string]struct {
	model   string
	in, out float64
}{
	"openai":    {"gpt-4o-mini", 0.15, 0.60},
	"anthropic": {"claude-haiku-4-5", 1, 5},
}

// Every line's cost_usd is its reported usage at the snapshot's rates (half
// on the batch route), and the summary's cost_usd and costs[] add them up.
func TestCostInLinesAndSummary(t *testing.T) {
	_, url := mockServer(t, mock.Config{Seed: 1})
	in, prompts := promptFile(t, 12)
	for provider, cm := range costModels {
		for _, mode := range []string{"sync", "batch"} {
			t.Run(provider+"/"+mode, func(t *testing.T) {
				c := &cli{env: mockEnv(url)}
				dir := t.TempDir()
				out, sumPath := filepath.Join(dir, "out.jsonl"), filepath.Join(dir, "sum.json")
				args := []string{"batch", in, "--provider", provider, "--model", cm.model, "-o", out, "--errors", out + ".err",
					"--quiet", "--summary", sumPath, "--mode", mode, "--poll-interval", "1ms", "--poll-max", "2ms"}
				if code := c.run(t, args...); code != 0 {
					t.Fatalf("exit %d: %s", code, c.stderr.String())
				}
				half := 1.0
				if mode == "batch" {
					half = 0.5
				}
				var total pricing.Cost
				lines := readLines(t, out)
				if len(lines) != len(prompts) {
					t.Fatalf("%d lines", len(lines))
				}
				for id, l := range lines {
					in, outTok := l.Get("llmrun.input_tokens").Int(), l.Get("llmrun.output_tokens").Int()
					want := pricing.FromUSD((float64(in)*cm.in + float64(outTok)*cm.out) * half / 1e6)
					got := pricing.FromUSD(l.Get("llmrun.cost_usd").Float())
					if got != want || in == 0 || outTok == 0 {
						t.Errorf("%s: cost_usd %v for %d in / %d out, want %v", id, got, in, outTok, want)
					}
					total += got
				}
				b, err := os.ReadFile(sumPath)
				if err != nil {
					t.Fatal(err)
				}
				s := gjson.ParseBytes(b)
				if pricing.FromUSD(s.Get("cost_usd").Float()) != total || s.Get("costs.#").Int() != 1 ||
					pricing.FromUSD(s.Get("costs.0.cost_usd").Float()) != total || s.Get("costs.0.requests").Int() != int64(len(prompts)) ||
					s.Get("prices_date").Str != pricing.Snapshot().Date() || !s.Get("costs.0.cache_hit_ratio").Exists() {
					t.Errorf("summary %s; lines add up to %v", b, total)
				}
				if !strings.Contains(c.stderr.String(), "cost "+total.String()) {
					t.Errorf("one-line summary lacks the cost %v: %s", total, c.stderr.String())
				}
			})
		}
	}
}

// --max-cost at 40% of a run's cost stops with exit 3 within the cap; a
// rerun with a higher cap finishes every request exactly once.
func TestMaxCostStopsThenResumes(t *testing.T) {
	_, url := mockServer(t, mock.Config{Seed: 1})
	in, prompts := promptFile(t, 40)
	c := &cli{env: mockEnv(url)}
	dir := t.TempDir()
	args := func(out string, extra ...string) []string {
		return append([]string{"batch", in, "--provider", "openai", "--model", "gpt-4o-mini", "-o", out, "--errors", out + ".err",
			"--quiet", "--concurrency", "4"}, extra...)
	}
	// The whole run's cost, from a run without a cap.
	full := filepath.Join(dir, "full.jsonl")
	if code := c.run(t, args(full)...); code != 0 {
		t.Fatalf("exit %d: %s", code, c.stderr.String())
	}
	cost := sumCost(readLines(t, full))
	capUSD := 0.4 * cost.USD()

	out := filepath.Join(dir, "run.out.jsonl") // status knows an output by its suffix
	code := c.run(t, args(out, "--max-cost", fmt.Sprint(capUSD))...)
	if code != ExitAborted {
		t.Fatalf("exit %d, want %d: %s", code, ExitAborted, c.stderr.String())
	}
	lines := readLines(t, out)
	spent := sumCost(lines)
	if spent > pricing.FromUSD(capUSD) || len(lines) == 0 || len(lines) >= len(prompts) {
		t.Fatalf("%d answers spent %v under --max-cost %v (full run %v)", len(lines), spent, pricing.FromUSD(capUSD), cost)
	}
	wantMsg := fmt.Sprintf("spent %v of --max-cost %v; rerun with a higher --max-cost to continue", spent, pricing.FromUSD(capUSD))
	if !strings.Contains(c.stderr.String(), wantMsg) {
		t.Errorf("stderr lacks %q:\n%s", wantMsg, c.stderr.String())
	}
	// The same cap again: the earlier spend counts, so the run stops again
	// within the cap (requests whose worst case fits in what the first run
	// left may still go).
	if code := c.run(t, args(out, "--max-cost", fmt.Sprint(capUSD))...); code != ExitAborted || sumCost(readLines(t, out)) > pricing.FromUSD(capUSD) {
		t.Fatalf("rerun under the same cap: exit %d, spent %v: %s", code, sumCost(readLines(t, out)), c.stderr.String())
	}
	// A higher cap resumes and finishes, each request exactly once
	// (readLines fails on a repeated id).
	if code := c.run(t, args(out, "--max-cost", fmt.Sprint(3*cost.USD()))...); code != 0 {
		t.Fatalf("rerun: exit %d: %s", code, c.stderr.String())
	}
	lines = readLines(t, out)
	if len(lines) != len(prompts) {
		t.Fatalf("%d lines after the rerun, want %d", len(lines), len(prompts))
	}
	if got := sumCost(lines); got > 3*cost {
		t.Errorf("recorded %v", got)
	}
	// status shows the spend recorded in the output.
	if code := c.run(t, "status", out); code != 0 || !strings.Contains(c.stdout.String(), "spent "+sumCost(lines).String()) {
		t.Errorf("status: exit %d: %s", code, c.stdout.String())
	}
}

// --max-cost with a model that has no price is a usage error, unless
// --prices gives it one.
func TestMaxCostNeedsPrices(t *testing.T) {
	_, url := mockServer(t, mock.Config{Seed: 1})
	in, _ := promptFile(t, 3)
	c := &cli{env: mockEnv(url)}
	out := filepath.Join(t.TempDir(), "out.jsonl")
	base := []string{"batch", in, "--provider", "openai", "--model", "my-llama", "-o", out, "--errors", out + ".err", "--quiet", "--max-cost", "1"}
	if code := c.run(t, base...); code != ExitUsage || !strings.Contains(c.stderr.String(), "my-llama (openai) has none") {
		t.Fatalf("exit %d: %s", code, c.stderr.String())
	}
	prices := filepath.Join(t.TempDir(), "prices.json")
	os.WriteFile(prices, []byte(`{"my-llama": {"input_per_mtok": 0.2, "output_per_mtok": 0.6}}`), 0o644)
	if code := c.run(t, append(base, "--prices", prices)...); code != 0 {
		t.Fatalf("with --prices: exit %d: %s", code, c.stderr.String())
	}
	for id, l := range readLines(t, out) {
		in, o := l.Get("llmrun.input_tokens").Int(), l.Get("llmrun.output_tokens").Int()
		if got, want := pricing.FromUSD(l.Get("llmrun.cost_usd").Float()), pricing.FromUSD((float64(in)*0.2+float64(o)*0.6)/1e6); got != want {
			t.Errorf("%s: cost %v, want %v", id, got, want)
		}
	}
}

func sumCost(lines map[string]gjson.Result) pricing.Cost {
	var c pricing.Cost
	for _, l := range lines {
		c += pricing.FromUSD(l.Get("llmrun.cost_usd").Float())
	}
	return c
}

// estimate, in both input shapes, against tokens and prices computed by
// hand; with an output present only what remains is estimated.
func TestEstimateHandComputed(t *testing.T) {
	dir := t.TempDir()
	c := &cli{env: map[string]string{}} // no key needed

	// Anthropic shape, no tokenizer: bytes/4 of the text plus a newline.
	// "abcdefgh\n" = 9 bytes → 3 tokens; "abcdefghijklmno\n" = 16 → 4.
	anth := filepath.Join(dir, "anth.jsonl")
	os.WriteFile(anth, []byte(
		`{"custom_id":"a1","params":{"model":"claude-haiku-4-5","max_tokens":100,"messages":[{"role":"user","content":"abcdefgh"}]}}`+"\n"+
			`{"custom_id":"a2","params":{"model":"claude-haiku-4-5","max_tokens":100,"messages":[{"role":"user","content":"abcdefghijklmno"}]}}`+"\n"), 0o644)
	est := estimateJSON(t, c, anth, "--itpm", "60", "--rpm", "60")
	// claude-haiku-4-5 $1/M in, $5/M out: 7 × 1 + 200 × 5 = 1007 per million.
	// Wall: 60/min = 1/s, the bucket holds 1s: input (7 − 1)/1 = 6s binds
	// (requests: (2 − 1)/1 = 1s).
	want := map[string]any{
		"requests": 2.0, "already_done": 0.0, "input_tokens": 7.0, "input_tokens_approximate": true,
		"output_tokens_max": 200.0, "output_tokens_expected": nil,
		"cost_usd_max": 0.001007, "batch_cost_usd_max": 0.0005035, "cost_usd_expected": nil,
		"wall_seconds": 6.0, "bound_by": "input",
	}
	checkFields(t, est, want)

	// Only what remains: a1 answered with 50 output tokens → a2 expects 50.
	out := filepath.Join(dir, "anth.out.jsonl")
	os.WriteFile(out, []byte(`{"custom_id":"a1","response":{"status_code":200,"body":{}},"error":null,"llmrun":{"provider":"anthropic","model":"claude-haiku-4-5","attempts":1,"input_tokens":3,"output_tokens":50,"cost_usd":0.000253}}`+"\n"), 0o644)
	est = estimateJSON(t, c, anth)
	// 4 × 1 + 100 × 5 = 504 per million at most; 4 × 1 + 50 × 5 = 254 expected.
	checkFields(t, est, map[string]any{
		"requests": 1.0, "already_done": 1.0, "input_tokens": 4.0, "output_tokens_max": 100.0, "output_tokens_expected": 50.0,
		"cost_usd_max": 0.000504, "cost_usd_expected": 0.000254, "batch_cost_usd_expected": 0.000127, "wall_seconds": nil,
	})

	// OpenAI shape, gpt-4o-mini: the o200k tokenizer counts the message
	// text plus a newline.
	oa := filepath.Join(dir, "oa.jsonl")
	texts := []string{"Hello there, how are you today?", "Tell me about the sea."}
	var b strings.Builder
	for i, s := range texts {
		fmt.Fprintf(&b, `{"custom_id":"o%d","method":"POST","url":"/v1/chat/completions","body":{"model":"gpt-4o-mini","max_tokens":64,"messages":[{"role":"user","content":%q}]}}`+"\n", i, s)
	}
	os.WriteFile(oa, []byte(b.String()), 0o644)
	codec, err := tokenizer.Get(tokenizer.O200kBase)
	if err != nil {
		t.Fatal(err)
	}
	var tokens int
	for _, s := range texts {
		n, _ := codec.Count(s + "\n")
		tokens += n
	}
	est = estimateJSON(t, c, oa, "--tpm", "120")
	// gpt-4o-mini $0.15/M in, $0.60/M out; TPM 120 = 2/s, bucket 2:
	// (tokens + 128 − 2) / 2 seconds.
	checkFields(t, est, map[string]any{
		"requests": 2.0, "input_tokens": float64(tokens), "input_tokens_approximate": false, "output_tokens_max": 128.0,
		"cost_usd_max":       pricing.FromUSD((float64(tokens)*0.15 + 128*0.6) / 1e6).USD(),
		"batch_cost_usd_max": pricing.FromUSD((float64(tokens)*0.075 + 128*0.3) / 1e6).USD(),
		"wall_seconds":       float64(tokens+128-2) / 2, "bound_by": "tokens",
	})

	// The human table says the same and needs no key either; batch
	// --dry-run is the same thing.
	if code := c.run(t, "batch", "--dry-run", oa); code != 0 {
		t.Fatalf("exit %d: %s", code, c.stderr.String())
	}
	for _, s := range []string{"gpt-4o-mini", fmt.Sprint(tokens), "128", pricing.FromUSD((float64(tokens)*0.15 + 128*0.6) / 1e6).String(), "prices of " + pricing.Snapshot().Date()} {
		if !strings.Contains(c.stdout.String(), s) {
			t.Errorf("table lacks %q:\n%s", s, c.stdout.String())
		}
	}
}

func estimateJSON(t *testing.T, c *cli, in string, extra ...string) map[string]any {
	t.Helper()
	if code := c.run(t, append([]string{"estimate", in, "--json"}, extra...)...); code != 0 {
		t.Fatalf("estimate: exit %d: %s", code, c.stderr.String())
	}
	var m map[string]any
	if err := json.Unmarshal(c.stdout.Bytes(), &m); err != nil {
		t.Fatalf("%v: %s", err, c.stdout.String())
	}
	return m
}

func checkFields(t *testing.T, got, want map[string]any) {
	t.Helper()
	for k, w := range want {
		g, ok := got[k]
		if !ok {
			t.Errorf("%s missing", k)
			continue
		}
		if gf, ok := g.(float64); ok {
			if wf, ok := w.(float64); ok && pricing.FromUSD(gf) == pricing.FromUSD(wf) {
				continue
			}
		}
		if fmt.Sprint(g) != fmt.Sprint(w) {
			t.Errorf("%s = %v, want %v", k, g, w)
		}
	}
}

// TestSpendKeepsSupersededAnswers: a rerun that answers edited prompts
// again drops the old answers from the output, but not their cost: status
// shows every answer paid for.
func TestSpendKeepsSupersededAnswers(t *testing.T) {
	_, url := mockServer(t, mock.Config{Seed: 1})
	in, prompts := promptFile(t, 10)
	out := strings.TrimSuffix(in, ".jsonl") + ".out.jsonl"
	c := &cli{env: mockEnv(url)}
	args := []string{"batch", in, "--provider", "openai", "--model", "gpt-4o-mini", "--quiet"}
	if code := c.run(t, args...); code != 0 {
		t.Fatalf("exit %d: %s", code, c.stderr.String())
	}
	first := readLines(t, out)
	edit := []string{"req-0001", "req-0004", "req-0007"}
	var old pricing.Cost
	for _, id := range edit {
		old += pricing.FromUSD(first[id].Get("llmrun.cost_usd").Float())
	}
	editInput(t, in, prompts, edit, 0)
	if code := c.run(t, args...); code != 0 {
		t.Fatalf("rerun: exit %d: %s", code, c.stderr.String())
	}
	want := sumCost(readLines(t, out)) + old
	if old == 0 || c.run(t, "status", out, "--json") != 0 {
		t.Fatalf("old %v: %s", old, c.stderr.String())
	}
	if got := pricing.FromUSD(gjson.Get(c.stdout.String(), "spent_usd").Float()); got != want {
		t.Errorf("status spent %v, want %v (the answers now in the output and the %v of the 3 superseded)", got, want, old)
	}
}
