package cmd

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/llmrun/llmrun/checkpoint"
	"github.com/llmrun/llmrun/offline"
	"github.com/llmrun/llmrun/providers/mock"
)

// batchClock is a mock clock that moves only when told to.
type batchClock struct {
	mu sync.Mutex
	t  time.Time
}

func newBatchClock() *batchClock {
	return &batchClock{t: time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)}
}

func (c *batchClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *batchClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// batchArgs are the arguments of a quiet batch-mode run that polls every
// millisecond or two.
func batchArgs(in, out, provider string, extra ...string) []string {
	return append([]string{"batch", in, "--provider", provider, "--model", "m1", "-o", out, "--errors", out + ".err",
		"--quiet", "--poll-interval", "1ms", "--poll-max", "2ms"}, extra...)
}

// background runs llmrun in the background; cancel stops it as Ctrl-C
// would, and its exit code arrives on code.
func (c *cli) background(args []string) (code <-chan int, cancel context.CancelFunc) {
	c.stderr.Reset()
	ctx, cancel := context.WithCancel(context.Background())
	io := &IO{In: strings.NewReader(""), Out: &c.stdout, Err: &c.stderr, Getenv: func(k string) string { return c.env[k] }}
	ch := make(chan int, 1)
	go func() { ch <- Execute(ctx, io, args) }()
	return ch, cancel
}

// runUntil runs llmrun in the background and cancels it (as a crash or
// Ctrl-C during polling would) once stop reports true; it returns the exit
// code.
func (c *cli) runUntil(t *testing.T, stop func() bool, args ...string) int {
	t.Helper()
	code, cancel := c.background(args)
	defer cancel()
	deadline := time.After(20 * time.Second)
	for !stop() {
		select {
		case n := <-code:
			t.Fatalf("run ended (exit %d) before the stop condition", n)
		case <-deadline:
			t.Fatal("stop condition never met")
		case <-time.After(time.Millisecond):
		}
	}
	cancel()
	return <-code
}

func openBatchRecords(t *testing.T, out string) []offline.BatchRecord {
	t.Helper()
	st, err := checkpoint.Status(out)
	if err != nil {
		t.Fatal(err)
	}
	recs, err := offline.OpenBatches(st.State)
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

var batchProviders = []string{"openai", "anthropic", "gemini"}

func TestBatchModeMatchesSync(t *testing.T) {
	for _, provider := range batchProviders {
		t.Run(provider, func(t *testing.T) {
			m, url := mockServer(t, mock.Config{Seed: 1})
			in, prompts := promptFile(t, 30)
			c := &cli{env: mockEnv(url)}
			dir := t.TempDir()
			syncOut, batchOut := filepath.Join(dir, "sync.jsonl"), filepath.Join(dir, "batch.jsonl")
			if code := c.run(t, "batch", in, "--provider", provider, "--model", "m1", "-o", syncOut, "--errors", syncOut+".err", "--quiet"); code != 0 {
				t.Fatalf("sync: exit %d: %s", code, c.stderr.String())
			}
			if code := c.run(t, batchArgs(in, batchOut, provider, "--mode", "batch")...); code != 0 {
				t.Fatalf("batch: exit %d: %s", code, c.stderr.String())
			}
			syncLines, batchLines := readLines(t, syncOut), readLines(t, batchOut)
			if len(batchLines) != len(prompts) {
				t.Fatalf("%d batch lines, want %d", len(batchLines), len(prompts))
			}
			for id, p := range prompts {
				s, b := syncLines[id], batchLines[id]
				if !jsonEqual(t, s.Get("response.body").Raw, b.Get("response.body").Raw) {
					t.Errorf("%s: bodies differ:\nsync  %s\nbatch %s", id, s.Get("response.body").Raw, b.Get("response.body").Raw)
				}
				if answerText(b) != mock.Answer(p, 40) || b.Get("response.status_code").Int() != 200 || b.Get("error").Raw != "null" {
					t.Errorf("%s: %s", id, b.Raw)
				}
				l := b.Get("llmrun")
				if l.Get("mode").Str != "batch" || l.Get("provider").Str != provider || l.Get("model").Str != "m1" ||
					l.Get("input_tokens").Int() != s.Get("llmrun.input_tokens").Int() || l.Get("output_tokens").Int() != s.Get("llmrun.output_tokens").Int() {
					t.Errorf("%s: llmrun %s vs sync %s", id, l.Raw, s.Get("llmrun").Raw)
				}
			}
			if st := m.Stats(); st.BatchesCreated != 1 || st.BatchSucceeded != int64(len(prompts)) {
				t.Errorf("stats %+v", st)
			}
			if recs := openBatchRecords(t, batchOut); len(recs) != 0 {
				t.Errorf("records left: %+v", recs)
			}
		})
	}
}

func TestBatchModeCrashDuringPollingThenResume(t *testing.T) {
	for _, provider := range batchProviders {
		t.Run(provider, func(t *testing.T) {
			clk := newBatchClock()
			m, url := mockServer(t, mock.Config{Now: clk.Now, BatchDelay: time.Hour})
			in, prompts := promptFile(t, 20)
			out := filepath.Join(t.TempDir(), "out.jsonl")
			c := &cli{env: mockEnv(url)}
			polled := func() bool { st := m.Stats(); return st.BatchesCreated == 1 && st.BatchCalls >= 6 }
			if code := c.runUntil(t, polled, batchArgs(in, out, provider, "--mode", "batch")...); code != 130 {
				t.Fatalf("exit %d, want 130: %s", code, c.stderr.String())
			}
			recs := openBatchRecords(t, out)
			if len(recs) != 1 || len(recs[0].IDs) != len(prompts) || recs[0].Provider != provider {
				t.Fatalf("records %+v", recs)
			}
			if n := len(readLines(t, out)); n != 0 {
				t.Fatalf("%d results before the batch ended", n)
			}
			// A rerun while the batch still runs waits for it; a rerun after it ended collects it.
			clk.Advance(time.Hour)
			if code := c.run(t, batchArgs(in, out, provider, "--mode", "batch")...); code != 0 {
				t.Fatalf("rerun: exit %d: %s", code, c.stderr.String())
			}
			st := m.Stats()
			if st.BatchesCreated != 1 || st.BatchItems != int64(len(prompts)) || st.FilesUploaded > 1 {
				t.Errorf("a second batch was created: %+v", st)
			}
			lines := readLines(t, out)
			for id, p := range prompts {
				if answerText(lines[id]) != mock.Answer(p, 40) {
					t.Errorf("%s: %s", id, lines[id].Raw)
				}
			}
			if recs := openBatchRecords(t, out); len(recs) != 0 {
				t.Errorf("records left: %+v", recs)
			}
		})
	}
}

func TestBatchModeExpiredThenSync(t *testing.T) {
	for _, provider := range batchProviders {
		t.Run(provider, func(t *testing.T) {
			m, url := mockServer(t, mock.Config{BatchExpire: true})
			in, prompts := promptFile(t, 12)
			out := filepath.Join(t.TempDir(), "out.jsonl")
			c := &cli{env: mockEnv(url)}
			if code := c.run(t, batchArgs(in, out, provider, "--mode", "batch")...); code != ExitFailed {
				t.Fatalf("exit %d, want 1: %s", code, c.stderr.String())
			}
			lines, errs := readLines(t, out), readLines(t, out+".err")
			if len(lines) != 6 || len(errs) != 6 {
				t.Fatalf("%d results, %d errors; want 6 and 6", len(lines), len(errs))
			}
			for id, e := range errs {
				if e.Get("error.code").Str != "batch_expired" || e.Get("llmrun.mode").Str != "batch" {
					t.Errorf("%s: %s", id, e.Raw)
				}
			}
			kept := map[string]string{}
			for id, l := range lines {
				kept[id] = l.Get("response.body").Raw
			}
			if code := c.run(t, "batch", in, "--provider", provider, "--model", "m1", "-o", out, "--errors", out+".err", "--quiet", "--mode", "sync"); code != 0 {
				t.Fatalf("sync rerun: exit %d: %s", code, c.stderr.String())
			}
			lines = readLines(t, out)
			for id, p := range prompts {
				if answerText(lines[id]) != mock.Answer(p, 40) {
					t.Errorf("%s: %s", id, lines[id].Raw)
				}
				if body, ok := kept[id]; ok && lines[id].Get("response.body").Raw != body {
					t.Errorf("%s: a salvaged result was rewritten", id)
				}
			}
			if n := len(readLines(t, out+".err")); n != 0 {
				t.Errorf("%d errors left", n)
			}
			if st := m.Stats(); st.Duplicates != 0 || st.BatchesCreated != 1 {
				t.Errorf("stats %+v", st)
			}
		})
	}
}

func TestCancelCommand(t *testing.T) {
	for _, provider := range batchProviders {
		t.Run(provider, func(t *testing.T) {
			clk := newBatchClock()
			m, url := mockServer(t, mock.Config{Now: clk.Now, BatchDelay: 100 * time.Second})
			in, prompts := promptFile(t, 10)
			out := filepath.Join(t.TempDir(), "out.jsonl")
			c := &cli{env: mockEnv(url)}
			created := func() bool { return m.Stats().BatchesCreated == 1 }
			if code := c.runUntil(t, created, batchArgs(in, out, provider, "--mode", "batch")...); code != 130 {
				t.Fatalf("exit %d: %s", code, c.stderr.String())
			}
			clk.Advance(30 * time.Second) // a few requests answered
			if code := c.run(t, "cancel", out, "--no-wait"); code != 0 {
				t.Fatalf("cancel: exit %d: %s", code, c.stderr.String())
			}
			if m.Stats().BatchesCanceled != 1 || !strings.Contains(c.stderr.String(), "cancel") {
				t.Fatalf("stats %+v, stderr %s", m.Stats(), c.stderr.String())
			}
			// A live run must not run requests that sit in the cancelling batch.
			syncArgs := []string{"batch", in, "--provider", provider, "--model", "m1", "-o", out, "--errors", out + ".err", "--quiet"}
			if code := c.run(t, syncArgs...); code != ExitUsage || !strings.Contains(c.stderr.String(), "open provider batch") {
				t.Fatalf("sync over an open batch: exit %d: %s", code, c.stderr.String())
			}
			clk.Advance(10 * time.Second)
			if code := c.run(t, "cancel", out, "--poll-interval", "1ms"); code != 0 {
				t.Fatalf("cancel (wait): exit %d: %s", code, c.stderr.String())
			}
			st := m.Stats()
			lines, errs := readLines(t, out), readLines(t, out+".err")
			if st.BatchSucceeded == 0 || st.BatchCanceledItems == 0 || len(lines) != int(st.BatchSucceeded) || len(errs) != int(st.BatchCanceledItems) {
				t.Fatalf("%d results, %d errors; stats %+v", len(lines), len(errs), st)
			}
			for id, e := range errs {
				if e.Get("error.code").Str != "batch_cancelled" {
					t.Errorf("%s: %s", id, e.Raw)
				}
			}
			if recs := openBatchRecords(t, out); len(recs) != 0 {
				t.Fatalf("records left %+v", recs)
			}
			if code := c.run(t, syncArgs...); code != 0 {
				t.Fatalf("sync rerun: exit %d: %s", code, c.stderr.String())
			}
			lines = readLines(t, out)
			for id, p := range prompts {
				if answerText(lines[id]) != mock.Answer(p, 40) {
					t.Errorf("%s: %s", id, lines[id].Raw)
				}
			}
			if st := m.Stats(); st.Duplicates != 0 || st.BatchesCreated != 1 {
				t.Errorf("stats %+v", st)
			}
			if code := c.run(t, "cancel", out); code != 0 || !strings.Contains(c.stderr.String(), "no open batches") {
				t.Errorf("cancel with nothing open: exit %d: %s", code, c.stderr.String())
			}
		})
	}
}

func TestBatchModeSplitsOversizedInput(t *testing.T) {
	for _, provider := range batchProviders {
		t.Run(provider, func(t *testing.T) {
			const maxBytes = 1500 // a handful of requests
			m, url := mockServer(t, mock.Config{BatchMaxItems: 4, BatchMaxBytes: maxBytes})
			in, prompts := promptFile(t, 22)
			c := &cli{env: mockEnv(url)}
			dir := t.TempDir()
			out := filepath.Join(dir, "items.jsonl")
			if code := c.run(t, batchArgs(in, out, provider, "--mode", "batch", "--batch-max-items", "4")...); code != 0 {
				t.Fatalf("exit %d: %s", code, c.stderr.String())
			}
			if st := m.Stats(); st.BatchesCreated != 6 || st.BadRequests != 0 || len(readLines(t, out)) != len(prompts) {
				t.Fatalf("by items: stats %+v", st)
			}
			// A mock that enforces the byte limit only: a wrong split is a failed batch.
			m, url = mockServer(t, mock.Config{BatchMaxBytes: maxBytes})
			c.env = mockEnv(url)
			out = filepath.Join(dir, "bytes.jsonl")
			if code := c.run(t, batchArgs(in, out, provider, "--mode", "batch", "--batch-max-bytes", fmt.Sprint(maxBytes))...); code != 0 {
				t.Fatalf("exit %d: %s", code, c.stderr.String())
			}
			st := m.Stats()
			if st.BatchesCreated < 3 || st.BadRequests != 0 || st.BatchErrored != 0 || len(readLines(t, out)) != len(prompts) {
				t.Fatalf("by bytes: stats %+v", st)
			}
		})
	}
}

func TestModeAuto(t *testing.T) {
	m, url := mockServer(t, mock.Config{})
	in, prompts := promptFile(t, 10)
	c := &cli{env: mockEnv(url)}
	dir := t.TempDir()
	tests := []struct {
		name    string
		args    []string
		batches int64
		log     string
	}{
		{"over threshold", []string{"--batch-threshold", "5"}, 1, "10 pending requests >= --batch-threshold 5 and no --deadline"},
		{"under threshold", []string{"--batch-threshold", "50"}, 0, "10 pending requests < --batch-threshold 50"},
		{"deadline near", []string{"--batch-threshold", "5", "--deadline", "2h"}, 0, "sooner than the batch API's 24h window"},
		{"deadline far", []string{"--batch-threshold", "5", "--deadline", "48h"}, 1, "the deadline is 48h0m0s away"},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := m.Stats().BatchesCreated
			out := filepath.Join(dir, fmt.Sprintf("out%d.jsonl", i))
			args := append(batchArgs(in, out, "openai", "--mode", "auto"), tc.args...)
			if code := c.run(t, args...); code != 0 {
				t.Fatalf("exit %d: %s", code, c.stderr.String())
			}
			if got := m.Stats().BatchesCreated - before; got != tc.batches || !strings.Contains(c.stderr.String(), tc.log) {
				t.Errorf("%d batches; stderr %s", got, c.stderr.String())
			}
			if n := len(readLines(t, out)); n != len(prompts) {
				t.Errorf("%d results", n)
			}
		})
	}
	for _, bad := range [][]string{{"--mode", "later"}, {"--deadline", "soon"}} {
		if code := c.run(t, append([]string{"batch", in, "--provider", "openai", "--quiet"}, bad...)...); code != ExitUsage {
			t.Errorf("%v: exit %d", bad, code)
		}
	}
}

