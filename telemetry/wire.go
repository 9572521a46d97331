package telemetry

import (
	"math"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/encoding/protowire"
)

// The OTLP messages are written here with protowire, appended to reused
// buffers: no message structs, no reflection. Fields go in field-number
// order and proto3 zero values are left out, as proto.Marshal does, so
// that the bytes are the official exporter's (TestExportMatchesOfficial).
// Field numbers are those of opentelemetry/proto/{trace,common,resource}/v1.

const (
	// ResourceSpans, ScopeSpans: resource or scope, then spans, schema_url.
	fGroupHead, fGroupItems, fGroupSchema protowire.Number = 1, 2, 3

	fScopeName, fScopeVersion, fScopeAttrs = 1, 2, 3
	fResourceAttrs                         = 1

	fSpanTraceID, fSpanID, fSpanTraceState, fSpanParent = 1, 2, 3, 4
	fSpanName, fSpanKind, fSpanStart, fSpanEnd          = 5, 6, 7, 8
	fSpanAttrs, fSpanDroppedAttrs                       = 9, 10
	fSpanEvents, fSpanDroppedEvents                     = 11, 12
	fSpanLinks, fSpanDroppedLinks                       = 13, 14
	fSpanStatus, fSpanFlags                             = 15, 16

	fEventTime, fEventName, fEventAttrs, fEventDropped = 1, 2, 3, 4

	fLinkTraceID, fLinkSpanID, fLinkAttrs, fLinkDropped, fLinkFlags = 1, 2, 4, 5, 6

	fStatusMessage, fStatusCode = 2, 3

	fKey, fValue = 1, 2 // KeyValue

	// AnyValue's oneof; ArrayValue and KeyValueList hold field 1.
	fString, fBool, fInt, fDouble, fArray, fKvlist, fBytes = 1, 2, 3, 4, 5, 6, 7
	fListItems                                             = 1
)

// openMsg appends the tag of a message field and one byte for its
// length, which closeMsg fills once the content is written; it returns
// where the content starts.
func openMsg(b []byte, num protowire.Number) ([]byte, int) {
	b = protowire.AppendTag(b, num, protowire.BytesType)
	return append(b, 0), len(b) + 1
}

// openLong is openMsg for a message likely to take 128 to 16383 bytes
// (a span): two bytes for its length, so that closeMsg moves nothing.
func openLong(b []byte, num protowire.Number) ([]byte, int) {
	b = protowire.AppendTag(b, num, protowire.BytesType)
	return append(b, 0x80, 0), len(b) + 2
}

// closeMsg writes the length of the message opened at start into the
// bytes reserved before it, moving the content when the length takes
// more or fewer. openLong's reservation is told from openMsg's by its
// 0x80: the byte before openMsg's is a tag's last, always below 0x80.
func closeMsg(b []byte, start int) []byte {
	n := len(b) - start
	reserved := 1
	if b[start-2] == 0x80 {
		reserved = 2
	}
	if n < 0x80 && reserved == 1 {
		b[start-1] = byte(n)
		return b
	}
	switch size := protowire.SizeVarint(uint64(n)); {
	case size > reserved:
		b = append(b, make([]byte, size-reserved)...) // the compiler's zero extension: no temporary
		copy(b[start+size-reserved:], b[start:start+n])
	case size < reserved:
		copy(b[start-1:], b[start:start+n])
		b = b[:len(b)-1]
	}
	protowire.AppendVarint(b[:start-reserved], uint64(n))
	return b
}

// appendStr appends a string field, left out when empty (proto3).
func appendStr(b []byte, num protowire.Number, s string) []byte {
	if s == "" {
		return b
	}
	b = protowire.AppendTag(b, num, protowire.BytesType)
	return protowire.AppendString(b, s)
}

// appendUint appends a varint field, left out when zero.
func appendUint(b []byte, num protowire.Number, v uint64) []byte {
	if v == 0 {
		return b
	}
	return protowire.AppendVarint(protowire.AppendTag(b, num, protowire.VarintType), v)
}

