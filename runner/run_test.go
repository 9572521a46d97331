package runner

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/llmrun/llmrun/checkpoint"
	"github.com/llmrun/llmrun/ending"
	"github.com/llmrun/llmrun/estimate"
	"github.com/llmrun/llmrun/limiter"
	"github.com/llmrun/llmrun/providers"
	"github.com/llmrun/llmrun/runner/retry"
	"github.com/llmrun/llmrun/source"
)

// slowProvider answers every request after latency (of the bubble's fake
// time), or fails with the context's error when cancelled first.
type slowProvider struct {
	latency  time.Duration
	sent     atomic.Int64
	finished atomic.Int64
	fail     func(n int64) error // optional: the error of the n-th send
}

func (p *slowProvider) Name() string             { return "fake" }
func (p *slowProvider) Format() providers.Format { return providers.FormatOpenAI }
func (p *slowProvider) BaseURL() string          { return "http://fake" }
func (p *slowProvider) Send(ctx context.Context, req *providers.Request) (*providers.Response, error) {
	n := p.sent.Add(1)
	if p.fail != nil {
		if err := p.fail(n); err != nil {
			return nil, err
		}
	}
	t := time.NewTimer(p.latency)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	p.finished.Add(1)
	body := fmt.Sprintf(`{"id":"x","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"answer %s"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5}}`, req.ID)
	return &providers.Response{Status: 200, Body: []byte(body), Text: "answer " + req.ID, Usage: providers.Usage{InputTokens: 3, OutputTokens: 2}}, nil
}

// testRun builds a run of n simple requests against p, checkpointed in dir.
func testRun(t testing.TB, dir string, n int, p providers.Provider, mutate func(*Config)) (Config, *checkpoint.Store) {
	t.Helper()
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, `{"custom_id":"r%03d","prompt":"p%d"}`+"\n", i, i)
	}
	in := filepath.Join(dir, "in.jsonl")
	if err := os.WriteFile(in, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	src := &source.Source{Path: in, Parser: source.Parser{Format: providers.FormatOpenAI, Defaults: source.LineDefaults{Model: "m"}}}
	check, err := src.Check()
	if err != nil {
		t.Fatal(err)
	}
	store, err := checkpoint.Open(checkpoint.Options{Output: filepath.Join(dir, "out.jsonl"), Errors: filepath.Join(dir, "err.jsonl"), RetryFailed: true})
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{
		Source: src, Total: check.Requests, Routes: []Route{{Provider: p}}, Store: store,
		Limiter: limiter.AsBudget(limiter.New(limiter.Options{})), Estimator: estimate.NewEstimator(),
		Policy:      retry.Policy{Base: time.Millisecond, Max: 10 * time.Millisecond},
		Concurrency: 4, Grace: 5 * time.Second,
		Rand: rand.New(rand.NewPCG(1, 2)),
	}
	if mutate != nil {
		mutate(&cfg)
	}
	return cfg, store
}

// TestInterruptDrainsWithinGrace: the first signal stops admissions and lets
// in-flight requests finish (they are written); nothing else is sent.
func TestInterruptDrainsWithinGrace(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := &slowProvider{latency: time.Second}
		sigs := make(chan os.Signal, 2)
		cfg, store := testRun(t, t.TempDir(), 20, p, func(c *Config) { c.Interrupts = sigs })
		defer store.Close()
		go func() {
			// The key's first request goes alone (calibration), 0-1s; then
			// four at a time: at 1.5s, 1 is done and 4 are in flight.
			time.Sleep(1500 * time.Millisecond)
			sigs <- syscall.SIGINT
		}()
		sum, err := Run(context.Background(), cfg)
		var ie *ending.InterruptedError
		if !errors.As(err, &ie) || ending.ExitSignalCode(ie.Signal) != 130 {
			t.Fatalf("err = %v, want an interrupt (exit 130)", err)
		}
		if sum.Succeeded != 5 || p.sent.Load() != 5 || sum.Pending != 15 {
			t.Fatalf("succeeded %d, sent %d, pending %d; want 5, 5, 15 (in-flight ones finish, nothing new starts)", sum.Succeeded, p.sent.Load(), sum.Pending)
		}
		if done, _ := store.Counts(); done != 5 {
			t.Fatalf("checkpoint holds %d results, want 5", done)
		}
	})
}

