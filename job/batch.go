package job

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/llmrun/llmrun/checkpoint"
	"github.com/llmrun/llmrun/ending"
	"github.com/llmrun/llmrun/estimate"
	"github.com/llmrun/llmrun/forecast"
	"github.com/llmrun/llmrun/limiter"
	"github.com/llmrun/llmrun/metrics"
	"github.com/llmrun/llmrun/pricing"
	"github.com/llmrun/llmrun/providers"
	"github.com/llmrun/llmrun/providers/registry"
	"github.com/llmrun/llmrun/report"
	"github.com/llmrun/llmrun/runner"
	"github.com/llmrun/llmrun/runner/retry"
	"github.com/llmrun/llmrun/source"
	"github.com/llmrun/llmrun/telemetry"
)

// BatchOptions are everything the batch command takes. Zero durations and
// counts are not defaults: the CLI's flags carry the defaults.
type BatchOptions struct {
	// Input is the JSONL file; Output and Errors default from it (and the
	// shard). Summary is the --summary file, written by the caller.
	Input, Output, Errors, Summary string

	Provider, BaseURL, Model, System string
	// APIVersion is --api-version (Azure OpenAI's api-version); "" reads
	// the provider's environment variable.
	APIVersion string
	// NoAuth sends no API key (--no-auth).
	NoAuth    bool
	MaxTokens int
	// Models are --override-model and the config's model_map.
	Models ModelOptions
	Stream bool
	// Fallback is the chain of provider:model hops after the primary.
	Fallback []string
	// Headers are extra request headers ("Name: value", --header); their
	// values are never logged.
	Headers []string

	Concurrency                    int
	RPM, ITPM, OTPM, TPM, Headroom float64
	// Daily holds --rpd, --tpd and --wait-daily (daily.go).
	Daily                 DailyOptions
	Burst, Skew, MaxPause time.Duration
	// WarmUp paces a key with no history against acceleration limits
	// (limiter.Limits.WarmUp); 0 disables it.
	WarmUp             time.Duration
	Pool, Shard, Redis string
	// Shards and ShardIndex are --shards N with --shard-index I, the
	// 0-based form of --shard I+1/N; without ShardIndex ("") the index is
	// JOB_COMPLETION_INDEX, as a Kubernetes Indexed Job sets it.
	Shards     int
	ShardIndex string
	// Priority orders this run's requests among those waiting for the same
	// budget (higher first; a line's priority field overrides it), and
	// PriorityAging is how long a waiting request waits to rise one.
	Priority                        int
	PriorityAging                   time.Duration
	MaxAttempts                     int
	BackoffBase, BackoffMax         time.Duration
	RequestTimeout, FirstByte, Idle time.Duration
	MaxResponseBytes                int64
	RetryBudget                     float64
	Breaker                         BreakerOptions
	MaxOutage                       time.Duration
	// ConnectDeadline stops a run whose server was never reached for this
	// long (0: never); FailFast one whose first FailFast attempts all
	// failed alike (0: never); MaxFailures one whose failures pass a
	// count or a ratio ("N" or "P%", "" for none).
	ConnectDeadline time.Duration
	// SetupDeadline stops a run whose model never worked and kept failing
	// the same way this long (ending.SetupError; 0: never).
	SetupDeadline        time.Duration
	FailFast             int
	MaxFailures          string
	RequireJSON          bool
	JSONSchema           string
	MinChars             int
	Fsync                string
	NoRetryFailed, Quiet bool
	// Force is accepted for old scripts and does nothing: a changed input
	// needs no forcing, its changed requests are sent again.
	Force bool
	// Prune drops the answers of ids no longer in the input once the whole
	// input has been seen; without it they are kept.
	Prune bool
	Grace time.Duration
	// Seed seeds the retry jitter; 0 seeds from the clock.
	Seed             uint64
	ProgressInterval time.Duration
	// Offline chooses the live or the batch API route.
	Offline OfflineOptions
	// Cost holds --prices, --max-cost and --dry-run (cost.go).
	Cost CostOptions
	// Cache is --cache and its companions (cache.go).
	Cache CacheOptions
	// Source says how the input is read (source.go).
	Source SourceOptions
	// Endpoints are the config file's named endpoints, which --provider
	// and --fallback may name; Pools its named budgets.
	Endpoints map[string]Endpoint
	Pools     map[string]Limits
	// Metrics says where the run's metrics go (--metrics-addr,
	// --metrics-file, --pushgateway).
	Metrics MetricsOptions
	// ExitCode maps the run's error to its exit code, for the metrics'
	// llmrun_run_exit_code (cmd's mapping; nil: 0 or 1).
	ExitCode func(error) int
}

