package cmd

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	colmetricpb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/llmrun/llmrun/providers/mock"
)

// otlpReceiver is an OTLP/HTTP collector in the test: it decodes the
// protobuf exports of traces and metrics.
type otlpReceiver struct {
	mu       sync.Mutex
	spans    []*tracepb.Span
	service  []string // service.name of each resource that sent spans
	metrics  map[string]int
	requests int
}

func newOTLPReceiver(t *testing.T) (*otlpReceiver, string) {
	rc := &otlpReceiver{metrics: map[string]int{}}
	srv := httptest.NewServer(http.HandlerFunc(rc.serve))
	t.Cleanup(srv.Close)
	return rc, srv.URL
}

func (rc *otlpReceiver) serve(w http.ResponseWriter, r *http.Request) {
	var body io.Reader = r.Body
	if r.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(r.Body)
		if err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		body = zr
	}
	b, _ := io.ReadAll(body)
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.requests++
	switch r.URL.Path {
	case "/v1/traces":
		var req coltracepb.ExportTraceServiceRequest
		if err := proto.Unmarshal(b, &req); err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		for _, rs := range req.ResourceSpans {
			rc.service = append(rc.service, attrOf(rs.Resource.Attributes, "service.name").GetStringValue())
			for _, ss := range rs.ScopeSpans {
				rc.spans = append(rc.spans, ss.Spans...)
			}
		}
		out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.Write(out)
	case "/v1/metrics":
		var req colmetricpb.ExportMetricsServiceRequest
		if err := proto.Unmarshal(b, &req); err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		for _, rm := range req.ResourceMetrics {
			for _, sm := range rm.ScopeMetrics {
				for _, m := range sm.Metrics {
					rc.metrics[m.Name]++
				}
			}
		}
		out, _ := proto.Marshal(&colmetricpb.ExportMetricsServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.Write(out)
	default:
		http.NotFound(w, r)
	}
}

// snapshot returns the spans received so far and the service names.
func (rc *otlpReceiver) snapshot() ([]*tracepb.Span, []string, map[string]int) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	m := make(map[string]int, len(rc.metrics))
	for k, v := range rc.metrics {
		m[k] = v
	}
	return append([]*tracepb.Span(nil), rc.spans...), append([]string(nil), rc.service...), m
}

func attrOf(kvs []*commonpb.KeyValue, key string) *commonpb.AnyValue {
	for _, kv := range kvs {
		if kv.Key == key {
			return kv.Value
		}
	}
	return nil
}

// spansByKind splits spans into the run's, the requests' and the attempts'.
func spansByKind(spans []*tracepb.Span) (run, reqs, attempts []*tracepb.Span) {
	for _, s := range spans {
		switch {
		case s.Name == "llmrun batch":
			run = append(run, s)
		case s.Name == "llmrun request":
			reqs = append(reqs, s)
		case attrOf(s.Attributes, "gen_ai.operation.name") != nil:
			attempts = append(attempts, s)
		}
	}
	return run, reqs, attempts
}

// taggedPromptFile writes n prompts whose lines carry tags (team a or b).
func taggedPromptFile(t *testing.T, n int) string {
	t.Helper()
	var b strings.Builder
	for i := range n {
		line, _ := json.Marshal(map[string]any{"custom_id": fmt.Sprintf("req-%04d", i), "prompt": fmt.Sprintf("Tell me fact %d about the sea.", i),
			"max_tokens": 40, "tags": map[string]string{"team": []string{"search", "ads"}[i%2], "env": "test"}})
		b.Write(line)
		b.WriteByte('\n')
	}
	path := filepath.Join(t.TempDir(), "in.jsonl")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// otelEnv points both the run's environment and the process's (which
// the OTLP exporters read themselves) at the receiver.
func otelEnv(t *testing.T, env map[string]string, endpoint string) {
	for k, v := range map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": endpoint, "OTEL_SERVICE_NAME": "llmrun-test", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf"} {
		env[k] = v
		t.Setenv(k, v)
	}
}

