package runner

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/llmrun/llmrun/limiter"
	"github.com/llmrun/llmrun/report"
)

// progressLog is a progress reporter logging a record every interval to
// out, as text.
func progressLog(out *bytes.Buffer, interval time.Duration) *report.Progress {
	return &report.Progress{Mode: report.ProgressLog, Log: slog.New(slog.NewTextHandler(out, nil)), Interval: interval}
}

// TestDailyWaitShownAsDailyWait: a --wait-daily wait is the day's, not an
// outage. With 3 requests a day and 5 to send, the last 2 wait for the
// reset: progress says "2 waiting for the daily limit to reset (at …, in
// …)" and never the breaker's "provider down, holding" (before, it said
// just that, and a user would look for a broken provider); the summary
// counts the time waited. The wait still does not count against the
// requests' deadline.
func TestDailyWaitShownAsDailyWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var logged bytes.Buffer
		p := &slowProvider{latency: 10 * time.Millisecond}
		cfg, store := testRun(t, t.TempDir(), 5, p, func(c *Config) {
			c.Days = limiter.NewDays(limiter.DaysOptions{Defaults: limiter.DayLimits{Requests: 3}})
			c.WaitDaily, c.Concurrency, c.Policy.Deadline = true, 5, time.Minute
			c.Progress = progressLog(&logged, time.Hour)
		})
		defer store.Close()
		start := time.Now()
		reset := limiter.NextMidnight(start, dayZone(cfg.Routes[0]))
		sum, err := Run(context.Background(), cfg)
		if err != nil || sum.Succeeded != 5 || sum.Failed != 0 || p.sent.Load() != 5 {
			t.Fatalf("%v, sent %d, summary %+v", err, p.sent.Load(), sum)
		}
		// The first request goes alone (10ms) while the key's limits are
		// learned: the other four start after it.
		if most := 2 * reset.Sub(start).Seconds(); sum.DailyWaitSeconds > most || sum.DailyWaitSeconds < most-1 {
			t.Errorf("summary: %vs waited for the day; want 2 requests until the reset, %vs", sum.DailyWaitSeconds, most)
		}
		first, _, _ := strings.Cut(logged.String(), "\n")
		want := "2 waiting for the daily limit to reset (at " + reset.UTC().Format("15:04 MST") + ", in " + fmtHM(reset.Sub(start.Add(time.Hour))) + ")"
		if !strings.Contains(first, want) || !strings.Contains(first, "progress.waiting_for_daily_limit=2") {
			t.Errorf("first progress record lacks %q:\n%s", want, first)
		}
		for _, l := range strings.Split(logged.String(), "\n") {
			if strings.Contains(l, "holding") || strings.Contains(l, "provider down") {
				t.Fatalf("the day's wait shown as an outage:\n%s", l)
			}
		}
	})
}

// fmtHM is d as progress says hours away: 23h00m.
func fmtHM(d time.Duration) string {
	d = d.Round(time.Minute)
	return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
}

// TestDailyLastUnitsWaitIsNotTheRequestsDeadline: without --wait-daily,
// an attempt the day cannot admit while attempts in flight hold its last
// units waits for them to settle (an answer may use less than it
// reserved). That wait is llmrun's own, like --max-cost room: it does not
// count against the request's deadline. With --tpd room for two
// reservations, answers taking 50s and a 1m deadline, the third request
// waits for them (from the second's start, which the limiter spaces a few
// seconds after the first's, to 50s), then fits (the answers used 5 tokens
// each) and is answered at 100s. Before, it was sent with 10s of its deadline left and failed as
// timed out. Progress shows the wait as the daily limit's.
func TestDailyLastUnitsWaitIsNotTheRequestsDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var logged bytes.Buffer
		p := &slowProvider{latency: 50 * time.Second}
		cfg, store := testRun(t, t.TempDir(), 3, p, func(c *Config) {
			c.Days = limiter.NewDays(limiter.DaysOptions{Defaults: limiter.DayLimits{Tokens: 2.5 * 1024}})
			c.Concurrency, c.Policy.Deadline = 3, time.Minute
			c.Progress = progressLog(&logged, 10*time.Second)
		})
		defer store.Close()
		start := time.Now()
		sum, err := Run(context.Background(), cfg)
		if err != nil || sum.Succeeded != 3 || sum.Failed != 0 || p.sent.Load() != 3 {
			t.Fatalf("%v, sent %d, failed %v; want all 3 answered, each sent once", err, p.sent.Load(), sum.FailuresByCause)
		}
		if took := time.Since(start); took != 100*time.Second {
			t.Errorf("took %v; want 100s (the third sent once the first two settled)", took)
		}
		if w := sum.DailyWaitSeconds; w < 40 || w > 50 {
			t.Errorf("summary: %vs waited for the day; want 40 to 50", w)
		}
		first, _, _ := strings.Cut(logged.String(), "\n")
		if want := "1 waiting for the daily limit (attempts in flight hold its last units)"; !strings.Contains(first, want) {
			t.Errorf("first progress record lacks %q:\n%s", want, first)
		}
	})
}
