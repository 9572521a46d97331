package limiter

import (
	"math"
	"sync"
	"sync/atomic"
	"time"
)

// Auto-mode concurrency bounds.
const (
	// autoMaxConcurrency caps the learned concurrency when Limits.Concurrency
	// is 0; the runner's worker pool is the real bound.
	autoMaxConcurrency = 1024
)

// waiter is one Reserve call queued behind others (or blocked at the head).
type waiter struct {
	cost    Cost
	arrived time.Time
	wake    chan struct{} // buffered 1: "re-evaluate", never lost
	// vt is the virtual arrival (UnixNano) and seq the call's place in
	// the key's calls: the queue's order (see waitQueue).
	vt  int64
	seq uint64
	idx int // index in the queue, -1 when not queued
}

// keyState is the budget of one key. Every method requires k.mu to be held
// unless it says otherwise; methods ending in At take the instant explicitly
// and read no clock, so the logic is table-testable.
type keyState struct {
	mu   sync.Mutex
	name string

	conf    Limits              // as configured (defaults applied, normalised)
	learned [numBuckets]float64 // per-minute limits from *-limit-* headers (Auto); 0 = unknown
	biggest [numBuckets]float64 // largest single cost seen per bucket: capacity never goes below it
	b       [numBuckets]bucket  // the buckets in force
	last    time.Time           // instant the buckets were last refilled to
	pause   time.Time           // no admissions before this instant
	q       waitQueue           // by priority, then arrival; q[0] is the only one that may be admitted
	calls   uint64              // Reserve calls queued so far: FIFO within a priority
	acctAt  time.Time           // wait accounting is up to date until here
	blocked Dimension           // what blocks q[0], for wait accounting

	inflight int
	// out is what in-flight reservations hold per bucket; cum is the
	// cumulative net charge per bucket (reservations plus reconciliation).
	out, cum [numBuckets]float64
	// Auto-mode concurrency window (TCP-like): cwnd slots, slow start below
	// ssthresh, +1 per window of successes above it, halved on a 429.
	cwnd, ssthresh float64
	seq            uint64 // admissions so far; a Reservation remembers its own
	cutSeq         uint64 // seq at the last multiplicative cut
	cutArmed       bool   // a request admitted after the last cut has finished
	caCount        int    // successes since the last additive increase
	// ovlCount counts the overloads of attempts admitted since the last
	// cut: the window is cut only when they are most of those admitted.
	ovlCount int

	// rc learns request and token rates from 429s where no headers
	// describe the key; rcRate is what applyLimits last took from it
	// (per second, 0 = none), epoch the epoch of the last admission.
	rc     *AIMD
	rcRate [aimdDims]float64
	mark   AIMDMark
	// acc governs the request rate against acceleration limits (a
	// warm-up, a hold after a ramp refusal); accRate is what applyLimits
	// last took from it (per second, 0 = none).
	acc     accel
	accRate float64

	// statistics
	wait         time.Duration
	waitBy       [NumDimensions]time.Duration
	reservations int64
	rateLimited  int64
	overloaded   int64
	pauseClamped int64
	learnedAny   bool
	// inputOn mirrors whether an input or combined-token bucket is in
	// force, for CountsInput to read without the lock.
	inputOn atomic.Bool
}

func newKeyState(name string, lim Limits, now time.Time) *keyState {
	k := &keyState{name: name, last: now, acctAt: now, cutArmed: true, rc: NewAIMD(AIMDConfig{})}
	k.setLimitsAt(now, lim)
	return k
}

// normalize applies the documented defaults to lim.
// Normalized returns lim with its documented defaults applied and invalid
// numbers zeroed, as every key of a budget sees it.
func (lim Limits) Normalized() Limits { return normalize(lim) }

func normalize(lim Limits) Limits {
	if lim.Burst <= 0 {
		lim.Burst = time.Second
	}
	if lim.Headroom <= 0 || lim.Headroom > 1 || math.IsNaN(lim.Headroom) {
		lim.Headroom = 1
	}
	for i := range numBuckets {
		if v := lim.PerMinute(i); v < 0 || math.IsNaN(v) || math.IsInf(v, 0) {
			lim.setPerMinute(i, 0)
		}
	}
	if lim.Concurrency < 0 {
		lim.Concurrency = 0
	}
	lim.Skew = max(lim.Skew, 0)
	lim.WarmUp = max(lim.WarmUp, 0)
	return lim
}