// TestOTelSpansPerAttempt: a streamed 60-request run where some attempts
// get a 500 (retried, some failed for good) exports one span per attempt
// with the GenAI attributes, under a span per request under one for the
// run, the GenAI metrics, and the service name from OTEL_SERVICE_NAME;
// the textfile has per-model labels and the new histograms; the summary
// breaks usage down by tag.
func TestOTelSpansPerAttempt(t *testing.T) {
	rc, endpoint := newOTLPReceiver(t)
	m, url := mockServer(t, mock.Config{Seed: 3, ServerErrorRate: 0.25})
	in := taggedPromptFile(t, 60)
	dir := t.TempDir()
	c := &cli{env: mockEnv(url)}
	otelEnv(t, c.env, endpoint)
	prom, sum := filepath.Join(dir, "m.prom"), filepath.Join(dir, "sum.json")
	code := c.run(t, "batch", in, "--provider", "openai", "--model", "m", "-q", "--concurrency", "4", "--max-attempts", "2",
		"-o", filepath.Join(dir, "out.jsonl"), "--metrics-file", prom, "--metrics-tag", "team", "--summary", sum)
	if code != ExitOK && code != ExitFailed {
		t.Fatalf("exit %d: %s", code, c.stderr.String())
	}
	spans, services, metrics := rc.snapshot()
	run, reqs, attempts := spansByKind(spans)
	st := m.Stats()
	if len(run) != 1 || len(reqs) != 60 || int64(len(attempts)) != st.Attempts || len(attempts) < 60 {
		t.Fatalf("%d run, %d request, %d attempt spans; the mock saw %d attempts", len(run), len(reqs), len(attempts), st.Attempts)
	}
	for _, s := range services {
		if s != "llmrun-test" {
			t.Errorf("service.name %q, want OTEL_SERVICE_NAME's", s)
		}
	}
	checkAttemptSpans(t, run[0], reqs, attempts)
	checkRequestSpans(t, reqs)
	for _, name := range []string{"gen_ai.client.token.usage", "gen_ai.client.operation.duration", "llmrun.queue.depth"} {
		if metrics[name] == 0 {
			t.Errorf("no %s exported (got %v)", name, metrics)
		}
	}
	checkModelMetrics(t, prom)
	checkTagSummary(t, sum)
}

// checkAttemptSpans: every attempt span is a client span under a request
// span with the GenAI attributes; answered ones carry usage, failed ones
// error.type.
func checkAttemptSpans(t *testing.T, run *tracepb.Span, reqs, attempts []*tracepb.Span) {
	t.Helper()
	reqIDs := map[string]bool{}
	for _, r := range reqs {
		reqIDs[string(r.SpanId)] = true
		if !bytes.Equal(r.ParentSpanId, run.SpanId) {
			t.Fatalf("request span not under the run's")
		}
	}
	var answered, failed int
	for _, s := range attempts {
		if !reqIDs[string(s.ParentSpanId)] || s.Kind != tracepb.Span_SPAN_KIND_CLIENT {
			t.Fatalf("attempt span %q not a client span under a request span", s.Name)
		}
		for k, want := range map[string]string{"gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai", "gen_ai.request.model": "m"} {
			if got := attrOf(s.Attributes, k).GetStringValue(); got != want {
				t.Fatalf("%s = %q, want %q", k, got, want)
			}
		}
		if attrOf(s.Attributes, "gen_ai.request.max_tokens").GetIntValue() != 40 {
			t.Fatalf("attempt span lacks max_tokens: %v", s.Attributes)
		}
		for _, e := range s.Events {
			if e.Name != "llmrun.admission" || attrOf(e.Attributes, "llmrun.admission.wait_seconds").GetDoubleValue() <= 0 {
				t.Fatalf("admission event without a wait: %v", e)
			}
		}
		if attrOf(s.Attributes, "gen_ai.input.messages") != nil {
			t.Fatal("prompt text on a span without --otel-content")
		}
		if et := attrOf(s.Attributes, "error.type"); et != nil {
			failed++
			if et.GetStringValue() != "500" || s.Status.GetCode() != tracepb.Status_STATUS_CODE_ERROR {
				t.Fatalf("failed attempt: error.type %v, status %v", et, s.Status)
			}
			continue
		}
		answered++
		if attrOf(s.Attributes, "gen_ai.usage.input_tokens").GetIntValue() <= 0 || attrOf(s.Attributes, "gen_ai.usage.output_tokens").GetIntValue() <= 0 ||
			attrOf(s.Attributes, "gen_ai.response.model") == nil || len(attrOf(s.Attributes, "gen_ai.response.finish_reasons").GetArrayValue().GetValues()) == 0 {
			t.Fatalf("answered attempt lacks usage, response model or finish reasons: %v", s.Attributes)
		}
	}
	if answered == 0 || failed == 0 {
		t.Fatalf("%d answered and %d failed attempts; the test needs both", answered, failed)
	}
}

