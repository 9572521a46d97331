// Package runner is llmrun's live run: requests streamed from a checked
// source (package source), a bounded pool of workers that take each
// request through admission (the limiter and the run's other holds), the
// provider and the retry policy, and one sink goroutine that writes every
// result (package output's line) to the checkpoint as it lands. The
// batch-API route, package offline, writes the same lines, counts into and
// reports through package report and ends alike (package ending).
package runner

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/llmrun/llmrun/cache"
	"github.com/llmrun/llmrun/checkpoint"
	"github.com/llmrun/llmrun/ending"
	"github.com/llmrun/llmrun/estimate"
	"github.com/llmrun/llmrun/internal/ctxsleep"
	"github.com/llmrun/llmrun/internal/workpool"
	"github.com/llmrun/llmrun/limiter"
	"github.com/llmrun/llmrun/pricing"
	"github.com/llmrun/llmrun/providers"
	"github.com/llmrun/llmrun/report"
	"github.com/llmrun/llmrun/runner/retry"
	"github.com/llmrun/llmrun/source"
)

// Route is one hop of the fallback chain (see source.Route): the source
// fingerprints requests by it, the run admits and sends by it.
type Route = source.Route

// Config is everything one run needs. The cmd package builds it.
type Config struct {
	Source *source.Source
	// Total is the number of requests in the source (from Source.Check).
	Total int
	// Routes is the primary route followed by the fallback hops.
	Routes []Route
	Store  *checkpoint.Store

	// Limiter is the budget every attempt is admitted from (in-process or shared).
	Limiter limiter.Budget
	// Days are the per-day budgets (daily.go); nil keeps none. WaitDaily
	// sleeps until a spent day resets instead of stopping the run.
	Days      *limiter.Days
	WaitDaily bool
	Estimator *estimate.Estimator
	// InputRatios, by model, seed the Estimator's calibration of the
	// primary route from the provider's own count of a sample (see
	// forecast.Calibrate); nil leaves it to the responses' usage.
	InputRatios map[string]float64

	Policy      retry.Policy
	RetryBudget *retry.Budget
	// Breaker configures each key's circuit breaker; NewBreaker, if set,
	// builds them instead (another breaker policy, or a test's).
	Breaker    retry.BreakerConfig
	NewBreaker func() Breaker
	Guard      retry.Guard

	// Concurrency is the most attempts in flight at once (the limiter
	// enforces it per key too); it also sizes the worker pool.
	Concurrency int
	// Grace is how long in-flight requests may finish after the first
	// interrupt before they are cancelled.
	Grace time.Duration
	// Interrupts delivers SIGINT/SIGTERM; nil means none.
	Interrupts <-chan os.Signal

	// Prices prices every response; nil computes no costs.
	Prices *pricing.Table
	// MaxCost, when positive, caps the spend recorded in the output, Spent
	// (what earlier runs recorded) included: see spendCap. Every model
	// must have a price (cmd checks).
	MaxCost, Spent pricing.Cost

	// ConnectDeadline stops the run (an *ending.UnreachableError) when the
	// server of the chain's last hop was never reached for this long
	// since its first attempt; 0 never does.
	ConnectDeadline time.Duration
	// SetupDeadline stops the run (a *ending.SetupError) when a key that never
	// succeeded failed the same way that long (see setup.go); 0 never
	// does. Streaming says requests are streamed (for its hint).
	SetupDeadline time.Duration
	Streaming     bool
	// FailFast stops the run (a *ending.FailFastError) when its first FailFast
	// attempts all fail the same way, non-retryably; 0 never does.
	FailFast int
	// MaxFailures stops the run once its failed requests pass a count or
	// a ratio (--max-failures); the zero value never does.
	MaxFailures ending.MaxFailures

	Progress *report.Progress
	// Observer, if set, watches the run (metrics).
	Observer Observer
	// Log receives a Debug record per attempt (-v; never keys or bodies)
	// and the run's notes; nil discards them.
	Log *slog.Logger
	// Rand seeds the retry jitter; nil seeds one from the clock.
	Rand *rand.Rand
	// Cache, if set, answers requests from earlier runs' answers and
	// keeps this run's (cache.go).
	Cache *cache.Use
}

// errShortInput is why requests are pending when the input yielded fewer
// requests than its check pass counted.
var errShortInput = errors.New("the input gave fewer requests than its check counted (did it change during the run?)")

// errStopAdmitting ends the producer once admissions stop.
var errStopAdmitting = errors.New("admissions stopped")

