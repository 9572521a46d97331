package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

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
// cost after. Attempts in flight rarely reach their worst case, so one
// whose worst case does not fit beside theirs waits for them to settle
// (await); only one that does not fit with nothing in flight stops the
// run. Safe for concurrent use.
type spendCap struct {
	mu       sync.Mutex
	cap      pricing.Cost
	spent    pricing.Cost // settled: recorded in the output, earlier runs included
	reserved pricing.Cost // held by attempts in flight
	// settled is closed (and dropped) at the next settle: it wakes the
	// attempts awaiting room.
	settled chan struct{}
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

// settle turns a reservation into the actual cost (nothing for an attempt
// never sent or failed) and wakes those awaiting room.
func (s *spendCap) settle(reserved, actual pricing.Cost) {
	s.mu.Lock()
	s.reserved -= reserved
	s.spent += actual
	if s.settled != nil {
		close(s.settled)
		s.settled = nil
	}
	s.mu.Unlock()
}

// room reports whether c fits beside the spend settled and reserved. When
// it does not but attempts in flight hold reservations, wake is closed
// when one settles; with nothing in flight wake is nil: no wait helps.
func (s *spendCap) room(c pricing.Cost) (fits bool, wake <-chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.spent+s.reserved+c <= s.cap {
		return true, nil
	}
	if s.reserved == 0 {
		return false, nil
	}
	if s.settled == nil {
		s.settled = make(chan struct{})
	}
	return false, s.settled
}

// await waits until the worst case (asked anew at each settle: answers
// calibrate the input estimate) fits beside the reservations in flight.
// It reserves nothing: the caller reserves once its other holds are
// taken, and waits again if the room was taken meanwhile. errCostCap when
// it does not fit with nothing in flight; ctx's cause when ctx ends.
// waiting, if set, is called once, when it first waits.
func (s *spendCap) await(ctx context.Context, worst func() pricing.Cost, waiting func()) error {
	for {
		fits, wake := s.room(worst())
		if fits {
			return nil
		}
		if wake == nil {
			return errCostCap
		}
		if waiting != nil {
			waiting()
			waiting = nil
		}
		select {
		case <-wake:
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
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

// worstCase is an attempt's worst case against --max-cost: the input
// estimate (with margin) at the dearest input rate plus the output cap at
// the output price. A model without a price stops the run: ok is false.
func (r *run) worstCase(h *hop) (worst pricing.Cost, ok bool) {
	p, ok := r.cfg.Prices.Lookup(h.route.Provider.Name(), h.req.Model)
	if !ok {
		r.abortRun(fmt.Errorf("--max-cost: model %q of %s has no price; give it one with --prices", h.req.Model, h.route.Provider.Name()))
		return 0, false
	}
	in := int64(float64(r.cfg.Estimator.Calibrate(h.key, h.raw))*inputMargin) + 1
	worst, _ = p.MaxCost(in, h.route.Admission.OutputCap(h.req), false)
	return worst, true
}

// spendRoom holds h's attempt until its worst case fits beside the
// attempts in flight (see spendCap.await). The wait is the run's own, not
// the request's: like a breaker's hold, it moves the request's deadline
// on, and progress and the summary count it (SpendWaiting, SpendWaitNanos).
// When it cannot fit with nothing in flight, admissions stop and the run
// ends with a CostCapError. It reports whether the attempt may go on.
func (r *run) spendRoom(ctx context.Context, h *hop) bool {
	if _, ok := r.worstCase(h); !ok {
		return false
	}
	var began time.Time
	err := r.spend.await(ctx, func() pricing.Cost {
		w, _ := r.worstCase(h) // priced: looked up above
		return w
	}, func() {
		began = time.Now()
		r.c.SpendWaiting.Add(1)
	})
	if !began.IsZero() {
		held := time.Since(began)
		r.c.SpendWaiting.Add(-1)
		r.c.SpendWaitNanos.Add(int64(held))
		h.start = h.start.Add(held)
	}
	if errors.Is(err, errCostCap) {
		r.abortRun(errCostCap)
	}
	return err == nil
}

// reserveSpend reserves an attempt's worst case against --max-cost, after
// spendRoom has seen it fit. held is false when it no longer fits (other
// attempts took the room since, or answers raised the estimate): the
// attempt goes back to spendRoom, which waits for them or stops the run.
func (r *run) reserveSpend(h *hop) (worst pricing.Cost, held bool) {
	worst, ok := r.worstCase(h)
	if !ok || !r.spend.reserve(worst) {
		return 0, false
	}
	return worst, true
}
