// Package metrics exports a run's figures to Prometheus: served on
// /metrics while the run lives (--metrics-addr), written in the
// node_exporter textfile format (--metrics-file, the usual way to get a
// cron job's numbers into Prometheus) and pushed to a Pushgateway
// (--pushgateway). It reads the run through runner.View at each scrape
// and is told of admission waits as they happen (runner.Observer): the
// runner itself knows nothing of Prometheus.
package metrics

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/client_golang/prometheus/push"
	"github.com/prometheus/common/expfmt"

	"github.com/llmrun/llmrun/internal/outfile"
	"github.com/llmrun/llmrun/limiter"
	"github.com/llmrun/llmrun/runner"
	"github.com/llmrun/llmrun/runner/retry"
)

// DefaultInterval is how often the textfile is rewritten and the
// Pushgateway pushed while a run lives.
const DefaultInterval = 15 * time.Second

// Options say where the metrics go.
type Options struct {
	// Addr serves /metrics while the run lives (":9090"); "" serves none.
	Addr string
	// File is the node_exporter textfile, rewritten atomically every
	// Interval and at the end; "" writes none.
	File string
	// Pushgateway is a Pushgateway's URL, pushed every Interval and at
	// the end; "" pushes nowhere.
	Pushgateway string
	// Job is the Pushgateway job ("llmrun" when empty); Grouping its
	// grouping labels (the output's name, so that two cron jobs do not
	// overwrite each other).
	Job      string
	Grouping map[string]string
	Interval time.Duration
	// Version is llmrun's version, for llmrun_build_info.
	Version string
	// Costs reports whether spend is known (a price list is loaded).
	Costs bool
	// Tags are the tag keys (--metrics-tag) whose values label the
	// per-model metrics; other tags stay out of Prometheus, to bound the
	// series.
	Tags []string
	// Warn receives failures of the periodic writes and pushes, which do
	// not stop the run.
	Warn func(string)
}

// Exporter is one run's metrics. Create it with New, bind its address
// with Listen (before anything is sent, so a taken port is a usage
// error), hand it to the run as its runner.Observer, and call Finish when
// the run is over. Safe for concurrent use.
type Exporter struct {
	o     Options
	reg   *prometheus.Registry
	view  atomic.Pointer[runner.View]
	wait  *prometheus.HistogramVec
	model *modelMetrics
	start time.Time

	mu       sync.Mutex
	ln       net.Listener
	srv      *http.Server
	stop     chan struct{}
	done     sync.WaitGroup
	finished bool
	end      time.Time
	exit     int
}

// New builds the exporter and its registry.
func New(o Options) *Exporter {
	if o.Interval <= 0 {
		o.Interval = DefaultInterval
	}
	if o.Job == "" {
		o.Job = "llmrun"
	}
	e := &Exporter{o: o, reg: prometheus.NewRegistry(), start: time.Now()}
	e.wait = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "llmrun_admission_wait_seconds",
		Help:    "Time an attempt waited for the budget (rate limits, concurrency, a 429 pause) before it was sent.",
		Buckets: prometheus.ExponentialBucketsRange(0.001, 600, 16),
	}, []string{"key"})
	e.reg.MustRegister(e.wait, &collector{e: e})
	e.model = newModelMetrics(e.reg, o.Tags)
	return e
}

// Registry is the exporter's registry (tests gather from it).
func (e *Exporter) Registry() *prometheus.Registry { return e.reg }

// Enabled reports whether o asks for any metrics at all.
func (o Options) Enabled() bool { return o.Addr != "" || o.File != "" || o.Pushgateway != "" }

// Check validates the options before anything is sent: the Pushgateway
// URL's form.
func (o Options) Check() error {
	if o.Pushgateway == "" {
		return nil
	}
	u, err := url.Parse(o.Pushgateway)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("--pushgateway %s: want an http:// or https:// URL", redactURL(o.Pushgateway))
	}
	return nil
}

// Listen binds Addr, if any, and serves /metrics on it. The address is
// taken now, before the run sends anything, so a port in use stops the
// run before it costs anything.
func (e *Exporter) Listen() error {
	if e.o.Addr == "" {
		return nil
	}
	ln, err := net.Listen("tcp", e.o.Addr)
	if err != nil {
		return fmt.Errorf("--metrics-addr %s: %w", e.o.Addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(e.reg, promhttp.HandlerOpts{}))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	e.mu.Lock()
	e.ln, e.srv = ln, srv
	e.mu.Unlock()
	go srv.Serve(ln)
	return nil
}

// Addr is the address /metrics is served on (the port chosen for ":0"),
// or "" when none.
func (e *Exporter) Addr() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.ln == nil {
		return ""
	}
	return e.ln.Addr().String()
}