type run struct {
	cfg Config
	c   counters

	admitCtx  context.Context // cancelled: no new attempts
	stopAdmit context.CancelCauseFunc
	workCtx   context.Context // cancelled: in-flight attempts end
	stopWork  context.CancelCauseFunc

	mu       sync.Mutex
	abort    error
	signal   os.Signal
	breakers map[string]Breaker
	// dayNoted is, per key, the day reset last logged as waited for;
	// dayTickets counts the day tickets not yet settled, and dayWake is
	// closed when one is (daily.go).
	dayNoted   map[string]time.Time
	dayTickets int
	dayWake    chan struct{}
	dayResets  map[int64]int // requests waiting, by the day reset they wait for (day_wait.go)
	gates      map[string]*keyGate
	conns      map[string]*connectWatch
	setups     sync.Map // key → *setupWatch
	lastKey    atomic.Pointer[keyMemo]
	rngMu      sync.Mutex
	cacheWarn  sync.Once

	// daySave saves the daily counts while they change (daysave.go).
	daySave *daySaver

	// charges is each key's reservation rule and its learner (charge.go).
	charges map[string]*chargeState

	// ff holds back attempts beyond the first FailFast until one says the
	// setup works (see failFast).
	ff *failFast
	// lastCause is providers.Cause of the latest failed attempt, for the
	// hold and outage messages.
	lastCause atomic.Pointer[string]

	// spend is the --max-cost budget; nil without a cap.
	spend *spendCap
	// tags adds up the tagged requests for the summary.
	tags tagBook
	// queues counts the attempts waiting for admission (observe_queue.go).
	queues report.Queues

	// results hands each line to the sink, unbuffered: a worker holds its
	// run slot until the sink has taken its answer, so the answers a
	// kill -9 can lose (received or in flight, not yet appended) are at
	// most Concurrency, plus the one being appended.
	results chan result
	// slots holds one token per attempt in flight.
	slots chan struct{}
	// ready holds one token per worker that is in flight or waiting to be
	// (see readySpare); a worker gives its token back when it finishes or
	// first sleeps in backoff.
	ready chan struct{}
	// produced is closed once the source has fed every first attempt.
	produced chan struct{}
	// lineBufs holds the buffers lines are encoded in (*[]byte): the
	// checkpoint copies a line as it writes it, so the sink gives each
	// back.
	lineBufs sync.Pool
}

type result struct {
	id   string
	fp   checkpoint.Fingerprint
	line []byte
	buf  *[]byte // line's buffer, back to run.lineBufs once written
	ok   bool
	// cause is why a failed request failed (providers.Cause).
	cause string
}

// Run runs the batch. It returns the summary and an error that says how the
// run ended (package ending): nil (all succeeded), ErrFailures, *AbortError,
// *InterruptedError, *PendingError, or a setup/IO error.
func Run(ctx context.Context, cfg Config) (*report.Summary, error) {
	r := newRun(ctx, cfg)
	defer r.stopWork(nil)
	return r.execute(ctx)
}

// newRun applies cfg's defaults and sets up the run's contexts and queues.
func newRun(ctx context.Context, cfg Config) *run {
	if cfg.Rand == nil {
		cfg.Rand = rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 0))
	}
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = 8
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.RetryBudget == nil {
		cfg.RetryBudget = retry.NewBudget(retry.DefaultBudgetRatio, retry.DefaultBudgetWindow, retry.DefaultBudgetAllowance)
	}
	r := &run{cfg: cfg, c: counters{new(report.Counters)}, breakers: make(map[string]Breaker), gates: make(map[string]*keyGate), conns: make(map[string]*connectWatch),
		ff: newFailFast(cfg.FailFast), produced: make(chan struct{}), slots: make(chan struct{}, cfg.Concurrency), results: make(chan result),
		ready: make(chan struct{}, cfg.Concurrency+readySpare(cfg.Concurrency))}
	if cfg.MaxCost > 0 {
		r.spend = &spendCap{cap: cfg.MaxCost, spent: cfg.Spent}
	}
	r.workCtx, r.stopWork = context.WithCancelCause(ctx)
	r.admitCtx, r.stopAdmit = context.WithCancelCause(r.workCtx)
	r.seedCalibration()
	return r
}

