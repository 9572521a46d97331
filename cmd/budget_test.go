package cmd

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/llmrun/llmrun/providers/mock"
)

// strictScenario is a provider that enforces its per-minute limits in
// one-second windows, as real ones do.
type strictScenario struct {
	requests          int
	rpm, itpm         float64
	promptBytes       int
	serverConcurrency int
	clientConcurrency int
	explicit          bool // pass --rpm/--itpm; otherwise learn them (auto)
}

// inputTokens is the mock's count for one of the scenario's prompts.
func (s strictScenario) inputTokens() int {
	return mock.CountTokens(strings.Repeat("x", s.promptBytes)) + 4
}

// lowerBound is the shortest wall time the limits allow: every bucket
// starts full (one second of refill) and then refills at rate/60 per
// second, so n units take (n - capacity) / (rate/60) seconds.
func (s strictScenario) lowerBound() time.Duration {
	perSec := func(total, rate float64) float64 { return max(total-rate/60, 0) / (rate / 60) }
	sec := max(perSec(float64(s.requests), s.rpm), perSec(float64(s.requests*s.inputTokens()), s.itpm))
	return time.Duration(sec * float64(time.Second))
}

// writeInput writes the scenario's requests to dir/in.jsonl: distinct
// prompts of the same length.
func (s strictScenario) writeInput(t testing.TB, dir string) string {
	t.Helper()
	in := filepath.Join(dir, "in.jsonl")
	var b strings.Builder
	for i := range s.requests {
		p := fmt.Sprintf("%06d ", i) + strings.Repeat("w", s.promptBytes-7)
		line, _ := json.Marshal(map[string]any{"custom_id": fmt.Sprint(i), "prompt": p, "max_tokens": 16})
		b.Write(line)
		b.WriteByte('\n')
	}
	if err := os.WriteFile(in, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return in
}

// run drives llmrun against the mock and returns the wall time and 429s.
func (s strictScenario) run(t testing.TB) (time.Duration, int64, int64) {
	t.Helper()
	m, url := mockServer(t, mock.Config{Seed: 9, Concurrency: s.serverConcurrency, RPM: s.rpm, ITPM: s.itpm, Burst: time.Second})
	dir := t.TempDir()
	in := s.writeInput(t, dir)
	// Anthropic's wire format: its headers name input and output token
	// limits (ITPM/OTPM), which is what the scenario limits; OpenAI's name
	// one combined TPM.
	args := []string{"batch", in, "--provider", "anthropic", "--model", "m", "--quiet", "--concurrency", fmt.Sprint(s.clientConcurrency), "--summary", filepath.Join(dir, "sum.json")}
	if s.explicit {
		args = append(args, "--rpm", fmt.Sprint(s.rpm), "--itpm", fmt.Sprint(s.itpm))
	}
	c := &cli{env: mockEnv(url)}
	start := time.Now()
	if code := c.run(t, args...); code != 0 {
		t.Fatalf("exit %d: %s", code, c.stderr.String())
	}
	wall := time.Since(start)
	st := m.Stats()
	return wall, st.RateLimited, st.Completed
}

// TestBudgetScheduling: with the published per-minute numbers, llmrun
// draws no 429 from a strict provider (a scaled-down version of the
// benchmark below, so it is quick). The client's concurrency is the
// server's: at 64, the server's in-flight count is the rate times the
// latency, which grows with the machine's load, and under load it passed
// 8 and drew concurrency 429s now and then (issue 22 item 13); what this
// test checks is the pacing against the per-minute numbers, which does not
// depend on speed. The benchmark keeps 64.
func TestBudgetScheduling(t *testing.T) {
	s := strictScenario{requests: 120, rpm: 3000, itpm: 300000, promptBytes: 520, serverConcurrency: 8, clientConcurrency: 8, explicit: true}
	_, limited, completed := s.run(t)
	if limited != 0 {
		t.Errorf("%d 429s, want 0", limited)
	}
	if completed != int64(s.requests) {
		t.Errorf("%d completed, want %d", completed, s.requests)
	}
}

// BenchmarkBudgetScenario is issue 3's scenario: a strict provider
// (concurrency 8, 600 RPM, 60,000 ITPM, one-second windows), prompts of
// ~135 input tokens, 300 requests, llmrun at --concurrency 64. It reports
// the wall time as a ratio of the lower bound the limits imply, and the
// 429s, with the numbers given (explicit) and learned (auto). Each run
// takes about 40 s: go test -run x -bench BudgetScenario -benchtime 1x ./cmd
func BenchmarkBudgetScenario(b *testing.B) {
	for _, explicit := range []bool{true, false} {
		name := "auto"
		if explicit {
			name = "explicit"
		}
		b.Run(name, func(b *testing.B) {
			s := strictScenario{requests: 300, rpm: 600, itpm: 60000, promptBytes: 520, serverConcurrency: 8, clientConcurrency: 64, explicit: explicit}
			for range b.N {
				wall, limited, _ := s.run(b)
				b.ReportMetric(wall.Seconds()/s.lowerBound().Seconds(), "wall/bound")
				b.ReportMetric(float64(limited), "429s")
				b.ReportMetric(s.lowerBound().Seconds(), "bound-s")
			}
		})
	}
}
