package telemetry

import (
	"context"
	"testing"
	"time"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"github.com/llmrun/llmrun/limiter"
	"github.com/llmrun/llmrun/providers"
	"github.com/llmrun/llmrun/runner"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

type nopClient struct{}

func (nopClient) Start(context.Context) error                                  { return nil }
func (nopClient) Stop(context.Context) error                                   { return nil }
func (nopClient) UploadTraces(context.Context, []*tracepb.ResourceSpans) error { return nil }

// BenchmarkEncode converts a batch of 512 spans as llmrun makes them
// (request and attempt spans, half each) to OTLP messages: the official
// exporter's conversion against this package's.
func BenchmarkEncode(b *testing.B) {
	mem := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(mem))
	tel := newTelemetry(Options{})
	tel.tracer = tp.Tracer(scope)
	req := &providers.Request{ID: "request-00000001", Model: "m", MaxTokens: 40}
	resp := &providers.Response{Status: 200, Body: []byte(answerBody), Model: "m-2026", RequestID: "req_1", Usage: providers.Usage{InputTokens: 14, OutputTokens: 11}}
	for range 256 {
		ro := tel.Request(req)
		a := &runner.Attempt{Request: req, Provider: "openai", Key: "k", Number: 1, Reserved: limiter.Cost{Input: 20}, Sent: time.Now()}
		a.End = runner.AttemptEnd{At: time.Now(), Resp: resp}
		ro.AttemptEnd(a)
		ro.End(&runner.RequestEnd{Outcome: runner.OutcomeSucceeded, Attempts: 1})
	}
	spans := mem.GetSpans().Snapshots()
	official, _ := otlptrace.New(context.Background(), nopClient{})
	ours := &spanExporter{client: nopClient{}, t: tel}
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