// execute runs the pipeline (signals, sink, producer and workers) to its
// end and says how it ended.
func (r *run) execute(ctx context.Context) (*report.Summary, error) {
	started := time.Now()
	go r.watchSignals()

	sinkErr := make(chan error, 1)
	go func() { sinkErr <- r.sink() }()

	r.c.Total.Store(int64(r.cfg.Total))
	r.cfg.Store.Reserve(r.cfg.Total) // the first run of a big input: no table growth on the way
	if r.cfg.Progress != nil && r.cfg.Progress.Status == nil {
		r.cfg.Progress.Status = r.statusWord
	}
	r.cfg.Progress.Start(r.c.Counters)
	if r.cfg.Observer != nil {
		r.cfg.Observer.Start(&View{r: r})
	}
	if err := r.restoreDays(); err != nil {
		r.abortRun(err)
	}
	r.daySave = r.startDaySaver()
	prodErr := r.produce()
	close(r.results)
	werr := <-sinkErr
	// After the sink's last line: the state write that saves the counts
	// is then the checkpoint's last, and Close need not write it again.
	r.daySave.stop()
	if err := r.saveDays(); err != nil && prodErr == nil {
		prodErr = err
	}
	r.cfg.Progress.Stop()
	if ferr := r.cfg.Store.Flush(); werr == nil {
		werr = ferr
	}
	sum := r.summarize(time.Since(started))
	if r.spend != nil {
		sum.RecordedCostUSD = r.spend.total().USDOrNull(true)
		sum.MaxCostUSD = r.cfg.MaxCost.USD()
	}
	return sum, r.ending(ctx, sum, werr, prodErr)
}

// ending is the error that says how the run ended (see Run).
func (r *run) ending(ctx context.Context, sum *report.Summary, werr, prodErr error) error {
	r.mu.Lock()
	abort, sig := r.abort, r.signal
	r.mu.Unlock()
	if errors.Is(abort, errCostCap) {
		abort = &ending.CostCapError{Spent: r.spend.total(), Cap: r.cfg.MaxCost}
	}
	switch {
	case werr != nil:
		return fmt.Errorf("writing results: %w", werr)
	case abort != nil:
		sum.Aborted = abort.Error()
		return &ending.AbortError{Cause: abort}
	case sig != nil:
		return &ending.InterruptedError{Signal: sig}
	case prodErr != nil && !errors.Is(prodErr, errStopAdmitting):
		return prodErr
	case ctx.Err() != nil:
		return ctx.Err()
	case sum.Pending > 0:
		cause := context.Cause(r.admitCtx)
		if cause == nil {
			cause = errShortInput
		}
		return &ending.PendingError{Pending: sum.Pending, Cause: cause}
	case r.c.Failed.Load() > 0:
		return ending.ErrFailures
	}
	return nil
}

// produce streams the source into the worker pool and waits for the pool.
func (r *run) produce() error {
	g := new(errgroup.Group)
	// Workers beyond the concurrency cap sleep in backoff or wait for
	// budget without holding an in-flight slot (the limiter holds those).
	// The ready gate keeps the waiting ones to a few: each worker holds a
	// goroutine stack and its request, so a pool of twice the cap waiting
	// for slots cost a 512-wide run about 4 MB for nothing.
	g.SetLimit(2*r.cfg.Concurrency + 8)
	w := workpool.New(g, func(w work) { r.process(w.req, w.fp) })
	fps := source.NewFingerprinter(r.cfg.Routes[0])
	if set, ok := r.cfg.Source.InputSet(fps); ok && set.Len() == r.cfg.Total && r.cfg.Store.SkipAll(set) {
		// The output answers exactly the checked requests: a rerun of a
		// finished run sends nothing and need not read the input again.
		r.c.Skipped.Add(int64(set.Len()))
		close(r.produced)
		return nil
	}
	err := r.cfg.Source.Each(func(req *providers.Request) error {
		fp := fps.Of(req)
		switch r.cfg.Store.ClassifyAdopting(req.ID, fp, func() checkpoint.Fingerprint { return fps.Legacy(req) }) {
		case checkpoint.Skip: // answered for this very request
			r.c.Skipped.Add(1)
			return nil
		case checkpoint.KeepFailed: // failed before and --no-retry-failed
			r.c.Failed.Add(1)
			return nil
		}
		select {
		case r.ready <- struct{}{}:
		case <-r.admitCtx.Done():
			return errStopAdmitting
		}
		if r.admitCtx.Err() != nil {
			<-r.ready
			return errStopAdmitting
		}
		w.Hand(work{req, fp})
		return nil
	})
	w.Close()
	if err == nil {
		// Every request was classified: an id the checkpoint holds and the
		// input no longer has has left it.
		r.cfg.Store.InputDone()
	}
	close(r.produced)
	g.Wait()
	return err
}

