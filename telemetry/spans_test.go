package telemetry

import (
	"context"
	"errors"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/llmrun/llmrun/limiter"
	"github.com/llmrun/llmrun/providers"
	"github.com/llmrun/llmrun/runner"
)

// attrs maps a span's attributes by key.
func attrs(kvs []attribute.KeyValue) map[string]attribute.Value {
	m := map[string]attribute.Value{}
	for _, kv := range kvs {
		m[string(kv.Key)] = kv.Value
	}
	return m
}

// TestAttemptAndRequestSpans: a request retried once after a 500 makes a
// request span with its custom_id, outcome, attempts and tags, and under
// it a client span per attempt with the GenAI attributes of its ending;
// only the attempt that waited for the budget has an admission event.
func TestAttemptAndRequestSpans(t *testing.T) {
	mem := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(mem))
	tel := newTelemetry(Options{})
	tel.tracer = tp.Tracer(scope)
	req := &providers.Request{ID: "r1", Model: "m", MaxTokens: 40, Tags: map[string]string{"team": "search"}}
	t0 := time.Unix(1700000000, 0)
	ro := tel.Request(req)
	first := &runner.Attempt{Request: req, Provider: "gemini", Key: "k", Number: 1, Sent: t0, Reserved: limiter.Cost{Input: 5}}
	ro.AttemptStart(first)
	first.End = runner.AttemptEnd{At: t0.Add(time.Second), Err: &providers.Error{Status: 500, Class: providers.ClassServer}}
	ro.AttemptEnd(first)
	second := &runner.Attempt{Request: req, Provider: "gemini", Key: "k", Number: 2, Sent: t0.Add(3 * time.Second), Waited: 2 * time.Second}
	ro.AttemptStart(second)
	second.End = runner.AttemptEnd{At: t0.Add(4 * time.Second), Resp: &providers.Response{Status: 200, Model: "m-001", RequestID: "id-1",
		Body: []byte(`{"candidates":[{"finishReason":"STOP"}]}`), Usage: providers.Usage{InputTokens: 7, OutputTokens: 9}}}
	ro.AttemptEnd(second)
	ro.End(&runner.RequestEnd{Outcome: runner.OutcomeSucceeded, Attempts: 2})
	spans := mem.GetSpans()
	if len(spans) != 3 {
		t.Fatalf("%d spans, want 3", len(spans))
	}
	failed, answered, request := spans[0], spans[1], spans[2]
	if request.Name != "llmrun request" || failed.Parent.SpanID() != request.SpanContext.SpanID() || answered.Parent.SpanID() != request.SpanContext.SpanID() {
		t.Fatalf("attempt spans not under the request span: %+v", spans)
	}
	ra := attrs(request.Attributes)
	if ra["llmrun.custom_id"].AsString() != "r1" || ra["llmrun.outcome"].AsString() != "succeeded" || ra["llmrun.attempts"].AsInt64() != 2 ||
		ra["llmrun.tag.team"].AsString() != "search" || !absent(ra, "llmrun.fell_back") {
		t.Errorf("request span attributes %v", ra)
	}
	fa := attrs(failed.Attributes)
	if failed.Name != "chat m" || failed.SpanKind != trace.SpanKindClient || fa["error.type"].AsString() != "500" ||
		failed.Status.Code != codes.Error || fa["gen_ai.provider.name"].AsString() != "gcp.gemini" || fa["gen_ai.request.max_tokens"].AsInt64() != 40 ||
		!failed.StartTime.Equal(t0) || !failed.EndTime.Equal(t0.Add(time.Second)) || len(failed.Events) != 0 {
		t.Errorf("failed attempt span %s %v %v %v–%v events %v", failed.Name, fa, failed.Status, failed.StartTime, failed.EndTime, failed.Events)
	}
	aa := attrs(answered.Attributes)
	if aa["gen_ai.request.model"].AsString() != "m" || aa["gen_ai.response.model"].AsString() != "m-001" || aa["gen_ai.usage.input_tokens"].AsInt64() != 7 ||
		aa["gen_ai.usage.output_tokens"].AsInt64() != 9 || len(aa["gen_ai.response.finish_reasons"].AsStringSlice()) != 1 ||
		aa["gen_ai.response.id"].AsString() != "id-1" || !absent(aa, "error.type") || !absent(aa, "gen_ai.input.messages") {
		t.Errorf("answered attempt span %v", aa)
	}
	if len(answered.Events) != 1 || attrs(answered.Events[0].Attributes)["llmrun.admission.wait_seconds"].AsFloat64() != 2 {
		t.Errorf("answered attempt events %v, want one admission event of 2s", answered.Events)
	}
	if err := tp.Shutdown(context.Background()); err != nil && !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
}

// absent reports whether the attribute k is not set in m.
func absent(m map[string]attribute.Value, k string) bool {
	_, ok := m[k]
	return !ok
}