// Start is runner.Observer's: the run has begun. It starts the periodic
// textfile writes and pushes.
func (e *Exporter) Start(v *runner.View) {
	e.view.Store(v)
	if e.o.File == "" && e.o.Pushgateway == "" {
		return
	}
	e.mu.Lock()
	e.stop = make(chan struct{})
	stop := e.stop
	e.mu.Unlock()
	e.done.Add(1)
	go func() {
		defer e.done.Done()
		t := time.NewTicker(e.o.Interval)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				if err := e.write(); err != nil && e.o.Warn != nil {
					e.o.Warn(err.Error())
				}
			}
		}
	}()
}

// AdmissionWait is runner.Observer's: one attempt waited d for key's
// budget.
func (e *Exporter) AdmissionWait(key string, d time.Duration) {
	e.wait.WithLabelValues(redactKey(key)).Observe(d.Seconds())
}

// Finish records how the run ended, writes the textfile and pushes a last
// time, and stops serving. It returns the first failure of those writes.
func (e *Exporter) Finish(exitCode int) error {
	e.mu.Lock()
	if e.finished {
		e.mu.Unlock()
		return nil
	}
	e.finished, e.end, e.exit = true, time.Now(), exitCode
	stop, srv := e.stop, e.srv
	e.mu.Unlock()
	if stop != nil {
		close(stop)
		e.done.Wait()
	}
	err := e.write()
	if srv != nil {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		srv.Shutdown(ctx)
	}
	return err
}

// Close stops serving without a last write: the run never started.
func (e *Exporter) Close() {
	e.mu.Lock()
	srv := e.srv
	e.mu.Unlock()
	if srv != nil {
		srv.Close()
	}
}

// write writes the textfile (atomically: a temporary file beside it,
// renamed over it) and pushes to the Pushgateway.
func (e *Exporter) write() error {
	var errs []error
	if e.o.File != "" {
		if err := writeTextfile(e.o.File, e.reg); err != nil {
			errs = append(errs, fmt.Errorf("--metrics-file %s: %w", e.o.File, err))
		}
	}
	if e.o.Pushgateway != "" {
		p := push.New(e.o.Pushgateway, e.o.Job).Gatherer(e.reg)
		for k, v := range e.o.Grouping {
			p = p.Grouping(k, v)
		}
		if err := p.Push(); err != nil {
			errs = append(errs, fmt.Errorf("--pushgateway %s: %s", redactURL(e.o.Pushgateway), strings.ReplaceAll(err.Error(), e.o.Pushgateway, redactURL(e.o.Pushgateway))))
		}
	}
	return errors.Join(errs...)
}

// writeTextfile is prometheus.WriteToTextfile through outfile: it never
// replaces a symlink, a FIFO or a device at the path.
func writeTextfile(path string, g prometheus.Gatherer) error {
	mfs, err := g.Gather()
	if err != nil {
		return err
	}
	var b bytes.Buffer
	for _, mf := range mfs {
		if _, err := expfmt.MetricFamilyToText(&b, mf); err != nil {
			return err
		}
	}
	return outfile.WriteFile(path, b.Bytes(), 0o644)
}

// redactURL is u without a password and with its query values masked
// (a gateway's ?key= is a credential).
func redactURL(u string) string {
	if p, err := url.Parse(u); err == nil {
		if q := p.Query(); len(q) > 0 {
			keys := make([]string, 0, len(q))
			for k := range q {
				keys = append(keys, url.QueryEscape(k)+"=***")
			}
			sort.Strings(keys)
			p.RawQuery = strings.Join(keys, "&")
		}
		return p.Redacted()
	}
	return u
}

// redactKey is a budget key (provider|base URL|model, or a pool name)
// as a label: a base URL's password is masked.
func redactKey(key string) string {
	if !strings.Contains(key, "@") {
		return key
	}
	parts := strings.Split(key, "|")
	for i, p := range parts {
		parts[i] = redactURL(p)
	}
	return strings.Join(parts, "|")
}

