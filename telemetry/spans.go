package telemetry

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/tidwall/gjson"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/llmrun/llmrun/providers"
	"github.com/llmrun/llmrun/runner"
)

var _ runner.Observer = (*Telemetry)(nil)

// Start is runner.Observer's: the run's span begins.
func (t *Telemetry) Start(v *runner.View) {
	ctx, span := t.tracer.Start(context.Background(), "llmrun batch", trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithAttributes(attribute.Int64("llmrun.requests", v.Counters().Total.Load())))
	t.mu.Lock()
	t.runCtx, t.runSpan, t.view = ctx, span, v
	t.mu.Unlock()
}

// AdmissionWait is runner.Observer's; the attempt's span records the
// wait instead (an llmrun.admission event).
func (t *Telemetry) AdmissionWait(string, time.Duration) {}

// request is one request's span. Its attributes are all set at its end,
// in one call: each call copies the span's attributes.
type request struct {
	t    *Telemetry
	ctx  context.Context
	span trace.Span
	req  *providers.Request
}

// Request is runner.Observer's: the request's span begins, under the run's.
func (t *Telemetry) Request(req *providers.Request) runner.RequestObserver {
	t.mu.Lock()
	parent := t.runCtx
	t.mu.Unlock()
	if parent == nil {
		parent = context.Background()
	}
	r := &request{t: t, req: req}
	r.ctx, r.span = t.tracer.Start(parent, "llmrun request")
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

// AttemptStart does nothing: the attempt's span is made whole when the
// attempt is over (AttemptEnd), from the times the Attempt carries, so
// that its attributes are set in one call.
func (r *request) AttemptStart(*runner.Attempt) {}

// AttemptEnd: the attempt's span, from when it was sent to now, with the
// request's model, the answer's model, usage and finish reasons, or the
// failure's error.type; the GenAI metrics record it.
func (r *request) AttemptEnd(a *runner.Attempt) {
	t := r.t
	m := t.model(a.Request.Endpoint, a.Provider, a.Request.Model)
	bp := t.scratch.Get().(*[]attribute.KeyValue)
	attrs := append((*bp)[:0], m.attrs...)
	k := setKey{model: m}
	if resp := a.End.Resp; resp != nil {
		k.response = resp.Model
		if k.response == "" {
			k.response = a.Request.Model
		}
		attrs = t.answerAttrs(attrs, a, k.response)
	} else {
		k.errType = errorType(a.End)
		attrs = append(attrs, attribute.String("error.type", k.errType))
	}
	if a.Request.MaxTokens > 0 {
		attrs = append(attrs, attribute.Int("gen_ai.request.max_tokens", a.Request.MaxTokens))
	}
	if a.Hop > 0 {
		attrs = append(attrs, attribute.Int("llmrun.hop", a.Hop))
	}
	if t.o.Content {
		attrs = append(attrs, attribute.String("gen_ai.input.messages", inputMessages(a.Request)))
	}
	_, span := t.tracer.Start(r.ctx, m.name, trace.WithSpanKind(trace.SpanKindClient), trace.WithTimestamp(a.Sent))
	span.SetAttributes(attrs...)
	if a.Waited > 0 {
		span.AddEvent("llmrun.admission", trace.WithTimestamp(a.Sent), trace.WithAttributes(
			attribute.Float64("llmrun.admission.wait_seconds", a.Waited.Seconds()), attribute.String("llmrun.budget_key", a.Key)))
	}
	if k.errType != "" {
		span.SetStatus(codes.Error, k.errType)
	}
	span.End(trace.WithTimestamp(a.End.At))
	clear(attrs)
	*bp = attrs[:0]
	t.scratch.Put(bp)
	t.record(k, a)
}

// answerAttrs appends an answered attempt's attributes to attrs.
func (t *Telemetry) answerAttrs(attrs []attribute.KeyValue, a *runner.Attempt, model string) []attribute.KeyValue {
	resp := a.End.Resp
	attrs = append(attrs, attribute.String("gen_ai.response.model", model),
		attribute.Int64("gen_ai.usage.input_tokens", resp.Usage.InputTokens),
		attribute.Int64("gen_ai.usage.output_tokens", resp.Usage.OutputTokens))
	if fr := finishReasons(resp.Body); len(fr) > 0 {
		attrs = append(attrs, attribute.StringSlice("gen_ai.response.finish_reasons", fr))
	}
	if resp.RequestID != "" {
		attrs = append(attrs, attribute.String("gen_ai.response.id", resp.RequestID))
	}
	if a.End.Priced {
		attrs = append(attrs, attribute.Float64("llmrun.cost_usd", a.End.CostUSD))
	}
	if t.o.Content {
		attrs = append(attrs, attribute.String("gen_ai.output.messages", resp.Text))
	}
	return attrs
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

// finishReasons reads an answer's finish reasons in any of the wire
// formats (OpenAI choices, Gemini candidates, Anthropic stop_reason,
// Responses status), walking each array once.
func finishReasons(body []byte) []string {
	for _, p := range [...]struct{ array, field string }{{"choices", "finish_reason"}, {"candidates", "finishReason"}} {
		v := gjson.GetBytes(body, p.array)
		if !v.IsArray() {
			continue
		}
		var out []string
		v.ForEach(func(_, x gjson.Result) bool {
			if s := x.Get(p.field); s.Type == gjson.String && s.Str != "" {
				out = append(out, s.Str)
			}
			return true
		})
		return out
	}
	for _, path := range [...]string{"stop_reason", "status"} {
		if v := gjson.GetBytes(body, path); v.Type == gjson.String {
			return []string{v.Str}
		}
	}
	return nil
}

// End: the request's span ends with its custom_id, outcome, attempts and
// tags.
func (r *request) End(e *runner.RequestEnd) {
	t := r.t
	bp := t.scratch.Get().(*[]attribute.KeyValue)
	attrs := append((*bp)[:0], attribute.String("llmrun.custom_id", r.req.ID),
		attribute.String("llmrun.outcome", e.Outcome), attribute.Int("llmrun.attempts", e.Attempts))
	if e.Hop > 0 {
		attrs = append(attrs, attribute.Bool("llmrun.fell_back", true))
	}
	for k, v := range r.req.Tags {
		attrs = append(attrs, t.tagKey(k).String(v))
	}
	r.span.SetAttributes(attrs...)
	if e.Outcome == runner.OutcomeFailed {
		msg := "failed"
		if e.Err != nil {
			msg = providers.Cause(e.Err)
		}
		r.span.SetStatus(codes.Error, msg)
	}
	r.span.End()
	clear(attrs)
	*bp = attrs[:0]
	t.scratch.Put(bp)
}

// tagKey is the span attribute of a tag key, llmrun.tag.KEY, made once.
func (t *Telemetry) tagKey(k string) attribute.Key {
	if v, ok := t.tagKeys.Load(k); ok {
		return v.(attribute.Key)
	}
	key := attribute.Key("llmrun.tag." + k)
	t.tagKeys.Store(k, key)
	return key
}
