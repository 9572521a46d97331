package cmd

import (
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/llmrun/llmrun/job"
	"github.com/llmrun/llmrun/limiter"
	"github.com/llmrun/llmrun/metrics"
	"github.com/llmrun/llmrun/providers"
	"github.com/llmrun/llmrun/providers/registry"
	"github.com/llmrun/llmrun/runner"
	"github.com/llmrun/llmrun/runner/retry"
)

// BatchOptions are the batch command's options, filled from its flags.
type BatchOptions = job.BatchOptions

func newBatchCmd(io *IO, runF func(*BatchOptions) error) *cobra.Command {
	o := &BatchOptions{}
	c := &cobra.Command{
		Use:   "batch INPUT.jsonl",
		Short: "Run every request of a JSONL file, resuming where an earlier run stopped",
		Long: `Run every request of INPUT.jsonl and write one result line per request to the output file
(OpenAI batch output format) and one line per finally failed request to the errors file.
Rerunning the same command resumes: requests the output already answers are skipped, and requests
whose line (or whose settings: provider, base URL, model, system, max tokens) changed are sent again,
their new answer replacing the old. Regenerate the input and run the same command.

Input lines may be OpenAI batch lines {"custom_id","method","url","body"}, Anthropic batch lines
{"custom_id","params"}, Gemini batch lines {"key","request"} or simple lines
{"custom_id"?,"prompt","system"?,"model"?,"max_tokens"?}.

Keys come from OPENAI_API_KEY / ANTHROPIC_API_KEY / AZURE_OPENAI_API_KEY / GOOGLE_API_KEY or
GEMINI_API_KEY / GROQ_API_KEY, endpoints from OPENAI_BASE_URL / ANTHROPIC_BASE_URL /
AZURE_OPENAI_ENDPOINT / GOOGLE_GEMINI_BASE_URL / GROQ_BASE_URL (or --base-url). --provider mock runs
against a built-in mock server.

` + exitCodesHelp,
		Args:        cobra.ExactArgs(1),
		Annotations: map[string]string{configurable: "true"},
		RunE: func(c *cobra.Command, args []string) error {
			o.Input = args[0]
			if cfg := configFrom(c.Context()); cfg != nil {
				o.Endpoints, o.Pools, o.Models.Map = cfg.endpoints, cfg.pools, cfg.modelMap
			}
			if runF != nil {
				return runF(o)
			}
			o.ExitCode = ExitCode
			sum, err := job.Batch(c.Context(), io, *o)
			return finish(io, o.Summary, sum, err)
		},
	}
	f := c.Flags()
	f.StringVarP(&o.Output, "output", "o", "", "output file (default: INPUT with .jsonl replaced by .out.jsonl)")
	f.StringVar(&o.Errors, "errors", "", "errors file (default: beside the output, OUTPUT with .out.jsonl replaced by .errors.jsonl)")
	f.StringVar(&o.Summary, "summary", "", "also write the run summary as JSON to this file")
	f.StringVar(&o.Provider, "provider", "", strings.Join(registry.Names(), ", ")+" (default: from the input's shape, then from which API key is set)")
	f.StringVar(&o.BaseURL, "base-url", "", "API base URL (default: OPENAI_BASE_URL / ANTHROPIC_BASE_URL / AZURE_OPENAI_ENDPOINT, else the provider's)")
	f.StringVar(&o.Model, "model", "", "model for lines that name none (with --override-model, for every line)")
	f.BoolVar(&o.Models.Override, "override-model", false, "send every line as --model, whatever model it names (e.g. OpenAI lines to --provider gemini)")
	f.StringVar(&o.System, "system", "", "system prompt for simple lines that give none")
	f.IntVar(&o.MaxTokens, "max-tokens", 0, "output token cap for lines that set none (Anthropic default 1024)")
	f.BoolVar(&o.Stream, "stream", true, "stream responses (the output is the same either way)")
	f.StringSliceVar(&o.Fallback, "fallback", nil, "fallback chain provider:model[,provider:model...] tried when the primary gives up")
	f.StringArrayVarP(&o.Headers, "header", "H", nil, "extra request header 'Name: value' (repeatable), e.g. for a gateway's auth; never logged")
	addProviderFlags(f, o)
	addLimitFlags(f, o)
	addRetryFlags(f, o)
	f.StringVar(&o.Fsync, "fsync", "batch", "durability: batch (group commit), always, never")
	f.BoolVar(&o.NoRetryFailed, "no-retry-failed", false, "on rerun, keep earlier failures failed instead of retrying them")
	f.BoolVar(&o.Force, "force", false, "no longer needed: a changed input resends its changed requests")
	f.MarkDeprecated("force", "a rerun sends again exactly the requests that changed; --force does nothing")
	f.BoolVar(&o.Prune, "prune", false, "drop the answers of ids no longer in the input (after a complete run over it)")
	f.DurationVar(&o.Grace, "grace", 30*time.Second, "after the first interrupt, how long in-flight requests may finish")
	f.BoolVarP(&o.Quiet, "quiet", "q", false, "no progress output (the final summary line is still printed)")
	f.Uint64Var(&o.Seed, "seed", 0, "seed for retry jitter (0: random)")
	f.DurationVar(&o.ProgressInterval, "progress-interval", 5*time.Second, "interval of plain progress lines when stderr is not a terminal")
	addMetricsFlags(f, &o.Metrics)
	addOfflineFlags(f, &o.Offline)
	addCostFlags(f, &o.Cost)
	addCacheFlags(f, &o.Cache)
	addSourceFlags(f, &o.Source)
	return c
}

