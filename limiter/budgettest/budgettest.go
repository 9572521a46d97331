// Package budgettest is a conformance suite for limiter.Budget: scripted
// scenarios at explicit instants (reservations, settlements, failures,
// refusals, rate-limit headers, waiting rooms) that every implementation
// must decide alike. Run checks one implementation against the
// scenarios' hand-written expectations; Compare runs the same scenarios
// against two implementations (the in-process limiter and the Redis
// budget, whose Lua re-implements it) and fails on the first decision
// that differs, so neither can drift from the other.
//
// A decision is what a Reserve did at an instant: admitted, refused as too
// large, or waiting (for how long, or for a slot). A Reserve that would
// wait is given up at once (its context cancelled) unless the scenario
// queues it; the suite tells that a Reserve waits from the timer it starts
// on the Clock or, for a wait without a timer (a free slot, a place in a
// queue), from the context it waits on (see Factory).
package budgettest

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/llmrun/llmrun/limiter"
)

// Key is the one budget key every scenario uses.
const Key = "k"

// Config is what a scenario configures a budget with.
type Config struct {
	Limits limiter.Limits
	// Aging and MaxPause as in limiter.Options.
	Aging, MaxPause time.Duration
}

// Factory makes a fresh budget configured by c, reading time (and starting
// timers) only from clk. The suite tells that a Reserve waits from its
// context: the budget must call ctx.Done() only when it is about to wait
// (as both implementations do; a Redis budget's key must be set up
// beforehand, since its setup passes the context to Redis calls).
type Factory func(t *testing.T, clk *Clock, c Config) limiter.Budget

// Limiter is the Factory of the in-process *limiter.Limiter.
func Limiter(t *testing.T, clk *Clock, c Config) limiter.Budget {
	return limiter.AsBudget(limiter.New(limiter.Options{
		Defaults: c.Limits, Now: clk.Now, NewTimer: clk.NewTimer, MaxPause: c.MaxPause, Aging: c.Aging,
	}))
}

// Scenario is a script of steps against one fresh budget.
type Scenario struct {
	Name   string
	Config Config
	// AIMD marks a scenario whose decisions depend on the rates learned
	// from 429s (limiter.AIMD and its Lua twin).
	AIMD  bool
	Steps []Step
}

// Step is one operation at an instant.
type Step struct {
	// At is the instant, since Start; the clock never goes back.
	At time.Duration
	Op Op
	// Want is the expected outcome ("" = compared between
	// implementations only).
	Want string
}

// Run plays every scenario against f and checks each step's Want.
func Run(t *testing.T, f Factory) {
	for _, sc := range Scenarios() {
		t.Run(sc.Name, func(t *testing.T) {
			got := Play(t, f, sc)
			for i, st := range sc.Steps {
				if st.Want != "" && got[i] != st.Want {
					t.Errorf("step %d (%v at %v): got %q, want %q", i, st.Op, st.At, got[i], st.Want)
				}
			}
		})
	}
}

// Compare plays every scenario against a and b and fails on the first
// step where their outcomes differ; it also checks each step's Want
// against a.
func Compare(t *testing.T, a, b Factory) {
	for _, sc := range Scenarios() {
		t.Run(sc.Name, func(t *testing.T) { CompareScenario(t, a, b, sc) })
	}
}

// CompareScenario is Compare for the one scenario sc.
func CompareScenario(t *testing.T, a, b Factory, sc Scenario) {
	ga := Play(t, a, sc)
	gb := Play(t, b, sc)
	for i, st := range sc.Steps {
		if ga[i] != gb[i] {
			t.Errorf("step %d (%v at %v): first %q, second %q\n%s", i, st.Op, st.At, ga[i], gb[i], transcript(sc, ga, gb))
			return
		}
		if st.Want != "" && ga[i] != st.Want {
			t.Errorf("step %d (%v at %v): got %q, want %q", i, st.Op, st.At, ga[i], st.Want)
		}
	}
}

// transcript lays two runs of sc side by side.
func transcript(sc Scenario, a, b []string) string {
	var s strings.Builder
	for i, st := range sc.Steps {
		mark := " "
		if a[i] != b[i] {
			mark = "≠"
		}
		fmt.Fprintf(&s, "%s %3d %8v %-40v %-32q %q\n", mark, i, st.At, st.Op, a[i], b[i])
	}
	return s.String()
}

// Play runs sc against a fresh budget from f and returns each step's
// outcome.
func Play(t *testing.T, f Factory, sc Scenario) []string {
	t.Helper()
	clk := NewClock()
	p := &player{t: t, clk: clk, b: f(t, clk, sc.Config), tickets: map[string]limiter.Ticket{}, queued: map[string]context.CancelFunc{}, done: make(chan admission, 64)}
	defer p.stop()
	out := make([]string, len(sc.Steps))
	for i, st := range sc.Steps {
		clk.Set(Start().Add(st.At))
		out[i] = st.Op.do(p)
	}
	return out
}

// player is one scenario's run.
type player struct {
	t       *testing.T
	clk     *Clock
	b       limiter.Budget
	tickets map[string]limiter.Ticket
	// queued are the queued Reserves not yet admitted, by name; done
	// receives them as they return, early those received before a
	// step asked for them.
	queued map[string]context.CancelFunc
	done   chan admission
	early  []admission
}

// stop gives up every queued Reserve still waiting.
func (p *player) stop() {
	for _, cancel := range p.queued {
		cancel()
	}
	n := len(p.queued)
	for _, a := range p.early {
		if _, ok := p.queued[a.name]; ok {
			n--
		}
	}
	for range n {
		<-p.done
	}
}

// since formats an instant as the time since Start.
func since(t time.Time) time.Duration { return t.Sub(Start()) }

// hang bounds, in real time, how long the suite waits for a budget to do
// what it must do at once: a guard against a hang, not a measurement.
const hang = 30 * time.Second

// slotWait is the shortest timer read as a wait for a free slot: a Redis
// budget waits for the first lease to expire (the tests' leases are
// longer), the in-process limiter starts no timer.
const slotWait = time.Hour

// watchCtx is a cancellable context that tells when Done is first called:
// the Reserve it was given is about to wait.
type watchCtx struct {
	context.Context
	once    sync.Once
	waiting chan struct{}
}

func newWatchCtx() (*watchCtx, context.CancelFunc) {
	ctx, cancel := context.WithCancel(context.Background())
	return &watchCtx{Context: ctx, waiting: make(chan struct{})}, cancel
}

func (c *watchCtx) Done() <-chan struct{} {
	c.once.Do(func() { close(c.waiting) })
	return c.Context.Done()
}
