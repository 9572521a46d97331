package telemetry

import (
	"context"
	"math"
	"sync"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
)

// spanExporter sends spans through an official OTLP client (HTTP or
// gRPC, configured by the OTEL_* environment), making their OTLP messages
// itself: the official exporter's conversion allocates three objects per
// attribute and two per span, which on a run of small fast answers was a
// fifth of tracing's CPU; this one allocates a few slabs per batch. The
// messages are the same (TestExportMatchesOfficial). A failed export is
// reported once and hidden from the SDK, whose global error handler would
// log every one.
type spanExporter struct {
	client otlptrace.Client
	t      *Telemetry

	// busy holds slabs, reused batch after batch: the client has
	// marshalled the messages when UploadTraces returns.
	busy  sync.Mutex
	slabs slabs

	mu sync.Mutex
	// resources are the OTLP messages of the resources seen (one, in
	// practice), made once.
	resources map[*resource.Resource]*resourcepb.Resource
}

func (e *spanExporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	e.busy.Lock()
	defer e.busy.Unlock()
	e.slabs.size(spans)
	defer e.slabs.release()
	rs := e.encode(spans)
	if len(rs) == 0 {
		return nil
	}
	if err := e.client.UploadTraces(ctx, rs); err != nil {
		e.t.warn("spans", err)
	}
	return nil
}

func (e *spanExporter) Shutdown(ctx context.Context) error { return e.client.Stop(ctx) }

// group is the spans of one resource and instrumentation scope.
type group struct {
	res   *resource.Resource
	scope instrumentation.Scope
	ss    *tracepb.ScopeSpans
	rs    *tracepb.ResourceSpans
}

// encode makes the OTLP messages of spans, grouped by resource, then by
// scope, in the order first seen.
func (e *spanExporter) encode(spans []sdktrace.ReadOnlySpan) []*tracepb.ResourceSpans {
	s := &e.slabs
	var groups []group
	var out []*tracepb.ResourceSpans
	for _, sd := range spans {
		if sd == nil {
			continue
		}
		res, scope := sd.Resource(), sd.InstrumentationScope()
		g := findGroup(groups, res, scope)
		if g == nil {
			var rs *tracepb.ResourceSpans
			for i := range groups {
				if groups[i].res == res {
					rs = groups[i].rs
					break
				}
			}
			if rs == nil {
				rs = &tracepb.ResourceSpans{Resource: e.resource(res), SchemaUrl: res.SchemaURL()}
				out = append(out, rs)
			}
			ss := &tracepb.ScopeSpans{Scope: scopeOf(scope), SchemaUrl: scope.SchemaURL}
			rs.ScopeSpans = append(rs.ScopeSpans, ss)
			groups = append(groups, group{res: res, scope: scope, ss: ss, rs: rs})
			g = &groups[len(groups)-1]
		}
		g.ss.Spans = append(g.ss.Spans, s.span(sd))
	}
	return out
}

func findGroup(groups []group, res *resource.Resource, scope instrumentation.Scope) *group {
	for i := range groups {
		if groups[i].res == res && groups[i].scope == scope {
			return &groups[i]
		}
	}
	return nil
}

