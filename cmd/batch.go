package cmd

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/llmrun/llmrun/checkpoint"
	"github.com/llmrun/llmrun/estimate"
	"github.com/llmrun/llmrun/limiter"
	"github.com/llmrun/llmrun/limiter/redisbudget"
	"github.com/llmrun/llmrun/providers"
	"github.com/llmrun/llmrun/providers/registry"
	"github.com/llmrun/llmrun/runner"
	"github.com/llmrun/llmrun/runner/retry"
)

// BatchOptions are the batch command's flags.
type BatchOptions struct {
	Input, Output, Errors, Summary string

	Provider, BaseURL, Model, System string
	MaxTokens                        int
	Stream                           bool
	Fallback                         []string

	Concurrency                     int
	RPM, ITPM, OTPM, TPM, Headroom  float64
	Burst, Skew, MaxPause           time.Duration
	Pool, Shard, Redis              string
	MaxAttempts                     int
	BackoffBase, BackoffMax         time.Duration
	RequestTimeout, FirstByte, Idle time.Duration
	MaxResponseBytes                int64
	RetryBudget                     float64
	Breaker                         BreakerFlags
	MaxOutage                       time.Duration
	RequireJSON                     bool
	JSONSchema                      string
	MinChars                        int
	Fsync                           string
	NoRetryFailed, Force, Quiet     bool
	Grace                           time.Duration
	Seed                            uint64
	ProgressInterval                time.Duration
	// Offline holds --mode and the batch API route's flags (batchmode.go).
	Offline OfflineOptions
}

