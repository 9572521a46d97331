package report

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// bubbleStart is the time a synctest bubble's fake clock starts at.
var bubbleStart = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

// TestProgressShowsDailyWait: requests waiting for a key's daily limit
// (--wait-daily) say so, with the reset's time and how far off it is, on
// the progress line (the bar and the log record, with the count in the
// record's figures), never as the breaker's "provider down, holding": the
// provider is fine. Without a reset known (the day's last units held by
// attempts in flight) the line says that instead; nothing waiting, nothing
// said.
func TestProgressShowsDailyWait(t *testing.T) {
	c := new(Counters)
	c.Total.Store(10)
	c.Succeeded.Store(4)
	c.DayWaiting.Store(3)
	// The reporter's first record is at 1s of the bubble's clock.
	c.DayReset.Store(bubbleStart.Add(3*time.Hour + 12*time.Minute + time.Second).UnixNano())
	logged := progressOf(t, ProgressLog, c)
	for _, want := range []string{"3 waiting for the daily limit to reset (at 03:12 UTC, in 3h12m), waiting for RPM", `"waiting_for_daily_limit":3`} {
		if !strings.Contains(logged, want) {
			t.Errorf("log lacks %q: %s", want, logged)
		}
	}
	bar := progressOf(t, ProgressBar, c)
	if !strings.Contains(bar, "3 waiting for the daily limit to reset (at 03:12 UTC, in 3h12m)") && !strings.Contains(bar, "3 wait day reset 3h12m") {
		t.Errorf("bar lacks the wait: %q", bar)
	}
	for _, got := range []string{logged, bar} {
		if strings.Contains(got, "holding") || strings.Contains(got, "provider down") {
			t.Errorf("a daily wait shown as an outage: %q", got)
		}
	}
	c.DayReset.Store(0)
	if got := progressOf(t, ProgressLog, c); !strings.Contains(got, "3 waiting for the daily limit (attempts in flight hold its last units)") {
		t.Errorf("no reset known: %s", got)
	}
	c.DayWaiting.Store(0)
	for _, mode := range []ProgressMode{ProgressLog, ProgressBar} {
		if got := progressOf(t, mode, c); strings.Contains(got, "daily limit") || strings.Contains(got, "day reset") {
			t.Errorf("mode %d: nothing waits, yet %q", mode, got)
		}
	}
}

// TestSummaryDailyWait: the time requests waited for the daily limit is
// a share of request time beside the budget's waits, in the end line, the
// end block and the --summary file.
func TestSummaryDailyWait(t *testing.T) {
	c := new(Counters)
	c.Total.Store(10)
	c.Succeeded.Store(10)
	c.RequestNanos.Store(int64(100 * time.Second))
	c.DayWaitNanos.Store(int64(90 * time.Second))
	c.SpendWaitNanos.Store(int64(5 * time.Second))
	s := c.Summary(time.Minute)
	if got := s.Text(); !strings.Contains(got, "; 90% of request time waiting for the daily limit") {
		t.Errorf("end line: %q", got)
	}
	if got := s.Block("done", "", 80); !strings.Contains(got, "Waited:    the daily limit 90%, --max-cost room 5% of request time") {
		t.Errorf("end block:\n%s", got)
	}
	b, err := json.Marshal(s)
	if err != nil || !strings.Contains(string(b), `"daily_wait_seconds":90`) {
		t.Errorf("summary file: %s (%v)", b, err)
	}
	c.DayWaitNanos.Store(0)
	s = c.Summary(time.Minute)
	if b, _ := json.Marshal(s); strings.Contains(s.Text()+s.Block("done", "", 80), "daily") || strings.Contains(string(b), "daily_wait") {
		t.Errorf("no wait, yet: %q %s", s.Text(), b)
	}
}
