package runner

import (
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/llmrun/llmrun/pricing"
	"github.com/llmrun/llmrun/providers"
	"github.com/llmrun/llmrun/report"
)

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
	if s.priced == 0 && s.unpriced == 0 {
		return nil
	}
	return report.LineCost(s.cost, s.unpriced == 0)
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
	c, known := report.PriceOf(r.cfg.Prices, route.Provider.Name(), model, resp.Usage, false)
	r.c.AddCost(route.Provider.Name(), model, resp.Usage, c, known)
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
