package report

import (
	"encoding/json"
	"sort"
	"strconv"
	"sync"

	"github.com/llmrun/llmrun/pricing"
	"github.com/llmrun/llmrun/providers"
)

// pricingUsage converts a provider's usage to pricing's (pricing imports no
// provider package).
func pricingUsage(u providers.Usage) pricing.Usage {
	return pricing.Usage{InputTokens: u.InputTokens, CacheReadTokens: u.CacheReadTokens, CacheWriteTokens: u.CacheWriteTokens, OutputTokens: u.OutputTokens}
}

// PriceOf returns what u cost on provider's model, on the batch route or
// not; known is false when the model (or its batch route) has no price.
func PriceOf(t *pricing.Table, provider, model string, u providers.Usage, batch bool) (c pricing.Cost, known bool) {
	if t == nil {
		return 0, false
	}
	p, ok := t.Lookup(provider, model)
	if !ok {
		return 0, false
	}
	return p.Cost(pricingUsage(u), batch)
}

// ModelCost is one model's spend in the summary, from the usage the
// provider reported.
type ModelCost struct {
	Provider string `json:"provider"`
	Model    string `json:"model"`
	// Requests counts the priced responses (guard-rejected answers too).
	Requests int64 `json:"requests"`
	// CostUSD is null when the model has no price (see Unpriced).
	CostUSD          *float64 `json:"cost_usd"`
	InputTokens      int64    `json:"input_tokens"`
	CacheReadTokens  int64    `json:"cache_read_tokens"`
	CacheWriteTokens int64    `json:"cache_write_tokens"`
	OutputTokens     int64    `json:"output_tokens"`
	// CacheHitRatio is the share of input tokens served from the prompt
	// cache.
	CacheHitRatio float64 `json:"cache_hit_ratio"`
	// Unpriced counts responses whose cost is unknown.
	Unpriced int64 `json:"unpriced,omitempty"`
}

// costBook sums spend per provider and model. Safe for concurrent use.
type costBook struct {
	mu      sync.Mutex
	byModel map[[2]string]*modelTally
	total   pricing.Cost
}

type modelTally struct {
	requests, unpriced                   int64
	cost                                 pricing.Cost
	input, cacheRead, cacheWrite, output int64
}

// add records one response's usage and cost.
func (b *costBook) add(provider, model string, u providers.Usage, c pricing.Cost, known bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.byModel == nil {
		b.byModel = make(map[[2]string]*modelTally)
	}
	k := [2]string{provider, model}
	t := b.byModel[k]
	if t == nil {
		t = new(modelTally)
		b.byModel[k] = t
	}
	t.requests++
	t.input += u.InputTokens
	t.cacheRead += u.CacheReadTokens
	t.cacheWrite += u.CacheWriteTokens
	t.output += u.OutputTokens
	if known {
		t.cost += c
		b.total += c
	} else {
		t.unpriced++
	}
}

// spent is the total priced so far.
func (b *costBook) spent() pricing.Cost {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.total
}

// summary lists the models by provider and name.
func (b *costBook) summary() ([]ModelCost, pricing.Cost, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]ModelCost, 0, len(b.byModel))
	allKnown := true
	for k, t := range b.byModel {
		mc := ModelCost{Provider: k[0], Model: k[1], Requests: t.requests, CostUSD: t.cost.USDOrNull(t.unpriced < t.requests),
			InputTokens: t.input, CacheReadTokens: t.cacheRead, CacheWriteTokens: t.cacheWrite, OutputTokens: t.output, Unpriced: t.unpriced}
		if t.input > 0 {
			mc.CacheHitRatio = float64(t.cacheRead) / float64(t.input)
		}
		if t.unpriced > 0 {
			allKnown = false
		}
		out = append(out, mc)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Provider != out[j].Provider {
			return out[i].Provider < out[j].Provider
		}
		return out[i].Model < out[j].Model
	})
	return out, b.total, allKnown
}

// AddCost books one response's usage and cost (known: the model has a
// price) under provider and model.
func (c *Counters) AddCost(provider, model string, u providers.Usage, cost pricing.Cost, known bool) {
	c.costs.add(provider, model, u, cost, known)
}

// ChargeBatch prices u at provider's batch price for model, books it in
// the run's costs and returns the line's cost_usd (null when unpriced).
func (c *Counters) ChargeBatch(t *pricing.Table, provider, model string, u providers.Usage) json.RawMessage {
	cost, known := PriceOf(t, provider, model, u, true)
	c.costs.add(provider, model, u, cost, known)
	return LineCost(cost, known)
}

// LineCost is one priced answer's cost_usd on its output line: the cost,
// or null when the model has no price.
func LineCost(cost pricing.Cost, known bool) json.RawMessage {
	if !known {
		return json.RawMessage("null")
	}
	return json.RawMessage(strconv.FormatFloat(cost.USD(), 'f', -1, 64))
}
