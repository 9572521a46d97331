package runner

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"
)

// fakeHold records its acquire and each release (with whether the
// outcome said the attempt was sent) into a shared log.
type fakeHold struct {
	name   string
	log    *[]string
	fail   error
	lapsed bool
	noRel  bool
}

func (f *fakeHold) acquire(context.Context) (func(attemptOutcome), error) {
	*f.log = append(*f.log, "acquire "+f.name)
	if f.fail != nil {
		return nil, f.fail
	}
	if f.noRel {
		return nil, nil
	}
	return func(o attemptOutcome) {
		*f.log = append(*f.log, fmt.Sprintf("release %s sent=%v", f.name, !o.sent.IsZero()))
	}, nil
}

func (f *fakeHold) valid() bool { return !f.lapsed }

// TestPermitFailedAcquireReleasesEarlierHolds: whichever hold fails to be
// acquired, exactly the holds acquired before it are released, each once,
// last first, as never sent; the later ones are never asked; and the
// error comes back as the hold gave it.
func TestPermitFailedAcquireReleasesEarlierHolds(t *testing.T) {
	const n = 8
	for failAt := range n {
		var log []string
		holds := make([]hold, n)
		for i := range n {
			holds[i] = &fakeHold{name: fmt.Sprint(i), log: &log}
		}
		stop := &admitStop{out: outFailed, err: errors.New("no")}
		holds[failAt].(*fakeHold).fail = stop
		p, err := acquirePermit(context.Background(), holds)
		if p != nil || err != stop {
			t.Fatalf("fail at %d: permit %v, err %v; want none and the hold's error", failAt, p, err)
		}
		var want []string
		for i := 0; i <= failAt; i++ {
			want = append(want, fmt.Sprint("acquire ", i))
		}
		for i := failAt - 1; i >= 0; i-- {
			want = append(want, fmt.Sprintf("release %d sent=false", i))
		}
		if !slices.Equal(log, want) {
			t.Errorf("fail at %d:\n got %q\nwant %q", failAt, log, want)
		}
	}
}

// TestPermitReleaseReverseOnce: a permit gives its holds back last first,
// each once with the attempt's outcome, skipping those with nothing to
// give back; a second release gives back nothing.
func TestPermitReleaseReverseOnce(t *testing.T) {
	var log []string
	holds := []hold{
		&fakeHold{name: "a", log: &log},
		&fakeHold{name: "b", log: &log, noRel: true},
		&fakeHold{name: "c", log: &log},
	}
	p, err := acquirePermit(context.Background(), holds)
	if err != nil {
		t.Fatal(err)
	}
	log = nil
	sent := attemptOutcome{sent: time.Unix(1, 0)}
	p.release(sent)
	p.release(sent)
	if want := []string{"release c sent=true", "release a sent=true"}; !slices.Equal(log, want) {
		t.Errorf("released %q, want %q", log, want)
	}
}

// TestPermitLapsedHoldReadmits: all holds acquired, but one lapsed
// meanwhile (the breaker opened): every hold is released once, as never
// sent, and admission starts over.
func TestPermitLapsedHoldReadmits(t *testing.T) {
	var log []string
	holds := []hold{
		&fakeHold{name: "a", log: &log},
		&fakeHold{name: "b", log: &log, lapsed: true},
		&fakeHold{name: "c", log: &log},
	}
	p, err := acquirePermit(context.Background(), holds)
	if p != nil || !errors.Is(err, errReadmit) {
		t.Fatalf("permit %v, err %v; want errReadmit", p, err)
	}
	want := []string{"acquire a", "acquire b", "acquire c", "release c sent=false", "release b sent=false", "release a sent=false"}
	if !slices.Equal(log, want) {
		t.Errorf("got %q, want %q", log, want)
	}
}

// TestHoldsOrder pins the orders the holds' release relies on: the
// run's hearing is acquired last (so released first: a stop binds before
// anything lets the next attempt in); the key's day and spend cap between
// the reservation and the hearing (so they read the answer, a day limit in
// its headers, before the slot lets the next attempt in:
// TestDailyLimitFromHeaders raced on it); the reservation and its slot after
// the gate and breaker (so the budget hears the outcome before they are
// given back), and the breaker's lapse is checked before the day's; the
// wait for --max-cost room comes before every hold that holds something
// (a waiter holds nothing an attempt in flight, or the budget, needs) and
// before the spend reservation it lets in.
func TestHoldsOrder(t *testing.T) {
	hs := (&run{}).holds(&hop{})
	at := func(match func(hold) bool) int {
		return slices.IndexFunc(hs, match)
	}
	hearing := at(func(h hold) bool { _, ok := h.(*hearingHold); return ok })
	resv := at(func(h hold) bool { _, ok := h.(*reservation); return ok })
	gate := at(func(h hold) bool { _, ok := h.(*gateHold); return ok })
	breaker := at(func(h hold) bool { _, ok := h.(*breakerHold); return ok })
	day := at(func(h hold) bool { _, ok := h.(*dayHold); return ok })
	spend := at(func(h hold) bool { _, ok := h.(*spendHold); return ok })
	room := at(func(h hold) bool { _, ok := h.(*spendRoomHold); return ok })
	failFast := at(func(h hold) bool { _, ok := h.(*failFastHold); return ok })
	switch {
	case hearing != len(hs)-1:
		t.Errorf("hearing at %d of %d, want last", hearing, len(hs))
	case !(resv < day && day < hearing && resv < spend && spend < hearing):
		t.Errorf("reservation %d, day %d, spend %d, hearing %d: want the day and spend between the other two", resv, day, spend, hearing)
	case !(breaker < gate && gate < resv):
		t.Errorf("breaker %d, gate %d, reservation %d: want that order", breaker, gate, resv)
	case !(breaker < day):
		t.Errorf("breaker %d, day %d: want that order", breaker, day)
	case room < 0 || !(room < failFast && room < breaker && room < gate && room < resv && room < spend):
		t.Errorf("spend room %d: want it before fail-fast %d, breaker %d, gate %d, reservation %d, spend %d", room, failFast, breaker, gate, resv, spend)
	}
}
