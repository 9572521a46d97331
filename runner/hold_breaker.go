package runner

import (
	"context"
	"time"

	"github.com/llmrun/llmrun/runner/retry"
)

// breakerHold is a ticket of the key's breaker, taken once the breaker
// lets an attempt through (holding while it is open, see waitBreaker).
// Giving it back tells the breaker how the attempt went; it lapses when
// the breaker opens before the attempt is sent.
type breakerHold struct {
	r      *run
	h      *hop
	ticket retry.Ticket
}

func (b *breakerHold) acquire(ctx context.Context) (func(attemptOutcome), error) {
	t, held, out, ok := b.r.waitBreaker(ctx, b.h)
	if !ok {
		return nil, &admitStop{out: out}
	}
	b.h.start = b.h.start.Add(held) // time held is not the request's fault
	b.ticket = t
	return b.end, nil
}

// end tells the breaker o: a success or a failure of the provider's,
// or nothing (never sent, or cut by shutdown).
func (b *breakerHold) end(o attemptOutcome) {
	now := time.Now()
	switch {
	case o.resp != nil:
		b.h.br.Observe(now, b.ticket, nil)
	case o.sent.IsZero() || o.cut:
		b.h.br.Release(now, b.ticket)
	default:
		b.h.br.Observe(now, b.ticket, o.err)
	}
}

func (b *breakerHold) valid() bool { return b.h.br.Valid(b.ticket) }

// waitBreaker holds while the key's breaker is open and returns the
// ticket for the next attempt and how long it held. When it cannot, it
// says why: outFailed to move the request to the next hop, outPending when
// the run is stopping (outage longer than --max-outage, interrupt).
func (r *run) waitBreaker(ctx context.Context, h *hop) (t retry.Ticket, held time.Duration, out outcome, ok bool) {
	br, canFallBack, watch := h.br, h.canFallBack, r.connectWatch(h)
	start := time.Now()
	holding := false
	defer func() {
		if holding {
			r.c.Holding.Add(-1)
		}
	}()
	for {
		now := time.Now()
		changed := br.Changed()
		if t, ok := br.Allow(now); ok {
			return t, now.Sub(start), 0, true
		}
		if canFallBack {
			return retry.Ticket{}, 0, outFailed, false
		}
		if br.OutageExceeded(now) {
			r.abortRun(r.outageError())
			return retry.Ticket{}, 0, outPending, false
		}
		wait := br.WaitTime(now)
		if err, left := r.setupFailed(h, now); err != nil {
			r.abortRun(err)
			return retry.Ticket{}, 0, outPending, false
		} else if left > 0 {
			wait = min(wait, left)
		}
		if watch != nil {
			err, left := watch.exceeded(now, r.cfg.ConnectDeadline)
			if err != nil {
				r.abortRun(r.unreachable(h, err))
				return retry.Ticket{}, 0, outPending, false
			}
			if left > 0 {
				wait = min(wait, left)
			}
		}
		if !holding {
			holding = true
			r.c.Holding.Add(1)
		}
		timer := time.NewTimer(max(wait, time.Millisecond))
		select {
		case <-timer.C:
		case <-changed:
			timer.Stop()
		case <-ctx.Done():
			timer.Stop()
			return retry.Ticket{}, 0, outPending, false
		}
	}
}
