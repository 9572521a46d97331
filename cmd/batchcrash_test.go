package cmd

import (
	"bytes"
	"flag"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/llmrun/llmrun/providers/mock"
)

// batchKills is the number of kills per provider of
// TestKillDuringBatchCreateThenRerun (go test ./cmd -run KillDuringBatch
// -args -batch-kills 40).
var batchKills = flag.Int("batch-kills", 10, "kills per provider in TestKillDuringBatchCreateThenRerun")

// TestKillDuringBatchCreateThenRerun (issue 9 item 4): llmrun is killed
// with SIGKILL at seeded random moments while it creates provider batches
// (from its first call to a batch endpoint, through uploads and create
// calls the mock answers only after a delay, to the first polls), then run
// again. Each trial must end with every request answered, exactly one
// batch created per group of requests, no input file uploaded twice, and
// no request completed twice by the mock.
func TestKillDuringBatchCreateThenRerun(t *testing.T) {
	if testing.Short() {
		t.Skip("subprocess crash test")
	}
	trials := *batchKills
	const (
		requests = 120
		perBatch = 60 // two batches per trial
		window   = 160 * time.Millisecond
	)
	for pi, provider := range batchProviders {
		t.Run(provider, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(9, uint64(pi)))
			var kills, withIntent, adopted int
			for trial := range trials {
				m, url := mockServer(t, mock.Config{BatchCallDelay: 30 * time.Millisecond})
				in, prompts := promptFile(t, requests)
				out := filepath.Join(t.TempDir(), "out.jsonl")
				args := []string{"batch", in, "--provider", provider, "--model", "m1", "-o", out, "--errors", out + ".err",
					"--mode", "batch", "--poll-interval", "5ms", "--poll-max", "10ms", "--batch-max-items", fmt.Sprint(perBatch),
					"--batch-create-grace", "300ms"}
				killed := killDuringCreate(t, m, url, time.Duration(rng.Int64N(int64(window))), args)
				if killed {
					kills++
				}
				state, _ := os.ReadFile(out + ".state.json")
				if bytes.Contains(state, []byte(`"batch:intent-`)) {
					withIntent++
				}
				createdBefore := m.Stats().BatchesCreated
				// The provider finishes what the dead client sent before the rerun looks.
				for deadline := time.Now().Add(10 * time.Second); m.BatchCallsInFlight() > 0; time.Sleep(time.Millisecond) {
					if time.Now().After(deadline) {
						t.Fatal("mock still busy 10s after the kill")
					}
				}
				var stderr bytes.Buffer
				c := batchProcess(url, &stderr, args...)
				c.Stderr = &stderr
				t0 := time.Now()
				if err := c.Run(); exitCode(err) != 0 {
					t.Fatalf("trial %d: rerun exit %d: %s", trial, exitCode(err), stderr.String())
				}
				if strings.Contains(stderr.String(), "found batch") {
					adopted++
				}
				if testing.Verbose() {
					t.Logf("trial %d: rerun took %v", trial, time.Since(t0))
				}
				checkBatchTrial(t, trial, m, url, provider, out, prompts, requests/perBatch, createdBefore)
			}
			t.Logf("%s: %d trials, %d killed during creation (%d left an intent, %d batches adopted by the rerun); every trial: %d batches created, 0 requests completed twice",
				provider, trials, kills, withIntent, adopted, requests/perBatch)
		})
	}
}

// batchProcess prepares llmrun as a subprocess against the mock at url, for
// either provider.
func batchProcess(url string, stderr *bytes.Buffer, args ...string) *exec.Cmd {
	c := exec.Command(os.Args[0], args...)
	c.Env = append(os.Environ(), "LLMRUN_TEST_MAIN=1")
	for k, v := range mockEnv(url) {
		c.Env = append(c.Env, k+"="+v)
	}
	c.Stderr = stderr
	return c
}

