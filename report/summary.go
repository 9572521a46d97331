package report

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/llmrun/llmrun/internal/outfile"
	"github.com/llmrun/llmrun/limiter"
	"github.com/llmrun/llmrun/pricing"
)

// Summary is the end-of-run report: printed as one line on stderr and, with
// --summary, written as JSON.
type Summary struct {
	Requests  int64 `json:"requests"`
	Skipped   int64 `json:"skipped"`
	Succeeded int64 `json:"succeeded"`
	Failed    int64 `json:"failed"`
	Pending   int64 `json:"pending"`
	Attempts  int64 `json:"attempts"`
	Retries   int64 `json:"retries"`
	// PacedRetries are the retries after a 429 or an overload: paced by
	// the key's admission control, they do not count toward
	// --max-attempts or the retry budget.
	PacedRetries int64   `json:"paced_retries"`
	RateLimited  int64   `json:"rate_limited"`
	InputTokens  int64   `json:"input_tokens"`
	OutputTokens int64   `json:"output_tokens"`
	WallSeconds  float64 `json:"wall_seconds"`
	ExitCode     int     `json:"exit_code"`
	// RequestSeconds is the time requests took, summed over the requests
	// finished in this run (each from its first admission to its line):
	// the whole that budget waits are a share of.
	RequestSeconds float64 `json:"request_seconds"`
	// ErrorsFile is where the failed requests are, OutputFile the answers
	// (set by the caller).
	ErrorsFile string `json:"errors_file,omitempty"`
	OutputFile string `json:"output_file,omitempty"`

	AttemptsPerRequest float64          `json:"attempts_per_request"`
	RetriesByCause     map[string]int64 `json:"retries_by_cause"`
	// FailuresByCause counts the failed requests by what failed them
	// (providers.Cause: the HTTP status and message, connection refused…).
	FailuresByCause map[string]int64 `json:"failures_by_cause,omitempty"`
	FellBack        int64            `json:"fell_back"`
	FallbackRate    float64          `json:"fallback_rate"`
	BreakerOpenings int64            `json:"breaker_openings"`
	HeldSeconds     float64          `json:"held_seconds"`
	Limits          []KeyLimits      `json:"limits,omitempty"`
	// Daily are the keys' days: what they used and their per-day limits.
	Daily   []DayLimits `json:"daily,omitempty"`
	Aborted string      `json:"aborted,omitempty"`

	// CostUSD is what this run's answers cost, from the usage the
	// providers reported, at batch prices for batch results; answers of
	// models without a price are not in it (Unpriced counts them).
	CostUSD float64 `json:"cost_usd"`
	// Costs is CostUSD by provider and model, with the cache-hit ratio.
	Costs    []ModelCost `json:"costs"`
	Unpriced int64       `json:"unpriced,omitempty"`
	// PricesDate is the date of the price snapshot the costs use.
	PricesDate string `json:"prices_date,omitempty"`
	// RecordedCostUSD is the spend recorded in the output, earlier runs
	// included, and MaxCostUSD the --max-cost it is held under (only with
	// --max-cost).
	RecordedCostUSD *float64 `json:"recorded_cost_usd,omitempty"`
	MaxCostUSD      float64  `json:"max_cost_usd,omitempty"`
	// MaxCostWaitSeconds is the time requests waited for room in
	// --max-cost (answers in flight to settle), summed over requests as
	// RequestSeconds is.
	MaxCostWaitSeconds float64 `json:"max_cost_wait_seconds,omitempty"`
	// DailyWaitSeconds is the time requests waited for a key's daily
	// limit (its reset with --wait-daily), summed as RequestSeconds is.
	DailyWaitSeconds float64 `json:"daily_wait_seconds,omitempty"`
	// CacheHits are the succeeded requests answered from the cross-run
	// cache (--cache), sent to no provider; CacheSavedUSD is what they
	// cost when they were paid for. CacheMisses were looked up and sent;
	// CachePuts are this run's answers it stored.
	CacheHits     int64   `json:"cache_hits,omitempty"`
	CacheMisses   int64   `json:"cache_misses,omitempty"`
	CachePuts     int64   `json:"cache_puts,omitempty"`
	CacheSavedUSD float64 `json:"cache_saved_usd,omitempty"`
	// Tags break this run's requests down by their lines' tags: key,
	// then value (absent when no line had tags).
	Tags map[string]map[string]TagUsage `json:"tags,omitempty"`
}

