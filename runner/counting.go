package runner

import (
	"time"

	"github.com/llmrun/llmrun/providers"
	"github.com/llmrun/llmrun/report"
	"github.com/llmrun/llmrun/runner/retry"
)

// counters are the run's figures (package report, which knows nothing of
// the run) with the live run's own ways of adding to them.
type counters struct{ *report.Counters }

// retried records one retry and its class.
func (c counters) retried(class providers.Class) { c.AddRetry(class.String(), retry.Paced(class)) }

// rateLimitedOn records the dimension of one 429.
func (c counters) rateLimitedOn(dim string) { c.AddRateLimited(dim) }

// tagBook adds up the tagged requests for the summary.
type tagBook struct{ report.TagBook }

// add counts t, which has ended, under each of its tags.
func (b *tagBook) add(t *task) {
	u := report.TagUsage{Requests: 1, Attempts: int64(t.attempts), InputTokens: t.inTokens, OutputTokens: t.outTokens, CostUSD: t.spent.cost.USD()}
	switch t.outcome {
	case outSucceeded:
		u.Succeeded = 1
	case outFailed:
		u.Failed = 1
	default:
		u.Pending = 1
	}
	b.Add(t.req.Tags, u)
}

// summarize adds the budget, the days, the breakers and the tags to the
// counters' summary.
func (r *run) summarize(wall time.Duration) *report.Summary {
	s := r.c.Summary(wall)
	if r.cfg.Prices != nil {
		s.PricesDate = r.cfg.Prices.Date()
	}
	s.Limits = report.KeyLimitsOf(r.cfg.Limiter.Stats())
	s.Daily = report.DaysOf(r.cfg.Days)
	s.Tags = r.tags.Summary()
	r.mu.Lock()
	for _, b := range r.breakers {
		st := b.Stats(time.Now())
		s.BreakerOpenings += int64(st.Openings)
		s.HeldSeconds += st.TimeHeld.Seconds()
	}
	r.mu.Unlock()
	return s
}
