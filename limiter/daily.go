package limiter

import (
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Per-day budgets. A day's budget is not a faster or slower per-minute
// bucket: once it is spent, nothing is admitted until it resets, hours
// away, so the runner stops (or, asked to, sleeps) instead of pacing. A
// key's day is counted two ways, both enforced:
//
//   - its own limits (DayLimits: --rpd, --tpd), counted per calendar day
//     in the key's time zone, midnight to midnight;
//   - what the provider says: the per-day windows of its rate-limit
//     headers (remaining until a reset), and a refusal (a 429 from a
//     per-day limit) that blocks the key until the provider's reset.
//
// Requests count one each; tokens count input and output together.

// DayLimits are a key's own budgets per day; 0 means none.
type DayLimits struct{ Requests, Tokens float64 }

// DayObservation is what a response's headers said of per-day limits:
// windows whose Reset is the time until they are whole again.
type DayObservation struct{ Requests, Tokens Window }

// DaysOptions configures Days. The zero value is usable: no limits of
// its own, the real clock.
type DaysOptions struct {
	Defaults DayLimits
	// Now reads the clock; nil means time.Now.
	Now func() time.Time
}

// Days holds the per-day budgets of many keys. It is safe for concurrent
// use. The zero Days is not usable: make one with NewDays.
type Days struct {
	defaults DayLimits
	now      func() time.Time
	mu       sync.Mutex
	keys     map[string]*dayKey
	// tokenWindows: some key's provider has said a per-day token limit
	// (CountsTokens).
	tokenWindows atomic.Bool
}

// NewDays returns the per-day budgets o describes.
func NewDays(o DaysOptions) *Days {
	d := &Days{defaults: o.Defaults, now: o.Now, keys: map[string]*dayKey{}}
	if d.now == nil {
		d.now = time.Now
	}
	return d
}

// dayDims are the dimensions of a day's budget, in the order of
// dayKey's arrays.
var dayDims = [2]Dimension{DimRequests, DimTokens}

type dayKey struct {
	zone *time.Location
	own  [2]dayCount // the key's own limits, by calendar day
	seen [2]dayCount // the provider's windows, as its headers last said
	// blocked: a provider refused for the day; nothing before this.
	blocked time.Time
	// cum is the net of every charge to the key: what was charged after
	// an admission is what its response's headers cannot know about.
	cum [2]float64
}

// dayCount is one dimension's use of one window.
type dayCount struct {
	limit float64 // 0: none
	used  float64
	reset time.Time // when used returns to 0; zero: not known
}

// amounts is what c takes from a day: one per request, input and output
// tokens together.
func dayAmounts(c Cost) [2]float64 {
	return [2]float64{float64(c.Requests), float64(c.Input + c.Output)}
}

// NextMidnight is the first midnight in zone after now (time.Local when
// zone is nil): when a calendar day's budget resets.
func NextMidnight(now time.Time, zone *time.Location) time.Time {
	if zone == nil {
		zone = time.Local
	}
	y, m, d := now.In(zone).Date()
	return time.Date(y, m, d+1, 0, 0, 0, 0, zone)
}

// key returns the state of name, created in zone. Requires d.mu held.
func (d *Days) key(name string, zone *time.Location, now time.Time) *dayKey {
	k := d.keys[name]
	if k == nil {
		k = &dayKey{zone: zone}
		k.own[0].limit, k.own[1].limit = d.defaults.Requests, d.defaults.Tokens
		k.own[0].reset, k.own[1].reset = NextMidnight(now, zone), NextMidnight(now, zone)
		d.keys[name] = k
	}
	return k
}

// roll starts the windows that ended by now.
func (k *dayKey) roll(now time.Time) {
	for i := range k.own {
		if c := &k.own[i]; !now.Before(c.reset) {
			c.used, c.reset = 0, NextMidnight(now, k.zone)
		}
		if c := &k.seen[i]; !c.reset.IsZero() && !now.Before(c.reset) {
			c.used, c.reset = 0, time.Time{} // whole again, as far as we know
		}
	}
}

// DayLimitError says a key's day is spent: nothing more is admitted on it
// before Reset.
type DayLimitError struct {
	Key string
	// Dimension is what ran out (DimRequests or DimTokens), DimNone when
	// the provider refused for the day.
	Dimension Dimension
	// Limit is the per-day limit that ran out; 0 when not known.
	Limit float64
	Reset time.Time
}

func (e *DayLimitError) Error() string {
	why := "the provider refused for the day"
	if e.Dimension != DimNone {
		what := map[Dimension]string{DimRequests: "requests", DimTokens: "tokens"}[e.Dimension]
		why = fmt.Sprintf("%s per day", what)
		if e.Limit > 0 {
			why = fmt.Sprintf("%g %s", e.Limit, why)
		}
	}
	return fmt.Sprintf("daily limit reached; resets at %s (%s, key %q)", e.Reset.Format(time.RFC3339), why, e.Key)
}

// DayTicket is one admission's charge to a day's budget; end it with
// Settle or Cancel.
type DayTicket struct {
	key  string
	cost Cost
	// windows the charge went to; a settle after they ended changes
	// nothing (the new day starts clean).
	own, seen [2]time.Time
	// charged marks the dimensions of seen that were charged.
	charged [2]bool
	// after is the key's cum right after this charge.
	after [2]float64
}

// check reports why k cannot admit a, if it cannot. Requires d.mu held.
func (k *dayKey) check(name string, now time.Time, a [2]float64) *DayLimitError {
	if now.Before(k.blocked) {
		return &DayLimitError{Key: name, Reset: k.blocked}
	}
	for i, amt := range a {
		for _, c := range []*dayCount{&k.own[i], &k.seen[i]} {
			if c.limit > 0 && amt > 0 && c.used+amt > c.limit+eps {
				return &DayLimitError{Key: name, Dimension: dayDims[i], Limit: c.limit, Reset: c.reset}
			}
		}
	}
	return nil
}

// Check reports, without charging anything, why key (in zone) cannot
// admit c now: a *DayLimitError, or nil.
func (d *Days) Check(key string, zone *time.Location, c Cost) error {
	return d.CheckAt(d.now(), key, zone, c)
}

// CheckAt is Check at now.
func (d *Days) CheckAt(now time.Time, key string, zone *time.Location, c Cost) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	k := d.key(key, zone, now)
	k.roll(now)
	if err := k.check(key, now, dayAmounts(c)); err != nil {
		return err
	}
	return nil
}

