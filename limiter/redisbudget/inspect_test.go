package redisbudget

import (
	"context"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/llmrun/llmrun/limiter"
)

// TestInspectSeesEveryProcess: Keys lists a key in use and Inspect reads
// its limits, levels, pause, learned limits and every process's tickets,
// in flight and waiting by priority.
func TestInspectSeesEveryProcess(t *testing.T) {
	lim := limiter.Limits{RPM: 600, ITPM: 60000, Concurrency: 2}
	as := func(host string, pid int) func(*Options) {
		return func(o *Options) { o.Holder = Holder{Role: "out-" + host, Host: host, PID: pid} }
	}
	a, b := newBudget(t, lim, as("h1", 100)), newBudget(t, lim, as("h2", 200))
	key := testKey(t)
	ctx := context.Background()
	for range 2 {
		if _, err := a.Reserve(ctx, key, limiter.Cost{Requests: 1, Input: 100}); err != nil {
			t.Fatal(err)
		}
	}
	queued(t, b, key, 1)
	queued(t, b, key, 1)
	queued(t, a, key, -1)
	a.pause(key, time.Now().Add(5*time.Second))

	keys, err := Keys(ctx, a.client, "")
	if err != nil || !slices.Contains(keys, key) {
		t.Fatalf("Keys = %v, %v; want %q among them", keys, err, key)
	}
	rep, err := Inspect(ctx, a.client, "", key)
	if err != nil {
		t.Fatal(err)
	}
	if rep.PerMinute != [4]float64{600, 60000, 0, 0} || rep.Capacity != [4]float64{10, 1000, 0, 0} || rep.Concurrency != 2 {
		t.Errorf("limits: per minute %v, capacity %v, concurrency %d", rep.PerMinute, rep.Capacity, rep.Concurrency)
	}
	if rep.Level[0] < 8 || rep.Level[0] > 9 || rep.Level[1] < 800 || rep.Level[1] > 900 {
		t.Errorf("levels %v, want about 8 requests and 800 input (2 admitted of full buckets)", rep.Level)
	}
	if rep.PausedFor < 4*time.Second || rep.PausedFor > 5*time.Second {
		t.Errorf("paused for %v, want about 5s", rep.PausedFor)
	}
	if rep.InFlight != 2 || rep.Waiting != 3 || !maps.Equal(rep.WaitingByPriority, map[string]int{"1": 2, "-1": 1}) {
		t.Errorf("in flight %d, waiting %d %v; want 2, 3 {1:2 -1:1}", rep.InFlight, rep.Waiting, rep.WaitingByPriority)
	}
	if len(rep.Processes) != 2 {
		t.Fatalf("processes %+v, want 2", rep.Processes)
	}
	p1, p2 := rep.Processes[0], rep.Processes[1]
	if p1.Host != "h1" || p1.PID != 100 || p1.InFlight != 2 || p1.Waiting != 1 || p1.WaitingByPriority["-1"] != 1 || p1.Role == "" {
		t.Errorf("first process %+v", p1)
	}
	if p2.Host != "h2" || p2.PID != 200 || p2.InFlight != 0 || p2.Waiting != 2 || p2.WaitingByPriority["1"] != 2 {
		t.Errorf("second process %+v", p2)
	}

	// What an Auto-mode key learned.
	auto := newBudget(t, limiter.Limits{Auto: true})
	akey := testKey(t) + "-auto"
	tk, err := auto.Reserve(ctx, akey, limiter.Cost{Requests: 1})
	if err != nil {
		t.Fatal(err)
	}
	tk.Observe(limiter.Observation{Requests: limiter.Window{Limit: 120, Remaining: 100}, Tokens: limiter.Window{Limit: 90000, Remaining: 80000}}, time.Now())
	tk.Settle(limiter.Cost{Requests: 1})
	rep, err = Inspect(ctx, a.client, "", akey)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Learned != [4]float64{120, 0, 0, 90000} || rep.LearnedVersion != 1 {
		t.Errorf("learned %v (version %d), want 120 RPM and 90000 TPM", rep.Learned, rep.LearnedVersion)
	}
}