// TestBatchModeStateHoldsNoURLCredentials: with credentials in the base URL
// (flag or environment), the state file written while a batch is open holds
// none of them, and the rerun and cancel, which take them from the flags or
// environment again, still reach the batch.
func TestBatchModeStateHoldsNoURLCredentials(t *testing.T) {
	for _, provider := range batchProviders {
		t.Run(provider, func(t *testing.T) {
			clk := newBatchClock()
			m, url := mockServer(t, mock.Config{Now: clk.Now, BatchDelay: time.Hour})
			credURL := strings.Replace(url, "http://", "http://batch-user:s3cret-pw@", 1)
			in, prompts := promptFile(t, 6)
			out := filepath.Join(t.TempDir(), "out.jsonl")
			c := &cli{env: mockEnv(credURL)}
			created := func() bool { return m.Stats().BatchesCreated == 1 }
			if code := c.runUntil(t, created, batchArgs(in, out, provider, "--mode", "batch")...); code != 130 {
				t.Fatalf("exit %d: %s", code, c.stderr.String())
			}
			raw, err := os.ReadFile(out + ".state.json")
			if err != nil {
				t.Fatal(err)
			}
			recs := openBatchRecords(t, out)
			if bytes.Contains(raw, []byte("s3cret")) || bytes.Contains(raw, []byte("batch-user")) || len(recs) != 1 || strings.Contains(recs[0].BaseURL, "@") {
				t.Fatalf("state file:\n%s", raw)
			}
			if code := c.run(t, "cancel", out, "--no-wait"); code != 0 || m.Stats().BatchesCanceled != 1 {
				t.Fatalf("cancel: exit %d: %s", code, c.stderr.String())
			}
			clk.Advance(time.Hour)
			if code := c.run(t, batchArgs(in, out, provider, "--mode", "batch")...); code != ExitFailed {
				t.Fatalf("rerun: exit %d: %s", code, c.stderr.String())
			}
			if errs := readLines(t, out+".err"); len(errs) != len(prompts) {
				t.Fatalf("%d cancelled requests collected, want %d", len(errs), len(prompts))
			}
			if strings.Contains(c.stderr.String(), "s3cret") {
				t.Errorf("credentials in the log: %s", c.stderr.String())
			}
		})
	}
}
