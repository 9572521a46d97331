package cmd

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmrun/llmrun/pricing"
	"github.com/llmrun/llmrun/providers/mock"
)

// --max-cost above what the run costs, but far below the worst cases of
// the answers in flight (max_tokens 1000, answers of some thirty tokens):
// the run waits for answers to settle instead of stopping, and answers
// every request within the cap. Before, it stopped with exit 3.
func TestMaxCostWaitsForInFlightAnswers(t *testing.T) {
	_, url := mockServer(t, mock.Config{Seed: 1})
	dir := t.TempDir()
	in := filepath.Join(dir, "in.jsonl")
	var b strings.Builder
	const n = 40
	for i := range n {
		line, _ := json.Marshal(map[string]any{"custom_id": fmt.Sprintf("req-%04d", i),
			"prompt": fmt.Sprintf("Tell me fact number %d about the sea, please.", i), "max_tokens": 1000})
		b.Write(line)
		b.WriteByte('\n')
	}
	if err := os.WriteFile(in, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	c := &cli{env: mockEnv(url)}
	args := func(out string, extra ...string) []string {
		return append([]string{"batch", in, "--provider", "openai", "--model", "gpt-4o-mini", "-o", out, "--errors", out + ".err",
			"--quiet", "--concurrency", "16"}, extra...)
	}
	full := filepath.Join(dir, "full.jsonl")
	if code := c.run(t, args(full)...); code != 0 {
		t.Fatalf("exit %d: %s", code, c.stderr.String())
	}
	cost := sumCost(readLines(t, full))
	// A worst case is the 1000 output tokens at $0.60/M plus the input
	// estimate (a dozen tokens, with margin) at $0.15/M: under $0.00061.
	worst := pricing.FromUSD(0.00061)
	capCost := cost + 2*worst
	if 16*worst <= capCost {
		t.Fatalf("sixteen worst cases %v fit in the cap %v: the test shows nothing", 16*worst, capCost)
	}
	out := filepath.Join(dir, "capped.jsonl")
	if code := c.run(t, args(out, "--max-cost", fmt.Sprint(capCost.USD()))...); code != 0 {
		t.Fatalf("exit %d under --max-cost %v (the run costs %v): %s", code, capCost, cost, c.stderr.String())
	}
	lines := readLines(t, out)
	if spent := sumCost(lines); len(lines) != n || spent > capCost {
		t.Fatalf("%d answers spent %v under --max-cost %v", len(lines), spent, capCost)
	}
}
