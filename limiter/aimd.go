package limiter

import (
	"math"
	"time"
)

// AIMDConfig tunes an AIMD. Zero fields take the defaults below.
type AIMDConfig struct {
	// StartRate is the least request rate (per second) a ramp starts
	// from; it doubles every round trip in which the key used it (see
	// AIMD.Ramp) (default 2).
	StartRate float64
	// Step is how often the rates may grow (default 100ms); a ramp's
	// step is the key's round trip, between Grain and Step.
	Step time.Duration
	// Hold is how long after a cut the rates stay put (default 5s).
	Hold time.Duration
	// Margin is the fraction of a measured rate left unused after a cut
	// (default 0.05).
	Margin float64
	// Decrease multiplies a rate cut without a measurement (default 0.7).
	Decrease float64
	// Probe is the additive increase per Step after Hold, as a fraction of
	// the last measured rate (default 0.002: 2% a second with the default
	// Step). Above the measured rate the increase doubles every Step, so a
	// limit that was raised is found in seconds.
	Probe float64
	// ProbeKeep is the fraction of the rate that drew a 429 while probing
	// that a cut keeps at least (default 0.8): the server sustained nearly
	// that much, even if the key's own measurement (a lower bound) says
	// less.
	ProbeKeep float64
	// MinSample is the shortest interval a measurement is taken over
	// (default 250ms).
	MinSample time.Duration
	// Burst is how much refill a server's bucket is taken to hold when
	// the key starts (default 1s, like Limits.Burst): the first
	// measurement discounts it.
	Burst time.Duration
	// Grain is the finest spacing admissions can be paced at (timer
	// wake-ups are not exact below it): a guessed rate admits one request
	// at a time, or Grain's worth of the rate where that is more (default
	// 10ms). Paced one by one at 1,000/s, a ramp never used 75% of its rate
	// and stopped doubling there. It is also the shortest step of a ramp.
	Grain time.Duration
	// BackoffBase is the key-wide pause after a refusal without a hint; it
	// doubles with every further one before a success (default 250ms), up
	// to BackoffMax (default DefaultMaxPause).
	BackoffBase, BackoffMax time.Duration
	// RampPerStep makes a ramp double per Step, not per round trip. The
	// shared AIMD (redisbudget) does: its processes' 429s reach the
	// shared state a Redis round trip and a busy client's delay after the
	// server sent them, and per round trip a loaded machine's ramp doubled
	// several times before the first cut (35-42 429s of 70 requests).
	RampPerStep bool
}

// SharedAIMD is the configuration of the AIMD processes share through
// Redis: DefaultAIMD with a ramp per Step (see RampPerStep).
var SharedAIMD = func() AIMDConfig {
	c := DefaultAIMD
	c.RampPerStep = true
	return c
}()

// DefaultAIMD is the configuration the Limiter uses.
var DefaultAIMD = AIMDConfig{
	StartRate:   2,
	Step:        100 * time.Millisecond,
	Hold:        5 * time.Second,
	Margin:      0.05,
	Decrease:    0.7,
	Probe:       0.002,
	ProbeKeep:   0.8,
	MinSample:   250 * time.Millisecond,
	Burst:       time.Second,
	Grain:       10 * time.Millisecond,
	BackoffBase: 250 * time.Millisecond,
	BackoffMax:  DefaultMaxPause,
}

func (c AIMDConfig) withDefaults() AIMDConfig {
	d := DefaultAIMD
	positive(&c.StartRate, d.StartRate)
	positive(&c.Step, d.Step)
	positive(&c.Hold, d.Hold)
	positive(&c.Margin, d.Margin)
	positive(&c.Decrease, d.Decrease)
	positive(&c.Probe, d.Probe)
	positive(&c.ProbeKeep, d.ProbeKeep)
	positive(&c.MinSample, d.MinSample)
	positive(&c.Burst, d.Burst)
	positive(&c.Grain, d.Grain)
	positive(&c.BackoffBase, d.BackoffBase)
	positive(&c.BackoffMax, d.BackoffMax)
	c.Margin = min(c.Margin, 0.5)
	c.Decrease = min(c.Decrease, 0.95)
	c.ProbeKeep = min(c.ProbeKeep, 0.95)
	return c
}