// addLimitFlags adds the flags of the budget: the provider's limits and
// how they are shared.
func addLimitFlags(f *pflag.FlagSet, o *BatchOptions) {
	f.IntVar(&o.Concurrency, "concurrency", 8, "most requests in flight at once")
	f.Float64Var(&o.RPM, "rpm", 0, "requests per minute (0: learn from headers)")
	f.Float64Var(&o.ITPM, "itpm", 0, "input tokens per minute")
	f.Float64Var(&o.OTPM, "otpm", 0, "output tokens per minute")
	f.Float64Var(&o.TPM, "tpm", 0, "combined tokens per minute (OpenAI-style TPM)")
	f.Float64Var(&o.Daily.RPD, "rpd", 0, "requests per day, counted per calendar day (Gemini: of Pacific time); the run stops at it (exit 3) and its rerun carries on")
	f.Float64Var(&o.Daily.TPD, "tpd", 0, "tokens (input and output) per day, as --rpd")
	f.BoolVar(&o.Daily.WaitDaily, "wait-daily", false, "when a daily limit is reached (--rpd, --tpd or the provider's), sleep until it resets instead of stopping")
	f.DurationVar(&o.Burst, "burst", time.Second, "how much refill a bucket may hold (providers enforce per-minute limits in short windows)")
	f.Float64Var(&o.Headroom, "headroom", 1.0, "fraction of the limits to use")
	f.DurationVar(&o.Skew, "skew", limiter.DefaultSkew, "how long after sending the provider may count a request; that much refill is kept in reserve")
	f.DurationVar(&o.WarmUp, "warmup", limiter.DefaultWarmUp, "start each model whose request limit is over about 1,300 RPM paced from a few requests a second, growing 1.9x per 5s, for at most this long (acceleration limits refuse a sharp start; 0: start with a full bucket)")
	f.DurationVar(&o.MaxPause, "max-pause", limiter.DefaultMaxPause, "longest wait a server's retry-after may impose, on one request or (after a 429) on the whole key")
	f.StringVar(&o.Pool, "pool", "", "share one budget under this name instead of per provider+model")
	f.StringVar(&o.Redis, "redis", "", "redis://[user:pass@]host:port/db: share the budget (buckets, pauses, --concurrency, the limits learned from headers, admission by --priority) with every llmrun using this Redis")
	f.Var(&priorityValue{&o.Priority}, "priority", "this run's priority among the requests waiting for the same budget (with --redis, of every process): an integer from -1000 to 1000, higher first, or high (1), normal (0), low (-1); a line's \"priority\" field overrides it")
	f.DurationVar(&o.PriorityAging, "priority-aging", limiter.DefaultAging, "a waiting request rises one priority per this much waiting, so low-priority work always progresses (0: strictly by priority)")
	f.StringVar(&o.Shard, "shard", "", "I/N: run only shard I of N of the input (by custom_id hash), for N machines sharing one file; outputs default to INPUT.shard-I-of-N.out.jsonl")
	f.IntVar(&o.Shards, "shards", 0, "N: run one shard of N, the one --shard-index names, else $JOB_COMPLETION_INDEX (a Kubernetes Indexed Job's); --shards N --shard-index I is --shard I+1/N")
	f.StringVar(&o.ShardIndex, "shard-index", "", "0-based shard for --shards (default: $JOB_COMPLETION_INDEX)")
}

