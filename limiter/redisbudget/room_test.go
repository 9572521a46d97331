package redisbudget

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/llmrun/llmrun/limiter"
)

// queued starts a Reserve of priority p on b and waits until it is in the
// room; the returned channel yields its ticket once admitted. A Reserve
// still waiting when the test ends is cancelled.
func queued(t *testing.T, b *Budget, key string, p int) <-chan limiter.Ticket {
	t.Helper()
	ch := make(chan limiter.Ticket, 1)
	k := b.key(key)
	k.mu.Lock()
	before := len(k.waiters)
	k.mu.Unlock()
	ctx, cancel := context.WithCancel(context.Background())
	ended := make(chan struct{})
	t.Cleanup(func() { cancel(); <-ended })
	go func() {
		defer close(ended)
		tk, err := b.ReservePriority(ctx, key, limiter.Cost{Requests: 1}, p)
		if err != nil {
			if !errors.Is(err, context.Canceled) {
				t.Error(err)
			}
			close(ch)
			return
		}
		ch <- tk
	}()
	deadline := time.Now().Add(5 * time.Second)
	for {
		k.mu.Lock()
		in := 0
		for _, w := range k.waiters {
			if w.entered {
				in++
			}
		}
		k.mu.Unlock()
		if in > before {
			return ch
		}
		if time.Now().After(deadline) {
			t.Fatal("the Reserve did not enter the room")
		}
		time.Sleep(time.Millisecond)
	}
}

// TestRoomOrdersEveryProcess: two processes' waiters on a key at its
// concurrency limit are admitted highest priority first, first come first
// served within one, whichever process they are in.
func TestRoomOrdersEveryProcess(t *testing.T) {
	lim := limiter.Limits{RPM: 60000, Concurrency: 1}
	a, b := newBudget(t, lim), newBudget(t, lim) // no aging: strictly by priority
	key := testKey(t)
	hold, err := a.Reserve(context.Background(), key, limiter.Cost{Requests: 1})
	if err != nil {
		t.Fatal(err)
	}
	type q struct {
		name string
		b    *Budget
		p    int
	}
	qs := []q{{"a-low", a, -1}, {"b-normal", b, 0}, {"a-high", a, 1}, {"b-high", b, 1}, {"a-normal", a, 0}, {"b-top", b, 7}}
	chs := make([]<-chan limiter.Ticket, len(qs))
	for i, x := range qs {
		chs[i] = queued(t, x.b, key, x.p)
	}
	hold.Settle(limiter.Cost{Requests: 1})
	var order []string
	for range qs {
		// Exactly one is admitted at a time: take it, note it, end it.
		var got int = -1
		deadline := time.After(5 * time.Second)
		for got < 0 {
			for i, ch := range chs {
				select {
				case tk := <-ch:
					if tk == nil {
						t.FailNow()
					}
					got = i
					order = append(order, qs[i].name)
					tk.Settle(limiter.Cost{Requests: 1})
				default:
				}
				if got >= 0 {
					break
				}
			}
			if got < 0 {
				select {
				case <-deadline:
					t.Fatalf("admitted %v, then nothing", order)
				case <-time.After(time.Millisecond):
				}
			}
		}
	}
	want := []string{"b-top", "a-high", "b-high", "b-normal", "a-normal", "a-low"}
	if !slices.Equal(order, want) {
		t.Fatalf("admitted %v, want %v", order, want)
	}
}

// TestRoomAgingAcrossProcesses: with aging, a low-priority waiter of one
// process that has waited longer than the priorities' difference × aging
// goes before a high-priority one of another process that just came.
func TestRoomAgingAcrossProcesses(t *testing.T) {
	lim := limiter.Limits{RPM: 60000, Concurrency: 1}
	aging := func(o *Options) { o.Aging = 100 * time.Millisecond }
	a, b := newBudget(t, lim, aging), newBudget(t, lim, aging)
	key := testKey(t)
	hold, err := a.Reserve(context.Background(), key, limiter.Cost{Requests: 1})
	if err != nil {
		t.Fatal(err)
	}
	low := queued(t, a, key, -1)
	time.Sleep(300 * time.Millisecond) // more than (1 - -1) × 100ms
	high := queued(t, b, key, 1)
	hold.Settle(limiter.Cost{Requests: 1})
	select {
	case tk := <-low:
		tk.Settle(limiter.Cost{Requests: 1})
	case tk := <-high:
		tk.Settle(limiter.Cost{Requests: 1})
		t.Fatal("the new high-priority ticket went before the aged low-priority one")
	case <-time.After(5 * time.Second):
		t.Fatal("nothing admitted")
	}
	(<-high).Settle(limiter.Cost{Requests: 1})
}