// positive sets *v to def unless it is positive (NaN is not).
func positive[T float64 | time.Duration](v *T, def T) {
	if !(*v > 0) {
		*v = def
	}
}

// The dimensions an AIMD learns: requests and combined (input+output)
// tokens per second.
const (
	aimdRequests = iota
	aimdTokens
	aimdDims
)

// aimdAmount is what c counts in dimension d.
func aimdAmount(c Cost, d int) float64 {
	if d == aimdRequests {
		return float64(c.Requests)
	}
	return float64(c.Input + c.Output)
}

// AIMD learns, from a server's 429s alone, the request and token rates it
// sustains: for servers that send no rate-limit headers. It is a pure
// decision: every method takes the instant, nothing reads a clock. It is
// not safe for concurrent use (the Limiter calls it under the key's lock).
//
// The measurement: when a 429 comes back, the server's bucket is empty;
// it was empty at the previous 429 too, so what the server accepted in
// between, over the time in between, is the rate it sustains (from below:
// refill wasted while its bucket was full is not seen). Each cut therefore
// sets the rates just under that measurement (multiplicative decrease,
// with a margin for the measurement's error), not to a blind half. After
// Hold without a 429 the rates grow by Probe of the measurement per Step
// (additive increase), faster and faster once above it, and only in Steps
// where the key actually used its rate. A 429 of an attempt sent before
// the last cut is an echo of the same congestion and changes nothing.
//
// Before the first 429 the rates are unknown (no limit), unless Ramp
// started a slow start: the request rate begins at StartRate and doubles
// every round trip the key used it (TCP's slow start: the answers' smoothed
// latency, at least Grain and at most Step), so the first 429, which comes
// back within a round trip, finds the key sending at most about twice what
// the server sustains, with few attempts in flight. Per fixed Step, a
// server answering in 2ms took 600ms to reach what it sustains; one
// answering in a second or more ramps per Step as before.
type AIMD struct {
	cfg AIMDConfig

	ramping bool              // slow start: requests double per used round trip
	rtt     float64           // smoothed answer latency, µs (0: none yet)
	rate    [aimdDims]float64 // per second; 0 = no limit
	peak    [aimdDims]float64 // the last measurement; 0 = none
	inc     [aimdDims]float64 // additive increase per Step
	acc     [aimdDims]float64 // accepted in this measurement (tokens reconciled)
	epoch   uint64            // cuts and backoffs so far: attempts sent since carry it
	meas    uint64            // measurements so far
	since   time.Time         // start of this measurement (the last measured 429)
	hold    time.Time         // no growth before this instant
	stepAt  time.Time         // start of the current Step
	sent    [aimdDims]float64 // sent in the current Step
	binding [aimdDims]bool    // the last Step used (most of) the rate
	streak  int               // 429s without a hint since the last success
	cuts    int64             // rate cuts so far
	started bool              // since and stepAt are set
	fresh   bool              // the measurement began with the server's bucket full
}

// NewAIMD returns an AIMD with no rates, configured by cfg (zero fields
// take DefaultAIMD's values).
func NewAIMD(cfg AIMDConfig) *AIMD { return &AIMD{cfg: cfg.withDefaults()} }

// AIMDReaction is what the limiter does after a 429.
type AIMDReaction struct {
	// Echo: the attempt was sent before the last cut; nothing changed.
	Echo bool
	// Pause is the key-wide pause a 429 without a hint calls for (0 with
	// a hint: the caller pauses as the server said).
	Pause time.Duration
	// Drain: the server's bucket is empty, so empty the key's learned
	// buckets too; otherwise they would spend their burst at once and
	// draw more 429s.
	Drain bool
}

// start sets the clocks the first time the AIMD is used.
func (a *AIMD) start(now time.Time) {
	if !a.started {
		a.started, a.since, a.stepAt, a.fresh = true, now, now, true
	}
}

