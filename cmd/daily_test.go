package cmd

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/llmrun/llmrun/providers/mock"
)

// Daily limits end to end: a day spent stops the run with exit 3 and
// nothing lost; the rerun after the reset finishes. The mock's day runs
// on its own clock (advanced by the test), llmrun's own --rpd on IO.Now.

// runAt runs llmrun with IO.Now reading now.
func (c *cli) runAt(t *testing.T, now func() time.Time, args ...string) int {
	t.Helper()
	c.stderr.Reset()
	c.stdout.Reset()
	io := &IO{In: strings.NewReader(""), Out: &c.stdout, Err: &c.stderr, Getenv: func(k string) string { return c.env[k] }, Now: now}
	return Execute(context.Background(), io, args)
}

// TestDailyLimitFromTheProvider: the provider refuses for the day after
// three requests (Gemini's PerDay quota, OpenAI's "per day (RPD)"): exit
// 3 with the reset, the answers kept and nothing failed; a rerun the same
// day is refused again; the rerun after the provider's reset finishes.
func TestDailyLimitFromTheProvider(t *testing.T) {
	for _, provider := range []string{"gemini", "openai"} {
		t.Run(provider, func(t *testing.T) {
			clk := newBatchClock() // 2026-06-01 00:00 UTC
			clk.Advance(10 * time.Hour)
			m, url := mockServer(t, mock.Config{RPD: 3, Now: clk.Now})
			in, prompts := promptFile(t, 5)
			out := filepath.Join(t.TempDir(), "out.jsonl")
			c := &cli{env: mockEnv(url)}
			args := []string{"batch", in, "--provider", provider, "--model", "m1", "-o", out, "--errors", out + ".err", "--quiet", "--concurrency", "1",
				"--summary", out + ".sum"}
			if code := c.run(t, args...); code != ExitAborted {
				t.Fatalf("exit %d, want 3: %s", code, c.stderr.String())
			}
			if msg := c.stderr.String(); !strings.Contains(msg, "daily limit reached; resets at") || !strings.Contains(msg, "resume with") {
				t.Errorf("stderr %q", msg)
			}
			if n, e := len(readLines(t, out)), len(readLines(t, out+".err")); n != 3 || e != 0 {
				t.Fatalf("%d answers, %d failures; want 3 and none", n, e)
			}
			sum, _ := os.ReadFile(out + ".sum")
			if s := gjson.ParseBytes(sum); s.Get("pending").Int() != 2 || s.Get("exit_code").Int() != 3 || s.Get("daily.0.refused_until").Str == "" {
				t.Errorf("summary %s", sum)
			}
			if code := c.run(t, args...); code != ExitAborted || m.Stats().Completed != 3 {
				t.Fatalf("the same day: exit %d, stats %+v", code, m.Stats())
			}
			clk.Advance(14 * time.Hour) // the mock's midnight
			if code := c.run(t, args...); code != 0 {
				t.Fatalf("after the reset: exit %d: %s", code, c.stderr.String())
			}
			lines := readLines(t, out)
			for id, p := range prompts {
				if answerText(lines[id]) != mock.Answer(p, 40) {
					t.Errorf("%s: %s", id, lines[id].Raw)
				}
			}
			if st := m.Stats(); st.Completed != 5 || st.Duplicates != 0 || st.DayLimited != 2 {
				t.Errorf("stats %+v", st)
			}
		})
	}
}

// TestDailyLimitOwn: --rpd stops the run after the day's requests; a
// rerun the same day sends nothing; the rerun the next day finishes.
func TestDailyLimitOwn(t *testing.T) {
	m, url := mockServer(t, mock.Config{})
	in, prompts := promptFile(t, 5)
	out := filepath.Join(t.TempDir(), "out.jsonl")
	c := &cli{env: mockEnv(url)}
	now := time.Date(2026, 6, 1, 9, 0, 0, 0, time.Local)
	clock := func() time.Time { return now }
	args := []string{"batch", in, "--provider", "openai", "--model", "m1", "-o", out, "--quiet", "--concurrency", "1", "--rpd", "3"}
	if code := c.runAt(t, clock, args...); code != ExitAborted || m.Stats().Attempts != 3 {
		t.Fatalf("exit %d, %d sent: %s", code, m.Stats().Attempts, c.stderr.String())
	}
	if !strings.Contains(c.stderr.String(), "daily limit reached; resets at 2026-06-02T00:00:00") || !strings.Contains(c.stderr.String(), "3 requests per day") {
		t.Errorf("stderr %q", c.stderr.String())
	}
	now = now.Add(10 * time.Hour)
	if code := c.runAt(t, clock, args...); code != ExitAborted || m.Stats().Attempts != 3 {
		t.Fatalf("the same day: exit %d, %d sent", code, m.Stats().Attempts)
	}
	now = now.Add(6 * time.Hour) // the next day
	if code := c.runAt(t, clock, args...); code != 0 || m.Stats().Attempts != 5 || len(readLines(t, out)) != len(prompts) {
		t.Fatalf("the next day: exit %d, %d sent: %s", code, m.Stats().Attempts, c.stderr.String())
	}
}

// TestDailyLimitFromHeaders: a provider whose headers report its day
// (Groq's requests headers by its rule; an x-ratelimit window hours from
// its reset, for any OpenAI-speaking one) is never refused: the run stops
// when the headers say the day is spent.
func TestDailyLimitFromHeaders(t *testing.T) {
	for _, tc := range []struct {
		provider string
		at       time.Duration // the mock's time of day
	}{
		{"openai", 10 * time.Hour},              // resets in 14 h: a day's window
		{"groq", 23*time.Hour + 30*time.Minute}, // resets in 30 m: per day by Groq's rule
	} {
		t.Run(tc.provider, func(t *testing.T) {
			clk := newBatchClock()
			clk.Advance(tc.at)
			m, url := mockServer(t, mock.Config{RPD: 3, DayHeaders: true, Now: clk.Now})
			in, _ := promptFile(t, 5)
			out := filepath.Join(t.TempDir(), "out.jsonl")
			env := mockEnv(url)
			env["GROQ_API_KEY"], env["GROQ_BASE_URL"] = "gsk-test-0123456789", url+"/v1"
			c := &cli{env: env}
			if code := c.run(t, "batch", in, "--provider", tc.provider, "--model", "m1", "-o", out, "--quiet", "--concurrency", "1"); code != ExitAborted {
				t.Fatalf("exit %d, want 3: %s", code, c.stderr.String())
			}
			if st := m.Stats(); st.Completed != 3 || st.RateLimited != 0 || !strings.Contains(c.stderr.String(), "3 requests per day") {
				t.Fatalf("stats %+v: %s", st, c.stderr.String())
			}
		})
	}
}
