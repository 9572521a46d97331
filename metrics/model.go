package metrics

import (
	"errors"
	"slices"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/llmrun/llmrun/providers"
	"github.com/llmrun/llmrun/runner"
)

// modelMetrics are the figures told per attempt and per request
// (runner.RequestObserver), labelled by provider and model, and the
// requests' opt-in tags (Options.Tags).
type modelMetrics struct {
	tags         []string // label names of the opt-in tag keys
	tokens       *prometheus.CounterVec
	cost         *prometheus.CounterVec
	requests     *prometheus.CounterVec
	reserved     *prometheus.CounterVec
	ratio        *prometheus.HistogramVec
	rateLimited  *prometheus.CounterVec
	serverErrors *prometheus.CounterVec
	overloaded   *prometheus.CounterVec
	attempts     *prometheus.HistogramVec
	remaining    *prometheus.GaugeVec
}

// tagLabel is the label of an opt-in tag key: "tag_" and the key, with
// what a label name cannot hold replaced by '_'.
func tagLabel(key string) string {
	b := []byte("tag_" + key)
	for i, c := range b {
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			b[i] = '_'
		}
	}
	return string(b)
}

func newModelMetrics(reg *prometheus.Registry, tagKeys []string) *modelMetrics {
	m := &modelMetrics{}
	for _, k := range tagKeys {
		m.tags = append(m.tags, tagLabel(k))
	}
	pm := []string{"provider", "model"}
	with := func(ls ...string) []string { return append(slices.Clone(pm), ls...) }
	counter := func(name, help string, labels []string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels)
	}
	m.tokens = counter("llmrun_model_tokens_total", "Tokens the providers reported, by provider, model, direction and opt-in tags (--metrics-tag).", append(with("direction"), m.tags...))
	m.cost = counter("llmrun_model_cost_usd_total", "Spend in US dollars by provider, model and opt-in tags, from the reported usage (priced models only).", append(with(), m.tags...))
	m.requests = counter("llmrun_model_requests_total", "Requests finished in this run by the provider and model of their last attempt, outcome and opt-in tags.", append(with("outcome"), m.tags...))
	m.reserved = counter("llmrun_reserved_tokens_total", "Tokens the budget reserved for answered attempts, by direction: compare with llmrun_model_tokens_total.", with("direction"))
	m.ratio = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "llmrun_reservation_ratio",
		Help:    "Reconciled (reported) tokens over reserved tokens per answered attempt, by direction: the estimate's error (1: exact).",
		Buckets: prometheus.ExponentialBuckets(1.0/16, 2, 10),
	}, with("direction"))
	m.rateLimited = counter("llmrun_rate_limited_by_code_total", "429 answers by provider, model and the error's type and code as the provider sent them.", with("type", "code"))
	m.serverErrors = counter("llmrun_server_errors_total", "5xx answers by provider, model and status.", with("status"))
	m.overloaded = counter("llmrun_overloaded_total", "Overload answers (503, 529, overloaded_error) by provider and model.", with())
	m.attempts = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "llmrun_attempts_per_request",
		Help:    "Attempts per finished request, over every hop, by the provider and model of its last attempt and outcome.",
		Buckets: []float64{1, 2, 3, 4, 5, 6, 8, 10, 15, 20, 30},
	}, with("outcome"))
	m.remaining = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "llmrun_ratelimit_remaining",
		Help: "The last remaining-* rate-limit header value seen, by provider, model and dimension.",
	}, with("dimension"))
	reg.MustRegister(m.tokens, m.cost, m.requests, m.reserved, m.ratio, m.rateLimited, m.serverErrors, m.overloaded, m.attempts, m.remaining)
	return m
}

// request is one request's observer: it keeps the tag label values and
// the provider and model of the latest attempt.
type request struct {
	m               *modelMetrics
	tags            []string
	provider, model string
}

// Request is runner.Observer's: a request starts.
func (e *Exporter) Request(req *providers.Request) runner.RequestObserver {
	r := &request{m: e.model, tags: make([]string, len(e.o.Tags))}
	for i, k := range e.o.Tags {
		r.tags[i] = req.Tags[k]
	}
	return r
}

func (r *request) AttemptStart(a *runner.Attempt) { r.provider, r.model = a.Provider, a.Request.Model }

func (r *request) AttemptEnd(a *runner.Attempt) {
	m, p, md := r.m, r.provider, r.model
	if resp := a.End.Resp; resp != nil {
		u := resp.Usage
		m.tokens.WithLabelValues(append([]string{p, md, "input"}, r.tags...)...).Add(float64(u.InputTokens))
		m.tokens.WithLabelValues(append([]string{p, md, "output"}, r.tags...)...).Add(float64(u.OutputTokens))
		if a.End.Priced {
			m.cost.WithLabelValues(append([]string{p, md}, r.tags...)...).Add(a.End.CostUSD)
		}
		m.reconciled(p, md, "input", a.Reserved.Input, u.InputTokens)
		m.reconciled(p, md, "output", a.Reserved.Output, u.OutputTokens)
		m.headers(p, md, resp.Limits)
		return
	}
	var pe *providers.Error
	if a.End.Cut || !errors.As(a.End.Err, &pe) {
		return
	}
	m.headers(p, md, pe.Limits)
	switch {
	case pe.Class == providers.ClassRateLimited:
		m.rateLimited.WithLabelValues(p, md, pe.Type, pe.Code).Inc()
	case pe.Class == providers.ClassOverloaded:
		m.overloaded.WithLabelValues(p, md).Inc()
	}
	if pe.Status >= 500 && pe.Status <= 599 {
		m.serverErrors.WithLabelValues(p, md, strconv.Itoa(pe.Status)).Inc()
	}
}

func (r *request) End(e *runner.RequestEnd) {
	if e.Attempts == 0 {
		return // never sent: nothing to say per model
	}
	r.m.requests.WithLabelValues(append([]string{r.provider, r.model, e.Outcome}, r.tags...)...).Inc()
	r.m.attempts.WithLabelValues(r.provider, r.model, e.Outcome).Observe(float64(e.Attempts))
}

// reconciled counts a reservation and what the answer reported against it.
func (m *modelMetrics) reconciled(provider, model, dir string, reserved, actual int64) {
	if reserved <= 0 {
		return
	}
	m.reserved.WithLabelValues(provider, model, dir).Add(float64(reserved))
	m.ratio.WithLabelValues(provider, model, dir).Observe(float64(actual) / float64(reserved))
}

// headers records the remaining-* values a response carried.
func (m *modelMetrics) headers(provider, model string, l providers.RateLimits) {
	for _, w := range [...]struct {
		dim string
		w   providers.Window
	}{{"requests", l.Requests}, {"tokens", l.Tokens}, {"input_tokens", l.InputTokens}, {"output_tokens", l.OutputTokens}} {
		if w.w.Remaining >= 0 {
			m.remaining.WithLabelValues(provider, model, w.dim).Set(float64(w.w.Remaining))
		}
	}
}
