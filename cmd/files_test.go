package cmd

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmrun/llmrun/providers/mock"
)

// TestFilesThatClashAreRefused (issue 22 items 2, 3 and 11) runs llmrun as a
// process: every file it would write that is the input, the output or one of
// the checkpoint's own files, compared by identity (a symlink, a hard link),
// is a usage error (exit 2) naming both, before anything is sent and with
// every file as it was; so is an output that is not a regular file, which
// leaves no state file in /dev.
func TestFilesThatClashAreRefused(t *testing.T) {
	m, url := mockServer(t, mock.Config{Seed: 1})
	in, _ := promptFile(t, 3)
	dir := filepath.Dir(in)
	out := filepath.Join(dir, "in.out.jsonl")
	if code, stderr := runProcess(t, url, "batch", in, "-o", out, "--model", "m", "--quiet"); code != ExitOK {
		t.Fatalf("first run: exit %d: %s", code, stderr)
	}
	paid := m.Stats().Attempts
	alias, hard := filepath.Join(dir, "alias.json"), filepath.Join(dir, "hard.jsonl")
	os.Symlink("in.out.jsonl", alias)
	if err := os.Link(in, hard); err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, dir)
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"summary over the output", []string{"--summary", out}, []string{"--summary", "-o"}},
		{"summary through a symlink", []string{"--summary", alias}, []string{"--summary", alias}},
		{"metrics file over the input", []string{"--metrics-file", in}, []string{"--metrics-file", "the input"}},
		{"summary over the state file", []string{"--summary", out + ".state.json"}, []string{"--summary", "state file"}},
		{"errors file over the input", []string{"--errors", hard}, []string{"--errors", "the input"}},
		{"summary over the errors file", []string{"--summary", filepath.Join(dir, "in.errors.jsonl")}, []string{"--summary", "--errors"}},
	} {
		args := append([]string{"batch", in, "-o", out, "--model", "m", "--quiet"}, tc.args...)
		code, stderr := runProcess(t, url, args...)
		if code != ExitUsage {
			t.Errorf("%s: exit %d, want 2: %s", tc.name, code, stderr)
		}
		for _, w := range tc.want {
			if !strings.Contains(stderr, w) {
				t.Errorf("%s: stderr does not name %q: %s", tc.name, w, stderr)
			}
		}
	}
	if code, stderr := runProcess(t, url, "batch", in, "-o", hard, "--model", "m", "--quiet"); code != ExitUsage || !strings.Contains(stderr, "the input") {
		t.Errorf("-o a hard link of the input: exit %d: %s", code, stderr)
	}
	if code, stderr := runProcess(t, url, "batch", in, "-o", in, "--model", "m", "--quiet"); code != ExitUsage {
		t.Errorf("-o the input: exit %d: %s", code, stderr)
	}
	if code, stderr := runProcess(t, url, "export", out, "-o", in); code != ExitUsage || !strings.Contains(stderr, "export -o") {
		t.Errorf("export -o the input: exit %d: %s", code, stderr)
	}
	if code, stderr := runProcess(t, url, "export", out, "-o", alias); code != ExitUsage {
		t.Errorf("export -o a symlink to the output: exit %d: %s", code, stderr)
	}
	if after := snapshot(t, dir); after != before {
		t.Errorf("files changed:\nbefore %s\nafter  %s", before, after)
	}
	if got := m.Stats().Attempts; got != paid {
		t.Errorf("%d requests sent by refused runs", got-paid)
	}

	if code, stderr := runProcess(t, url, "batch", in, "-o", os.DevNull, "--model", "m", "--quiet"); code != ExitUsage || !strings.Contains(stderr, "character device") {
		t.Errorf("-o /dev/null: exit %d: %s", code, stderr)
	}
	for _, p := range []string{os.DevNull + ".state.json", os.DevNull + ".lock", "/dev/null.errors.jsonl"} {
		if _, err := os.Stat(p); err == nil {
			os.Remove(p)
			t.Errorf("%s was left", p)
		}
	}
}

// runProcess runs llmrun as a subprocess against the mock at url and returns
// its exit code and standard error.
func runProcess(t *testing.T, url string, args ...string) (int, string) {
	t.Helper()
	var stderr bytes.Buffer
	c := llmrunProcess(url, &stderr, args...)
	return exitCode(c.Run()), stderr.String()
}

// snapshot is every file of dir with its content, symlinks as links.
func snapshot(t *testing.T, dir string) string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, e := range entries {
		p := filepath.Join(dir, e.Name())
		if to, err := os.Readlink(p); err == nil {
			b.WriteString(e.Name() + " -> " + to + "\n")
			continue
		}
		data, _ := os.ReadFile(p)
		b.WriteString(e.Name() + ": " + string(data) + "\n")
	}
	return b.String()
}
