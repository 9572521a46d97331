// Package telemetry exports a run as OpenTelemetry traces and metrics over
// OTLP, following the GenAI semantic conventions: a span for the run, one
// per request under it, and one per attempt under that (gen_ai.* attributes),
// and the GenAI client metrics gen_ai.client.token.usage and
// gen_ai.client.operation.duration. It is configured the standard way, by
// the OTEL_* environment the official exporters read themselves
// (OTEL_EXPORTER_OTLP_ENDPOINT, _HEADERS, _PROTOCOL, OTEL_SERVICE_NAME,
// OTEL_RESOURCE_ATTRIBUTES, OTEL_SDK_DISABLED…), and is off, building no
// SDK object at all, when no OTLP endpoint is set.
package telemetry

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetricgrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/exemplar"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/llmrun/llmrun/runner"
)

// DefaultFlushTimeout bounds the last export at the end of a run: an
// unreachable collector delays the exit by at most this much.
const DefaultFlushTimeout = 5 * time.Second

// Options configure the export beyond the environment.
type Options struct {
	// Getenv reads the environment (os.Getenv when nil). The OTLP
	// exporters read the process's environment themselves.
	Getenv func(string) string
	// Content records prompts and answers on the attempt spans
	// (--otel-content); off, spans never carry either.
	Content bool
	// Version is llmrun's version (service.version).
	Version string
	// FlushTimeout bounds Finish's last export (DefaultFlushTimeout if 0).
	FlushTimeout time.Duration
	// Warn receives the one warning of a failed export; the run goes on.
	Warn func(string)
}

// Telemetry is one run's OpenTelemetry export, a runner.Observer. Create
// it with New (nil when the environment asks for none) and call Finish on
// every way out of the run.
type Telemetry struct {
	o        Options
	limits   sdktrace.SpanLimits // the environment's, for every span (limits.go)
	tp       *sdktrace.TracerProvider
	mp       *sdkmetric.MeterProvider
	tracer   trace.Tracer
	tokens   metric.Int64Histogram
	duration metric.Float64Histogram
	warnOnce sync.Once
	// setCache holds the metrics' attribute sets by setKey; models the
	// attempts' shared attributes by modelKey; tagKeys the tags'
	// attribute keys by tag key.
	setCache, models, tagKeys sync.Map

	// spans queues the request and attempt spans for export (nil:
	// traces off); ids makes their IDs; run is the run span's trace
	// (nil until Start); reqs pools *request.
	spans *spanQueue
	ids   *ids
	run   atomic.Pointer[runInfo]
	reqs  sync.Pool

	mu      sync.Mutex
	runSpan trace.Span
	view    *runner.View
	done    bool
}

// signal says whether the environment asks for one signal's export: an
// OTLP endpoint for it (or for all), and OTEL_<SIGNAL>_EXPORTER not none.
func signal(getenv func(string) string, name string) bool {
	if strings.EqualFold(strings.TrimSpace(getenv("OTEL_SDK_DISABLED")), "true") ||
		strings.EqualFold(strings.TrimSpace(getenv("OTEL_"+name+"_EXPORTER")), "none") {
		return false
	}
	return getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || getenv("OTEL_EXPORTER_OTLP_"+name+"_ENDPOINT") != ""
}

// Enabled reports whether the environment asks for traces or metrics.
func Enabled(getenv func(string) string) bool {
	return signal(getenv, "TRACES") || signal(getenv, "METRICS")
}

// protocol is the OTLP protocol for a signal: grpc or http/protobuf (the
// default); http/json, which the Go exporters lack, is an error.
func protocol(getenv func(string) string, name string) (string, error) {
	p := getenv("OTEL_EXPORTER_OTLP_" + name + "_PROTOCOL")
	if p == "" {
		p = getenv("OTEL_EXPORTER_OTLP_PROTOCOL")
	}
	switch p {
	case "", "http/protobuf":
		return "http/protobuf", nil
	case "grpc":
		return "grpc", nil
	}
	return "", fmt.Errorf("OTEL_EXPORTER_OTLP_PROTOCOL %q is not supported (want http/protobuf or grpc)", p)
}

