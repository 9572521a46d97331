package cmd

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/llmrun/llmrun/providers/mock"
)

// syncBuffer is a bytes.Buffer safe to read while a run writes it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}
func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

// parseMetrics parses the Prometheus text format, as Prometheus does.
func parseMetrics(t *testing.T, text string) map[string]*dto.MetricFamily {
	t.Helper()
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		t.Fatalf("metrics do not parse: %v\n%s", err, text)
	}
	return mfs
}

// value is the sample of family name whose labels include want.
func value(mfs map[string]*dto.MetricFamily, name string, want map[string]string) (float64, bool) {
	mf := mfs[name]
	if mf == nil {
		return 0, false
	}
next:
	for _, m := range mf.Metric {
		labels := map[string]string{}
		for _, l := range m.Label {
			labels[l.GetName()] = l.GetValue()
		}
		for k, v := range want {
			if labels[k] != v {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue(), true
		case m.Gauge != nil:
			return m.Gauge.GetValue(), true
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount()), true
		}
	}
	return 0, false
}

// TestMetricsScrapedMidRun: /metrics, scraped while a run is under way,
// parses with Prometheus's own text parser and has the run's metrics;
// the textfile written at the end has the exit code.
func TestMetricsScrapedMidRun(t *testing.T) {
	_, url := mockServer(t, mock.Config{Seed: 1, TokenDelay: 2 * time.Millisecond, RPM: 6000, ITPM: 1e6})
	in, prompts := promptFile(t, 120)
	dir := t.TempDir()
	prom := filepath.Join(dir, "llmrun.prom")
	var stderr syncBuffer
	io := &IO{In: strings.NewReader(""), Out: &bytes.Buffer{}, Err: &stderr, Getenv: func(k string) string { return mockEnv(url)[k] }}
	done := make(chan int)
	go func() {
		done <- Execute(context.Background(), io, []string{"batch", in, "--provider", "openai", "--model", "m", "-q",
			"--concurrency", "4", "--metrics-addr", "127.0.0.1:0", "--metrics-file", prom, "--metrics-interval", "50ms"})
	}()
	addr := regexp.MustCompile(`serving metrics on (http://\S+/metrics)`)
	var mfs map[string]*dto.MetricFamily
	deadline := time.Now().Add(20 * time.Second)
	for {
		if time.Now().After(deadline) {
			t.Fatalf("no mid-run scrape with answers; stderr: %s", stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
		m := addr.FindStringSubmatch(stderr.String())
		if m == nil {
			continue
		}
		resp, err := http.Get(m[1])
		if err != nil {
			t.Fatalf("scrape: %v", err)
		}
		var b bytes.Buffer
		b.ReadFrom(resp.Body)
		resp.Body.Close()
		mfs = parseMetrics(t, b.String())
		if n, _ := value(mfs, "llmrun_requests_total", map[string]string{"outcome": "succeeded"}); n > 0 && n < float64(len(prompts)) {
			break
		}
	}
	for _, name := range []string{
		"llmrun_requests_total", "llmrun_requests_pending", "llmrun_input_requests", "llmrun_attempts_total", "llmrun_attempts_in_flight",
		"llmrun_tokens_total", "llmrun_cost_usd_total", "llmrun_admission_wait_seconds", "llmrun_budget_wait_seconds_total",
		"llmrun_limit_per_minute", "llmrun_limit_concurrency", "llmrun_breaker_state", "llmrun_build_info", "llmrun_run_start_timestamp_seconds",
	} {
		if mfs[name] == nil {
			t.Errorf("/metrics lacks %s", name)
		}
	}
	if v, ok := value(mfs, "llmrun_limit_per_minute", map[string]string{"dimension": "requests"}); !ok || v != 6000 {
		t.Errorf("learned requests limit %v (%v), want the mock's 6000", v, ok)
	}
	if got := mfs["llmrun_admission_wait_seconds"].GetType(); got != dto.MetricType_HISTOGRAM {
		t.Errorf("llmrun_admission_wait_seconds is a %v", got)
	}
	if _, ok := mfs["llmrun_run_exit_code"]; ok {
		t.Error("an exit code while the run lives")
	}
	if code := <-done; code != ExitOK {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	b, err := os.ReadFile(prom)
	if err != nil {
		t.Fatal(err)
	}
	final := parseMetrics(t, string(b))
	if v, ok := value(final, "llmrun_run_exit_code", nil); !ok || v != 0 {
		t.Errorf("textfile exit code %v (%v), want 0", v, ok)
	}
	if v, _ := value(final, "llmrun_requests_total", map[string]string{"outcome": "succeeded"}); v != float64(len(prompts)) {
		t.Errorf("textfile: %v succeeded, want %d", v, len(prompts))
	}
	if v, _ := value(final, "llmrun_tokens_total", map[string]string{"direction": "output"}); v <= 0 {
		t.Errorf("textfile: %v output tokens", v)
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 {
		t.Errorf("the textfile's directory holds %d entries, want only the textfile (no temporary left)", len(ents))
	}
}

// TestMetricsRateLimitedAndBreaker: 429s are counted by dimension and a
// textfile is written even for a run that stops.
func TestMetricsFileOnAbort(t *testing.T) {
	_, url := mockServer(t, mock.Config{SpendCap: true})
	in, _ := promptFile(t, 10)
	prom := filepath.Join(t.TempDir(), "m.prom")
	c := &cli{env: mockEnv(url)}
	if code := c.run(t, "batch", in, "--provider", "openai", "--model", "m", "-q", "--metrics-file", prom); code != ExitAborted {
		t.Fatalf("exit %d: %s", code, c.stderr.String())
	}
	b, _ := os.ReadFile(prom)
	if v, ok := value(parseMetrics(t, string(b)), "llmrun_run_exit_code", nil); !ok || v != ExitAborted {
		t.Errorf("exit code metric %v (%v), want 3", v, ok)
	}
}

func TestMetricsUsageErrors(t *testing.T) {
	in, _ := promptFile(t, 1)
	ln, err := netListen()
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	for _, args := range [][]string{
		{"--metrics-addr", ln.Addr().String()},
		{"--metrics-file", "/nonexistent/x.prom"},
		{"--pushgateway", "ftp://x"},
	} {
		c := &cli{}
		code := c.run(t, append([]string{"batch", in, "--provider", "mock"}, args...)...)
		if code != ExitUsage || !strings.Contains(c.stderr.String(), args[0]) {
			t.Errorf("%v: exit %d, want 2 naming the flag: %s", args, code, c.stderr.String())
		}
	}
}

func netListen() (interface {
	Addr() net.Addr
	Close() error
}, error) {
	return net.Listen("tcp", "127.0.0.1:0")
}