// descSet are the metric descriptions. Names follow Prometheus
// conventions: a _total suffix on counters, base units (seconds), llmrun_
// prefix. Built at the first scrape or push, not in every process's
// start-up (115 allocations; most runs serve no metrics).
type descSet struct {
	descRequests     *prometheus.Desc
	descInput        *prometheus.Desc
	descPending      *prometheus.Desc
	descAttempts     *prometheus.Desc
	descInFlight     *prometheus.Desc
	descRetries      *prometheus.Desc
	descRateLimited  *prometheus.Desc
	descTokens       *prometheus.Desc
	descCost         *prometheus.Desc
	descFellBack     *prometheus.Desc
	descFallbackRate *prometheus.Desc
	descQueue        *prometheus.Desc
	descBudgetWait   *prometheus.Desc
	descLimit        *prometheus.Desc
	descConcurrency  *prometheus.Desc
	descKeyLimited   *prometheus.Desc
	descBreaker      *prometheus.Desc
	descOpenings     *prometheus.Desc
	descHeld         *prometheus.Desc
	descStart        *prometheus.Desc
	descEnd          *prometheus.Desc
	descExit         *prometheus.Desc
	descBuild        *prometheus.Desc
}

var descs = sync.OnceValue(func() *descSet {
	return &descSet{
		descRequests:     prometheus.NewDesc("llmrun_requests_total", "Requests finished, by outcome (skipped: answered by an earlier run).", []string{"outcome"}, nil),
		descInput:        prometheus.NewDesc("llmrun_input_requests", "Requests in the input (its shard).", nil, nil),
		descPending:      prometheus.NewDesc("llmrun_requests_pending", "Requests neither answered nor failed yet.", nil, nil),
		descAttempts:     prometheus.NewDesc("llmrun_attempts_total", "Attempts sent to providers.", nil, nil),
		descInFlight:     prometheus.NewDesc("llmrun_attempts_in_flight", "Attempts in flight now.", nil, nil),
		descRetries:      prometheus.NewDesc("llmrun_retries_total", "Retries, by the class of the failure that caused them.", []string{"cause"}, nil),
		descRateLimited:  prometheus.NewDesc("llmrun_rate_limited_total", "429 answers, by the dimension they were about (from the rate-limit headers or the message; unknown when neither says).", []string{"dimension"}, nil),
		descTokens:       prometheus.NewDesc("llmrun_tokens_total", "Tokens the providers reported, by direction.", []string{"direction"}, nil),
		descCost:         prometheus.NewDesc("llmrun_cost_usd_total", "Spend of this run's answers in US dollars, from the usage the providers reported (priced models only).", nil, nil),
		descFellBack:     prometheus.NewDesc("llmrun_fell_back_total", "Requests answered by a fallback hop.", nil, nil),
		descFallbackRate: prometheus.NewDesc("llmrun_fallback_ratio", "Share of the requests finished in this run that a fallback hop answered.", nil, nil),
		descQueue:        prometheus.NewDesc("llmrun_queue_depth", "Attempts waiting for the key's budget now, by priority class (1 high, 0 normal, -1 low, or the lines' own).", []string{"key", "priority"}, nil),
		descBudgetWait:   prometheus.NewDesc("llmrun_budget_wait_seconds_total", "Time attempts waited for the budget, summed over attempts, by key and by the dimension that held the queue.", []string{"key", "dimension"}, nil),
		descLimit:        prometheus.NewDesc("llmrun_limit_per_minute", "Rate limit in force per key and dimension (given, or learned from headers and 429s).", []string{"key", "dimension", "learned"}, nil),
		descConcurrency:  prometheus.NewDesc("llmrun_limit_concurrency", "Concurrency limit in force per key (the learned window in auto mode; 0: none).", []string{"key"}, nil),
		descKeyLimited:   prometheus.NewDesc("llmrun_key_rate_limited_total", "429 answers per budget key.", []string{"key"}, nil),
		descBreaker:      prometheus.NewDesc("llmrun_breaker_state", "Circuit breaker state per key: 0 closed, 1 half-open, 2 open.", []string{"key"}, nil),
		descOpenings:     prometheus.NewDesc("llmrun_breaker_openings_total", "Times the key's circuit breaker opened (outages).", []string{"key"}, nil),
		descHeld:         prometheus.NewDesc("llmrun_breaker_held_seconds_total", "Time the key's circuit breaker was not closed.", []string{"key"}, nil),
		descStart:        prometheus.NewDesc("llmrun_run_start_timestamp_seconds", "When the run started (Unix time).", nil, nil),
		descEnd:          prometheus.NewDesc("llmrun_run_end_timestamp_seconds", "When the run ended (Unix time); absent while it runs.", nil, nil),
		descExit:         prometheus.NewDesc("llmrun_run_exit_code", "The run's exit code (0: every request succeeded); absent while it runs.", nil, nil),
		descBuild:        prometheus.NewDesc("llmrun_build_info", "llmrun's version.", []string{"version"}, nil),
	}
})

