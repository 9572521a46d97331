package budgettest

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/llmrun/llmrun/limiter"
)

// Op is one scripted operation; do returns its outcome.
type Op interface {
	do(p *player) string
	String() string
}

// Reserve asks for c at priority 0 and gives up at once if it would wait:
// "admitted" (the ticket is kept as name), "wait 1.5s", "wait slot" or
// "too large <dimension>".
func Reserve(name string, c limiter.Cost) Op { return reserveOp{name: name, cost: c} }

// ReserveWait asks for c, and while it would wait, asks again when the
// wait it was told is over: "admitted at 2s after 1 waits".
func ReserveWait(name string, c limiter.Cost) Op { return reserveOp{name: name, cost: c, retry: true} }

type reserveOp struct {
	name  string
	cost  limiter.Cost
	retry bool
}

func (o reserveOp) String() string {
	if o.retry {
		return fmt.Sprintf("reserve-wait %s %v", o.name, o.cost)
	}
	return fmt.Sprintf("reserve %s %v", o.name, o.cost)
}

func (o reserveOp) do(p *player) string {
	for waits := 0; ; waits++ {
		res, d := p.probe(o.name, o.cost)
		if !o.retry {
			return res
		}
		if d <= 0 || waits == 20 {
			return fmt.Sprintf("%s at %v after %d waits", res, since(p.clk.Now()), waits)
		}
		p.clk.Set(p.clk.Now().Add(d))
	}
}

// probe runs one Reserve that gives up as soon as it would wait. It
// returns the outcome and the wait (0 when it did not wait, -1 for a slot).
func (p *player) probe(name string, c limiter.Cost) (string, time.Duration) {
	if len(p.queued) > 0 {
		p.t.Fatalf("reserve %s: a probe while Reserves are queued would read their timers", name)
	}
	p.clk.drainStarted()
	ctx, cancel := newWatchCtx()
	defer cancel()
	res := make(chan admission, 1)
	go func() {
		tk, err := p.b.ReservePriority(ctx, Key, c, limiter.PriorityNormal)
		res <- admission{name: name, t: tk, err: err}
	}()
	guard := time.NewTimer(hang)
	defer guard.Stop()
	select {
	case a := <-res:
		return p.admitted(a), 0
	case <-ctx.waiting:
	case <-guard.C:
		p.t.Fatalf("reserve %s: neither admitted nor waiting after %v", name, hang)
	}
	var d time.Duration = -1
	select {
	case d = <-p.clk.started: // started before it waits, in its goroutine
	default:
	}
	cancel()
	if a := <-res; a.err == nil {
		return p.admitted(a), 0 // admitted while it was being given up
	}
	if d < 0 || d >= slotWait {
		return "wait slot", -1
	}
	d = roundMs(d)
	return "wait " + d.String(), d
}

// admission is what one Reserve returned.
type admission struct {
	name string
	t    limiter.Ticket
	err  error
}

// admitted records a returned Reserve and says what it did.
func (p *player) admitted(a admission) string {
	if a.err != nil {
		var tl *limiter.TooLargeError
		if errors.As(a.err, &tl) {
			return "too large " + tl.Dimension.String()
		}
		return "error: " + a.err.Error()
	}
	p.tickets[a.name] = a.t
	return "admitted"
}

// ticket is the ticket a step names.
func (p *player) ticket(name string) limiter.Ticket {
	tk, ok := p.tickets[name]
	if !ok {
		p.t.Fatalf("no ticket %q", name)
	}
	return tk
}

// Settle, Fail, Cancel, Refused and Observe end (or inform) the ticket
// name; their outcome is "ok".
func Settle(name string, actual limiter.Cost) Op {
	return ticketOp{name, "settle " + fmt.Sprint(actual), func(t limiter.Ticket, _ time.Time) { t.Settle(actual) }}
}

// Fail ends ticket name as failed.
func Fail(name string) Op {
	return ticketOp{name, "fail", func(t limiter.Ticket, _ time.Time) { t.Fail() }}
}

// Cancel ends ticket name as never sent.
func Cancel(name string) Op {
	return ticketOp{name, "cancel", func(t limiter.Ticket, _ time.Time) { t.Cancel() }}
}

// Refused ends ticket name as refused by the server.
func Refused(name string, r limiter.Refusal) Op {
	return ticketOp{name, fmt.Sprintf("refused %+v", r), func(t limiter.Ticket, _ time.Time) { t.Refused(r) }}
}

// Observe applies headers of ticket name's response computed age ago.
func Observe(name string, o limiter.Observation, age time.Duration) Op {
	return ticketOp{name, fmt.Sprintf("observe %+v age %v", o, age), func(t limiter.Ticket, now time.Time) { t.Observe(o, now.Add(-age)) }}
}

type ticketOp struct {
	name, what string
	fn         func(limiter.Ticket, time.Time)
}

