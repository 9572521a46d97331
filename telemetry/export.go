package telemetry

import (
	"context"
	"slices"
	"sync"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
)

// spanExporter sends spans through an official OTLP client (HTTP or
// gRPC, configured by the OTEL_* environment: endpoint, headers, TLS,
// compression, timeout, retries). It writes the OTLP protobuf itself
// (wire.go) into buffers reused export after export, and hands the
// client each resource's bytes as the raw content of an empty
// ResourceSpans message: the client's proto.Marshal copies raw fields
// as they are, so the request it sends is byte for byte the official
// exporter's (TestExportMatchesOfficial), without the official
// conversion's objects per attribute nor reflection over them. (The
// client takes messages, not bytes; this is the one way in.)
//
// It exports two kinds of span: the SDK's (the run's span, through the
// SDK's batch processor, ExportSpans) and this package's request and
// attempt spans, written whole at their end into the queue, which
// exports them from a goroutine of its own. A failed export is reported
// once and hidden from the SDK, whose global error handler would log
// every one.
type spanExporter struct {
	client otlptrace.Client
	t      *Telemetry
	// queue holds this package's spans (nil: the SDK's only).
	queue *spanQueue

	// busy guards buf, reused by ExportSpans: the client has
	// marshalled the request when UploadTraces returns.
	busy sync.Mutex
	buf  []byte

	mu sync.Mutex
	// heads are the encoded resource and scope fields, by
	// *resource.Resource or instrumentation.Scope, made once.
	heads map[any][]byte
}

func (e *spanExporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	e.busy.Lock()
	defer e.busy.Unlock()
	b, ends := e.encode(e.buf[:0], spans)
	e.buf = b
	raws := make([][]byte, len(ends))
	start := 0
	for i, end := range ends {
		raws[i], start = b[start:end], end
	}
	e.upload(ctx, raws...)
	return nil
}

// Shutdown exports the queue's last spans, then stops the client.
func (e *spanExporter) Shutdown(ctx context.Context) error {
	if e.queue != nil {
		e.queue.stop(ctx)
	}
	return e.client.Stop(ctx)
}

// upload sends the raw ResourceSpans messages; a failure is the one
// warning.
func (e *spanExporter) upload(ctx context.Context, raws ...[]byte) {
	if len(raws) == 0 {
		return
	}
	rs := make([]*tracepb.ResourceSpans, len(raws))
	for i, raw := range raws {
		rs[i] = &tracepb.ResourceSpans{}
		rs[i].ProtoReflect().SetUnknown(raw)
	}
	if err := e.client.UploadTraces(ctx, rs); err != nil {
		e.t.warn("spans", err)
	}
}

// group names the spans of one resource and instrumentation scope.
type group struct {
	res   *resource.Resource
	scope instrumentation.Scope
}

// encode appends the ResourceSpans messages of spans to b, grouped by
// resource, then by scope, each in the order first seen, and returns
// where each message ends.
func (e *spanExporter) encode(b []byte, spans []sdktrace.ReadOnlySpan) ([]byte, []int) {
	var groups []group
	for _, sd := range spans {
		if sd == nil {
			continue
		}
		if g := (group{sd.Resource(), sd.InstrumentationScope()}); !slices.Contains(groups, g) {
			groups = append(groups, g)
		}
	}
	var ends []int
	for i, g := range groups {
		if slices.ContainsFunc(groups[:i], func(o group) bool { return o.res == g.res }) {
			continue // written with the first group of its resource
		}
		b = append(b, e.resourceHead(g.res)...)
		for _, sg := range groups[i:] {
			if sg.res != g.res {
				continue
			}
			var s int
			b, s = openMsg(b, fGroupItems)
			b = append(b, e.scopeHead(sg.scope)...)
			for _, sd := range spans {
				if sd != nil && sd.Resource() == sg.res && sd.InstrumentationScope() == sg.scope {
					b = appendReadOnly(b, sd)
				}
			}
			b = closeMsg(appendStr(b, fGroupSchema, sg.scope.SchemaURL), s)
		}
		if g.res != nil {
			b = appendStr(b, fGroupSchema, g.res.SchemaURL())
		}
		ends = append(ends, len(b))
	}
	return b, ends
}

