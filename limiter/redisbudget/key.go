package redisbudget

import (
	"sync"
	"time"

	"github.com/llmrun/llmrun/limiter"
)

// numBuckets is the number of buckets of a key: requests, input, output and
// combined tokens, in that order (bucket i binds as Dimension(i+1)), as in
// package limiter.
const numBuckets = limiter.NumBuckets

// params is what the scripts need of a key's limits.
type params struct {
	rate [numBuckets]float64 // refill per second, headroom applied; 0 = no bucket
	base [numBuckets]float64 // burst capacity (rate × Burst; ≥ 1 request)
	max  [numBuckets]float64 // largest admissible single cost
	conc int                 // concurrency limit, 0 = none
	skew float64             // seconds
}

// paramsOf derives params from normalised limits and the limits learned
// from headers (Auto mode; 0 = unknown, and never above an explicit
// number), as the in-process limiter's applyLimits does.
func paramsOf(lim limiter.Limits, learned [numBuckets]float64) params {
	p := params{conc: lim.Concurrency, skew: lim.Skew.Seconds()}
	lim = effective(lim, learned)
	for i := range numBuckets {
		perMin := lim.PerMinute(i)
		if perMin <= 0 {
			continue
		}
		p.rate[i] = perMin * lim.Headroom / 60
		burst := p.rate[i] * lim.Burst.Seconds()
		p.max[i] = max(perMin, burst)
		p.base[i] = min(burst, p.max[i])
		if i == 0 {
			p.base[i] = max(p.base[i], 1) // one request always fits
			p.max[i] = max(p.max[i], 1)   // under 1 rpm paces, never refuses
		}
	}
	return p
}

// effective is lim with the learned limits in force (see paramsOf).
func effective(lim limiter.Limits, learned [numBuckets]float64) limiter.Limits {
	if !lim.Auto {
		return lim
	}
	pm := [numBuckets]*float64{&lim.RPM, &lim.ITPM, &lim.OTPM, &lim.TPM}
	for i, v := range pm {
		if l := learned[i]; l > 0 && (*v == 0 || l < *v) {
			*v = l
		}
	}
	return lim
}

// tooLarge reports a cost no bucket of key could ever cover.
func (p params) tooLarge(key string, c limiter.Cost) error {
	for i := range numBuckets {
		if p.rate[i] > 0 && c.Amount(i) > p.max[i] {
			return &limiter.TooLargeError{Key: key, Dimension: limiter.Dimension(i + 1), Cost: int64(c.Amount(i)), Limit: int64(p.max[i])}
		}
	}
	return nil
}

// mask records which buckets exist, so a ticket reconciles only the buckets
// it was charged to.
func (p params) mask() (m uint8) {
	for i := range numBuckets {
		if p.rate[i] > 0 {
			m |= 1 << i
		}
	}
	return m
}

// normalize applies limiter.Limits' documented defaults.
func normalize(lim limiter.Limits) limiter.Limits { return lim.Normalized() }

// The Redis keys of a budget key, in keyState.redisKeys.
const (
	rkState = iota
	rkInflight
	rkPause
	rkRoom
	rkRoomLease
	rkLearned
	numRedisKeys
)

// waiter is one Reserve call of this process not yet admitted.
type waiter struct {
	id   string // its ticket id, in the room and then the in-flight set
	prio int
	// score is its place in the room (virtual arrival, server µs), 0
	// until the first ask; entered reports that it may be in the room.
	score   float64
	entered bool
	wake    chan struct{} // buffered 1: "ask again", never lost
}

// keyState is this process's side of one key: its configuration, what it
// learned, its waiters and its statistics. Every method requires mu to be
// held.
type keyState struct {
	name      string
	redisKeys [numRedisKeys]string
	channel   string // where the room's first ticket is woken

	// setup serialises the first Reserve's setup of the key (reclaim,
	// subscribe); ready reports it done.
	setup sync.Mutex
	ready bool

	mu   sync.Mutex
	conf limiter.Limits // normalised
	p    params
	// learned is the per-minute limits the key's headers named, as of
	// learnedVer, the key's learned version (Auto mode; see reserveSrc).
	learned    [numBuckets]float64
	learnedVer int64

	inflight map[string]*ticket // this process's tickets not ended
	waiters  map[string]*waiter // this process's Reserve calls not admitted
	out      [numBuckets]float64

	// statistics
	base        time.Time     // origin of arrivals
	waiting     int           // Reserve calls not yet admitted
	arrivals    time.Duration // sum of their arrivals since base
	blocked     limiter.Dimension
	acctAt      time.Time
	wait        time.Duration
	waitBy      [limiter.NumDimensions]time.Duration
	reserved    int64
	rateLimited int64
	paused      time.Time
	// pauseClamped counts pause hints cut to MaxPause.
	pauseClamped int64
	overloaded   int64
	// aimdRate is the shared AIMD's request and token rates (per second,
	// 0: none) and aimdCuts its cuts, as the last script reply said.
	aimdRate [2]float64
	aimdCuts int64
}

