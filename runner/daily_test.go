package runner

import (
	"context"
	"errors"
	"path/filepath"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/llmrun/llmrun/checkpoint"
	"github.com/llmrun/llmrun/ending"
	"github.com/llmrun/llmrun/limiter"
	"github.com/llmrun/llmrun/providers"
)

// The daily budgets in a run, on the bubble's fake clock (which starts at
// midnight UTC, 2000-01-01).

// dailyAbort fails unless err is the abort of a daily limit resetting at
// reset, or up to slack later.
func dailyAbort(t *testing.T, err error, reset time.Time, slack time.Duration) {
	t.Helper()
	var ae *ending.AbortError
	var de *limiter.DayLimitError
	if !errors.As(err, &ae) || !errors.As(err, &de) || de.Reset.Before(reset) || de.Reset.After(reset.Add(slack)) {
		t.Fatalf("err = %v, want an abort for a daily limit resetting at %v", err, reset)
	}
}

// reopen opens the checkpoint of dir again, for a rerun.
func reopen(t *testing.T, dir string) *checkpoint.Store {
	t.Helper()
	store, err := checkpoint.Open(checkpoint.Options{Output: filepath.Join(dir, "out.jsonl"), Errors: filepath.Join(dir, "err.jsonl"), RetryFailed: true})
	if err != nil {
		t.Fatal(err)
	}
	return store
}

// TestDailyOwnLimit: --rpd stops the run once the day's requests are
// sent (what is in flight finishes, nothing is lost); a rerun the same
// day sends nothing; a rerun the next day finishes.
func TestDailyOwnLimit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dir := t.TempDir()
		var offset atomic.Int64
		clock := func() time.Time { return time.Now().Add(time.Duration(offset.Load())) }
		days := func() *limiter.Days {
			return limiter.NewDays(limiter.DaysOptions{Defaults: limiter.DayLimits{Requests: 3}, Now: clock})
		}
		p := &slowProvider{latency: 10 * time.Millisecond}
		cfg, store := testRun(t, dir, 8, p, func(c *Config) { c.Days = days(); c.Concurrency = 2 })
		zone := dayZone(cfg.Routes[0])
		sum, err := Run(context.Background(), cfg)
		store.Close()
		dailyAbort(t, err, limiter.NextMidnight(clock(), zone), 0)
		if p.sent.Load() != 3 || sum.Succeeded != 3 || sum.Pending != 5 || sum.Failed != 0 {
			t.Fatalf("sent %d, summary %+v", p.sent.Load(), sum)
		}

		cfg.Store, cfg.Days = reopen(t, dir), days()
		sum, err = Run(context.Background(), cfg)
		cfg.Store.Close()
		dailyAbort(t, err, limiter.NextMidnight(clock(), zone), 0)
		if p.sent.Load() != 3 || sum.Succeeded != 0 || sum.Failed != 0 {
			t.Fatalf("the same day: sent %d, summary %+v", p.sent.Load(), sum)
		}

		offset.Store(int64(24 * time.Hour))
		cfg.Store, cfg.Days = reopen(t, dir), days()
		cfg.Days = limiter.NewDays(limiter.DaysOptions{Defaults: limiter.DayLimits{Requests: 5}, Now: clock})
		sum, err = Run(context.Background(), cfg)
		defer cfg.Store.Close()
		if err != nil || p.sent.Load() != 8 || sum.Succeeded != 5 {
			t.Fatalf("the next day: %v, sent %d, summary %+v", err, p.sent.Load(), sum)
		}
	})
}

// TestDailyWaitDaily: with WaitDaily the run sleeps until the reset and
// finishes.
func TestDailyWaitDaily(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := &slowProvider{latency: 10 * time.Millisecond}
		cfg, store := testRun(t, t.TempDir(), 5, p, func(c *Config) {
			c.Days = limiter.NewDays(limiter.DaysOptions{Defaults: limiter.DayLimits{Requests: 3}})
			c.WaitDaily = true
		})
		defer store.Close()
		start := time.Now()
		reset := limiter.NextMidnight(start, dayZone(cfg.Routes[0]))
		sum, err := Run(context.Background(), cfg)
		if err != nil || sum.Succeeded != 5 || p.sent.Load() != 5 {
			t.Fatalf("%v, sent %d, summary %+v", err, p.sent.Load(), sum)
		}
		if now := time.Now(); now.Before(reset) || now.After(reset.Add(time.Minute)) {
			t.Errorf("ended at %v, want just after the reset at %v", now, reset)
		}
	})
}

