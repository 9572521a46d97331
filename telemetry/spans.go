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
	t.runCtx, t.runSpan = ctx, span
	t.mu.Unlock()
}

// AdmissionWait is runner.Observer's; the attempt's span records the
// wait instead (an llmrun.admission event).
func (t *Telemetry) AdmissionWait(string, time.Duration) {}

// request is one request's span and its current attempt's.
type request struct {
	t       *Telemetry
	ctx     context.Context
	span    trace.Span
	attempt trace.Span
	tags    []attribute.KeyValue
}

// Request is runner.Observer's: the request's span begins, under the run's.
func (t *Telemetry) Request(req *providers.Request) runner.RequestObserver {
	t.mu.Lock()
	parent := t.runCtx
	t.mu.Unlock()
	if parent == nil {
		parent = context.Background()
	}
	r := &request{t: t}
	for k, v := range req.Tags {
		r.tags = append(r.tags, attribute.String("llmrun.tag."+k, v))
	}
	r.ctx, r.span = t.tracer.Start(parent, "llmrun request", trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithAttributes(append([]attribute.KeyValue{attribute.String("llmrun.custom_id", req.ID)}, r.tags...)...))
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

// AttemptStart: the attempt's span begins, under the request's.
func (r *request) AttemptStart(a *runner.Attempt) {
	req := a.Request
	op, prov := operation(req.Endpoint), providerName(a.Provider)
	attrs := []attribute.KeyValue{
		attribute.String("gen_ai.operation.name", op),
		attribute.String("gen_ai.provider.name", prov),
		attribute.String("gen_ai.system", prov),
		attribute.String("gen_ai.request.model", req.Model),
		attribute.Int("llmrun.attempt", a.Number),
		attribute.Int("llmrun.hop", a.Hop),
		attribute.Int64("llmrun.reserved.input_tokens", a.Reserved.Input),
		attribute.Int64("llmrun.reserved.output_tokens", a.Reserved.Output),
	}
	if req.MaxTokens > 0 {
		attrs = append(attrs, attribute.Int("gen_ai.request.max_tokens", req.MaxTokens))
	}
	if r.t.o.Content {
		attrs = append(attrs, attribute.String("gen_ai.input.messages", inputMessages(req)))
	}
	_, r.attempt = r.t.tracer.Start(r.ctx, op+" "+req.Model, trace.WithSpanKind(trace.SpanKindClient),
		trace.WithTimestamp(a.Sent), trace.WithAttributes(attrs...))
	r.attempt.AddEvent("llmrun.admission", trace.WithTimestamp(a.Sent), trace.WithAttributes(
		attribute.Float64("llmrun.admission.wait_seconds", a.Waited.Seconds()), attribute.String("llmrun.budget_key", a.Key)))
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

// AttemptEnd: the attempt's span ends with the answer's model, usage and
// finish reasons, or the failure's error.type; the GenAI metrics record it.
func (r *request) AttemptEnd(a *runner.Attempt) {
	span := r.attempt
	if span == nil {
		return
	}
	r.attempt = nil
	req := a.Request
	op, prov := operation(req.Endpoint), providerName(a.Provider)
	var k setKey
	if resp := a.End.Resp; resp != nil {
		model := resp.Model
		if model == "" {
			model = req.Model
		}
		k = setKey{op: op, provider: prov, model: req.Model, response: model}
		span.SetAttributes(attribute.String("gen_ai.response.model", model),
			attribute.Int64("gen_ai.usage.input_tokens", resp.Usage.InputTokens),
			attribute.Int64("gen_ai.usage.output_tokens", resp.Usage.OutputTokens),
			attribute.Int("http.response.status_code", resp.Status))
		if fr := finishReasons(resp.Body); len(fr) > 0 {
			span.SetAttributes(attribute.StringSlice("gen_ai.response.finish_reasons", fr))
		}
		if resp.RequestID != "" {
			span.SetAttributes(attribute.String("gen_ai.response.id", resp.RequestID))
		}
		if a.End.Priced {
			span.SetAttributes(attribute.Float64("llmrun.cost_usd", a.End.CostUSD))
		}
		if r.t.o.Content {
			span.SetAttributes(attribute.String("gen_ai.output.messages", resp.Text))
		}
	} else {
		k = setKey{op: op, provider: prov, model: req.Model, errType: errorType(a.End)}
		span.SetAttributes(attribute.String("error.type", k.errType))
		span.SetStatus(codes.Error, k.errType)
	}
	r.t.record(k, a)
	span.End(trace.WithTimestamp(a.End.At))
}

// setKey names the attribute sets of one kind of attempt in the GenAI
// metrics.
type setKey struct{ op, provider, model, response, errType string }

// metricSets are one setKey's attribute sets: the duration's, and the
// token usage's by token type.
type metricSets struct{ duration, input, output attribute.Set }

// sets returns k's attribute sets, made once: building a set sorts and
// copies its attributes, which per attempt cost more than the recording.
func (t *Telemetry) sets(k setKey) *metricSets {
	if s, ok := t.setCache.Load(k); ok {
		return s.(*metricSets)
	}
	base := []attribute.KeyValue{
		attribute.String("gen_ai.operation.name", k.op),
		attribute.String("gen_ai.provider.name", k.provider),
		attribute.String("gen_ai.request.model", k.model),
	}
	if k.response != "" {
		base = append(base, attribute.String("gen_ai.response.model", k.response))
	}
	if k.errType != "" {
		base = append(base, attribute.String("error.type", k.errType))
	}
	s := &metricSets{duration: attribute.NewSet(base...),
		input:  attribute.NewSet(append(base[:len(base):len(base)], attribute.String("gen_ai.token.type", "input"))...),
		output: attribute.NewSet(append(base[:len(base):len(base)], attribute.String("gen_ai.token.type", "output"))...)}
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
	t.duration.Record(ctx, a.End.At.Sub(a.Sent).Seconds(), metric.WithAttributeSet(s.duration))
	if resp := a.End.Resp; resp != nil {
		t.tokens.Record(ctx, resp.Usage.InputTokens, metric.WithAttributeSet(s.input))
		t.tokens.Record(ctx, resp.Usage.OutputTokens, metric.WithAttributeSet(s.output))
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
// formats (OpenAI choices, Anthropic stop_reason, Gemini candidates,
// Responses status).
func finishReasons(body []byte) []string {
	for _, path := range []string{"choices.#.finish_reason", "candidates.#.finishReason"} {
		if v := gjson.GetBytes(body, path); v.IsArray() && len(v.Array()) > 0 {
			var out []string
			for _, x := range v.Array() {
				if x.Str != "" {
					out = append(out, x.Str)
				}
			}
			return out
		}
	}
	for _, path := range []string{"stop_reason", "status"} {
		if v := gjson.GetBytes(body, path); v.Type == gjson.String {
			return []string{v.Str}
		}
	}
	return nil
}

// End: the request's span ends with its outcome and attempts.
func (r *request) End(e *runner.RequestEnd) {
	r.span.SetAttributes(attribute.String("llmrun.outcome", e.Outcome), attribute.Int("llmrun.attempts", e.Attempts),
		attribute.Bool("llmrun.fell_back", e.Hop > 0))
	if e.Outcome == runner.OutcomeFailed {
		msg := "failed"
		if e.Err != nil {
			msg = providers.Cause(e.Err)
		}
		r.span.SetStatus(codes.Error, msg)
	}
	r.span.End()
}