// killDuringCreate starts llmrun and kills it wait after its first call to
// a batch endpoint; it reports whether the kill came before the run ended.
func killDuringCreate(t *testing.T, m *mock.Server, url string, wait time.Duration, args []string) bool {
	t.Helper()
	var stderr bytes.Buffer
	c := batchProcess(url, &stderr, args...)
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- c.Wait() }()
	deadline := time.After(20 * time.Second)
	for {
		if m.Stats().BatchCalls > 0 {
			break
		}
		select {
		case err := <-done:
			t.Fatalf("run ended (exit %d) before creating a batch: %s", exitCode(err), stderr.String())
		case <-deadline:
			t.Fatal("no batch call within 20s")
		case <-time.After(200 * time.Microsecond):
		}
	}
	select {
	case err := <-done:
		if code := exitCode(err); code != 0 {
			t.Fatalf("run exited %d: %s", code, stderr.String())
		}
		return false
	case <-time.After(wait):
		c.Process.Signal(syscall.SIGKILL)
		<-done
		return true
	}
}

// checkBatchTrial asserts one trial's outcome at the mock and in the output.
func checkBatchTrial(t *testing.T, trial int, m *mock.Server, url, provider, out string, prompts map[string]string, groups int, createdBefore int64) {
	t.Helper()
	lines := readLines(t, out)
	if len(lines) != len(prompts) {
		t.Fatalf("trial %d: %d results, want %d", trial, len(lines), len(prompts))
	}
	for id, p := range prompts {
		if answerText(lines[id]) != mock.Answer(p, 40) {
			t.Fatalf("trial %d: %s: %s", trial, id, lines[id].Raw)
		}
	}
	// Listing settles every batch at the mock, so a second batch nobody
	// polls would complete its requests here and show.
	path := "/v1/batches?limit=100"
	if provider == "anthropic" {
		path = "/v1/messages/batches?limit=1000"
	}
	resp, err := http.Get(url + path)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	st := m.Stats()
	if st.BatchesCreated != int64(groups) || (provider == "openai" && st.FilesUploaded != int64(groups)) {
		t.Fatalf("trial %d: %d batches created (%d before the rerun), %d files uploaded; want %d", trial, st.BatchesCreated, createdBefore, st.FilesUploaded, groups)
	}
	total := 0
	for id, n := range m.BatchCompletions() {
		if n != 1 {
			t.Errorf("trial %d: %s completed %d times", trial, id, n)
		}
		total += n
	}
	if total != len(prompts) || st.Duplicates != 0 {
		t.Fatalf("trial %d: %d completions, %d duplicates; want %d and 0", trial, total, st.Duplicates, len(prompts))
	}
}

// TestBatchStateFileDeletedWhileOpen: with OpenAI, deleting the state file
// while a batch is open does not make the rerun pay twice: it finds the
// batch by this output's label and collects it.
func TestBatchStateFileDeletedWhileOpen(t *testing.T) {
	clk := &batchClock{t: time.Now()}
	m, url := mockServer(t, mock.Config{Now: clk.Now, BatchDelay: time.Hour})
	in, prompts := promptFile(t, 30)
	out := filepath.Join(t.TempDir(), "out.jsonl")
	c := &cli{env: mockEnv(url)}
	args := batchArgs(in, out, "openai", "--mode", "batch", "--batch-max-items", "20")
	created := func() bool { return m.Stats().BatchesCreated == 2 }
	if code := c.runUntil(t, created, args...); code != 130 {
		t.Fatalf("exit %d: %s", code, c.stderr.String())
	}
	if err := os.Remove(out + ".state.json"); err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Hour)
	if code := c.runUnless(t, func() bool { return m.Stats().BatchesCreated > 2 }, args...); code != 0 {
		t.Fatalf("rerun: exit %d: %s", code, c.stderr.String())
	}
	lines := readLines(t, out)
	for id, p := range prompts {
		if answerText(lines[id]) != mock.Answer(p, 40) {
			t.Errorf("%s: %s", id, lines[id].Raw)
		}
	}
	if st := m.Stats(); st.BatchesCreated != 2 || st.Duplicates != 0 || st.FilesUploaded != 2 {
		t.Errorf("stats %+v", st)
	}
}

// runUnless runs llmrun and fails the test as soon as bad reports true
// (a run that would otherwise wait for a batch it should not have made).
func (c *cli) runUnless(t *testing.T, bad func() bool, args ...string) int {
	t.Helper()
	code, cancel := c.background(args)
	defer cancel()
	for {
		select {
		case n := <-code:
			return n
		case <-time.After(time.Millisecond):
			if bad() {
				cancel()
				<-code
				t.Fatalf("the run went wrong: %s", c.stderr.String())
			}
		}
	}
}
