package runner

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/llmrun/llmrun/ending"
	"github.com/llmrun/llmrun/limiter"
	"github.com/llmrun/llmrun/pricing"
	"github.com/llmrun/llmrun/providers"
	"github.com/llmrun/llmrun/report"
)

// awaitIn runs s.await(ctx, worst, waiting) on its own goroutine and
// returns what it returned, or false while it is still waiting once the
// bubble is idle.
func awaitIn(ctx context.Context, s *spendCap, worst func() pricing.Cost, waiting ...func()) func() (error, bool) {
	done := make(chan error, 1)
	var w func()
	if len(waiting) > 0 {
		w = waiting[0]
	}
	go func() { done <- s.await(ctx, worst, w) }()
	return func() (error, bool) {
		synctest.Wait()
		select {
		case err := <-done:
			return err, true
		default:
			return nil, false
		}
	}
}

// TestSpendCapAwait: a worst case that does not fit beside reservations
// in flight waits for them to settle (each settle re-checks it, with the
// worst case asked anew); it fits once they settle below their worst, or
// is refused once nothing is in flight and it still does not fit; it
// reserves nothing itself, and ends with its context. It says it waits
// once, and only when it does (progress counts the requests waiting).
func TestSpendCapAwait(t *testing.T) {
	const worst = pricing.Cost(50)
	fixed := func() pricing.Cost { return worst }
	ctx := context.Background()
	never := func() { t.Error("said it waited, and did not") }
	t.Run("fits at once", func(t *testing.T) {
		s := &spendCap{cap: 100, spent: 50}
		if err := s.await(ctx, fixed, never); err != nil || s.reserved != 0 {
			t.Fatalf("err %v, reserved %v; want nil and nothing reserved", err, s.reserved)
		}
	})
	t.Run("nothing in flight", func(t *testing.T) {
		s := &spendCap{cap: 100, spent: 51}
		if err := s.await(ctx, fixed, never); !errors.Is(err, errCostCap) {
			t.Fatalf("err %v, want errCostCap", err)
		}
	})
	t.Run("waits for the last settle", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			s := &spendCap{cap: 100}
			s.reserve(40)
			s.reserve(40)
			var said atomic.Int64
			res := awaitIn(ctx, s, fixed, func() { said.Add(1) })
			if err, done := res(); done || said.Load() != 1 {
				t.Fatalf("returned %v (done %v, said it waited %d times) with 80 of 100 reserved", err, done, said.Load())
			}
			s.settle(40, 15) // 15 spent + 40 reserved + 50 > 100: still waits
			if err, done := res(); done {
				t.Fatalf("returned %v with 15 spent and 40 reserved", err)
			}
			s.settle(40, 15) // 30 spent, nothing in flight: fits
			if err, done := res(); !done || err != nil {
				t.Fatalf("after the last settle: done %v, err %v; want nil", done, err)
			}
			if n := said.Load(); n != 1 {
				t.Errorf("said it waited %d times over two settles; want once", n)
			}
		})
	})
	t.Run("refused after the last settle", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			s := &spendCap{cap: 100}
			s.reserve(80)
			res := awaitIn(ctx, s, fixed)
			if _, done := res(); done {
				t.Fatal("returned with 80 reserved")
			}
			s.settle(80, 60) // 60 + 50 > 100, nothing in flight
			if err, done := res(); !done || !errors.Is(err, errCostCap) {
				t.Fatalf("done %v, err %v; want errCostCap", done, err)
			}
		})
	})
	t.Run("worst case asked anew", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			s := &spendCap{cap: 100}
			s.reserve(60)
			var mu sync.Mutex
			w := pricing.Cost(70)
			res := awaitIn(ctx, s, func() pricing.Cost { mu.Lock(); defer mu.Unlock(); return w })
			if _, done := res(); done {
				t.Fatal("returned with 60 reserved")
			}
			mu.Lock()
			w = 40 // calibrated down by the answer that settles
			mu.Unlock()
			s.settle(60, 55) // 55 + 70 would not fit; 55 + 40 does
			if err, done := res(); !done || err != nil {
				t.Fatalf("done %v, err %v; want nil", done, err)
			}
		})
	})
	t.Run("context", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			s := &spendCap{cap: 100}
			s.reserve(80)
			ctx, cancel := context.WithCancelCause(ctx)
			res := awaitIn(ctx, s, fixed)
			if _, done := res(); done {
				t.Fatal("returned with 80 reserved")
			}
			stop := errors.New("interrupted")
			cancel(stop)
			if err, done := res(); !done || err != stop {
				t.Fatalf("done %v, err %v; want the context's cause", done, err)
			}
			if s.reserved != 80 || s.spent != 0 {
				t.Errorf("reserved %v spent %v: the wait changed the books", s.reserved, s.spent)
			}
		})
	})
}

// spendProvider answers after latency with a fixed usage, fails the first
// attempt of the requests failFirst picks (a server error, retried), and
// counts the attempts in flight at once.
type spendProvider struct {
	cachedProvider
	failFirst func(id string) bool

	mu            sync.Mutex
	tried         map[string]bool
	now, maxNow   int
	failed, total int
}

