package cmd

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/llmrun/llmrun/providers/mock"
)

// TestFaultsRetriedToExactAnswers is issue 4's fault mix: 10% overloads, 5%
// mid-stream errors and 2% resets on a streaming run of 500 requests. Every
// request must end with the mock's exact answer, and the attempts per
// request must be exactly one plus the faults the mock injected, which with
// independent per-attempt faults of probability p average 1/(1-p) (≈1.205
// here; "1 + p" is the first-order estimate, 1.17).
func TestFaultsRetriedToExactAnswers(t *testing.T) {
	const overload, midStream, reset = 0.10, 0.05, 0.02
	m, url := mockServer(t, mock.Config{Seed: 11, OverloadRate: overload, MidStreamRate: midStream, ResetRate: reset})
	in, prompts := promptFile(t, 500)
	dir := t.TempDir()
	out := filepath.Join(dir, "out.jsonl")
	sum := filepath.Join(dir, "sum.json")
	c := &cli{env: mockEnv(url)}
	code := c.run(t, "batch", in, "--provider", "anthropic", "--model", "m", "-o", out, "--quiet", "--summary", sum,
		"--concurrency", "16", "--backoff-base", "1ms", "--backoff-max", "10ms", "--max-attempts", "10")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, c.stderr.String())
	}
	lines := readLines(t, out)
	for id, p := range prompts {
		if got, want := answerText(lines[id]), mock.Answer(p, 40); got != want {
			t.Fatalf("%s: %q, want %q", id, got, want)
		}
	}
	var s struct {
		AttemptsPerRequest float64          `json:"attempts_per_request"`
		RetriesByCause     map[string]int64 `json:"retries_by_cause"`
		BreakerOpenings    int64            `json:"breaker_openings"`
	}
	b, _ := os.ReadFile(sum)
	json.Unmarshal(b, &s)
	// The default breaker judges a failure rate: 17% failing is degraded,
	// not down (issue 17), so it never opens.
	if s.BreakerOpenings != 0 {
		t.Errorf("the breaker opened %d times at 17%% faults", s.BreakerOpenings)
	}
	st := m.Stats()
	if st.Overloaded == 0 || st.MidStream == 0 || st.Resets == 0 {
		t.Fatalf("faults not all exercised: %+v", st)
	}
	// Exact accounting: one attempt per request plus one per injected fault,
	// nothing more (no hidden retries, no duplicate sends).
	faults := st.Overloaded + st.MidStream + st.Resets + st.ServerErrors
	if st.Attempts != int64(len(prompts))+faults {
		t.Errorf("mock saw %d attempts for %d requests and %d faults: llmrun made %d extra", st.Attempts, len(prompts), faults, st.Attempts-int64(len(prompts))-faults)
	}
	if got := float64(st.Attempts) / float64(len(prompts)); math.Abs(got-s.AttemptsPerRequest) > 1e-9 {
		t.Errorf("summary says %.3f attempts per request, the mock saw %.3f", s.AttemptsPerRequest, got)
	}
	// Faults strike each attempt independently with p = 0.17, so attempts
	// per request average 1/(1-p) ≈ 1.205 with a standard error of about
	// 0.022 over 500 requests; allow three.
	want := 1 / (1 - (overload + midStream + reset))
	if math.Abs(s.AttemptsPerRequest-want) > 0.066 {
		t.Errorf("attempts per request %.3f, want %.3f ± 0.066", s.AttemptsPerRequest, want)
	}
	for _, cause := range []string{"overloaded", "mid_stream"} {
		if s.RetriesByCause[cause] == 0 {
			t.Errorf("no retries counted for %s: %v", cause, s.RetriesByCause)
		}
	}
	t.Logf("attempts/request %.3f (expected %.3f); retries by cause %v", s.AttemptsPerRequest, want, s.RetriesByCause)
}

// TestOutageHoldsThenAbortsAndResumes: against a provider answering 500 to
// everything, the breaker opens after --breaker-min-attempts failures and
// lets at most --breaker-probes probes through per cooldown; the run exits
// 3 after --max-outage with nothing marked failed, and a rerun after the
// outage completes the rest.
func TestOutageHoldsThenAbortsAndResumes(t *testing.T) {
	const (
		minAttempts = 5
		probes      = 3
		concurrency = 4
		cooldown    = 100 * time.Millisecond // the cap; also the first hold
		maxOutage   = 450 * time.Millisecond
	)
	down, downURL := mockServer(t, mock.Config{Outage: true})
	in, prompts := promptFile(t, 30)
	out := strings.TrimSuffix(in, ".jsonl") + ".out.jsonl"
	args := []string{"batch", in, "--provider", "openai", "--model", "m", "--quiet",
		"--concurrency", "4", "--breaker-min-attempts", "5", "--breaker-probes", "3", "--breaker-cooldown", cooldown.String(),
		"--max-outage", maxOutage.String(), "--backoff-base", "1ms", "--backoff-max", "2ms"}
	c := &cli{env: mockEnv(downURL)}
	start := time.Now()
	if code := c.run(t, args...); code != ExitAborted {
		t.Fatalf("exit %d, want 3: %s", code, c.stderr.String())
	}
	held := time.Since(start)
	if !strings.Contains(c.stderr.String(), "max-outage") || !strings.Contains(c.stderr.String(), "resume") {
		t.Errorf("stderr does not explain the abort: %s", c.stderr.String())
	}
	// Before the breaker opens, at most minAttempts failures plus what was
	// already in flight; after it, at most the probes of each cooldown.
	sent := probes * (int64(held/cooldown) + 1)
	if got, limit := down.Stats().Attempts, int64(minAttempts+concurrency-1)+sent; got > limit {
		t.Errorf("the down provider saw %d attempts, want at most %d (min attempts %d + %d in flight + %d probes)", got, limit, minAttempts, concurrency-1, sent)
	}
	if errs := readLines(t, strings.TrimSuffix(in, ".jsonl")+".errors.jsonl"); len(errs) != 0 {
		t.Errorf("%d requests marked failed during an outage; holding must not fail them", len(errs))
	}
	if got := readLines(t, out); len(got) != 0 {
		t.Fatalf("%d results from a provider that is down", len(got))
	}

	_, upURL := mockServer(t, mock.Config{})
	c.env = mockEnv(upURL)
	if code := c.run(t, args...); code != 0 {
		t.Fatalf("rerun after the outage: exit %d: %s", code, c.stderr.String())
	}
	if got := readLines(t, out); len(got) != len(prompts) {
		t.Fatalf("%d results after the rerun, want %d", len(got), len(prompts))
	}
}

