package report

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/llmrun/llmrun/providers"
)

// TestLogAttempt: a failed attempt's Debug record names the request, the
// status, the class and the cause, and never the body it got back.
func TestLogAttempt(t *testing.T) {
	var b bytes.Buffer
	log := slog.New(slog.NewTextHandler(&b, &slog.HandlerOptions{Level: slog.LevelDebug}))
	err := &providers.Error{Class: providers.ClassInvalid, Status: 404, Message: "no such model", Body: []byte(`{"secret":"body"}`)}
	LogAttempt(log, AttemptLog{ID: "r1", Line: 7, Provider: "openai", Model: "m", Hop: 1, Attempt: 2, Sent: time.Now(), Err: err})
	got := b.String()
	for _, want := range []string{`msg="attempt failed"`, "id=r1", "line=7", "provider=openai", "hop=1", "attempt=2", "status=404", "class="} {
		if !strings.Contains(got, want) {
			t.Errorf("record lacks %q: %s", want, got)
		}
	}
	if strings.Contains(got, "secret") {
		t.Errorf("the body reached the log: %s", got)
	}
	b.Reset()
	LogAttempt(log, AttemptLog{ID: "r2", Sent: time.Now(), Resp: &providers.Response{Status: 200, Usage: providers.Usage{OutputTokens: 5}}})
	if got := b.String(); !strings.Contains(got, `msg="attempt answered"`) || !strings.Contains(got, "output_tokens=5") {
		t.Errorf("answered: %s", got)
	}
}