// readySpare is how many workers beyond the concurrency cap may wait for a
// slot or budget: enough that a freed slot finds a request parsed and
// waiting, few enough that waiting costs little memory.
func readySpare(concurrency int) int { return concurrency/8 + 8 }

// unready gives t's ready token back, once: t finished, or it sleeps in
// backoff and the producer may start another request meanwhile.
func (r *run) unready(t *task) {
	if t.ready {
		t.ready = false
		<-r.ready
	}
}

// stopAdmitting records why admissions stop (first cause wins).
func (r *run) stopAdmitting(cause error) {
	r.stopAdmit(cause)
}

// abortRun stops the run for a fatal provider condition.
func (r *run) abortRun(cause error) {
	r.mu.Lock()
	if r.abort == nil {
		r.abort = cause
	}
	r.mu.Unlock()
	r.stopAdmitting(cause)
}

// watchSignals: the first signal stops admissions and gives in-flight work
// Grace to finish; the second (or the end of the grace) cancels it.
func (r *run) watchSignals() {
	if r.cfg.Interrupts == nil {
		return
	}
	select {
	case sig := <-r.cfg.Interrupts:
		r.mu.Lock()
		r.signal = sig
		r.mu.Unlock()
		r.stopAdmitting(fmt.Errorf("interrupted %s", ending.SignalWords(sig)))
	case <-r.workCtx.Done():
		return
	}
	grace := time.NewTimer(r.cfg.Grace)
	defer grace.Stop()
	select {
	case <-r.cfg.Interrupts:
		r.stopWork(errors.New("second interrupt"))
	case <-grace.C:
		r.stopWork(errors.New("grace period over"))
	case <-r.workCtx.Done():
	}
}

// sink is the single writer to the checkpoint. A write error stops
// admissions; results still arriving are dropped and stay pending.
func (r *run) sink() error {
	var werr error
	for res := range r.results {
		if werr != nil {
			continue
		}
		var err error
		if res.ok {
			err = r.cfg.Store.AnswerEncoded(res.id, res.fp, res.line) // output.Line's encoding
		} else {
			err = r.cfg.Store.Fail(res.id, res.fp, res.line)
		}
		r.putLineBuf(res)
		if err != nil {
			werr = err
			r.stopAdmitting(fmt.Errorf("writing results: %w", err))
			continue
		}
		if res.ok {
			r.c.Succeeded.Add(1)
			continue
		}
		failed := r.c.Failed.Add(1)
		r.c.AddFailure(res.cause)
		if answered := failed + r.c.Succeeded.Load(); r.cfg.MaxFailures.Exceeded(failed, answered) {
			r.abortRun(&ending.MaxFailuresError{Failed: failed, Answered: answered, Limit: r.cfg.MaxFailures, Last: res.cause})
		}
	}
	return werr
}

// maxPooledLine bounds the line buffers kept for reuse: a rare huge
// answer's must not stay for the rest of the run.
const maxPooledLine = 64 << 10

// lineBuf is an empty buffer to encode a line in.
func (r *run) lineBuf() *[]byte {
	if b, ok := r.lineBufs.Get().(*[]byte); ok {
		return b
	}
	b := make([]byte, 0, 2<<10)
	return &b
}

// putLineBuf gives res's buffer back once its line is written.
func (r *run) putLineBuf(res result) {
	if res.buf == nil || cap(res.line) > maxPooledLine {
		return
	}
	*res.buf = res.line[:0]
	r.lineBufs.Put(res.buf)
}

// breaker returns key's breaker, made on first use.
func (r *run) breaker(key string) Breaker {
	r.mu.Lock()
	defer r.mu.Unlock()
	b, ok := r.breakers[key]
	if !ok {
		if r.cfg.NewBreaker != nil {
			b = r.cfg.NewBreaker()
		} else {
			b = retry.NewBreaker(r.cfg.Breaker)
		}
		r.breakers[key] = b
	}
	return b
}

// Holding reports whether some key's breaker is open, for progress.
func (r *run) holding() bool { return r.c.Holding.Load() > 0 }

// int64n draws from the run's seeded source under a lock (rand.Rand is not
// safe for concurrent use).
func (r *run) int64n(n int64) int64 {
	if n <= 0 {
		return 0
	}
	r.rngMu.Lock()
	defer r.rngMu.Unlock()
	return r.cfg.Rand.Int64N(n)
}

// sleep waits d or until ctx ends; it reports whether the full wait elapsed.
func sleep(ctx context.Context, d time.Duration) bool { return ctxsleep.For(ctx, d) }

// work is one request handed to a worker.
type work struct {
	req *providers.Request
	fp  checkpoint.Fingerprint
}