// priorityValue is --priority: an integer, or high, normal or low.
type priorityValue struct{ p *int }

func (v *priorityValue) String() string {
	if v.p == nil {
		return "0"
	}
	return strconv.Itoa(*v.p)
}

func (v *priorityValue) Set(s string) error {
	p, err := limiter.ParsePriority(s)
	if err != nil {
		return err
	}
	*v.p = p
	return nil
}

func (v *priorityValue) Type() string { return "priority" }

// addRetryFlags adds the flags of the retry policy, timeouts, breaker and
// answer guard.
func addRetryFlags(f *pflag.FlagSet, o *BatchOptions) {
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
	f.DurationVar(&o.SetupDeadline, "setup-deadline", runner.DefaultSetupDeadline, "stop (exit 3) when nothing has succeeded on a model since the run started and 5+ attempts failed the same way (e.g. 500) for this long: a setup problem, not an outage; 0: hold for --max-outage")
	f.DurationVar(&o.ConnectDeadline, "connect-deadline", runner.DefaultConnectDeadline, "stop (exit 3) when the server was never reached (refused, no such host, TLS) for this long since the first attempt; 0: hold for --max-outage")
	f.IntVar(&o.FailFast, "fail-fast", runner.DefaultFailFast, "stop (exit 3) when the run's first N attempts all fail the same way, non-retryably (a wrong base URL or model); 0: off")
	f.StringVar(&o.MaxFailures, "max-failures", "", "stop (exit 3) once more than N requests failed, or more than P% of the answered ones (judged from 20 on): N or P%")
	f.BoolVar(&o.RequireJSON, "require-json", false, "accept only answers whose content parses as JSON")
	f.StringVar(&o.JSONSchema, "json-schema", "", "accept only answers valid against this JSON Schema file")
	f.IntVar(&o.MinChars, "min-chars", 0, "accept only answers at least this long")
}

func addBreakerFlags(f *pflag.FlagSet, b *job.BreakerOptions) {
	f.IntVar(&b.Window, "breaker-window", retry.DefaultWindow, "recent attempts per key the circuit breaker judges")
	f.DurationVar(&b.WindowTime, "breaker-window-time", retry.DefaultWindowTime, "how long an attempt's outcome stays in the breaker's window")
	f.Float64Var(&b.FailureRate, "breaker-failure-rate", retry.DefaultFailureRate, "share of failed attempts in the window that opens the breaker")
	f.IntVar(&b.MinAttempts, "breaker-min-attempts", retry.DefaultMinAttempts, "fewest attempts in the window before the breaker may open")
	f.IntVar(&b.Probes, "breaker-probes", retry.DefaultProbes, "attempts a half-open breaker lets through; a majority decides")
	f.DurationVar(&b.Cooldown, "breaker-cooldown", retry.DefaultCooldown, "longest hold of an open breaker (the first is 1s, doubling per consecutive opening)")
	f.IntVar(&b.Threshold, "breaker-threshold", 0, "deprecated: sets --breaker-min-attempts")
	f.MarkDeprecated("breaker-threshold", "the breaker now opens on a failure rate over a window (--breaker-window, --breaker-failure-rate); --breaker-threshold N sets --breaker-min-attempts N")
}

// addMetricsFlags adds the flags that export the run's metrics.
func addMetricsFlags(f *pflag.FlagSet, m *job.MetricsOptions) {
	f.StringVar(&m.Addr, "metrics-addr", "", "serve Prometheus metrics on this address (:9090) at /metrics while the run lives")
	f.StringVar(&m.File, "metrics-file", "", "write Prometheus metrics to this node_exporter textfile (atomically, every --metrics-interval and at the end)")
	f.StringVar(&m.Pushgateway, "pushgateway", "", "push Prometheus metrics to this Pushgateway URL (every --metrics-interval and at the end)")
	f.DurationVar(&m.Interval, "metrics-interval", metrics.DefaultInterval, "how often --metrics-file and --pushgateway are updated")
	f.StringSliceVar(&m.Tags, "metrics-tag", nil, "label the per-model Prometheus metrics with this key of the lines' tags (repeatable; opt-in to bound the series)")
	f.BoolVar(&m.OTelContent, "otel-content", false, "record prompts and answers on the OpenTelemetry spans (off: spans never carry them)")
}
