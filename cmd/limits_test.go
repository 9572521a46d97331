package cmd

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/llmrun/llmrun/limiter/redisbudget/redistest"
	"github.com/llmrun/llmrun/providers/mock"
	"github.com/llmrun/llmrun/report"
)

// TestHugeRetryAfterPausesTheKeyForMaxPause (issue 9 item 7): one 429 with
// retry-after: 999999 must not stall the whole key for an hour; with
// --max-pause 300ms the run finishes at once, says so once, and the summary
// counts the hint.
func TestHugeRetryAfterPausesTheKeyForMaxPause(t *testing.T) {
	m := mock.New(mock.Config{})
	var calls atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) == 1 {
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("retry-after", "999999")
			w.WriteHeader(429)
			w.Write([]byte(`{"error":{"message":"slow down","type":"requests","code":"rate_limit_exceeded"}}`))
			return
		}
		m.ServeHTTP(w, r)
	}))
	defer srv.Close()
	in, prompts := promptFile(t, 4)
	dir := t.TempDir()
	sum := filepath.Join(dir, "sum.json")
	c := &cli{env: mockEnv(srv.URL)}
	start := time.Now()
	code := c.run(t, "batch", in, "--provider", "openai", "--model", "m", "-o", filepath.Join(dir, "out.jsonl"),
		"--quiet", "--concurrency", "1", "--max-pause", "300ms", "--summary", sum)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, c.stderr.String())
	}
	if took := time.Since(start); took > 20*time.Second {
		t.Errorf("took %v: the key stayed paused longer than --max-pause", took)
	}
	if n := strings.Count(c.stderr.String(), "maximum pause"); n != 1 {
		t.Errorf("%d clamp warnings, want 1: %s", n, c.stderr.String())
	}
	b, err := os.ReadFile(sum)
	if err != nil {
		t.Fatal(err)
	}
	var s report.Summary
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	if s.Succeeded != int64(len(prompts)) || len(s.Limits) != 1 || s.Limits[0].PauseClamped != 1 {
		t.Errorf("summary: %d succeeded, limits %+v; want %d and 1 hint clamped", s.Succeeded, s.Limits, len(prompts))
	}
}