// New builds the export the environment asks for, or returns nil when it
// asks for none. Nothing is sent yet; a bad protocol is an error.
func New(ctx context.Context, o Options) (*Telemetry, error) {
	if o.Getenv == nil {
		return nil, errors.New("telemetry: no Getenv")
	}
	if !Enabled(o.Getenv) {
		return nil, nil
	}
	if o.FlushTimeout <= 0 {
		o.FlushTimeout = DefaultFlushTimeout
	}
	res, err := resource.New(ctx,
		resource.WithAttributes(attribute.String("service.name", "llmrun"), attribute.String("service.version", o.Version)),
		resource.WithTelemetrySDK(), resource.WithFromEnv())
	if err != nil && res == nil {
		return nil, fmt.Errorf("OTEL_RESOURCE_ATTRIBUTES: %w", err)
	}
	t := newTelemetry(o)
	if err := t.traces(ctx, res); err != nil {
		return nil, err
	}
	if err := t.metrics(ctx, res); err != nil {
		t.tp.Shutdown(ctx)
		return nil, err
	}
	return t, t.instruments()
}

// newTelemetry is a Telemetry with no provider yet.
func newTelemetry(o Options) *Telemetry {
	t := &Telemetry{o: o, limits: spanLimitsFrom(o.Getenv)}
	t.reqs.New = func() any { return &request{t: t} }
	return t
}

// traces builds the tracer provider, or a no-op tracer when only metrics
// are asked for.
func (t *Telemetry) traces(ctx context.Context, res *resource.Resource) error {
	if !signal(t.o.Getenv, "TRACES") {
		t.tracer = noop.NewTracerProvider().Tracer("")
		return nil
	}
	p, err := protocol(t.o.Getenv, "TRACES")
	if err != nil {
		return err
	}
	var client otlptrace.Client
	if p == "grpc" {
		client = otlptracegrpc.NewClient()
	} else {
		client = otlptracehttp.NewClient()
	}
	if err := client.Start(ctx); err != nil {
		return fmt.Errorf("OTLP traces: %w", err)
	}
	t.tracing(client, res)
	return nil
}

// tracing sets up the export of spans through client: the run's span is
// the SDK's, through its batch processor; the requests' and attempts'
// are this package's, with the same resource (the SDK merges the
// environment's in, as here) and scope.
func (t *Telemetry) tracing(client otlptrace.Client, res *resource.Resource) {
	if merged, err := resource.Merge(resource.Environment(), res); err == nil {
		res = merged
	}
	exp := &spanExporter{client: client, t: t}
	t.tp = sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res), sdktrace.WithRawSpanLimits(t.limits))
	t.tracer = t.tp.Tracer(scope)
	exp.queue = newSpanQueue(exp, res, instrumentation.Scope{Name: scope}, queueConfigFrom(t.o.Getenv))
	t.spans, t.ids = exp.queue, newIDs()
}

// metrics builds the meter provider, if metrics are asked for.
func (t *Telemetry) metrics(ctx context.Context, res *resource.Resource) error {
	if !signal(t.o.Getenv, "METRICS") {
		return nil
	}
	p, err := protocol(t.o.Getenv, "METRICS")
	if err != nil {
		return err
	}
	var exp sdkmetric.Exporter
	if p == "grpc" {
		exp, err = otlpmetricgrpc.New(ctx)
	} else {
		exp, err = otlpmetrichttp.New(ctx)
	}
	if err != nil {
		return fmt.Errorf("OTLP metrics: %w", err)
	}
	opts := []sdkmetric.Option{sdkmetric.WithReader(sdkmetric.NewPeriodicReader(&metricExporter{exp, t})), sdkmetric.WithResource(res)}
	if strings.TrimSpace(t.o.Getenv("OTEL_METRICS_EXEMPLAR_FILTER")) == "" {
		// The default, trace_based, never keeps one here (nothing is
		// recorded within a sampled span's context) but costs each
		// recording a look for one.
		opts = append(opts, sdkmetric.WithExemplarFilter(exemplar.AlwaysOffFilter))
	}
	t.mp = sdkmetric.NewMeterProvider(opts...)
	return nil
}