// TestSpendCapAbortsAtOnce: a spend cap is fatal for the run: at most
// --concurrency attempts reach the provider, the run exits 3 and says why.
func TestSpendCapAbortsAtOnce(t *testing.T) {
	for _, provider := range []string{"openai", "anthropic"} {
		t.Run(provider, func(t *testing.T) {
			m, url := mockServer(t, mock.Config{SpendCap: true})
			in, _ := promptFile(t, 200)
			c := &cli{env: mockEnv(url)}
			code := c.run(t, "batch", in, "--provider", provider, "--model", "m", "--quiet", "--concurrency", "8")
			if code != ExitAborted {
				t.Fatalf("exit %d, want 3: %s", code, c.stderr.String())
			}
			if got := m.Stats().Attempts; got > 8 {
				t.Errorf("%d attempts reached a spend-capped provider, want at most 8", got)
			}
			msg := c.stderr.String()
			if !strings.Contains(msg, "quota") || !strings.Contains(msg, "resume") {
				t.Errorf("stderr does not name the spend cap and the resume: %s", msg)
			}
		})
	}
}

// TestFallbackServesWhenPrimaryIsDown: requests that exhaust the primary
// (here down) go to the fallback hop, translated to its wire format, and
// the output records which model answered.
func TestFallbackServesWhenPrimaryIsDown(t *testing.T) {
	_, downURL := mockServer(t, mock.Config{Outage: true})
	_, upURL := mockServer(t, mock.Config{})
	in, prompts := promptFile(t, 12)
	dir := t.TempDir()
	out := filepath.Join(dir, "out.jsonl")
	sum := filepath.Join(dir, "sum.json")
	env := map[string]string{
		"OPENAI_API_KEY": "sk-test-openai-0123456789", "OPENAI_BASE_URL": downURL + "/v1",
		"ANTHROPIC_API_KEY": "sk-ant-test-0123456789", "ANTHROPIC_BASE_URL": upURL,
	}
	c := &cli{env: env}
	code := c.run(t, "batch", in, "--provider", "openai", "--model", "gpt-x", "-o", out, "--quiet", "--summary", sum,
		"--fallback", "anthropic:claude-y", "--max-attempts", "2", "--backoff-base", "1ms", "--backoff-max", "2ms")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, c.stderr.String())
	}
	lines := readLines(t, out)
	for id, p := range prompts {
		l := lines[id]
		if got, want := answerText(l), mock.Answer(p, 40); got != want {
			t.Errorf("%s: %q, want %q", id, got, want)
		}
		if l.Get("llmrun.provider").Str != "anthropic" || l.Get("llmrun.model").Str != "claude-y" {
			t.Errorf("%s: served by %s/%s, want anthropic/claude-y", id, l.Get("llmrun.provider").Str, l.Get("llmrun.model").Str)
		}
	}
	b, _ := os.ReadFile(sum)
	if !strings.Contains(string(b), `"fallback_rate": 1`) {
		t.Errorf("summary does not report a fallback rate of 1: %s", b)
	}
}

// TestBreakerThresholdDeprecated: --breaker-threshold still works, says it
// is deprecated and sets the fewest failures that open the breaker.
func TestBreakerThresholdDeprecated(t *testing.T) {
	var got *BatchOptions
	var stderr strings.Builder
	io := &IO{In: strings.NewReader(""), Out: &stderr, Err: &stderr, Getenv: func(string) string { return "" }}
	root := NewRoot(io)
	for _, c := range root.Commands() {
		if c.Name() == "batch" {
			root.RemoveCommand(c)
		}
	}
	root.AddCommand(newBatchCmd(io, func(o *BatchOptions) error { got = o; return nil }))
	root.SetArgs([]string{"batch", "in.jsonl", "--breaker-threshold", "7"})
	if err := root.Execute(); err != nil {
		t.Fatal(err)
	}
	if cfg := got.Breaker.Config(time.Minute); cfg.MinAttempts != 7 || cfg.Window != 20 || cfg.FailureRate != 0.9 {
		t.Errorf("breaker config %+v, want MinAttempts 7 and the default window", cfg)
	}
	if !strings.Contains(stderr.String(), "deprecated") || !strings.Contains(stderr.String(), "--breaker-min-attempts") {
		t.Errorf("no deprecation message: %q", stderr.String())
	}
	for _, bad := range [][]string{{"--breaker-failure-rate", "0"}, {"--breaker-failure-rate", "1.5"}, {"--breaker-probes", "0"}, {"--breaker-window-time", "0s"}} {
		c := &cli{}
		if code := c.run(t, append([]string{"batch", "in.jsonl"}, bad...)...); code != ExitUsage || !strings.Contains(c.stderr.String(), bad[0]) {
			t.Errorf("%v: exit %d, want 2 naming the flag: %s", bad, code, c.stderr.String())
		}
	}
}