// TestRedisRerunAfterKill9ReclaimsSlots (issue 9 item 12): after kill -9
// with every concurrency slot of the shared budget taken, the rerun on the
// same output takes the dead run's slots back at once instead of waiting
// the 30s their leases have left.
func TestRedisRerunAfterKill9ReclaimsSlots(t *testing.T) {
	if testing.Short() {
		t.Skip("subprocess crash test")
	}
	addr := redistest.StartOrSkip(t)
	// 40 tokens of 20ms: each request streams for about 0.8s.
	m, url := mockServer(t, mock.Config{Seed: 5, TokenDelay: 20 * time.Millisecond})
	in, prompts := promptFile(t, 32)
	args := []string{"batch", in, "--provider", "openai", "--model", "m", "--quiet", "--concurrency", "8",
		"--rpm", "60000", "--redis", "redis://" + addr + "/0"}
	var stderr bytes.Buffer
	c := llmrunProcess(url, &stderr, args...)
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for m.Stats().InFlight < 8 {
		if time.Now().After(deadline) {
			c.Process.Kill()
			c.Wait()
			t.Fatalf("never 8 in flight: %s", stderr.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	c.Process.Signal(syscall.SIGKILL)
	c.Wait()

	stderr.Reset()
	start := time.Now()
	if err := llmrunProcess(url, &stderr, args...).Run(); err != nil {
		t.Fatalf("rerun: %v: %s", err, stderr.String())
	}
	// 32 requests of 0.8s, 8 at a time, take about 3.2s; the dead run's
	// leases alone would hold the key for 30s.
	if took := time.Since(start); took > 15*time.Second {
		t.Errorf("rerun took %v: it waited for the dead run's leases", took)
	}
	out := strings.TrimSuffix(in, ".jsonl") + ".out.jsonl"
	if n := len(readLines(t, out)); n != len(prompts) {
		t.Errorf("%d answers, want %d", n, len(prompts))
	}
	t.Logf("rerun after kill -9: %v", time.Since(start).Round(time.Millisecond))
}

// TestRedisOutageIsOneLine (issue 9 item 11): Redis dying mid-run used to
// print about 60 lines (go-redis's pool messages on the process's stderr,
// one warning per failed settle); now it is one line saying Redis is
// unreachable, then the abort (exit 3), and never the password.
func TestRedisOutageIsOneLine(t *testing.T) {
	if testing.Short() {
		t.Skip("subprocess test")
	}
	addr, stop, err := redistest.Start("--requirepass", "s3cret-pw")
	if errors.Is(err, redistest.ErrMissing) && !redistest.Required() {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	// Event-driven, whatever the machine's speed: the server answers four
	// requests, then holds every other one until Redis is down, so the run
	// can neither finish first nor be stopped before it used Redis.
	m := mock.New(mock.Config{})
	var started, answered atomic.Int64
	fourDone, release := make(chan struct{}), make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := started.Add(1)
		if n > 4 {
			<-release
		}
		m.ServeHTTP(w, r)
		if n <= 4 && answered.Add(1) == 4 {
			close(fourDone)
		}
	}))
	defer srv.Close()
	defer func() {
		select {
		case <-release:
		default:
			close(release)
		}
	}()
	in, _ := promptFile(t, 64)
	var stderr bytes.Buffer
	c := llmrunProcess(srv.URL, &stderr, "batch", in, "--provider", "openai", "--model", "m", "--quiet", "--concurrency", "8",
		"--rpm", "60000", "--redis", "redis://:s3cret-pw@"+addr+"/0")
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	<-fourDone
	stop() // every in-flight settle and the next reservations fail
	close(release)
	if code := exitCode(c.Wait()); code != ExitAborted {
		t.Fatalf("exit %d, want %d: %s", code, ExitAborted, stderr.String())
	}
	out := stderr.String()
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if strings.Count(out, "unreachable") != 1 || strings.Contains(out, "connection pool") || len(lines) > 5 {
		t.Errorf("stderr has %d lines, want one saying Redis is unreachable, the summary and the abort:\n%s", len(lines), out)
	}
	t.Logf("stderr:\n%s", out)
	if strings.Contains(out, "s3cret-pw") {
		t.Errorf("the Redis password is on stderr:\n%s", out)
	}
}

// runHeaderless drives llmrun (no limits given) against the strict
// scenario's server sending no rate-limit headers (and, unless
// keepRetryAfter, no retry-after): a proxy or gateway in front of a
// provider, or a self-hosted server behind a rate-limiting ingress. It
// returns the wall time, the run's summary and the server's stats.
func runHeaderless(t testing.TB, s strictScenario, keepRetryAfter bool) (time.Duration, report.Summary, mock.Stats) {
	t.Helper()
	m := mock.New(mock.Config{Seed: 9, Concurrency: s.serverConcurrency, RPM: s.rpm, ITPM: s.itpm, Burst: time.Second,
		NoLimitHeaders: true, NoRetryAfter: !keepRetryAfter})
	srv := httptest.NewServer(m)
	defer srv.Close()
	dir := t.TempDir()
	in := s.writeInput(t, dir)
	sumPath := filepath.Join(dir, "sum.json")
	c := &cli{env: mockEnv(srv.URL)}
	start := time.Now()
	code := c.run(t, "batch", in, "--provider", "anthropic", "--model", "m", "--quiet", "--concurrency", fmt.Sprint(s.clientConcurrency), "--summary", sumPath)
	wall := time.Since(start)
	var sum report.Summary
	if raw, err := os.ReadFile(sumPath); err == nil {
		json.Unmarshal(raw, &sum)
	}
	if code != 0 && code != ExitFailed {
		t.Fatalf("exit %d: %s", code, c.stderr.String())
	}
	return wall, sum, m.Stats()
}

// TestHeaderlessServerLearnsFrom429s (issue 16, scaled down): against a
// strict server that sends no rate-limit headers, with and without
// retry-after, and no limits given, nothing fails and few attempts draw a
// 429: the key learns the rate the server sustains. Learning costs 429s
// of its own (the slow start's last step overshoots, each probe of the
// AIMD's sawtooth draws one): 1–12 of 120 requests at this scenario's
// 20 a second under -race on a quiet 2-core machine (1–10 of 60, which
// failed a 10% bound 1 run in 8). A learner that learned nothing would
// draw most of the first 64 requests' 429s; the bound is 15%.
func TestHeaderlessServerLearnsFrom429s(t *testing.T) {
	s := strictScenario{requests: 120, rpm: 1200, itpm: 120000, promptBytes: 520, serverConcurrency: 8, clientConcurrency: 64}
	for _, keep := range []bool{false, true} {
		t.Run(fmt.Sprintf("retry-after=%v", keep), func(t *testing.T) {
			meter := startStallMeter()
			wall, sum, st := runHeaderless(t, s, keep)
			stall, worst := meter.end()
			// 15% of the requests, plus what this process's stalls (0 on
			// an idle machine) let arrive bunched (see stallMeter).
			allowed := int64(s.requests)*15/100 + stallExcess(s.perSecond(), stall)
			t.Logf("%v (bound %v), %d 429s (allowed %d: stalled %v, worst %v), summary limits %+v", wall.Round(time.Millisecond),
				s.lowerBound().Round(time.Millisecond), st.RateLimited, allowed, stall, worst, sum.Limits)
			if sum.Failed != 0 || sum.Succeeded != int64(s.requests) {
				t.Fatalf("%d succeeded, %d failed; want all %d", sum.Succeeded, sum.Failed, s.requests)
			}
			if st.RateLimited > allowed {
				t.Errorf("%d 429s for %d requests, want at most 15%% and %d for %v of stalls", st.RateLimited, s.requests, allowed-int64(s.requests)*15/100, stall)
			}
			if len(sum.Limits) != 1 || sum.Limits[0].RPMFrom429s <= 0 {
				t.Errorf("summary limits %+v: want the rate learned from 429s", sum.Limits)
			}
		})
	}
}

// BenchmarkHeaderlessScenario is issue 16's scenario: the strict provider
// of BenchmarkBudgetScenario (8 concurrent, 600 RPM, 60,000 ITPM, one-second
// windows), 200 requests of ~135 input tokens, --concurrency 64, no limits
// given, the server sending no rate-limit headers, with and without
// retry-after. go test -run x -bench HeaderlessScenario -benchtime 1x ./cmd
func BenchmarkHeaderlessScenario(b *testing.B) {
	for _, keep := range []bool{false, true} {
		b.Run(fmt.Sprintf("retry-after=%v", keep), func(b *testing.B) {
			s := strictScenario{requests: 200, rpm: 600, itpm: 60000, promptBytes: 520, serverConcurrency: 8, clientConcurrency: 64}
			for range b.N {
				wall, sum, st := runHeaderless(b, s, keep)
				b.ReportMetric(wall.Seconds()/s.lowerBound().Seconds(), "wall/bound")
				b.ReportMetric(float64(st.RateLimited)/float64(s.requests), "429s/req")
				b.ReportMetric(float64(sum.Failed), "failed")
				b.ReportMetric(s.lowerBound().Seconds(), "bound-s")
			}
		})
	}
}
