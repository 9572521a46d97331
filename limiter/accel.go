package limiter

import (
	"math"
	"time"
)

// Acceleration (ramp) limits: OpenAI's slow_down and Anthropic's
// acceleration limits refuse a sharp increase in traffic even under the
// nominal limits (a cron job that wakes and sends 2,000 requests in its
// first second). Two things answer them, both on the request rate:
//
//   - a warm-up (Limits.WarmUp): a key with no history whose request
//     limit (given, or from its first answer's headers) is high enough
//     for a sharp start to matter starts paced at AccelConfig.Floor
//     requests in its first Window, instead of with a full bucket, and
//     grows by Growth per Window (continuously) until the rate exceeds
//     the key's limit or WarmUp has passed;
//   - a refusal naming the acceleration limit (Refusal.Ramp) holds the
//     rate the key admitted over the last Window for one Window (after
//     emptying its request bucket: the server's window is spent), then
//     grows it by Growth per Window.
//
// Growth stays under the doubling per window the providers allow, so the
// count of any Window, wherever the server's windows fall, is at most
// Growth times the one before.

// AccelConfig tunes the acceleration governor. Zero fields take
// DefaultAccel's values.
type AccelConfig struct {
	// Window is the span admissions are counted over (default 5s).
	Window time.Duration
	// Growth is the most the rate grows per Window (default 1.9).
	Growth float64
	// Floor is how many requests a warm-up admits in its first Window
	// (default 19, under the 20 servers allow at least).
	Floor float64
	// Slot is the grain of the admission count and of the rate's steps
	// (default 100ms).
	Slot time.Duration
}

// DefaultAccel is the configuration the Limiter uses.
var DefaultAccel = AccelConfig{Window: 5 * time.Second, Growth: 1.9, Floor: 19, Slot: 100 * time.Millisecond}

// DefaultWarmUp is the CLI's --warmup: long enough to grow from the
// warm-up's start to 1,000 requests a second.
const DefaultWarmUp = time.Minute

// accelSlots is the ring of per-Slot admission counts (Window/Slot of
// them at the defaults).
const accelSlots = 50

// accel is one key's governor. The zero value governs nothing.
type accel struct {
	cfg AccelConfig
	on  bool
	// pending: a warm-up of this length starts once the key's request
	// limit is known to be high enough to need one (see warmUpFactor).
	pending time.Duration
	base    float64   // requests per second at from
	from    time.Time // growth starts here (a hold's end)
	until   time.Time // a warm-up ends here (zero: when outgrown)
	// cutSeq is the key's admissions at the last ramp refusal: refusals
	// of attempts admitted before it are echoes.
	cutSeq uint64
	count  [accelSlots]float64 // admissions per Slot, a ring
	slotAt time.Time           // start of the current slot
	slot   int
}

// warmUpFactor: a warm-up starts only for a key whose request limit is
// at least this many times the warm-up's starting rate (8 × 2.7/s: about
// 1,300 RPM). Below it the full rate is within three growths of the start,
// and a warm-up would cost a run most of its first ten seconds (the tight
// scenario, 600 RPM: 0.74 of the ideal instead of 0.95).
const warmUpFactor = 8

// startRate is a warm-up's starting rate (per second): the first Window
// of a rate growing g-fold per Window from it admits
// start×Window×(g-1)/ln g, which is Floor.
func (c AccelConfig) startRate() float64 {
	g := c.Growth
	return c.Floor / c.Window.Seconds() * math.Log(g) / (g - 1)
}

// armWarmUp makes a key with no history warm up for at most d once its
// request limit is known (0: never).
func (a *accel) armWarmUp(d time.Duration) {
	a.cfg = DefaultAccel
	a.pending = max(d, 0)
}

// startWarmUp paces the key from now for at most d.
func (a *accel) startWarmUp(now time.Time, d time.Duration) {
	a.on, a.base, a.from, a.until = true, a.cfg.startRate(), now, now.Add(d)
	a.pending = 0
}

