package runner

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/llmrun/llmrun/ending"
	"github.com/llmrun/llmrun/providers"
)

// TestSetupWatch: a key that never succeeded and whose attempts failed
// the same way (5 or more, over the deadline) is a setup failure; a key
// that answered once, failures that differ, refusals for load and too few
// or too recent failures are not.
func TestSetupWatch(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	fail := func(status int, msg string) attemptOutcome {
		return attemptOutcome{err: &providers.Error{Class: providers.ClassServer, Status: status, Message: msg}}
	}
	ok := attemptOutcome{resp: &providers.Response{}}
	limited := attemptOutcome{err: &providers.Error{Class: providers.ClassRateLimited, Status: 503, Message: "slow down"}}
	const deadline = 30 * time.Second
	for _, tt := range []struct {
		name  string
		seq   []attemptOutcome
		every time.Duration // between attempts
		at    time.Duration // judged this long after the first
		want  bool
	}{
		{"five the same over the deadline", rep(fail(500, "failure"), 5), time.Second, deadline, true},
		{"before the deadline", rep(fail(500, "failure"), 20), 100 * time.Millisecond, deadline - time.Second, false},
		{"four", rep(fail(500, "failure"), 4), time.Second, time.Minute, false},
		{"worked once", append([]attemptOutcome{ok}, rep(fail(500, "failure"), 9)...), time.Second, time.Minute, false},
		{"worked later", append(rep(fail(500, "failure"), 3), ok), time.Second, time.Minute, false},
		{"different failures", []attemptOutcome{fail(500, "a"), fail(502, "b"), fail(500, "a"), fail(503, "c"), fail(500, "a")}, time.Second, time.Minute, false},
		{"the last five the same", append(rep(fail(502, "b"), 2), rep(fail(500, "a"), 5)...), time.Second, time.Minute, true},
		{"refusals for load", rep(limited, 10), time.Second, time.Minute, false},
		{"client errors", rep(fail(400, "bad"), 10), time.Second, time.Minute, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var w setupWatch
			for i, o := range tt.seq {
				o.sent = t0.Add(time.Duration(i) * tt.every)
				w.observe(o)
			}
			err, _ := w.exceeded(t0.Add(tt.at), deadline)
			if (err != nil) != tt.want {
				t.Fatalf("setup failure %v, want %v", err, tt.want)
			}
			var se *ending.SetupError
			if tt.want && (!errors.As(err, &se) || !strings.Contains(err.Error(), "HTTP 500")) {
				t.Errorf("error %q does not name the status", err)
			}
		})
	}
}

func rep(o attemptOutcome, n int) []attemptOutcome {
	out := make([]attemptOutcome, n)
	for i := range out {
		out[i] = o
	}
	return out
}
