package runner

import "context"

// spendRoomHold holds an attempt, holding nothing else, while its worst
// case does not fit in --max-cost beside the attempts in flight (see
// spendRoom); it gives nothing back. Without a cap it holds nothing.
type spendRoomHold struct {
	r *run
	h *hop
}

func (s spendRoomHold) acquire(ctx context.Context) (func(attemptOutcome), error) {
	if s.r.spend != nil && !s.r.spendRoom(ctx, s.h) {
		return nil, stopPending
	}
	return nil, nil
}

// spendHold is the attempt's worst case reserved against --max-cost (see
// reserveSpend), settled with what the answer cost: nothing for one never
// sent or failed, whose reservation is given back whole. It never waits:
// when the room spendRoom saw is gone, admission starts over there.
// Without a cap it holds nothing.
type spendHold struct {
	r *run
	h *hop
}

func (s spendHold) acquire(ctx context.Context) (func(attemptOutcome), error) {
	if s.r.spend == nil {
		return nil, nil
	}
	worst, held := s.r.reserveSpend(s.h)
	if !held {
		if ctx.Err() != nil { // the run stopped (a model without a price)
			return nil, stopPending
		}
		return nil, errReadmit
	}
	return func(o attemptOutcome) { s.r.spend.settle(worst, o.cost.cost) }, nil
}