func (o ticketOp) String() string { return o.what + " " + o.name }

// do reports a ticket never admitted as its outcome, not as a fatal
// error, so that Compare shows where two implementations' admissions
// parted.
func (o ticketOp) do(p *player) string {
	tk, ok := p.tickets[o.name]
	if !ok {
		return "no ticket"
	}
	o.fn(tk, p.clk.Now())
	return "ok"
}

// ObserveKey applies headers that belong to no ticket (Budget.Observe).
func ObserveKey(o limiter.Observation) Op { return observeKeyOp{o} }

type observeKeyOp struct{ o limiter.Observation }

func (o observeKeyOp) String() string { return fmt.Sprintf("observe-key %+v", o.o) }

func (o observeKeyOp) do(p *player) string {
	p.b.Observe(Key, o.o)
	return "ok"
}

// Stats reports the key's statistics both implementations keep alike:
// in flight, waiting, reservations, 429s, overloads, pause hints cut,
// the pause, whether headers named limits and the per-minute limits in
// force (not the concurrency: the Redis budget does not learn a window).
func Stats() Op { return statsOp{} }

type statsOp struct{}

func (statsOp) String() string { return "stats" }

func (statsOp) do(p *player) string {
	for _, s := range p.b.Stats() {
		if s.Key != Key {
			continue
		}
		paused := "-"
		if !s.PausedUntil.IsZero() {
			paused = since(s.PausedUntil).String()
		}
		e := s.Effective
		return fmt.Sprintf("inflight=%d waiting=%d reservations=%d 429=%d overloaded=%d clamped=%d paused=%s learned=%v limits=%g/%g/%g/%g",
			s.InFlight, s.Waiting, s.Reservations, s.RateLimited, s.Overloaded, s.PauseClamped, paused, s.Learned, e.RPM, e.ITPM, e.OTPM, e.TPM)
	}
	return "no key"
}

// Queue starts a Reserve of c at priority prio that stays queued until a
// Release admits it: "queued", or "admitted" if it did not wait.
func Queue(name string, c limiter.Cost, prio int) Op { return queueOp{name, c, prio} }

type queueOp struct {
	name string
	cost limiter.Cost
	prio int
}

func (o queueOp) String() string { return fmt.Sprintf("queue %s %v prio %d", o.name, o.cost, o.prio) }

func (o queueOp) do(p *player) string {
	ctx, cancel := newWatchCtx()
	p.queued[o.name] = cancel
	go func() {
		tk, err := p.b.ReservePriority(ctx, Key, o.cost, o.prio)
		p.done <- admission{name: o.name, t: tk, err: err}
	}()
	for {
		select {
		case <-ctx.waiting:
			return "queued"
		case <-time.After(hang):
			p.t.Fatalf("queue %s: neither admitted nor waiting after %v", o.name, hang)
		case a := <-p.done:
			if a.name == o.name { // admitted at once
				delete(p.queued, o.name)
				return p.admitted(a)
			}
			p.early = append(p.early, a) // an earlier one admitted meanwhile
		}
	}
}

// Release settles ticket first and, n times, waits for the queued Reserve
// the freed slot admits, settling it in turn: "c a d b". The clock does
// not move: a queue waiting for slots starts no timer that could fire
// while a Reserve is between reading the time and starting one.
func Release(first string, n int) Op { return releaseOp{first, n} }

type releaseOp struct {
	first string
	n     int
}

func (o releaseOp) String() string { return fmt.Sprintf("release %s then %d", o.first, o.n) }

func (o releaseOp) do(p *player) string {
	var got []string
	name := o.first
	for range o.n {
		p.ticket(name).Settle(req())
		a := p.nextAdmission()
		delete(p.queued, a.name)
		if r := p.admitted(a); r != "admitted" {
			got = append(got, a.name+":"+r)
			break
		}
		got = append(got, a.name)
		name = a.name
	}
	return strings.Join(got, " ")
}

// Await waits for the next queued Reserve to return, without moving the
// clock or ending a ticket: "b:too large input".
func Await() Op { return awaitOp{} }

type awaitOp struct{}

func (awaitOp) String() string { return "await" }

func (awaitOp) do(p *player) string {
	a := p.nextAdmission()
	delete(p.queued, a.name)
	return a.name + ":" + p.admitted(a)
}

// nextAdmission is the next queued Reserve to return.
func (p *player) nextAdmission() admission {
	if len(p.early) > 0 {
		a := p.early[0]
		p.early = p.early[1:]
		return a
	}
	select {
	case a := <-p.done:
		return a
	case <-time.After(hang):
		p.t.Fatalf("drain: no admission at %v after %v; timers due at %v; stats %+v", since(p.clk.Now()), hang, p.clk.pending(), p.b.Stats())
	}
	return admission{}
}
