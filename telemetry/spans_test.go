package telemetry

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/llmrun/llmrun/limiter"
	"github.com/llmrun/llmrun/providers"
	"github.com/llmrun/llmrun/runner"
)

// tracingTo is a Telemetry whose spans go to c, as New wires them.
func tracingTo(c otlptrace.Client, o Options) *Telemetry {
	if o.Getenv == nil {
		o.Getenv = func(string) string { return "" }
	}
	o.FlushTimeout = time.Minute
	tel := newTelemetry(o)
	tel.tracing(c, resource.NewSchemaless(attribute.String("service.name", "test")))
	return tel
}

// received decodes what c was sent: each upload's ResourceSpans, in order.
func received(t *testing.T, c *captureClient) []*tracepb.ResourceSpans {
	t.Helper()
	var out []*tracepb.ResourceSpans
	for _, b := range c.got {
		var rs tracepb.ResourceSpans
		if err := proto.Unmarshal(b, &rs); err != nil {
			t.Fatal(err)
		}
		out = append(out, &rs)
	}
	return out
}

// attrMap maps OTLP attributes by key.
func attrMap(kvs []*commonpb.KeyValue) map[string]*commonpb.AnyValue {
	m := map[string]*commonpb.AnyValue{}
	for _, kv := range kvs {
		m[kv.Key] = kv.Value
	}
	return m
}

// retriedRequest is a request on gemini retried once after a 500, the
// second attempt on the fallback hop after a 2s wait for the budget.
func retriedRequest(tel *Telemetry, t0 time.Time) {
	req := &providers.Request{ID: "r1", Model: "m", MaxTokens: 40, Tags: map[string]string{"team": "search"}}
	ro := tel.Request(req)
	first := &runner.Attempt{Request: req, Provider: "gemini", Key: "k", Number: 1, Sent: t0, Reserved: limiter.Cost{Input: 5}}
	ro.AttemptStart(first)
	first.End = runner.AttemptEnd{At: t0.Add(time.Second), Err: &providers.Error{Status: 500, Class: providers.ClassServer}}
	ro.AttemptEnd(first)
	second := &runner.Attempt{Request: req, Provider: "gemini", Key: "k", Hop: 1, Number: 2, Sent: t0.Add(3 * time.Second), Waited: 2 * time.Second}
	ro.AttemptStart(second)
	second.End = runner.AttemptEnd{At: t0.Add(4 * time.Second), CostUSD: 0.25, Priced: true, Resp: &providers.Response{Status: 200, Model: "m-001", RequestID: "id-1",
		Body: []byte(`{"candidates":[{"finishReason":"STOP"}]}`), Usage: providers.Usage{InputTokens: 7, OutputTokens: 9}}}
	ro.AttemptEnd(second)
	ro.End(&runner.RequestEnd{Outcome: runner.OutcomeSucceeded, Attempts: 2, Hop: 1})
}

