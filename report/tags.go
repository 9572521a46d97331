package report

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

func (u *TagUsage) add(o TagUsage) {
	u.Requests += o.Requests
	u.Succeeded += o.Succeeded
	u.Failed += o.Failed
	u.Pending += o.Pending
	u.Attempts += o.Attempts
	u.InputTokens += o.InputTokens
	u.OutputTokens += o.OutputTokens
	u.CostUSD += o.CostUSD
}

// TagBook adds up the requests by tag key and value, for the summary.
// Only tagged requests touch it. The zero value is empty; safe for
// concurrent use.
type TagBook struct {
	mu sync.Mutex
	m  map[string]map[string]*TagUsage
}

// Add counts one ended request, whose part is u, under each of its tags.
func (b *TagBook) Add(tags map[string]string, u TagUsage) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.m == nil {
		b.m = make(map[string]map[string]*TagUsage)
	}
	for k, v := range tags {
		vals := b.m[k]
		if vals == nil {
			vals = make(map[string]*TagUsage)
			b.m[k] = vals
		}
		if vals[v] == nil {
			vals[v] = new(TagUsage)
		}
		vals[v].add(u)
	}
}

// Summary is the book by tag key, then value; nil when no request had tags.
func (b *TagBook) Summary() map[string]map[string]TagUsage {
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