// Summary is what the counters alone say about a run after wall time; the
// live run adds its keys' limits, days, breakers and tags.
func (c *Counters) Summary(wall time.Duration) *Summary {
	s := &Summary{
		Requests:        c.Total.Load(),
		Skipped:         c.Skipped.Load(),
		Succeeded:       c.Succeeded.Load(),
		Failed:          c.Failed.Load(),
		Attempts:        c.Attempts.Load(),
		Retries:         c.Retries.Load(),
		RateLimited:     c.RateLimited.Load(),
		InputTokens:     c.InputTokens.Load(),
		OutputTokens:    c.OutputTokens.Load(),
		WallSeconds:     wall.Seconds(),
		RequestSeconds:  time.Duration(c.RequestNanos.Load()).Seconds(),
		RetriesByCause:  c.RetriesByCause(),
		FailuresByCause: c.FailuresByCause(),
		FellBack:        c.FellBack.Load(),
		PacedRetries:    c.PacedRetries.Load(),
		CacheHits:       c.CacheHits.Load(),
		CacheMisses:     c.CacheMisses.Load(),
		CachePuts:       c.CachePuts.Load(),
		CacheSavedUSD:   c.SavedUSD(),

		MaxCostWaitSeconds: time.Duration(c.SpendWaitNanos.Load()).Seconds(),
		DailyWaitSeconds:   time.Duration(c.DayWaitNanos.Load()).Seconds(),
	}
	s.Pending = max(s.Requests-s.Skipped-s.Succeeded-s.Failed, 0)
	var total pricing.Cost
	s.Costs, total, _ = c.costs.summary()
	s.CostUSD = total.USD()
	for _, m := range s.Costs {
		s.Unpriced += m.Unpriced
	}
	if answered := s.Succeeded + s.Failed; answered > 0 {
		s.AttemptsPerRequest = float64(s.Attempts) / float64(answered)
		s.FallbackRate = float64(s.FellBack) / float64(answered)
	}
	return s
}

// KeyLimits is one budget key's part of the summary: the limits in force
// (learned ones included) and where the run waited.
type KeyLimits struct {
	Key           string             `json:"key"`
	Learned       bool               `json:"learned"`
	RPM           float64            `json:"rpm"`
	ITPM          float64            `json:"itpm"`
	OTPM          float64            `json:"otpm"`
	TPM           float64            `json:"tpm"`
	Concurrency   int                `json:"concurrency"`
	WaitSeconds   float64            `json:"wait_seconds"`
	WaitBySeconds map[string]float64 `json:"wait_by_seconds"`
	BoundBy       string             `json:"bound_by"`
	RateLimited   int64              `json:"rate_limited"`
	// PauseClamped counts retry-after hints longer than --max-pause, cut to it.
	PauseClamped int64 `json:"pause_hints_clamped,omitempty"`
	// RPMFrom429s and TPMFrom429s are the request and combined-token rates
	// per minute learned from 429s alone, where no rate-limit headers
	// describe the key (0: none); RPM and TPM include them.
	RPMFrom429s float64 `json:"rpm_from_429s,omitempty"`
	TPMFrom429s float64 `json:"tpm_from_429s,omitempty"`
	Overloaded  int64   `json:"overloaded,omitempty"`
}

// KeyLimitsOf is the summary's part for the budget keys' stats.
func KeyLimitsOf(stats []limiter.KeyStats) []KeyLimits {
	out := make([]KeyLimits, 0, len(stats))
	for _, st := range stats {
		kl := KeyLimits{
			Key: st.Key, Learned: st.Learned,
			RPM: st.Effective.RPM, ITPM: st.Effective.ITPM, OTPM: st.Effective.OTPM, TPM: st.Effective.TPM,
			Concurrency: st.Effective.Concurrency,
			WaitSeconds: st.Wait.Seconds(), WaitBySeconds: map[string]float64{},
			RateLimited: st.RateLimited, PauseClamped: st.PauseClamped,
			RPMFrom429s: st.RefusalRPM, TPMFrom429s: st.RefusalTPM, Overloaded: st.Overloaded,
		}
		for d, w := range st.WaitBy {
			if w > 0 && limiter.Dimension(d) != limiter.DimNone {
				kl.WaitBySeconds[limiter.Dimension(d).String()] = w.Seconds()
			}
		}
		if st.Binding != limiter.DimNone {
			kl.BoundBy = st.Binding.String()
		}
		out = append(out, kl)
	}
	return out
}

// retryString details the retries, if any: how many were paced by the key
// (after 429s or overloads) and how many attempts were rate-limited.
func (s *Summary) retryString() string {
	if s.Retries == 0 && s.RateLimited == 0 {
		return ""
	}
	return fmt.Sprintf(" (%s, %d of them after 429s or overloads; %d rate-limited)", plural(s.Retries, "retry", "retries"), s.PacedRetries, s.RateLimited)
}

// OneLine is the summary as the single line printed at the end of every run.
func (s *Summary) OneLine() string { return "llmrun: " + s.Text() }

