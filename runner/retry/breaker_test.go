package retry

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/llmrun/llmrun/providers"
)

func newTestBreaker() *Breaker {
	return NewBreaker(BreakerConfig{Threshold: 3, Cooldown: 10 * time.Second, MaxOutage: time.Minute})
}

// fail lets one attempt through at now and reports it failed.
func fail(t *testing.T, b *Breaker, now time.Time) {
	t.Helper()
	tk, ok := b.Allow(now)
	if !ok {
		t.Fatalf("at %v: Allow refused", now.Sub(t0))
	}
	b.Failure(now, tk)
}

// openAt opens a closed breaker at now with Threshold failures.
func openAt(t *testing.T, b *Breaker, now time.Time) {
	t.Helper()
	for range b.cfg.Threshold {
		fail(t, b, now)
	}
	if s := b.State(now); s != Open {
		t.Fatalf("state %v after %d failures, want open", s, b.cfg.Threshold)
	}
}

func TestUnhealthyEveryClass(t *testing.T) {
	want := map[providers.Class]bool{
		providers.ClassUnknown:     false,
		providers.ClassRateLimited: false,
		providers.ClassOverloaded:  true,
		providers.ClassServer:      true,
		providers.ClassMidStream:   true,
		providers.ClassNetwork:     true,
		providers.ClassTimeout:     true,
		providers.ClassInvalid:     false,
		providers.ClassAuth:        false,
		providers.ClassQuota:       false,
		providers.ClassRedirect:    false,
	}
	for _, c := range allClasses(t) {
		w, ok := want[c]
		if !ok {
			t.Fatalf("class %v missing from this table", c)
		}
		if got := Unhealthy(c); got != w {
			t.Errorf("Unhealthy(%v) = %v, want %v", c, got, w)
		}
	}
}

func TestBreakerThreshold(t *testing.T) {
	b := newTestBreaker()
	fail(t, b, t0)
	fail(t, b, t0)
	// A success resets the count.
	tk, _ := b.Allow(t0)
	b.Success(t0, tk)
	fail(t, b, t0)
	fail(t, b, t0)
	// Neutral outcomes neither count nor reset.
	for _, c := range []providers.Class{providers.ClassRateLimited, providers.ClassInvalid, providers.ClassUnknown, providers.ClassAuth, providers.ClassQuota} {
		tk, _ := b.Allow(t0)
		b.Observe(t0, tk, &providers.Error{Class: c})
	}
	tk, _ = b.Allow(t0)
	b.Observe(t0, tk, context.Canceled)
	if s := b.State(t0); s != Closed {
		t.Fatalf("state %v after 2 failures and neutral outcomes, want closed", s)
	}
	tk, _ = b.Allow(t0)
	b.Observe(t0, tk, fmt.Errorf("wrapped: %w", &providers.Error{Class: providers.ClassOverloaded}))
	if s := b.State(t0); s != Open {
		t.Fatalf("state %v after 3 consecutive failures, want open", s)
	}
	if st := b.Stats(t0); st.Openings != 1 || !st.OpenedAt.Equal(t0) {
		t.Errorf("Stats = %+v", st)
	}
}

func TestBreakerCooldownAndProbe(t *testing.T) {
	b := newTestBreaker()
	openAt(t, b, t0)
	if _, ok := b.Allow(at(10*time.Second - time.Nanosecond)); ok {
		t.Fatal("allowed during cooldown")
	}
	if got := b.WaitTime(at(4 * time.Second)); got != 6*time.Second {
		t.Errorf("WaitTime during cooldown = %v, want 6s", got)
	}
	if got := b.State(at(10 * time.Second)); got != HalfOpen {
		t.Errorf("state after cooldown = %v, want half-open", got)
	}
	if got := b.WaitTime(at(10 * time.Second)); got != 0 {
		t.Errorf("WaitTime with a probe available = %v, want 0", got)
	}
	probe, ok := b.Allow(at(10 * time.Second))
	if !ok || !probe.Probe() {
		t.Fatalf("no probe after cooldown: %v %v", probe, ok)
	}
	for i := range 5 {
		if _, ok := b.Allow(at(11*time.Second + time.Duration(i)*time.Hour)); ok {
			t.Fatal("second caller allowed while the probe is out")
		}
	}
	if got := b.WaitTime(at(11 * time.Second)); got != 10*time.Second {
		t.Errorf("WaitTime with the probe out = %v, want the cooldown", got)
	}
	b.Success(at(12*time.Second), probe)
	if s := b.State(at(12 * time.Second)); s != Closed {
		t.Fatalf("state after probe success = %v, want closed", s)
	}
	if tk, ok := b.Allow(at(12 * time.Second)); !ok || tk.Probe() {
		t.Error("closed breaker refused or handed out a probe")
	}
	st := b.Stats(at(time.Hour))
	want := BreakerStats{State: Closed, Openings: 1, Probes: 1, TimeHeld: 12 * time.Second}
	if st != want {
		t.Errorf("Stats = %+v, want %+v", st, want)
	}
	if b.OutageExceeded(at(time.Hour)) {
		t.Error("closed breaker reports an outage")
	}
}