// resource is res's OTLP message, made once.
func (e *spanExporter) resource(res *resource.Resource) *resourcepb.Resource {
	if res == nil {
		return nil
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if pb, ok := e.resources[res]; ok {
		return pb
	}
	pb := &resourcepb.Resource{Attributes: iterKeyValues(res.Iter())}
	if e.resources == nil {
		e.resources = make(map[*resource.Resource]*resourcepb.Resource)
	}
	e.resources[res] = pb
	return pb
}

func scopeOf(sc instrumentation.Scope) *commonpb.InstrumentationScope {
	if sc == (instrumentation.Scope{}) {
		return nil
	}
	return &commonpb.InstrumentationScope{Name: sc.Name, Version: sc.Version, Attributes: iterKeyValues(sc.Attributes.Iter())}
}

// iterKeyValues converts the attributes of a set, allocating each: for
// the few made once (resource, scope).
func iterKeyValues(it attribute.Iterator) []*commonpb.KeyValue {
	if it.Len() == 0 {
		return nil
	}
	var s slabs
	out := make([]*commonpb.KeyValue, 0, it.Len())
	for it.Next() {
		out = append(out, s.keyValue(it.Attribute()))
	}
	return out
}

// slabs hold one batch's messages; each take is from a slab sized by a
// first count (size), or a new allocation past its end (never needed for
// spans as counted). Their elements are zero beyond their lengths.
type slabs struct {
	spans  []tracepb.Span
	status []tracepb.Status
	events []tracepb.Span_Event
	ids    []byte
	kvs    []commonpb.KeyValue
	kvps   []*commonpb.KeyValue
	anys   []commonpb.AnyValue
	strs   []commonpb.AnyValue_StringValue
	ints   []commonpb.AnyValue_IntValue
	dbls   []commonpb.AnyValue_DoubleValue
	bools  []commonpb.AnyValue_BoolValue
}

// size makes room in the slabs for spans.
func (s *slabs) size(spans []sdktrace.ReadOnlySpan) {
	var n, events, kvs, values int
	for _, sd := range spans {
		if sd == nil {
			continue
		}
		n++
		count := func(attrs []attribute.KeyValue) {
			kvs += len(attrs)
			values += len(attrs)
			for _, kv := range attrs {
				if kv.Value.Type() == attribute.STRINGSLICE {
					values += len(kv.Value.AsStringSlice())
				}
			}
		}
		count(sd.Attributes())
		for _, ev := range sd.Events() {
			events++
			count(ev.Attributes)
		}
	}
	room(&s.spans, n)
	room(&s.status, n)
	room(&s.events, events)
	room(&s.ids, n*32)
	room(&s.kvs, kvs)
	room(&s.kvps, kvs)
	room(&s.anys, values)
	room(&s.strs, values)
	room(&s.ints, kvs)
	room(&s.dbls, kvs)
	room(&s.bools, kvs)
}

// room gives an empty slab a capacity of n at least.
func room[T any](slab *[]T, n int) {
	if cap(*slab) < n {
		*slab = make([]T, 0, n)
	}
}

// release empties the slabs, zeroing what the batch used: nothing of it
// (strings of attributes) stays reachable, and take hands out zero
// values.
func (s *slabs) release() {
	s.spans = zeroed(s.spans)
	s.status = zeroed(s.status)
	s.events = zeroed(s.events)
	s.ids = s.ids[:0]
	s.kvs = zeroed(s.kvs)
	s.kvps = zeroed(s.kvps)
	s.anys = zeroed(s.anys)
	s.strs = zeroed(s.strs)
	s.ints = zeroed(s.ints)
	s.dbls = zeroed(s.dbls)
	s.bools = zeroed(s.bools)
}

func zeroed[T any](slab []T) []T {
	clear(slab)
	return slab[:0]
}

// take returns a pointer to a new zero element of *slab, from its spare
// capacity if any (the slab never grows: elements already handed out stay
// where they are).
func take[T any](slab *[]T) *T {
	if len(*slab) < cap(*slab) {
		*slab = (*slab)[:len(*slab)+1]
		return &(*slab)[len(*slab)-1]
	}
	return new(T)
}

// id copies an ID into the ids slab.
func (s *slabs) id(b []byte) []byte {
	if len(s.ids)+len(b) > cap(s.ids) {
		return append([]byte(nil), b...)
	}
	start := len(s.ids)
	s.ids = append(s.ids, b...)
	return s.ids[start:len(s.ids):len(s.ids)]
}

// span is sd's message, as the official exporter makes it.
func (s *slabs) span(sd sdktrace.ReadOnlySpan) *tracepb.Span {
	sc, parent := sd.SpanContext(), sd.Parent()
	tid, sid := sc.TraceID(), sc.SpanID()
	st := sd.Status()
	p := take(&s.spans)
	p.TraceId, p.SpanId = s.id(tid[:]), s.id(sid[:])
	p.TraceState = sc.TraceState().String()
	if psid := parent.SpanID(); psid.IsValid() {
		p.ParentSpanId = s.id(psid[:])
	}
	p.Flags = spanFlags(sc.TraceFlags(), parent)
	p.Name, p.Kind = sd.Name(), spanKind(sd.SpanKind())
	p.StartTimeUnixNano = uint64(max(0, sd.StartTime().UnixNano()))
	p.EndTimeUnixNano = uint64(max(0, sd.EndTime().UnixNano()))
	p.Attributes = s.keyValues(sd.Attributes())
	p.DroppedAttributesCount = clampUint32(sd.DroppedAttributes())
	p.Events = s.spanEvents(sd.Events())
	p.DroppedEventsCount = clampUint32(sd.DroppedEvents())
	p.Links = s.links(sd.Links())
	p.DroppedLinksCount = clampUint32(sd.DroppedLinks())
	status := take(&s.status)
	status.Code, status.Message = statusCode(st.Code), st.Description
	p.Status = status
	return p
}

func (s *slabs) spanEvents(es []sdktrace.Event) []*tracepb.Span_Event {
	if len(es) == 0 {
		return nil
	}
	out := make([]*tracepb.Span_Event, len(es))
	for i, e := range es {
		ev := take(&s.events)
		ev.Name, ev.TimeUnixNano = e.Name, uint64(max(0, e.Time.UnixNano()))
		ev.Attributes, ev.DroppedAttributesCount = s.keyValues(e.Attributes), clampUint32(e.DroppedAttributeCount)
		out[i] = ev
	}
	return out
}

func (s *slabs) links(ls []sdktrace.Link) []*tracepb.Span_Link {
	if len(ls) == 0 {
		return nil
	}
	out := make([]*tracepb.Span_Link, len(ls))
	for i, l := range ls {
		tid, sid := l.SpanContext.TraceID(), l.SpanContext.SpanID()
		out[i] = &tracepb.Span_Link{
			TraceId: s.id(tid[:]), SpanId: s.id(sid[:]), // no trace_state, as the official exporter
			Attributes: s.keyValues(l.Attributes), DroppedAttributesCount: clampUint32(l.DroppedAttributeCount),
			Flags: spanFlags(l.SpanContext.TraceFlags(), l.SpanContext),
		}
	}
	return out
}

// keyValues converts attrs, the pointers themselves from a slab.
func (s *slabs) keyValues(attrs []attribute.KeyValue) []*commonpb.KeyValue {
	if len(attrs) == 0 {
		return nil
	}
	var out []*commonpb.KeyValue
	if len(s.kvps)+len(attrs) <= cap(s.kvps) {
		start := len(s.kvps)
		s.kvps = s.kvps[:start+len(attrs)]
		out = s.kvps[start:len(s.kvps):len(s.kvps)]
	} else {
		out = make([]*commonpb.KeyValue, len(attrs))
	}
	for i, kv := range attrs {
		out[i] = s.keyValue(kv)
	}
	return out
}

func (s *slabs) keyValue(kv attribute.KeyValue) *commonpb.KeyValue {
	p := take(&s.kvs)
	p.Key, p.Value = string(kv.Key), s.value(kv.Value)
	return p
}

// value converts v as the official exporter does; the scalar kinds and
// string slices from the slabs.
func (s *slabs) value(v attribute.Value) *commonpb.AnyValue {
	av := take(&s.anys)
	switch v.Type() {
	case attribute.STRING:
		w := take(&s.strs)
		w.StringValue = v.AsString()
		av.Value = w
	case attribute.INT64:
		w := take(&s.ints)
		w.IntValue = v.AsInt64()
		av.Value = w
	case attribute.FLOAT64:
		w := take(&s.dbls)
		w.DoubleValue = v.AsFloat64()
		av.Value = w
	case attribute.BOOL:
		w := take(&s.bools)
		w.BoolValue = v.AsBool()
		av.Value = w
	case attribute.STRINGSLICE:
		strs := v.AsStringSlice()
		vals := make([]*commonpb.AnyValue, len(strs))
		for i, str := range strs {
			vals[i] = s.value(attribute.StringValue(str))
		}
		av.Value = &commonpb.AnyValue_ArrayValue{ArrayValue: &commonpb.ArrayValue{Values: vals}}
	default:
		s.otherValue(av, v)
	}
	return av
}

// otherValue converts the kinds llmrun does not record itself.
func (s *slabs) otherValue(av *commonpb.AnyValue, v attribute.Value) {
	array := func(n int, at func(int) attribute.Value) {
		vals := make([]*commonpb.AnyValue, n)
		for i := range vals {
			vals[i] = s.value(at(i))
		}
		av.Value = &commonpb.AnyValue_ArrayValue{ArrayValue: &commonpb.ArrayValue{Values: vals}}
	}
	switch v.Type() {
	case attribute.BOOLSLICE:
		b := v.AsBoolSlice()
		array(len(b), func(i int) attribute.Value { return attribute.BoolValue(b[i]) })
	case attribute.INT64SLICE:
		n := v.AsInt64Slice()
		array(len(n), func(i int) attribute.Value { return attribute.Int64Value(n[i]) })
	case attribute.FLOAT64SLICE:
		f := v.AsFloat64Slice()
		array(len(f), func(i int) attribute.Value { return attribute.Float64Value(f[i]) })
	case attribute.SLICE:
		vs := v.AsSlice()
		array(len(vs), func(i int) attribute.Value { return vs[i] })
	case attribute.BYTESLICE:
		av.Value = &commonpb.AnyValue_BytesValue{BytesValue: v.AsByteSlice()}
	case attribute.MAP:
		m := v.AsMap()
		kvs := make([]*commonpb.KeyValue, len(m))
		for i, kv := range m {
			kvs[i] = s.keyValue(kv)
		}
		av.Value = &commonpb.AnyValue_KvlistValue{KvlistValue: &commonpb.KeyValueList{Values: kvs}}
	case attribute.EMPTY:
	default:
		av.Value = &commonpb.AnyValue_StringValue{StringValue: "INVALID"}
	}
}

// spanFlags are the W3C trace flags and whether the parent is remote.
func spanFlags(tf trace.TraceFlags, parent trace.SpanContext) uint32 {
	flags := uint32(tf) | uint32(tracepb.SpanFlags_SPAN_FLAGS_CONTEXT_HAS_IS_REMOTE_MASK)
	if parent.IsRemote() {
		flags |= uint32(tracepb.SpanFlags_SPAN_FLAGS_CONTEXT_IS_REMOTE_MASK)
	}
	return flags
}

func spanKind(k trace.SpanKind) tracepb.Span_SpanKind {
	switch k {
	case trace.SpanKindInternal:
		return tracepb.Span_SPAN_KIND_INTERNAL
	case trace.SpanKindClient:
		return tracepb.Span_SPAN_KIND_CLIENT
	case trace.SpanKindServer:
		return tracepb.Span_SPAN_KIND_SERVER
	case trace.SpanKindProducer:
		return tracepb.Span_SPAN_KIND_PRODUCER
	case trace.SpanKindConsumer:
		return tracepb.Span_SPAN_KIND_CONSUMER
	}
	return tracepb.Span_SPAN_KIND_UNSPECIFIED
}

func statusCode(c codes.Code) tracepb.Status_StatusCode {
	switch c {
	case codes.Ok:
		return tracepb.Status_STATUS_CODE_OK
	case codes.Error:
		return tracepb.Status_STATUS_CODE_ERROR
	}
	return tracepb.Status_STATUS_CODE_UNSET
}

func clampUint32(v int) uint32 {
	return uint32(min(max(int64(v), 0), math.MaxUint32))
}
