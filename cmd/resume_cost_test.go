package cmd

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/llmrun/llmrun/ending"
	"github.com/llmrun/llmrun/pricing"
	"github.com/llmrun/llmrun/providers/mock"
	"github.com/llmrun/llmrun/report"
)

// TestMaxCostResumeHintContinues is issue 24 item 4: after a --max-cost
// stop the hint's command raises the cap by what remains at the run's
// rate, and running with that cap finishes instead of stopping at once.
func TestMaxCostResumeHintContinues(t *testing.T) {
	_, url := mockServer(t, mock.Config{Seed: 1})
	in, prompts := promptFile(t, 40)
	c := &cli{env: mockEnv(url)}
	out := filepath.Join(t.TempDir(), "run.out.jsonl")
	args := func(capUSD string) []string {
		return []string{"batch", in, "--provider", "openai", "--model", "gpt-4o-mini", "-o", out, "--quiet", "--concurrency", "4", "--max-cost", capUSD}
	}
	if code := c.run(t, args("0.0002")...); code != ExitAborted {
		t.Fatalf("exit %d, want %d: %s", code, ExitAborted, c.stderr.String())
	}
	// The hint is built from the process's arguments (here the test
	// binary's), so only the cap it names is taken from it.
	hint := resumeHintFromStderr(t, c.stderr.String())
	caps := regexp.MustCompile(`--max-cost ([0-9.]+)`).FindAllStringSubmatch(hint, -1)
	if len(caps) == 0 {
		t.Fatalf("no raised --max-cost in %q", hint)
	}
	raised := caps[len(caps)-1][1]
	if raised == "0.0002" {
		t.Fatalf("the hint repeats the cap: %q", hint)
	}
	if code := c.run(t, args(raised)...); code != 0 {
		t.Fatalf("the hint's cap %s stopped again: exit %d: %s", raised, code, c.stderr.String())
	}
	if n := len(readLines(t, out)); n != len(prompts) {
		t.Fatalf("%d lines, want %d", n, len(prompts))
	}
}

// resumeHintFromStderr is the line after the summary that says how to go on.
func resumeHintFromStderr(t *testing.T, stderr string) string {
	t.Helper()
	for _, l := range strings.Split(stderr, "\n") {
		if strings.Contains(l, "resume with") || strings.Contains(l, "raise --max-cost") {
			return l
		}
	}
	t.Fatalf("no hint in:\n%s", stderr)
	return ""
}

func TestResumeHint(t *testing.T) {
	capErr := &ending.CostCapError{Spent: pricing.FromUSD(0.9), Cap: pricing.FromUSD(1)}
	spent := 0.9
	args := []string{"batch", "in.jsonl", "--max-cost=1", "--quiet"}
	got := resumeHint(&report.Summary{Succeeded: 10, CostUSD: 0.5, Pending: 20, RecordedCostUSD: &spent}, capErr, args)
	// 20 pending at $0.05 an answer, plus 10%: $1.10 more than the $0.90 spent.
	if !strings.HasSuffix(got, "llmrun batch in.jsonl --max-cost=2 --quiet") {
		t.Errorf("got %q", got)
	}
	got = resumeHint(&report.Summary{Pending: 20, RecordedCostUSD: &spent}, capErr, args)
	if !strings.Contains(got, "raise --max-cost above $0.9") || strings.Contains(got, "llmrun batch") {
		t.Errorf("without a rate: %q", got)
	}
	if got := resumeHint(&report.Summary{}, fmt.Errorf("x: %w", &ending.InterruptedError{}), args); got != "resume with: llmrun "+strings.Join(args, " ") {
		t.Errorf("interrupted: %q", got)
	}
}
