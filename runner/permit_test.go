package runner

import (
	"context"
	"errors"
	"os"
	"slices"
	"sync"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/llmrun/llmrun/ending"
	"github.com/llmrun/llmrun/limiter"
	"github.com/llmrun/llmrun/providers"
	"github.com/llmrun/llmrun/report"
	"github.com/llmrun/llmrun/runner/retry"
)

// countingBudget wraps the in-process budget and records how each of its
// tickets ended; reserveErr, if set, refuses the n-th Reserve (1-based).
type countingBudget struct {
	limiter.Budget
	reserveErr func(n int) error

	mu       sync.Mutex
	tickets  []*countingTicket
	reserves int
	paused   int
}

func (b *countingBudget) ReservePriority(ctx context.Context, key string, c limiter.Cost, p int) (limiter.Ticket, error) {
	b.mu.Lock()
	b.reserves++
	n := b.reserves
	b.mu.Unlock()
	if b.reserveErr != nil {
		if err := b.reserveErr(n); err != nil {
			return nil, err
		}
	}
	t, err := b.Budget.ReservePriority(ctx, key, c, p)
	if err != nil {
		return nil, err
	}
	ct := &countingTicket{Ticket: t, b: b}
	b.mu.Lock()
	b.tickets = append(b.tickets, ct)
	b.mu.Unlock()
	return ct, nil
}

// ends lists each ticket's endings, in reservation order ("settle",
// "fail", "refused", "cancel"; several joined by "+" if a ticket was ended
// twice).
func (b *countingBudget) ends() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []string
	for _, t := range b.tickets {
		t.mu.Lock()
		e := ""
		for i, k := range t.ends {
			if i > 0 {
				e += "+"
			}
			e += k
		}
		t.mu.Unlock()
		out = append(out, e)
	}
	return out
}

type countingTicket struct {
	limiter.Ticket
	b    *countingBudget
	mu   sync.Mutex
	ends []string
}

func (t *countingTicket) end(kind string) {
	t.mu.Lock()
	t.ends = append(t.ends, kind)
	t.mu.Unlock()
}
func (t *countingTicket) Settle(c limiter.Cost) { t.end("settle"); t.Ticket.Settle(c) }
func (t *countingTicket) Fail()                 { t.end("fail"); t.Ticket.Fail() }
func (t *countingTicket) Cancel()               { t.end("cancel"); t.Ticket.Cancel() }

// Refused counts a refusal with a retry-after as a pause of the key.
func (t *countingTicket) Refused(r limiter.Refusal) {
	t.end("refused")
	if r.HasRetryAfter {
		t.b.mu.Lock()
		t.b.paused++
		t.b.mu.Unlock()
	}
	t.Ticket.Refused(r)
}

// countingBreaker wraps a retry.Breaker and counts the tickets it granted
// and those ended (Observe or Release); invalid makes that many Valid
// calls report the breaker opened meanwhile.
type countingBreaker struct {
	*retry.Breaker
	mu              sync.Mutex
	granted, ended  int
	invalid         int
	observedSuccess int
}

func (b *countingBreaker) Allow(now time.Time) (retry.Ticket, bool) {
	t, ok := b.Breaker.Allow(now)
	if ok {
		b.mu.Lock()
		b.granted++
		b.mu.Unlock()
	}
	return t, ok
}

func (b *countingBreaker) Valid(t retry.Ticket) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.invalid > 0 {
		b.invalid--
		return false
	}
	return b.Breaker.Valid(t)
}

func (b *countingBreaker) Observe(now time.Time, t retry.Ticket, err error) {
	b.mu.Lock()
	b.ended++
	if err == nil {
		b.observedSuccess++
	}
	b.mu.Unlock()
	b.Breaker.Observe(now, t, err)
}

func (b *countingBreaker) Release(now time.Time, t retry.Ticket) {
	b.mu.Lock()
	b.ended++
	b.mu.Unlock()
	b.Breaker.Release(now, t)
}