// TestLateHighPriorityProcessGoesNext: a process of high priority that
// joins a key while another's low-priority backlog drains gets the next
// admission; the backlog resumes after it.
func TestLateHighPriorityProcessGoesNext(t *testing.T) {
	// One request per 50ms, no burst beyond one.
	// On the explicit clock the test moves one refill at a time, once
	// every waiter is in the room: which process gets each admission is
	// then the room's order alone, not the machine's speed.
	lim := limiter.Limits{RPM: 1200, Burst: 50 * time.Millisecond}
	clk := newTestClock(t)
	low, high := clk.budget(t, lim), clk.budget(t, lim)
	key := testKey(t)
	ready(t, key, low, high)
	var (
		mu    sync.Mutex
		order []string
	)
	record := func(who string) {
		mu.Lock()
		order = append(order, who)
		mu.Unlock()
	}
	run := func(b *Budget, who string, p, n int) *sync.WaitGroup {
		var wg sync.WaitGroup
		for range n {
			wg.Go(func() {
				tk, err := b.ReservePriority(context.Background(), key, limiter.Cost{Requests: 1}, p)
				if err != nil {
					t.Error(err)
					return
				}
				record(who)
				tk.Settle(limiter.Cost{Requests: 1})
			})
		}
		return &wg
	}
	admitted := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(order)
	}
	until := func(what string, cond func() bool) {
		t.Helper()
		for deadline := time.Now().Add(failsafe); !cond(); time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("waited %v for %s", failsafe, what)
			}
		}
	}
	inRoom := func(n int64) func() bool {
		return func() bool {
			got, err := low.client.ZCard(context.Background(), low.key(key).redisKeys[rkRoom]).Result()
			return err == nil && got == n
		}
	}
	lows := run(low, "low", -1, 20)
	until("one low admitted, the others in the room", func() bool { return admitted() == 1 && inRoom(19)() })
	before := admitted()
	highs := run(high, "high", 1, 5)
	until("the highs in the room", inRoom(24))
	for n := before; n < 25; n++ {
		clk.advance(50 * time.Millisecond) // one more request
		until("the next admission", func() bool { return admitted() == n+1 })
	}
	highs.Wait()
	lows.Wait()
	// Every admission after the highs joined is theirs until they are
	// done: the next after the one low admitted at once is the first high.
	last := slices.Index(order, "high") + 4
	if order[last] != "high" || slices.Contains(order[slices.Index(order, "high"):last], "low") {
		t.Errorf("the highs were not admitted together: %v", order)
	}
	if first := slices.Index(order, "high"); first != before {
		t.Errorf("%d lows admitted after the high-priority process joined, before its first: %v", first-before, order)
	}
	if len(order) != 25 {
		t.Errorf("%d admissions, want 25", len(order))
	}
}

// TestWakeUpIsPublished: a slot freed in one process admits another
// process's waiter at once, with no poll (MaxWait and RoomLease long).
func TestWakeUpIsPublished(t *testing.T) {
	// On the explicit clock, standing still, no timer fires: only the
	// published wake-up can admit the waiter.
	lim := limiter.Limits{RPM: 60000, Concurrency: 1}
	clk := newTestClock(t)
	slow := func(o *Options) { o.RoomLease = 30 * time.Second }
	a, b := clk.budget(t, lim, slow), clk.budget(t, lim, slow)
	key := testKey(t)
	hold, err := a.Reserve(context.Background(), key, limiter.Cost{Requests: 1})
	if err != nil {
		t.Fatal(err)
	}
	ch := queued(t, b, key, 0)
	hold.Settle(limiter.Cost{Requests: 1})
	select {
	case tk := <-ch:
		tk.Settle(limiter.Cost{Requests: 1})
	case <-time.After(failsafe):
		t.Fatal("the waiter of another process was not woken")
	}
}

