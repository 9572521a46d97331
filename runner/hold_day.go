package runner

import (
	"context"

	"github.com/llmrun/llmrun/limiter"
)

// dayOpenHold holds an attempt while its key's day is spent (see
// dayOpen); it gives nothing back.
type dayOpenHold struct {
	r *run
	h *hop
}

func (d dayOpenHold) acquire(ctx context.Context) (func(attemptOutcome), error) {
	if !d.r.dayOpen(ctx, d.h) {
		return nil, stopPending
	}
	return nil, nil
}

// dayHold is the attempt's charge to its key's day, settled by how it
// ended (see endDay). It lapses when the provider refuses the key for
// the day before the attempt is sent.
type dayHold struct {
	r *run
	h *hop
}

func (d *dayHold) acquire(context.Context) (func(attemptOutcome), error) {
	t, err := d.r.takeDay(d.h)
	if err != nil {
		return nil, errReadmit // the day was spent since dayOpen looked
	}
	if t == (limiter.DayTicket{}) {
		return nil, nil
	}
	return func(o attemptOutcome) { d.r.endDay(d.h, t, o) }, nil
}

func (d *dayHold) valid() bool { return d.r.dayValid(d.h) }