// dailyError is a provider's 429 for the day.
func dailyError(retry time.Duration) *providers.Error {
	return &providers.Error{Class: providers.ClassRateLimited, Status: 429, Daily: true, Message: "per day", RetryAfter: retry, HasRetryAfter: retry > 0}
}

// TestDailyRefusal: a 429 for the day spends the key's day until the
// provider's word on when, else the zone's midnight: the run stops with
// the refused request pending, or with WaitDaily goes on after it.
func TestDailyRefusal(t *testing.T) {
	tests := map[string]struct {
		retry time.Duration
		wait  bool
	}{
		"until midnight":       {0, false},
		"until its word":       {10 * time.Minute, false},
		"waiting for its word": {10 * time.Minute, true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var refused atomic.Bool
				p := &slowProvider{latency: 10 * time.Millisecond, fail: func(n int64) error {
					if n == 3 && refused.CompareAndSwap(false, true) {
						return dailyError(tc.retry)
					}
					return nil
				}}
				cfg, store := testRun(t, t.TempDir(), 6, p, func(c *Config) {
					c.Days, c.WaitDaily, c.Concurrency = limiter.NewDays(limiter.DaysOptions{}), tc.wait, 1
				})
				defer store.Close()
				start := time.Now()
				sum, err := Run(context.Background(), cfg)
				if tc.wait {
					if err != nil || sum.Succeeded != 6 || time.Since(start) < tc.retry {
						t.Fatalf("%v after %v, summary %+v", err, time.Since(start), sum)
					}
					return
				}
				reset := limiter.NextMidnight(start, dayZone(cfg.Routes[0]))
				if tc.retry > 0 {
					reset = start.Add(20 * time.Millisecond).Add(tc.retry) // refused after two answers
				}
				dailyAbort(t, err, reset, 0)
				if p.sent.Load() != 3 || sum.Succeeded != 2 || sum.Pending != 4 || sum.Failed != 0 {
					t.Fatalf("sent %d, summary %+v", p.sent.Load(), sum)
				}
			})
		})
	}
}

// headerProvider answers with day windows in its headers: a per-day
// requests window that is spent after the second answer.
type headerProvider struct{ slowProvider }

func (p *headerProvider) Send(ctx context.Context, req *providers.Request) (*providers.Response, error) {
	resp, err := p.slowProvider.Send(ctx, req)
	if err == nil {
		unknown := providers.Window{Limit: -1, Remaining: -1}
		resp.Limits = providers.RateLimits{Requests: unknown, Tokens: unknown, InputTokens: unknown, OutputTokens: unknown, DayTokens: unknown,
			DayRequests: providers.Window{Limit: 1000, Remaining: max(2-p.finished.Load(), 0), Reset: 3 * time.Hour}}
	}
	return resp, err
}

// TestDailyFromHeaders: a provider's per-day window, spent, stops the run
// without a single refusal, until the window is whole again.
func TestDailyFromHeaders(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := &headerProvider{slowProvider{latency: 10 * time.Millisecond}}
		cfg, store := testRun(t, t.TempDir(), 5, p, func(c *Config) { c.Days, c.Concurrency = limiter.NewDays(limiter.DaysOptions{}), 1 })
		defer store.Close()
		start := time.Now()
		sum, err := Run(context.Background(), cfg)
		// The window read from the first or the second answer's headers.
		dailyAbort(t, err, start.Add(3*time.Hour+10*time.Millisecond), 10*time.Millisecond)
		if p.sent.Load() != 2 || sum.Succeeded != 2 || sum.Pending != 3 {
			t.Fatalf("sent %d, summary %+v", p.sent.Load(), sum)
		}
	})
}