// rate is the governed request rate at now (per second), 0 for none; lim
// is the key's request rate otherwise (per second, 0: none), known the
// part of it described (given or from headers). An armed warm-up starts
// only on a known rate: a rate from 429s is a slow start of its own (the
// AIMD's ramp), and a warm-up under it would hold the ramp below the rate
// it needs to use to grow. It steps by Slot, so the buckets change at
// most once a Slot. A governor outgrown (above lim, or past its warm-up)
// turns off.
func (a *accel) rate(now time.Time, lim, known float64) float64 {
	if a.pending > 0 && known >= warmUpFactor*a.cfg.startRate() {
		a.startWarmUp(now, a.pending)
	}
	if !a.on {
		return 0
	}
	if !a.until.IsZero() && !now.Before(a.until) {
		a.on = false
		return 0
	}
	r := a.base
	if now.After(a.from) {
		steps := math.Floor(now.Sub(a.from).Seconds() / a.cfg.Slot.Seconds())
		r *= math.Pow(a.cfg.Growth, steps*a.cfg.Slot.Seconds()/a.cfg.Window.Seconds())
	}
	if lim > 0 && r >= lim || r > 1e9 {
		a.on = false
		return 0
	}
	return r
}

// admitted counts an admission at now.
func (a *accel) admitted(now time.Time) {
	a.roll(now)
	a.count[a.slot]++
}

// roll moves the ring to now's slot, zeroing the slots passed.
func (a *accel) roll(now time.Time) {
	if a.cfg.Slot <= 0 {
		a.cfg = DefaultAccel
	}
	if a.slotAt.IsZero() {
		a.slotAt = now
	}
	n := int(now.Sub(a.slotAt) / a.cfg.Slot)
	for i := 0; i < min(n, accelSlots); i++ {
		a.slot = (a.slot + 1) % accelSlots
		a.count[a.slot] = 0
	}
	if n > 0 {
		a.slotAt = a.slotAt.Add(time.Duration(n) * a.cfg.Slot)
	}
}

// refused takes a ramp refusal at now of the attempt admitted as the
// key's seq-th, the key having admitted last so far: unless it is an echo
// of the last one, the rate is held at what the key admitted over the last
// Window (at least the warm-up's start) for a Window, then grows. It
// reports whether it changed the governor.
func (a *accel) refused(now time.Time, seq, last uint64) bool {
	if seq <= a.cutSeq {
		return false
	}
	a.roll(now)
	var n float64
	for _, c := range a.count {
		n += c
	}
	a.on, a.base, a.from, a.until, a.cutSeq = true, max(n/a.cfg.Window.Seconds(), a.cfg.startRate()), now.Add(a.cfg.Window), time.Time{}, last
	a.pending = 0
	return true
}

// warmUpAt starts (or, with Limits.WarmUp 0, stops) the warm-up of a key
// that has admitted nothing yet: one with no history.
func (k *keyState) warmUpAt(now time.Time) {
	if k.seq != 0 {
		return
	}
	k.acc = accel{}
	k.acc.armWarmUp(k.conf.WarmUp)
}

// accelRate is the governor's request rate at now (per second, 0: none),
// given the key's request limit otherwise. A warm-up armed starts when
// the limit is known (given, or from the first answer's headers).
func (k *keyState) accelRate(now time.Time) float64 {
	known := k.described(0)
	lim := known
	if r := k.refusalRate(0); r > 0 && (lim == 0 || r < lim) {
		lim = r
	}
	return k.acc.rate(now, lim/60, known/60)
}

// rampRefusedAt takes a refusal naming the acceleration limit: the key's
// request rate is held at what it admitted over the last Window, its
// request bucket emptied, and it pauses for half a Window (the server's
// current window is spent; where it ends is unknown). An echo changes
// nothing. It returns the pause's end (zero for none).
func (k *keyState) rampRefusedAt(now time.Time, seq uint64) time.Time {
	if !k.acc.refused(now, seq, k.seq) {
		return time.Time{}
	}
	k.refreshRates(now)
	if b := &k.b[0]; b.on() {
		b.level = min(b.level, 0)
	}
	return now.Add(k.acc.cfg.Window / 2)
}