// Ramp tells the AIMD of an answer that took latency on a key that learns
// its limits: it feeds the round trip the slow start doubles per (smoothed
// as TCP's, by 1/8 a sample), and the first time, unless rates are known
// already, it starts the slow start of the request rate: at StartRate, or
// at one request per latency if that is more, since a server that answers
// in latency takes one request at a time at that rate at least, and a 429
// comes back about as fast, so few attempts are in flight when it does.
func (a *AIMD) Ramp(now time.Time, latency time.Duration) {
	a.start(now)
	if latency > 0 {
		// In µs and without a product (no fused multiply-add), as the
		// shared AIMD's Lua computes it.
		s := float64(latency) / 1e3
		if a.rtt == 0 {
			a.rtt = s
		} else {
			a.rtt += (s - a.rtt) / 8
		}
	}
	if a.rate[aimdRequests] > 0 || a.peak[aimdRequests] > 0 {
		return
	}
	a.ramping = true
	a.rate[aimdRequests] = a.cfg.StartRate
	if latency > 0 {
		a.rate[aimdRequests] = max(a.cfg.StartRate, 1/latency.Seconds())
	}
	a.stepAt, a.sent = now, [aimdDims]float64{}
}

// Reset forgets the rates (rate-limit headers now describe the key); the
// 429 count is kept.
func (a *AIMD) Reset() {
	*a = AIMD{cfg: a.cfg, cuts: a.cuts, epoch: a.epoch + 1, meas: a.meas + 1}
}

// Rates returns the rates in force at now, per second: requests and
// combined tokens; 0 means no limit.
func (a *AIMD) Rates(now time.Time) (requests, tokens float64) {
	a.advance(now)
	return a.rate[aimdRequests], a.rate[aimdTokens]
}

// Unmeasured reports whether the request rate in force is a guess (a
// ramp, or a cut before any measurement): the key should then pace one
// request at a time rather than allow a burst, so that few attempts are in
// flight when the next 429 comes.
func (a *AIMD) Unmeasured() bool {
	return a.rate[aimdRequests] > 0 && (a.ramping || a.peak[aimdRequests] == 0)
}

// Peak returns the last measured sustained rates (0 when none).
func (a *AIMD) Peak() (requests, tokens float64) {
	return a.peak[aimdRequests], a.peak[aimdTokens]
}

// Cuts returns how many times a 429 cut the rates.
func (a *AIMD) Cuts() int64 { return a.cuts }

// AIMDMark is what an AIMD remembers of one attempt: pass the mark Sent
// returned back with the attempt's outcome.
type AIMDMark struct {
	epoch uint64 // cuts and backoffs before it was sent: a 429 of an older epoch is an echo
	meas  uint64 // the measurement it counts in
}

// Sent records an attempt admitted at now with the reserved cost c.
func (a *AIMD) Sent(now time.Time, c Cost) AIMDMark {
	a.start(now)
	a.advance(now)
	for d := range aimdDims {
		a.acc[d] += aimdAmount(c, d)
		a.sent[d] += aimdAmount(c, d)
	}
	return AIMDMark{a.epoch, a.meas}
}

// Unsent takes back an attempt that was admitted but never sent.
func (a *AIMD) Unsent(m AIMDMark, c Cost) {
	if m.meas != a.meas {
		return
	}
	for d := range aimdDims {
		a.acc[d] -= aimdAmount(c, d)
	}
}

// Answered records a success: the tokens counted are the actual ones, and
// a success shortens the next hint-less pause.
func (a *AIMD) Answered(m AIMDMark, reserved, actual Cost) {
	a.streak = max(a.streak-1, 0)
	if m.meas != a.meas {
		return
	}
	a.acc[aimdTokens] += aimdAmount(actual, aimdTokens) - aimdAmount(reserved, aimdTokens)
}