// batch is one batch command's parts, built from its options.
type batch struct {
	io  *IO
	o   *BatchOptions
	set *registry.Set
	// primary is the registry entry of routes[0].
	primary registry.Entry
	routes  []runner.Route
	src     *source.Source
	total   int // requests in the source (its shard)
	// firstLine is the first line of each endpoint the source asks for.
	firstLine map[providers.Endpoint]int
	limits    limiter.Limits
	budget    limiter.Budget
	// closeBudget releases the budget's connections.
	closeBudget func()
	estimator   *estimate.Estimator
	guard       retry.Guard
	store       *checkpoint.Store
	seed        uint64
	interrupts  chan os.Signal
	// prices prices the answers; spent is the spend recorded in the
	// output before this run (read only with --max-cost).
	prices *pricing.Table
	spent  pricing.Cost
	// maxFailures is --max-failures, parsed.
	maxFailures ending.MaxFailures
	// metrics exports the run's figures; nil without metrics options.
	metrics *metrics.Exporter
	// modelCounts are the checked requests per model; inputRatios the
	// provider's count over the local one per model (calibrate_live.go).
	modelCounts map[string]int64
	inputRatios map[string]float64
	// telemetry exports OpenTelemetry traces and metrics; nil without
	// an OTLP endpoint in the environment.
	telemetry *telemetry.Telemetry
	// primaryAt is the primary route's endpoint (a config file's named
	// endpoint: its key variable and headers), for the batch API client.
	primaryAt registry.Endpoint
	// pools are the budgets the config file names (pools, endpoints with
	// limits of their own).
	pools map[string]limiter.Limits
}

// Batch runs every pending request of o.Input: checked in one pass, then
// through the live API or the provider's batch API, results appended to
// the checkpoint. It returns the summary (nil when the run never started)
// and how the run ended: nil (every request succeeded), ending.ErrFailures,
// *ending.AbortError, *ending.InterruptedError, *ending.PendingError,
// *UsageError, an input or checkpoint error, or an I/O error.
func Batch(ctx context.Context, io *IO, o BatchOptions) (*report.Summary, error) {
	if o.Cost.DryRun {
		return nil, Estimate(io, o)
	}
	cu, err := openCache(&o.Cache)
	if err != nil {
		return nil, err
	}
	if cu != nil {
		defer cu.Cache.Close()
		defer pruneCache(io, cu, &o.Cache)
	}
	b, err := prepare(ctx, io, &o)
	if err != nil {
		return nil, err
	}
	defer b.close()
	b.announce()
	sum, handled, err := b.runOffline(ctx)
	if !handled {
		// The checked input's ids are distinct and the runner classifies
		// each before it sends it, once: a first run's checkpoint need not
		// index its own answers (9.4 bytes an id).
		b.store.Distinct()
		cfg := b.runConfig()
		cfg.Cache = cu
		cfg.Observer = b.observer()
		sum, err = runner.Run(ctx, cfg)
	}
	if cerr := b.store.Close(); cerr != nil && err == nil {
		err = cerr
	}
	if sum != nil {
		sum.ErrorsFile, sum.OutputFile = o.Errors, o.Output
	}
	err = pendingIsAnError(sum, err)
	b.finishMetrics(err)
	return sum, err
}

// pendingIsAnError keeps exit 0 meaning every request succeeded: a run of
// either route that ends with nothing else wrong but requests neither
// answered nor failed reports them as a *ending.PendingError.
func pendingIsAnError(sum *report.Summary, err error) error {
	if sum == nil || sum.Pending == 0 || (err != nil && !errors.Is(err, ending.ErrFailures)) {
		return err
	}
	return &ending.PendingError{Pending: sum.Pending, Cause: errors.New("the run ended before it reached them")}
}

