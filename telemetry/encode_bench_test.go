package telemetry

import (
	"context"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// marshalClient is an OTLP client that marshals the request, as the
// HTTP and gRPC clients do, and sends nothing.
type marshalClient struct{}

func (marshalClient) Start(context.Context) error { return nil }
func (marshalClient) Stop(context.Context) error  { return nil }
func (marshalClient) UploadTraces(_ context.Context, rs []*tracepb.ResourceSpans) error {
	_, err := proto.Marshal(&coltracepb.ExportTraceServiceRequest{ResourceSpans: rs})
	return err
}

// BenchmarkEncode sends a batch of 512 SDK spans shaped like llmrun's
// (request and attempt spans, half each) through an OTLP client that
// marshals: the official exporter's conversion against this package's
// encoding (the run's span takes this way).
func BenchmarkEncode(b *testing.B) {
	res := resource.NewSchemaless(attribute.String("service.name", "llmrun"))
	sc := func(i int) trace.SpanContext {
		return trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{1}, SpanID: trace.SpanID{byte(i), byte(i >> 8), 1}, TraceFlags: trace.FlagsSampled})
	}
	now := time.Now()
	var stubs tracetest.SpanStubs
	for i := range 256 {
		stubs = append(stubs, tracetest.SpanStub{Name: "chat m", SpanContext: sc(2 * i), Parent: sc(2*i + 1), SpanKind: trace.SpanKindClient,
			StartTime: now, EndTime: now, Resource: res, InstrumentationScope: instrumentation.Scope{Name: scope}, Attributes: []attribute.KeyValue{
				attribute.String("gen_ai.operation.name", "chat"), attribute.String("gen_ai.provider.name", "openai"), attribute.String("gen_ai.request.model", "m"),
				attribute.String("gen_ai.response.model", "m-2026"), attribute.Int64("gen_ai.usage.input_tokens", 14), attribute.Int64("gen_ai.usage.output_tokens", 11),
				attribute.StringSlice("gen_ai.response.finish_reasons", []string{"stop"}), attribute.String("gen_ai.response.id", "req_1"), attribute.Int("gen_ai.request.max_tokens", 40)}},
			tracetest.SpanStub{Name: "llmrun request", SpanContext: sc(2*i + 1), Parent: sc(0), StartTime: now, EndTime: now, Resource: res,
				InstrumentationScope: instrumentation.Scope{Name: scope}, Attributes: []attribute.KeyValue{attribute.String("llmrun.custom_id", "request-00000001"),
					attribute.String("llmrun.outcome", "succeeded"), attribute.Int("llmrun.attempts", 1)}})
	}
	spans := stubs.Snapshots()
	official, _ := otlptrace.New(context.Background(), marshalClient{})
	ours := &spanExporter{client: marshalClient{}, t: &Telemetry{}}
	for name, exp := range map[string]sdktrace.SpanExporter{"official": official, "ours": ours} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			cpu0 := cpuTime()
			for b.Loop() {
				exp.ExportSpans(context.Background(), spans)
			}
			b.ReportMetric(float64((cpuTime()-cpu0).Nanoseconds())/float64(b.N), "cpu-ns/op")
		})
	}
}
