package report

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// progressOf runs a reporter over c in mode for 1.5s of a fake clock and
// returns what it wrote: the log records, or the bar's frames.
func progressOf(t *testing.T, mode ProgressMode, c *Counters) string {
	t.Helper()
	var mu sync.Mutex
	var out bytes.Buffer
	w := writerFunc(func(p []byte) (int, error) { mu.Lock(); defer mu.Unlock(); return out.Write(p) })
	synctest.Test(t, func(t *testing.T) {
		p := &Progress{Mode: mode, Out: w, Log: slog.New(slog.NewJSONHandler(w, nil)), Interval: time.Second,
			Width: func() int { return 160 }, Status: func() string { return "waiting for RPM" }}
		p.Start(c)
		time.Sleep(1500 * time.Millisecond)
		p.Stop()
	})
	mu.Lock()
	defer mu.Unlock()
	return out.String()
}

// TestProgressShowsMaxCostWait: a run whose requests wait for --max-cost
// room (answers in flight to settle) says so on the progress line, as the
// bar and as a log record (with the count in the record's figures), so it
// does not look hung; a run that does not wait says nothing of it.
func TestProgressShowsMaxCostWait(t *testing.T) {
	c := new(Counters)
	c.Total.Store(10)
	c.Succeeded.Store(4)
	c.SpendWaiting.Store(3)
	logged := progressOf(t, ProgressLog, c)
	for _, want := range []string{"3 waiting for --max-cost room, waiting for RPM", `"waiting_for_max_cost":3`} {
		if !strings.Contains(logged, want) {
			t.Errorf("log lacks %q: %s", want, logged)
		}
	}
	if bar := progressOf(t, ProgressBar, c); !strings.Contains(bar, "3 waiting for --max-cost room") {
		t.Errorf("bar lacks the wait: %q", bar)
	}
	c.SpendWaiting.Store(0)
	for _, mode := range []ProgressMode{ProgressLog, ProgressBar} {
		if got := progressOf(t, mode, c); strings.Contains(got, "--max-cost") {
			t.Errorf("mode %d: nothing waits, yet %q", mode, got)
		}
	}
}

// TestSummaryMaxCostWait: the time requests waited for --max-cost room is
// a share of request time beside the budget's waits, in the end line, the
// end block and the --summary file.
func TestSummaryMaxCostWait(t *testing.T) {
	c := new(Counters)
	c.Total.Store(10)
	c.Succeeded.Store(10)
	c.RequestNanos.Store(int64(100 * time.Second))
	c.SpendWaitNanos.Store(int64(40 * time.Second))
	s := c.Summary(time.Minute)
	s.Limits = []KeyLimits{{WaitBySeconds: map[string]float64{"requests": 10}}}
	if got := s.Text(); !strings.Contains(got, "; 40% of request time waiting for --max-cost room (and 10% for RPM)") {
		t.Errorf("end line: %q", got)
	}
	if got := s.Block("done", "", 80); !strings.Contains(got, "Waited:    --max-cost room 40%, RPM 10% of request time") {
		t.Errorf("end block:\n%s", got)
	}
	b, err := json.Marshal(s)
	if err != nil || !strings.Contains(string(b), `"max_cost_wait_seconds":40`) {
		t.Errorf("summary file: %s (%v)", b, err)
	}
	c.SpendWaitNanos.Store(0)
	s = c.Summary(time.Minute)
	if b, _ := json.Marshal(s); strings.Contains(s.Text(), "--max-cost") || strings.Contains(string(b), "max_cost_wait") {
		t.Errorf("no wait, yet: %q %s", s.Text(), b)
	}
}
