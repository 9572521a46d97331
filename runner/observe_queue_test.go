package runner

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/llmrun/llmrun/limiter"
	"github.com/llmrun/llmrun/providers"
	"github.com/llmrun/llmrun/source"
)

// gateBudget admits the first reservation and holds every later one until
// open is closed, counting those it holds by priority.
type gateBudget struct {
	limiter.Budget
	open chan struct{}

	mu      sync.Mutex
	n       int
	holding map[int]int64
}

func (b *gateBudget) ReservePriority(ctx context.Context, key string, c limiter.Cost, p int) (limiter.Ticket, error) {
	b.mu.Lock()
	b.n++
	first := b.n == 1
	if !first {
		b.holding[p]++
	}
	b.mu.Unlock()
	if !first {
		select {
		case <-b.open:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		b.mu.Lock()
		b.holding[p]--
		b.mu.Unlock()
	}
	return b.Budget.ReservePriority(ctx, key, c, p)
}

// viewObserver keeps the run's View.
type viewObserver struct{ v chan *View }

func (o *viewObserver) Start(v *View)                              { o.v <- v }
func (o *viewObserver) AdmissionWait(string, time.Duration)        {}
func (o *viewObserver) Request(*providers.Request) RequestObserver { return nil }

// TestQueueDepthByPriority: the View counts the attempts waiting for
// admission by key and priority class, as many as the budget holds of
// each, and none once the run is over.
func TestQueueDepthByPriority(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dir := t.TempDir()
		var lines strings.Builder
		for i := range 12 {
			fmt.Fprintf(&lines, `{"custom_id":"r%03d","prompt":"p%d","priority":%q}`+"\n", i, i, []string{"high", "low", "normal"}[i%3])
		}
		in := filepath.Join(dir, "prio.jsonl")
		if err := os.WriteFile(in, []byte(lines.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		gate := &gateBudget{open: make(chan struct{}), holding: map[int]int64{}}
		obs := &viewObserver{v: make(chan *View, 1)}
		cfg, store := testRun(t, dir, 1, &slowProvider{latency: time.Second}, func(c *Config) {
			gate.Budget = c.Limiter
			c.Limiter, c.Observer, c.Concurrency = gate, obs, 6
		})
		defer store.Close()
		cfg.Source = &source.Source{Path: in, Parser: cfg.Source.Parser}
		check, err := cfg.Source.Check()
		if err != nil {
			t.Fatal(err)
		}
		cfg.Total = check.Requests
		done := make(chan error, 1)
		go func() { _, err := Run(context.Background(), cfg); done <- err }()
		v := <-obs.v
		time.Sleep(2 * time.Second) // the first answer is in; the rest wait at the gate
		synctest.Wait()
		gate.mu.Lock()
		want := map[int]int64{}
		for p, n := range gate.holding {
			if n > 0 {
				want[p] = n
			}
		}
		gate.mu.Unlock()
		got := map[int]int64{}
		for _, q := range v.Queues() {
			if q.Waiting > 0 {
				got[q.Priority] += q.Waiting
			}
		}
		if len(want) < 2 || fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("queues by priority %v, the budget holds %v (want two classes or more)", got, want)
		}
		close(gate.open)
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		for _, q := range v.Queues() {
			if q.Waiting != 0 || q.Key == "" {
				t.Fatalf("after the run: %+v", q)
			}
		}
	})
}