// Refused reports whether the provider refused key for the day, and
// until when. Unlike Check it ignores the counts: an attempt already
// charged to them asks whether it may still go.
func (d *Days) Refused(key string) (time.Time, bool) {
	now := d.now()
	d.mu.Lock()
	defer d.mu.Unlock()
	if k := d.keys[key]; k != nil && now.Before(k.blocked) {
		return k.blocked, true
	}
	return time.Time{}, false
}

// Take charges c to key's day (the key is created in zone on first use:
// its calendar days are zone's) and returns the ticket of the charge, or
// a *DayLimitError when the day cannot admit it.
func (d *Days) Take(key string, zone *time.Location, c Cost) (DayTicket, error) {
	return d.TakeAt(d.now(), key, zone, c)
}

// TakeAt is Take at now.
func (d *Days) TakeAt(now time.Time, key string, zone *time.Location, c Cost) (DayTicket, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	k := d.key(key, zone, now)
	k.roll(now)
	a := dayAmounts(c)
	if err := k.check(key, now, a); err != nil {
		return DayTicket{}, err
	}
	t := DayTicket{key: key, cost: c}
	for i, amt := range a {
		k.cum[i] += amt
		t.after[i] = k.cum[i]
		k.own[i].used += amt
		t.own[i] = k.own[i].reset
		if k.seen[i].limit > 0 {
			k.seen[i].used += amt
			t.seen[i], t.charged[i] = k.seen[i].reset, true
		}
	}
	return t, nil
}

// Settle corrects a ticket's token charge to actual (the usage the
// answer reported); its request stays charged.
func (d *Days) Settle(t DayTicket, actual Cost) { d.adjust(t, actual, false) }

// Cancel returns a ticket's whole charge: its request was never sent.
func (d *Days) Cancel(t DayTicket) { d.adjust(t, Cost{}, true) }