// setLimitsAt replaces the key's configuration, keeping the buckets' levels
// (clamped to the new capacities) and anything learned.
func (k *keyState) setLimitsAt(now time.Time, lim Limits) {
	k.syncAt(now)
	wasAuto := k.conf.Auto
	k.conf = normalize(lim)
	if k.conf.Auto && !wasAuto {
		k.cwnd, k.ssthresh = 1, math.Inf(1)
	}
	k.warmUpAt(now)
	k.refreshRates(now)
	k.applyLimits()
	k.syncAt(now) // clamp levels to the new capacities
}

// effective returns the per-minute limit in force for bucket i: the explicit
// number, or in Auto mode the one learned from headers, never above an
// explicit number; and never above a rate learned from 429s.
func (k *keyState) effective(i int) float64 {
	v := k.limit(i)
	if r := k.accRate * 60; i == 0 && r > 0 && (v == 0 || r < v) {
		v = r // a warm-up or a hold against acceleration limits
	}
	return v
}

// limit is bucket i's per-minute limit, described or learned from 429s:
// what Stats reports (a warm-up paces under it, it is no limit).
func (k *keyState) limit(i int) float64 {
	v := k.described(i)
	if r := k.refusalRate(i); r > 0 && (v == 0 || r < v) {
		v = r
	}
	return v
}

// described is bucket i's per-minute limit from the configuration and the
// headers: the limit a request can be too large for.
func (k *keyState) described(i int) float64 {
	v := k.conf.PerMinute(i)
	if l := k.learned[i]; k.conf.Auto && l > 0 && (v == 0 || l < v) {
		v = l
	}
	return v
}

// refusalRate is the per-minute rate of bucket i learned from 429s (0:
// none): requests, and the combined tokens.
func (k *keyState) refusalRate(i int) float64 {
	switch i {
	case 0:
		return k.rcRate[aimdRequests] * 60
	case 3:
		return k.rcRate[aimdTokens] * 60
	}
	return 0
}

// refreshRates takes the AIMD's rates at now into the buckets when they
// changed.
func (k *keyState) refreshRates(now time.Time) {
	r, t := k.rc.Rates(now)
	a := k.accelRate(now)
	if r == k.rcRate[aimdRequests] && t == k.rcRate[aimdTokens] && a == k.accRate {
		return
	}
	stepped := r != k.rcRate[aimdRequests] || t != k.rcRate[aimdTokens]
	k.rcRate, k.accRate = [aimdDims]float64{r, t}, a
	k.applyLimits()
	if stepped {
		// A head sleeping until a bucket refills may go sooner (a
		// ramp's doubling). The AIMD's rates move in steps, so this is
		// once a step; a warm-up's rate grows at every instant, and
		// waking on it would wake the head at every look.
		k.wakeHead()
	}
}

// applyLimits recomputes the buckets' rates and capacities. A bucket that
// comes into existence starts full.
func (k *keyState) applyLimits() {
	for i := range k.b {
		b := &k.b[i]
		perMin := k.effective(i)
		if perMin <= 0 {
			*b = bucket{}
			continue
		}
		was := b.on()
		b.paced = false
		b.rate = perMin * k.conf.Headroom / 60
		burst := b.rate * k.conf.Burst.Seconds()
		b.max = math.Inf(1) // a limit learned from 429s makes nothing too large
		if d := k.described(i); d > 0 {
			b.max = max(d, d*k.conf.Headroom/60*k.conf.Burst.Seconds())
			if i == 0 {
				b.max = max(b.max, 1) // under 1 rpm (0.5: one every 2 min) paces, never refuses
			}
		}
		b.cap = min(max(burst, k.biggest[i]), b.max)
		if d := k.described(0); i == 0 && (k.rc.Unmeasured() || k.accRate > 0) && (d == 0 || perMin < d) {
			// A guessed rate paces one request at a time, or a timer
			// grain's worth at rates a timer cannot space one by one: a
			// burst would let the concurrency window, not the rate,
			// decide how many attempts are in flight when the next 429
			// comes. No skew margin either: it would make every
			// admission wait for a full bucket, a timer per request.
			b.cap = b.rate * k.rc.cfg.Grain.Seconds()
			b.paced = true
		}
		if i == 0 {
			b.cap = max(b.cap, 1) // one request always fits
		}
		if !was {
			b.level = b.cap
		}
	}
	k.inputOn.Store(k.b[1].on() || k.b[3].on())
}

