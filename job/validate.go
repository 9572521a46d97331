package job

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/llmrun/llmrun/ending"
	"github.com/llmrun/llmrun/internal/outfile"
	"github.com/llmrun/llmrun/limiter"
)

// validate range-checks the numeric options before anything is opened or
// sent: a negative rate, count or timeout would otherwise be read as
// "none" or make the run misbehave long after it started.
func (o *BatchOptions) validate() error {
	type check struct {
		ok   bool
		flag string
		want string
		got  any
	}
	positive, nonNegative := "must be positive", "must not be negative"
	if err := checkLimits("", Limits{RPM: o.RPM, ITPM: o.ITPM, OTPM: o.OTPM, TPM: o.TPM, Concurrency: o.Concurrency}, true); err != nil {
		return err
	}
	checks := []check{
		{o.MaxTokens >= 0, "--max-tokens", nonNegative, o.MaxTokens},
		{o.Daily.RPD >= 0, "--rpd", nonNegative, o.Daily.RPD},
		{o.Daily.TPD >= 0, "--tpd", nonNegative, o.Daily.TPD},
		{o.Burst > 0, "--burst", positive, o.Burst},
		{o.Headroom > 0 && o.Headroom <= 1, "--headroom", "must be in (0, 1]", o.Headroom},
		{o.RetryBudget >= 0 && !math.IsInf(o.RetryBudget, 1), "--retry-budget", nonNegative + " and finite", o.RetryBudget},
		{o.Cost.MaxCost >= 0 && !math.IsInf(o.Cost.MaxCost, 1), "--max-cost", nonNegative + " and finite", o.Cost.MaxCost},
		{o.MaxAttempts <= maxAttempts, "--max-attempts", fmt.Sprintf("must be at most %d", maxAttempts), o.MaxAttempts},
		{o.Skew >= 0, "--skew", nonNegative, o.Skew},
		{o.WarmUp >= 0, "--warmup", nonNegative + " (0: no warm-up)", o.WarmUp},
		{o.MaxPause > 0, "--max-pause", positive, o.MaxPause},
		{o.MaxAttempts > 0, "--max-attempts", "must be at least 1", o.MaxAttempts},
		{o.BackoffBase > 0, "--backoff-base", positive, o.BackoffBase},
		{o.BackoffMax >= o.BackoffBase, "--backoff-max", "must be at least --backoff-base", o.BackoffMax},
		{o.RequestTimeout > 0, "--request-timeout", positive, o.RequestTimeout},
		{o.FirstByte >= 0, "--first-byte-timeout", nonNegative + " (0: no bound)", o.FirstByte},
		{o.Idle >= 0, "--idle-timeout", nonNegative + " (0: no bound)", o.Idle},
		{o.MaxResponseBytes >= 0, "--max-response-bytes", nonNegative, o.MaxResponseBytes},
		{o.MaxOutage > 0, "--max-outage", positive, o.MaxOutage},
		{o.MinChars >= 0, "--min-chars", nonNegative, o.MinChars},
		{o.Grace >= 0, "--grace", nonNegative, o.Grace},
		{o.ProgressInterval > 0, "--progress-interval", positive, o.ProgressInterval},
		{o.Offline.Threshold >= 0, "--batch-threshold", nonNegative, o.Offline.Threshold},
		{o.Offline.PollInterval > 0, "--poll-interval", positive, o.Offline.PollInterval},
		{o.Offline.PollMax >= o.Offline.PollInterval, "--poll-max", "must be at least --poll-interval", o.Offline.PollMax},
		{o.Offline.MaxItems >= 0, "--batch-max-items", nonNegative, o.Offline.MaxItems},
		{o.Offline.MaxBytes >= 0, "--batch-max-bytes", nonNegative, o.Offline.MaxBytes},
		{o.SetupDeadline >= 0, "--setup-deadline", nonNegative + " (0: hold for --max-outage)", o.SetupDeadline},
		{o.ConnectDeadline >= 0, "--connect-deadline", nonNegative + " (0: hold for --max-outage)", o.ConnectDeadline},
		{o.FailFast >= 0, "--fail-fast", nonNegative + " (0: off)", o.FailFast},
		{o.Priority >= limiter.MinPriority && o.Priority <= limiter.MaxPriority, "--priority", fmt.Sprintf("must be from %d to %d", limiter.MinPriority, limiter.MaxPriority), o.Priority},
		{o.PriorityAging >= 0, "--priority-aging", nonNegative + " (0: no aging)", o.PriorityAging},
	}
	for _, c := range checks {
		if !c.ok {
			return usagef("%s %s, got %v", c.flag, c.want, c.got)
		}
	}
	if err := o.checkConfigLimits(); err != nil {
		return err
	}
	for _, hop := range o.Fallback {
		name, _, _ := strings.Cut(hop, ":")
		if _, ok := o.endpoint(name); ok {
			continue
		}
		if err := checkHop(hop); err != nil {
			return err
		}
	}
	if _, err := ParseMaxFailures(o.MaxFailures); err != nil {
		return err
	}
	return o.Breaker.validate()
}