func newBatchCmd(io *IO, runF func(*BatchOptions) error) *cobra.Command {
	o := &BatchOptions{}
	c := &cobra.Command{
		Use:   "batch INPUT.jsonl",
		Short: "Run every request of a JSONL file, resuming where an earlier run stopped",
		Long: `Run every request of INPUT.jsonl and write one result line per request to the output file
(OpenAI batch output format) and one line per finally failed request to the errors file.
Rerunning the same command resumes: requests already in the output are skipped.

Input lines may be OpenAI batch lines {"custom_id","method","url","body"}, Anthropic batch lines
{"custom_id","params"} or simple lines {"custom_id"?,"prompt","system"?,"model"?,"max_tokens"?}.

Keys come from OPENAI_API_KEY / ANTHROPIC_API_KEY, endpoints from OPENAI_BASE_URL /
ANTHROPIC_BASE_URL (or --base-url). --provider mock runs against a built-in mock server.

` + exitCodesHelp,
		Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			o.Input = args[0]
			if runF != nil {
				return runF(o)
			}
			return runBatch(c.Context(), io, o)
		},
	}
	f := c.Flags()
	f.StringVarP(&o.Output, "output", "o", "", "output file (default: INPUT with .jsonl replaced by .out.jsonl)")
	f.StringVar(&o.Errors, "errors", "", "errors file (default: INPUT with .jsonl replaced by .errors.jsonl)")
	f.StringVar(&o.Summary, "summary", "", "also write the run summary as JSON to this file")
	f.StringVar(&o.Provider, "provider", "", strings.Join(registry.Names(), ", ")+" (default: from the input's shape, then from which API key is set)")
	f.StringVar(&o.BaseURL, "base-url", "", "API base URL (default: OPENAI_BASE_URL / ANTHROPIC_BASE_URL, else the provider's)")
	f.StringVar(&o.Model, "model", "", "model for lines that name none")
	f.StringVar(&o.System, "system", "", "system prompt for simple lines that give none")
	f.IntVar(&o.MaxTokens, "max-tokens", 0, "output token cap for lines that set none (Anthropic default 1024)")
	f.BoolVar(&o.Stream, "stream", true, "stream responses (the output is the same either way)")
	f.StringSliceVar(&o.Fallback, "fallback", nil, "fallback chain provider:model[,provider:model...] tried when the primary gives up")
	f.IntVar(&o.Concurrency, "concurrency", 8, "most requests in flight at once")
	f.Float64Var(&o.RPM, "rpm", 0, "requests per minute (0: learn from headers)")
	f.Float64Var(&o.ITPM, "itpm", 0, "input tokens per minute")
	f.Float64Var(&o.OTPM, "otpm", 0, "output tokens per minute")
	f.Float64Var(&o.TPM, "tpm", 0, "combined tokens per minute (OpenAI-style TPM)")
	f.DurationVar(&o.Burst, "burst", time.Second, "how much refill a bucket may hold (providers enforce per-minute limits in short windows)")
	f.Float64Var(&o.Headroom, "headroom", 1.0, "fraction of the limits to use")
	f.DurationVar(&o.Skew, "skew", limiter.DefaultSkew, "how long after sending the provider may count a request; that much refill is kept in reserve")
	f.DurationVar(&o.MaxPause, "max-pause", limiter.DefaultMaxPause, "longest wait a server's retry-after may impose, on one request or (after a 429) on the whole key")
	f.StringVar(&o.Pool, "pool", "", "share one budget under this name instead of per provider+model")
	f.StringVar(&o.Redis, "redis", "", "redis://[user:pass@]host:port/db: share the budget (buckets, pauses, --concurrency) with every llmrun using this Redis; needs explicit --rpm/--itpm/--otpm/--tpm")
	f.StringVar(&o.Shard, "shard", "", "I/N: run only shard I of N of the input (by custom_id hash), for N machines sharing one file; outputs default to INPUT.shard-I-of-N.out.jsonl")
	f.IntVar(&o.MaxAttempts, "max-attempts", retry.DefaultMaxAttempts, "attempts per request, the first included")
	f.DurationVar(&o.BackoffBase, "backoff-base", retry.DefaultBase, "backoff cap of the first retry (doubles per attempt)")
	f.DurationVar(&o.BackoffMax, "backoff-max", retry.DefaultMax, "largest backoff cap")
	f.DurationVar(&o.RequestTimeout, "request-timeout", retry.DefaultDeadline, "deadline for all attempts of one request")
	f.DurationVar(&o.FirstByte, "first-byte-timeout", 2*time.Minute, "longest wait for a response to start")
	f.DurationVar(&o.Idle, "idle-timeout", time.Minute, "longest silence inside a stream before it is cut and retried")
	f.Int64Var(&o.MaxResponseBytes, "max-response-bytes", providers.DefaultMaxResponseBytes, "bytes one answer may hold beyond what its max tokens explain (larger ones fail); raise for embeddings-sized answers")
	f.Float64Var(&o.RetryBudget, "retry-budget", retry.DefaultBudgetRatio, "retries allowed as a fraction of first attempts (sliding window)")
	addBreakerFlags(f, &o.Breaker)
	f.DurationVar(&o.MaxOutage, "max-outage", retry.DefaultMaxOutage, "stop (exit 3, resumable) when the provider stays down this long")
	f.BoolVar(&o.RequireJSON, "require-json", false, "accept only answers whose content parses as JSON")
	f.StringVar(&o.JSONSchema, "json-schema", "", "accept only answers valid against this JSON Schema file")
	f.IntVar(&o.MinChars, "min-chars", 0, "accept only answers at least this long")
	f.StringVar(&o.Fsync, "fsync", "batch", "durability: batch (group commit), always, never")
	f.BoolVar(&o.NoRetryFailed, "no-retry-failed", false, "on rerun, keep earlier failures failed instead of retrying them")
	f.BoolVar(&o.Force, "force", false, "resume although the input or settings changed since the checkpoint")
	f.DurationVar(&o.Grace, "grace", 30*time.Second, "after the first interrupt, how long in-flight requests may finish")
	f.BoolVarP(&o.Quiet, "quiet", "q", false, "no progress output (the final summary line is still printed)")
	f.Uint64Var(&o.Seed, "seed", 0, "seed for retry jitter (0: random)")
	f.DurationVar(&o.ProgressInterval, "progress-interval", 5*time.Second, "interval of plain progress lines when stderr is not a terminal")
	addOfflineFlags(f, &o.Offline)
	return c
}

