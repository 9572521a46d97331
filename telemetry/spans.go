package telemetry

import (
	"context"
	"errors"
	"strconv"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/tidwall/gjson"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/llmrun/llmrun/providers"
	"github.com/llmrun/llmrun/runner"
)

var _ runner.Observer = (*Telemetry)(nil)

// Start is runner.Observer's: the run's span begins.
func (t *Telemetry) Start(v *runner.View) {
	t.mu.Lock()
	t.view = v
	t.mu.Unlock()
	t.startRun(v.Counters().Total.Load())
}

// startRun begins the run's span, an SDK span, whose trace the requests'
// spans join.
func (t *Telemetry) startRun(requests int64) {
	_, span := t.tracer.Start(context.Background(), "llmrun batch", trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithAttributes(attribute.Int64("llmrun.requests", requests)))
	sc := span.SpanContext()
	t.mu.Lock()
	t.runSpan = span
	t.mu.Unlock()
	if sc.IsValid() {
		t.run.Store(&runInfo{traceID: sc.TraceID(), spanID: sc.SpanID(), traceState: sc.TraceState().String(),
			sampled: sc.IsSampled(), flags: spanFlags(sc.TraceFlags(), trace.SpanContext{})})
	}
}

// runInfo is what the requests' spans take from the run's.
type runInfo struct {
	traceID    trace.TraceID
	spanID     trace.SpanID
	traceState string
	sampled    bool
	flags      uint32
}

// AdmissionWait is runner.Observer's; the attempt's span records the
// wait instead (an llmrun.admission event).
func (t *Telemetry) AdmissionWait(string, time.Duration) {}

// request is one request's observation. Its span and its attempts' are
// not the SDK's: each is written as an OTLP message whole at its end
// (wire.go) into buf, then copied to the queue; the SDK's span start and
// end, its attribute copies and de-duplication, and its processor's
// channel hand-off per span were most of tracing's cost. Requests are
// pooled, their buffers with them.
type request struct {
	t   *Telemetry
	req *providers.Request
	// head is the request span's: its trace, ID, parent and start;
	// record says whether spans are recorded (traces on, the run
	// sampled).
	head   spanHead
	flags  uint32
	record bool
	buf    []byte
}

// Request is runner.Observer's: the request's span begins, under the run's.
func (t *Telemetry) Request(req *providers.Request) runner.RequestObserver {
	r := t.reqs.Get().(*request)
	r.req = req
	if t.spans == nil {
		return r
	}
	run := t.run.Load()
	r.record = run == nil || run.sampled
	if !r.record {
		return r
	}
	r.head = spanHead{name: "llmrun request", kind: trace.SpanKindInternal, spanID: t.ids.span(), start: time.Now().UnixNano()}
	if run != nil {
		r.head.traceID, r.head.parent, r.head.traceState, r.flags = run.traceID, run.spanID, run.traceState, run.flags
	} else { // no run span: each request is a trace of its own
		r.head.traceID, r.flags = t.ids.trace(), spanFlags(trace.FlagsSampled, trace.SpanContext{})
	}
	return r
}

// operation is the GenAI operation name of an endpoint.
func operation(ep providers.Endpoint) string {
	if ep == providers.EndpointEmbeddings {
		return "embeddings"
	}
	return "chat"
}

// providerName is gen_ai.provider.name's well-known value for llmrun's
// provider names, else the name itself.
func providerName(name string) string {
	switch name {
	case "gemini":
		return "gcp.gemini"
	case "azure":
		return "azure.ai.openai"
	}
	return name
}

// AttemptStart does nothing: the attempt's span is written when the
// attempt is over (AttemptEnd), from the times the Attempt carries.
func (r *request) AttemptStart(*runner.Attempt) {}

// AttemptEnd: the attempt's span, from when it was sent to now, with the
// request's model, the answer's model, usage and finish reasons, or the
// failure's error.type; the GenAI metrics record it.
func (r *request) AttemptEnd(a *runner.Attempt) {
	t := r.t
	m := t.model(a.Request.Endpoint, a.Provider, a.Request.Model)
	k := setKey{model: m}
	if resp := a.End.Resp; resp != nil {
		k.response = resp.Model
		if k.response == "" {
			k.response = a.Request.Model
		}
	} else {
		k.errType = errorType(a.End)
	}
	if r.record {
		r.attemptSpan(a, m, k)
	}
	t.record(k, a)
}