// Failed records an attempt that failed for another reason than load: the
// server counted the request, presumably not its tokens.
func (a *AIMD) Failed(m AIMDMark, reserved Cost) {
	if m.meas != a.meas {
		return
	}
	a.acc[aimdTokens] -= aimdAmount(reserved, aimdTokens)
}

// RateLimited records a 429 at now of an attempt with mark m and reserved
// cost; hinted says the server sent a retry-after. Unless it is an echo of
// the last cut, it cuts the rates and starts Hold. When the measurement
// since the last measured 429 spans at least MinSample and two accepted
// requests, the rates are set just under it; otherwise they are cut by
// Decrease and the measurement goes on, to be taken at a later 429 over a
// longer span. It says how long to pause the key when the server gave no
// hint: BackoffBase, doubling per hint-less 429 without a success between.
func (a *AIMD) RateLimited(now time.Time, m AIMDMark, reserved Cost, hinted bool) AIMDReaction {
	return a.RateLimitedOn(now, m, reserved, hinted, DimNone)
}

// RateLimitedOn is RateLimited for a 429 that names the dimension it was
// about (DimRequests; DimTokens, DimInput or DimOutput for tokens; DimNone
// when it does not say): only that dimension's rate is cut, so a gateway
// that limits requests alone never gets a token rate invented for it. A
// 429 that names nothing cuts the dimensions whose rates were binding in
// the last Step, else those with a rate, else the requests.
func (a *AIMD) RateLimitedOn(now time.Time, m AIMDMark, reserved Cost, hinted bool, named Dimension) AIMDReaction {
	a.start(now)
	a.advance(now)
	if m.epoch != a.epoch {
		return AIMDReaction{Echo: true}
	}
	if m.meas == a.meas {
		for d := range aimdDims {
			a.acc[d] -= aimdAmount(reserved, d)
		}
	}
	span := now.Sub(a.since)
	n := a.acc[aimdRequests]
	// A fresh measurement is divided by span+Burst, so a short span
	// does not make it wild.
	measured := n >= 2 && (a.fresh || span >= a.cfg.MinSample)
	cut := a.cutDims(named)
	for d := range aimdDims {
		r := a.rate[d]
		switch {
		case !cut[d] && a.peak[d] == 0:
			// Not named and never measured: a ramp's guess, which the
			// rate of the dimension named paces from now on.
			r = 0
		case !cut[d]:
		case measured && a.acc[d] > 0:
			// The server's bucket held less than one request at both
			// ends of the span, so n accepted requests measure n±1
			// requests' worth of refill: n+½ is the unbiased guess.
			est := a.acc[d] * (n + 0.5) / n / span.Seconds()
			if a.fresh {
				// The first measurement began with the server's bucket
				// full, not empty: it holds a burst more than the span
				// refilled, taken to be Burst's worth.
				est = a.acc[d] * (n + 0.5) / n / (span + a.cfg.Burst).Seconds()
			}
			// The measurement is a lower bound when the key sent less
			// than the server would take (a Hold under a limit that
			// has since risen); the rate that drew the 429 is an upper
			// one. A probe overshoots by little, so most of it holds;
			// a ramp overshoots by up to twice, so it says nothing.
			if !a.ramping && a.binding[d] {
				est = max(est, a.cfg.ProbeKeep*r)
			}
			a.peak[d] = est
			r = (1 - a.cfg.Margin) * est
			if a.rate[d] > 0 {
				r = min(r, (1-a.cfg.Margin)*a.rate[d])
			}
		case r > 0:
			r *= a.cfg.Decrease
		}
		a.rate[d] = r
		base := a.peak[d]
		if base == 0 {
			base = r
		}
		a.inc[d] = a.cfg.Probe * base
	}
	a.ramping = false
	a.cuts++
	a.epoch++
	if measured {
		a.fresh = false
		a.meas++
		a.acc = [aimdDims]float64{}
		a.since = now
	}
	a.hold = now.Add(a.cfg.Hold)
	a.stepAt, a.sent = now, [aimdDims]float64{}
	var pause time.Duration
	if !hinted {
		a.streak++
		pause = a.cfg.BackoffBase << min(a.streak-1, 30)
		pause = min(pause, a.cfg.BackoffMax)
	}
	return AIMDReaction{Pause: pause, Drain: true}
}

