package limiter

import (
	"context"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// TestRefusedWithoutHintPausesTheKey: a 429 without retry-after pauses the
// whole key for the backoff, doubling with each further one before a
// success; a 429 of an attempt admitted before the last one (an echo)
// adds nothing.
func TestRefusedWithoutHintPausesTheKey(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := New(Options{})
		a := mustReserve(t, l, "k", Cost{Requests: 1})
		echo := mustReserve(t, l, "k", Cost{Requests: 1})
		start := time.Now()
		a.Refused(Refusal{})
		echo.Refused(Refusal{})
		if s := l.Stats()[0]; s.PausedUntil.Sub(start) != DefaultAIMD.BackoffBase || s.RateLimited != 2 {
			t.Fatalf("paused %v, 429s %d; want %v and 2", s.PausedUntil.Sub(start), s.RateLimited, DefaultAIMD.BackoffBase)
		}
		b := mustReserve(t, l, "k", Cost{Requests: 1}) // waits out the pause
		if d := time.Since(start); d != DefaultAIMD.BackoffBase {
			t.Fatalf("admitted after %v, want %v", d, DefaultAIMD.BackoffBase)
		}
		start = time.Now()
		b.Refused(Refusal{})
		if s := l.Stats()[0]; s.PausedUntil.Sub(start) != 2*DefaultAIMD.BackoffBase {
			t.Fatalf("second 429 in a row: paused %v, want %v", s.PausedUntil.Sub(start), 2*DefaultAIMD.BackoffBase)
		}
	})
}

// TestRefusedHintIsClamped: a retry-after on Refused pauses the key as
// Pause does, cut to MaxPause and told once.
func TestRefusedHintIsClamped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var warns []string
		l := New(Options{MaxPause: time.Minute, Warn: func(m string) { warns = append(warns, m) }})
		start := time.Now()
		mustReserve(t, l, "k", Cost{Requests: 1}).Refused(Refusal{HasRetryAfter: true, RetryAfter: time.Hour})
		if s := l.Stats()[0]; s.PausedUntil.Sub(start) != time.Minute || s.PauseClamped != 1 || s.RateLimited != 1 {
			t.Fatalf("stats %+v: want paused 1m, 1 clamped, 1 429", s)
		}
		// An overload with a hint pauses the key too.
		mustReserve(t, l, "k", Cost{Requests: 1}).Refused(Refusal{Overloaded: true, HasRetryAfter: true, RetryAfter: 2 * time.Second})
		if s := l.Stats()[0]; s.PausedUntil.Sub(start) != time.Minute+2*time.Second || s.Overloaded != 1 {
			t.Fatalf("stats %+v: want paused 2s more, 1 overload", s)
		}
		if len(warns) != 1 || !strings.Contains(warns[0], "1h0m0s") {
			t.Fatalf("warnings %q", warns)
		}
	})
}

// strictServer is simServer behind a lock, with a latency, for workers
// running in a synctest bubble.
type strictServer struct {
	mu  sync.Mutex
	srv simServer
	ok  int
	n   int // 429s
}

func (s *strictServer) send(c Cost) (bool, Dimension) {
	time.Sleep(5 * time.Millisecond)
	s.mu.Lock()
	defer s.mu.Unlock()
	ok, named := s.srv.admit(time.Now(), c)
	if ok {
		s.ok++
		return true, DimNone
	}
	s.n++
	return false, named
}

// TestAutoLearnsRatesFrom429s: a key in Auto mode against a strict server
// that sends no rate-limit headers and no retry-after (10 requests/s in
// one-second windows) learns its rate: few 429s, most of the rate used,
// the learned rate shown in Stats. Until then the key is paced by a ramp.
func TestAutoLearnsRatesFrom429s(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := New(Options{Defaults: Limits{Auto: true, Concurrency: 64}})
		srv := &strictServer{srv: simServer{reqRate: 10, last: time.Now()}}
		srv.srv.req = 10
		c := Cost{Requests: 1, Input: 100, Output: 10}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		var wg sync.WaitGroup
		for range 32 {
			wg.Go(func() {
				for {
					r, err := l.Reserve(ctx, "k", c)
					if err != nil {
						return
					}
					if ok, named := srv.send(c); !ok {
						r.Refused(Refusal{Dimension: named})
						continue
					}
					r.Settle(c)
					r.Observe(Observation{Requests: Window{-1, -1, 0}, Tokens: Window{-1, -1, 0}}, time.Now())
				}
			})
		}
		wg.Wait()
		s := l.Stats()[0]
		t.Logf("accepted %d, 429s %d, learned %.0f rpm / %.0f tpm, window %d", srv.ok, srv.n, s.RefusalRPM, s.RefusalTPM, s.Effective.Concurrency)
		if srv.n > 12 {
			t.Errorf("%d 429s in 30s, want at most 12", srv.n)
		}
		if bound := 10 + 10*30; float64(srv.ok) < 0.88*float64(bound) {
			t.Errorf("%d accepted, want at least 88%% of %d", srv.ok, bound)
		}
		if s.RefusalRPM < 500 || s.RefusalRPM > 700 || s.Effective.RPM != s.RefusalRPM || s.Learned {
			t.Errorf("stats: learned %v rpm (effective %v, learned from headers %v), want about 600 from 429s", s.RefusalRPM, s.Effective.RPM, s.Learned)
		}
	})
}