// Text is the one-line summary without the "llmrun: " a log line adds.
func (s *Summary) Text() string {
	line := fmt.Sprintf("%s: %d succeeded, %d failed, %d skipped, %d pending; %s%s; %d in / %d out tokens; %.1fs",
		plural(s.Requests, "request", "requests"), s.Succeeded, s.Failed, s.Skipped, s.Pending,
		plural(s.Attempts, "attempt", "attempts"), s.retryString(), s.InputTokens, s.OutputTokens, s.WallSeconds)
	if s.FellBack > 0 {
		line += fmt.Sprintf("; %d fell back", s.FellBack)
	}
	if s.CacheHits+s.CacheMisses > 0 {
		line += fmt.Sprintf("; %d from cache (saved $%.4f)", s.CacheHits, s.CacheSavedUSD)
	}
	line += s.causesString()
	if s.Failed > 0 && s.ErrorsFile != "" {
		line += "; failures in " + s.ErrorsFile
	}
	line += s.costString()
	line += s.waitString()
	for _, k := range s.Limits {
		if k.Learned {
			line += fmt.Sprintf("; learned limits: %s", learnedString(k))
		}
		if k.RPMFrom429s > 0 || k.TPMFrom429s > 0 {
			line += fmt.Sprintf("; learned from 429s: rpm %.0f, tpm %.0f", k.RPMFrom429s, k.TPMFrom429s)
		}
		if k.PauseClamped > 0 {
			line += fmt.Sprintf("; %s cut to --max-pause", plural(k.PauseClamped, "retry-after hint", "retry-after hints"))
		}
	}
	if s.BreakerOpenings > 0 {
		line += fmt.Sprintf("; breaker opened %s, held %.1fs", times(s.BreakerOpenings), s.HeldSeconds)
	}
	return line
}

// costString is the one-line summary's part about money.
func (s *Summary) costString() string {
	if s.PricesDate == "" {
		return ""
	}
	line := fmt.Sprintf("; cost %v", pricing.FromUSD(s.CostUSD))
	for _, m := range s.Costs {
		if m.CacheReadTokens > 0 {
			line += fmt.Sprintf(", %s cache hits %.0f%%", m.Model, 100*m.CacheHitRatio)
		}
	}
	line += " (prices of " + s.PricesDate
	if s.Unpriced > 0 {
		line += fmt.Sprintf("; %d answers of models without a price not counted", s.Unpriced)
	}
	line += ")"
	if s.RecordedCostUSD != nil {
		line += fmt.Sprintf("; %v recorded in this output of --max-cost %v", pricing.FromUSD(*s.RecordedCostUSD), pricing.FromUSD(s.MaxCostUSD))
	}
	return line
}

// WriteFile writes the summary as indented JSON, atomically where the path
// is a regular file (outfile: a symlink's target replaced, a FIFO or device
// written in place). A new file is owner-only, as the output, errors and
// state files beside it are (it names models, tags and error causes); one
// that exists keeps its mode, so a chmod stands.
func (s *Summary) WriteFile(path string) error {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	return outfile.WriteFile(path, append(b, '\n'), 0o600)
}

func learnedString(k KeyLimits) string {
	var parts []string
	for _, p := range []struct {
		name string
		v    float64
	}{{"rpm", k.RPM}, {"itpm", k.ITPM}, {"otpm", k.OTPM}, {"tpm", k.TPM}} {
		if p.v > 0 {
			parts = append(parts, p.name+" "+strconv.FormatFloat(p.v, 'f', 0, 64))
		}
	}
	return strings.Join(parts, ", ")
}

// causeCount is one cause of failed requests and how many it failed.
type causeCount struct {
	cause string
	n     int64
}

// causesByCount are the failures by cause, commonest first (ties by name).
func (s *Summary) causesByCount() []causeCount {
	all := make([]causeCount, 0, len(s.FailuresByCause))
	for c, n := range s.FailuresByCause {
		all = append(all, causeCount{c, n})
	}
	slices.SortFunc(all, func(a, b causeCount) int { return cmp.Or(cmp.Compare(b.n, a.n), strings.Compare(a.cause, b.cause)) })
	return all
}

// causesString names the commonest causes of the failed requests.
func (s *Summary) causesString() string {
	all := s.causesByCount()
	if len(all) == 0 {
		return ""
	}
	var parts []string
	for _, e := range all[:min(len(all), 2)] {
		parts = append(parts, fmt.Sprintf("%s (%d)", e.cause, e.n))
	}
	if len(all) > 2 {
		parts = append(parts, fmt.Sprintf("%d other causes", len(all)-2))
	}
	return "; failed: " + strings.Join(parts, ", ")
}
