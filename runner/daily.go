package runner

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/llmrun/llmrun/ending"
	"github.com/llmrun/llmrun/limiter"
	"github.com/llmrun/llmrun/providers"
)

// Per-day budgets (Config.Days): a key whose day is spent admits nothing
// before the day's reset. The run then stops admitting, lets what is in
// flight finish and ends with a *ending.DailyLimitError (exit 3, resumable), or
// with WaitDaily sleeps until the reset and goes on. A day is spent by
// the key's own limits (--rpd, --tpd), by the per-day windows of the
// provider's headers, or by the provider refusing for the day (a 429
// from a per-day limit): see limiter.Days.

// dayStateKey is the checkpoint state that carries the keys' own daily
// counts to the next run on the same output, so a rerun the same day does
// not start the day afresh.
const dayStateKey = "daily"

// minDayBlock is the shortest a refusal for the day blocks its key: a
// "try again in 0s" must not turn into a loop of refusals.
const minDayBlock = time.Second

// dayKey names a budget key's day: the key with any credentials of its
// base URL taken out, since the day is written to the checkpoint state
// and named in messages.
func dayKey(key string) string {
	if !strings.ContainsAny(key, "@?") {
		return key // nothing to take out: no url.Parse on every admission
	}
	parts := strings.Split(key, "|")
	for i, p := range parts {
		if strings.Contains(p, "://") {
			parts[i] = providers.StripUserinfo(p)
		}
	}
	return strings.Join(parts, "|")
}

// dayZone is the zone whose midnight resets route's days.
func dayZone(route Route) *time.Location {
	if route.Admission.DayZone == nil {
		return nil
	}
	return route.Admission.DayZone()
}

// dayOpen holds h's attempt while its key's day is spent: with WaitDaily
// it sleeps until the reset; otherwise it waits for the attempts holding
// the day's last units, then stops the run. Time held is not the
// request's: its deadline moves on (dayWait). It reports whether the
// attempt may go on.
func (r *run) dayOpen(ctx context.Context, h *hop) bool {
	if r.cfg.Days == nil {
		return true
	}
	for {
		err := r.cfg.Days.Check(dayKey(h.key), dayZone(h.route), r.cost(h.key, h.route, h.req, h.raw))
		var de *limiter.DayLimitError
		if !errors.As(err, &de) {
			return true
		}
		if !r.cfg.WaitDaily {
			// Attempts that took the day's last units go first: one that
			// is never sent gives its units back.
			if wake, held := r.dayHeld(); held {
				if !r.dayWait(h, time.Time{}, func() bool { return waitOn(ctx, wake) }) {
					return false
				}
				continue
			}
			r.abortRun(&ending.DailyLimitError{Limit: de})
			return false
		}
		r.noteDayWait(de)
		if !r.dayWait(h, de.Reset, func() bool { return sleep(ctx, time.Until(de.Reset)) }) {
			return false
		}
	}
}

// dayValid reports whether h's attempt, admitted, may still be sent: the
// provider may have refused its key for the day meanwhile (the attempt
// then goes back to dayOpen).
func (r *run) dayValid(h *hop) bool {
	if r.cfg.Days == nil {
		return true
	}
	_, refused := r.cfg.Days.Refused(dayKey(h.key))
	return !refused
}

// noteDayWait logs, once per key and reset, that the run waits for a day.
func (r *run) noteDayWait(de *limiter.DayLimitError) {
	r.mu.Lock()
	if r.dayNoted == nil {
		r.dayNoted = make(map[string]time.Time)
	}
	seen := r.dayNoted[de.Key].Equal(de.Reset)
	r.dayNoted[de.Key] = de.Reset
	r.mu.Unlock()
	if !seen {
		r.cfg.Log.Info(de.Error() + "; --wait-daily: waiting for it")
	}
}

