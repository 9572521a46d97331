package cmd

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

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

// editInput rewrites the prompt file: the prompts of ids edit get a new text
// and add new lines are appended. It returns the prompts now in the file.
func editInput(t *testing.T, in string, prompts map[string]string, edit []string, add int) map[string]string {
	t.Helper()
	now := maps.Clone(prompts)
	for _, id := range edit {
		now[id] = "Edited: " + prompts[id] + " Answer in one word."
	}
	for i := range add {
		now[fmt.Sprintf("new-%02d", i)] = fmt.Sprintf("A new question, number %d.", i)
	}
	var b strings.Builder
	for _, id := range slices.Sorted(maps.Keys(now)) {
		line, _ := json.Marshal(map[string]any{"custom_id": id, "prompt": now[id], "max_tokens": 40})
		b.Write(line)
		b.WriteByte('\n')
	}
	if err := os.WriteFile(in, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return now
}

// checkAnswers checks the output holds exactly one line per id of prompts,
// each the mock's answer to the current prompt.
func checkAnswers(t *testing.T, out string, prompts map[string]string) {
	t.Helper()
	lines := readLines(t, out) // fails on a repeated id or a torn line
	if len(lines) != len(prompts) {
		t.Fatalf("%d lines, want %d", len(lines), len(prompts))
	}
	for id, p := range prompts {
		if got, want := answerText(lines[id]), mock.Answer(p, 40); got != want {
			t.Errorf("%s: %q, want the answer to %q", id, got, p)
		}
	}
}

// TestNightlyRerunFollowsEditedInput is issue 11's nightly job: 200
// requests, then 10 prompts edited and 5 lines added, and the same command
// again: exactly the 15 changed or new requests reach the server, and the
// output holds 205 lines, one per id, each answering the current prompt.
func TestNightlyRerunFollowsEditedInput(t *testing.T) {
	m, url := mockServer(t, mock.Config{Seed: 4})
	in, prompts := promptFile(t, 200)
	out := strings.TrimSuffix(in, ".jsonl") + ".out.jsonl"
	c := &cli{env: mockEnv(url)}
	args := []string{"batch", in, "--provider", "openai", "--model", "m", "--quiet"}
	if code := c.run(t, args...); code != 0 {
		t.Fatalf("night 1: exit %d: %s", code, c.stderr.String())
	}
	before := m.Stats().Attempts
	var edit []string
	for i := 0; i < 200; i += 20 {
		edit = append(edit, fmt.Sprintf("req-%04d", i))
	}
	now := editInput(t, in, prompts, edit, 5)
	if code := c.run(t, args...); code != 0 {
		t.Fatalf("night 2: exit %d: %s", code, c.stderr.String())
	}
	if sent := m.Stats().Attempts - before; sent != 15 {
		t.Errorf("night 2 sent %d requests, want the 15 changed or new ones", sent)
	}
	if !strings.Contains(c.stderr.String(), "190 skipped") {
		t.Errorf("summary: %s", c.stderr.String())
	}
	checkAnswers(t, out, now)
	// Night 3, nothing changed: nothing sent; --force is accepted, with a note.
	before = m.Stats().Attempts
	if code := c.run(t, append(args, "--force")...); code != 0 || m.Stats().Attempts != before || !strings.Contains(c.stderr.String(), "--force") {
		t.Fatalf("night 3: exit %d, %d sent: %s", code, m.Stats().Attempts-before, c.stderr.String())
	}
	// A removed line keeps its answer, unless --prune.
	delete(now, "req-0001")
	editInput(t, in, now, nil, 0)
	if code := c.run(t, args...); code != 0 || len(readLines(t, out)) != 205 {
		t.Fatalf("without --prune: exit %d, %d lines", code, len(readLines(t, out)))
	}
	if code := c.run(t, append(args, "--prune")...); code != 0 {
		t.Fatalf("--prune: exit %d: %s", code, c.stderr.String())
	}
	checkAnswers(t, out, now)
}

// TestNightlyRerunKilledThenRerun: a kill -9 at a seeded moment of the
// edited rerun (while answers land, or while the output is compacted), then
// another rerun, reaches the same state as an uninterrupted rerun.
func TestNightlyRerunKilledThenRerun(t *testing.T) {
	if testing.Short() {
		t.Skip("subprocess crash test")
	}
	rng := rand.New(rand.NewPCG(9, 10))
	for round := range 4 {
		m, url := mockServer(t, mock.Config{Seed: 4, TokenDelay: time.Millisecond})
		in, prompts := promptFile(t, 200)
		out := strings.TrimSuffix(in, ".jsonl") + ".out.jsonl"
		args := []string{"batch", in, "--provider", "openai", "--model", "m", "--quiet", "--concurrency", "4"}
		var stderr bytes.Buffer
		if err := llmrunProcess(url, &stderr, args...).Run(); err != nil {
			t.Fatalf("night 1: %v: %s", err, stderr.String())
		}
		var edit []string
		for i := round; i < 200; i += 20 {
			edit = append(edit, fmt.Sprintf("req-%04d", i))
		}
		now := editInput(t, in, prompts, edit, 5)
		before := m.Stats().Attempts

		p := llmrunProcess(url, &stderr, args...)
		if err := p.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- p.Wait() }()
		killed := false
		select {
		case <-done: // finished before the kill
		case <-time.After(time.Duration(20+rng.IntN(300)) * time.Millisecond): // a seeded moment
			p.Process.Signal(syscall.SIGKILL)
			<-done
			killed = true
		}
		b, _ := os.ReadFile(out)
		landed := bytes.Count(b, []byte("\n")) // superseded lines included
		stderr.Reset()
		if err := llmrunProcess(url, &stderr, args...).Run(); err != nil {
			t.Fatalf("round %d: rerun after the kill: %v: %s", round, err, stderr.String())
		}
		checkAnswers(t, out, now)
		// Answers that landed before the kill are not asked again; at most
		// those in flight at the kill are.
		sent := m.Stats().Attempts - before
		if sent < 15 || sent > 15+4 {
			t.Errorf("round %d: %d requests sent, want 15 (plus at most the 4 in flight at the kill)", round, sent)
		}
		t.Logf("round %d: killed %v with %d lines in the output; %d requests sent in all", round, killed, landed, sent)
	}
}