// concLimit is the number of attempts that may be in flight; 0 = unlimited.
func (k *keyState) concLimit() int {
	if k.conf.Auto {
		n := int(k.cwnd)
		if c := k.conf.Concurrency; c > 0 && n > c {
			n = c
		}
		return max(n, 1)
	}
	return k.conf.Concurrency
}

func (k *keyState) maxConc() float64 {
	if k.conf.Concurrency > 0 {
		return float64(k.conf.Concurrency)
	}
	return autoMaxConcurrency
}

// fit raises a bucket's capacity to c's cost when that is larger than the
// burst (but within the per-minute limit, see tooLarge): a request bigger
// than the burst must be admissible. A bucket that was full is topped up to
// the new capacity, as if it had held that much all along, so an idle key
// admits it at once; otherwise it accrues up to it. The capacity stays
// raised: it is never below the largest single request seen.
func (k *keyState) fit(c Cost) {
	for i := range k.b {
		b := &k.b[i]
		a := c.Amount(i)
		if !b.on() || a <= b.cap || a > b.max {
			continue
		}
		k.biggest[i] = a
		if b.level >= b.cap-eps {
			b.level = a
		}
		b.cap = a
	}
}

// syncAt refills the buckets to now and brings the wait accounting up to
// date. An instant before the last one is treated as the last one.
func (k *keyState) syncAt(now time.Time) {
	if d := now.Sub(k.acctAt); d > 0 {
		if n := len(k.q); n > 0 {
			k.waitBy[k.blocked] += time.Duration(n) * d
		}
		k.acctAt = now
	}
	dt := now.Sub(k.last).Seconds()
	if dt < 0 {
		dt = 0
	} else {
		k.last = now
	}
	for i := range k.b {
		b := &k.b[i]
		if !b.on() {
			continue
		}
		b.level = min(b.level+b.rate*dt, b.cap)
	}
	k.refreshRates(now)
}

// tooLarge reports a cost no bucket of this key could ever cover.
func (k *keyState) tooLarge(c Cost) error {
	for i := range k.b {
		b := &k.b[i]
		if b.on() && c.Amount(i) > b.max {
			return &TooLargeError{Key: k.name, Dimension: Dimension(i + 1), Cost: int64(c.Amount(i)), Limit: int64(b.max)}
		}
	}
	return nil
}

// reserveAt admits c at now if the key is not paused, has a free concurrency
// slot and every bucket covers c: it then takes c from every bucket and one
// slot and returns DimNone. Otherwise it takes nothing and returns the
// binding dimension and how long until the pause and buckets would allow c
// (0 when only concurrency binds: that waits for a slot, not a time).
// The caller must have checked that c is the head of the queue (or the queue
// is empty) and not tooLarge.
func (k *keyState) reserveAt(now time.Time, c Cost) (time.Duration, Dimension) {
	k.syncAt(now)
	k.fit(c)
	var wait time.Duration
	dim := DimNone
	if now.Before(k.pause) {
		wait, dim = k.pause.Sub(now), DimPause
	}
	for i := range k.b {
		b := &k.b[i]
		if !b.on() {
			continue
		}
		if need := k.need(b, c.Amount(i)) - b.level; need > eps {
			need = max(need, k.gather(b, c.Amount(i))-b.level)
			if d := durationOf(need / b.rate); d > wait || dim == DimNone {
				wait, dim = max(d, 1), Dimension(i+1)
			}
		}
	}
	if dim != DimNone {
		return wait, dim
	}
	if n := k.concLimit(); n > 0 && k.inflight >= n {
		return 0, DimConcurrency
	}
	for i := range k.b {
		if k.b[i].on() {
			k.b[i].level -= c.Amount(i)
			k.out[i] += c.Amount(i)
			k.cum[i] += c.Amount(i)
		}
	}
	k.inflight++
	k.seq++
	k.reservations++
	k.mark = k.rc.Sent(now, c)
	k.acc.admitted(now)
	return 0, DimNone
}

