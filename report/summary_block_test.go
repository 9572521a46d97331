package report

import (
	"strings"
	"testing"
)

// TestSummaryBlock: the end block names the answers and errors files,
// fits the window line by line (but the resume command, kept whole), and
// offers the resume command only when something is pending.
func TestSummaryBlock(t *testing.T) {
	s := &Summary{Requests: 1500, Succeeded: 508, Failed: 8, Pending: 984, Attempts: 516, Retries: 2, RateLimited: 3,
		InputTokens: 6096, OutputTokens: 19144, WallSeconds: 27.2, RequestSeconds: 100, PricesDate: "2026-09-23", CostUSD: 0.0124,
		OutputFile: "big.out.jsonl", ErrorsFile: "big.errors.jsonl",
		FailuresByCause: map[string]int64{"HTTP 500: " + strings.Repeat("the server had an error ", 8): 5, "connection reset": 2, "a": 1, "b": 1},
		Limits:          []KeyLimits{{WaitBySeconds: map[string]float64{"requests": 86, "input": 4}}}}
	resume := "llmrun batch big.jsonl --provider openai --base-url http://127.0.0.1:18427/v1 --model gpt-4o-mini --max-attempts 1"
	for _, width := range []int{40, 80, 200} {
		got := s.Block("interrupted (Ctrl-C), 984 requests pending", resume, width)
		for _, want := range []string{"llmrun: interrupted (Ctrl-C)", "Requests:  1,500 total, 508 succeeded, 8 failed, 984 pending",
			"Answers:   big.out.jsonl", "Errors:    big.errors.jsonl", "Resume:    " + resume, "Tokens:    6,096 in / 19,144 out",
			"Elapsed:   27s", "RPM 86%", "1 × 1 other cause", "           2 × connection reset"} {
			if !strings.Contains(got, want) && (width >= 80 || len(want) < 30) {
				t.Errorf("width %d: block lacks %q:\n%s", width, want, got)
			}
		}
		for _, l := range strings.Split(strings.TrimSuffix(got, "\n"), "\n") {
			if columns(l) >= width && !strings.HasPrefix(l, "Resume:") {
				t.Errorf("width %d: line of %d columns: %q", width, columns(l), l)
			}
		}
	}
	s.Pending = 0
	if got := s.Block("done", resume, 80); strings.Contains(got, "Resume") {
		t.Errorf("nothing pending, yet a resume command:\n%s", got)
	}
	s.Failed = 0
	if got := s.Block("done", resume, 80); strings.Contains(got, "Errors:") || !strings.Contains(got, "Answers:") {
		t.Errorf("nothing failed:\n%s", got)
	}
}

func TestThousands(t *testing.T) {
	for n, want := range map[int64]string{0: "0", 999: "999", 1000: "1,000", 1234567: "1,234,567", -1234: "-1,234"} {
		if got := thousands(n); got != want {
			t.Errorf("%d: %q, want %q", n, got, want)
		}
	}
}