// TestErrorsFileBesideTheOutput: the errors file follows -o, so two runs of
// one input into two outputs keep their own failures.
func TestErrorsFileBesideTheOutput(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(400)
		w.Write([]byte(`{"error":{"message":"bad","type":"invalid_request_error","param":null,"code":"bad_thing"}}`))
	}))
	defer srv.Close()
	in, _ := promptFile(t, 3)
	dir := t.TempDir()
	c := &cli{env: mockEnv(srv.URL)}
	for _, name := range []string{"first", "second"} {
		out := filepath.Join(dir, name+".out.jsonl")
		if code := c.run(t, "batch", in, "--provider", "openai", "--model", "m", "--quiet", "-o", out); code != ExitFailed {
			t.Fatalf("%s: exit %d: %s", name, code, c.stderr.String())
		}
	}
	for _, name := range []string{"first", "second"} {
		if got := readLines(t, filepath.Join(dir, name+".errors.jsonl")); len(got) != 3 {
			t.Errorf("%s.errors.jsonl holds %d failures, want 3", name, len(got))
		}
	}
	if _, err := os.Stat(strings.TrimSuffix(in, ".jsonl") + ".errors.jsonl"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("an errors file beside the input: %v", err)
	}
	if code := c.run(t, "status", filepath.Join(dir, "first.out.jsonl")); code != 0 || !strings.Contains(c.stdout.String(), "3 failed") {
		t.Errorf("status of first: %s %s", c.stdout.String(), c.stderr.String())
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
	for _, arg := range []string{in, out} { // the input, or the output (which records its input)
		if code := c.run(t, "status", arg); code != 0 {
			t.Fatal(c.stderr.String())
		}
		if got := c.stdout.String(); !strings.Contains(got, "2 done, 0 failed, 2 pending") {
			t.Errorf("status %s says %q", arg, got)
		}
	}
	if code := c.run(t, "status", filepath.Join(t.TempDir(), "none.jsonl")); code != ExitUsage {
		t.Errorf("status of a missing checkpoint: exit %d: %s", code, c.stdout.String())
	}
}

