package limiter

import (
	"context"
	"time"
)

// Budget is what the runner schedules against: the in-process *Limiter, or
// a budget shared by several processes (a Redis-backed one, say). The
// methods mean what they mean on *Limiter.
type Budget interface {
	ReservePriority(ctx context.Context, key string, c Cost, priority int) (Ticket, error)
	Observe(key string, o Observation)
	Stats() []KeyStats
}

// Ticket is one admitted attempt: end it with exactly one of Settle, Fail,
// Refused or Cancel; Observe may come before or after. *Reservation
// implements it.
type Ticket interface {
	Cost() Cost
	Settle(actual Cost)
	Fail()
	Refused(r Refusal)
	Cancel()
	Observe(o Observation, headersAt time.Time)
}

var (
	_ Ticket = (*Reservation)(nil)
	_ Budget = budgetOf{}
)

// budgetOf adapts *Limiter to Budget: Reserve returns a Ticket.
type budgetOf struct{ l *Limiter }

// AsBudget returns l as a Budget.
func AsBudget(l *Limiter) Budget { return budgetOf{l} }

func (b budgetOf) ReservePriority(ctx context.Context, key string, c Cost, p int) (Ticket, error) {
	r, err := b.l.ReservePriority(ctx, key, c, p)
	if err != nil {
		return nil, err
	}
	return r, nil
}
func (b budgetOf) Observe(key string, o Observation) { b.l.Observe(key, o) }
func (b budgetOf) Stats() []KeyStats                 { return b.l.Stats() }