// takeDay charges h's attempt to its key's day; a *limiter.DayLimitError
// says the day was spent since dayOpen looked. A ticket taken is held
// (dayHeld) until the attempt's end is settled.
func (r *run) takeDay(h *hop) (limiter.DayTicket, error) {
	if r.cfg.Days == nil {
		return limiter.DayTicket{}, nil
	}
	t, err := r.cfg.Days.Take(dayKey(h.key), dayZone(h.route), r.cost(h.key, h.route, h.req, h.raw))
	if err == nil {
		r.mu.Lock()
		r.dayTickets++
		r.mu.Unlock()
		r.daySave.changed()
	}
	return t, err
}

// dayHeld reports whether attempts hold day tickets not yet settled, and
// a channel closed when one is.
func (r *run) dayHeld() (<-chan struct{}, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.dayWake == nil {
		r.dayWake = make(chan struct{})
	}
	return r.dayWake, r.dayTickets > 0
}

// dayReleased marks a day ticket settled and wakes those waiting on it.
func (r *run) dayReleased() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.dayTickets--
	if r.dayWake != nil {
		close(r.dayWake)
		r.dayWake = nil
	}
}

// endDay settles h's day ticket t with o: a request never sent is
// returned; a sent one counts, with the tokens its answer reported (none
// for a failure); and the day windows of the answer's headers are applied.
func (r *run) endDay(h *hop, t limiter.DayTicket, o attemptOutcome) {
	days := r.cfg.Days
	if days == nil || t == (limiter.DayTicket{}) {
		return
	}
	defer r.dayReleased()
	defer r.daySave.changed()
	if o.sent.IsZero() {
		days.Cancel(t)
		return
	}
	// The headers first: they know this attempt's own usage, and nothing
	// of what was charged after it (settling moves that count).
	actual, limits := limiter.Cost{Requests: 1}, providers.RateLimits{}
	if o.resp != nil {
		actual.Input, actual.Output = o.resp.Usage.InputTokens, o.resp.Usage.OutputTokens
		limits = o.resp.Limits
	} else if pe := providerError(o.err); pe != nil {
		limits = pe.Limits
	}
	if limits.DayRequests.Known() || limits.DayTokens.Known() {
		days.ObserveTicket(t, dayZone(h.route), limiter.DayObservation{
			Requests: limiter.Window(limits.DayRequests), Tokens: limiter.Window(limits.DayTokens)})
	}
	days.Settle(t, actual)
}

// dailyRefusal reports a failure that is the provider refusing for the
// day, with daily budgets kept.
func (r *run) dailyRefusal(o attemptOutcome) (*providers.Error, bool) {
	var pe *providers.Error
	if r.cfg.Days == nil || !errors.As(o.err, &pe) || !pe.Daily {
		return nil, false
	}
	return pe, true
}

// dayRefused spends h's key's day: until the provider's word on when,
// else the next midnight in the route's day zone (Gemini's Pacific).
func (r *run) dayRefused(h *hop, pe *providers.Error) {
	until := time.Time{}
	if pe.HasRetryAfter {
		until = time.Now().Add(min(max(pe.RetryAfter, minDayBlock), 24*time.Hour)) // a day's limit resets within one
	}
	r.cfg.Days.Exhaust(dayKey(h.key), dayZone(h.route), until)
}

// restoreDays takes up the daily counts an earlier run on this output
// left.
func (r *run) restoreDays() error {
	if r.cfg.Days == nil || r.cfg.Store == nil {
		return nil
	}
	return r.cfg.Days.Load(r.cfg.Store, dayStateKey)
}

// saveDays leaves the daily counts for the next run.
func (r *run) saveDays() error {
	if r.cfg.Days == nil || r.cfg.Store == nil {
		return nil
	}
	return r.cfg.Days.Save(r.cfg.Store, dayStateKey)
}

// providerError is err's *providers.Error, if any. errors.As's target
// escapes: declared here, it costs an allocation only when there is an
// error to look into, not on every answer.
func providerError(err error) *providers.Error {
	if err == nil {
		return nil
	}
	var pe *providers.Error
	if errors.As(err, &pe) {
		return pe
	}
	return nil
}
