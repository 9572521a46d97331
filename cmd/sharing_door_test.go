package cmd

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/llmrun/llmrun/limiter"
	"github.com/llmrun/llmrun/limiter/redisbudget"
	"github.com/llmrun/llmrun/limiter/redisbudget/redistest"
	"github.com/llmrun/llmrun/providers/mock"
)

// door stands before the mock and, once closed, holds the requests whose
// body contains tag at the door (in flight, holding their slots) until
// the test lets them in: one at a time (admit) or all from then on
// (open). It is how a test puts the key in a known state (every slot
// held by the backfill, a waiter queued) whatever the machine's load,
// instead of sleeping and hoping.
type door struct {
	h   http.Handler
	tag []byte

	mu      sync.Mutex
	closed  bool
	opened  chan struct{} // closed by open
	one     chan struct{} // admit lets one held request in
	held    int
	arrived map[string]int // by tag ("" for others)
	changed chan struct{}  // closed and replaced on every change
}

func newDoor(h http.Handler, tag string) *door {
	return &door{h: h, tag: []byte(tag), opened: make(chan struct{}), one: make(chan struct{}),
		arrived: map[string]int{}, changed: make(chan struct{})}
}

// notify wakes the waiters on the door's state; d.mu is held.
func (d *door) notify() {
	close(d.changed)
	d.changed = make(chan struct{})
}

func (d *door) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	tagged := false
	if r.Method == http.MethodPost && r.Body != nil {
		b, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(b))
		tagged = bytes.Contains(b, d.tag)
	}
	d.mu.Lock()
	if tagged {
		d.arrived[string(d.tag)]++
	} else {
		d.arrived[""]++
	}
	hold := tagged && d.closed
	if hold {
		d.held++
	}
	d.notify()
	d.mu.Unlock()
	if hold {
		select {
		case <-d.one:
		case <-d.opened:
		case <-r.Context().Done():
		}
		d.mu.Lock()
		d.held--
		d.notify()
		d.mu.Unlock()
	}
	d.h.ServeHTTP(w, r)
}

// await waits until cond, read under the door's lock, holds; it fails
// the test after doorFailsafe.
func (d *door) await(t testing.TB, what string, cond func(d *door) bool) {
	t.Helper()
	deadline := time.After(doorFailsafe)
	for {
		d.mu.Lock()
		ok, changed := cond(d), d.changed
		d.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-changed:
		case <-deadline:
			t.Fatalf("waited %v for %s", doorFailsafe, what)
		}
	}
}

func (d *door) close() {
	d.mu.Lock()
	d.closed = true
	d.mu.Unlock()
}

// admit lets one held request in.
func (d *door) admit(t testing.TB) {
	t.Helper()
	select {
	case d.one <- struct{}{}:
	case <-time.After(doorFailsafe):
		t.Fatal("no request held at the door")
	}
}

// open lets every held request in, and every later one.
func (d *door) open() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		d.closed = false
		close(d.opened)
	}
}

// doorFailsafe bounds the waits for what a correct run does, so a broken one
// fails instead of hanging the test. A passing test never reaches it.
const doorFailsafe = 60 * time.Second

// awaitWaiting polls the Redis budget until its one key has at least want
// tickets of priority prio waiting, and fails the test after doorFailsafe.
func awaitWaiting(t testing.TB, addr string, prio int, want func() int, what string) {
	t.Helper()
	client := redis.NewClient(&redis.Options{Addr: addr})
	defer client.Close()
	ctx := context.Background()
	deadline := time.Now().Add(doorFailsafe)
	p := strconv.Itoa(prio)
	for {
		keys, err := redisbudget.Keys(ctx, client, "")
		if err != nil {
			t.Fatal(err)
		}
		if len(keys) == 1 {
			rep, err := redisbudget.Inspect(ctx, client, "", keys[0])
			if err != nil {
				t.Fatal(err)
			}
			if rep.WaitingByPriority[p] >= want() {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("waited %v for %s", doorFailsafe, what)
		}
		time.Sleep(2 * time.Millisecond) // polling another process's state, not timing it
	}
}

// runAtDoor is run with the join in a known state, set by a door and not
// by a sleep: the backfill has before requests answered, then its next
// ones are held at the door until they hold every slot of the key; the
// urgent job starts, and once its first request waits for a slot the door
// lets one backfill request in. It returns, besides the result, the tag
// of the request that took the slot so freed. The door opens once all the
// urgent job's other requests wait too (but one that may be in flight).
func (s shareScenario) runAtDoor(t *testing.T, before int) (shareResult, string) {
	t.Helper()
	addr := redistest.StartOrSkip(t)
	m := mock.New(mock.Config{Seed: 15, Concurrency: s.serverConcurrency, RPM: s.rpm, ITPM: s.itpm, Burst: time.Second})
	d := newDoor(m, "LOW")
	log := &arrivalLog{h: d, tags: []string{"HIGH", "LOW"}}
	srv := httptest.NewServer(log)
	t.Cleanup(srv.Close)
	t.Cleanup(d.open) // before the server closes: no handler stays held
	dir := t.TempDir()
	low := taggedPrompts(t, dir, "LOW", s.backfill, s.promptBytes)
	high := taggedPrompts(t, dir, "HIGH", s.urgent, s.promptBytes)
	common := []string{"--provider", "anthropic", "--model", "m", "--quiet", "--redis", "redis://" + addr + "/0",
		"--rpm", fmt.Sprint(s.rpm), "--itpm", fmt.Sprint(s.itpm), "--concurrency", fmt.Sprint(s.serverConcurrency)}
	backfill := startJob(t, srv.URL, append([]string{"batch", low, "--priority", "low"}, common...)...)
	d.await(t, "the backfill's first requests", func(d *door) bool { return d.arrived["LOW"] >= before })
	d.close()
	d.await(t, "the backfill holding every slot", func(d *door) bool { return d.held == s.serverConcurrency })
	urgent := startJob(t, srv.URL, append([]string{"batch", high, "--priority", "high"}, common...)...)
	awaitWaiting(t, addr, limiter.PriorityHigh, func() int { return 1 }, "the urgent job's first request to wait")
	n := len(log.order())
	d.admit(t)
	d.await(t, "a request in the slot the backfill freed", func(*door) bool { return len(log.order()) > n })
	next := log.order()[n]
	awaitWaiting(t, addr, limiter.PriorityHigh, func() int {
		return s.urgent - count(log.order(), "HIGH") - 1 // one may be in flight
	}, "the urgent job's requests to wait")
	d.open()
	var r shareResult
	r.urgentSum = urgent.wait(t, "urgent job")
	backfill.wait(t, "backfill")
	r.urgent, r.backfill = urgent.took, backfill.took
	st := m.Stats()
	r.limited, r.completed, r.order = st.RateLimited, st.Completed, log.order()
	return r, next
}

// nth is the index of the nth (from 1) tag in tags, -1 if fewer.
func nth(tags []string, tag string, n int) int {
	for i, t := range tags {
		if t == tag {
			if n--; n == 0 {
				return i
			}
		}
	}
	return -1
}

// count is how many of tags are tag.
func count(tags []string, tag string) int {
	n := 0
	for _, t := range tags {
		if t == tag {
			n++
		}
	}
	return n
}
