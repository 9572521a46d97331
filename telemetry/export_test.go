package telemetry

import (
	"bytes"
	"context"
	"slices"
	"sync"
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
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// captureClient is an OTLP client that keeps what it is given, each
// resource's spans marshalled deterministically.
type captureClient struct {
	mu  sync.Mutex
	got [][]byte
}

func (c *captureClient) Start(context.Context) error { return nil }
func (c *captureClient) Stop(context.Context) error  { return nil }
func (c *captureClient) UploadTraces(_ context.Context, rs []*tracepb.ResourceSpans) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, r := range rs {
		b, err := proto.MarshalOptions{Deterministic: true}.Marshal(r)
		if err != nil {
			return err
		}
		c.got = append(c.got, b)
	}
	return nil
}

// exportStubs are spans of every shape: each attribute kind, events,
// links, remote and local parents, statuses, dropped counts, two
// resources and two scopes.
func exportStubs() tracetest.SpanStubs {
	tid := trace.TraceID{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}
	sc := func(sid byte, remote bool) trace.SpanContext {
		ts, _ := trace.ParseTraceState("vendor=x")
		return trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: trace.SpanID{sid}, TraceFlags: trace.FlagsSampled, TraceState: ts, Remote: remote})
	}
	r1 := resource.NewWithAttributes("https://opentelemetry.io/schemas/1.26.0", attribute.String("service.name", "a"), attribute.Int("n", 1))
	r2 := resource.NewSchemaless(attribute.String("service.name", "b"))
	s1 := instrumentation.Scope{Name: "one", Version: "1.0", SchemaURL: "https://x", Attributes: attribute.NewSet(attribute.Bool("b", true))}
	s2 := instrumentation.Scope{Name: "two"}
	t0 := time.Unix(1700000000, 123)
	all := []attribute.KeyValue{
		attribute.String("s", "v"), attribute.Int64("i", -3), attribute.Float64("f", 1.5), attribute.Bool("b", true),
		attribute.StringSlice("ss", []string{"stop", "length"}), attribute.Int64Slice("is", []int64{1, 2}),
		attribute.Float64Slice("fs", []float64{0.5}), attribute.BoolSlice("bs", []bool{true, false}), attribute.StringSlice("empty", nil),
	}
	return tracetest.SpanStubs{
		{Name: "run", SpanContext: sc(1, false), StartTime: t0, EndTime: t0.Add(time.Second), Resource: r1, InstrumentationScope: s1},
		{Name: "chat m", SpanContext: sc(2, false), Parent: sc(1, false), SpanKind: trace.SpanKindClient, StartTime: t0, EndTime: t0.Add(2 * time.Millisecond),
			Attributes: all, DroppedAttributes: 2, Resource: r1, InstrumentationScope: s1,
			Events:        []sdktrace.Event{{Name: "llmrun.admission", Time: t0, Attributes: all[:2], DroppedAttributeCount: 1}, {Name: "bare", Time: t0}},
			DroppedEvents: 1, Status: sdktrace.Status{Code: codes.Error, Description: "500"}},
		{Name: "linked", SpanContext: sc(3, false), Parent: sc(9, true), SpanKind: trace.SpanKindServer, StartTime: t0, EndTime: t0,
			Links: []sdktrace.Link{{SpanContext: sc(7, true), Attributes: all[2:4], DroppedAttributeCount: 3}}, DroppedLinks: 4,
			Status: sdktrace.Status{Code: codes.Ok}, Resource: r1, InstrumentationScope: s2},
		{Name: "other", SpanContext: sc(4, false), SpanKind: trace.SpanKindProducer, StartTime: t0, EndTime: t0, Resource: r2, InstrumentationScope: s2},
		{Name: "again", SpanContext: sc(5, false), Parent: sc(1, false), SpanKind: trace.SpanKindConsumer, StartTime: t0, EndTime: t0,
			Attributes: all[4:5], Resource: r1, InstrumentationScope: s1},
	}
}

// TestExportMatchesOfficial: the exporter's messages are the official
// OTLP exporter's, resource by resource (the official one orders the
// resources at random).
func TestExportMatchesOfficial(t *testing.T) {
	spans := exportStubs().Snapshots()
	official, ours := &captureClient{}, &captureClient{}
	exp, err := otlptrace.New(context.Background(), official)
	if err != nil {
		t.Fatal(err)
	}
	if err := exp.ExportSpans(context.Background(), spans); err != nil {
		t.Fatal(err)
	}
	mine := &spanExporter{client: ours, t: &Telemetry{}}
	for range 2 { // the second time from the cached resource messages
		ours.got = nil
		if err := mine.ExportSpans(context.Background(), spans); err != nil {
			t.Fatal(err)
		}
		if len(ours.got) != 2 || len(official.got) != 2 {
			t.Fatalf("%d and %d resources, want 2", len(ours.got), len(official.got))
		}
		slices.SortFunc(official.got, bytes.Compare)
		slices.SortFunc(ours.got, bytes.Compare)
		for i := range ours.got {
			if !bytes.Equal(ours.got[i], official.got[i]) {
				var a, b tracepb.ResourceSpans
				proto.Unmarshal(official.got[i], &a)
				proto.Unmarshal(ours.got[i], &b)
				t.Fatalf("resource %d differs:\nofficial %v\nours     %v", i, &a, &b)
			}
		}
	}
}