func (p *spendProvider) Send(ctx context.Context, req *providers.Request) (*providers.Response, error) {
	p.mu.Lock()
	p.now++
	p.maxNow = max(p.maxNow, p.now)
	p.total++
	first := !p.tried[req.ID]
	p.tried[req.ID] = true
	p.mu.Unlock()
	defer func() { p.mu.Lock(); p.now--; p.mu.Unlock() }()
	if first && p.failFirst != nil && p.failFirst(req.ID) {
		time.Sleep(p.latency)
		p.mu.Lock()
		p.failed++
		p.mu.Unlock()
		return nil, &providers.Error{Class: providers.ClassServer, Status: 500, Message: "oops"}
	}
	return p.cachedProvider.Send(ctx, req)
}

// spendRun is a synctest run of n requests under --max-cost cap, with
// earlier spend spent, eight at a time, output capped at maxTokens; the
// model's price is $0.15/M in, $0.60/M out, and every prompt estimates
// (bytes/4) as the 1000 input tokens the provider reports. It returns the
// ids answered and the run's error.
func spendRun(t *testing.T, n int, p *spendProvider, maxTokens int, cap, spent pricing.Cost, mutate func(*Config)) ([]string, error) {
	t.Helper()
	ids, _, err := spendRunSum(t, n, p, maxTokens, cap, spent, mutate)
	return ids, err
}

// spendRunSum is spendRun with the run's summary.
func spendRunSum(t *testing.T, n int, p *spendProvider, maxTokens int, cap, spent pricing.Cost, mutate func(*Config)) ([]string, *report.Summary, error) {
	t.Helper()
	dir := t.TempDir()
	prices, err := pricing.Snapshot().WithPrices(strings.NewReader(`{"claude-x": {"input_per_mtok": 0.15, "output_per_mtok": 0.6}}`), "p")
	if err != nil {
		t.Fatal(err)
	}
	p.tried = map[string]bool{}
	cfg, store := testRun(t, dir, n, p, func(c *Config) {
		c.Prices = prices
		c.Source.Parser.Defaults.Model = "claude-x"
		c.Source.Parser.Defaults.MaxTokens = maxTokens
		c.MaxCost, c.Spent = cap, spent
		c.Concurrency = 8
		c.Limiter = limiter.AsBudget(limiter.New(limiter.Options{Defaults: limiter.Limits{Concurrency: 8}}))
		if mutate != nil {
			mutate(c)
		}
	})
	rewritePrompts(t, cfg.Source, 4000)
	sum, err := Run(context.Background(), cfg)
	store.Close()
	var ids []string
	for _, l := range readOut(t, dir) {
		ids = append(ids, l.Get("custom_id").Str)
	}
	return ids, sum, err
}

// The answers settle far below their worst case (100 of 1000 output
// tokens): eight in flight reserve more than the cap has left, yet the
// cap is not reached, so every request is answered: an attempt whose
// worst case does not fit waits for the others to settle. Before, the
// first reservation that did not fit stopped the run.
func TestMaxCostWaitsForInFlight(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := &spendProvider{cachedProvider: cachedProvider{latency: time.Second, input: 1000, out: 100}}
		per := pricing.FromUSD(0.00021)    // 1000 × 0.15 + 100 × 0.60 per million
		worst := pricing.FromUSD(0.000780) // (1000 × 1.2 + 1) × 0.15 + 1000 × 0.60 per million, about
		cap := 40*per + worst + worst/10   // the last request's worst case fits beside the 39 before it
		ids, err := spendRun(t, 40, p, 1000, cap, 0, nil)
		if err != nil || len(ids) != 40 {
			t.Fatalf("err %v, %d answers; want all 40 within %v (8 in flight reserve %v)", err, len(ids), cap, 8*worst)
		}
		if p.maxNow < 4 || p.total != 40 {
			t.Errorf("%d in flight at most, %d sent; want the cap to let several go at once, each once", p.maxNow, p.total)
		}
	})
}

// A failed attempt gives its reservation back and wakes those waiting:
// with room for one worst case at a time, requests whose first attempt
// fails are retried and every request is answered (a reservation kept by
// a failure would leave the others waiting for ever: synctest reports
// the deadlock).
func TestMaxCostFailureFreesRoom(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := &spendProvider{cachedProvider: cachedProvider{latency: time.Second, input: 1000, out: 100},
			failFirst: func(id string) bool { return id[len(id)-1]%3 == 0 }}
		per, worst := pricing.FromUSD(0.00021), pricing.FromUSD(0.000780)
		cap := 12*per + worst + worst/10 // 12 answers, one worst case at a time at the end
		ids, err := spendRun(t, 12, p, 1000, cap, 0, nil)
		if err != nil || len(ids) != 12 || p.failed == 0 || p.total != 12+p.failed {
			t.Fatalf("err %v, %d answers, %d failed of %d sent; want all 12 answered", err, len(ids), p.failed, p.total)
		}
	})
}