func TestBreakerProbeFailureReopens(t *testing.T) {
	b := newTestBreaker()
	openAt(t, b, t0)
	probe, _ := b.Allow(at(10 * time.Second))
	b.Failure(at(11*time.Second), probe)
	if s := b.State(at(11 * time.Second)); s != Open {
		t.Fatalf("state after probe failure = %v, want open", s)
	}
	// Another full cooldown from the failure.
	if _, ok := b.Allow(at(21*time.Second - time.Nanosecond)); ok {
		t.Error("allowed before the new cooldown ended")
	}
	if got := b.WaitTime(at(15 * time.Second)); got != 6*time.Second {
		t.Errorf("WaitTime = %v, want 6s", got)
	}
	probe, ok := b.Allow(at(21 * time.Second))
	if !ok || !probe.Probe() {
		t.Fatal("no second probe")
	}
	b.Observe(at(22*time.Second), probe, &providers.Error{Class: providers.ClassNetwork})
	st := b.Stats(at(25 * time.Second))
	want := BreakerStats{State: Open, Openings: 1, Probes: 2, TimeHeld: 25 * time.Second, OpenedAt: t0}
	if st != want {
		t.Errorf("Stats = %+v, want %+v (reopenings are not new outages)", st, want)
	}
}

// TestBreakerProbeRelease: a probe that ends saying nothing about health
// (a 429, a 400, a cancellation) frees the probe slot at once.
func TestBreakerProbeRelease(t *testing.T) {
	b := newTestBreaker()
	openAt(t, b, t0)
	probe, _ := b.Allow(at(10 * time.Second))
	ch := b.Changed()
	b.Observe(at(11*time.Second), probe, &providers.Error{Class: providers.ClassRateLimited})
	select {
	case <-ch:
	default:
		t.Error("Changed not closed by a probe release")
	}
	if s := b.State(at(11 * time.Second)); s != HalfOpen {
		t.Errorf("state after release = %v, want half-open", s)
	}
	next, ok := b.Allow(at(11 * time.Second))
	if !ok || !next.Probe() {
		t.Fatal("no new probe after release")
	}
	// The released ticket is dead: reporting it again changes nothing.
	b.Success(at(11*time.Second), probe)
	b.Release(at(11*time.Second), probe)
	if _, ok := b.Allow(at(11 * time.Second)); ok {
		t.Error("a stale ticket freed the probe slot")
	}
	b.Success(at(12*time.Second), next)
	if s := b.State(at(12 * time.Second)); s != Closed {
		t.Errorf("state = %v, want closed", s)
	}
}

// TestBreakerHoldNotFail: while open, requests are held, not failed: Allow
// refuses without counting anything, and outcomes of attempts let through
// before the opening (slow in-flight requests) neither close nor extend it.
func TestBreakerHoldNotFail(t *testing.T) {
	b := newTestBreaker()
	var inflight []Ticket
	for range 4 {
		tk, _ := b.Allow(t0)
		inflight = append(inflight, tk)
	}
	openAt(t, b, t0)
	before := b.Stats(at(time.Second))
	for i := range 100 {
		if _, ok := b.Allow(at(time.Duration(i) * 10 * time.Millisecond)); ok {
			t.Fatal("allowed while open")
		}
	}
	b.Success(at(2*time.Second), inflight[0])
	b.Failure(at(3*time.Second), inflight[1])
	b.Observe(at(3*time.Second), inflight[2], &providers.Error{Class: providers.ClassServer})
	if s := b.State(at(3 * time.Second)); s != Open {
		t.Errorf("stale outcome changed the state to %v", s)
	}
	if after := b.Stats(at(time.Second)); after != before {
		t.Errorf("holding changed the counters: %+v → %+v", before, after)
	}
	// The cooldown was not extended by the stale failure.
	probe, ok := b.Allow(at(10 * time.Second))
	if !ok || !probe.Probe() {
		t.Fatal("no probe at the original cooldown end")
	}
	// A stale success while the probe is out does not close it either.
	b.Success(at(10*time.Second), inflight[3])
	if s := b.State(at(10 * time.Second)); s != HalfOpen {
		t.Errorf("state = %v, want half-open", s)
	}
}

