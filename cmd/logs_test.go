package cmd

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/llmrun/llmrun/providers/mock"
)

// TestJSONLogs: with --log-format json every line on stderr is one JSON
// record, progress included, and the last is the summary with its figures.
func TestJSONLogs(t *testing.T) {
	_, url := mockServer(t, mock.Config{Seed: 1, TokenDelay: 1e6})
	in, prompts := promptFile(t, 20)
	c := &cli{env: mockEnv(url)}
	code := c.run(t, "batch", in, "--provider", "openai", "--model", "m", "--log-format", "json", "--progress-interval", "10ms")
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, c.stderr.String())
	}
	lines := strings.Split(strings.TrimSpace(c.stderr.String()), "\n")
	var last map[string]any
	progress := 0
	for _, l := range lines {
		var rec map[string]any
		if err := json.Unmarshal([]byte(l), &rec); err != nil {
			t.Fatalf("not a JSON record: %q", l)
		}
		if rec["time"] == nil || rec["level"] == nil || rec["msg"] == nil {
			t.Errorf("record lacks time, level or msg: %q", l)
		}
		if _, ok := rec["progress"]; ok {
			progress++
		}
		last = rec
	}
	if progress == 0 {
		t.Errorf("no progress records in %d lines", len(lines))
	}
	sum, _ := last["summary"].(map[string]any)
	if sum == nil || sum["succeeded"] != float64(len(prompts)) || sum["exit_code"] != float64(0) {
		t.Errorf("last record is not the summary: %v", last)
	}
}

// TestVerboseAttempts: -v logs one line per attempt with its request, hop
// and outcome, and never the key or a body; lines without a terminal are
// timestamped.
func TestVerboseAttempts(t *testing.T) {
	_, url := mockServer(t, mock.Config{Seed: 1})
	in, prompts := promptFile(t, 5)
	env := mockEnv(url)
	c := &cli{env: env}
	if code := c.run(t, "batch", in, "--provider", "openai", "--model", "m", "-q", "-v"); code != ExitOK {
		t.Fatalf("exit %d: %s", code, c.stderr.String())
	}
	out := c.stderr.String()
	if n := strings.Count(out, "attempt answered"); n != len(prompts) {
		t.Errorf("%d attempt lines, want %d: %s", n, len(prompts), out)
	}
	for _, want := range []string{"id=req-0000", "provider=openai", "status=200", "output_tokens="} {
		if !strings.Contains(out, want) {
			t.Errorf("attempt lines lack %q: %s", want, out)
		}
	}
	for _, secret := range []string{env["OPENAI_API_KEY"], "Tell me fact", "choices"} {
		if strings.Contains(out, secret) {
			t.Errorf("-v shows %q: %s", secret, out)
		}
	}
	stamp := regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}(Z|[+-]\d\d:\d\d) llmrun: `)
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if !stamp.MatchString(l) {
			t.Errorf("line without a timestamp: %q", l)
		}
	}
	if code := c.run(t, "batch", in, "--log-format", "yaml"); code != ExitUsage {
		t.Errorf("--log-format yaml: exit %d, want 2", code)
	}
}