// TestAttemptAndRequestSpans: a request retried once after a 500 makes a
// request span with its custom_id, outcome, attempts and tags under the
// run's, and under it a client span per attempt with the GenAI
// attributes of its ending; only the attempt that waited for the budget
// has an admission event. Finish sends them all.
func TestAttemptAndRequestSpans(t *testing.T) {
	c := &captureClient{}
	tel := tracingTo(c, Options{})
	tel.startRun(1)
	t0 := time.Unix(1700000000, 0)
	retriedRequest(tel, t0)
	tel.Finish(0, nil)
	var spans []*tracepb.Span
	for _, rs := range received(t, c) {
		if attrMap(rs.Resource.GetAttributes())["service.name"].GetStringValue() != "test" || len(rs.ScopeSpans) != 1 || rs.ScopeSpans[0].Scope.GetName() != scope {
			t.Fatalf("resource or scope: %v", rs)
		}
		spans = append(spans, rs.ScopeSpans[0].Spans...)
	}
	if len(spans) != 4 {
		t.Fatalf("%d spans, want 4", len(spans))
	}
	run, failed, answered, request := spans[0], spans[1], spans[2], spans[3] // the run's first, by the SDK's processor
	if run.Name != "llmrun batch" || request.Name != "llmrun request" || !bytes.Equal(request.ParentSpanId, run.SpanId) ||
		!bytes.Equal(failed.ParentSpanId, request.SpanId) || !bytes.Equal(answered.ParentSpanId, request.SpanId) ||
		!bytes.Equal(request.TraceId, run.TraceId) || !bytes.Equal(answered.TraceId, run.TraceId) || bytes.Equal(failed.SpanId, answered.SpanId) {
		t.Fatalf("spans not in one trace, attempts under the request under the run: %v", spans)
	}
	ra := attrMap(request.Attributes)
	if ra["llmrun.custom_id"].GetStringValue() != "r1" || ra["llmrun.outcome"].GetStringValue() != "succeeded" || ra["llmrun.attempts"].GetIntValue() != 2 ||
		ra["llmrun.tag.team"].GetStringValue() != "search" || !ra["llmrun.fell_back"].GetBoolValue() || request.Kind != tracepb.Span_SPAN_KIND_INTERNAL {
		t.Errorf("request span attributes %v", ra)
	}
	fa := attrMap(failed.Attributes)
	if failed.Name != "chat m" || failed.Kind != tracepb.Span_SPAN_KIND_CLIENT || fa["error.type"].GetStringValue() != "500" ||
		failed.Status.GetCode() != tracepb.Status_STATUS_CODE_ERROR || fa["gen_ai.provider.name"].GetStringValue() != "gcp.gemini" ||
		fa["gen_ai.request.max_tokens"].GetIntValue() != 40 || fa["llmrun.hop"] != nil ||
		failed.StartTimeUnixNano != uint64(t0.UnixNano()) || failed.EndTimeUnixNano != uint64(t0.Add(time.Second).UnixNano()) || len(failed.Events) != 0 {
		t.Errorf("failed attempt span %v", failed)
	}
	aa := attrMap(answered.Attributes)
	if aa["gen_ai.request.model"].GetStringValue() != "m" || aa["gen_ai.response.model"].GetStringValue() != "m-001" || aa["gen_ai.usage.input_tokens"].GetIntValue() != 7 ||
		aa["gen_ai.usage.output_tokens"].GetIntValue() != 9 || len(aa["gen_ai.response.finish_reasons"].GetArrayValue().GetValues()) != 1 ||
		aa["gen_ai.response.id"].GetStringValue() != "id-1" || aa["llmrun.hop"].GetIntValue() != 1 || aa["error.type"] != nil || aa["gen_ai.input.messages"] != nil ||
		answered.Status.GetCode() != tracepb.Status_STATUS_CODE_UNSET {
		t.Errorf("answered attempt span %v", answered)
	}
	if len(answered.Events) != 1 || attrMap(answered.Events[0].Attributes)["llmrun.admission.wait_seconds"].GetDoubleValue() != 2 {
		t.Errorf("answered attempt events %v, want one admission event of 2s", answered.Events)
	}
}

// TestSpansMatchOfficial: the request and attempt spans this package
// writes are byte for byte what the official exporter makes of SDK spans
// with the same IDs, times and attributes.
func TestSpansMatchOfficial(t *testing.T) {
	ours := &captureClient{}
	tel := tracingTo(ours, Options{Content: true})
	t0 := time.Unix(1700000000, 5)
	retriedRequest(tel, t0)
	req := &providers.Request{ID: "r2", Model: "m", Body: []byte(`{"messages":[{"role":"user","content":"hi"}]}`)}
	ro := tel.Request(req)
	a := &runner.Attempt{Request: req, Provider: "openai", Key: "k", Number: 1, Sent: t0}
	a.End = runner.AttemptEnd{At: t0.Add(time.Millisecond), Err: errors.New("connection reset")}
	ro.AttemptEnd(a)
	ro.End(&runner.RequestEnd{Outcome: runner.OutcomeFailed, Attempts: 1, Err: &providers.Error{Status: 400, Message: "bad"}})
	tel.Finish(0, nil)
	got := received(t, ours)
	if len(got) != 1 || len(got[0].ScopeSpans[0].Spans) != 5 {
		t.Fatalf("%d uploads, want 1 of 5 spans: %v", len(got), got)
	}
	want := officialSpans(t, tel.spans.res, got[0].ScopeSpans[0].Spans, t0)
	if !bytes.Equal(ours.got[0], want) {
		var w tracepb.ResourceSpans
		proto.Unmarshal(want, &w)
		t.Fatalf("spans differ:\nofficial %v\nours     %v", &w, got[0])
	}
}