// newKeyState names the key's Redis keys prefix:{name}:…; the hash tag
// {name} puts them in one Cluster slot (an empty name has no tag: on a
// Cluster, keys must be non-empty).
func newKeyState(name, prefix string, lim limiter.Limits, now time.Time) *keyState {
	ns := prefix + ":{" + name + "}:"
	k := &keyState{
		name:      name,
		redisKeys: [numRedisKeys]string{ns + "state", ns + "inflight", ns + "pause", ns + "room", ns + "roomlease", ns + "learned"},
		channel:   ns + "wake",
		inflight:  map[string]*ticket{},
		waiters:   map[string]*waiter{},
		base:      now,
		acctAt:    now,
	}
	k.setLimits(lim)
	return k
}

func (k *keyState) setLimits(lim limiter.Limits) {
	k.conf = normalize(lim)
	k.p = paramsOf(k.conf, k.learned)
}

// learnedVersion is the version the parameters come from, -1 when the
// key's limits are explicit and nothing is learned.
func (k *keyState) learnedVersion() int64 {
	if !k.conf.Auto {
		return -1
	}
	return k.learnedVer
}

// learn takes the key's learned limits at version v.
func (k *keyState) learn(v int64, lim [numBuckets]float64) {
	k.learnedVer, k.learned = v, lim
	k.p = paramsOf(k.conf, k.learned)
}

// bestWaiter is this process's waiter first in the room's order (nil if
// none has asked yet): the one that asks again now and then, in case a
// wake-up was lost.
func (k *keyState) bestWaiter() *waiter {
	var best *waiter
	for _, w := range k.waiters {
		if w.score != 0 && (best == nil || w.score < best.score || w.score == best.score && w.id < best.id) {
			best = w
		}
	}
	return best
}

// sync brings the wait accounting up to now: the waiting calls' time goes
// to what last blocked the head.
func (k *keyState) sync(now time.Time) {
	if d := now.Sub(k.acctAt); d > 0 {
		k.waitBy[k.blocked] += time.Duration(k.waiting) * d
		k.acctAt = now
	}
}

func (k *keyState) enqueue(now time.Time) {
	k.sync(now)
	k.waiting++
	k.arrivals += now.Sub(k.base)
}

func (k *keyState) dequeue(now, arrived time.Time) {
	k.sync(now)
	k.waiting--
	k.arrivals -= arrived.Sub(k.base)
	k.wait += max(now.Sub(arrived), 0)
}

// block records what keeps the head waiting, and for how long.
func (k *keyState) block(now time.Time, dim limiter.Dimension, wait time.Duration) {
	k.sync(now)
	k.blocked = dim
	if until := now.Add(wait); dim == limiter.DimPause && until.After(k.paused) {
		k.paused = until
	}
}

func (k *keyState) admit(t *ticket) {
	k.inflight[t.id] = t
	for i := range numBuckets {
		if t.mask&(1<<i) != 0 {
			k.out[i] += t.cost.Amount(i)
		}
	}
	k.reserved++
}

// finish forgets an ended ticket. The caller wakes the head once Redis
// has freed the ticket's slot and refunds.
func (k *keyState) finish(t *ticket) {
	delete(k.inflight, t.id)
	for i := range numBuckets {
		if t.mask&(1<<i) != 0 {
			k.out[i] -= t.cost.Amount(i)
		}
	}
}

// wake asks w to ask Redis again now rather than at the end of its wait.
func (w *waiter) ask() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

func (k *keyState) stats(now time.Time) limiter.KeyStats {
	k.sync(now)
	s := limiter.KeyStats{
		Key:          k.name,
		Configured:   k.conf,
		Effective:    k.conf,
		Learned:      k.learned != [numBuckets]float64{},
		Wait:         k.wait + time.Duration(k.waiting)*now.Sub(k.base) - k.arrivals,
		WaitBy:       k.waitBy,
		InFlight:     len(k.inflight),
		Waiting:      k.waiting,
		Reservations: k.reserved,
		RateLimited:  k.rateLimited,
		PausedUntil:  k.paused,
		PauseClamped: k.pauseClamped,
		Overloaded:   k.overloaded,
	}
	s.Effective = effective(k.conf, k.learned)
	if r := k.aimdRate[0] * 60; r > 0 && (s.Effective.RPM == 0 || r < s.Effective.RPM) {
		s.Effective.RPM = r
	}
	if r := k.aimdRate[1] * 60; r > 0 && (s.Effective.TPM == 0 || r < s.Effective.TPM) {
		s.Effective.TPM = r
	}
	if k.aimdCuts > 0 {
		// A ramp from the first answer is a guess: only a cut measures
		// what the server sustains (as in package limiter).
		s.RefusalRPM, s.RefusalTPM = k.aimdRate[0]*60, k.aimdRate[1]*60
	}
	var most time.Duration
	for d := limiter.DimRequests; d < limiter.NumDimensions; d++ {
		if s.WaitBy[d] > most {
			most, s.Binding = s.WaitBy[d], d
		}
	}
	return s
}
