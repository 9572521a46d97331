package cmd

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
)

// TestTerminalRunShowsStartAndEnd: on a terminal a run opens with the
// start block (input → output, the counts) and ends with the summary block
// naming where the answers are; off a terminal the first log line names
// input, output and the number of requests.
func TestTerminalRunShowsStartAndEnd(t *testing.T) {
	in, _ := promptFile(t, 30)
	out := filepath.Join(t.TempDir(), "answers.jsonl")
	var stderr, stdout strings.Builder
	io := &IO{In: strings.NewReader(""), Out: &stdout, Err: &stderr, ErrIsTerminal: true,
		Width: func() int { return 80 }, Getenv: func(string) string { return "" }}
	if code := Execute(context.Background(), io, []string{"batch", in, "--provider", "mock", "-o", out}); code != ExitOK {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	got := stderr.String()
	if first := strings.SplitN(got, "\n", 2)[0]; first != "llmrun: "+in+" → "+out+" (errors to "+strings.TrimSuffix(out, ".jsonl")+".errors.jsonl)" {
		t.Errorf("first line %q", first)
	}
	for _, want := range []string{"  30 requests, 0 answered before, 30 to send", "llmrun: done: all 30 requests succeeded",
		"Requests:  30 total, 30 succeeded", "Answers:   " + out} {
		if !strings.Contains(got, want) {
			t.Errorf("lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "Resume:") || strings.Contains(got, "Errors:") {
		t.Errorf("nothing pending or failed, yet:\n%s", got)
	}

	c := &cli{}
	in2, _ := promptFile(t, 7)
	if code := c.run(t, "batch", in2, "--provider", "mock"); code != ExitOK {
		t.Fatalf("exit %d: %s", code, c.stderr.String())
	}
	first := strings.SplitN(c.stderr.String(), "\n", 2)[0]
	for _, want := range []string{in2, strings.TrimSuffix(in2, ".jsonl") + ".out.jsonl", "7 requests"} {
		if !strings.Contains(first, want) {
			t.Errorf("the log's first line %q lacks %q", first, want)
		}
	}
}