// appendFixed64 appends a fixed64 field, left out when zero.
func appendFixed64(b []byte, num protowire.Number, v uint64) []byte {
	if v == 0 {
		return b
	}
	return protowire.AppendFixed64(protowire.AppendTag(b, num, protowire.Fixed64Type), v)
}

// appendFixed32 appends a fixed32 field, left out when zero.
func appendFixed32(b []byte, num protowire.Number, v uint32) []byte {
	if v == 0 {
		return b
	}
	return protowire.AppendFixed32(protowire.AppendTag(b, num, protowire.Fixed32Type), v)
}

// appendID appends an ID field (bytes), left out when empty.
func appendID(b []byte, num protowire.Number, id []byte) []byte {
	if len(id) == 0 {
		return b
	}
	return protowire.AppendBytes(protowire.AppendTag(b, num, protowire.BytesType), id)
}

// appendKeyValue appends kv as a KeyValue message in field num.
func appendKeyValue(b []byte, num protowire.Number, kv attribute.KeyValue) []byte {
	b, s := openMsg(b, num)
	b = appendStr(b, fKey, string(kv.Key))
	return closeMsg(appendValue(b, fValue, kv.Value), s)
}

// appendKeyValues appends each of attrs in field num.
func appendKeyValues(b []byte, num protowire.Number, attrs []attribute.KeyValue) []byte {
	for _, kv := range attrs {
		b = appendKeyValue(b, num, kv)
	}
	return b
}

// appendValue appends v as an AnyValue message in field num, as the
// official exporter converts it (an unknown kind is the string INVALID).
func appendValue(b []byte, num protowire.Number, v attribute.Value) []byte {
	b, s := openMsg(b, num)
	switch v.Type() {
	case attribute.STRING:
		b = protowire.AppendString(protowire.AppendTag(b, fString, protowire.BytesType), v.AsString())
	case attribute.BOOL:
		b = protowire.AppendVarint(protowire.AppendTag(b, fBool, protowire.VarintType), protowire.EncodeBool(v.AsBool()))
	case attribute.INT64:
		b = protowire.AppendVarint(protowire.AppendTag(b, fInt, protowire.VarintType), uint64(v.AsInt64()))
	case attribute.FLOAT64:
		b = protowire.AppendFixed64(protowire.AppendTag(b, fDouble, protowire.Fixed64Type), math.Float64bits(v.AsFloat64()))
	case attribute.BYTESLICE:
		b = protowire.AppendBytes(protowire.AppendTag(b, fBytes, protowire.BytesType), v.AsByteSlice())
	case attribute.MAP:
		var l int
		b, l = openMsg(b, fKvlist)
		b = closeMsg(appendKeyValues(b, fListItems, v.AsMap()), l)
	case attribute.EMPTY:
	default:
		b = appendArray(b, v)
	}
	return closeMsg(b, s)
}

// appendArray appends the slice kinds as an ArrayValue, each element an
// AnyValue.
func appendArray(b []byte, v attribute.Value) []byte {
	var elems []attribute.Value
	switch v.Type() {
	case attribute.STRINGSLICE:
		return appendStrings(b, v.AsStringSlice())
	case attribute.BOOLSLICE:
		for _, x := range v.AsBoolSlice() {
			elems = append(elems, attribute.BoolValue(x))
		}
	case attribute.INT64SLICE:
		for _, x := range v.AsInt64Slice() {
			elems = append(elems, attribute.Int64Value(x))
		}
	case attribute.FLOAT64SLICE:
		for _, x := range v.AsFloat64Slice() {
			elems = append(elems, attribute.Float64Value(x))
		}
	case attribute.SLICE:
		elems = v.AsSlice()
	default:
		return protowire.AppendString(protowire.AppendTag(b, fString, protowire.BytesType), "INVALID")
	}
	b, s := openMsg(b, fArray)
	for _, e := range elems {
		b = appendValue(b, fListItems, e)
	}
	return closeMsg(b, s)
}

// appendStrings appends strs as an ArrayValue of string AnyValues.
func appendStrings(b []byte, strs []string) []byte {
	b, s := openMsg(b, fArray)
	for _, str := range strs {
		var v int
		b, v = openMsg(b, fListItems)
		b = protowire.AppendString(protowire.AppendTag(b, fString, protowire.BytesType), str)
		b = closeMsg(b, v)
	}
	return closeMsg(b, s)
}

