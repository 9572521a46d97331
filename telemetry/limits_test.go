package telemetry

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"github.com/llmrun/llmrun/providers"
	"github.com/llmrun/llmrun/runner"
)

// limitedSpans runs the calls of TestSpansMatchOfficial (with content
// attributes: long values) under the environment env and returns the
// spans received, by name and start.
func limitedSpans(t *testing.T, env map[string]string) []*tracepb.Span {
	t.Helper()
	c := &captureClient{}
	tel := tracingTo(c, Options{Content: true, Getenv: func(k string) string { return env[k] }})
	tel.startRun(2)
	t0 := time.Unix(1700000000, 5)
	retriedRequest(tel, t0)
	req := &providers.Request{ID: "request-two", Model: "m", Body: []byte(`{"messages":[{"role":"user","content":"hello there"}]}`)}
	ro := tel.Request(req)
	a := &runner.Attempt{Request: req, Provider: "openai", Key: "k", Number: 1, Sent: t0.Add(10 * time.Second), Waited: time.Second}
	a.End = runner.AttemptEnd{At: t0.Add(11 * time.Second), Resp: &providers.Response{Status: 200, Model: "m", Text: "an answer",
		Body: []byte(`{"choices":[{"finish_reason":"length"},{"finish_reason":"stop"}]}`)}}
	ro.AttemptEnd(a)
	ro.End(&runner.RequestEnd{Outcome: runner.OutcomeFailed, Attempts: 1, Err: errors.New("x")})
	tel.Finish(0, nil)
	var spans []*tracepb.Span
	for _, rs := range received(t, c) {
		spans = append(spans, rs.ScopeSpans[0].Spans...)
	}
	if len(spans) != 6 {
		t.Fatalf("%d spans, want 6", len(spans))
	}
	// The run's span comes through the SDK's processor, the others through
	// this package's queue: order them the same for every run.
	slices.SortFunc(spans, func(a, b *tracepb.Span) int {
		return cmp.Or(strings.Compare(a.Name, b.Name), cmp.Compare(a.StartTimeUnixNano, b.StartTimeUnixNano))
	})
	return spans
}

// kvs is OTLP attributes as the SDK's.
func kvs(t *testing.T, in []*commonpb.KeyValue) []attribute.KeyValue {
	var out []attribute.KeyValue
	for _, kv := range in {
		switch v := kv.Value.Value.(type) {
		case *commonpb.AnyValue_StringValue:
			out = append(out, attribute.String(kv.Key, v.StringValue))
		case *commonpb.AnyValue_IntValue:
			out = append(out, attribute.Int64(kv.Key, v.IntValue))
		case *commonpb.AnyValue_DoubleValue:
			out = append(out, attribute.Float64(kv.Key, v.DoubleValue))
		case *commonpb.AnyValue_BoolValue:
			out = append(out, attribute.Bool(kv.Key, v.BoolValue))
		case *commonpb.AnyValue_ArrayValue:
			var ss []string
			for _, x := range v.ArrayValue.Values {
				ss = append(ss, x.GetStringValue())
			}
			out = append(out, attribute.StringSlice(kv.Key, ss))
		default:
			t.Fatalf("attribute %s: value %T", kv.Key, v)
		}
	}
	return out
}

// TestSpanLimits: with the environment's span limits, each request and
// attempt span is what the SDK records of the same span without limits:
// attributes cut to the value length and dropped past the count (with
// the dropped count), events dropped past theirs, and the event's
// attributes likewise. The run's span, the SDK's, follows the same
// environment (not the process's).
func TestSpanLimits(t *testing.T) {
	full := limitedSpans(t, nil)
	for _, env := range []map[string]string{
		{"OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT": "3", "OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT": "5", "OTEL_EVENT_ATTRIBUTE_COUNT_LIMIT": "1"},
		{"OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT": "4", "OTEL_ATTRIBUTE_COUNT_LIMIT": "0", "OTEL_SPAN_EVENT_COUNT_LIMIT": "0"},
		{"OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT": "0", "OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT": "9", "OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT": "bad"},
	} {
		limits := spanLimitsFrom(func(k string) string { return env[k] })
		rec := tracetest.NewSpanRecorder()
		tracer := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec), sdktrace.WithRawSpanLimits(limits)).Tracer("")
		got := limitedSpans(t, env)
		for i, f := range full {
			_, s := tracer.Start(context.Background(), f.Name)
			s.SetAttributes(kvs(t, f.Attributes)...)
			for _, e := range f.Events {
				s.AddEvent(e.Name, trace.WithAttributes(kvs(t, e.Attributes)...))
			}
			s.End()
			want := rec.Ended()[i]
			g := got[i]
			droppedEvents := want.DroppedEvents()
			if limits.EventCountLimit == 0 {
				// The SDK's snapshot of a span keeps the dropped count
				// only with an event kept; the protocol's field counts
				// them all, as written here.
				droppedEvents = len(f.Events)
			}
			if !slices.Equal(kvs(t, g.Attributes), want.Attributes()) || int(g.DroppedAttributesCount) != want.DroppedAttributes() ||
				len(g.Events) != len(want.Events()) || int(g.DroppedEventsCount) != droppedEvents {
				t.Fatalf("%v, span %d (%s):\nours %v dropped %d, events %v dropped %d\nSDK  %v dropped %d, events %v dropped %d", env, i, g.Name,
					g.Attributes, g.DroppedAttributesCount, g.Events, g.DroppedEventsCount,
					want.Attributes(), want.DroppedAttributes(), want.Events(), droppedEvents)
			}
			for j, e := range g.Events {
				we := want.Events()[j]
				if !slices.Equal(kvs(t, e.Attributes), we.Attributes) || int(e.DroppedAttributesCount) != we.DroppedAttributeCount {
					t.Fatalf("%v, span %d event %d: ours %v dropped %d, SDK %v dropped %d", env, i, j, e.Attributes, e.DroppedAttributesCount,
						we.Attributes, we.DroppedAttributeCount)
				}
			}
		}
	}
}

// TestSpanLimitsFrom: the SDK's variables, the span one first, an
// invalid value the default.
func TestSpanLimitsFrom(t *testing.T) {
	for env, want := range map[string][2]int{
		"":                                    {-1, 128},
		"OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT=7": {7, 128},
		"OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT=2": {2, 128},
		"OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT=x":        {-1, 128},
		"OTEL_ATTRIBUTE_COUNT_LIMIT= 9 ":           {-1, 9},
		"OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT=-1":       {-1, -1},
	} {
		k, v, _ := strings.Cut(env, "=")
		l := spanLimitsFrom(func(key string) string {
			if key == k {
				return v
			}
			return ""
		})
		if l.AttributeValueLengthLimit != want[0] || l.AttributeCountLimit != want[1] {
			t.Errorf("%q: value %d count %d, want %v", env, l.AttributeValueLengthLimit, l.AttributeCountLimit, want)
		}
	}
	if l := spanLimitsFrom(nil); l.AttributeCountLimit != 128 {
		t.Errorf("no environment: count %d", l.AttributeCountLimit)
	}
}

// TestTruncate cuts characters, not bytes.
func TestTruncate(t *testing.T) {
	for _, c := range []struct {
		s     string
		limit int
		want  string
	}{{"héllo", 2, "hé"}, {"héllo", -1, "héllo"}, {"héllo", 0, ""}, {"ab", 5, "ab"}, {"日本語", 2, "日本"}} {
		if got := truncate(c.limit, c.s); got != c.want {
			t.Errorf("truncate(%d, %q) = %q, want %q", c.limit, c.s, got, c.want)
		}
	}
}
