package telemetry

import (
	"strconv"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"google.golang.org/protobuf/encoding/protowire"
)

// The OpenTelemetry SDK applies span limits (OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT
// and the rest) to the spans it records; the request and attempt spans
// are written here, not by the SDK, so they apply the same limits the
// same way. With --otel-content they carry whole prompts and answers,
// which the value length limit is how a user bounds.

// spanLimitsFrom reads the span limits from the environment as the SDK
// does (a span variable before the general one; an invalid value is the
// default); the run's span gets the same through WithRawSpanLimits, so
// both kinds of span follow the environment llmrun was given.
func spanLimitsFrom(getenv func(string) string) sdktrace.SpanLimits {
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	first := func(def int, keys ...string) int {
		for _, k := range keys {
			v := strings.TrimSpace(getenv(k))
			if v == "" {
				continue
			}
			n, err := strconv.Atoi(v)
			if err != nil {
				return def
			}
			return n
		}
		return def
	}
	l := sdktrace.NewSpanLimits()
	l.AttributeValueLengthLimit = first(sdktrace.DefaultAttributeValueLengthLimit,
		"OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT", "OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT")
	l.AttributeCountLimit = first(sdktrace.DefaultAttributeCountLimit,
		"OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT", "OTEL_ATTRIBUTE_COUNT_LIMIT")
	l.EventCountLimit = first(sdktrace.DefaultEventCountLimit, "OTEL_SPAN_EVENT_COUNT_LIMIT")
	l.AttributePerEventCountLimit = first(sdktrace.DefaultAttributePerEventCountLimit, "OTEL_EVENT_ATTRIBUTE_COUNT_LIMIT")
	l.LinkCountLimit = first(sdktrace.DefaultLinkCountLimit, "OTEL_SPAN_LINK_COUNT_LIMIT")
	l.AttributePerLinkCountLimit = first(sdktrace.DefaultAttributePerLinkCountLimit, "OTEL_LINK_ATTRIBUTE_COUNT_LIMIT")
	return l
}

// truncate is s cut to limit characters, as the SDK cuts string values
// (no limit when negative). A value within the limit is s itself, as
// without one.
func truncate(limit int, s string) string {
	if limit < 0 || len(s) <= limit {
		return s
	}
	n := 0
	for i := range s {
		if n == limit {
			return s[:i]
		}
		n++
	}
	return s
}

// attrs appends the attributes of one span or event to b, up to a
// count, each string value cut to the length limit; what does not fit is
// counted as dropped, which the message then records.
type attrs struct {
	b       []byte
	field   protowire.Number // the attributes' field in the message
	n, max  int              // written; max < 0: no limit
	value   int              // the value length limit
	dropped int
}

// room takes a place for one more attribute, or counts it dropped.
func (a *attrs) room() bool {
	if a.max >= 0 && a.n >= a.max {
		a.dropped++
		return false
	}
	a.n++
	return true
}

func (a *attrs) str(key, val string) {
	if a.room() {
		a.b = appendStrAttr(a.b, a.field, key, truncate(a.value, val))
	}
}

func (a *attrs) int(key string, v int64) {
	if a.room() {
		a.b = appendIntAttr(a.b, a.field, key, v)
	}
}

func (a *attrs) float(key string, v float64) {
	if a.room() {
		a.b = appendFloatAttr(a.b, a.field, key, v)
	}
}

func (a *attrs) bool(key string, v bool) {
	if a.room() {
		a.b = appendBoolAttr(a.b, a.field, key, v)
	}
}

// shared appends string attributes made once for many spans: enc, their
// encoding, when all fit and none is cut; else each in turn.
func (a *attrs) shared(kvs []attribute.KeyValue, enc []byte) {
	if a.max < 0 || a.n+len(kvs) <= a.max {
		cut := false
		for _, kv := range kvs {
			cut = cut || (kv.Value.Type() == attribute.STRING && a.value >= 0 && len(kv.Value.AsString()) > a.value)
		}
		if !cut {
			a.b, a.n = append(a.b, enc...), a.n+len(kvs)
			return
		}
	}
	for _, kv := range kvs {
		a.str(string(kv.Key), kv.Value.AsString())
	}
}

// end appends the dropped count (field num) if any attribute was
// dropped, and returns the buffer.
func (a *attrs) end(num protowire.Number) []byte {
	if a.dropped > 0 {
		a.b = appendUint(a.b, num, uint64(a.dropped))
	}
	return a.b
}