func TestBreakerOutageExceeded(t *testing.T) {
	b := newTestBreaker() // MaxOutage 1m, cooldown 10s
	openAt(t, b, t0)
	for i := 1; i <= 5; i++ { // probes at 10s … 50s all fail
		now := at(time.Duration(i) * 10 * time.Second)
		probe, ok := b.Allow(now)
		if !ok {
			t.Fatalf("no probe at %v", now.Sub(t0))
		}
		b.Failure(now, probe)
	}
	if b.OutageExceeded(at(time.Minute - time.Nanosecond)) {
		t.Error("exceeded before MaxOutage, though reopened many times")
	}
	if !b.OutageExceeded(at(time.Minute)) {
		t.Error("not exceeded at MaxOutage")
	}
	probe, _ := b.Allow(at(time.Minute))
	if !b.OutageExceeded(at(time.Minute)) {
		t.Error("not exceeded while half-open")
	}
	b.Success(at(61*time.Second), probe)
	if b.OutageExceeded(at(time.Hour)) {
		t.Error("exceeded after closing")
	}
	// A new outage starts its own clock.
	openAt(t, b, at(2*time.Minute))
	if b.OutageExceeded(at(2*time.Minute + 59*time.Second)) {
		t.Error("second outage measured from the first")
	}
	st := b.Stats(at(2*time.Minute + 30*time.Second))
	if st.Openings != 2 || st.TimeHeld != 61*time.Second+30*time.Second || !st.OpenedAt.Equal(at(2*time.Minute)) {
		t.Errorf("Stats = %+v", st)
	}
}

func TestBreakerChanged(t *testing.T) {
	b := newTestBreaker()
	ch := b.Changed()
	fail(t, b, t0)
	fail(t, b, t0)
	select {
	case <-ch:
		t.Fatal("Changed closed without a state change")
	default:
	}
	fail(t, b, t0)
	select {
	case <-ch:
	default:
		t.Fatal("Changed not closed on opening")
	}
	ch = b.Changed()
	probe, _ := b.Allow(at(10 * time.Second))
	<-ch // half-open
	ch = b.Changed()
	b.Success(at(10*time.Second), probe)
	<-ch // closed
}

// TestBreakerSingleProbeConcurrent: many workers racing for the probe get
// exactly one; the rest are held until its outcome is in.
func TestBreakerSingleProbeConcurrent(t *testing.T) {
	for round := range 50 {
		b := newTestBreaker()
		openAt(t, b, t0)
		now := at(10 * time.Second)
		var probes, allowed atomic.Int64
		var wg sync.WaitGroup
		start := make(chan struct{})
		var probe atomic.Pointer[Ticket]
		for range 32 {
			wg.Go(func() {
				<-start
				for range 20 {
					tk, ok := b.Allow(now)
					if ok {
						allowed.Add(1)
						if tk.Probe() {
							probes.Add(1)
							probe.Store(&tk)
						}
					}
					_ = b.WaitTime(now)
					_ = b.OutageExceeded(now)
					_ = b.Stats(now)
				}
			})
		}
		close(start)
		wg.Wait()
		if probes.Load() != 1 || allowed.Load() != 1 {
			t.Fatalf("round %d: %d probes, %d allowed; want exactly 1", round, probes.Load(), allowed.Load())
		}
		// Concurrent outcome reports for the same probe: one takes effect.
		var wg2 sync.WaitGroup
		for i := range 8 {
			wg2.Go(func() {
				if i%2 == 0 {
					b.Success(now, *probe.Load())
				} else {
					b.Failure(now, *probe.Load())
				}
			})
		}
		wg2.Wait()
		if st := b.Stats(now); st.Probes != 1 || st.Openings != 1 || st.State == HalfOpen {
			t.Fatalf("round %d: Stats %+v", round, st)
		}
	}
}

// TestBreakerClosedConcurrent: concurrent failures open it exactly once.
func TestBreakerClosedConcurrent(t *testing.T) {
	b := NewBreaker(BreakerConfig{Threshold: 10, Cooldown: time.Minute})
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for range 50 {
				if tk, ok := b.Allow(t0); ok {
					b.Failure(t0, tk)
				}
			}
		})
	}
	wg.Wait()
	if st := b.Stats(t0); st.Openings != 1 || st.State != Open {
		t.Errorf("Stats = %+v, want one opening", st)
	}
}

func TestBreakerDefaultsAndNil(t *testing.T) {
	b := NewBreaker(BreakerConfig{})
	if got := b.Config(); got != (BreakerConfig{Threshold: DefaultThreshold, Cooldown: DefaultCooldown, MaxOutage: DefaultMaxOutage}) {
		t.Errorf("defaults = %+v", got)
	}
	var nb *Breaker
	tk, ok := nb.Allow(t0)
	if !ok {
		t.Error("nil breaker refused")
	}
	nb.Failure(t0, tk)
	nb.Success(t0, tk)
	nb.Release(t0, tk)
	nb.Observe(t0, tk, errors.New("x"))
	if nb.State(t0) != Closed || nb.WaitTime(t0) != 0 || nb.OutageExceeded(t0) || nb.Changed() != nil || nb.Stats(t0) != (BreakerStats{}) || nb.Config() != (BreakerConfig{}) {
		t.Error("nil breaker is not always closed")
	}
	for s, want := range map[State]string{Closed: "closed", Open: "open", HalfOpen: "half-open", 9: "state(?)"} {
		if s.String() != want {
			t.Errorf("%d.String() = %q", s, s.String())
		}
	}
}
