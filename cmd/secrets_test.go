package cmd

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmrun/llmrun/providers/mock"
)

// TestURLCredentialsNeverLeave: with a password in --base-url, a live run
// that succeeds and fails in part writes it to no file it makes (output,
// errors, state, summary, metrics) and to no log line, not even the budget
// key shown in the summary and metrics, or the name of a server it cannot reach.
func TestURLCredentialsNeverLeave(t *testing.T) {
	const secret = "s3cret-pw"
	_, url := mockServer(t, mock.Config{ServerErrorRate: 0.3, Seed: 7})
	credURL := strings.Replace(url, "http://", "http://run-user:"+secret+"@", 1)
	in, _ := promptFile(t, 20)
	dir := t.TempDir()
	out := filepath.Join(dir, "out.jsonl")
	c := &cli{env: mockEnv(url)}
	code := c.run(t, "batch", in, "-o", out, "--provider", "openai", "--model", "gpt-4o-mini", "--base-url", credURL+"/v1",
		"--max-attempts", "1", "--fail-fast", "0", "-v", "--log-format", "json",
		"--summary", filepath.Join(dir, "summary.json"), "--metrics-file", filepath.Join(dir, "run.prom"))
	if code != ExitFailed {
		t.Fatalf("exit %d, want %d (some 500s fail at --max-attempts 1): %s", code, ExitFailed, c.stderr.String())
	}
	if strings.Contains(c.stderr.String(), secret) {
		t.Errorf("password in the log:\n%s", c.stderr.String())
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*"))
	if len(files) < 4 {
		t.Fatalf("files written: %v", files)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(b), secret) {
			t.Errorf("password in %s", filepath.Base(f))
		}
	}

	// A server that refuses connections: the message names where, not who.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://run-user:" + secret + "@" + ln.Addr().String() + "/v1"
	ln.Close()
	code = c.run(t, "batch", in, "-o", filepath.Join(t.TempDir(), "o.jsonl"), "--provider", "openai", "--model", "gpt-4o-mini",
		"--base-url", dead, "--connect-deadline", "300ms")
	if code != ExitAborted || !strings.Contains(c.stderr.String(), "connection refused") {
		t.Fatalf("exit %d: %s", code, c.stderr.String())
	}
	if strings.Contains(c.stderr.String(), secret) {
		t.Errorf("password in the log:\n%s", c.stderr.String())
	}
}