// checkRequestSpans: some request was retried to success, some failed.
func checkRequestSpans(t *testing.T, reqs []*tracepb.Span) {
	t.Helper()
	outcomes := map[string]int{}
	retried := 0
	for _, r := range reqs {
		o := attrOf(r.Attributes, "llmrun.outcome").GetStringValue()
		outcomes[o]++
		if attrOf(r.Attributes, "llmrun.custom_id").GetStringValue() == "" || attrOf(r.Attributes, "llmrun.tag.team") == nil {
			t.Fatalf("request span without custom_id or tags: %v", r.Attributes)
		}
		if o == "succeeded" && attrOf(r.Attributes, "llmrun.attempts").GetIntValue() > 1 {
			retried++
		}
	}
	if retried == 0 || outcomes["failed"] == 0 || outcomes["succeeded"] == 0 {
		t.Fatalf("outcomes %v, %d retried to success: the test needs each", outcomes, retried)
	}
}

func checkModelMetrics(t *testing.T, prom string) {
	t.Helper()
	b, err := os.ReadFile(prom)
	if err != nil {
		t.Fatal(err)
	}
	mfs := parseMetrics(t, string(b))
	if v, _ := value(mfs, "llmrun_model_tokens_total", map[string]string{"provider": "openai", "model": "m", "direction": "output", "tag_team": "search"}); v <= 0 {
		t.Errorf("no output tokens for model m, team search:\n%s", b)
	}
	if v, _ := value(mfs, "llmrun_server_errors_total", map[string]string{"model": "m", "status": "500"}); v <= 0 {
		t.Error("no 500s counted per model")
	}
	for _, h := range []string{"llmrun_reservation_ratio", "llmrun_attempts_per_request"} {
		if mfs[h] == nil || mfs[h].Metric[0].Histogram == nil {
			t.Errorf("no histogram %s", h)
		}
	}
	ok, _ := value(mfs, "llmrun_attempts_per_request", map[string]string{"model": "m", "outcome": "succeeded"})
	failed, _ := value(mfs, "llmrun_attempts_per_request", map[string]string{"model": "m", "outcome": "failed"})
	if ok+failed != 60 || failed == 0 {
		t.Errorf("attempts-per-request histogram counts %v+%v requests, want 60 with some failed", ok, failed)
	}
	if v, ok := value(mfs, "llmrun_queue_depth", map[string]string{"priority": "0"}); !ok || v != 0 {
		t.Errorf("no llmrun_queue_depth for priority 0 (or not 0 at the end: %v)", v)
	}
	if strings.Contains(string(b), `env="test"`) || strings.Contains(string(b), "tag_env") {
		t.Error("a tag not opted in labels a metric")
	}
}

