package redisbudget

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/llmrun/llmrun/limiter"
)

func TestParseTicket(t *testing.T) {
	h := newHolderID(Holder{Role: "out.jsonl", Host: "a|b", PID: 42}, "inst")
	got, ok := parseTicket(h.String() + ":1z")
	if !ok || got != h {
		t.Fatalf("parseTicket(%q) = %+v, %v; want %+v", h.String()+":1z", got, ok, h)
	}
	if h.host != "a_b" || h.role == "" || h.role == "out.jsonl" {
		t.Errorf("holder %+v: want the host without '|' and the role hashed", h)
	}
	for _, m := range []string{"", "abc:1", "a|b|c|d:1", "a|b|1:1"} {
		if _, ok := parseTicket(m); ok {
			t.Errorf("parseTicket(%q) accepted", m)
		}
	}
	if d := newHolderID(Holder{}, "i"); d.host == "" || d.pid == 0 || d.role != "" {
		t.Errorf("default holder %+v: want this host and pid, no role", d)
	}
}

// TestRestartReclaimsItsOwnDeadLeases (issue 9 item 12): a process killed
// with its concurrency slots taken leaves leases that would block the key
// for Lease (30s). A process restarted in the same role on the same host
// takes them back at once; a process of another role or host, or while
// the old process still lives, never does.
func TestRestartReclaimsItsOwnDeadLeases(t *testing.T) {
	lim := limiter.Limits{RPM: 60000, Concurrency: 2}
	deadPID := func(pid int) bool { return pid != 100 }
	holder := func(role, host string, pid int, alive func(int) bool) func(*Options) {
		return func(o *Options) { o.Holder = Holder{Role: role, Host: host, PID: pid, Alive: alive} }
	}
	// reserve tries one Reserve with a short deadline.
	reserve := func(b *Budget, key string) (limiter.Ticket, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		return b.Reserve(ctx, key, limiter.Cost{Requests: 1})
	}
	// crash takes every slot of a fresh key as pid 100 and "dies": its
	// leases are neither ended nor renewed.
	crash := func(t *testing.T) string {
		key := testKey(t)
		old := newBudget(t, lim, holder("run-A", "h1", 100, nil))
		for range 2 {
			if _, err := reserve(old, key); err != nil {
				t.Fatal(err)
			}
		}
		old.Close()
		return key
	}

	blocked := []struct {
		name string
		opt  func(*Options)
	}{
		{"anonymous", holder("", "h1", 100, deadPID)},
		{"other role", holder("run-B", "h1", 200, deadPID)},
		{"other host", holder("run-A", "h2", 200, deadPID)},
		{"predecessor alive", holder("run-A", "h1", 200, func(int) bool { return true })},
	}
	for _, tt := range blocked {
		t.Run(tt.name, func(t *testing.T) {
			key := crash(t)
			if tk, err := reserve(newBudget(t, lim, tt.opt), key); !errors.Is(err, context.DeadlineExceeded) {
				if tk != nil {
					tk.Cancel()
				}
				t.Fatalf("Reserve = %v: took a slot it must not reclaim", err)
			}
		})
	}
	for _, tt := range []struct {
		name string
		opt  func(*Options)
	}{
		{"new pid", holder("run-A", "h1", 300, deadPID)},
		// A restarted container's process has the dead one's pid (1).
		{"same pid", holder("run-A", "h1", 100, func(int) bool { return true })},
	} {
		t.Run("restart "+tt.name, func(t *testing.T) {
			key := crash(t)
			b := newBudget(t, lim, tt.opt)
			start := time.Now()
			var tks []limiter.Ticket
			for range 2 {
				tk, err := reserve(b, key)
				if err != nil {
					t.Fatalf("Reserve after restart: %v (the dead process's slots were not reclaimed)", err)
				}
				tks = append(tks, tk)
			}
			if d := time.Since(start); d > 5*time.Second { // the dead leases had 30s left
				t.Errorf("restart took %v to get both slots", d)
			}
			// Its own live tickets are never reclaimed: the key is full.
			if tk, err := reserve(b, key); err == nil {
				tk.Cancel()
				t.Fatal("a third slot with concurrency 2")
			}
			for _, tk := range tks {
				tk.Settle(limiter.Cost{Requests: 1})
			}
		})
	}
}

func TestProcessAlive(t *testing.T) {
	if !processAlive(os.Getpid()) {
		t.Error("this process is not alive")
	}
	c := exec.Command("true")
	if err := c.Run(); err != nil {
		t.Skip(err)
	}
	if processAlive(c.Process.Pid) {
		t.Errorf("pid %d of an exited and reaped child is alive", c.Process.Pid)
	}
}
