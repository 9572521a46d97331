package retry

import (
	"slices"
	"sync"
	"time"

	"github.com/llmrun/llmrun/providers"
)

// Defaults for a zero BreakerConfig field. With them a breaker opens once
// 90% of the last 20 attempts of the past 10 s failed (judging at least the
// last 10, however old: 9 of them), so a provider failing a third of its
// calls stays in service (the chance that at least 18 of 20 independent
// attempts fail at p = 1/3 is 2·10⁻⁷; 9 of 10, while the window fills or
// when traffic is slow, 4·10⁻⁴) while a dead one is caught after 10
// attempts; the first hold is 1 s, so a false opening costs little.
const (
	DefaultWindow        = 20
	DefaultWindowTime    = 10 * time.Second
	DefaultMinAttempts   = 10
	DefaultFailureRate   = 0.9
	DefaultFirstCooldown = time.Second
	DefaultCooldown      = 30 * time.Second
	DefaultProbes        = 3
	DefaultMaxOutage     = 10 * time.Minute
)

// maxProbes bounds BreakerConfig.Probes: the probes are the only load a
// provider that is down sees, so a handful is the point.
const maxProbes = 64

// State is a breaker's state.
type State uint8

const (
	// Closed lets every attempt through.
	Closed State = iota
	// Open lets nothing through until the cooldown has passed.
	Open
	// HalfOpen lets Probes attempts through; a majority of them closes the
	// breaker or reopens it.
	HalfOpen
)

func (s State) String() string {
	switch s {
	case Closed:
		return "closed"
	case Open:
		return "open"
	case HalfOpen:
		return "half-open"
	}
	return "state(?)"
}

// Unhealthy reports whether a failure of class c says the provider itself
// is unwell, and so counts toward opening a breaker: overloaded, other
// server errors, mid-stream failures, network failures and timeouts.
// Rate limits (the provider is healthy, we are too fast), invalid
// requests, auth and quota errors (the provider answered; aborts are
// handled elsewhere) and unknown errors (possibly our own, such as a
// cancelled context) do not.
func Unhealthy(c providers.Class) bool {
	switch c {
	case providers.ClassOverloaded, providers.ClassServer, providers.ClassMidStream,
		providers.ClassNetwork, providers.ClassTimeout:
		return true
	}
	return false
}

// BreakerConfig configures a Breaker; a zero field takes its Default.
type BreakerConfig struct {
	// Window is how many of the key's most recent attempt outcomes the
	// breaker judges, and WindowTime how long an outcome stays in the
	// window. Both bound it: the last Window outcomes younger than
	// WindowTime, but never fewer than the last MinAttempts.
	Window     int
	WindowTime time.Duration
	// MinAttempts is the fewest outcomes in the window before the breaker
	// may open, so a short unlucky run of a degraded provider does not look
	// like an outage; raised to Window when larger. It is also the fewest
	// failures that open the breaker on a dead provider.
	MinAttempts int
	// FailureRate is the share of failures in the window, in (0, 1], at
	// which the breaker opens.
	FailureRate float64
	// FirstCooldown is how long the first opening holds; each consecutive
	// opening (one not preceded by WindowTime of being closed) doubles it,
	// up to Cooldown.
	FirstCooldown time.Duration
	Cooldown      time.Duration
	// Probes is how many attempts a half-open breaker lets through (at most
	// 64); a majority of successes among them closes it, a majority of
	// failures reopens it.
	Probes int
	// MaxOutage is how long an outage (first opening until closing) may
	// last before OutageExceeded reports true.
	MaxOutage time.Duration
}

// withDefaults fills zero fields and makes the fields consistent.
func (c BreakerConfig) withDefaults() BreakerConfig {
	orDefault(&c.Window, DefaultWindow)
	orDefault(&c.WindowTime, DefaultWindowTime)
	orDefault(&c.MinAttempts, min(DefaultMinAttempts, c.Window))
	c.Window = max(c.Window, c.MinAttempts)
	if !(c.FailureRate > 0 && c.FailureRate <= 1) { // NaN too
		c.FailureRate = DefaultFailureRate
	}
	orDefault(&c.Cooldown, DefaultCooldown)
	orDefault(&c.FirstCooldown, DefaultFirstCooldown)
	c.FirstCooldown = min(c.FirstCooldown, c.Cooldown)
	orDefault(&c.Probes, DefaultProbes)
	c.Probes = min(c.Probes, maxProbes)
	orDefault(&c.MaxOutage, DefaultMaxOutage)
	return c
}