// officialSpans is the official exporter's ResourceSpans of the SDK
// spans TestSpansMatchOfficial's calls should make, with the IDs and the
// request spans' times (taken from the clock) of got.
func officialSpans(t *testing.T, res *resource.Resource, got []*tracepb.Span, t0 time.Time) []byte {
	sc := func(s *tracepb.Span, id []byte) trace.SpanContext {
		if len(id) == 0 {
			return trace.SpanContext{}
		}
		return trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID(s.TraceId), SpanID: trace.SpanID(id), TraceFlags: trace.FlagsSampled})
	}
	at := func(ns uint64) time.Time { return time.Unix(0, int64(ns)) }
	gem := []attribute.KeyValue{attribute.String("gen_ai.operation.name", "chat"), attribute.String("gen_ai.provider.name", "gcp.gemini"), attribute.String("gen_ai.request.model", "m")}
	stub := func(i int, kind trace.SpanKind, start, end time.Time, attrs ...attribute.KeyValue) tracetest.SpanStub {
		s := got[i]
		return tracetest.SpanStub{Name: s.Name, SpanContext: sc(s, s.SpanId), Parent: sc(s, s.ParentSpanId), SpanKind: kind, StartTime: start, EndTime: end,
			Attributes: attrs, Resource: res, InstrumentationScope: instrumentation.Scope{Name: scope}}
	}
	stubs := tracetest.SpanStubs{
		stub(0, trace.SpanKindClient, t0, t0.Add(time.Second), append(gem[:3:3], attribute.String("error.type", "500"), attribute.Int("gen_ai.request.max_tokens", 40),
			attribute.String("gen_ai.input.messages", ""))...),
		stub(1, trace.SpanKindClient, t0.Add(3*time.Second), t0.Add(4*time.Second), append(gem[:3:3], attribute.String("gen_ai.response.model", "m-001"),
			attribute.Int64("gen_ai.usage.input_tokens", 7), attribute.Int64("gen_ai.usage.output_tokens", 9), attribute.StringSlice("gen_ai.response.finish_reasons", []string{"STOP"}),
			attribute.String("gen_ai.response.id", "id-1"), attribute.Float64("llmrun.cost_usd", 0.25), attribute.String("gen_ai.output.messages", ""),
			attribute.Int("gen_ai.request.max_tokens", 40), attribute.Int("llmrun.hop", 1), attribute.String("gen_ai.input.messages", ""))...),
		stub(2, trace.SpanKindInternal, at(got[2].StartTimeUnixNano), at(got[2].EndTimeUnixNano), attribute.String("llmrun.custom_id", "r1"),
			attribute.String("llmrun.outcome", "succeeded"), attribute.Int("llmrun.attempts", 2), attribute.Bool("llmrun.fell_back", true), attribute.String("llmrun.tag.team", "search")),
		stub(3, trace.SpanKindClient, t0, t0.Add(time.Millisecond), attribute.String("gen_ai.operation.name", "chat"), attribute.String("gen_ai.provider.name", "openai"),
			attribute.String("gen_ai.request.model", "m"), attribute.String("error.type", "_OTHER"), attribute.String("gen_ai.input.messages", `[{"role":"user","content":"hi"}]`)),
		stub(4, trace.SpanKindInternal, at(got[4].StartTimeUnixNano), at(got[4].EndTimeUnixNano), attribute.String("llmrun.custom_id", "r2"),
			attribute.String("llmrun.outcome", "failed"), attribute.Int("llmrun.attempts", 1)),
	}
	stubs[0].Status = sdktrace.Status{Code: codes.Error, Description: "500"}
	stubs[1].Events = []sdktrace.Event{{Name: "llmrun.admission", Time: t0.Add(3 * time.Second),
		Attributes: []attribute.KeyValue{attribute.Float64("llmrun.admission.wait_seconds", 2), attribute.String("llmrun.budget_key", "k")}}}
	stubs[3].Status = sdktrace.Status{Code: codes.Error, Description: "_OTHER"}
	stubs[4].Status = sdktrace.Status{Code: codes.Error, Description: providers.Cause(&providers.Error{Status: 400, Message: "bad"})}
	official := &captureClient{}
	exp, _ := otlptrace.New(context.Background(), official)
	if err := exp.ExportSpans(context.Background(), stubs.Snapshots()); err != nil || len(official.got) != 1 {
		t.Fatalf("official export: %v, %d resources", err, len(official.got))
	}
	return official.got[0]
}
