package cmd

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/llmrun/llmrun/providers/mock"
)

// TestRerunRetriesEarlierFailures: requests that failed in one run are
// retried by the rerun (and leave the errors file once they succeed), or
// kept failed with --no-retry-failed; the output never gets a second line.
func TestRerunRetriesEarlierFailures(t *testing.T) {
	var refuse atomic.Bool
	refuse.Store(true)
	healthy := mock.New(mock.Config{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if refuse.Load() && strings.Contains(r.URL.Path, "completions") {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(400)
			w.Write([]byte(`{"error":{"message":"bad","type":"invalid_request_error","param":null,"code":"bad_thing"}}`))
			return
		}
		healthy.ServeHTTP(w, r)
	}))
	defer srv.Close()
	in, prompts := promptFile(t, 5)
	base := strings.TrimSuffix(in, ".jsonl")
	args := []string{"batch", in, "--provider", "openai", "--model", "m", "--quiet"}
	c := &cli{env: mockEnv(srv.URL)}
	if code := c.run(t, args...); code != ExitFailed {
		t.Fatalf("first run: exit %d, want 1: %s", code, c.stderr.String())
	}
	if got := readLines(t, base+".errors.jsonl"); len(got) != len(prompts) {
		t.Fatalf("%d failures recorded, want %d", len(got), len(prompts))
	}
	refuse.Store(false)
	if code := c.run(t, append(args, "--no-retry-failed")...); code != ExitFailed {
		t.Fatalf("--no-retry-failed rerun: exit %d, want 1 (the failures stand): %s", code, c.stderr.String())
	}
	if got := readLines(t, base+".out.jsonl"); len(got) != 0 {
		t.Fatalf("--no-retry-failed answered %d requests", len(got))
	}
	if code := c.run(t, args...); code != 0 {
		t.Fatalf("rerun: exit %d: %s", code, c.stderr.String())
	}
	if got := readLines(t, base+".out.jsonl"); len(got) != len(prompts) {
		t.Fatalf("%d results after the rerun, want %d", len(got), len(prompts))
	}
	if got := readLines(t, base+".errors.jsonl"); len(got) != 0 {
		t.Fatalf("errors file still holds %d requests that have succeeded", len(got))
	}
	// A third run has nothing to do.
	if code := c.run(t, args...); code != 0 || !strings.Contains(c.stderr.String(), "5 skipped") {
		t.Fatalf("third run: exit %d: %s", code, c.stderr.String())
	}
}

// TestChangedInputNeedsForce: an input edited since the checkpoint was made
// is reported (exit 2) unless --force.
func TestChangedInputNeedsForce(t *testing.T) {
	_, url := mockServer(t, mock.Config{})
	in, _ := promptFile(t, 3)
	c := &cli{env: mockEnv(url)}
	args := []string{"batch", in, "--provider", "openai", "--model", "m", "--quiet"}
	if code := c.run(t, args...); code != 0 {
		t.Fatalf("exit %d: %s", code, c.stderr.String())
	}
	f, _ := os.OpenFile(in, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(`{"custom_id":"new","prompt":"one more"}` + "\n")
	f.Close()
	if code := c.run(t, args...); code != ExitUsage || !strings.Contains(c.stderr.String(), "--force") {
		t.Fatalf("changed input: exit %d, want 2 mentioning --force: %s", code, c.stderr.String())
	}
	if code := c.run(t, append(args, "--force")...); code != 0 {
		t.Fatalf("--force: exit %d: %s", code, c.stderr.String())
	}
	if got := readLines(t, strings.TrimSuffix(in, ".jsonl")+".out.jsonl"); len(got) != 4 {
		t.Fatalf("%d results, want 4", len(got))
	}
}

func TestStatusCommand(t *testing.T) {
	_, url := mockServer(t, mock.Config{})
	in, _ := promptFile(t, 4)
	c := &cli{env: mockEnv(url)}
	// Answer half of it: an output holding two lines of a previous run.
	if code := c.run(t, "batch", in, "--provider", "openai", "--model", "m", "--quiet"); code != 0 {
		t.Fatal(c.stderr.String())
	}
	out := strings.TrimSuffix(in, ".jsonl") + ".out.jsonl"
	b, _ := os.ReadFile(out)
	lines := strings.SplitAfter(string(b), "\n")
	os.WriteFile(out, []byte(lines[0]+lines[1]), 0o644)
	if code := c.run(t, "status", in); code != 0 {
		t.Fatal(c.stderr.String())
	}
	if got := c.stdout.String(); !strings.Contains(got, "2 done, 0 failed, 2 pending") {
		t.Errorf("status says %q", got)
	}
	if code := c.run(t, "status", filepath.Join(t.TempDir(), "none.jsonl")); code == 0 {
		t.Errorf("status of a missing checkpoint succeeded: %s", c.stdout.String())
	}
}

// TestShardsPartitionTheInput: N processes given the same file and
// --shard I/N answer every request exactly once between them.
func TestShardsPartitionTheInput(t *testing.T) {
	m, url := mockServer(t, mock.Config{})
	in, prompts := promptFile(t, 60)
	c := &cli{env: mockEnv(url)}
	seen := map[string]string{}
	for i := 1; i <= 3; i++ {
		shard := fmt.Sprintf("%d/3", i)
		if code := c.run(t, "batch", in, "--provider", "openai", "--model", "m", "--quiet", "--shard", shard); code != 0 {
			t.Fatalf("shard %s: exit %d: %s", shard, code, c.stderr.String())
		}
		out := strings.TrimSuffix(in, ".jsonl") + fmt.Sprintf(".shard-%d-of-3.out.jsonl", i)
		lines := readLines(t, out)
		if len(lines) == 0 || len(lines) == len(prompts) {
			t.Errorf("shard %s answered %d of %d requests", shard, len(lines), len(prompts))
		}
		for id := range lines {
			if prev, dup := seen[id]; dup {
				t.Errorf("%s answered by shards %s and %s", id, prev, shard)
			}
			seen[id] = shard
		}
	}
	if len(seen) != len(prompts) || m.Stats().Attempts != int64(len(prompts)) {
		t.Fatalf("shards answered %d of %d requests with %d attempts", len(seen), len(prompts), m.Stats().Attempts)
	}
	if code := c.run(t, "batch", in, "--shard", "4/3", "--provider", "mock"); code != ExitUsage {
		t.Errorf("--shard 4/3: exit %d, want 2", code)
	}
}
