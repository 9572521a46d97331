package report

import (
	"sync"
	"sync/atomic"

	"github.com/llmrun/llmrun/pricing"
)

// Counters are the live figures of a run, updated by its workers and its
// sink (the live run's or the batch-API route's) and read by progress and
// the summary. Safe for concurrent use.
type Counters struct {
	Total        atomic.Int64 // requests in the input
	Skipped      atomic.Int64 // done in an earlier run
	Succeeded    atomic.Int64
	Failed       atomic.Int64
	Attempts     atomic.Int64
	Retries      atomic.Int64
	PacedRetries atomic.Int64 // retries after a 429 or an overload (retry.Paced)
	RateLimited  atomic.Int64 // 429s seen
	InFlight     atomic.Int64
	InputTokens  atomic.Int64
	OutputTokens atomic.Int64
	FellBack     atomic.Int64 // requests answered by a fallback hop
	// RequestNanos sums the time from a request's first admission to its
	// line, over the requests finished in this run.
	RequestNanos atomic.Int64
	Holding      atomic.Int64 // workers held by an open breaker
	// SpendWaiting are the requests waiting now for room in --max-cost
	// (answers in flight to settle); SpendWaitNanos sums their waits.
	SpendWaiting, SpendWaitNanos atomic.Int64
	// DayWaiting are the requests waiting now for a key's daily limit
	// (with --wait-daily for its reset, else for the attempts in flight
	// holding the day's last units to settle); DayWaitNanos sums their
	// waits. DayReset is the soonest reset waited for, in Unix
	// nanoseconds (0: none). Holding is an open breaker's, not these.
	DayWaiting, DayWaitNanos, DayReset atomic.Int64
	// CacheHits are requests answered from the cross-run cache (also
	// counted in Succeeded); CacheMisses were looked up and not found;
	// CachePuts are answers this run stored.
	CacheHits, CacheMisses, CachePuts atomic.Int64
	saved                             cacheSaved

	mu      sync.Mutex
	byCause map[string]int64
	// failCauses counts failed requests by providers.Cause, at most
	// maxFailCauses distinct ones (the rest under otherCauses).
	failCauses map[string]int64
	// limitedOn counts 429s by the dimension they were about.
	limitedOn map[string]int64

	// costs is the spend by model, from reported usage.
	costs costBook
}

// Spent is the cost of the responses so far (priced ones only).
func (c *Counters) Spent() pricing.Cost { return c.costs.spent() }

// incr adds one to (*m)[k], making the map on first use. Callers hold c.mu.
func incr(m *map[string]int64, k string) {
	if *m == nil {
		*m = make(map[string]int64)
	}
	(*m)[k]++
}

// copyCounts returns a copy of m, never nil. Callers hold c.mu.
func copyCounts(m map[string]int64) map[string]int64 {
	out := make(map[string]int64, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// AddRetry records one retry and its cause (an error class); paced says
// the key's admission control paced it (after a 429 or an overload).
func (c *Counters) AddRetry(cause string, paced bool) {
	c.Retries.Add(1)
	if paced {
		c.PacedRetries.Add(1)
	}
	c.mu.Lock()
	incr(&c.byCause, cause)
	c.mu.Unlock()
}

// RetriesByCause returns a copy of the retry counts by error class.
func (c *Counters) RetriesByCause() map[string]int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return copyCounts(c.byCause)
}

// Done is the number of requests finished one way or another.
func (c *Counters) Done() int64 {
	return c.Skipped.Load() + c.Succeeded.Load() + c.Failed.Load()
}

// maxFailCauses bounds the distinct failure causes kept: messages that
// quote the request (a context length, a token count) differ per request.
const (
	maxFailCauses = 20
	otherCauses   = "other"
)

// AddFailure records the cause of one failed request.
func (c *Counters) AddFailure(cause string) {
	if cause == "" {
		cause = "unknown"
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.failCauses[cause]; !ok && len(c.failCauses) >= maxFailCauses {
		cause = otherCauses
	}
	incr(&c.failCauses, cause)
}

// FailuresByCause returns a copy of the failed requests by cause.
func (c *Counters) FailuresByCause() map[string]int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return copyCounts(c.failCauses)
}

// AddRateLimited records the dimension of one 429.
func (c *Counters) AddRateLimited(dim string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	incr(&c.limitedOn, dim)
}

// RateLimitedOn returns a copy of the 429s by the dimension they were
// about (requests, tokens, input_tokens, output_tokens, unknown).
func (c *Counters) RateLimitedOn() map[string]int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return copyCounts(c.limitedOn)
}

// cacheSaved is the spend the cache's hits saved, kept beside Counters.
type cacheSaved struct {
	mu  sync.Mutex
	usd float64
}

// AddSaved records what one cache hit cost when it was paid for.
func (c *Counters) AddSaved(usd float64) {
	c.saved.mu.Lock()
	c.saved.usd += usd
	c.saved.mu.Unlock()
}

// SavedUSD is what this run's cache hits cost when they were paid for.
func (c *Counters) SavedUSD() float64 {
	c.saved.mu.Lock()
	defer c.saved.mu.Unlock()
	return c.saved.usd
}
