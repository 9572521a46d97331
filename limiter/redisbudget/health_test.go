package redisbudget

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/logging"

	"github.com/llmrun/llmrun/limiter"
)

// flakyDialer reaches the test's redis-server until cut: then every
// connection is closed and every dial fails, until restored.
type flakyDialer struct {
	down  atomic.Bool
	mu    sync.Mutex
	conns []net.Conn
}

// errDown carries a secret, as a dial error naming a URL with a password
// might: Health must mask it.
var errDown = errors.New("dial redis://:s3cret@redis.example: connection refused")

func (d *flakyDialer) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	if d.down.Load() {
		return nil, &net.OpError{Op: "dial", Net: network, Err: errDown}
	}
	c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
	if err == nil {
		d.mu.Lock()
		d.conns = append(d.conns, c)
		d.mu.Unlock()
	}
	return c, err
}

func (d *flakyDialer) cut() {
	d.down.Store(true)
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, c := range d.conns {
		c.Close()
	}
	d.conns = nil
}

// TestHealthTellsStateChangesOnly (issue 9 item 11): an outage during
// which every call fails (settles, renewals, reservations) and go-redis's
// pool logs each dial is told as one line, its end as one more, and a
// password never appears.
func TestHealthTellsStateChangesOnly(t *testing.T) {
	var (
		mu    sync.Mutex
		lines []string
	)
	h := NewHealth("redis.example:6379", func(m string) {
		mu.Lock()
		lines = append(lines, m)
		mu.Unlock()
	}, nil, "s3cret")
	// go-redis logs through one process-wide logger: route it here for
	// this test, as llmrun's main does, and restore the default after.
	redis.SetLogger(h)
	t.Cleanup(logging.Enable)
	d := &flakyDialer{}
	c := redis.NewClient(&redis.Options{Addr: redisAddr, Dialer: d.dial, MaxRetries: -1, DialerRetries: 1})
	defer c.Close()
	h.Watch(c)
	b := newBudget(t, limiter.Limits{RPM: 60000}, func(o *Options) {
		o.Client = c
		o.OnError = h.Report
		o.OpTimeout = 500 * time.Millisecond
	})
	key := testKey(t)
	ctx := context.Background()
	tk, err := b.Reserve(ctx, key, limiter.Cost{Requests: 1})
	if err != nil {
		t.Fatal(err)
	}
	tk.Settle(limiter.Cost{Requests: 1})

	for range 2 { // two outages: two pairs of lines
		d.cut()
		var tks []limiter.Ticket
		for range 5 {
			if _, err := b.Reserve(ctx, key, limiter.Cost{Requests: 1}); err == nil {
				t.Fatal("Reserve succeeded while Redis was unreachable")
			}
		}
		for range 5 {
			b.pause(key, time.Now().Add(time.Second))
		}
		for _, tk := range tks {
			tk.Fail()
		}
		if !h.Down() {
			t.Fatal("Health is not down during the outage")
		}
		d.down.Store(false)
		// The pool retries dialling in the background, about once a second.
		deadline := time.Now().Add(10 * time.Second)
		for {
			tk, err := b.Reserve(ctx, key, limiter.Cost{Requests: 1})
			if err == nil {
				tk.Settle(limiter.Cost{Requests: 1})
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("Reserve after Redis came back: %v", err)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	h.Printf(ctx, "sentinel: %s", "something else") // other messages: told once per kind
	h.Printf(ctx, "sentinel: %s", "and again")

	mu.Lock()
	defer mu.Unlock()
	t.Logf("lines:\n%s", strings.Join(lines, "\n"))
	want := []string{"unreachable", "reachable again", "unreachable", "reachable again", "sentinel: something else"}
	if len(lines) != len(want) {
		t.Fatalf("lines:\n%s\nwant %d lines: %v", strings.Join(lines, "\n"), len(want), want)
	}
	for i, l := range lines {
		if !strings.Contains(l, want[i]) || !strings.Contains(l, "redis") {
			t.Errorf("line %d = %q, want it to say %q", i, l, want[i])
		}
		if strings.Contains(l, "s3cret") {
			t.Errorf("line %d = %q shows the password", i, l)
		}
	}
	if !strings.Contains(lines[0], "redis.example:6379") || !strings.Contains(lines[0], "xxxxx") {
		t.Errorf("down line %q: want the address and the cause, password masked", lines[0])
	}
}

func TestConnError(t *testing.T) {
	for _, tt := range []struct {
		err  error
		want bool
	}{
		{nil, false},
		{redis.Nil, false},
		{context.Canceled, false},
		{&net.OpError{Op: "dial", Err: errDown}, true},
		{context.DeadlineExceeded, true},
	} {
		if got := connError(tt.err); got != tt.want {
			t.Errorf("connError(%v) = %v, want %v", tt.err, got, tt.want)
		}
	}
	// An error reply is Redis answering: not a connection error.
	c := newClient(t)
	err := c.Do(context.Background(), "NOSUCHCOMMAND").Err()
	if err == nil || connError(err) {
		t.Errorf("error reply %v: connError = true", err)
	}
}

// TestHealthIgnoresAnswersFromBeforeTheOutage (issue 22 item 13): a call
// in flight when Redis died, answered just before, does not say Redis is
// back; only a call that began after the failure does. Before, an outage
// could print "unreachable", "reachable again", "unreachable".
func TestHealthIgnoresAnswersFromBeforeTheOutage(t *testing.T) {
	var told []string
	h := NewHealth("r", func(m string) { told = append(told, m) }, func() time.Time { return time.Unix(0, 0) })
	before := h.begin()
	h.failed("connection refused")
	h.observe(context.Background(), nil, before)
	if !h.Down() || len(told) != 1 {
		t.Fatalf("a success from before the failure: down %v, told %q", h.Down(), told)
	}
	h.observe(context.Background(), nil, h.begin())
	if h.Down() || len(told) != 2 || !strings.Contains(told[1], "reachable again") {
		t.Fatalf("a success after the failure: down %v, told %q", h.Down(), told)
	}
}