// scope is the instrumentation scope of llmrun's spans and metrics.
const scope = "github.com/llmrun/llmrun/telemetry"

// instruments makes the GenAI client metrics, with the semantic
// conventions' advised buckets.
func (t *Telemetry) instruments() (err error) {
	if t.mp == nil {
		return nil
	}
	m := t.mp.Meter(scope)
	t.tokens, err = m.Int64Histogram("gen_ai.client.token.usage", metric.WithUnit("{token}"),
		metric.WithDescription("Number of input and output tokens used."),
		metric.WithExplicitBucketBoundaries(1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864))
	if err != nil {
		return err
	}
	t.duration, err = m.Float64Histogram("gen_ai.client.operation.duration", metric.WithUnit("s"),
		metric.WithDescription("GenAI operation duration."),
		metric.WithExplicitBucketBoundaries(0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92))
	if err != nil {
		return err
	}
	_, err = m.Int64ObservableGauge("llmrun.queue.depth", metric.WithUnit("{attempt}"),
		metric.WithDescription("Attempts waiting for the budget's admission, by budget key and priority class."),
		metric.WithInt64Callback(t.observeQueues))
	return err
}

// observeQueues reads the run's admission queues, at each export: it
// costs the run nothing between exports.
func (t *Telemetry) observeQueues(_ context.Context, o metric.Int64Observer) error {
	t.mu.Lock()
	v := t.view
	t.mu.Unlock()
	if v == nil {
		return nil
	}
	for _, q := range v.Queues() {
		o.Observe(q.Waiting, metric.WithAttributes(attribute.String("llmrun.budget_key", q.Key), attribute.Int("llmrun.priority", q.Priority)))
	}
	return nil
}

// warn says once that the collector could not be reached; later failures
// are dropped quietly, and the run goes on.
func (t *Telemetry) warn(what string, err error) {
	t.warnOnce.Do(func() {
		if t.o.Warn != nil {
			t.o.Warn(fmt.Sprintf("OpenTelemetry: exporting %s failed (the run goes on; later failures are not reported): %v", what, err))
		}
	})
}

// metricExporter is spanExporter's counterpart for metrics.
type metricExporter struct {
	sdkmetric.Exporter
	t *Telemetry
}

func (e *metricExporter) Export(ctx context.Context, rm *metricdata.ResourceMetrics) error {
	if err := e.Exporter.Export(ctx, rm); err != nil {
		e.t.warn("metrics", err)
	}
	return nil
}

// Finish ends the run's span with how the run ended and flushes every
// span and metric, within the flush timeout. Later calls do nothing.
func (t *Telemetry) Finish(exitCode int, runErr error) {
	t.mu.Lock()
	if t.done {
		t.mu.Unlock()
		return
	}
	t.done = true
	span := t.runSpan
	t.mu.Unlock()
	if span != nil {
		span.SetAttributes(attribute.Int("llmrun.exit_code", exitCode))
		if runErr != nil {
			span.SetAttributes(attribute.String("error.type", errorTypeOfRun(exitCode)))
		}
		span.End()
	}
	ctx, cancel := context.WithTimeout(context.Background(), t.o.FlushTimeout)
	defer cancel()
	var errs []error
	if t.tp != nil {
		errs = append(errs, t.tp.Shutdown(ctx))
	}
	if t.mp != nil {
		errs = append(errs, t.mp.Shutdown(ctx))
	}
	if err := errors.Join(errs...); err != nil {
		t.warn("at the end of the run", err)
	}
}

// errorTypeOfRun names a failed run's end by its exit code.
func errorTypeOfRun(code int) string {
	if code == 0 {
		return "error"
	}
	return fmt.Sprintf("exit_%d", code)
}
