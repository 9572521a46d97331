package runner

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"testing/synctest"
	"time"

	"github.com/llmrun/llmrun/checkpoint"
	"github.com/llmrun/llmrun/limiter"
)

// diskDays reads, as a crash would leave it, the state file of dir's
// output: the requests its daily counts hold and when it was written.
func diskDays(t *testing.T, dir string) (requests float64, updated time.Time) {
	t.Helper()
	b, err := os.ReadFile(checkpoint.StatePath(filepath.Join(dir, "out.jsonl")))
	if err != nil {
		t.Fatal(err)
	}
	var sc struct {
		State   map[string]json.RawMessage `json:"state"`
		Updated time.Time                  `json:"updated"`
	}
	if err := json.Unmarshal(b, &sc); err != nil {
		t.Fatal(err)
	}
	if raw, ok := sc.State[dayStateKey]; ok {
		var us []limiter.DayUsage
		if err := json.Unmarshal(raw, &us); err != nil {
			t.Fatal(err)
		}
		for _, u := range us {
			requests += u.Requests
		}
	}
	return requests, sc.Updated
}

// dayRun runs n requests of latency each, one at a time, against a
// per-day budget, and polls the state file on disk every poll while the
// run goes on: f gets the time into the run, the answers finished and
// what the file holds, and reports a failure with t.Errorf (the run is
// then cancelled). It returns the distinct state writes seen after Open's.
func dayRun(t *testing.T, n int, latency, poll time.Duration, f func(at time.Duration, finished int64, saved float64)) int {
	dir := t.TempDir()
	days := limiter.NewDays(limiter.DaysOptions{Defaults: limiter.DayLimits{Requests: 1000}, Now: time.Now})
	p := &slowProvider{latency: latency}
	cfg, store := testRun(t, dir, n, p, func(c *Config) { c.Days, c.Concurrency = days, 1 })
	defer store.Close()
	_, opened := diskDays(t, dir)
	done := make(chan error, 1)
	start := time.Now()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		_, err := Run(ctx, cfg)
		done <- err
	}()
	writes := map[time.Time]bool{}
	for {
		time.Sleep(poll)
		synctest.Wait()
		select {
		case err := <-done:
			if t.Failed() {
				t.FailNow()
			}
			if err != nil {
				t.Fatal(err)
			}
			saved, updated := diskDays(t, dir)
			if saved != float64(n) {
				t.Fatalf("when Run returns the state file holds %g requests, want %d", saved, n)
			}
			writes[updated] = !updated.Equal(opened)
			return countTrue(writes)
		default:
		}
		saved, updated := diskDays(t, dir)
		writes[updated] = !updated.Equal(opened)
		if !t.Failed() {
			f(time.Since(start), p.finished.Load(), saved)
		}
		if t.Failed() {
			cancel()
		}
	}
}

func countTrue(m map[time.Time]bool) int {
	k := 0
	for _, v := range m {
		if v {
			k++
		}
	}
	return k
}

// TestDailyCountsSavedDuringTheRun: a kill -9 mid-run leaves on disk
// the day's counts of every answer older than daySaveEvery, so a rerun
// the same day does not start from the previous run's end; and the run
// writes the state file at most once an interval (plus its end).
func TestDailyCountsSavedDuringTheRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n, latency, poll = 40, time.Second, 250 * time.Millisecond
		finishedAt := map[time.Duration]int64{}
		checked := 0
		writes := dayRun(t, n, latency, poll, func(at time.Duration, finished int64, saved float64) {
			finishedAt[at] = finished
			if old := finishedAt[at-daySaveEvery]; old > 0 {
				checked++
				if saved < float64(old) {
					t.Errorf("%v into the run the state file holds %g requests; %d answers had finished %v earlier", at, saved, old, daySaveEvery)
				}
			}
		})
		if checked < 30 {
			t.Fatalf("checked the file %d times mid-run, want the run to span many intervals", checked)
		}
		if most := int(time.Duration(n)*latency/daySaveEvery) + 1; writes > most {
			t.Fatalf("%d state writes in a %v run, want at most %d (one per %v, and the end)", writes, time.Duration(n)*latency, most, daySaveEvery)
		}
	})
}

// TestDailyCountsNotSavedWhileUnchanged: while the counts stay as saved
// (one long request in flight) the run writes nothing: one save an
// interval after the request was charged, one at the end.
func TestDailyCountsNotSavedWhileUnchanged(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sawMid := false
		writes := dayRun(t, 1, 30*time.Second, 250*time.Millisecond, func(at time.Duration, _ int64, saved float64) {
			if at > daySaveEvery && saved != 1 {
				t.Errorf("%v into the run, its request in flight since the start: the state file holds %g requests, want 1", at, saved)
			}
			sawMid = sawMid || at > daySaveEvery
		})
		if !sawMid || writes != 2 {
			t.Fatalf("state writes during the run: %d, want 2 (one mid-run, one at the end)", writes)
		}
	})
}