// stepLen is the length of the current step: while ramping, the round
// trip (whole µs, at least Grain, at most Step; Step before any answer);
// otherwise Step.
func (a *AIMD) stepLen() time.Duration {
	if !a.ramping || a.rtt <= 0 || a.cfg.RampPerStep {
		return a.cfg.Step
	}
	l := time.Duration(math.Floor(a.rtt)) * time.Microsecond
	return min(max(l, a.cfg.Grain), a.cfg.Step)
}

// advance closes the steps that ended by now: a step in which the key
// used at least three quarters of a rate lets the rates grow (doubling
// while ramping; after Hold, each rate so used by its additive increase,
// which doubles above the measured rate). Steps with nothing sent grow nothing.
func (a *AIMD) advance(now time.Time) {
	if !a.started || a.cfg.Step <= 0 {
		return
	}
	step := a.stepLen()
	steps := now.Sub(a.stepAt) / step
	if steps <= 0 {
		return
	}
	end := a.stepAt.Add(step)
	used := false
	for d := range aimdDims {
		r := a.rate[d]
		a.binding[d] = r > 0 && a.sent[d] >= 0.75*r*step.Seconds()
		used = used || a.binding[d]
	}
	switch {
	case !used:
	case a.ramping:
		a.rate[aimdRequests] *= 2
	case !end.Before(a.hold):
		for d := range aimdDims {
			// Only a rate the key used grows: one that binds nothing
			// (requests, where tokens bind) would otherwise double its
			// increase every second for the whole run (3e12 RPM "learned
			// from 429s" in a 30 s run's summary) and, once the other
			// rate let it bind, be no limit at all.
			if a.rate[d] <= 0 || !a.binding[d] {
				continue
			}
			a.rate[d] += a.inc[d]
			if a.peak[d] > 0 && a.rate[d] > a.peak[d]*(1+1e-9) {
				// Above the measurement: double the increase every
				// second, fast enough to find a raised limit in
				// seconds, slow enough not to overshoot it by much
				// while the server spends the slack it saved.
				a.inc[d] = min(a.inc[d]*math.Exp2(a.cfg.Step.Seconds()), a.rate[d])
			}
		}
	}
	a.stepAt = a.stepAt.Add(steps * step)
	a.sent = [aimdDims]float64{}
}

// cutDims is which rates a 429 naming named cuts (see RateLimitedOn).
func (a *AIMD) cutDims(named Dimension) (cut [aimdDims]bool) {
	switch named {
	case DimRequests:
		cut[aimdRequests] = true
		return cut
	case DimTokens, DimInput, DimOutput:
		cut[aimdTokens] = true
		return cut
	}
	for d := range aimdDims {
		cut[d] = a.rate[d] > 0 && a.binding[d]
	}
	if cut == ([aimdDims]bool{}) {
		for d := range aimdDims {
			cut[d] = a.rate[d] > 0
		}
	}
	if cut == ([aimdDims]bool{}) {
		cut[aimdRequests] = true
	}
	return cut
}

// Backoff is the pause a 429 without a hint calls for on a key whose
// limits are described (no rate is learned from it, see Refusal), for the
// attempt with mark m: the same backoff as RateLimited's, doubling per
// such 429 without a success between, so a storm of hint-less 429s does
// not retry at full speed. As there, a 429 of an attempt sent before the
// last backoff or cut is an echo of the same congestion: it returns 0 and
// doubles nothing; counted, a burst of n in-flight 429s paused the key
// for 250ms × 2^(n-1) (two minutes for ten).
func (a *AIMD) Backoff(m AIMDMark) time.Duration {
	if m.epoch != a.epoch {
		return 0
	}
	a.epoch++
	a.streak++
	return min(a.cfg.BackoffBase<<min(a.streak-1, 30), a.cfg.BackoffMax)
}
