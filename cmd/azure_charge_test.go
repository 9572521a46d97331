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
	"github.com/llmrun/llmrun/report"
)

// azureChargeScenario is issue 30's: an Azure deployment that charges
// prompt + max_tokens into its per-minute token counter at admission
// (mock --azure-charge-max-tokens), 8 requests in flight, one-second
// buckets, requests with max_tokens far above their answers.
type azureChargeScenario struct {
	requests, promptBytes, maxTokens int
	rpm, tpm                         float64
	// charge turns the mock's max_tokens charge on.
	charge bool
}

// charge is what the mock's counter takes for one request.
func (s azureChargeScenario) perRequest() int {
	n := mock.CountTokens(strings.Repeat("x", s.promptBytes)) + 4
	if s.charge {
		n += s.maxTokens
	}
	return n
}

// lowerBound is the shortest wall time the limits allow (see
// strictScenario.lowerBound).
func (s azureChargeScenario) lowerBound() time.Duration {
	perSec := func(total, rate float64) float64 { return max(total-rate/60, 0) / (rate / 60) }
	sec := max(perSec(float64(s.requests), s.rpm), perSec(float64(s.requests*s.perRequest()), s.tpm))
	return time.Duration(sec * float64(time.Second))
}

// run drives llmrun's azure provider against the scenario's mock with
// extra flags and returns the wall time, the server's stats and stderr.
func (s azureChargeScenario) run(t testing.TB, extra ...string) (time.Duration, mock.Stats, string) {
	t.Helper()
	m, url := mockServer(t, mock.Config{Seed: 9, Concurrency: 8, RPM: s.rpm, ITPM: s.tpm, Burst: time.Second, AzureChargeMaxTokens: s.charge})
	dir := t.TempDir()
	in := filepath.Join(dir, "in.jsonl")
	var b strings.Builder
	for i := range s.requests {
		p := fmt.Sprintf("%06d ", i) + strings.Repeat("w", s.promptBytes-7)
		line, _ := json.Marshal(map[string]any{"custom_id": fmt.Sprint(i), "prompt": p, "max_tokens": s.maxTokens})
		b.Write(line)
		b.WriteByte('\n')
	}
	if err := os.WriteFile(in, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	c := &cli{env: map[string]string{"AZURE_OPENAI_API_KEY": azureKey}}
	args := append([]string{"batch", in, "--provider", "azure", "--base-url", url + "/openai/deployments/dep1?api-version=2024-10-21",
		"-o", filepath.Join(dir, "out.jsonl"), "--concurrency", "64", "--summary", filepath.Join(dir, "sum.json")}, extra...)
	start := time.Now()
	if code := c.run(t, args...); code != 0 {
		t.Fatalf("exit %d: %s", code, c.stderr.String())
	}
	wall := time.Since(start)
	var sum report.Summary
	if raw, err := os.ReadFile(filepath.Join(dir, "sum.json")); err != nil || json.Unmarshal(raw, &sum) != nil || sum.Succeeded != int64(s.requests) {
		t.Fatalf("summary %+v (%v): want all %d succeeded", sum, err, s.requests)
	}
	return wall, m.Stats(), c.stderr.String()
}

// TestAzureMaxTokensCharge (issue 30, scaled down): against a deployment
// that charges prompt + max_tokens at admission, limits learned from the
// headers draw at most 4 429s and --tpm given none; against one that
// charges the input only, the headers move the key to reserving the
// expected output, and the run says so.
func TestAzureMaxTokensCharge(t *testing.T) {
	s := azureChargeScenario{requests: 60, promptBytes: 520, maxTokens: 400, rpm: 1200, tpm: 400000, charge: true}
	// run runs s and returns the server's 429s and how many more than
	// want this process's stalls (0 on an idle machine) let arrive
	// bunched (see stallMeter).
	run := func(t *testing.T, s azureChargeScenario, want int64, extra ...string) (limited, allowed int64, stderr string) {
		meter := startStallMeter()
		wall, st, stderr := s.run(t, extra...)
		stall, worst := meter.end()
		allowed = want + stallExcess(s.perSecond(), stall)
		t.Logf("%v (bound %v), %d 429s (allowed %d: stalled %v, worst %v)", wall.Round(time.Millisecond),
			s.lowerBound().Round(time.Millisecond), st.RateLimited, allowed, stall, worst)
		return st.RateLimited, allowed, stderr
	}
	t.Run("learned", func(t *testing.T) {
		if limited, allowed, _ := run(t, s, 4); limited > allowed {
			t.Errorf("%d 429s, want at most 4 and %d for the stalls", limited, allowed-4)
		}
	})
	t.Run("--tpm", func(t *testing.T) {
		if limited, allowed, _ := run(t, s, 0, "--tpm", fmt.Sprint(s.tpm), "--rpm", fmt.Sprint(s.rpm)); limited > allowed {
			t.Errorf("%d 429s with --tpm given, want none but %d for the stalls", limited, allowed)
		}
	})
	t.Run("input only", func(t *testing.T) {
		s := s
		s.charge = false
		limited, allowed, stderr := run(t, s, 4)
		if !strings.Contains(stderr, "this deployment does not charge max_tokens at admission: reserving the expected output") {
			t.Errorf("no note of the rule the headers showed:\n%s", stderr)
		}
		if limited > allowed {
			t.Errorf("%d 429s, want at most 4 and %d for the stalls", limited, allowed-4)
		}
	})
}

// BenchmarkAzureMaxTokensScenario is issue 30's scenario at full size:
// 200 requests with max_tokens 400 against 8 in flight, 600 RPM, 200k TPM
// charged prompt + max_tokens, short and long prompts, limits learned and
// given. go test -run x -bench AzureMaxTokensScenario -benchtime 1x ./cmd
func BenchmarkAzureMaxTokensScenario(b *testing.B) {
	for _, prompt := range []int{40, 520} {
		for _, given := range []bool{false, true} {
			b.Run(fmt.Sprintf("prompt=%dB/tpm-given=%v", prompt, given), func(b *testing.B) {
				s := azureChargeScenario{requests: 200, promptBytes: prompt, maxTokens: 400, rpm: 600, tpm: 200000, charge: true}
				var extra []string
				if given {
					extra = []string{"--tpm", "200000", "--rpm", "600"}
				}
				for range b.N {
					wall, st, _ := s.run(b, extra...)
					b.ReportMetric(s.lowerBound().Seconds()/wall.Seconds(), "of-ideal")
					b.ReportMetric(float64(st.RateLimited), "429s")
				}
			})
		}
	}
}