// prepare checks the options and builds the run's parts, one step after
// another, in the order that sends nothing until the whole input is
// checked: options, input, routes, budget, input check, checkpoint. On an
// error it releases what the earlier steps built.
func prepare(ctx context.Context, io *IO, o *BatchOptions) (_ *batch, err error) {
	shard, fsync, err := o.complete(io.Getenv)
	if err != nil {
		return nil, err
	}
	header, err := ParseHeaders(o.Headers)
	if err != nil {
		return nil, err
	}
	if err := o.checkFiles(); err != nil {
		return nil, err
	}
	if err := checkWritable("-o", o.Output, "--errors", o.Errors, "--summary", o.Summary, "--metrics-file", o.Metrics.File); err != nil {
		return nil, err
	}
	b := &batch{io: io, o: o, set: registry.NewSet(io.Getenv, providers.Config{
		APIVersion:       o.APIVersion,
		Stream:           o.Stream,
		HTTPClient:       providers.NewHTTPClient(o.Concurrency),
		FirstByteTimeout: o.FirstByte,
		IdleTimeout:      o.Idle,
		MaxResponseBytes: o.MaxResponseBytes,
		UserAgent:        UserAgent(),
		Header:           header,
	})}
	if o.NoAuth {
		b.set.SendNoKey()
	}
	if io.GCPercent != nil {
		defer io.GCPercent(io.GCPercent(prepareGCPercent))
	}
	defer func() {
		if err != nil {
			b.close()
		}
	}()
	for _, step := range []func() error{
		b.checkOptions,
		b.startMetrics,
		b.startTelemetry,
		func() error { return b.openInput(shard) },
		b.buildRoutes,
		func() error { return b.buildBudget(ctx) },
		b.checkInput,
		func() error { return b.calibrateLive(ctx) },
		func() error { return b.openCheckpoint(fsync) },
	} {
		if err = step(); err != nil {
			return nil, err
		}
	}
	b.interrupts = make(chan os.Signal, 2)
	signal.Notify(b.interrupts, syscall.SIGINT, syscall.SIGTERM)
	return b, nil
}

// checkOptions builds the answer guard and the price list, and checks the
// spending cap.
func (b *batch) checkOptions() (err error) {
	o := b.o
	if b.guard, err = o.guard(); err != nil {
		return err
	}
	if b.prices, err = loadPrices(&o.Cost); err != nil {
		return err
	}
	if b.maxFailures, err = ParseMaxFailures(o.MaxFailures); err != nil {
		return err
	}
	return nil
}

// openInput opens the input before anything reads it: a pipe is spooled
// beside the output here, and every pass (shape, check, run) reads that.
func (b *batch) openInput(shard source.Shard) error {
	b.src = &source.Source{Path: b.o.Input, Shard: shard, Format: b.o.Source.format, Stdin: b.io.In, SpoolDir: filepath.Dir(b.o.Output)}
	return b.src.Open()
}

// buildBudget builds the budget every attempt is admitted from, and the
// token estimator that prices attempts in it.
func (b *batch) buildBudget(ctx context.Context) (err error) {
	b.limits, b.seed = b.o.limits(), b.o.Seed
	if b.seed == 0 {
		b.seed = uint64(time.Now().UnixNano())
	}
	b.budget, b.closeBudget, err = newBudget(ctx, b.io, b.o, b.limits, b.pools)
	b.estimator = estimate.NewEstimator()
	return err
}

// checkInput reads the whole input once, in the primary route's format,
// rejecting what no budget could admit and, with --max-cost, models with
// no price.
func (b *batch) checkInput() error {
	o := b.o
	b.src.Parser = o.parser(b.routes[0].Provider.Format())
	b.src.Parser.Models = o.modelRules(b.io, b.primary, b.routes[0].Provider.BaseURL())
	b.src.Route = &b.routes[0]
	if b.src.Parser.Defaults.Model == "" {
		b.src.Parser.Defaults.Model = b.routes[0].Model // the deployment a URL names
	}
	if err := o.Models.check(b.src.Parser.Defaults.Model); err != nil {
		return err
	}
	fits := forecast.FitsLimits(b.limits, b.estimator, b.routes[0].Admission)
	b.modelCounts = map[string]int64{}
	models := map[string]bool{} // the input's models, for --max-cost
	b.src.Validate = func(req *providers.Request) error {
		models[req.Model] = true
		b.modelCounts[req.Model]++
		return fits(req)
	}
	check, err := b.src.Check()
	if err != nil {
		return err
	}
	o.checked(b.io, check)
	b.total, b.firstLine = check.Requests, check.FirstLine
	if o.Cost.MaxCost > 0 {
		return checkPriced(b.prices, b.routes, models)
	}
	return nil
}