// TestPermitReleasesEverythingOnce drives one request through each way an
// attempt can end and checks that every resource an attempt holds was
// released exactly once: each budget ticket ended once, the expected way;
// every breaker ticket granted was ended; no run slot is left taken; the
// key's first-on-key gate is open; nothing is in flight.
func TestPermitReleasesEverythingOnce(t *testing.T) {
	invalid := &providers.Error{Class: providers.ClassInvalid, Status: 400, Message: "bad"}
	server := &providers.Error{Class: providers.ClassServer, Status: 500, Message: "oops"}
	limited := &providers.Error{Class: providers.ClassRateLimited, Status: 429, HasRetryAfter: true, RetryAfter: time.Second}
	auth := &providers.Error{Class: providers.ClassAuth, Status: 401, Message: "bad key"}
	failAt := func(errs ...error) func(n int64) error {
		return func(n int64) error {
			if int(n) <= len(errs) {
				return errs[n-1]
			}
			return nil
		}
	}
	tests := map[string]struct {
		fail       func(n int64) error
		latency    time.Duration
		reserveErr func(n int) error
		mutate     func(*Config)
		// setup runs before the run starts (with the run, to reach its
		// slots); interrupt sends SIGINT after that long (0: never).
		invalid     int
		fillSlots   bool
		interrupt   time.Duration
		wantEnds    []string
		wantSummary func(*report.Summary) bool
		wantErr     func(error) bool
		wantPaused  int
	}{
		"success": {
			wantEnds: []string{"settle"}, wantSummary: func(s *report.Summary) bool { return s.Succeeded == 1 },
		},
		"failure, not retried": {
			fail: failAt(invalid), wantEnds: []string{"fail"},
			wantSummary: func(s *report.Summary) bool { return s.Failed == 1 }, wantErr: func(err error) bool { return errors.Is(err, ending.ErrFailures) },
		},
		"retried, then success": {
			fail: failAt(server, server), wantEnds: []string{"fail", "fail", "settle"},
			wantSummary: func(s *report.Summary) bool { return s.Succeeded == 1 && s.Retries == 2 },
		},
		"rate limited with retry-after": {
			fail: failAt(limited), wantEnds: []string{"refused", "settle"}, wantPaused: 1,
			wantSummary: func(s *report.Summary) bool { return s.Succeeded == 1 && s.RateLimited == 1 },
		},
		"guard rejection": {
			mutate:   func(c *Config) { c.Guard = retry.Guard{MinChars: 1000}; c.Policy.MaxAttempts = 2 },
			wantEnds: []string{"settle", "settle"}, wantSummary: func(s *report.Summary) bool { return s.Failed == 1 && s.Attempts == 2 },
			wantErr: func(err error) bool { return errors.Is(err, ending.ErrFailures) },
		},
		"breaker opened while waiting for the budget": {
			invalid: 1, wantEnds: []string{"cancel", "settle"}, wantSummary: func(s *report.Summary) bool { return s.Succeeded == 1 && s.Attempts == 1 },
		},
		"interrupted while waiting for a run slot": {
			fillSlots: true, interrupt: time.Second, wantEnds: []string{"cancel"},
			wantSummary: func(s *report.Summary) bool { return s.Pending == 1 && s.Attempts == 0 },
			wantErr:     func(err error) bool { var ie *ending.InterruptedError; return errors.As(err, &ie) },
		},
		"shutdown cuts the attempt": {
			latency: time.Minute, interrupt: time.Second, mutate: func(c *Config) { c.Grace = time.Second }, wantEnds: []string{"fail"},
			wantSummary: func(s *report.Summary) bool { return s.Pending == 1 && s.Attempts == 1 },
			wantErr:     func(err error) bool { var ie *ending.InterruptedError; return errors.As(err, &ie) },
		},
		"fatal error aborts": {
			fail: failAt(auth), wantEnds: []string{"fail"}, wantSummary: func(s *report.Summary) bool { return s.Pending == 1 },
			wantErr: func(err error) bool { var ae *ending.AbortError; return errors.As(err, &ae) },
		},
		"budget fails": {
			reserveErr: func(int) error { return errors.New("redis: connection refused") }, wantEnds: nil,
			wantSummary: func(s *report.Summary) bool { return s.Pending == 1 && s.Attempts == 0 },
			wantErr:     func(err error) bool { var ae *ending.AbortError; return errors.As(err, &ae) },
		},
		"too large for the budget": {
			reserveErr: func(int) error {
				return &limiter.TooLargeError{Key: "k", Dimension: limiter.DimInput, Cost: 10, Limit: 5}
			}, wantEnds: nil,
			wantSummary: func(s *report.Summary) bool { return s.Failed == 1 && s.Attempts == 0 },
			wantErr:     func(err error) bool { return errors.Is(err, ending.ErrFailures) },
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p := &slowProvider{latency: 100 * time.Millisecond, fail: tt.fail}
				if tt.latency > 0 {
					p.latency = tt.latency
				}
				budget := &countingBudget{Budget: limiter.AsBudget(limiter.New(limiter.Options{})), reserveErr: tt.reserveErr}
				var br *countingBreaker
				sigs := make(chan os.Signal, 2)
				cfg, store := testRun(t, t.TempDir(), 1, p, func(c *Config) {
					c.Limiter = budget
					c.Interrupts = sigs
					c.Policy = retry.Policy{Base: time.Millisecond, Max: 10 * time.Millisecond}
					c.NewBreaker = func() Breaker {
						br = &countingBreaker{Breaker: retry.NewBreaker(retry.BreakerConfig{}), invalid: tt.invalid}
						return br
					}
					if tt.mutate != nil {
						tt.mutate(c)
					}
				})
				defer store.Close()
				r := newRun(context.Background(), cfg)
				defer r.stopWork(nil)
				if tt.fillSlots {
					for range cap(r.slots) {
						r.slots <- struct{}{}
					}
				}
				if tt.interrupt > 0 {
					go func() {
						time.Sleep(tt.interrupt)
						sigs <- syscall.SIGINT
					}()
				}
				sum, err := r.execute(context.Background())
				if tt.fillSlots {
					for range cap(r.slots) {
						<-r.slots
					}
				}

				if got := budget.ends(); !slices.Equal(got, tt.wantEnds) {
					t.Errorf("budget tickets ended %q, want %q (each exactly once)", got, tt.wantEnds)
				}
				if budget.paused != tt.wantPaused {
					t.Errorf("key paused %d times, want %d", budget.paused, tt.wantPaused)
				}
				if br == nil || br.granted == 0 || br.granted != br.ended {
					t.Errorf("breaker: %+v; every ticket granted must be ended once", br)
				}
				if n := len(r.slots); n != 0 {
					t.Errorf("%d run slots still taken", n)
				}
				for key, g := range r.gates {
					select {
					case <-g.done:
					default:
						t.Errorf("gate of %s still closed", key)
					}
				}
				if n := r.c.InFlight.Load(); n != 0 {
					t.Errorf("%d attempts in flight after the run", n)
				}
				if !tt.wantSummary(sum) {
					t.Errorf("summary %+v", sum)
				}
				if want := tt.wantErr; (want == nil && err != nil) || (want != nil && !want(err)) {
					t.Errorf("err = %v", err)
				}
			})
		})
	}
}