// gather is the level a paced bucket short of amount waits for (see
// reserveAt): a quarter of its capacity (of a grain's worth of the rate),
// or as much as the queue asks for if that is less, so that the queue's
// head sleeps once per quarter grain and the waiters behind it are
// admitted in a run, instead of a timer and a wake-up for every request.
// The rate is unchanged: the bucket keeps filling while the head sleeps,
// and a late wake-up loses no refill to a full bucket. A quarter, not
// more: the ramp doubles after a step (as short as a grain) in which the
// key sent three quarters of its rate, and runs of half a grain falling
// either side of a step's end made it miss doublings. A bucket that is
// not paced gathers nothing beyond need.
func (k *keyState) gather(b *bucket, amount float64) float64 {
	if !b.paced {
		return 0
	}
	return max(amount, min(b.cap/4, amount*float64(len(k.q))))
}

// need is the level bucket b must hold to admit amount: amount plus the
// skew margin (see Limits.Skew), but never more than the capacity, so a
// request as large as the bucket is still admitted when it is full.
func (k *keyState) need(b *bucket, amount float64) float64 {
	if amount <= 0 || b.paced {
		return amount
	}
	return min(amount+b.rate*k.conf.Skew.Seconds(), max(b.cap, amount))
}

// charged records which buckets exist, so a reservation reconciles only the
// buckets it was actually charged to (Auto mode may add buckets mid-flight).
func (k *keyState) charged() (m uint8) {
	for i := range k.b {
		if k.b[i].on() {
			m |= 1 << i
		}
	}
	return m
}

// finishAt ends an admitted attempt: it reconciles the buckets it was charged
// to from reserved to actual (the caller decides whether the request charge
// stays: it does for a sent request) (refunds are capped at capacity, charges may make
// a level negative), frees its slot and, on success in Auto mode, grows the
// concurrency window.
func (k *keyState) finishAt(now time.Time, mask uint8, seq uint64, reserved, actual Cost, success bool) {
	k.syncAt(now)
	actual.Requests = reserved.Requests // a sent request always counts
	refunded := false
	for i := range k.b {
		b := &k.b[i]
		if !b.on() || mask&(1<<i) == 0 {
			continue
		}
		d := reserved.Amount(i) - actual.Amount(i)
		k.out[i] -= reserved.Amount(i)
		k.cum[i] -= d
		if d > 0 {
			refunded = refunded || b.level < b.cap
			b.level = max(b.level, min(b.level+d, b.cap))
		} else {
			b.level += d
		}
	}
	if k.conf.Auto {
		if seq > k.cutSeq {
			k.cutArmed = true
		}
		if success && k.inflight >= k.concLimit() {
			// Grow only when the window was full: a paced key whose slots
			// are not all in use learns nothing about concurrency.
			if k.cwnd < k.ssthresh {
				k.cwnd++ // slow start: +1 per success doubles per round
			} else if k.caCount++; k.caCount >= int(k.cwnd) {
				k.cwnd++ // additive increase: +1 per window of successes
				k.caCount = 0
			}
			k.cwnd = min(k.cwnd, k.maxConc())
		}
	}
	k.inflight--
	if refunded || k.blocked == DimConcurrency {
		// Only a free slot or a refund can let the head in sooner:
		// a head that sleeps until a bucket refills is not woken for
		// every answer (that was a wake-up and a new timer each).
		k.wakeHead()
	}
}

// answeredAt tells the AIMD of a success. In Auto mode, a key whose first
// answers bring no rate-limit headers starts the AIMD's ramp: without it,
// nothing would pace the key until the first 429, which would then find it
// sending as fast as the concurrency window allows.
func (k *keyState) answeredAt(now, admitted time.Time, mark AIMDMark, reserved, actual Cost) {
	k.rc.Answered(mark, reserved, actual)
	if k.conf.Auto && !k.learnedAny {
		k.rc.Ramp(now, now.Sub(admitted))
		k.refreshRates(now)
	}
}

// cancelAt ends an admission whose request was never sent: everything is
// returned, the request charge too.
func (k *keyState) cancelAt(now time.Time, mask uint8, seq uint64, reserved Cost) {
	k.finishAt(now, mask, seq, reserved, Cost{}, false)
	if b := &k.b[0]; b.on() && mask&1 != 0 {
		b.level = max(b.level, min(b.level+reserved.Amount(0), b.cap))
		k.cum[0] -= reserved.Amount(0)
		k.wakeHead()
	}
}

