package runner

import "sync"

// TagUsage is what the requests carrying one tag value did in this run.
type TagUsage struct {
	Requests     int64   `json:"requests"`
	Succeeded    int64   `json:"succeeded"`
	Failed       int64   `json:"failed"`
	Pending      int64   `json:"pending"`
	Attempts     int64   `json:"attempts"`
	InputTokens  int64   `json:"input_tokens"`
	OutputTokens int64   `json:"output_tokens"`
	CostUSD      float64 `json:"cost_usd"`
}

// tagBook adds up the requests by tag key and value, for the summary.
// Only tagged requests touch it.
type tagBook struct {
	mu sync.Mutex
	m  map[string]map[string]*TagUsage
}

// add counts t, which has ended, under each of its tags.
func (b *tagBook) add(t *task) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.m == nil {
		b.m = make(map[string]map[string]*TagUsage)
	}
	for k, v := range t.req.Tags {
		vals := b.m[k]
		if vals == nil {
			vals = make(map[string]*TagUsage)
			b.m[k] = vals
		}
		u := vals[v]
		if u == nil {
			u = new(TagUsage)
			vals[v] = u
		}
		u.Requests++
		switch t.outcome {
		case outSucceeded:
			u.Succeeded++
		case outFailed:
			u.Failed++
		default:
			u.Pending++
		}
		u.Attempts += int64(t.attempts)
		u.InputTokens += t.inTokens
		u.OutputTokens += t.outTokens
		u.CostUSD += t.spent.cost.USD()
	}
}

// summary is the book by tag key, then value; nil when no request had tags.
func (b *tagBook) summary() map[string]map[string]TagUsage {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.m) == 0 {
		return nil
	}
	out := make(map[string]map[string]TagUsage, len(b.m))
	for k, vals := range b.m {
		out[k] = make(map[string]TagUsage, len(vals))
		for v, u := range vals {
			out[k][v] = *u
		}
	}
	return out
}