// TestStatusOfAnyOutputShardsAndJSON: status reads an output named with -o
// (any name), sums the --shard outputs of an input, lists open provider
// batches, and prints JSON with --json.
func TestStatusOfAnyOutputShardsAndJSON(t *testing.T) {
	_, url := mockServer(t, mock.Config{})
	in, prompts := promptFile(t, 30)
	c := &cli{env: mockEnv(url)}
	custom := filepath.Join(t.TempDir(), "results.jsonl")
	if code := c.run(t, "batch", in, "--provider", "openai", "--model", "m", "--quiet", "-o", custom); code != 0 {
		t.Fatal(c.stderr.String())
	}
	if code := c.run(t, "status", custom); code != 0 || !strings.Contains(c.stdout.String(), custom+": 30 done, 0 failed, 0 pending") {
		t.Errorf("status of an -o output: exit %d: %s %s", code, c.stdout.String(), c.stderr.String())
	}
	if code := c.run(t, "status", in, "-o", custom); code != 0 || !strings.Contains(c.stdout.String(), "30 done, 0 failed, 0 pending") {
		t.Errorf("status INPUT -o OUTPUT: %s", c.stdout.String())
	}

	for i := 1; i <= 2; i++ { // shard 3 has not run yet
		if code := c.run(t, "batch", in, "--provider", "openai", "--model", "m", "--quiet", "--shard", fmt.Sprintf("%d/3", i)); code != 0 {
			t.Fatal(c.stderr.String())
		}
	}
	shard1 := strings.TrimSuffix(in, ".jsonl") + ".shard-1-of-3.out.jsonl"
	// A --mode batch run left a batch open in shard 1's state.
	state, _ := os.ReadFile(shard1 + ".state.json")
	var sc map[string]any
	json.Unmarshal(state, &sc)
	sc["state"] = map[string]any{"batch:batch_abc": map[string]any{"id": "batch_abc", "provider": "openai", "base_url": url, "created": "2026-03-01T12:00:00Z", "ids": []string{"req-0001", "req-0002"}}}
	state, _ = json.Marshal(sc)
	os.WriteFile(shard1+".state.json", state, 0o600)

	if code := c.run(t, "status", in, "--json"); code != 0 {
		t.Fatalf("status --json: exit %d: %s", code, c.stderr.String())
	}
	var rep struct {
		Requests, Done, Failed, Pending int
		Outputs                         []struct {
			Output      string
			Done        int
			OpenBatches []struct {
				ID       string
				Requests int
			} `json:"open_batches"`
		}
	}
	if err := json.Unmarshal(c.stdout.Bytes(), &rep); err != nil {
		t.Fatalf("status --json printed %q: %v", c.stdout.String(), err)
	}
	done := 0
	for _, o := range rep.Outputs {
		done += o.Done
	}
	if len(rep.Outputs) != 2 || rep.Requests != len(prompts) || rep.Done != done || rep.Pending != len(prompts)-done || done == 0 || done == len(prompts) {
		t.Fatalf("status --json of two shards: %+v", rep)
	}
	if b := rep.Outputs[0].OpenBatches; rep.Outputs[0].Output != shard1 || len(b) != 1 || b[0].ID != "batch_abc" || b[0].Requests != 2 {
		t.Errorf("open batches of shard 1: %+v", rep.Outputs[0])
	}
	if code := c.run(t, "status", in); code != 0 || !strings.Contains(c.stdout.String(), "all 2 outputs: "+strconv.Itoa(done)+" done") ||
		!strings.Contains(c.stdout.String(), "1 open provider batches: batch_abc") {
		t.Errorf("status of shards: %s", c.stdout.String())
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

// TestBuiltinMockRerunSkips: --provider mock listens on a new port each run;
// the rerun still finds every request answered.
func TestBuiltinMockRerunSkips(t *testing.T) {
	in, _ := promptFile(t, 20)
	c := &cli{env: map[string]string{}}
	args := []string{"batch", in, "--provider", "mock", "--quiet"}
	if code := c.run(t, args...); code != 0 {
		t.Fatalf("exit %d: %s", code, c.stderr.String())
	}
	if code := c.run(t, args...); code != 0 || !strings.Contains(c.stderr.String(), "0 succeeded, 0 failed, 20 skipped") {
		t.Fatalf("rerun: exit %d: %s", code, c.stderr.String())
	}
}

// TestIndexedShards: --shards N takes its 0-based shard from
// JOB_COMPLETION_INDEX (a Kubernetes Indexed Job's) or --shard-index;
// it is --shard I+1/N: the same requests, output and checkpoint, so the
// shards partition the input, a rerun in the other form skips what was
// done, and status sums the shards.
func TestIndexedShards(t *testing.T) {
	m, url := mockServer(t, mock.Config{})
	in, prompts := promptFile(t, 45)
	seen := map[string]int{}
	for i := range 3 {
		env := mockEnv(url)
		env["JOB_COMPLETION_INDEX"] = fmt.Sprint(i)
		c := &cli{env: env}
		if code := c.run(t, "batch", in, "--provider", "openai", "--model", "m", "--quiet", "--shards", "3"); code != 0 {
			t.Fatalf("index %d: exit %d: %s", i, code, c.stderr.String())
		}
		out := strings.TrimSuffix(in, ".jsonl") + fmt.Sprintf(".shard-%d-of-3.out.jsonl", i+1)
		for id := range readLines(t, out) {
			if prev, dup := seen[id]; dup {
				t.Errorf("%s answered by indexes %d and %d", id, prev, i)
			}
			seen[id] = i
		}
	}
	if len(seen) != len(prompts) || m.Stats().Attempts != int64(len(prompts)) {
		t.Fatalf("indexes answered %d of %d requests with %d attempts", len(seen), len(prompts), m.Stats().Attempts)
	}
	c := &cli{env: mockEnv(url)}
	for _, args := range [][]string{{"--shard", "2/3"}, {"--shards", "3", "--shard-index", "1"}} {
		if code := c.run(t, append([]string{"batch", in, "--provider", "openai", "--model", "m", "--quiet"}, args...)...); code != 0 || !strings.Contains(c.stderr.String(), "0 succeeded") {
			t.Errorf("rerun with %v: exit %d: %s", args, code, c.stderr.String())
		}
	}
	if code := c.run(t, "status", in); code != 0 || !strings.Contains(c.stdout.String(), "all 3 outputs: 45 done, 0 failed, 0 pending") {
		t.Errorf("status: exit %d:\n%s", code, c.stdout.String())
	}
	for _, tc := range []struct {
		index string
		args  []string
	}{
		{"", []string{"--shards", "3"}},
		{"3", []string{"--shards", "3"}},
		{"x", []string{"--shards", "3"}},
		{"", []string{"--shards", "3", "--shard-index", "-1"}},
		{"", []string{"--shards", "3", "--shard", "1/3"}},
		{"", []string{"--shard-index", "0"}},
	} {
		env := mockEnv(url)
		if tc.index != "" {
			env["JOB_COMPLETION_INDEX"] = tc.index
		}
		c := &cli{env: env}
		if code := c.run(t, append([]string{"batch", in, "--provider", "openai", "--model", "m", "--quiet"}, tc.args...)...); code != ExitUsage {
			t.Errorf("JOB_COMPLETION_INDEX=%q %v: exit %d, want 2: %s", tc.index, tc.args, code, c.stderr.String())
		}
	}
}
