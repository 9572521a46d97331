package runner

import (
	"context"
	"sync"
	"time"
)

// gateHold is the key's first-on-key gate (see firstOnKey): the key's
// first attempt holds it closed until its end, after the budget has
// settled its answer, so the estimate is calibrated for the others.
type gateHold struct {
	r   *run
	key string
}

func (g gateHold) acquire(ctx context.Context) (func(attemptOutcome), error) {
	open, err := g.r.firstOnKey(ctx, g.key)
	if err != nil {
		return nil, stopPending
	}
	return func(attemptOutcome) { open() }, nil
}

// calibrationWait bounds how long the other requests of a key wait for the
// key's first response (see firstOnKey).
const calibrationWait = 5 * time.Second

// keyGate holds a key's admissions until its first response is in.
type keyGate struct {
	done  chan struct{}
	once  sync.Once
	until time.Time
}

func (g *keyGate) open() { g.once.Do(func() { close(g.done) }) }

// firstOnKey lets the first attempt on a key go alone: until its response
// has calibrated the token estimate against the provider's own count (or
// calibrationWait has passed), the others wait, so the opening burst, up
// to a whole bucket, is not admitted on an uncalibrated estimate, which
// would overrun a strict provider's limit by the estimate's error. The
// caller calls release once the attempt is over.
func (r *run) firstOnKey(ctx context.Context, key string) (release func(), err error) {
	r.mu.Lock()
	g, ok := r.gates[key]
	if !ok {
		g = &keyGate{done: make(chan struct{}), until: time.Now().Add(calibrationWait)}
		r.gates[key] = g
		r.mu.Unlock()
		return g.open, nil
	}
	r.mu.Unlock()
	select {
	case <-g.done:
		return func() {}, nil
	default:
	}
	t := time.NewTimer(max(time.Until(g.until), 0))
	defer t.Stop()
	select {
	case <-g.done:
	case <-t.C:
		g.open()
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
	return func() {}, nil
}