// When the cap is really reached the run stops as before, with the same
// CostCapError, and the spend settled is never above the cap; but it
// stops only then: every answer that fitted was taken (8 here, the cap
// less two earlier answers and the last worst case), where reservations
// in flight used to stop it sooner.
func TestMaxCostStopsAtTheCapAfterWaiting(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := &spendProvider{cachedProvider: cachedProvider{latency: time.Second, input: 1000, out: 100}}
		per := pricing.FromUSD(0.00021)
		cap := 10*per + per/2
		ids, err := spendRun(t, 40, p, 100, cap, 2*per, nil)
		var ce *ending.CostCapError
		if !asErr(err, &ce) {
			t.Fatalf("err %v, want a CostCapError", err)
		}
		var ae *ending.AbortError
		spent := 2*per + pricing.Cost(len(ids))*per
		if !asErr(err, &ae) || ce.Spent != spent || spent > cap || ce.Cap != cap {
			t.Errorf("err %v: CostCapError %+v; %d answers → spent %v, cap %v", err, ce, len(ids), spent, cap)
		}
		if len(ids) != 8 || p.total != 8 {
			t.Errorf("%d answers of %d sent; want 8 (the 9th's worst case cannot fit)", len(ids), p.total)
		}
		if !strings.Contains(err.Error(), "rerun with a higher --max-cost to continue") {
			t.Errorf("err %v", err)
		}
	})
}

// An interrupt ends the wait for room: with room for one worst case at a
// time, the third request waits while the second is in flight; the signal
// stops it there (never sent, left pending), the second finishes within
// the grace, and the run ends then.
func TestMaxCostWaitEndsAtInterrupt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := &spendProvider{cachedProvider: cachedProvider{latency: 2 * time.Second, input: 1000, out: 100}}
		per, worst := pricing.FromUSD(0.00021), pricing.FromUSD(0.000780)
		sigs := make(chan os.Signal, 1)
		go func() {
			time.Sleep(3 * time.Second) // the first answered at 2s, the second in flight until 4s
			sigs <- syscall.SIGINT
		}()
		start := time.Now()
		ids, err := spendRun(t, 3, p, 1000, 3*per+worst+worst/10, 0, func(c *Config) { c.Interrupts = sigs })
		var ie *ending.InterruptedError
		if !errors.As(err, &ie) || len(ids) != 2 || p.total != 2 {
			t.Fatalf("err %v, %d answers of %d sent; want an interrupt after 2, the third never sent", err, len(ids), p.total)
		}
		if took := time.Since(start); took != 4*time.Second {
			t.Errorf("run took %v, want 4s (the second answer's end)", took)
		}
	})
}

// Waiting for --max-cost room is llmrun's own doing, not the request's:
// like a breaker's hold or a day's wait it does not count against the
// request's deadline. With room for one worst case at a time and answers
// taking 50s under a 1m deadline, the third request waits 100s for room,
// then is sent and answered. Before, it was sent past its deadline and
// failed at once as timed out. Progress shows who waits (two at 10s, one
// at 60s, none at 110s) and the summary the 150s waited in all.
func TestMaxCostWaitIsNotTheRequestsDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := &spendProvider{cachedProvider: cachedProvider{latency: 50 * time.Second, input: 1000, out: 100}}
		per, worst := pricing.FromUSD(0.00021), pricing.FromUSD(0.000780)
		var logged bytes.Buffer
		ids, sum, err := spendRunSum(t, 3, p, 1000, 3*per+worst+worst/10, 0, func(c *Config) {
			c.Policy.Deadline = time.Minute
			c.Progress = &report.Progress{Mode: report.ProgressLog, Log: slog.New(slog.NewTextHandler(&logged, nil)), Interval: 10 * time.Second}
		})
		if err != nil || len(ids) != 3 || p.total != 3 || sum.Failed != 0 {
			t.Fatalf("err %v, %d answers of %d sent, failed %v; want all 3 answered, each sent once", err, len(ids), p.total, sum.FailuresByCause)
		}
		// 50 + 100 s, less the first-on-key gate's wait (calibrationWait)
		// of a request that saw room before the first reserved it: it then
		// waits at the gate, not for room, and for room only after. Which
		// request gets there first is the scheduler's: 140, 145 or 150.
		if w := sum.MaxCostWaitSeconds; w > 150 || w < 150-2*calibrationWait.Seconds() {
			t.Errorf("summary: %vs waited for room; want 150 (50 + 100), less up to %v at the gate for each of the two", w, calibrationWait)
		}
		lines := strings.Split(strings.TrimSpace(logged.String()), "\n")
		for i, want := range map[int]string{0: "2 waiting for --max-cost room", 5: "1 waiting for --max-cost room", 10: "progress.waiting_for_max_cost=0"} {
			if i >= len(lines) || !strings.Contains(lines[i], want) {
				t.Errorf("progress record %d lacks %q:\n%s", i, want, logged.String())
			}
		}
	})
}
