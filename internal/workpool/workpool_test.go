package workpool

import (
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"golang.org/x/sync/errgroup"
)

// TestWorkersReused: jobs handed faster than they finish start workers
// only up to the group's limit, and each worker goes on to the next
// request; every request is done exactly once. A goroutine per request
// (errgroup.Go) started one for each.
func TestWorkersReused(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n, limit = 30, 3
		var mu sync.Mutex
		done := map[string]int{}
		g := new(errgroup.Group)
		g.SetLimit(limit)
		ws := New(g, func(id string) {
			time.Sleep(time.Second)
			mu.Lock()
			done[id]++
			mu.Unlock()
		})
		for i := range n {
			ws.Hand(string(rune('a' + i)))
		}
		ws.Close()
		if err := g.Wait(); err != nil {
			t.Fatal(err)
		}
		if ws.Started() != limit {
			t.Errorf("started %d workers for %d requests, want %d", ws.Started(), n, limit)
		}
		for id, c := range done {
			if c != 1 {
				t.Errorf("request %q done %d times", id, c)
			}
		}
		if len(done) != n {
			t.Errorf("%d requests done, want %d", len(done), n)
		}
	})
}

// TestWorkersIdleOneTakesIt: jobs that come slower than they finish
// are all taken by the one worker already started.
func TestWorkersIdleOneTakesIt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := new(errgroup.Group)
		g.SetLimit(8)
		var mu sync.Mutex
		n := 0
		ws := New(g, func(string) { mu.Lock(); n++; mu.Unlock() })
		for range 10 {
			ws.Hand("")
			synctest.Wait() // the worker is idle again
		}
		ws.Close()
		g.Wait()
		if ws.Started() != 1 || n != 10 {
			t.Fatalf("started %d workers, did %d requests; want 1 and 10", ws.Started(), n)
		}
	})
}
