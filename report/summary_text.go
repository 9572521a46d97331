package report

import (
	"cmp"
	"fmt"
	"log/slog"
	"slices"

	"github.com/llmrun/llmrun/limiter"
)

// dimensionWords names what requests waited for, as the summary says it.
var dimensionWords = map[string]string{
	limiter.DimRequests.String():    "RPM",
	limiter.DimInput.String():       "input TPM",
	limiter.DimOutput.String():      "output TPM",
	limiter.DimTokens.String():      "TPM",
	limiter.DimConcurrency.String(): "a concurrency slot",
	limiter.DimPause.String():       "a 429 pause",
	MaxCostWait:                     "--max-cost room",
	DailyWait:                       "the daily limit",
}

// MaxCostWait names, beside the budget's dimensions, the wait for room in
// --max-cost (answers in flight to settle).
const MaxCostWait = "max_cost"

// DailyWait names, beside the budget's dimensions, the wait for a key's
// daily limit (its reset with --wait-daily).
const DailyWait = "daily"

// minWaitWorthSaying is the summed wait, in seconds, below which the
// summary says nothing of waiting.
const minWaitWorthSaying = 1.0

// waitString says what share of the requests' time went to waiting for
// the budget, and for what: "42% of request time waiting for input TPM".
// The waits are summed over every request, as RequestSeconds is, so the
// share is a share, whatever the concurrency (a sum of waits set against
// the wall time would read 2h in a 72s run). Waits under a second in all
// are left unsaid: a run of 20 short requests whose first went alone while
// the limits were learned spent "90%" of its 0.1s waiting, which is true
// and tells the user nothing.
func (s *Summary) waitString() string {
	by, dims, total := s.waitsByLimit()
	if dims == nil {
		return ""
	}
	share := min(by[dims[0]]/s.RequestSeconds, 1)
	if share < 0.01 {
		return ""
	}
	line := fmt.Sprintf("; %.0f%% of request time waiting for %s", 100*share, Words(dims[0]))
	if len(dims) > 1 && by[dims[1]] >= 0.1*total {
		line += fmt.Sprintf(" (and %.0f%% for %s)", 100*min(by[dims[1]]/s.RequestSeconds, 1), Words(dims[1]))
	}
	return line
}

// waitsByLimit sums the requests' waits by limit (and for --max-cost
// room and the daily limit), most first, with their total; dims is nil
// when the waits are not worth saying.
func (s *Summary) waitsByLimit() (by map[string]float64, dims []string, total float64) {
	by = map[string]float64{}
	for d, w := range map[string]float64{MaxCostWait: s.MaxCostWaitSeconds, DailyWait: s.DailyWaitSeconds} {
		if w > 0 {
			by[d] = w
			total += w
		}
	}
	for _, k := range s.Limits {
		for d, w := range k.WaitBySeconds {
			by[d] += w
			total += w
		}
	}
	if s.RequestSeconds <= 0 || total < minWaitWorthSaying {
		return by, nil, total
	}
	dims = make([]string, 0, len(by))
	for d := range by {
		dims = append(dims, d)
	}
	slices.SortFunc(dims, func(a, b string) int { return cmp.Or(cmp.Compare(by[b], by[a]), cmp.Compare(a, b)) })
	return by, dims, total
}

// Words names a limit dimension as the summary says it: "input TPM".
func Words(dim string) string {
	if w, ok := dimensionWords[dim]; ok {
		return w
	}
	return dim
}

// times is "once", "twice" or "N times".
func times(n int64) string {
	switch n {
	case 1:
		return "once"
	case 2:
		return "twice"
	}
	return fmt.Sprintf("%d times", n)
}

// LogValue is the summary's main figures, for structured logs (the JSON
// log's last record); the --summary file has all of it.
func (s *Summary) LogValue() slog.Value {
	return slog.GroupValue(
		slog.Int64("requests", s.Requests), slog.Int64("succeeded", s.Succeeded), slog.Int64("failed", s.Failed),
		slog.Int64("skipped", s.Skipped), slog.Int64("pending", s.Pending),
		slog.Int64("attempts", s.Attempts), slog.Int64("retries", s.Retries), slog.Int64("rate_limited", s.RateLimited),
		slog.Int64("input_tokens", s.InputTokens), slog.Int64("output_tokens", s.OutputTokens),
		slog.Float64("cost_usd", s.CostUSD), slog.Float64("wall_seconds", s.WallSeconds),
		slog.Int("exit_code", s.ExitCode), slog.String("errors_file", s.ErrorsFile), slog.String("aborted", s.Aborted),
	)
}
