package retry

import (
	"sync"
	"time"

	"github.com/llmrun/llmrun/providers"
)

// Defaults for a zero BreakerConfig field.
const (
	DefaultThreshold = 5
	DefaultCooldown  = 30 * time.Second
	DefaultMaxOutage = 10 * time.Minute
)

// State is a breaker's state.
type State uint8

const (
	// Closed lets every attempt through.
	Closed State = iota
	// Open lets nothing through until the cooldown has passed.
	Open
	// HalfOpen lets exactly one probe through; its outcome closes or
	// reopens the breaker.
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
	// Threshold is how many consecutive unhealthy failures open the breaker.
	Threshold int
	// Cooldown is how long the breaker stays open before one probe.
	Cooldown time.Duration
	// MaxOutage is how long an outage (first opening until closing) may
	// last before OutageExceeded reports true.
	MaxOutage time.Duration
}

// Ticket is the permission Allow grants for one attempt. Report the
// attempt's outcome with exactly one of Success, Failure, Release or
// Observe, passing the ticket back; outcomes of attempts let through
// before the breaker last changed state are ignored, so a slow attempt
// from before an outage cannot close or reopen it.
type Ticket struct {
	gen   uint64
	probe bool
}

// Probe reports whether this ticket is the half-open breaker's one probe.
func (t Ticket) Probe() bool { return t.probe }

// BreakerStats are a breaker's counters for the run summary.
type BreakerStats struct {
	State State
	// Openings counts closed→open transitions (outages), not reopenings
	// after a failed probe.
	Openings int
	// Probes counts the probes let through.
	Probes int
	// TimeHeld is the total time the breaker was not closed, the current
	// outage included up to now.
	TimeHeld time.Duration
	// OpenedAt is when the current outage began; zero when closed.
	OpenedAt time.Time
}

// Breaker is a circuit breaker for one key (provider, model or endpoint).
// After Threshold consecutive unhealthy failures it opens; while open,
// Allow refuses and the runner holds (no new attempts, nothing marked
// failed). Once Cooldown has passed, Allow lets exactly one probe through;
// its success closes the breaker, its failure reopens it for another
// Cooldown. A Breaker is safe for concurrent use. A nil *Breaker is always
// closed.
type Breaker struct {
	cfg BreakerConfig

	mu       sync.Mutex
	state    State
	gen      uint64    // bumped on every state change and probe issue
	fails    int       // consecutive unhealthy failures while closed
	openedAt time.Time // start of the current outage; zero when closed
	probeAt  time.Time // earliest probe while open
	probing  bool      // a probe is out (half-open)
	changed  chan struct{}

	openings int
	probes   int
	held     time.Duration // of finished outages
}

// NewBreaker returns a closed breaker.
func NewBreaker(cfg BreakerConfig) *Breaker {
	if cfg.Threshold <= 0 {
		cfg.Threshold = DefaultThreshold
	}
	if cfg.Cooldown <= 0 {
		cfg.Cooldown = DefaultCooldown
	}
	if cfg.MaxOutage <= 0 {
		cfg.MaxOutage = DefaultMaxOutage
	}
	return &Breaker{cfg: cfg, changed: make(chan struct{})}
}

// Config returns the breaker's configuration with defaults filled in.
func (b *Breaker) Config() BreakerConfig {
	if b == nil {
		return BreakerConfig{}
	}
	return b.cfg
}

// setState moves to s and wakes Changed waiters. setState requires that
// b.mu is held.
func (b *Breaker) setState(s State) {
	b.state = s
	b.gen++
	close(b.changed)
	b.changed = make(chan struct{})
}

// Allow reports whether an attempt may start at now, with the ticket to
// report its outcome with. Closed: always. Open: once now has reached the
// end of the cooldown, the first caller gets the probe (the breaker turns
// half-open) and everyone else is refused until the probe's outcome is in.
func (b *Breaker) Allow(now time.Time) (Ticket, bool) {
	if b == nil {
		return Ticket{}, true
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	switch b.state {
	case Closed:
		return Ticket{gen: b.gen}, true
	case Open:
		if now.Before(b.probeAt) {
			return Ticket{}, false
		}
		b.setState(HalfOpen)
	}
	if b.probing {
		return Ticket{}, false
	}
	b.probing = true
	b.probes++
	b.gen++
	return Ticket{gen: b.gen, probe: true}, true
}

// Valid reports whether ticket t still lets its attempt start: false once
// the breaker has changed state since Allow handed it out. A caller that
// waited between Allow and sending (for the limiter, say) checks it last,
// so attempts queued before an outage do not all reach the provider after
// the breaker opened. A stale ticket needs no Release.
func (b *Breaker) Valid(t Ticket) bool {
	if b == nil {
		return true
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.current(t)
}

// current reports whether t is still live. current requires that b.mu is held.
func (b *Breaker) current(t Ticket) bool {
	if t.gen != b.gen {
		return false
	}
	if t.probe {
		return b.state == HalfOpen && b.probing
	}
	return b.state == Closed
}

// Success reports that the attempt of ticket t succeeded: the consecutive
// failure count resets; a probe's success closes the breaker and ends the
// outage.
func (b *Breaker) Success(now time.Time, t Ticket) {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.current(t) {
		return
	}
	b.fails = 0
	if t.probe {
		b.probing = false
		b.held += now.Sub(b.openedAt)
		b.openedAt = time.Time{}
		b.setState(Closed)
	}
}

// Failure reports that the attempt of ticket t failed in a way that says
// the provider is unhealthy (see Unhealthy): the Threshold-th consecutive
// one opens the breaker; a probe's failure reopens it for another Cooldown.
func (b *Breaker) Failure(now time.Time, t Ticket) {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.current(t) {
		return
	}
	if t.probe {
		b.probing = false
		b.probeAt = now.Add(b.cfg.Cooldown)
		b.setState(Open)
		return
	}
	b.fails++
	if b.fails >= b.cfg.Threshold {
		b.fails = 0
		b.openings++
		b.openedAt = now
		b.probeAt = now.Add(b.cfg.Cooldown)
		b.setState(Open)
	}
}

// Release reports that the attempt of ticket t ended without saying
// anything about the provider's health (rate limited, invalid request,
// cancelled, answer rejected by the guard). Nothing is counted; a probe's
// release lets the next caller probe at once.
func (b *Breaker) Release(now time.Time, t Ticket) {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if t.probe && b.current(t) {
		b.probing = false
		b.gen++
		// Wake holders: a probe slot is free.
		close(b.changed)
		b.changed = make(chan struct{})
	}
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
// has passed reports HalfOpen (a probe is available) although it turns
// half-open only when Allow hands out the probe.
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
// when open; Cooldown when a probe is out (its outcome decides, so the
// runner should also wait on Changed).
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
	case b.probing:
		return b.cfg.Cooldown
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
	if b.state != Closed {
		s.TimeHeld += max(now.Sub(b.openedAt), 0)
	}
	return s
}