// Attributes written straight from their values, for the spans this
// package makes itself: the same bytes as appendKeyValue's.

// appendStrAttr appends a string attribute in field num.
func appendStrAttr(b []byte, num protowire.Number, key, val string) []byte {
	b, s := openMsg(b, num)
	b = appendStr(b, fKey, key)
	var v int
	b, v = openMsg(b, fValue)
	b = protowire.AppendString(protowire.AppendTag(b, fString, protowire.BytesType), val)
	return closeMsg(closeMsg(b, v), s)
}

// appendIntAttr appends an int attribute in field num.
func appendIntAttr(b []byte, num protowire.Number, key string, val int64) []byte {
	b, s := openMsg(b, num)
	b = appendStr(b, fKey, key)
	var v int
	b, v = openMsg(b, fValue)
	b = protowire.AppendVarint(protowire.AppendTag(b, fInt, protowire.VarintType), uint64(val))
	return closeMsg(closeMsg(b, v), s)
}

// appendFloatAttr appends a double attribute in field num.
func appendFloatAttr(b []byte, num protowire.Number, key string, val float64) []byte {
	b, s := openMsg(b, num)
	b = appendStr(b, fKey, key)
	var v int
	b, v = openMsg(b, fValue)
	b = protowire.AppendFixed64(protowire.AppendTag(b, fDouble, protowire.Fixed64Type), math.Float64bits(val))
	return closeMsg(closeMsg(b, v), s)
}

// appendBoolAttr appends a bool attribute in field num.
func appendBoolAttr(b []byte, num protowire.Number, key string, val bool) []byte {
	b, s := openMsg(b, num)
	b = appendStr(b, fKey, key)
	var v int
	b, v = openMsg(b, fValue)
	b = protowire.AppendVarint(protowire.AppendTag(b, fBool, protowire.VarintType), protowire.EncodeBool(val))
	return closeMsg(closeMsg(b, v), s)
}

// spanHead is what every span message starts with: fields 1 to 8.
type spanHead struct {
	traceID          trace.TraceID
	spanID, parent   trace.SpanID
	traceState, name string
	kind             trace.SpanKind
	start, end       int64 // Unix nanoseconds
}

// openSpan opens a Span message in a ScopeSpans' spans field and writes
// its head; closeSpan writes its status and flags and closes it. The
// fields between (attributes, events, links, dropped counts) go in
// between, in field order.
func openSpan(b []byte, h *spanHead) ([]byte, int) {
	b, s := openLong(b, fGroupItems)
	b = appendID(b, fSpanTraceID, h.traceID[:])
	b = appendID(b, fSpanID, h.spanID[:])
	b = appendStr(b, fSpanTraceState, h.traceState)
	if h.parent.IsValid() {
		b = appendID(b, fSpanParent, h.parent[:])
	}
	b = appendStr(b, fSpanName, h.name)
	b = appendUint(b, fSpanKind, uint64(spanKind(h.kind)))
	b = appendFixed64(b, fSpanStart, uint64(max(0, h.start)))
	b = appendFixed64(b, fSpanEnd, uint64(max(0, h.end)))
	return b, s
}

// closeSpan writes the span's status (always present, as the official
// exporter sets it) and flags, and closes the span opened at s.
func closeSpan(b []byte, s int, code codes.Code, msg string, flags uint32) []byte {
	var st int
	b, st = openMsg(b, fSpanStatus)
	b = appendStr(b, fStatusMessage, msg)
	b = appendUint(b, fStatusCode, uint64(statusCode(code)))
	b = closeMsg(b, st)
	return closeMsg(appendFixed32(b, fSpanFlags, flags), s)
}

// openEvent opens a span event (field 11) with its time and name.
func openEvent(b []byte, at int64, name string) ([]byte, int) {
	b, s := openMsg(b, fSpanEvents)
	b = appendFixed64(b, fEventTime, uint64(max(0, at)))
	return appendStr(b, fEventName, name), s
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