// rateLimitedAt records a 429. In Auto mode it halves the concurrency window,
// at most once per round: 429s of attempts admitted before the last cut are
// echoes of the same congestion.
func (k *keyState) rateLimitedAt(now time.Time) {
	k.syncAt(now)
	k.rateLimited++
	k.cutWindow(0.5)
}

// cutWindow multiplies the Auto-mode concurrency window by f, at most once
// per round.
func (k *keyState) cutWindow(f float64) {
	if !k.conf.Auto || !k.cutArmed {
		return
	}
	k.ssthresh = max(1, math.Floor(k.cwnd*f))
	k.cwnd = k.ssthresh
	k.caCount = 0
	k.cutSeq = k.seq
	k.cutArmed = false
	k.ovlCount = 0
}

// Overloads cut the window only when at least overloadMin attempts admitted
// since the last cut were overloads and they were at least overloadShare of
// those admitted: a provider that fails a share of calls at random is
// degraded, not congested, and slowing down would not help it. The share is
// of those admitted, not of those ended: a refusal comes back at once and
// an answer seconds later, so among the attempts ended so far the
// refusals of a round are overrepresented (at 42% shed at random they
// read as most of it and cut the window every round).
const (
	overloadMin   = 4
	overloadShare = 0.5
	overloadCut   = 0.7
)

// refusedAt ends an attempt the server turned away: a 429 (rate limited)
// or, with r.Overloaded, a 503/529. The attempt's slot and token charges
// are returned as by a failure. A 429 feeds the AIMD unless headers
// describe the key (the AIMD cuts the rates, and the buckets it governs are
// emptied: the server's is), halves the Auto window (once per round) and
// pauses the key: for the server's hint, or for the AIMD's backoff
// without one. An overload pauses the key only for a hint, and cuts the
// Auto window only when most attempts of the round were overloads. Pauses
// are capped at maxPause; it reports whether the hint was cut and whether
// the key was paused already.
func (k *keyState) refusedAt(now time.Time, mask uint8, seq uint64, mark AIMDMark, reserved Cost, r Refusal, maxPause time.Duration) (clamped, wasPaused bool) {
	k.finishAt(now, mask, seq, reserved, Cost{}, false)
	until := now // a RetryAfter without HasRetryAfter is no hint (see Refusal)
	if r.HasRetryAfter {
		until = now.Add(max(r.RetryAfter, 0))
	}
	if r.Ramp {
		k.rateLimited++
		if end := k.rampRefusedAt(now, seq); end.After(until) {
			until = end
		}
	} else if r.Overloaded {
		k.overloaded++
		if seq > k.cutSeq {
			k.ovlCount++
			if admitted := k.seq - k.cutSeq; k.ovlCount >= overloadMin && float64(k.ovlCount) >= overloadShare*float64(admitted) {
				k.cutWindow(overloadCut)
			}
		}
	} else {
		k.rateLimited++
		if k.inflight+1 >= k.concLimit() {
			// The window was full: concurrency may be what the server
			// refused. Otherwise the rates answer for it.
			k.cutWindow(0.5)
		}
		if k.bare(r) {
			re := k.rc.RateLimitedOn(now, mark, reserved, r.HasRetryAfter, r.Dimension)
			if !re.Echo {
				k.refreshRates(now)
				for i := range k.b {
					if k.refusalRate(i) > 0 {
						k.b[i].level = min(k.b[i].level, 0)
					}
				}
				if !r.HasRetryAfter {
					until = now.Add(re.Pause)
				}
			}
		} else if pause := k.calibrate(r, mark); pause > 0 {
			until = now.Add(pause)
		}
	}
	if r.HasRetryAfter || until.After(now) {
		clamped, wasPaused = k.pauseAt(now, until, maxPause)
	}
	k.wakeHead()
	return clamped, wasPaused
}

// pauseAt stops admissions until until, but for at most maxPause from now
// (0: no maximum); it never shortens a later pause. It reports whether until
// was cut and whether the key was paused already.
func (k *keyState) pauseAt(now, until time.Time, maxPause time.Duration) (clamped, wasPaused bool) {
	k.syncAt(now)
	wasPaused = now.Before(k.pause)
	if maxPause > 0 && until.Sub(now) > maxPause {
		until, clamped = now.Add(maxPause), true
		k.pauseClamped++
	}
	if until.After(k.pause) {
		k.pause = until
	}
	return clamped, wasPaused
}