// TestInterruptGraceExpires: in-flight requests that outlast the grace are
// cancelled, not written: they stay pending for the rerun.
func TestInterruptGraceExpires(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := &slowProvider{latency: 10 * time.Second}
		sigs := make(chan os.Signal, 2)
		cfg, store := testRun(t, t.TempDir(), 20, p, func(c *Config) { c.Interrupts = sigs; c.Grace = 2 * time.Second })
		defer store.Close()
		start := time.Now()
		go func() {
			time.Sleep(time.Second)
			sigs <- syscall.SIGTERM
		}()
		sum, err := Run(context.Background(), cfg)
		var ie *ending.InterruptedError
		if !errors.As(err, &ie) || ending.ExitSignalCode(ie.Signal) != 143 {
			t.Fatalf("err = %v, want SIGTERM (exit 143)", err)
		}
		if took := time.Since(start); took != 3*time.Second {
			t.Errorf("run took %v, want signal (1s) + grace (2s)", took)
		}
		if sum.Succeeded != 0 || sum.Failed != 0 || sum.Pending != 20 || p.finished.Load() != 0 {
			t.Fatalf("summary %+v: cancelled requests must stay pending, not fail", sum)
		}
	})
}

// TestSecondInterruptCancelsAtOnce: a second signal does not wait for the grace.
func TestSecondInterruptCancelsAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := &slowProvider{latency: 10 * time.Second}
		sigs := make(chan os.Signal, 2)
		cfg, store := testRun(t, t.TempDir(), 8, p, func(c *Config) { c.Interrupts = sigs; c.Grace = time.Minute })
		defer store.Close()
		start := time.Now()
		go func() {
			time.Sleep(time.Second)
			sigs <- syscall.SIGINT
			time.Sleep(time.Second)
			sigs <- syscall.SIGINT
		}()
		if _, err := Run(context.Background(), cfg); err == nil {
			t.Fatal("no error after two interrupts")
		}
		if took := time.Since(start); took != 2*time.Second {
			t.Errorf("run took %v, want 2s (cancelled at the second signal)", took)
		}
	})
}

// TestBackoffDoesNotHoldASlot: a request sleeping in backoff holds no
// in-flight slot, so others proceed meanwhile.
func TestBackoffDoesNotHoldASlot(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := &slowProvider{latency: 100 * time.Millisecond, fail: func(n int64) error {
			if n == 1 {
				return &providers.Error{Class: providers.ClassServer, Status: 500}
			}
			return nil
		}}
		cfg, store := testRun(t, t.TempDir(), 10, p, func(c *Config) {
			c.Concurrency = 1
			c.Policy = retry.Policy{Base: 10 * time.Second, Max: 10 * time.Second}
			c.Rand = rand.New(rand.NewPCG(7, 7))
			c.Limiter = limiter.AsBudget(limiter.New(limiter.Options{Defaults: limiter.Limits{Concurrency: 1}}))
		})
		defer store.Close()
		start := time.Now()
		sum, err := Run(context.Background(), cfg)
		if err != nil || sum.Succeeded != 10 {
			t.Fatalf("err %v, summary %+v", err, sum)
		}
		// With one slot, the other nine (0.9s) run while the first sleeps
		// up to 10s; had it held the slot, the run would take backoff + 1s.
		backoffBound := 10*time.Second + 100*time.Millisecond
		if took := time.Since(start); took > backoffBound {
			t.Errorf("run took %v: the backoff sleep blocked other requests", took)
		}
	})
}

// TestPendingAtTheEndIsAnError (issue 9 item 3): a run that ends with
// requests neither answered nor failed, and nothing else wrong, must not
// exit 0. Here the input yields fewer requests than its check counted (a
// file that changed, a pipe read twice).
func TestPendingAtTheEndIsAnError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := &slowProvider{latency: 10 * time.Millisecond}
		cfg, store := testRun(t, t.TempDir(), 3, p, func(c *Config) { c.Total = 5 })
		defer store.Close()
		sum, err := Run(context.Background(), cfg)
		var pe *ending.PendingError
		if !errors.As(err, &pe) || pe.Pending != 2 || sum.Pending != 2 || sum.Succeeded != 3 {
			t.Fatalf("err = %v, summary %+v; want 2 pending reported as an error", err, sum)
		}
		if !strings.Contains(err.Error(), "2 requests still pending") || !strings.Contains(err.Error(), "fewer requests than its check counted") {
			t.Errorf("message %q does not say how many and why", err)
		}
	})
}

