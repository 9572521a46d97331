package cmd

import (
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/llmrun/llmrun/providers/mock"
)

// TestCorruptOutputExits2ThenRepairAndRerun: 500 bytes cut out of the middle
// of an output stop the rerun with exit 2 naming the file, the line and the
// repair; `llmrun repair` moves the spliced line aside; the rerun then sends
// exactly the requests whose lines the cut took and exits 0.
func TestCorruptOutputExits2ThenRepairAndRerun(t *testing.T) {
	m, url := mockServer(t, mock.Config{Seed: 2})
	in, prompts := promptFile(t, 30)
	out := strings.TrimSuffix(in, ".jsonl") + ".out.jsonl"
	c := &cli{env: mockEnv(url)}
	args := []string{"batch", in, "--provider", "openai", "--model", "m", "--quiet"}
	if code := c.run(t, args...); code != 0 {
		t.Fatalf("first run: exit %d: %s", code, c.stderr.String())
	}
	b, _ := os.ReadFile(out)
	from := len(b) / 3
	os.WriteFile(out, append(b[:from:from], b[from+500:]...), 0o600)
	lost := len(prompts) - strings.Count(string(b[:from]), "\n") - strings.Count(string(b[from+500:]), "\n")

	if code := c.run(t, args...); code != ExitUsage {
		t.Fatalf("rerun on a cut output: exit %d, want 2: %s", code, c.stderr.String())
	}
	line := itoa(strings.Count(string(b[:from]), "\n") + 1)
	for _, want := range []string{out + ":" + line + ":", "checksum mismatch", "llmrun repair " + out} {
		if !strings.Contains(c.stderr.String(), want) {
			t.Errorf("stderr %q lacks %q", c.stderr.String(), want)
		}
	}
	if code := c.run(t, "status", in); code != 0 || !strings.Contains(c.stdout.String(), itoa(len(prompts)-lost-1)+" done") ||
		!strings.Contains(c.stdout.String(), "1 malformed") {
		t.Errorf("status: exit %d: %s %s", code, c.stdout.String(), c.stderr.String())
	}

	if code := c.run(t, "repair", out); code != 0 || !strings.Contains(c.stdout.String(), "moved 1 malformed lines") {
		t.Fatalf("repair: exit %d: %s %s", code, c.stdout.String(), c.stderr.String())
	}
	before := m.Stats().Attempts
	if code := c.run(t, args...); code != 0 {
		t.Fatalf("rerun after repair: exit %d: %s", code, c.stderr.String())
	}
	if sent := m.Stats().Attempts - before; sent != int64(lost+1) {
		t.Errorf("the rerun sent %d requests, want the %d the cut took", sent, lost+1)
	}
	lines := readLines(t, out)
	if len(lines) != len(prompts) {
		t.Fatalf("%d lines, want %d", len(lines), len(prompts))
	}
	for id, p := range prompts {
		if got, want := answerText(lines[id]), mock.Answer(p, 40); got != want {
			t.Errorf("%s: %q, want %q", id, got, want)
		}
	}
}

// TestCorruptStateFileExits2: an unreadable state sidecar is an input error
// (exit 2) naming the file, not an I/O failure (exit 1).
func TestCorruptStateFileExits2(t *testing.T) {
	_, url := mockServer(t, mock.Config{})
	in, _ := promptFile(t, 2)
	out := strings.TrimSuffix(in, ".jsonl") + ".out.jsonl"
	os.WriteFile(out+".state.json", []byte(`{"version":1,"state":{"batch:x":`), 0o600)
	c := &cli{env: mockEnv(url)}
	if code := c.run(t, "batch", in, "--provider", "openai", "--model", "m", "--quiet"); code != ExitUsage ||
		!strings.Contains(c.stderr.String(), out+".state.json") || !strings.Contains(c.stderr.String(), "move it aside") {
		t.Fatalf("exit %d, want 2 naming the state file: %s", code, c.stderr.String())
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

// TestNoCredentialsOnDisk: a --base-url with a user and password reaches no
// file of the checkpoint, and those files and the --summary are owner-only.
func TestNoCredentialsOnDisk(t *testing.T) {
	_, url := mockServer(t, mock.Config{})
	in, _ := promptFile(t, 3)
	out := strings.TrimSuffix(in, ".jsonl") + ".out.jsonl"
	withCreds := strings.Replace(url, "http://", "http://alice:hunter2@", 1) + "/v1"
	c := &cli{env: mockEnv(url)}
	sum := strings.TrimSuffix(in, ".jsonl") + ".summary.json"
	if code := c.run(t, "batch", in, "--provider", "openai", "--model", "m", "--quiet", "--base-url", withCreds, "--summary", sum); code != 0 {
		t.Fatalf("exit %d: %s", code, c.stderr.String())
	}
	for _, p := range []string{out, out + ".state.json", sum} {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(b), "hunter2") || strings.Contains(string(b), "alice") {
			t.Errorf("%s holds the URL's credentials", p)
		}
		if fi, _ := os.Stat(p); fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %v, want 0600", p, fi.Mode().Perm())
		}
	}
	if b, _ := os.ReadFile(out + ".state.json"); !strings.Contains(string(b), url+"/v1") {
		t.Errorf("state file does not record the base URL without credentials: %s", b)
	}
}
