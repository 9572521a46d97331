package runner

import (
	"encoding/json"
	"errors"
	"fmt"
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

// priceOf returns what u cost on provider's model, on the batch route or
// not; known is false when the model (or its batch route) has no price.
func priceOf(t *pricing.Table, provider, model string, u providers.Usage, batch bool) (c pricing.Cost, known bool) {
	if t == nil {
		return 0, false
	}
	p, ok := t.Lookup(provider, model)
	if !ok {
		return 0, false
	}
	return p.Cost(pricingUsage(u), batch)
}

// spend is a request's cost so far: the priced answers and how many had
// no price.
type spend struct {
	cost             pricing.Cost
	priced, unpriced int
}

func (s *spend) add(o spend) {
	s.cost += o.cost
	s.priced += o.priced
	s.unpriced += o.unpriced
}

// json is the line's cost_usd: null when some answer had no price, absent
// when nothing was priced.
func (s spend) json() json.RawMessage {
	switch {
	case s.unpriced > 0:
		return json.RawMessage("null")
	case s.priced == 0:
		return nil
	}
	return json.RawMessage(strconv.FormatFloat(s.cost.USD(), 'f', -1, 64))
}

// usd is a cost for a line or summary: nil (JSON null) when unknown.
func usd(c pricing.Cost, known bool) *float64 {
	if !known {
		return nil
	}
	v := c.USD()
	return &v
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
		mc := ModelCost{Provider: k[0], Model: k[1], Requests: t.requests, CostUSD: usd(t.cost, t.unpriced < t.requests),
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

// CostCapError is how a run stopped by --max-cost ends: the spend recorded
// in the output reached the cap, or the next request's worst case would
// have crossed it. It is fatal for the run (exit 3) and resumable with a
// higher cap.
type CostCapError struct {
	Spent, Cap pricing.Cost
}

func (e *CostCapError) Error() string {
	return fmt.Sprintf("spent %v of --max-cost %v; rerun with a higher --max-cost to continue", e.Spent, e.Cap)
}

// errCostCap marks the abort until the run's final spend is known.
var errCostCap = errors.New("--max-cost reached")

// spendCap is the --max-cost budget: like the token budget, each attempt
// reserves its worst case before it is sent and settles to its actual
// cost after; a reservation that would cross the cap is refused, which
// stops admissions. Safe for concurrent use.
type spendCap struct {
	mu       sync.Mutex
	cap      pricing.Cost
	spent    pricing.Cost // settled: recorded in the output, earlier runs included
	reserved pricing.Cost // held by attempts in flight
}

// reserve takes c from the cap; false if it does not fit.
func (s *spendCap) reserve(c pricing.Cost) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.spent+s.reserved+c > s.cap {
		return false
	}
	s.reserved += c
	return true
}

// settle turns a reservation into the actual cost.
func (s *spendCap) settle(reserved, actual pricing.Cost) {
	s.mu.Lock()
	s.reserved -= reserved
	s.spent += actual
	s.mu.Unlock()
}

// total is the spend settled so far.
func (s *spendCap) total() pricing.Cost {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.spent
}

// price is what one live answer cost, recorded in the run's cost book.
func (r *run) price(route Route, req *providers.Request, resp *providers.Response) spend {
	if r.cfg.Prices == nil {
		return spend{}
	}
	model := req.Model
	if model == "" {
		model = resp.Model
	}
	c, known := priceOf(r.cfg.Prices, route.Provider.Name(), model, resp.Usage, false)
	r.c.costs.add(route.Provider.Name(), model, resp.Usage, c, known)
	if !known {
		return spend{unpriced: 1}
	}
	return spend{cost: c, priced: 1}
}

// inputMargin scales the input estimate a --max-cost reservation assumes,
// so an estimate a little short of the provider's count still leaves the
// settled spend within the cap.
const inputMargin = 1.2

// reserveSpend reserves an attempt's worst case against --max-cost: the
// input estimate (with margin) at the dearest input rate plus the output
// cap at the output price. When it does not fit, admissions stop and the
// run ends with a CostCapError; held is false. Without a cap it holds
// nothing.
func (r *run) reserveSpend(h *hop) (worst pricing.Cost, held bool) {
	if r.spend == nil {
		return 0, false
	}
	p, ok := r.cfg.Prices.Lookup(h.route.Provider.Name(), h.req.Model)
	if !ok {
		r.abortRun(fmt.Errorf("--max-cost: model %q of %s has no price; give it one with --prices", h.req.Model, h.route.Provider.Name()))
		return 0, false
	}
	in := int64(float64(r.cfg.Estimator.Calibrate(h.key, h.raw))*inputMargin) + 1
	worst, _ = p.MaxCost(in, h.route.Admission.OutputCap(h.req), false)
	if !r.spend.reserve(worst) {
		r.abortRun(errCostCap)
		return 0, false
	}
	return worst, true
}
