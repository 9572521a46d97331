package cmd

import (
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/llmrun/llmrun/providers/mock"
)

// TestNeverWorkedStopsFast: behind a gateway that answers every streamed
// request 500 {"status":"failure"}, a run that has not had one success
// stops at --setup-deadline (exit 3), not after --max-outage, naming the
// 500 and suggesting --stream=false; the same job with --stream=false
// completes.
func TestNeverWorkedStopsFast(t *testing.T) {
	srv := httptest.NewServer(mock.New(mock.Config{StreamFailure: true}))
	t.Cleanup(srv.Close)
	in, _ := promptFile(t, 20)
	c := &cli{env: mockEnv(srv.URL)}
	code := c.run(t, "batch", in, "--provider", "openai", "--model", "m", "--concurrency", "2",
		"--breaker-min-attempts", "3", "--breaker-cooldown", "20ms", "--max-outage", "1h",
		"--setup-deadline", "200ms", "--backoff-base", "1ms", "--backoff-max", "2ms")
	if code != ExitAborted {
		t.Fatalf("exit %d, want 3: %s", code, c.stderr.String())
	}
	msg := c.stderr.String()
	for _, want := range []string{"nothing has succeeded", "HTTP 500", `{"status":"failure"}`, "sent plain (not streamed) succeeded", "--stream=false"} {
		if !strings.Contains(msg, want) {
			t.Errorf("stderr does not say %q: %s", want, msg)
		}
	}
	c = &cli{env: mockEnv(srv.URL)}
	if code := c.run(t, "batch", in, "--provider", "openai", "--model", "m", "--stream=false"); code != ExitOK {
		t.Fatalf("--stream=false: exit %d: %s", code, c.stderr.String())
	}
}

// TestDownFromTheStartIsNotAStreamingProblem: a server answering 500 to
// everything from the start stops at --setup-deadline naming the 500, and
// the plain probe failing too says streaming is not the problem.
func TestDownFromTheStartIsNotAStreamingProblem(t *testing.T) {
	srv := httptest.NewServer(mock.New(mock.Config{Outage: true}))
	t.Cleanup(srv.Close)
	in, _ := promptFile(t, 20)
	c := &cli{env: mockEnv(srv.URL)}
	code := c.run(t, "batch", in, "--provider", "openai", "--model", "m", "--concurrency", "2",
		"--breaker-min-attempts", "3", "--breaker-cooldown", "20ms", "--max-outage", "1h",
		"--setup-deadline", "200ms", "--backoff-base", "1ms", "--backoff-max", "2ms")
	if code != ExitAborted {
		t.Fatalf("exit %d, want 3: %s", code, c.stderr.String())
	}
	msg := c.stderr.String()
	for _, want := range []string{"nothing has succeeded", "HTTP 500", "sent plain failed too", "not a streaming problem"} {
		if !strings.Contains(msg, want) {
			t.Errorf("stderr does not say %q: %s", want, msg)
		}
	}
	if strings.Contains(msg, "rerun with --stream=false") {
		t.Errorf("suggests --stream=false for a server that is down: %s", msg)
	}
}
