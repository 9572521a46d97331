package telemetry

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/llmrun/llmrun/limiter"
	"github.com/llmrun/llmrun/providers"
	"github.com/llmrun/llmrun/runner"
)

// answerBody is a typical small Chat Completions answer.
const answerBody = `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"m-2026","choices":[{"index":0,"message":{"role":"assistant","content":"The number 7 is prime and the fourth prime."},"finish_reason":"stop"}],"usage":{"prompt_tokens":14,"completion_tokens":11,"total_tokens":25}}`

// BenchmarkRequest is the telemetry's work for one answered request of
// one attempt (its two spans, the GenAI metrics), exported to a receiver
// in the process that discards: what tracing adds to a request.
func BenchmarkRequest(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	defer srv.Close()
	b.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", srv.URL)
	tel, err := New(context.Background(), Options{Getenv: os.Getenv})
	if err != nil || tel == nil {
		b.Fatal(tel, err)
	}
	req := &providers.Request{ID: "request-00000001", Body: []byte(`{"model":"m","messages":[{"role":"user","content":"Tell me one fact about the number 7."}],"max_tokens":40}`),
		Model: "m", MaxTokens: 40, Tags: map[string]string{"team": "search"}}
	resp := &providers.Response{Status: 200, Body: []byte(answerBody), Model: "m-2026", RequestID: "req_1",
		Usage: providers.Usage{InputTokens: 14, OutputTokens: 11}}
	now := time.Now()
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cpuTime()
	for i := 0; i < b.N; i++ {
		ro := tel.Request(req)
		a := &runner.Attempt{Request: req, Provider: "openai", Key: "openai|http://127.0.0.1/v1|m", Number: 1,
			Reserved: limiter.Cost{Input: 20, Output: 40}, Sent: now}
		ro.AttemptStart(a)
		a.End = runner.AttemptEnd{At: now.Add(time.Millisecond), Resp: resp, CostUSD: 0.0001, Priced: true}
		ro.AttemptEnd(a)
		ro.End(&runner.RequestEnd{Outcome: runner.OutcomeSucceeded, Attempts: 1})
	}
	tel.Finish(0, nil)
	b.ReportMetric(float64((cpuTime()-cpu0).Nanoseconds())/float64(b.N), "cpu-ns/op")
}

// cpuTime is the process's user and system CPU so far: the export runs
// on goroutines of its own, which ns/op misses.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