func checkTagSummary(t *testing.T, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var s struct {
		Succeeded, Failed int64
		InputTokens       int64 `json:"input_tokens"`
		Tags              map[string]map[string]struct {
			Requests, Succeeded, Failed int64
			InputTokens                 int64 `json:"input_tokens"`
			OutputTokens                int64 `json:"output_tokens"`
		}
	}
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	team := s.Tags["team"]
	if len(team) != 2 || team["search"].Requests != 30 || team["ads"].Requests != 30 || s.Tags["env"]["test"].Requests != 60 {
		t.Fatalf("tags breakdown %+v", s.Tags)
	}
	if team["search"].Succeeded+team["ads"].Succeeded != s.Succeeded || team["search"].Failed+team["ads"].Failed != s.Failed ||
		team["search"].InputTokens+team["ads"].InputTokens != s.InputTokens || team["search"].OutputTokens == 0 {
		t.Fatalf("tags breakdown %+v does not add up to the run's %+v", team, s)
	}
}

// TestOTelPlainAndContent: non-streamed attempts are spans alike, and
// --otel-content puts the prompt and answer on them.
func TestOTelPlainAndContent(t *testing.T) {
	rc, endpoint := newOTLPReceiver(t)
	_, url := mockServer(t, mock.Config{Seed: 1})
	in, _ := promptFile(t, 5)
	c := &cli{env: mockEnv(url)}
	otelEnv(t, c.env, endpoint)
	if code := c.run(t, "batch", in, "--provider", "openai", "--model", "m", "-q", "--stream=false", "--otel-content"); code != ExitOK {
		t.Fatalf("exit %d: %s", code, c.stderr.String())
	}
	spans, _, _ := rc.snapshot()
	_, _, attempts := spansByKind(spans)
	if len(attempts) != 5 {
		t.Fatalf("%d attempt spans, want 5", len(attempts))
	}
	for _, s := range attempts {
		if !strings.Contains(attrOf(s.Attributes, "gen_ai.input.messages").GetStringValue(), "fact number") ||
			attrOf(s.Attributes, "gen_ai.output.messages").GetStringValue() == "" || attrOf(s.Attributes, "gen_ai.usage.output_tokens").GetIntValue() <= 0 ||
			attrOf(s.Attributes, "gen_ai.usage.input_tokens").GetIntValue() <= 0 || attrOf(s.Attributes, "gen_ai.request.model").GetStringValue() != "m" ||
			len(attrOf(s.Attributes, "gen_ai.response.finish_reasons").GetArrayValue().GetValues()) == 0 {
			t.Fatalf("span lacks content, usage, model or finish reasons: %v", s.Attributes)
		}
	}
}

// TestOTelCollectorDown: an unreachable collector is one warning, never a
// failed run.
func TestOTelCollectorDown(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	endpoint := srv.URL
	srv.Close() // nothing listens there now
	_, url := mockServer(t, mock.Config{Seed: 1})
	in, _ := promptFile(t, 5)
	c := &cli{env: mockEnv(url)}
	otelEnv(t, c.env, endpoint)
	t.Setenv("OTEL_EXPORTER_OTLP_TIMEOUT", "500")
	if code := c.run(t, "batch", in, "--provider", "openai", "--model", "m", "-q"); code != ExitOK {
		t.Fatalf("exit %d: %s", code, c.stderr.String())
	}
	if n := strings.Count(c.stderr.String(), "OpenTelemetry"); n != 1 {
		t.Errorf("%d OpenTelemetry warnings, want 1: %s", n, c.stderr.String())
	}
}