// Ticket is the permission Allow grants for one attempt. Report the
// attempt's outcome with exactly one of Success, Failure, Release or
// Observe, passing the ticket back; outcomes of attempts let through
// before the breaker last changed state are ignored, so a slow attempt
// from before an outage cannot close or reopen it, nor count in the
// window after the breaker closed again.
type Ticket struct {
	gen    uint64
	serial uint64 // in the order Allow handed tickets out, from 1
	probe  bool
}

// Probe reports whether this ticket is one of the half-open breaker's probes.
func (t Ticket) Probe() bool { return t.probe }

// BreakerStats are a breaker's counters for the run summary.
type BreakerStats struct {
	State State
	// Openings counts closed→open transitions (outages), not reopenings
	// after failed probes.
	Openings int
	// Probes counts the probes let through.
	Probes int
	// TimeHeld is the total time the breaker was not closed, the current
	// outage included up to now.
	TimeHeld time.Duration
	// OpenedAt is when the current outage began; zero when closed.
	OpenedAt time.Time
	// Cooldown is the hold of the current (or, when closed, the last)
	// opening; zero before the first.
	Cooldown time.Duration
}

// outcomeAt is one attempt's outcome in the window.
type outcomeAt struct {
	at     time.Time
	serial uint64
	failed bool
}

// Breaker is a circuit breaker for one key (provider, model or endpoint).
// It judges a sliding window of the key's recent attempts and opens when
// nearly all of them failed (FailureRate of at least MinAttempts), so a
// degraded provider stays in service and a dead one is caught after a few
// attempts. Failures are often quick (an overload is refused at once) and
// successes slow (an answer streams for seconds), so among attempts started
// together the failures are reported first; an attempt still in flight that
// started before a failed one in the window therefore counts as not failed,
// so a burst of refusals does not read as an outage while the answers of the
// same burst are still streaming. While open, Allow refuses and the runner holds (no new
// attempts, nothing marked failed). After the cooldown — FirstCooldown,
// doubling per consecutive opening up to Cooldown — the breaker turns
// half-open and lets Probes attempts through; a majority of successes
// closes it, a majority of failures reopens it. A Breaker is safe for
// concurrent use. A nil *Breaker is always closed.
type Breaker struct {
	cfg BreakerConfig

	mu    sync.Mutex
	state State
	gen   uint64 // bumped on every state change: older tickets are stale

	// The window: a ring of the last cfg.Window outcomes while closed,
	// oldest at head; fails counts the failed ones.
	ring    []outcomeAt
	head, n int
	fails   int
	// inflight holds the serials, ascending, of the tickets handed out
	// while closed whose outcome is not in.
	inflight    []uint64
	level       int       // consecutive openings; the cooldown is FirstCooldown·2^(level-1)
	closedAt    time.Time // when the breaker last closed
	openedAt    time.Time // start of the current outage; zero when closed
	probeAt     time.Time // end of the current cooldown
	serial      uint64    // of the last ticket handed out
	probesOut   []uint64  // serials of the probes whose outcome is not in
	probeOK     int       // successes among this half-open's probes
	probeFailed int       // failures among this half-open's probes
	changed     chan struct{}

	openings int
	probes   int
	held     time.Duration // of finished outages
}

// NewBreaker returns a closed breaker.
func NewBreaker(cfg BreakerConfig) *Breaker {
	cfg = cfg.withDefaults()
	return &Breaker{cfg: cfg, ring: make([]outcomeAt, cfg.Window), changed: make(chan struct{})}
}

// Config returns the breaker's configuration with defaults filled in.
func (b *Breaker) Config() BreakerConfig {
	if b == nil {
		return BreakerConfig{}
	}
	return b.cfg
}

// wake closes the Changed channel and makes a new one. wake requires that
// b.mu is held.
func (b *Breaker) wake() {
	close(b.changed)
	b.changed = make(chan struct{})
}

// setState moves to s, making every ticket handed out so far stale, and
// wakes Changed waiters. setState requires that b.mu is held.
func (b *Breaker) setState(s State) {
	b.state = s
	b.gen++
	b.probesOut = b.probesOut[:0]
	b.probeOK, b.probeFailed = 0, 0
	b.head, b.n, b.fails = 0, 0, 0
	b.inflight = b.inflight[:0]
	b.wake()
}

// cooldown is the hold of opening number level (1-based). cooldown requires
// that b.mu is held.
func (b *Breaker) cooldown(level int) time.Duration {
	d := b.cfg.FirstCooldown
	for i := 1; i < level && d < b.cfg.Cooldown; i++ {
		d *= 2
	}
	return min(d, b.cfg.Cooldown)
}