// attemptSpan writes a's span, a client span under the request's, and
// queues it.
func (r *request) attemptSpan(at *runner.Attempt, m *model, k setKey) {
	t := r.t
	b, s := openSpan(r.buf[:0], &spanHead{traceID: r.head.traceID, spanID: t.ids.span(), traceState: r.head.traceState,
		parent: r.head.spanID, name: m.name, kind: trace.SpanKindClient, start: at.Sent.UnixNano(), end: at.End.At.UnixNano()})
	a := t.spanAttrs(b)
	a.shared(m.attrs, m.enc)
	code := codes.Unset
	if at.End.Resp != nil {
		t.answerAttrs(&a, at, k.response)
	} else {
		a.str("error.type", k.errType)
		code = codes.Error
	}
	if at.Request.MaxTokens > 0 {
		a.int("gen_ai.request.max_tokens", int64(at.Request.MaxTokens))
	}
	if at.Hop > 0 {
		a.int("llmrun.hop", int64(at.Hop))
	}
	if t.o.Content {
		a.str("gen_ai.input.messages", inputMessages(at.Request))
	}
	b = a.end(fSpanDroppedAttrs)
	if at.Waited > 0 {
		b = t.admissionEvent(b, at)
	}
	r.buf = closeSpan(b, s, code, k.errType, r.flags)
	t.spans.add(r.buf)
}

// admissionEvent appends the llmrun.admission event of an attempt that
// waited for the budget, or its count as dropped when the event count
// limit is 0 (an attempt span has no other event).
func (t *Telemetry) admissionEvent(b []byte, at *runner.Attempt) []byte {
	if t.limits.EventCountLimit == 0 {
		return appendUint(b, fSpanDroppedEvents, 1)
	}
	b, e := openEvent(b, at.Sent.UnixNano(), "llmrun.admission")
	// The SDK cuts an event's attributes by count, not their values.
	ea := attrs{b: b, field: fEventAttrs, max: t.limits.AttributePerEventCountLimit, value: -1}
	ea.float("llmrun.admission.wait_seconds", at.Waited.Seconds())
	ea.str("llmrun.budget_key", at.Key)
	return closeMsg(ea.end(fEventDropped), e)
}

// spanAttrs writes a span's attributes after b under the span limits.
func (t *Telemetry) spanAttrs(b []byte) attrs {
	return attrs{b: b, field: fSpanAttrs, max: t.limits.AttributeCountLimit, value: t.limits.AttributeValueLengthLimit}
}

// answerAttrs appends an answered attempt's attributes to a.
func (t *Telemetry) answerAttrs(a *attrs, at *runner.Attempt, model string) {
	resp := at.End.Resp
	a.str("gen_ai.response.model", model)
	a.int("gen_ai.usage.input_tokens", resp.Usage.InputTokens)
	a.int("gen_ai.usage.output_tokens", resp.Usage.OutputTokens)
	a.finishReasons(resp.Body)
	if resp.RequestID != "" {
		a.str("gen_ai.response.id", resp.RequestID)
	}
	if at.End.Priced {
		a.float("llmrun.cost_usd", at.End.CostUSD)
	}
	if t.o.Content {
		a.str("gen_ai.output.messages", resp.Text)
	}
}

// finishReasons appends gen_ai.response.finish_reasons, a string array,
// if the answer gives any.
func (a *attrs) finishReasons(body []byte) {
	full := a.max >= 0 && a.n >= a.max
	mark := len(a.b)
	a.b = appendFinishReasons(a.b, body, a.value)
	switch {
	case len(a.b) == mark:
	case full:
		a.b = a.b[:mark]
		a.dropped++
	default:
		a.n++
	}
}