// TestHeadersTakeOverFromLearnedRates: once headers describe the key, the
// rates learned from 429s are dropped.
func TestHeadersTakeOverFromLearnedRates(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := New(Options{Defaults: Limits{Auto: true}})
		c := Cost{Requests: 1}
		mustReserve(t, l, "k", c).Settle(c) // starts the ramp: no headers yet
		if s := l.Stats()[0]; s.Effective.RPM != DefaultAIMD.StartRate*60 || s.RefusalRPM != 0 {
			t.Fatalf("ramp: effective %v rpm (%v from 429s), want %v (0: a ramp is no 429)", s.Effective.RPM, s.RefusalRPM, DefaultAIMD.StartRate*60)
		}
		r := mustReserve(t, l, "k", c)
		r.Settle(c)
		r.Observe(Observation{Requests: Window{Limit: 6000, Remaining: 5000}}, time.Now())
		if s := l.Stats()[0]; s.RefusalRPM != 0 || s.Effective.RPM != 6000 {
			t.Fatalf("after headers: %v rpm from 429s, effective %v; want 0 and 6000", s.RefusalRPM, s.Effective.RPM)
		}
	})
}

// TestOverloadsAtRandomDoNotSlowTheKey: a provider that sheds 30% (or 42%)
// of calls at random is degraded, not congested: its overloads (503/529
// without a hint) neither pause the key nor shrink the window, even when,
// as in practice, the refusals come back at once and the answers of the
// same round seconds later; a provider that refuses nearly everything does
// shrink it.
func TestOverloadsAtRandomDoNotSlowTheKey(t *testing.T) {
	for _, tt := range []struct {
		name         string
		share        float64
		refusalsLead bool
		wantShrink   bool
	}{
		{"30% at random", 0.3, false, false},
		{"30% at random, refusals first", 0.3, true, false},
		{"42% at random, refusals first", 0.42, true, false},
		{"all", 1, false, true},
		{"80%, refusals first", 0.8, true, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				l := New(Options{Defaults: Limits{Auto: true, Concurrency: 32}})
				k := l.key("k")
				k.mu.Lock()
				k.cwnd, k.ssthresh = 16, 16
				k.mu.Unlock()
				rng := rand.New(rand.NewPCG(1, 2))
				c := Cost{Requests: 1}
				for range 20 { // rounds that fill the window
					var rs []*Reservation
					for range l.Stats()[0].Effective.Concurrency {
						rs = append(rs, mustReserve(t, l, "k", c))
					}
					var answered []*Reservation
					for _, r := range rs {
						switch {
						case rng.Float64() < tt.share:
							r.Refused(Refusal{Overloaded: true})
						case tt.refusalsLead:
							answered = append(answered, r)
						default:
							r.Settle(c)
						}
					}
					for _, r := range answered {
						r.Settle(c)
					}
				}
				s := l.Stats()[0]
				if !s.PausedUntil.IsZero() {
					t.Errorf("paused until %v: an overload without a hint pauses nothing", s.PausedUntil)
				}
				if shrunk := s.Effective.Concurrency < 16; shrunk != tt.wantShrink {
					t.Errorf("window %d after overloads (%d of them): shrunk %v, want %v", s.Effective.Concurrency, s.Overloaded, shrunk, tt.wantShrink)
				}
			})
		})
	}
}

// TestNoRatesFrom429sWithoutA429: a key with no rate-limit headers ramps
// its rate up from its first answer, but until a 429 cuts it nothing was
// learned from 429s, and Stats must not say so (the summary printed
// "learned from 429s" for an unlimited local server that sent none).
func TestNoRatesFrom429sWithoutA429(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := New(Options{Defaults: Limits{Auto: true, Concurrency: 8}})
		c := Cost{Requests: 1, Input: 100, Output: 10}
		for range 50 {
			r, err := l.Reserve(context.Background(), "k", c)
			if err != nil {
				t.Fatal(err)
			}
			time.Sleep(10 * time.Millisecond)
			r.Settle(c)
			r.Observe(Observation{Requests: Window{-1, -1, 0}, Tokens: Window{-1, -1, 0}}, time.Now())
		}
		if s := l.Stats()[0]; s.RefusalRPM != 0 || s.RefusalTPM != 0 {
			t.Errorf("no 429 yet, but Stats says %v rpm / %v tpm learned from 429s", s.RefusalRPM, s.RefusalTPM)
		}
	})
}

// TestRampAdmitsAGrainAtOnce: a ramp's guessed rate admits a timer
// grain's worth of requests at once, with no skew margin. Before, a ramp at
// 1,000/s held one request (the skew margin made every admission wait for
// a full bucket): one timer per request, which real timers cannot keep at
// 1 ms, so the ramp never used 75% of its rate and stopped doubling there;
// a fast local server with no headers got 650 requests/s instead of 7,000.
func TestRampAdmitsAGrainAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := New(Options{Defaults: Limits{Auto: true, Concurrency: 64, Skew: 100 * time.Millisecond}})
		c := Cost{Requests: 1, Input: 10, Output: 10}
		r := mustReserve(t, l, "k", c)
		time.Sleep(time.Millisecond) // the first answer took 1ms: the ramp starts at 1,000/s
		r.Settle(c)
		r.Observe(Observation{Requests: Window{-1, -1, 0}, Tokens: Window{-1, -1, 0}}, time.Now())
		time.Sleep(DefaultAIMD.Grain) // the bucket fills: a grain's worth
		// The concurrency window (slow start from the one answer) limits
		// too: take as many as it allows.
		want := min(int(1000*DefaultAIMD.Grain.Seconds()), l.Stats()[0].Effective.Concurrency)
		if want < 2 {
			t.Fatalf("window %d: the test needs room for 2", want)
		}
		start := time.Now()
		for i := range want {
			mustReserve(t, l, "k", c)
			if waited := time.Since(start); waited > 0 {
				t.Fatalf("request %d of %d waited %v for a paced bucket holding a grain's worth", i+1, want, waited)
			}
		}
	})
}
