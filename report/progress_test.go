package report

import (
	"bytes"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/llmrun/llmrun/pricing"
)

// typical is a run under way, with every part of the line present.
var typical = snapshot{
	total: 1_000_000, done: 451_234, succeeded: 450_000, failed: 1_234, pending: 548_766,
	rateLimited: 321, tokensIn: 61_234_567, tokensOut: 17_654_321, spent: pricing.FromUSD(123.4567),
	elapsed: 90 * time.Minute, rate: 83.6, eta: 109*time.Minute + 20*time.Second,
	status: "provider down (connection refused by 10.0.0.1:8000), holding",
}

func TestProgressLogLine(t *testing.T) {
	got := typical.line()
	for _, want := range []string{"451234/1000000 done (450000 succeeded, 0 skipped)", "1234 failed", "548766 pending",
		"83.6/s, eta 1h49m", "61.2M in / 17.7M out tokens", "321 429s", "$123.46 spent", "provider down"} {
		if !strings.Contains(got, want) {
			t.Errorf("%q lacks %q", got, want)
		}
	}
}

// TestProgressDrawsWithinWidth runs the reporter on a fake clock: every
// line it draws on the terminal fits 80 columns, and Stop clears it.
func TestProgressDrawsWithinWidth(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var out bytes.Buffer
		w := writerFunc(func(p []byte) (int, error) { mu.Lock(); defer mu.Unlock(); return out.Write(p) })
		c := new(Counters)
		c.Total.Store(1_000_000)
		p := &Progress{Mode: ProgressBar, Out: w, Width: func() int { return 80 },
			Status: func() string { return "provider down (connection refused by 127.0.0.1:9), holding" }}
		p.Start(c)
		for i := range 20 {
			c.Succeeded.Add(int64(1000 * i))
			c.Failed.Add(int64(i))
			c.InputTokens.Add(1_234_567)
			c.RateLimited.Add(3)
			time.Sleep(300 * time.Millisecond)
		}
		p.Stop()
		mu.Lock()
		defer mu.Unlock()
		draws := strings.Split(out.String(), "\r")
		if len(draws) < 10 {
			t.Fatalf("%d draws in 6s", len(draws))
		}
		for _, d := range draws[1 : len(draws)-1] {
			d = strings.TrimSuffix(d, "\x1b[K")
			if runes(d) > 80 {
				t.Errorf("a draw of %d columns: %q", runes(d), d)
			}
		}
		if last := draws[len(draws)-1]; last != "\x1b[K" {
			t.Errorf("Stop left %q, want the line cleared", last)
		}
	})
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// TestProgressLogs: without a terminal, progress is a log record with the
// figures as a group (for JSON logs).
func TestProgressLogs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var out bytes.Buffer
		c := new(Counters)
		c.Total.Store(10)
		c.Succeeded.Store(4)
		p := &Progress{Mode: ProgressLog, Log: slog.New(slog.NewJSONHandler(&out, nil)), Interval: time.Second}
		p.Start(c)
		time.Sleep(1500 * time.Millisecond)
		p.Stop()
		if got := out.String(); !strings.Contains(got, `"msg":"progress 4/10 done`) || !strings.Contains(got, `"progress":{"total":10,"done":4,"succeeded":4`) {
			t.Errorf("log: %s", got)
		}
	})
}

func TestFormatting(t *testing.T) {
	for _, tc := range []struct{ got, want string }{
		{durString(45 * time.Second), "45s"}, {durString(200 * time.Second), "3m20s"}, {durString(2*time.Hour + 5*time.Minute), "2h05m"},
		{count(950), "950"}, {count(1234), "1.2k"}, {count(3_400_000), "3.4M"}, {count(1_100_000_000), "1.1G"},
		{plural(1, "request", "requests"), "1 request"}, {plural(0, "request", "requests"), "0 requests"},
		{times(1), "once"}, {times(2), "twice"}, {times(5), "5 times"},
		{cut("abcdef", 4), "abc…"}, {cut("abc", 4), "abc"},
	} {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
}

func TestSummaryText(t *testing.T) {
	s := &Summary{Requests: 1, Succeeded: 0, Failed: 1, Attempts: 1, Retries: 1, WallSeconds: 72,
		RequestSeconds: 100, ErrorsFile: "in.errors.jsonl", FailuresByCause: map[string]int64{"HTTP 400: bad": 1},
		BreakerOpenings: 1, Limits: []KeyLimits{
			{Learned: true, RPM: 1e9, ITPM: 30000, WaitBySeconds: map[string]float64{"input": 40, "requests": 2}},
			{WaitBySeconds: map[string]float64{"input": 2}},
		}}
	got := s.Text()
	for _, want := range []string{"1 request: 0 succeeded, 1 failed", "1 attempt (1 retry,", "failed: HTTP 400: bad (1)",
		"failures in in.errors.jsonl", "42% of request time waiting for input TPM", "rpm 1000000000, itpm 30000", "breaker opened once"} {
		if !strings.Contains(got, want) {
			t.Errorf("%q lacks %q", got, want)
		}
	}
	for _, bad := range []string{"1 requests", "1 attempts", "e+09", "1 retries"} {
		if strings.Contains(got, bad) {
			t.Errorf("%q says %q", got, bad)
		}
	}
	s.Failed, s.FailuresByCause = 0, nil
	if got := s.Text(); strings.Contains(got, "in.errors.jsonl") {
		t.Errorf("nothing failed, yet the errors file is named: %q", got)
	}
	s.Retries = 0
	if got := s.Text(); !strings.Contains(got, "1 attempt;") || strings.Contains(got, "retr") {
		t.Errorf("no retries, yet they are detailed: %q", got)
	}
	// The demo's 0.1s run: 20 requests, 0.09s of request time, 0.08s of it waiting.
	short := &Summary{Requests: 20, Succeeded: 20, RequestSeconds: 0.09, WallSeconds: 0.1,
		Limits: []KeyLimits{{WaitBySeconds: map[string]float64{"requests": 0.08}}}}
	if got := short.Text(); strings.Contains(got, "waiting") {
		t.Errorf("a wait of 0.08s in all is reported: %q", got)
	}
	if got := (&Summary{Requests: 2}).OneLine(); !strings.HasPrefix(got, "llmrun: 2 requests:") {
		t.Errorf("OneLine %q", got)
	}
	_ = fmt.Sprint
}
