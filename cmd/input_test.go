package cmd

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"
	"github.com/tidwall/gjson"

	"github.com/llmrun/llmrun/job"
	"github.com/llmrun/llmrun/providers/mock"
)

// runWithStdin runs llmrun in-process with stdin as its standard input.
func runWithStdin(t *testing.T, env map[string]string, stdin string, args ...string) (int, string) {
	t.Helper()
	var stderr bytes.Buffer
	io := &IO{In: strings.NewReader(stdin), Out: &bytes.Buffer{}, Err: &stderr, Getenv: func(k string) string { return env[k] }}
	code := Execute(context.Background(), io, args)
	return code, stderr.String()
}

// A piped input is answered in full: "-" and a named FIFO are spooled beside
// the output, so the run sees the lines the check saw.
func TestPipedInputIsAnswered(t *testing.T) {
	m, url := mockServer(t, mock.Config{Seed: 1})
	env := mockEnv(url)
	in, prompts := promptFile(t, 20)
	data, err := os.ReadFile(in)
	if err != nil {
		t.Fatal(err)
	}
	t.Run("dash reads standard input", func(t *testing.T) {
		dir := t.TempDir()
		out := filepath.Join(dir, "res.out.jsonl")
		before := m.Stats().Completed
		code, stderr := runWithStdin(t, env, string(data), "batch", "-", "-o", out, "--provider", "openai", "--model", "m", "-q")
		if code != ExitOK {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		got := readLines(t, out)
		if len(got) != len(prompts) {
			t.Fatalf("%d answers, want %d", len(got), len(prompts))
		}
		if n := m.Stats().Completed - before; n != int64(len(prompts)) {
			t.Errorf("%d requests reached the server, want %d", n, len(prompts))
		}
		ents, _ := os.ReadDir(dir)
		for _, e := range ents {
			if strings.Contains(e.Name(), "spool") {
				t.Errorf("spool file left behind: %s", e.Name())
			}
		}
		// Rerunning with the same piped input resumes: nothing is sent again.
		before = m.Stats().Completed
		if code, stderr := runWithStdin(t, env, string(data), "batch", "-", "-o", out, "--provider", "openai", "--model", "m", "-q"); code != ExitOK {
			t.Fatalf("rerun exit %d: %s", code, stderr)
		}
		if n := m.Stats().Completed - before; n != 0 {
			t.Errorf("rerun sent %d requests, want 0", n)
		}
	})
	t.Run("dash without -o is a usage error", func(t *testing.T) {
		code, stderr := runWithStdin(t, env, string(data), "batch", "-", "--provider", "mock", "-q")
		if code != ExitUsage || !strings.Contains(stderr, "-o") {
			t.Fatalf("exit %d: %s", code, stderr)
		}
	})
	t.Run("named FIFO", func(t *testing.T) {
		dir := t.TempDir()
		fifo := filepath.Join(dir, "in.jsonl")
		if err := syscall.Mkfifo(fifo, 0o600); err != nil {
			t.Skip("no FIFOs here:", err)
		}
		go func() {
			if w, err := os.OpenFile(fifo, os.O_WRONLY, 0); err == nil {
				w.Write(data)
				w.Close()
			}
		}()
		stop := make(chan struct{})
		defer close(stop)
		go unblockFIFO(fifo, 20*time.Second, stop) // so a regression fails instead of hanging
		out := filepath.Join(dir, "res.out.jsonl")
		code, stderr := runWithStdin(t, env, "", "batch", fifo, "-o", out, "--provider", "openai", "--model", "m", "-q")
		if code != ExitOK {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		if got := readLines(t, out); len(got) != len(prompts) {
			t.Fatalf("%d answers, want %d", len(got), len(prompts))
		}
	})
}

// unblockFIFO: see the runner package's copy.
func unblockFIFO(fifo string, d time.Duration, stop <-chan struct{}) {
	select {
	case <-stop:
		return
	case <-time.After(d):
	}
	for {
		if w, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			w.Close()
		}
		select {
		case <-stop:
			return
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// Invalid UTF-8 stops the check naming file and line; --lossy-utf8 replaces
// it and says so once, with the count.
func TestInvalidUTF8Input(t *testing.T) {
	m, url := mockServer(t, mock.Config{Seed: 1})
	env := mockEnv(url)
	dir := t.TempDir()
	in := filepath.Join(dir, "in.jsonl")
	data := "{\"custom_id\":\"a\",\"prompt\":\"fine\"}\n{\"custom_id\":\"b\",\"prompt\":\"caf\xe9\"}\n{\"custom_id\":\"c\",\"prompt\":\"\xff\xfe\"}\n"
	if err := os.WriteFile(in, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stderr := runWithStdin(t, env, "", "batch", in, "--provider", "openai", "--model", "m", "-q")
	if code != ExitUsage || !strings.Contains(stderr, in+":2: invalid UTF-8") {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if n := m.Stats().Completed; n != 0 {
		t.Fatalf("%d requests sent after an input error", n)
	}
	code, stderr = runWithStdin(t, env, "", "batch", in, "--provider", "openai", "--model", "m", "-q", "--lossy-utf8")
	if code != ExitOK {
		t.Fatalf("lossy: exit %d: %s", code, stderr)
	}
	if strings.Count(stderr, "U+FFFD") != 1 || !strings.Contains(stderr, "in 2 line(s)") || !strings.Contains(stderr, "first: line 2") {
		t.Errorf("want one warning with the count, got: %s", stderr)
	}
	if got := readLines(t, job.DerivePath(in, ".out.jsonl")); len(got) != 3 {
		t.Errorf("%d answers, want 3", len(got))
	}
}

// An input truncated while the run goes is "changed during the run": exit 1,
// and the rerun with the input restored finishes the job, nothing twice.
func TestInputTruncatedDuringTheRun(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.jsonl")
	var b strings.Builder
	const n = 2000 // ~460 KB, so most of it is unread when the cut comes
	for i := range n {
		fmt.Fprintf(&b, `{"custom_id":"r%05d","prompt":"%s %d"}`+"\n", i, strings.Repeat("word ", 40), i)
	}
	data := []byte(b.String())
	if err := os.WriteFile(in, data, 0o644); err != nil {
		t.Fatal(err)
	}
	m := mock.New(mock.Config{Seed: 1})
	var seen atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if seen.Add(1) == 20 {
			os.Truncate(in, int64(len(data)/2)+11) // mid-line
		}
		m.ServeHTTP(w, r)
	}))
	defer srv.Close()
	env := mockEnv(srv.URL)
	args := []string{"batch", in, "--provider", "openai", "--model", "m", "-q", "--concurrency", "2"}
	code, stderr := runWithStdin(t, env, "", args...)
	if code != ExitFailed || !strings.Contains(stderr, in+" changed during the run") {
		t.Fatalf("exit %d, want 1 naming the change: %s", code, stderr)
	}
	first := readLines(t, job.DerivePath(in, ".out.jsonl"))
	if len(first) == 0 || len(first) >= n/2 {
		t.Fatalf("%d answered before the stop, want some and well under half", len(first))
	}
	if err := os.WriteFile(in, data, 0o644); err != nil {
		t.Fatal(err)
	}
	before := m.Stats().Completed
	code, stderr = runWithStdin(t, env, "", append(args, "--concurrency", "16")...)
	if code != ExitOK {
		t.Fatalf("rerun exit %d: %s", code, stderr)
	}
	if got := readLines(t, job.DerivePath(in, ".out.jsonl")); len(got) != n {
		t.Fatalf("%d answers after the rerun, want %d", len(got), n)
	}
	if sent := m.Stats().Completed - before; sent != int64(n-len(first)) {
		t.Errorf("rerun sent %d, want %d", sent, n-len(first))
	}
}

// Compressed inputs are read transparently, from a file or standard input;
// x.jsonl.zst answers into x.out.jsonl.
func TestCompressedInputEndToEnd(t *testing.T) {
	m, url := mockServer(t, mock.Config{Seed: 1})
	env := mockEnv(url)
	in, prompts := promptFile(t, 30)
	data, err := os.ReadFile(in)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	zpath := filepath.Join(dir, "day.jsonl.zst")
	var zb bytes.Buffer
	zw, _ := zstd.NewWriter(&zb)
	zw.Write(data)
	zw.Close()
	os.WriteFile(zpath, zb.Bytes(), 0o644)
	code, stderr := runWithStdin(t, env, "", "batch", zpath, "--provider", "openai", "--model", "m", "-q")
	if code != ExitOK {
		t.Fatalf("zstd file: exit %d: %s", code, stderr)
	}
	if got := readLines(t, filepath.Join(dir, "day.out.jsonl")); len(got) != len(prompts) {
		t.Fatalf("zstd file: %d answers in day.out.jsonl, want %d", len(got), len(prompts))
	}

	var gb bytes.Buffer
	gw := gzip.NewWriter(&gb)
	gw.Write(data)
	gw.Close()
	out := filepath.Join(dir, "piped.out.jsonl")
	before := m.Stats().Completed
	code, stderr = runWithStdin(t, env, gb.String(), "batch", "-", "-o", out, "--provider", "openai", "--model", "m", "-q")
	if code != ExitOK {
		t.Fatalf("gzip stdin: exit %d: %s", code, stderr)
	}
	if got := readLines(t, out); len(got) != len(prompts) || m.Stats().Completed-before != int64(len(prompts)) {
		t.Fatalf("gzip stdin: %d answers, %d sent; want %d", len(got), m.Stats().Completed-before, len(prompts))
	}
}

// A CSV and a template make the prompts; each answer carries its row's
// fields as llmrun.vars. Through the built-in mock (--provider mock) for
// the whole command, and through a recording server for what was sent.
func TestCSVTemplateEndToEnd(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "topics.csv")
	os.WriteFile(in, []byte("custom_id,topic,words\nt1,the sea,20\nt2,\"rain, mostly\",5\n"), 0o644)
	tmpl := filepath.Join(dir, "prompt.tmpl")
	os.WriteFile(tmpl, []byte("Write {{.words}} words about {{.topic}}."), 0o644)

	code, stderr := runWithStdin(t, nil, "", "batch", in, "--provider", "mock", "--template", tmpl, "-q")
	if code != ExitOK {
		t.Fatalf("mock: exit %d: %s", code, stderr)
	}
	out := readLines(t, filepath.Join(dir, "topics.out.jsonl"))
	if len(out) != 2 || out["t2"].Get("llmrun.vars.topic").Str != "rain, mostly" || out["t1"].Get("llmrun.vars.words").Str != "20" {
		t.Fatalf("output %v", out)
	}

	m := mock.New(mock.Config{Seed: 1})
	var mu sync.Mutex
	sent := map[string]bool{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		sent[gjson.GetBytes(body, "messages.0.content").Str] = true
		mu.Unlock()
		r.Body = io.NopCloser(bytes.NewReader(body))
		m.ServeHTTP(w, r)
	}))
	defer srv.Close()
	out2 := filepath.Join(dir, "sent.out.jsonl")
	code, stderr = runWithStdin(t, mockEnv(srv.URL), "", "batch", in, "-o", out2, "--provider", "openai", "--model", "m", "--template", tmpl, "-q")
	if code != ExitOK {
		t.Fatalf("openai: exit %d: %s", code, stderr)
	}
	for _, want := range []string{"Write 20 words about the sea.", "Write 5 words about rain, mostly."} {
		if !sent[want] {
			t.Errorf("prompt %q not sent; sent %v", want, sent)
		}
	}

	// A CSV without a template is a usage error, before anything is sent.
	if code, stderr := runWithStdin(t, nil, "", "batch", in, "--provider", "mock", "-q", "-o", filepath.Join(dir, "x.out.jsonl")); code != ExitUsage || !strings.Contains(stderr, "--template") {
		t.Errorf("CSV without template: exit %d: %s", code, stderr)
	}
}