// TestRerunOfFinishedRunSkipsWithoutSecondPass: when the output answers
// exactly the checked requests, the run skips them all from the check's
// sum, confirming their ids (read again alone, not parsed into requests)
// against the output's lines; when one request changed, the run reads the
// input and sends just that one.
func TestRerunOfFinishedRunSkipsWithoutSecondPass(t *testing.T) {
	dir := t.TempDir()
	p := &slowProvider{}
	withRoute := func(c *Config) {
		c.Source.Route = &c.Routes[0]
		if _, err := c.Source.Check(); err != nil { // again, now with the route
			t.Fatal(err)
		}
	}
	cfg, store := testRun(t, dir, 20, p, withRoute)
	if _, err := Run(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	store.Close()
	cfg.Source.Close()

	cfg, store = testRun(t, dir, 20, p, withRoute)
	sum, err := Run(context.Background(), cfg)
	store.Close()
	cfg.Source.Close()
	if err != nil || sum.Skipped != 20 || p.sent.Load() != 20 {
		t.Fatalf("rerun: %v, %d skipped, %d sent in all", err, sum.Skipped, p.sent.Load())
	}

	// One changed line: the sum differs, and the run classifies each.
	cfg, store = testRun(t, dir, 20, p, func(c *Config) {
		b, _ := os.ReadFile(c.Source.Path)
		os.WriteFile(c.Source.Path, []byte(strings.Replace(string(b), `"p7"`, `"p7 edited"`, 1)), 0o644)
		withRoute(c)
	})
	defer store.Close()
	defer cfg.Source.Close()
	sum, err = Run(context.Background(), cfg)
	if err != nil || sum.Skipped != 19 || sum.Succeeded != 1 || p.sent.Load() != 21 {
		t.Fatalf("edited rerun: %v, %+v, %d sent in all", err, sum, p.sent.Load())
	}
}

// TestWaitingWorkersStayFew: while every slot is busy, the producer starts
// only a few workers beyond the concurrency cap (each holds a goroutine
// stack and its request); it used to start twice the cap.
func TestWaitingWorkersStayFew(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const c = 64
		p := &slowProvider{latency: 10 * time.Second}
		cfg, store := testRun(t, t.TempDir(), 300, p, func(cfg *Config) { cfg.Concurrency = c })
		defer store.Close()
		base := runtime.NumGoroutine()
		var during int
		go func() {
			time.Sleep(time.Second)
			synctest.Wait()
			during = runtime.NumGoroutine() - base - 1 // minus this goroutine
		}()
		if _, err := Run(context.Background(), cfg); err != nil {
			t.Fatal(err)
		}
		// The run's own goroutines (producer, sink, signals, progress) are
		// a handful; 2*c+8 workers were 136.
		if limit := c + c/8 + 8 + 10; during > limit {
			t.Fatalf("%d goroutines while the slots were busy, want at most %d", during, limit)
		}
		if during < c {
			t.Fatalf("%d goroutines while the slots were busy: the count missed the workers", during)
		}
	})
}

// TestBackoffFreesItsReadyToken: a request sleeping in backoff lets the
// producer start another in its place, so retries waiting out their delay
// do not hold up first attempts (up to the pool's overall 2c+8).
func TestBackoffFreesItsReadyToken(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const c = 4
		var mu sync.Mutex
		firsts := make(map[string]bool)
		p := &slowProvider{latency: time.Second}
		failing := &failFirstProvider{slowProvider: p, seen: firsts, mu: &mu}
		cfg, store := testRun(t, t.TempDir(), 100, failing, func(cfg *Config) {
			cfg.Concurrency = c
			cfg.Policy = retry.Policy{Base: time.Hour, Max: time.Hour, Deadline: 2 * time.Hour}
		})
		defer store.Close()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		var started int
		go func() {
			time.Sleep(30 * time.Second)
			synctest.Wait()
			mu.Lock()
			started = len(firsts)
			mu.Unlock()
			cancel()
		}()
		_, _ = Run(ctx, cfg)
		// Every first attempt fails and sleeps up to an hour: with the
		// sleepers' tokens given back the pool fills to 2c+8 = 16; holding
		// them it stopped at c + readySpare = 12.
		if started < 2*c+8 {
			t.Fatalf("%d requests started while the first ones slept in backoff, want %d", started, 2*c+8)
		}
	})
}

// failFirstProvider fails each request's first attempt with an error of
// unknown class (retried, neither paced nor a breaker failure).
type failFirstProvider struct {
	*slowProvider
	mu   *sync.Mutex
	seen map[string]bool
}

func (p *failFirstProvider) Send(ctx context.Context, req *providers.Request) (*providers.Response, error) {
	p.mu.Lock()
	first := !p.seen[req.ID]
	p.seen[req.ID] = true
	p.mu.Unlock()
	if first {
		return nil, errors.New("flaky")
	}
	return p.slowProvider.Send(ctx, req)
}