// appendFinishReasons appends gen_ai.response.finish_reasons, each cut to
// limit characters, if the answer gives any.
func appendFinishReasons(b, body []byte, limit int) []byte {
	mark := len(b)
	b, kv := openMsg(b, fSpanAttrs)
	b = appendStr(b, fKey, "gen_ai.response.finish_reasons")
	b, v := openMsg(b, fValue)
	b, arr := openMsg(b, fArray)
	items := len(b)
	eachFinishReason(body, func(reason string) {
		var it int
		b, it = openMsg(b, fListItems)
		b = closeMsg(protowire.AppendString(protowire.AppendTag(b, fString, protowire.BytesType), truncate(limit, reason)), it)
	})
	if len(b) == items {
		return b[:mark]
	}
	return closeMsg(closeMsg(closeMsg(b, arr), v), kv)
}

// inputMessages is what the request asks, for --otel-content: its
// messages (or contents, input) as the body has them.
func inputMessages(req *providers.Request) string {
	for _, k := range []string{"messages", "contents", "input"} {
		if v := gjson.GetBytes(req.Body, k); v.Exists() {
			return v.Raw
		}
	}
	return ""
}

// modelKey names what the attempts of one operation, provider and model
// share.
type modelKey struct {
	ep              providers.Endpoint
	provider, model string
}

// model is what every attempt span and metric of one modelKey shares,
// made once: the span's name and its constant attributes.
type model struct {
	op, provider, request string
	name                  string
	attrs                 []attribute.KeyValue
	// enc is attrs as a span's attribute fields.
	enc []byte
	// answered are the metric sets of the last answer's model, looked
	// up without hashing.
	answered atomic.Pointer[answeredSets]
}

// answeredSets are the metric sets of answers from one response model.
type answeredSets struct {
	response string
	sets     *metricSets
}

// model returns the shared part of the attempts of (ep, provider, name).
func (t *Telemetry) model(ep providers.Endpoint, provider, name string) *model {
	k := modelKey{ep, provider, name}
	if m, ok := t.models.Load(k); ok {
		return m.(*model)
	}
	op, prov := operation(ep), providerName(provider)
	m := &model{op: op, provider: prov, request: name, name: op + " " + name, attrs: []attribute.KeyValue{
		attribute.String("gen_ai.operation.name", op),
		attribute.String("gen_ai.provider.name", prov),
		attribute.String("gen_ai.request.model", name),
	}}
	m.enc = appendKeyValues(nil, fSpanAttrs, m.attrs)
	v, _ := t.models.LoadOrStore(k, m)
	return v.(*model)
}

// setKey names the attribute sets of one kind of attempt in the GenAI
// metrics.
type setKey struct {
	model             *model
	response, errType string
}

// metricSets are one setKey's record options: the duration's, and the
// token usage's by token type, each an attribute set.
type metricSets struct{ duration, input, output []metric.RecordOption }

// sets returns k's record options, made once: building a set sorts and
// copies its attributes, and an option or its slice made per call would
// be allocations per attempt.
func (t *Telemetry) sets(k setKey) *metricSets {
	if k.errType != "" {
		return t.setsOf(k)
	}
	if a := k.model.answered.Load(); a != nil && a.response == k.response {
		return a.sets
	}
	s := t.setsOf(k)
	k.model.answered.Store(&answeredSets{k.response, s})
	return s
}

// setsOf returns k's record options from the cache, making them the
// first time.
func (t *Telemetry) setsOf(k setKey) *metricSets {
	if s, ok := t.setCache.Load(k); ok {
		return s.(*metricSets)
	}
	base := append([]attribute.KeyValue(nil), k.model.attrs...)
	if k.response != "" {
		base = append(base, attribute.String("gen_ai.response.model", k.response))
	}
	if k.errType != "" {
		base = append(base, attribute.String("error.type", k.errType))
	}
	opts := func(kvs ...attribute.KeyValue) []metric.RecordOption {
		return []metric.RecordOption{metric.WithAttributeSet(attribute.NewSet(kvs...))}
	}
	s := &metricSets{duration: opts(base...),
		input:  opts(append(base[:len(base):len(base)], attribute.String("gen_ai.token.type", "input"))...),
		output: opts(append(base[:len(base):len(base)], attribute.String("gen_ai.token.type", "output"))...)}
	v, _ := t.setCache.LoadOrStore(k, s)
	return v.(*metricSets)
}