// wrap appends the ResourceSpans message of spans (Span fields as
// openSpan writes them) of one resource and scope.
func (e *spanExporter) wrap(b []byte, res *resource.Resource, scope instrumentation.Scope, spans []byte) []byte {
	b = append(b, e.resourceHead(res)...)
	b, s := openMsg(b, fGroupItems)
	b = append(b, e.scopeHead(scope)...)
	b = append(b, spans...)
	b = closeMsg(appendStr(b, fGroupSchema, scope.SchemaURL), s)
	if res != nil {
		b = appendStr(b, fGroupSchema, res.SchemaURL())
	}
	return b
}

// resourceHead is res's field in a ResourceSpans, made once: none for no
// resource, an empty message for one without attributes.
func (e *spanExporter) resourceHead(res *resource.Resource) []byte {
	if res == nil {
		return nil
	}
	return e.head(res, func() []byte {
		b, s := openMsg(nil, fGroupHead)
		for it := res.Iter(); it.Next(); {
			b = appendKeyValue(b, fResourceAttrs, it.Attribute())
		}
		return closeMsg(b, s)
	})
}

// scopeHead is sc's field in a ScopeSpans, made once: none for the zero
// scope.
func (e *spanExporter) scopeHead(sc instrumentation.Scope) []byte {
	if sc == (instrumentation.Scope{}) {
		return nil
	}
	return e.head(sc, func() []byte {
		b, s := openMsg(nil, fGroupHead)
		b = appendStr(appendStr(b, fScopeName, sc.Name), fScopeVersion, sc.Version)
		for it := sc.Attributes.Iter(); it.Next(); {
			b = appendKeyValue(b, fScopeAttrs, it.Attribute())
		}
		return closeMsg(b, s)
	})
}

func (e *spanExporter) head(k any, build func() []byte) []byte {
	e.mu.Lock()
	defer e.mu.Unlock()
	if b, ok := e.heads[k]; ok {
		return b
	}
	if e.heads == nil {
		e.heads = make(map[any][]byte)
	}
	b := build()
	e.heads[k] = b
	return b
}

// appendReadOnly appends an SDK span as the official exporter converts
// it.
func appendReadOnly(b []byte, sd sdktrace.ReadOnlySpan) []byte {
	sc, parent := sd.SpanContext(), sd.Parent()
	b, s := openSpan(b, &spanHead{
		traceID: sc.TraceID(), spanID: sc.SpanID(), traceState: sc.TraceState().String(), parent: parent.SpanID(),
		name: sd.Name(), kind: sd.SpanKind(), start: sd.StartTime().UnixNano(), end: sd.EndTime().UnixNano(),
	})
	b = appendKeyValues(b, fSpanAttrs, sd.Attributes())
	b = appendUint(b, fSpanDroppedAttrs, uint64(clampUint32(sd.DroppedAttributes())))
	for _, ev := range sd.Events() {
		var es int
		b, es = openEvent(b, ev.Time.UnixNano(), ev.Name)
		b = appendKeyValues(b, fEventAttrs, ev.Attributes)
		b = closeMsg(appendUint(b, fEventDropped, uint64(clampUint32(ev.DroppedAttributeCount))), es)
	}
	b = appendUint(b, fSpanDroppedEvents, uint64(clampUint32(sd.DroppedEvents())))
	for _, l := range sd.Links() {
		tid, sid := l.SpanContext.TraceID(), l.SpanContext.SpanID()
		var ls int
		b, ls = openMsg(b, fSpanLinks)
		b = appendID(appendID(b, fLinkTraceID, tid[:]), fLinkSpanID, sid[:]) // no trace_state, as the official exporter
		b = appendKeyValues(b, fLinkAttrs, l.Attributes)
		b = appendUint(b, fLinkDropped, uint64(clampUint32(l.DroppedAttributeCount)))
		b = closeMsg(appendFixed32(b, fLinkFlags, spanFlags(l.SpanContext.TraceFlags(), l.SpanContext)), ls)
	}
	b = appendUint(b, fSpanDroppedLinks, uint64(clampUint32(sd.DroppedLinks())))
	st := sd.Status()
	return closeSpan(b, s, st.Code, st.Description, spanFlags(sc.TraceFlags(), parent))
}