// openCheckpoint opens the checkpoint and reads what earlier runs spent.
func (b *batch) openCheckpoint(fsync checkpoint.FsyncMode) (err error) {
	o := b.o
	if b.store, err = b.openStore(fsync); err != nil {
		return err
	}
	b.spent, err = recordedSpend(b.store, o.Output, o.Errors, o.Cost.MaxCost > 0)
	return err
}

// complete fills the options' derived defaults (output paths, the mock's
// model) and checks what the parts would not: the shard, the concurrency,
// the breaker, the fsync mode. getenv reads JOB_COMPLETION_INDEX.
func (o *BatchOptions) complete(getenv func(string) string) (source.Shard, checkpoint.FsyncMode, error) {
	if err := o.shardIndexed(getenv); err != nil {
		return source.Shard{}, 0, err
	}
	var shard source.Shard
	suffix := ""
	if o.Shard != "" {
		var err error
		if shard, err = source.ParseShard(o.Shard); err != nil {
			return shard, 0, usage(err)
		}
		suffix = fmt.Sprintf(".shard-%d-of-%d", shard.I, shard.N)
	}
	regular := isRegularFile(o.Input)
	if o.Output == "" {
		if !regular {
			return shard, 0, usagef("%s is not a regular file (a pipe or standard input): name the output with -o", inputName(o.Input))
		}
		o.Output = DerivePath(o.Input, suffix+".out.jsonl")
	}
	if o.Errors == "" {
		o.Errors = checkpoint.ErrorsPath(o.Output) // beside the output, whatever the input
	}
	if err := o.validate(); err != nil {
		return shard, 0, err
	}
	if err := o.Source.load(o.Input); err != nil {
		return shard, 0, err
	}
	fsync, err := checkpoint.ParseFsyncMode(o.Fsync)
	if err != nil {
		return shard, 0, usage(fmt.Errorf("--fsync: %w", err))
	}
	if o.Model == "" && strings.HasPrefix(o.Provider, "mock") {
		o.Model = "mock-1"
	}
	return shard, fsync, nil
}

// shardIndexed turns --shards N (with --shard-index I, else the
// JOB_COMPLETION_INDEX a Kubernetes Indexed Job gives each pod, both
// 0-based) into --shard I+1/N: the same shard, the same output name, the
// same checkpoint settings, whichever form chose it.
func (o *BatchOptions) shardIndexed(getenv func(string) string) error {
	if o.Shards == 0 {
		if o.ShardIndex != "" {
			return usagef("--shard-index needs --shards N")
		}
		return nil
	}
	if o.Shard != "" {
		return usagef("--shard and --shards are two ways of saying the same: give one")
	}
	if o.Shards < 1 {
		return usagef("--shards must be positive, got %d", o.Shards)
	}
	v, from := o.ShardIndex, "--shard-index"
	if v == "" {
		from = "JOB_COMPLETION_INDEX"
		if getenv != nil {
			v = getenv(from)
		}
		if v == "" {
			return usagef("--shards %d needs --shard-index (0-based) or JOB_COMPLETION_INDEX (a Kubernetes Indexed Job sets it)", o.Shards)
		}
	}
	i, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil {
		return usagef("%s %q is not a shard index", from, v)
	}
	if i >= o.Shards || i < 0 {
		return usagef("%s %d is not a shard of --shards %d (0 to %d)", from, i, o.Shards, o.Shards-1)
	}
	o.Shard = fmt.Sprintf("%d/%d", i+1, o.Shards)
	return nil
}

// isRegularFile reports whether path names a regular file (not "-", a
// pipe, a FIFO or a device): only then are outputs derived from its name
// and its fingerprint recorded.
func isRegularFile(path string) bool {
	if path == "-" {
		return false
	}
	fi, err := os.Stat(path)
	return err != nil || fi.Mode().IsRegular() // a missing file fails later, naming itself
}

func inputName(path string) string {
	if path == "-" {
		return "standard input"
	}
	return path
}