var (
	limitDimensions  = []string{"requests", "input_tokens", "output_tokens", "tokens"}
	waitDimensionsOf = map[limiter.Dimension]string{
		limiter.DimRequests: "requests", limiter.DimInput: "input_tokens", limiter.DimOutput: "output_tokens",
		limiter.DimTokens: "tokens", limiter.DimConcurrency: "concurrency", limiter.DimPause: "pause",
	}
)

// collector reads the run at each scrape.
type collector struct{ e *Exporter }

func (c *collector) Describe(ch chan<- *prometheus.Desc) { prometheus.DescribeByCollect(c, ch) }

func (c *collector) Collect(ch chan<- prometheus.Metric) {
	e, d := c.e, descs()
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	counter := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, labels...)
	}
	gauge(d.descBuild, 1, e.o.Version)
	gauge(d.descStart, float64(e.start.UnixMilli())/1e3)
	e.mu.Lock()
	finished, end, exit := e.finished, e.end, e.exit
	e.mu.Unlock()
	if finished {
		gauge(d.descEnd, float64(end.UnixMilli())/1e3)
		gauge(d.descExit, float64(exit))
	}
	v := e.view.Load()
	if v == nil {
		return
	}
	cs := v.Counters()
	counter(d.descRequests, float64(cs.Succeeded.Load()), "succeeded")
	counter(d.descRequests, float64(cs.Failed.Load()), "failed")
	counter(d.descRequests, float64(cs.Skipped.Load()), "skipped")
	gauge(d.descInput, float64(cs.Total.Load()))
	gauge(d.descPending, float64(max(cs.Total.Load()-cs.Done(), 0)))
	counter(d.descAttempts, float64(cs.Attempts.Load()))
	gauge(d.descInFlight, float64(cs.InFlight.Load()))
	for cause, n := range cs.RetriesByCause() {
		counter(d.descRetries, float64(n), cause)
	}
	for dim, n := range cs.RateLimitedOn() {
		counter(d.descRateLimited, float64(n), dim)
	}
	counter(d.descTokens, float64(cs.InputTokens.Load()), "input")
	counter(d.descTokens, float64(cs.OutputTokens.Load()), "output")
	if e.o.Costs {
		counter(d.descCost, cs.Spent().USD())
	}
	counter(d.descFellBack, float64(cs.FellBack.Load()))
	if done := cs.Succeeded.Load() + cs.Failed.Load(); done > 0 {
		gauge(d.descFallbackRate, float64(cs.FellBack.Load())/float64(done))
	}
	for _, st := range v.Budget() {
		key := redactKey(st.Key)
		for dim, w := range st.WaitBy {
			if name, ok := waitDimensionsOf[limiter.Dimension(dim)]; ok {
				counter(d.descBudgetWait, w.Seconds(), key, name)
			}
		}
		learned := fmt.Sprint(st.Learned)
		for i, v := range []float64{st.Effective.RPM, st.Effective.ITPM, st.Effective.OTPM, st.Effective.TPM} {
			if v > 0 {
				gauge(d.descLimit, v, key, limitDimensions[i], learned)
			}
		}
		gauge(d.descConcurrency, float64(st.Effective.Concurrency), key)
		counter(d.descKeyLimited, float64(st.RateLimited), key)
	}
	for _, q := range v.Queues() {
		gauge(d.descQueue, float64(q.Waiting), redactKey(q.Key), strconv.Itoa(q.Priority))
	}
	for key, b := range v.Breakers(time.Now()) {
		key = redactKey(key)
		state := 0.0
		switch b.State {
		case retry.HalfOpen:
			state = 1
		case retry.Open:
			state = 2
		}
		gauge(d.descBreaker, state, key)
		counter(d.descOpenings, float64(b.Openings), key)
		counter(d.descHeld, b.TimeHeld.Seconds(), key)
	}
}

var _ runner.Observer = (*Exporter)(nil)
