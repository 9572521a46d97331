package runner

import "context"

// hearingHold is the run hearing how the attempt ended: the latest cause,
// the connect watch (which may stop the run), the observers and the debug
// log. Acquired last, it is released first, so a stop it decides binds
// before the slot or the key's gate lets the next attempt in.
type hearingHold struct {
	r *run
	h *hop
}

func (hh hearingHold) acquire(context.Context) (func(attemptOutcome), error) {
	return func(o attemptOutcome) {
		hh.r.observeAttempt(hh.h, o)
		hh.r.observeAttemptEnd(hh.h, o)
		hh.r.logAttempt(hh.h, o)
	}, nil
}