// record records an attempt in the GenAI metrics: its duration, and an
// answer's usage.
func (t *Telemetry) record(k setKey, a *runner.Attempt) {
	if t.duration == nil {
		return
	}
	s := t.sets(k)
	ctx := context.Background()
	t.duration.Record(ctx, a.End.At.Sub(a.Sent).Seconds(), s.duration...)
	if resp := a.End.Resp; resp != nil {
		t.tokens.Record(ctx, resp.Usage.InputTokens, s.input...)
		t.tokens.Record(ctx, resp.Usage.OutputTokens, s.output...)
	}
}

// errorType is a failed attempt's error.type: the HTTP status when there
// was one, else llmrun's class of the failure (timeout, network…).
func errorType(e runner.AttemptEnd) string {
	if e.Cut {
		return "cancelled"
	}
	var pe *providers.Error
	if errors.As(e.Err, &pe) {
		if pe.Status != 0 {
			return strconv.Itoa(pe.Status)
		}
		return pe.Class.String()
	}
	if e.Err != nil {
		return "_OTHER"
	}
	return "unknown"
}

// eachFinishReason calls f with each of an answer's finish reasons (for
// the call only: they are body's bytes) in
// any of the wire formats (OpenAI choices, Gemini candidates, Anthropic
// stop_reason, Responses status), walking each array once.
func eachFinishReason(body []byte, f func(string)) {
	// A view of body, not a copy: the strings f is given are
	// borrowed, as gjson.GetBytes's would not be.
	doc := unsafe.String(unsafe.SliceData(body), len(body))
	for _, p := range [...]struct{ array, field string }{{"choices", "finish_reason"}, {"candidates", "finishReason"}} {
		v := gjson.Get(doc, p.array)
		if !v.IsArray() {
			continue
		}
		v.ForEach(func(_, x gjson.Result) bool {
			if s := x.Get(p.field); s.Type == gjson.String && s.Str != "" {
				f(s.Str)
			}
			return true
		})
		return
	}
	for _, path := range [...]string{"stop_reason", "status"} {
		if v := gjson.Get(doc, path); v.Type == gjson.String {
			f(v.Str)
			return
		}
	}
}

// End: the request's span ends with its custom_id, outcome, attempts and
// tags; the request goes back to the pool.
func (r *request) End(e *runner.RequestEnd) {
	t := r.t
	if r.record {
		r.head.end = time.Now().UnixNano()
		b, s := openSpan(r.buf[:0], &r.head)
		a := t.spanAttrs(b)
		a.str("llmrun.custom_id", r.req.ID)
		a.str("llmrun.outcome", e.Outcome)
		a.int("llmrun.attempts", int64(e.Attempts))
		if e.Hop > 0 {
			a.bool("llmrun.fell_back", true)
		}
		for k, v := range r.req.Tags {
			a.str(t.tagKey(k), v)
		}
		b = a.end(fSpanDroppedAttrs)
		code, msg := codes.Unset, ""
		if e.Outcome == runner.OutcomeFailed {
			code, msg = codes.Error, "failed"
			if e.Err != nil {
				msg = providers.Cause(e.Err)
			}
		}
		r.buf = closeSpan(b, s, code, msg, r.flags)
		t.spans.add(r.buf)
	}
	r.req, r.record = nil, false
	if cap(r.buf) > maxPooledBuf {
		r.buf = nil // a span with content attributes: not kept
	}
	t.reqs.Put(r)
}

// maxPooledBuf bounds the span buffer a pooled request keeps.
const maxPooledBuf = 16 << 10

// tagKey is the span attribute of a tag key, llmrun.tag.KEY, made once.
func (t *Telemetry) tagKey(k string) string {
	if v, ok := t.tagKeys.Load(k); ok {
		return v.(string)
	}
	key := "llmrun.tag." + k
	t.tagKeys.Store(k, key)
	return key
}
