package budgettest

import (
	"sync"
	"time"
)

// startUnix is the instant every scenario starts at: whole seconds, so that
// Redis's microsecond clock holds it exactly.
const startUnix = 1_800_000_000

// Start returns the instant every scenario starts at.
func Start() time.Time { return time.Unix(startUnix, 0) }

// Clock is a manual clock and timer source for a budget under test. A timer
// is due at a whole millisecond (its duration rounded up), so that the
// in-process limiter's nanosecond waits and Redis's microsecond ones land on
// the same instant. Every timer started is also announced on a channel the
// suite reads: a Reserve that starts a timer is waiting.
type Clock struct {
	mu      sync.Mutex
	now     time.Time
	timers  map[int]clockTimer
	next    int
	hooks   []func(time.Time)
	started chan time.Duration
}

type clockTimer struct {
	at time.Time
	c  chan time.Time
}

// NewClock returns a clock at Start.
func NewClock() *Clock {
	return &Clock{now: Start(), timers: map[int]clockTimer{}, started: make(chan time.Duration, 256)}
}

// Now reads the clock.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// NewTimer starts a timer due d from now, rounded up to a millisecond; its
// signature is limiter.Options.NewTimer's.
func (c *Clock) NewTimer(d time.Duration) (<-chan time.Time, func() bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	id := c.next
	c.next++
	ch := make(chan time.Time, 1)
	c.timers[id] = clockTimer{at: c.now.Add(roundMs(d)), c: ch}
	select {
	case c.started <- d:
	default:
	}
	return ch, func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		_, ok := c.timers[id]
		delete(c.timers, id)
		return ok
	}
}

// OnSet registers f, called with the new instant whenever the clock moves,
// before any timer fires (a Redis budget stores it where its scripts read
// the time).
func (c *Clock) OnSet(f func(time.Time)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.hooks = append(c.hooks, f)
}

// Set moves the clock to t (never back) and fires the timers due by then.
// The hooks run first: a budget whose scripts read a clock of their own
// must never see it behind this one (a wait computed from the old instant
// would start a timer from the new one, and end too late).
func (c *Clock) Set(t time.Time) {
	c.mu.Lock()
	hooks := c.hooks
	later := t.After(c.now)
	c.mu.Unlock()
	if !later {
		return
	}
	for _, f := range hooks {
		f(t)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t
	for id, tm := range c.timers {
		if !tm.at.After(t) {
			tm.c <- t
			delete(c.timers, id)
		}
	}
}

// drainStarted forgets the timers announced so far.
func (c *Clock) drainStarted() {
	for {
		select {
		case <-c.started:
		default:
			return
		}
	}
}

// roundMs rounds d up to a whole millisecond.
func roundMs(d time.Duration) time.Duration {
	if r := d % time.Millisecond; r != 0 {
		d += time.Millisecond - r
	}
	return d
}

// pending lists the instants the timers not fired are due at, for a
// failure message.
func (c *Clock) pending() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	var at []time.Duration
	for _, tm := range c.timers {
		at = append(at, since(tm.at))
	}
	return at
}
