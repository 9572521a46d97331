package job

import (
	"context"
	"path/filepath"
	"time"

	"github.com/llmrun/llmrun/metrics"
	"github.com/llmrun/llmrun/runner"
	"github.com/llmrun/llmrun/telemetry"
)

// MetricsOptions say where a run's metrics go.
type MetricsOptions struct {
	// Addr serves /metrics while the run lives; File is a node_exporter
	// textfile; Pushgateway a Pushgateway URL. All empty: no metrics.
	Addr, File, Pushgateway string
	// Interval is how often the textfile and the Pushgateway are
	// updated while the run lives (0: metrics.DefaultInterval).
	Interval time.Duration
	// Tags are the tag keys whose values label the per-model metrics
	// (--metrics-tag).
	Tags []string
	// OTelContent records prompts and answers on the OpenTelemetry
	// spans (--otel-content).
	OTelContent bool
}

// startMetrics builds the exporter the options ask for and binds its
// address, before anything is sent: a port in use or a bad Pushgateway
// URL is a usage error.
func (b *batch) startMetrics() error {
	m := b.o.Metrics
	opts := metrics.Options{
		Addr: m.Addr, File: m.File, Pushgateway: m.Pushgateway, Interval: m.Interval,
		Grouping: map[string]string{"output": filepath.Base(b.o.Output)},
		Version:  Build().Short(), Costs: b.prices != nil, Tags: m.Tags,
		Warn: func(msg string) { b.io.warnf("%s", msg) },
	}
	if !opts.Enabled() {
		return nil
	}
	if m.Interval < 0 {
		return usagef("--metrics-interval must be positive, got %v", m.Interval)
	}
	if err := opts.Check(); err != nil {
		return usage(err)
	}
	e := metrics.New(opts)
	if err := e.Listen(); err != nil {
		return usage(err)
	}
	b.metrics = e
	if a := e.Addr(); a != "" {
		b.io.infof("serving metrics on http://%s/metrics", a)
	}
	return nil
}

// startTelemetry builds the OpenTelemetry export the OTEL_* environment
// asks for (none without an OTLP endpoint).
func (b *batch) startTelemetry() error {
	t, err := telemetry.New(context.Background(), telemetry.Options{
		Getenv: b.io.Getenv, Content: b.o.Metrics.OTelContent, Version: Build().Short(),
		Warn: func(msg string) { b.io.warnf("%s", msg) },
	})
	if err != nil {
		return usage(err)
	}
	b.telemetry = t
	return nil
}

// observer is what watches the live run: the metrics and the telemetry,
// or nil.
func (b *batch) observer() runner.Observer {
	var m, t runner.Observer
	if b.metrics != nil {
		m = b.metrics
	}
	if b.telemetry != nil {
		t = b.telemetry
	}
	return observers(m, t)
}

// finishMetrics records how the run ended in the metrics, writes them a
// last time and stops serving them.
func (b *batch) finishMetrics(runErr error) {
	code := 0
	switch {
	case b.o.ExitCode != nil:
		code = b.o.ExitCode(runErr)
	case runErr != nil:
		code = 1
	}
	if b.telemetry != nil {
		b.telemetry.Finish(code, runErr)
	}
	if b.metrics == nil {
		return
	}
	if err := b.metrics.Finish(code); err != nil {
		b.io.warnf("%v", err)
	}
}