// observeAt lowers buckets to what the provider says remains and, in Auto
// mode, takes limits from *-limit-* headers.
func (k *keyState) observeAt(now time.Time, o Observation, headersAt time.Time, after *[numBuckets]float64) {
	k.syncAt(now)
	ws := [numBuckets]Window{o.Requests, o.Input, o.Output, o.Tokens}
	if known(o.Input) || known(o.Output) {
		// With separate input and output limits (Anthropic), the combined
		// tokens window only restates the most restrictive of them; read as
		// a combined budget it would charge input+output against the input
		// limit.
		ws[3] = Window{}
	}
	if k.conf.Auto {
		changed := false
		for i, w := range ws {
			if w.Limit > 0 && float64(w.Limit) != k.learned[i] {
				k.learned[i] = float64(w.Limit)
				changed = true
			}
		}
		if changed {
			k.learnedAny = true
			k.rc.Reset() // headers describe the key: no rates from 429s
			k.rcRate = [aimdDims]float64{}
			k.applyLimits()
			k.syncAt(now)
			k.wakeHead()
		}
	}
	for i, w := range ws {
		if w == (Window{}) || w.Remaining < 0 {
			continue // unknown
		}
		b := &k.b[i]
		if !b.on() {
			continue
		}
		// What the provider may not have counted when it wrote the header.
		unseen := k.out[i]
		if after != nil {
			unseen = k.cum[i] - after[i]
		}
		refill := b.rate * max(now.Sub(headersAt), 0).Seconds()
		b.level = min(b.level, float64(w.Remaining)+refill-unseen)
	}
}

// known reports whether a header said anything about w.
func known(w Window) bool { return w != (Window{}) && (w.Limit >= 0 || w.Remaining >= 0) }

// enqueue queues w, arrived at now with priority p under aging: the
// queue's order is fixed at arrival (see waitQueue).
func (k *keyState) enqueue(w *waiter, p int, aging time.Duration) {
	k.calls++
	w.seq = k.calls
	w.vt = VirtualArrival(w.arrived, p, aging).UnixNano()
	k.q.push(w)
}

// popHead removes the admitted head at now and wakes the next one.
func (k *keyState) popHead(now time.Time) {
	w := k.q.removeAt(0)
	k.wait += max(now.Sub(w.arrived), 0)
	k.wakeHead()
}

// remove takes a waiter that gives up out of the queue.
func (k *keyState) remove(w *waiter, now time.Time) {
	k.syncAt(now)
	wasHead, ok := k.q.remove(w)
	if !ok {
		return
	}
	k.wait += max(now.Sub(w.arrived), 0)
	if wasHead {
		k.wakeHead()
	}
}

// wakeHead asks the head waiter to re-evaluate.
func (k *keyState) wakeHead() {
	if len(k.q) == 0 {
		return
	}
	select {
	case k.q[0].wake <- struct{}{}:
	default:
	}
}

// statsAt snapshots the key.
func (k *keyState) statsAt(now time.Time) KeyStats {
	k.syncAt(now)
	s := KeyStats{
		Key:          k.name,
		Configured:   k.conf,
		Effective:    k.conf,
		Learned:      k.learnedAny,
		Wait:         k.wait,
		WaitBy:       k.waitBy,
		InFlight:     k.inflight,
		Waiting:      len(k.q),
		Reservations: k.reservations,
		RateLimited:  k.rateLimited,
		PausedUntil:  k.pause,
		PauseClamped: k.pauseClamped,
		Overloaded:   k.overloaded,
		RefusalRPM:   k.refusalRate(0),
		RefusalTPM:   k.refusalRate(3),
	}
	if k.rc.Cuts() == 0 {
		// A ramp from the first answer is a guess, not a rate learned
		// from 429s: only a cut measures what the server sustains.
		s.RefusalRPM, s.RefusalTPM = 0, 0
	}
	for _, w := range k.q {
		s.Wait += max(now.Sub(w.arrived), 0)
	}
	for i := range numBuckets {
		s.Effective.setPerMinute(i, k.limit(i))
	}
	s.Effective.Concurrency = k.concLimit()
	var most time.Duration
	for d := DimRequests; d < NumDimensions; d++ {
		if s.WaitBy[d] > most {
			most, s.Binding = s.WaitBy[d], d
		}
	}
	return s
}