// limits are the budget's limits per key; none given means learn them.
func (o *BatchOptions) limits() limiter.Limits {
	return limiter.Limits{
		RPM: o.RPM, ITPM: o.ITPM, OTPM: o.OTPM, TPM: o.TPM,
		Burst: o.Burst, Headroom: o.Headroom, Concurrency: o.Concurrency, Skew: o.Skew, WarmUp: o.WarmUp,
		Auto: o.RPM == 0 && o.ITPM == 0 && o.OTPM == 0 && o.TPM == 0,
	}
}

// openStore opens the checkpoint: the output file, its errors file and
// state, locked for this run.
func (b *batch) openStore(fsync checkpoint.FsyncMode) (*checkpoint.Store, error) {
	input := ""
	if isRegularFile(b.o.Input) {
		input, _ = filepath.Abs(b.o.Input)
	}
	if b.o.Force {
		b.io.warnf("--force is no longer needed and does nothing: a rerun sends again exactly the requests that changed")
	}
	route := b.routes[0]
	// The checked input's requests: the load confirms on the way whether
	// the output answers exactly them (a rerun with nothing to send).
	expect, ok := b.src.InputSet(source.NewFingerprinter(route))
	if !ok || expect.Len() != b.total {
		expect = checkpoint.InputSet{}
	}
	return checkpoint.Open(checkpoint.Options{
		Output:      b.o.Output,
		Errors:      b.o.Errors,
		Fsync:       fsync,
		RetryFailed: !b.o.NoRetryFailed,
		Prune:       b.o.Prune,
		Input:       input,
		Expect:      expect,
		Settings: map[string]string{"provider": route.Provider.Name(), "base_url": route.Provider.BaseURL(),
			"model": b.o.Model, "shard": b.o.Shard},
		Tally: lineCost,
		Warn:  func(msg string) { b.io.warnf("%s", msg) },
	})
}

// runConfig is the live run's configuration.
func (b *batch) runConfig() runner.Config {
	o := b.o
	return runner.Config{
		Source:      b.src,
		Total:       b.total,
		Routes:      b.routes,
		Store:       b.store,
		Limiter:     b.budget,
		Estimator:   b.estimator,
		InputRatios: b.inputRatios,
		Policy:      retry.Policy{MaxAttempts: o.MaxAttempts, Deadline: o.RequestTimeout, Base: o.BackoffBase, Max: o.BackoffMax, MaxServerDelay: o.MaxPause},
		RetryBudget: retry.NewBudget(o.RetryBudget, retry.DefaultBudgetWindow, retry.DefaultBudgetAllowance),
		Breaker:     o.Breaker.Config(o.MaxOutage),
		Guard:       b.guard,
		Concurrency: o.Concurrency,
		Grace:       o.Grace,
		Interrupts:  b.interrupts,
		Progress:    &report.Progress{Mode: progressMode(b.io, o), Out: b.io.Err, Log: b.io.logger(), Width: b.io.Width, Interval: o.ProgressInterval},
		Log:         b.io.logger(),
		Rand:        rand.New(rand.NewPCG(b.seed, b.seed^0x9e3779b97f4a7c15)),
		Prices:      b.prices,
		MaxCost:     pricing.FromUSD(o.Cost.MaxCost),
		Spent:       b.spent,

		ConnectDeadline: o.ConnectDeadline,
		SetupDeadline:   o.SetupDeadline,
		Streaming:       o.Stream,
		FailFast:        o.FailFast,
		MaxFailures:     b.maxFailures,

		Days:      o.Daily.days(b.io),
		WaitDaily: o.Daily.WaitDaily,
	}
}

// close releases what prepare built, in reverse.
func (b *batch) close() {
	if b.interrupts != nil {
		signal.Stop(b.interrupts)
	}
	if b.store != nil {
		b.store.Close()
	}
	if b.closeBudget != nil {
		b.closeBudget()
	}
	if b.metrics != nil {
		b.metrics.Close()
	}
	if b.telemetry != nil {
		b.telemetry.Finish(0, nil) // never started: nothing to flush but the SDK's goroutines
	}
	if b.src != nil {
		b.src.Close()
	}
	b.set.Close()
}

// progressMode: nothing with --quiet, a bar on a terminal, log lines otherwise.
func progressMode(io *IO, o *BatchOptions) report.ProgressMode {
	switch {
	case o.Quiet:
		return report.ProgressOff
	case io.ErrIsTerminal && !io.JSONLogs:
		return report.ProgressBar
	}
	return report.ProgressLog
}
