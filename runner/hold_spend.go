package runner

import "context"

// spendHold is the attempt's worst case reserved against --max-cost (see
// reserveSpend), settled with what the answer cost. Without a cap it
// holds nothing.
type spendHold struct {
	r *run
	h *hop
}

func (s spendHold) acquire(context.Context) (func(attemptOutcome), error) {
	if s.r.spend == nil {
		return nil, nil
	}
	worst, held := s.r.reserveSpend(s.h)
	if !held {
		return nil, stopPending
	}
	return func(o attemptOutcome) { s.r.spend.settle(worst, o.cost.cost) }, nil
}
