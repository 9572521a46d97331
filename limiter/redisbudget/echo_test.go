package redisbudget

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/llmrun/llmrun/limiter"
	"github.com/llmrun/llmrun/limiter/budgettest"
)

// TestEchoesAcrossProcessesMatchLimiter plays budgettest's "429 echoes"
// (a 429 with a hint, then 429s of attempts admitted before it, a second
// cut and its echoes) and "429 echoes, limits given" (the backoff of a
// described key and its echoes) against the in-process limiter and
// against three Redis budgets that take the Reserves in turn, so that
// every echo comes from another process than the cut or backoff it echoes:
// the pause and the rates learned from 429s must be the one process's.
// Each ticket carries the shared AIMD's epoch it was admitted in to
// refusedSrc, which answers a 429 of an older epoch as an echo (no cut, no
// backoff), whichever process admitted it.
func TestEchoesAcrossProcessesMatchLimiter(t *testing.T) {
	played := 0
	for _, sc := range budgettest.Scenarios() {
		if sc.Name == "429 echoes" || sc.Name == "429 echoes, limits given" {
			t.Run(sc.Name, func(t *testing.T) {
				budgettest.CompareScenario(t, budgettest.Limiter, processes(3), sc)
			})
			played++
		}
	}
	if played != 2 {
		t.Fatalf("played %d scenarios, want the 2 of echoes", played)
	}
}

// processes is the budgettest.Factory of n Redis budgets on one key and
// clock, as n processes sharing it: Reserves go to each in turn; Stats
// adds up the processes' counts and takes the latest pause any of them
// set, and the rates of the one that last spoke to Redis for a ticket
// (the others' lag until their next call, see budgettest's "auto ramp").
func processes(n int) budgettest.Factory {
	return func(t *testing.T, clk *budgettest.Clock, c budgettest.Config) limiter.Budget {
		ns, lua := suiteClock(t, clk)
		p := &procs{}
		for range n {
			p.bs = append(p.bs, suiteProcess(t, clk, c, ns, lua))
		}
		p.last = p.bs[0]
		return p
	}
}

type procs struct {
	bs []*Budget

	mu   sync.Mutex
	next int
	last *Budget // the process that last called Redis for a ticket
}

func (p *procs) spoke(b *Budget) {
	p.mu.Lock()
	p.last = b
	p.mu.Unlock()
}

func (p *procs) ReservePriority(ctx context.Context, key string, c limiter.Cost, prio int) (limiter.Ticket, error) {
	p.mu.Lock()
	b := p.bs[p.next%len(p.bs)]
	p.next++
	p.mu.Unlock()
	tk, err := b.ReservePriority(ctx, key, c, prio)
	p.spoke(b)
	if err != nil {
		return nil, err
	}
	return procTicket{tk, b, p}, nil
}

func (p *procs) Observe(key string, o limiter.Observation) {
	p.bs[0].Observe(key, o)
	p.spoke(p.bs[0])
}

func (p *procs) Stats() []limiter.KeyStats {
	p.mu.Lock()
	last := p.last
	p.mu.Unlock()
	var sum *limiter.KeyStats
	for _, s := range last.Stats() {
		if s.Key == budgettest.Key {
			sum = &s
		}
	}
	if sum == nil {
		return nil
	}
	*sum = limiter.KeyStats{Key: sum.Key, Effective: sum.Effective, Learned: sum.Learned}
	for _, b := range p.bs {
		for _, s := range b.Stats() {
			if s.Key != budgettest.Key {
				continue
			}
			sum.InFlight += s.InFlight
			sum.Waiting += s.Waiting
			sum.Reservations += s.Reservations
			sum.RateLimited += s.RateLimited
			sum.Overloaded += s.Overloaded
			sum.PauseClamped += s.PauseClamped
			if s.PausedUntil.After(sum.PausedUntil) {
				sum.PausedUntil = s.PausedUntil
			}
		}
	}
	return []limiter.KeyStats{*sum}
}

// procTicket is a ticket of the process b of p.
type procTicket struct {
	limiter.Ticket
	b *Budget
	p *procs
}

func (t procTicket) Settle(actual limiter.Cost) { t.Ticket.Settle(actual); t.p.spoke(t.b) }
func (t procTicket) Fail()                      { t.Ticket.Fail(); t.p.spoke(t.b) }
func (t procTicket) Refused(r limiter.Refusal)  { t.Ticket.Refused(r); t.p.spoke(t.b) }
func (t procTicket) Cancel()                    { t.Ticket.Cancel(); t.p.spoke(t.b) }
func (t procTicket) Observe(o limiter.Observation, at time.Time) {
	t.Ticket.Observe(o, at)
	t.p.spoke(t.b)
}