// derivePath turns x.jsonl into x<suffix>.
func derivePath(input, suffix string) string {
	base := strings.TrimSuffix(input, ".jsonl")
	return base + suffix
}

func runBatch(ctx context.Context, io *IO, o *BatchOptions) error {
	var shard runner.Shard
	suffix := ""
	if o.Shard != "" {
		var err error
		if shard, err = runner.ParseShard(o.Shard); err != nil {
			return &usageError{err}
		}
		suffix = fmt.Sprintf(".shard-%d-of-%d", shard.I, shard.N)
	}
	if o.Output == "" {
		o.Output = derivePath(o.Input, suffix+".out.jsonl")
	}
	if o.Errors == "" {
		o.Errors = derivePath(o.Input, suffix+".errors.jsonl")
	}
	if o.Concurrency <= 0 {
		return usagef("--concurrency must be positive")
	}
	if err := o.Breaker.validate(); err != nil {
		return err
	}
	fsync, err := checkpoint.ParseFsyncMode(o.Fsync)
	if err != nil {
		return &usageError{err}
	}
	guard, err := newGuard(o)
	if err != nil {
		return err
	}

	if o.Model == "" && strings.HasPrefix(o.Provider, "mock") {
		o.Model = "mock-1"
	}
	env := newEnvironment(io, o)
	defer env.close()
	primary, err := env.route(o.Provider, o.Model, true)
	if err != nil {
		return err
	}
	routes := []runner.Route{primary}
	for _, hop := range o.Fallback {
		name, model, _ := strings.Cut(hop, ":")
		rt, err := env.route(name, model, false)
		if err != nil {
			return err
		}
		routes = append(routes, rt)
	}

	src := &runner.Source{Path: o.Input, Shard: shard, Parser: runner.Parser{
		Format:   primary.Provider.Format(),
		Defaults: runner.LineDefaults{Model: o.Model, MaxTokens: o.MaxTokens, System: o.System},
	}}
	limits := limiter.Limits{
		RPM: o.RPM, ITPM: o.ITPM, OTPM: o.OTPM, TPM: o.TPM,
		Burst: o.Burst, Headroom: o.Headroom, Concurrency: o.Concurrency, Skew: o.Skew,
		Auto: o.RPM == 0 && o.ITPM == 0 && o.OTPM == 0 && o.TPM == 0,
	}
	seed := o.Seed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	lim, closeBudget, err := newBudget(ctx, io, o, limits, seed)
	if err != nil {
		return err
	}
	defer closeBudget()
	estimator := estimate.NewEstimator()
	src.Validate = runner.FitsLimits(limits, estimator, primary.Admission)
	check, err := src.Check()
	if err != nil {
		return err
	}

	info, err := checkpoint.Fingerprint(o.Input)
	if err != nil {
		return err
	}
	store, err := checkpoint.Open(checkpoint.Options{
		Output:      o.Output,
		Errors:      o.Errors,
		Fsync:       fsync,
		RetryFailed: !o.NoRetryFailed,
		Input:       info,
		Settings:    map[string]string{"provider": primary.Provider.Name(), "model": o.Model, "shard": o.Shard},
		Force:       o.Force,
		Warn:        func(msg string) { fmt.Fprintf(io.Err, "llmrun: warning: %s\n", msg) },
	})
	if err != nil {
		return err
	}
	defer store.Close()

	interrupts := make(chan os.Signal, 2)
	signal.Notify(interrupts, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(interrupts)

	sum, runErr, offline := runOffline(ctx, io, o, env, primary, src, check.Requests, store, interrupts)
	if !offline {
		sum, runErr = runner.Run(ctx, runner.Config{
			Source:      src,
			Total:       check.Requests,
			Routes:      routes,
			Store:       store,
			Limiter:     lim,
			Estimator:   estimator,
			Policy:      retry.Policy{MaxAttempts: o.MaxAttempts, Deadline: o.RequestTimeout, Base: o.BackoffBase, Max: o.BackoffMax, MaxServerDelay: o.MaxPause},
			RetryBudget: retry.NewBudget(o.RetryBudget, retry.DefaultBudgetWindow, retry.DefaultBudgetAllowance),
			Breaker:     o.Breaker.config(o.MaxOutage),
			Guard:       guard,
			Concurrency: o.Concurrency,
			Grace:       o.Grace,
			Interrupts:  interrupts,
			Progress:    &runner.Progress{Mode: progressMode(io, o), Out: io.Err, Interval: o.ProgressInterval},
			Rand:        rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
		})
	}
	if cerr := store.Close(); cerr != nil && runErr == nil {
		runErr = cerr
	}
	if sum != nil {
		sum.ExitCode = ExitCode(runErr)
		fmt.Fprintln(io.Err, sum.OneLine())
		if runErr != nil && sum.ExitCode != ExitFailed && sum.ExitCode != ExitOK {
			fmt.Fprintf(io.Err, "llmrun: resume with: %s\n", resumeCommand())
		}
		if o.Summary != "" {
			if err := sum.WriteFile(o.Summary); err != nil && runErr == nil {
				runErr = err
			}
		}
	}
	return runErr
}

// resumeCommand is the command line that resumes this run: the same one,
// with passwords in URLs (--redis, --base-url) masked.
func resumeCommand() string {
	args := []string{"llmrun"}
	for _, a := range os.Args[1:] {
		if u, err := url.Parse(a); err == nil && u.User != nil {
			a = u.Redacted()
		}
		args = append(args, a)
	}
	return strings.Join(args, " ")
}

// newBudget is the in-process budget, or with --redis one shared through
// Redis by every llmrun pointed at it.
func newBudget(ctx context.Context, io *IO, o *BatchOptions, limits limiter.Limits, seed uint64) (limiter.Budget, func(), error) {
	warn := func(msg string) { fmt.Fprintf(io.Err, "llmrun: warning: %s\n", msg) }
	if o.Redis == "" {
		return limiter.AsBudget(limiter.New(limiter.Options{Defaults: limits, MaxPause: o.MaxPause, Warn: warn})), func() {}, nil
	}
	ropt, err := redis.ParseURL(o.Redis)
	if err != nil {
		return nil, nil, &usageError{fmt.Errorf("--redis: %w", err)}
	}
	// One line when Redis goes down and one when it is back, never the
	// password, instead of a line per failed call and per go-redis pool
	// message. go-redis logs only through a process-wide logger.
	health := redisbudget.NewHealth(ropt.Addr, warn, nil, ropt.Password)
	redis.SetLogger(health)
	rc := redis.NewClient(ropt)
	health.Watch(rc)
	pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	err = rc.Ping(pctx).Err()
	cancel()
	if err != nil {
		rc.Close()
		return nil, nil, fmt.Errorf("--redis %s: %w", ropt.Addr, err)
	}
	rb, err := redisbudget.New(redisbudget.Options{
		Client:   rc,
		Defaults: limits,
		Rand:     rand.New(rand.NewPCG(seed^1, seed)),
		OnError:  health.Report,
		MaxPause: o.MaxPause,
		Warn:     warn,
		// Only the holder of the output's lock runs in this role: a rerun
		// after kill -9 frees the dead run's slots at once.
		Holder: redisbudget.Holder{Role: absPath(o.Output)},
	})
	if err != nil { // no --rpm/--itpm/--otpm/--tpm: learning limits is per process
		rc.Close()
		return nil, nil, &usageError{err}
	}
	return rb, func() { rb.Close(); rc.Close() }, nil
}

// absPath is path made absolute when possible.
func absPath(path string) string {
	if a, err := filepath.Abs(path); err == nil {
		return a
	}
	return path
}

// BreakerFlags are the circuit breaker's flags.
type BreakerFlags struct {
	Window, MinAttempts, Probes int
	WindowTime, Cooldown        time.Duration
	FailureRate                 float64
	// Threshold is the deprecated --breaker-threshold; when set it is
	// MinAttempts, the fewest failures that open the breaker.
	Threshold int
}

func addBreakerFlags(f *pflag.FlagSet, b *BreakerFlags) {
	f.IntVar(&b.Window, "breaker-window", retry.DefaultWindow, "recent attempts per key the circuit breaker judges")
	f.DurationVar(&b.WindowTime, "breaker-window-time", retry.DefaultWindowTime, "how long an attempt's outcome stays in the breaker's window")
	f.Float64Var(&b.FailureRate, "breaker-failure-rate", retry.DefaultFailureRate, "share of failed attempts in the window that opens the breaker")
	f.IntVar(&b.MinAttempts, "breaker-min-attempts", retry.DefaultMinAttempts, "fewest attempts in the window before the breaker may open")
	f.IntVar(&b.Probes, "breaker-probes", retry.DefaultProbes, "attempts a half-open breaker lets through; a majority decides")
	f.DurationVar(&b.Cooldown, "breaker-cooldown", retry.DefaultCooldown, "longest hold of an open breaker (the first is 1s, doubling per consecutive opening)")
	f.IntVar(&b.Threshold, "breaker-threshold", 0, "deprecated: sets --breaker-min-attempts")
	f.MarkDeprecated("breaker-threshold", "the breaker now opens on a failure rate over a window (--breaker-window, --breaker-failure-rate); --breaker-threshold N sets --breaker-min-attempts N")
}

// validate rejects values the breaker would silently replace by defaults.
func (b BreakerFlags) validate() error {
	switch {
	case !(b.FailureRate > 0 && b.FailureRate <= 1):
		return usagef("--breaker-failure-rate must be in (0, 1], got %v", b.FailureRate)
	case b.Window <= 0 || b.MinAttempts <= 0 || b.Probes <= 0 || b.Threshold < 0:
		return usagef("--breaker-window, --breaker-min-attempts and --breaker-probes must be positive")
	case b.WindowTime <= 0 || b.Cooldown <= 0:
		return usagef("--breaker-window-time and --breaker-cooldown must be positive")
	}
	return nil
}

// config is the breaker configuration the flags ask for.
func (b BreakerFlags) config(maxOutage time.Duration) retry.BreakerConfig {
	c := retry.BreakerConfig{Window: b.Window, WindowTime: b.WindowTime, MinAttempts: b.MinAttempts, FailureRate: b.FailureRate,
		Cooldown: b.Cooldown, Probes: b.Probes, MaxOutage: maxOutage}
	if b.Threshold > 0 {
		c.MinAttempts = b.Threshold
	}
	return c
}

// newGuard builds the answer guard from --require-json, --json-schema and
// --min-chars.
func newGuard(o *BatchOptions) (retry.Guard, error) {
	g := retry.Guard{RequireJSON: o.RequireJSON, MinChars: o.MinChars}
	if o.JSONSchema != "" {
		s, err := retry.LoadSchema(o.JSONSchema)
		if err != nil {
			return g, &usageError{err}
		}
		g.Schema = s
	}
	return g, nil
}

// progressMode: nothing with --quiet, a bar on a terminal, log lines otherwise.
func progressMode(io *IO, o *BatchOptions) runner.ProgressMode {
	switch {
	case o.Quiet:
		return runner.ProgressOff
	case io.ErrIsTerminal:
		return runner.ProgressBar
	}
	return runner.ProgressLog
}