func (d *Days) adjust(t DayTicket, actual Cost, refundRequest bool) {
	if t.key == "" {
		return // the zero ticket: nothing was charged
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	k := d.keys[t.key]
	delta := [2]float64{0, float64(actual.Input+actual.Output) - float64(t.cost.Input+t.cost.Output)}
	if refundRequest {
		delta[0] = -float64(t.cost.Requests)
	}
	for i, dv := range delta {
		k.cum[i] += dv
		if k.own[i].reset.Equal(t.own[i]) {
			k.own[i].used = max(k.own[i].used+dv, 0)
		}
		if t.charged[i] && k.seen[i].reset.Equal(t.seen[i]) {
			k.seen[i].used = max(k.seen[i].used+dv, 0)
		}
	}
}

// Observe applies the per-day windows of a response's headers to key:
// the provider's limit, what it says remains, and when it is whole again.
// Unknown windows are ignored. Prefer ObserveTicket, which knows what was
// charged after the observed request.
func (d *Days) Observe(key string, zone *time.Location, o DayObservation) {
	d.ObserveAt(d.now(), key, zone, o)
}

// ObserveAt is Observe at now.
func (d *Days) ObserveAt(now time.Time, key string, zone *time.Location, o DayObservation) {
	d.mu.Lock()
	defer d.mu.Unlock()
	k := d.key(key, zone, now)
	d.observe(now, k, o, k.cum)
}

// ObserveTicket is Observe for the response of t's attempt: what remains
// is lowered by everything charged to the key after t, which the
// provider had not seen when it answered (a bare remaining count would
// forget it and let the key overrun the day by what is in flight).
func (d *Days) ObserveTicket(t DayTicket, zone *time.Location, o DayObservation) {
	if t.key == "" {
		return
	}
	now := d.now()
	d.mu.Lock()
	defer d.mu.Unlock()
	d.observe(now, d.key(t.key, zone, now), o, t.after)
}

// observe applies o to k; after is the key's cum when the observed
// request was charged. Requires d.mu held.
func (d *Days) observe(now time.Time, k *dayKey, o DayObservation, after [2]float64) {
	k.roll(now)
	for i, w := range [2]Window{o.Requests, o.Tokens} {
		if !known(w) {
			continue
		}
		c := &k.seen[i]
		if w.Limit > 0 {
			c.limit = float64(w.Limit)
			d.tokenWindows.Store(d.tokenWindows.Load() || i == 1)
		}
		if w.Remaining >= 0 && c.limit > 0 {
			c.used = max(c.limit-float64(w.Remaining)+k.cum[i]-after[i], 0)
		}
		switch {
		case w.Reset > 0:
			c.reset = now.Add(w.Reset)
		case c.reset.IsZero():
			c.reset = NextMidnight(now, k.zone) // no word on when: a calendar day
		}
	}
}

// Exhaust blocks key until until: the provider refused for the day (a
// 429 from a per-day limit). A zero until is the next midnight in the
// key's zone; an earlier block is never shortened.
func (d *Days) Exhaust(key string, zone *time.Location, until time.Time) {
	d.ExhaustAt(d.now(), key, zone, until)
}

// ExhaustAt is Exhaust at now.
func (d *Days) ExhaustAt(now time.Time, key string, zone *time.Location, until time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	k := d.key(key, zone, now)
	if until.IsZero() {
		until = NextMidnight(now, k.zone)
	}
	if until.After(k.blocked) {
		k.blocked = until
	}
}

// DayUsage is what one key used of its own day, for a later run to carry
// on: the rerun of a job that stopped at its daily limit must not start
// the day afresh.
//
// Only the key's own counts are kept: the provider's windows and
// refusals are the provider's to say again.
type DayUsage struct {
	Key string `json:"key"`
	// Zone names the key's time zone; Reset ends the day the counts
	// belong to.
	Zone     string    `json:"zone"`
	Reset    time.Time `json:"reset"`
	Requests float64   `json:"requests"`
	Tokens   float64   `json:"tokens"`
}

// Usage returns each key's use of its current own day, sorted by key.
func (d *Days) Usage() []DayUsage {
	var out []DayUsage
	d.eachRolled(func(name string, k *dayKey, _ time.Time) {
		u := DayUsage{Key: name, Zone: k.zone.String(), Reset: k.own[0].reset, Requests: k.own[0].used, Tokens: k.own[1].used}
		if u.Requests > 0 || u.Tokens > 0 {
			out = append(out, u)
		}
	})
	return out
}

// eachRolled calls fn under d.mu with every key, in order of name, its
// days rolled on to now.
func (d *Days) eachRolled(fn func(name string, k *dayKey, now time.Time)) {
	now := d.now()
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, name := range slices.Sorted(maps.Keys(d.keys)) {
		k := d.keys[name]
		k.roll(now)
		fn(name, k, now)
	}
}

// Restore carries on from an earlier run's Usage: the counts of a day not
// yet over are taken up; those of a day gone are dropped. A key is
// created in the zone Usage named (the local zone if it cannot be
// loaded).
func (d *Days) Restore(us []DayUsage) {
	now := d.now()
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, u := range us {
		zone, err := time.LoadLocation(u.Zone)
		if err != nil {
			zone = time.Local
		}
		k := d.key(u.Key, zone, now)
		k.roll(now)
		if now.Before(u.Reset) && u.Reset.Equal(k.own[0].reset) {
			k.own[0].used, k.own[1].used = u.Requests, u.Tokens
		}
	}
}

// DayStats is one key's day as Stats shows it.
type DayStats struct {
	Key string
	// Requests and Tokens are what the key used of its day; RPD and TPD
	// the per-day limits in force (its own, or the provider's when
	// lower); 0 for none.
	Requests, Tokens float64
	RPD, TPD         float64
	// Reset ends the day counted; Blocked, when set, is when a
	// provider's refusal for the day lifts.
	Reset, Blocked time.Time
}

// Stats returns a snapshot of every key with a day limit, a provider's
// window or a refusal, sorted by key.
func (d *Days) Stats() []DayStats {
	var out []DayStats
	d.eachRolled(func(name string, k *dayKey, now time.Time) {
		s := DayStats{Key: name, Requests: k.own[0].used, Tokens: k.own[1].used, Reset: k.own[0].reset}
		limits := [2]*float64{&s.RPD, &s.TPD}
		for i := range 2 {
			*limits[i] = k.own[i].limit
			if l := k.seen[i].limit; l > 0 && (*limits[i] == 0 || l < *limits[i]) {
				*limits[i] = l
			}
		}
		if now.Before(k.blocked) {
			s.Blocked = k.blocked
		}
		if s.RPD > 0 || s.TPD > 0 || !s.Blocked.IsZero() {
			out = append(out, s)
		}
	})
	return out
}
