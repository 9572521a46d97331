package telemetry

import (
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/resource"
	"go.opentelemetry.io/otel/trace"
)

// queueConfig is the batching the SDK's batch span processor would do,
// from the same OTEL_BSP_* variables and defaults.
type queueConfig struct {
	batch, max     int // spans per export, spans waiting at most
	delay, timeout time.Duration
}

func queueConfigFrom(getenv func(string) string) queueConfig {
	ms := func(k string, def int) time.Duration { return time.Duration(intEnv(getenv, k, def)) * time.Millisecond }
	c := queueConfig{batch: intEnv(getenv, "OTEL_BSP_MAX_EXPORT_BATCH_SIZE", 512), max: intEnv(getenv, "OTEL_BSP_MAX_QUEUE_SIZE", 2048),
		delay: ms("OTEL_BSP_SCHEDULE_DELAY", 5000), timeout: ms("OTEL_BSP_EXPORT_TIMEOUT", 30000)}
	c.batch = min(c.batch, c.max)
	return c
}

// intEnv is a positive integer variable, or def when unset or invalid.
func intEnv(getenv func(string) string, k string, def int) int {
	if v, err := strconv.Atoi(strings.TrimSpace(getenv(k))); err == nil && v > 0 {
		return v
	}
	return def
}

// batch is encoded spans (Span fields of a ScopeSpans) and their count.
type batch struct {
	b []byte
	n int
}

// spanQueue holds this package's spans, encoded at their end, until its
// goroutine exports them: a batch as soon as one is full, what there is
// every delay, and everything at stop. Adding a span is a copy under a
// lock, and the goroutine is woken once a batch rather than by a
// channel operation per span, as the SDK's processor does. When max spans
// wait (a slow or unreachable collector) new ones are dropped, as the
// SDK's processor drops them.
type spanQueue struct {
	e     *spanExporter
	res   *resource.Resource
	scope instrumentation.Scope
	cfg   queueConfig

	mu      sync.Mutex
	fill    batch
	ready   []batch // full batches, oldest first
	free    [][]byte
	waiting int // spans in ready
	dropped int
	closed  bool

	wake, quit, done chan struct{}
	stopOnce         sync.Once
	// ctx bounds the uploads: cancelled when stop's context ends.
	ctx    context.Context
	cancel context.CancelFunc
	out    []byte // the goroutine's ResourceSpans, reused
}

// newSpanQueue starts the queue of e's spans of one resource and scope.
func newSpanQueue(e *spanExporter, res *resource.Resource, scope instrumentation.Scope, cfg queueConfig) *spanQueue {
	q := &spanQueue{e: e, res: res, scope: scope, cfg: cfg,
		wake: make(chan struct{}, 1), quit: make(chan struct{}), done: make(chan struct{})}
	q.ctx, q.cancel = context.WithCancel(context.Background())
	go q.run()
	return q
}

// add queues one encoded span.
func (q *spanQueue) add(span []byte) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed || q.fill.n >= q.cfg.batch && !q.rotate() {
		q.dropped++
		return
	}
	q.fill.b = append(q.fill.b, span...)
	q.fill.n++
	if q.fill.n >= q.cfg.batch {
		q.rotate()
	}
}

// rotate moves the batch being filled to the ready ones, if there is
// room, and wakes the goroutine; q.mu is held.
func (q *spanQueue) rotate() bool {
	if q.fill.n == 0 {
		return true
	}
	if q.waiting+q.fill.n > q.cfg.max {
		return false
	}
	size := cap(q.fill.b)
	q.ready = append(q.ready, q.fill)
	q.waiting += q.fill.n
	q.fill = batch{}
	if n := len(q.free); n > 0 {
		q.fill.b, q.free = q.free[n-1], q.free[:n-1]
	} else {
		q.fill.b = make([]byte, 0, size) // not grown span by span again
	}
	select {
	case q.wake <- struct{}{}:
	default:
	}
	return true
}

// run exports batches as they are ready, a partial one every delay, and
// all at quit.
func (q *spanQueue) run() {
	defer close(q.done)
	tick := time.NewTicker(q.cfg.delay)
	defer tick.Stop()
	for {
		select {
		case <-q.wake:
		case <-tick.C:
			q.mu.Lock()
			q.rotate()
			q.mu.Unlock()
		case <-q.quit:
			q.drain()
			return
		}
		q.export()
	}
}

// drain exports every span queued, the batch being filled too.
func (q *spanQueue) drain() {
	for {
		q.export()
		q.mu.Lock()
		q.closed = true
		left := q.fill.n > 0
		q.rotate()
		q.mu.Unlock()
		if !left {
			return
		}
	}
}

// export uploads the ready batches, oldest first, and keeps their
// buffers for the next.
func (q *spanQueue) export() {
	q.mu.Lock()
	defer q.mu.Unlock()
	for len(q.ready) > 0 {
		bt := q.ready[0]
		q.ready = append(q.ready[:0], q.ready[1:]...)
		q.mu.Unlock()
		q.out = q.e.wrap(q.out[:0], q.res, q.scope, bt.b)
		ctx, cancel := context.WithTimeout(q.ctx, q.cfg.timeout)
		q.e.upload(ctx, q.out)
		cancel()
		q.mu.Lock()
		q.waiting -= bt.n
		q.free = append(q.free, bt.b[:0])
	}
}

// stop exports what is queued within ctx and ends the goroutine; past
// ctx the uploads under way are cancelled. A count of dropped spans is
// the one warning, unless a failure was.
func (q *spanQueue) stop(ctx context.Context) {
	q.stopOnce.Do(func() {
		close(q.quit)
		select {
		case <-q.done:
		case <-ctx.Done():
		}
		q.cancel() // what is still under way past ctx stops now
		q.mu.Lock()
		dropped := q.dropped
		q.mu.Unlock()
		if dropped > 0 {
			q.e.t.warn("spans", fmt.Errorf("%d spans dropped: the collector took them slower than the run made them", dropped))
		}
	})
}

// ids makes span IDs: a counter from a random start, through
// SplitMix64's mixer, a bijection, so unique within the run and
// unpredictable across runs, for one atomic add each.
type ids struct{ n atomic.Uint64 }

func newIDs() *ids {
	g := &ids{}
	g.n.Store(rand.Uint64())
	return g
}

func (g *ids) next() uint64 {
	for {
		z := g.n.Add(0x9e3779b97f4a7c15)
		z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
		z = (z ^ z>>27) * 0x94d049bb133111eb
		if z ^= z >> 31; z != 0 {
			return z
		}
	}
}

func (g *ids) span() (id trace.SpanID) {
	binary.BigEndian.PutUint64(id[:], g.next())
	return id
}

func (g *ids) trace() (id trace.TraceID) {
	binary.BigEndian.PutUint64(id[:8], g.next())
	binary.BigEndian.PutUint64(id[8:], g.next())
	return id
}