// TestDeadProcessLeavesTheRoom: the place of a process that dies while
// first in the room (it neither renews nor leaves) expires with its lease,
// and the next waiter is admitted then.
func TestDeadProcessLeavesTheRoom(t *testing.T) {
	const lease = 600 * time.Millisecond
	lim := limiter.Limits{RPM: 60000, Concurrency: 1}
	short := func(o *Options) { o.RoomLease = lease }
	a := newBudget(t, lim, short)
	dead := newBudget(t, lim, short, func(o *Options) { o.OnError = nil })
	key := testKey(t)
	hold, err := a.Reserve(context.Background(), key, limiter.Cost{Requests: 1})
	if err != nil {
		t.Fatal(err)
	}
	go dead.ReservePriority(context.Background(), key, limiter.Cost{Requests: 1}, 5) // fails once its client is closed
	deadline := time.Now().Add(5 * time.Second)
	for n, _ := a.client.ZCard(context.Background(), a.key(key).redisKeys[rkRoom]).Result(); n == 0; n, _ = a.client.ZCard(context.Background(), a.key(key).redisKeys[rkRoom]).Result() {
		if time.Now().After(deadline) {
			t.Fatal("the dying process never entered the room")
		}
		time.Sleep(time.Millisecond)
	}
	dead.Close()
	dead.client.Close() // it can no longer renew, leave, or be admitted
	ch := queued(t, a, key, 0)
	start := time.Now()
	hold.Settle(limiter.Cost{Requests: 1})
	select {
	case tk := <-ch:
		d := time.Since(start)
		if d < lease/4 {
			t.Errorf("admitted after %v: the dead process's place did not hold", d)
		}
		if d > lease+time.Second {
			t.Errorf("admitted after %v, want within the room lease %v", d, lease)
		}
		tk.Settle(limiter.Cost{Requests: 1})
	case <-time.After(5 * time.Second):
		t.Fatal("the dead process's place never expired")
	}
}

// TestCancelledWaiterLeavesTheRoom: a waiter that gives up leaves the room
// at once, and the one behind it is first.
func TestCancelledWaiterLeavesTheRoom(t *testing.T) {
	lim := limiter.Limits{RPM: 60000, Concurrency: 1}
	a, b := newBudget(t, lim), newBudget(t, lim)
	key := testKey(t)
	hold, err := a.Reserve(context.Background(), key, limiter.Cost{Requests: 1})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	gone := make(chan error, 1)
	go func() {
		_, err := b.ReservePriority(ctx, key, limiter.Cost{Requests: 1}, 3)
		gone <- err
	}()
	time.Sleep(100 * time.Millisecond)
	behind := queued(t, a, key, 0)
	cancel()
	if err := <-gone; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled Reserve: %v", err)
	}
	n, err := a.client.ZCard(context.Background(), a.key(key).redisKeys[rkRoom]).Result()
	if err != nil || n != 1 {
		t.Fatalf("room holds %d tickets (%v), want the one behind", n, err)
	}
	hold.Settle(limiter.Cost{Requests: 1})
	select {
	case tk := <-behind:
		tk.Settle(limiter.Cost{Requests: 1})
	case <-time.After(2 * time.Second):
		t.Fatal("the waiter behind a cancelled one was not admitted")
	}
}

// TestLearnedLimitsAreShared: without explicit limits, the limits one
// process learns from headers are used by another from its first
// Reserve.
func TestLearnedLimitsAreShared(t *testing.T) {
	auto := limiter.Limits{Auto: true, Concurrency: 8}
	a, b := newBudget(t, auto), newBudget(t, auto)
	key := testKey(t)
	ctx := context.Background()
	tk, err := a.Reserve(ctx, key, limiter.Cost{Requests: 1, Input: 100})
	if err != nil {
		t.Fatal(err)
	}
	// 60 requests and 6,000 input tokens a minute (a burst of one request
	// a second), and none left for now.
	tk.Observe(limiter.Observation{
		Requests: limiter.Window{Limit: 60, Remaining: 0},
		Input:    limiter.Window{Limit: 6000, Remaining: 5900},
		Output:   limiter.Window{Limit: -1, Remaining: -1},
	}, time.Now())
	tk.Settle(limiter.Cost{Requests: 1, Input: 100})
	if s := a.Stats()[0]; !s.Learned || s.Effective.RPM != 60 || s.Effective.ITPM != 6000 {
		t.Fatalf("the learning process: learned %v, effective %+v", s.Learned, s.Effective)
	}
	// b has learned nothing itself: its first Reserve takes the key's
	// limits and waits for the request bucket to refill.
	start := time.Now()
	tb, err := b.Reserve(ctx, key, limiter.Cost{Requests: 1, Input: 100})
	if err != nil {
		t.Fatal(err)
	}
	tb.Settle(limiter.Cost{Requests: 1, Input: 100})
	if d := time.Since(start); d < 500*time.Millisecond {
		t.Errorf("b's first Reserve took %v: it did not use the learned one request a second", d)
	}
	if s := b.Stats()[0]; !s.Learned || s.Effective.RPM != 60 || s.Effective.ITPM != 6000 {
		t.Errorf("the other process: learned %v, effective %+v", s.Learned, s.Effective)
	}
	// A third process that starts later learns them from the key too.
	c := newBudget(t, auto)
	tc, err := c.Reserve(ctx, key, limiter.Cost{Requests: 1, Input: 100})
	if err != nil {
		t.Fatal(err)
	}
	tc.Cancel()
	if s := c.Stats()[0]; s.Effective.RPM != 60 {
		t.Errorf("a later process: effective %+v", s.Effective)
	}
}