// TestOTelFlushOnSIGINT: a run interrupted by SIGINT drains and flushes
// its spans before it exits 130: the run's span (with the exit code) and
// a span for every attempt that landed.
func TestOTelFlushOnSIGINT(t *testing.T) {
	if testing.Short() {
		t.Skip("subprocess signal test")
	}
	rc, endpoint := newOTLPReceiver(t)
	_, url := mockServer(t, mock.Config{Seed: 5, TokenDelay: 2 * time.Millisecond})
	in, prompts := promptFile(t, 200)
	out := strings.TrimSuffix(in, ".jsonl") + ".out.jsonl"
	var stderr bytes.Buffer
	c := llmrunProcess(url, &stderr, "batch", in, "--provider", "openai", "--model", "m", "--concurrency", "8", "--quiet")
	c.Env = append(c.Env, "OTEL_EXPORTER_OTLP_ENDPOINT="+endpoint, "OTEL_SERVICE_NAME=llmrun-sigint")
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		if b, _ := os.ReadFile(out); bytes.Count(b, []byte("\n")) >= 10 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no results within 20s")
		}
		time.Sleep(20 * time.Millisecond)
	}
	c.Process.Signal(syscall.SIGINT)
	if code := exitCode(c.Wait()); code != 130 {
		t.Fatalf("exit %d, want 130: %s", code, stderr.String())
	}
	answered := len(readLines(t, out))
	spans, services, _ := rc.snapshot()
	run, _, attempts := spansByKind(spans)
	if len(run) != 1 || attrOf(run[0].Attributes, "llmrun.exit_code").GetIntValue() != 130 {
		t.Fatalf("%d run spans (want 1 with exit code 130): %v", len(run), run)
	}
	if len(attempts) < answered || answered == len(prompts) {
		t.Fatalf("%d attempt spans for %d answers of %d", len(attempts), answered, len(prompts))
	}
	if len(services) == 0 || services[0] != "llmrun-sigint" {
		t.Errorf("service names %v", services)
	}
}

// TestOTelFlushOnAbort: a run stopped by a fatal provider condition (exit
// 3) still exports its spans, the run's with the exit code and the
// failed attempt's error.type.
func TestOTelFlushOnAbort(t *testing.T) {
	rc, endpoint := newOTLPReceiver(t)
	_, url := mockServer(t, mock.Config{SpendCap: true})
	in, _ := promptFile(t, 10)
	c := &cli{env: mockEnv(url)}
	otelEnv(t, c.env, endpoint)
	if code := c.run(t, "batch", in, "--provider", "openai", "--model", "m", "-q"); code != ExitAborted {
		t.Fatalf("exit %d: %s", code, c.stderr.String())
	}
	spans, _, _ := rc.snapshot()
	run, _, attempts := spansByKind(spans)
	if len(run) != 1 || attrOf(run[0].Attributes, "llmrun.exit_code").GetIntValue() != ExitAborted {
		t.Fatalf("run spans %v", run)
	}
	if len(attempts) == 0 || attrOf(attempts[0].Attributes, "error.type").GetStringValue() != "429" {
		t.Fatalf("attempt spans %v", attempts)
	}
}

// TestOTelConfigKeys: --otel-content and --metrics-tag are config-file
// defaults like any flag: the file's values reach the spans and the
// metrics' labels.
func TestOTelConfigKeys(t *testing.T) {
	rc, endpoint := newOTLPReceiver(t)
	_, url := mockServer(t, mock.Config{Seed: 2})
	in := taggedPromptFile(t, 6)
	dir := t.TempDir()
	conf := filepath.Join(dir, "llmrun.yaml")
	if err := os.WriteFile(conf, []byte("defaults:\n  otel-content: true\n  metrics-tag: [team]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c := &cli{env: mockEnv(url)}
	otelEnv(t, c.env, endpoint)
	prom := filepath.Join(dir, "m.prom")
	if code := c.run(t, "batch", in, "--config", conf, "--provider", "openai", "--model", "m", "-q", "--metrics-file", prom); code != ExitOK {
		t.Fatalf("exit %d: %s", code, c.stderr.String())
	}
	spans, _, _ := rc.snapshot()
	_, _, attempts := spansByKind(spans)
	if len(attempts) != 6 {
		t.Fatalf("%d attempt spans, want 6", len(attempts))
	}
	for _, s := range attempts {
		if !strings.Contains(attrOf(s.Attributes, "gen_ai.input.messages").GetStringValue(), "about the sea") {
			t.Fatalf("otel-content: true in the config did not put the prompt on the span: %v", s.Attributes)
		}
	}
	b, err := os.ReadFile(prom)
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := value(parseMetrics(t, string(b)), "llmrun_model_requests_total", map[string]string{"model": "m", "tag_team": "ads"}); v != 3 {
		t.Errorf("metrics-tag: [team] in the config: %v requests of team ads labelled, want 3:\n%s", v, b)
	}
}