// MaxConcurrency bounds --concurrency (and a config file's concurrency):
// far above what any provider allows one account, and what the run sizes
// its queues by.
const MaxConcurrency = 100_000

// maxAttempts bounds --max-attempts: beyond it the backoff's doubling says
// nothing new.
const maxAttempts = 1000

// checkLimits is the one validation of a budget's numbers, whether flags
// (where "": named --rpm, …) or a config file's pool or endpoint (where is
// its file:line): rates finite and not negative, concurrency within bounds
// (0 allowed in the config file: the flag's value).
func checkLimits(where string, l Limits, flags bool) error {
	name := func(n string) string {
		if flags {
			return "--" + n
		}
		return where + ": " + n
	}
	for _, r := range []struct {
		n string
		v float64
	}{{"rpm", l.RPM}, {"itpm", l.ITPM}, {"otpm", l.OTPM}, {"tpm", l.TPM}} {
		if !(r.v >= 0) || math.IsInf(r.v, 1) {
			return usagef("%s must be a rate per minute, not negative (0.5: one every 2 minutes), got %v", name(r.n), r.v)
		}
	}
	lo := 0
	if flags {
		lo = 1
	}
	if l.Concurrency < lo || l.Concurrency > MaxConcurrency {
		return usagef("%s must be from %d to %d, got %d", name("concurrency"), lo, MaxConcurrency, l.Concurrency)
	}
	return nil
}

// checkConfigLimits applies checkLimits to the config file's pools and
// endpoints, in a stable order.
func (o *BatchOptions) checkConfigLimits() error {
	var all []Limits
	for _, name := range slices.Sorted(maps.Keys(o.Pools)) {
		all = append(all, o.Pools[name])
	}
	for _, name := range slices.Sorted(maps.Keys(o.Endpoints)) {
		if l := o.Endpoints[name].Limits; l != nil {
			all = append(all, *l)
		}
	}
	for _, l := range all {
		if err := checkLimits(l.Where, l, false); err != nil {
			return err
		}
	}
	return nil
}

// ParseMaxFailures parses --max-failures: a count ("100") or a
// percentage of the answered requests ("5%"); "" is none.
func ParseMaxFailures(s string) (ending.MaxFailures, error) {
	m := ending.MaxFailures{Flag: s}
	if s == "" {
		return m, nil
	}
	bad := usagef("--max-failures %q: want a count of failed requests (100) or a share of the answered ones (5%%)", s)
	if p, ok := strings.CutSuffix(s, "%"); ok {
		v, err := strconv.ParseFloat(p, 64)
		if err != nil || !(v > 0 && v < 100) {
			return m, bad
		}
		m.On, m.Ratio = true, v/100
		return m, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		return m, bad
	}
	m.On, m.Count = true, n
	return m, nil
}

// checkHop checks the form of one --fallback hop before the registry is
// asked: a bare model name is the usual slip.
func checkHop(hop string) error {
	name, model, ok := strings.Cut(hop, ":")
	if !ok || name == "" || model == "" {
		return usagef("--fallback %q: want provider:model, such as openai:gpt-4o-mini or anthropic:claude-haiku-4-5 (several separated by commas)", hop)
	}
	return nil
}

// checkWritable checks, before anything is sent, that each path can be
// written: its directory exists and takes new files, and the file, if it
// exists, is not read-only. A summary that cannot be written would
// otherwise be found out after every request has been paid for.
// flagPaths alternate a flag's name and its path. A directory several of
// them share is probed once.
func checkWritable(flagPaths ...string) error {
	c := outfile.NewChecker()
	for i := 0; i+1 < len(flagPaths); i += 2 {
		flag, path := flagPaths[i], flagPaths[i+1]
		if path == "" {
			continue
		}
		if err := c.Check(path); err != nil {
			return usagef("%s %s: %v", flag, path, err)
		}
	}
	return nil
}

// PlainPathError is err's reason without the operation and path it
// repeats (the caller names the path).
func PlainPathError(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