// open opens the breaker at now for the next cooldown. open requires that
// b.mu is held.
func (b *Breaker) open(now time.Time) {
	if b.state == Closed {
		b.openings++
		b.openedAt = now
		// A breaker that stayed closed a whole window since its last
		// outage starts over from the first cooldown.
		if b.closedAt.IsZero() || now.Sub(b.closedAt) >= b.cfg.WindowTime {
			b.level = 0
		}
	}
	b.level++
	b.probeAt = now.Add(b.cooldown(b.level))
	b.setState(Open)
}

// Allow reports whether an attempt may start at now, with the ticket to
// report its outcome with. Closed: always. Open: refused until now reaches
// the end of the cooldown; then the breaker turns half-open. Half-open: the
// first Probes callers get probes; everyone else is refused until the
// probes have decided (a released probe's slot goes to the next caller).
func (b *Breaker) Allow(now time.Time) (Ticket, bool) {
	if b == nil {
		return Ticket{}, true
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	switch b.state {
	case Closed:
		b.serial++
		b.inflight = append(b.inflight, b.serial)
		return Ticket{gen: b.gen, serial: b.serial}, true
	case Open:
		if now.Before(b.probeAt) {
			return Ticket{}, false
		}
		b.setState(HalfOpen)
	}
	if len(b.probesOut)+b.probeOK+b.probeFailed >= b.cfg.Probes {
		return Ticket{}, false
	}
	b.serial++
	b.probesOut = append(b.probesOut, b.serial)
	b.probes++
	return Ticket{gen: b.gen, serial: b.serial, probe: true}, true
}

// Valid reports whether ticket t still lets its attempt start: false once
// the breaker has changed state since Allow handed it out (or the probe was
// released). A caller that waited between Allow and sending (for the
// limiter, say) checks it last, so attempts queued before an outage do not
// all reach the provider after the breaker opened. A stale ticket needs no
// Release.
func (b *Breaker) Valid(t Ticket) bool {
	if b == nil {
		return true
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.probeIndex(t) >= 0 || (!t.Probe() && t.gen == b.gen && b.state == Closed)
}

// probeIndex is the position of t's probe among the outstanding ones, or -1
// when t is not a live probe. probeIndex requires that b.mu is held.
func (b *Breaker) probeIndex(t Ticket) int {
	if !t.Probe() || t.gen != b.gen || b.state != HalfOpen {
		return -1
	}
	for i, s := range b.probesOut {
		if s == t.serial {
			return i
		}
	}
	return -1
}

// settleClosed removes t from the closed breaker's attempts in flight and
// reports whether it was one (a stale or repeated report is not).
// settleClosed requires that b.mu is held.
func (b *Breaker) settleClosed(t Ticket) bool {
	if t.Probe() || t.gen != b.gen || b.state != Closed {
		return false
	}
	i, ok := slices.BinarySearch(b.inflight, t.serial)
	if ok {
		b.inflight = slices.Delete(b.inflight, i, i+1)
	}
	return ok
}

// settleProbe removes t's probe from the outstanding ones and reports
// whether it was live. settleProbe requires that b.mu is held.
func (b *Breaker) settleProbe(t Ticket) bool {
	i := b.probeIndex(t)
	if i < 0 {
		return false
	}
	b.probesOut = append(b.probesOut[:i], b.probesOut[i+1:]...)
	return true
}

// majority is how many of the probes' outcomes decide the half-open state.
func (b *Breaker) majority() int { return b.cfg.Probes/2 + 1 }

// record adds the outcome of closed-state ticket t to the window at now, first dropping
// the outcomes older than WindowTime, except that the last MinAttempts stay
// whatever their age: a provider whose attempts take longer than
// WindowTime to fail (timeouts) would otherwise never fill the window.
// record requires that b.mu is held.
func (b *Breaker) record(now time.Time, t Ticket, failed bool) {
	for b.n >= b.cfg.MinAttempts && now.Sub(b.ring[b.head].at) >= b.cfg.WindowTime {
		b.drop()
	}
	if b.n == len(b.ring) {
		b.drop()
	}
	b.ring[(b.head+b.n)%len(b.ring)] = outcomeAt{at: now, serial: t.serial, failed: failed}
	b.n++
	if failed {
		b.fails++
	}
}

// drop removes the oldest outcome. drop requires that b.mu is held.
func (b *Breaker) drop() {
	if b.ring[b.head].failed {
		b.fails--
	}
	b.head = (b.head + 1) % len(b.ring)
	b.n--
}

// tripped reports whether the window says the provider is down: at least
// MinAttempts outcomes, and failures at FailureRate of them plus the
// attempts still in flight that started before the window's last failed
// one (they have outlived a failure, so they are not failing fast).
// tripped requires that b.mu is held.
func (b *Breaker) tripped() bool {
	if b.n < b.cfg.MinAttempts {
		return false
	}
	var lastFailed uint64
	for i := range b.n {
		if o := b.ring[(b.head+i)%len(b.ring)]; o.failed {
			lastFailed = max(lastFailed, o.serial)
		}
	}
	older, _ := slices.BinarySearch(b.inflight, lastFailed)
	// The small slack keeps 0.9 × 20 = 18 failures at the rate despite
	// floating point.
	return float64(b.fails) >= b.cfg.FailureRate*float64(b.n+older)-1e-9
}

// Success reports that the attempt of ticket t succeeded at now: it joins
// the window; a majority of successful probes closes the breaker and ends
// the outage.
func (b *Breaker) Success(now time.Time, t Ticket) { b.report(now, t, false) }

// Failure reports that the attempt of ticket t failed at now in a way that
// says the provider is unhealthy (see Unhealthy): it joins the window and
// opens the breaker if the window has tripped; a majority of failed probes
// reopens it for the next, longer cooldown.
func (b *Breaker) Failure(now time.Time, t Ticket) { b.report(now, t, true) }

// report is Success or Failure: the outcome of ticket t joins the window
// (and may trip it), or counts toward the probes' majority.
func (b *Breaker) report(now time.Time, t Ticket, failed bool) {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if !t.Probe() {
		if b.settleClosed(t) {
			b.record(now, t, failed)
			if failed && b.tripped() {
				b.open(now)
			}
		}
		return
	}
	if !b.settleProbe(t) {
		return
	}
	if failed {
		b.probeFailed++
		if b.probeFailed > b.cfg.Probes-b.majority() {
			b.open(now)
		}
		return
	}
	b.probeOK++
	if b.probeOK >= b.majority() {
		b.held += max(now.Sub(b.openedAt), 0)
		b.openedAt = time.Time{}
		b.closedAt = now
		b.setState(Closed)
	}
}

// Release reports that the attempt of ticket t ended without saying
// anything about the provider's health (rate limited, invalid request,
// cancelled, answer rejected by the guard). Nothing is counted; a probe's
// release hands its slot to the next caller at once.
func (b *Breaker) Release(now time.Time, t Ticket) {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.settleProbe(t) {
		b.wake() // holders: a probe slot is free
		return
	}
	b.settleClosed(t)
}

// Observe reports the outcome err of the attempt of ticket t: nil is a
// Success, an Unhealthy class (providers.ClassOf) a Failure, anything else
// a Release.
func (b *Breaker) Observe(now time.Time, t Ticket, err error) {
	switch {
	case err == nil:
		b.Success(now, t)
	case Unhealthy(providers.ClassOf(err)):
		b.Failure(now, t)
	default:
		b.Release(now, t)
	}
}

// State returns the breaker's state at now: an open breaker whose cooldown
// has passed reports HalfOpen (probes are available) although it turns
// half-open only when Allow hands out the first probe.
func (b *Breaker) State(now time.Time) State {
	if b == nil {
		return Closed
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.state == Open && !now.Before(b.probeAt) {
		return HalfOpen
	}
	return b.state
}

// WaitTime is how long from now until Allow may let an attempt through:
// 0 when closed or when a probe is available; the rest of the cooldown
// when open; the current cooldown when every probe is out (their outcomes
// decide, so the runner should also wait on Changed).
func (b *Breaker) WaitTime(now time.Time) time.Duration {
	if b == nil {
		return 0
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case b.state == Closed:
		return 0
	case b.state == Open:
		return max(b.probeAt.Sub(now), 0)
	case len(b.probesOut)+b.probeOK+b.probeFailed >= b.cfg.Probes:
		return b.cooldown(b.level)
	}
	return 0
}

// Changed returns a channel closed at the breaker's next state change or
// probe release, so holders can wake as soon as Allow may answer
// differently (select on it and a timer of WaitTime).
func (b *Breaker) Changed() <-chan struct{} {
	if b == nil {
		return nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.changed
}

// OutageExceeded reports whether the breaker has been open or half-open
// for at least MaxOutage since the current outage began; the runner then
// stops the run cleanly.
func (b *Breaker) OutageExceeded(now time.Time) bool {
	if b == nil {
		return false
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.state != Closed && now.Sub(b.openedAt) >= b.cfg.MaxOutage
}

// Stats returns the breaker's counters at now.
func (b *Breaker) Stats(now time.Time) BreakerStats {
	if b == nil {
		return BreakerStats{}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	s := BreakerStats{State: b.state, Openings: b.openings, Probes: b.probes, TimeHeld: b.held, OpenedAt: b.openedAt}
	if b.level > 0 {
		s.Cooldown = b.cooldown(b.level)
	}
	if b.state != Closed {
		s.TimeHeld += max(now.Sub(b.openedAt), 0)
	}
	return s
}
