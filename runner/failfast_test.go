package runner

import (
	"context"
	"errors"
	"net"
	"net/url"
	"testing"
	"time"

	"github.com/llmrun/llmrun/ending"
	"github.com/llmrun/llmrun/providers"
)

var (
	t0       = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	notFound = &providers.Error{Class: providers.ClassInvalid, Status: 404, Message: "Invalid URL (POST /chat/completions)"}
	tooLong  = &providers.Error{Class: providers.ClassInvalid, Status: 400, Message: "context length exceeded"}
	limited  = &providers.Error{Class: providers.ClassRateLimited, Status: 429}
	refused  = &providers.Error{Class: providers.ClassNetwork, Message: "dial tcp: connection refused",
		Err: &url.Error{Op: "Post", URL: "http://127.0.0.1:9", Err: &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connect: connection refused")}}}
	anAnswer = attemptOutcome{resp: &providers.Response{Status: 200}, sent: t0}
)

func failed(err error) attemptOutcome { return attemptOutcome{err: err, sent: t0} }

func TestFailFastJudge(t *testing.T) {
	for _, tc := range []struct {
		name     string
		n        int
		outcomes []attemptOutcome
		stopAt   int // index of the outcome that stops the run; -1 none
	}{
		{"all alike", 3, []attemptOutcome{failed(notFound), failed(notFound), failed(notFound)}, 2},
		{"transient ones do not count", 3, []attemptOutcome{failed(notFound), failed(limited), failed(notFound), failed(limited), failed(notFound)}, 4},
		{"an answer disarms", 3, []attemptOutcome{failed(notFound), anAnswer, failed(notFound), failed(notFound), failed(notFound)}, -1},
		{"a different failure disarms", 3, []attemptOutcome{failed(notFound), failed(tooLong), failed(notFound), failed(notFound)}, -1},
		{"not sent and cut say nothing", 2, []attemptOutcome{notSent, {err: notFound, sent: t0, cut: true}, failed(notFound), failed(notFound)}, 3},
		{"off", 0, []attemptOutcome{failed(notFound), failed(notFound)}, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFailFast(tc.n)
			stopped := -1
			for i, o := range tc.outcomes {
				held, ok := f.acquire(context.Background())
				if !ok {
					t.Fatal("acquire failed")
				}
				if !held {
					continue
				}
				if err := f.judge(o); err != nil {
					if stopped >= 0 {
						t.Fatalf("stopped twice: %v", err)
					}
					stopped = i
					var ffe *ending.FailFastError
					if !errors.As(err, &ffe) || ffe.Attempts != tc.n || !errors.Is(err, notFound) {
						t.Errorf("error %v, want a FailFastError of %d wrapping the 404", err, tc.n)
					}
				}
			}
			if stopped != tc.stopAt {
				t.Errorf("stopped at %d, want %d", stopped, tc.stopAt)
			}
		})
	}
}

// TestFailFastBoundsAttempts: while armed, no more than n attempts are out
// unjudged; the n+1st waits until a place frees.
func TestFailFastBoundsAttempts(t *testing.T) {
	f := newFailFast(2)
	for range 2 {
		if held, _ := f.acquire(context.Background()); !held {
			t.Fatal("no place")
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, ok := f.acquire(ctx); ok {
		t.Fatal("a third attempt got a place of two")
	}
	got := make(chan bool)
	go func() {
		held, ok := f.acquire(context.Background())
		got <- held && ok
	}()
	f.judge(failed(limited)) // transient: its place is given back
	if !<-got {
		t.Fatal("the freed place was not handed on")
	}
	f.judge(anAnswer) // disarms
	if held, ok := f.acquire(context.Background()); held || !ok {
		t.Errorf("disarmed: acquire = %v, %v; want no place needed", held, ok)
	}
}

func TestConnectWatch(t *testing.T) {
	const deadline = 30 * time.Second
	at := func(d time.Duration, o attemptOutcome) attemptOutcome { o.sent = t0.Add(d); return o }
	t.Run("never reached", func(t *testing.T) {
		w := &connectWatch{}
		w.observe(at(0, failed(refused)))
		if err, left := w.exceeded(t0.Add(10*time.Second), deadline); err != nil || left != 20*time.Second {
			t.Fatalf("at 10s: %v, %v left; want none and 20s", err, left)
		}
		w.observe(at(5*time.Second, failed(refused)))
		err, _ := w.exceeded(t0.Add(deadline), deadline)
		var ue *ending.UnreachableError
		if !errors.As(err, &ue) || !errors.Is(err, refused) {
			t.Fatalf("at the deadline: %v, want an UnreachableError wrapping the failure", err)
		}
	})
	t.Run("reached once", func(t *testing.T) {
		for _, o := range []attemptOutcome{anAnswer, failed(notFound), failed(limited)} {
			w := &connectWatch{}
			w.observe(at(0, failed(refused)))
			w.observe(at(time.Second, o))
			w.observe(at(2*time.Second, failed(refused)))
			if err, _ := w.exceeded(t0.Add(time.Hour), deadline); err != nil {
				t.Errorf("after %v: %v; a reached server is the breaker's", o.err, err)
			}
		}
	})
	t.Run("no failure yet, cut or off", func(t *testing.T) {
		w := &connectWatch{}
		w.observe(attemptOutcome{err: refused, sent: t0, cut: true})
		w.observe(notSent)
		if err, _ := w.exceeded(t0.Add(time.Hour), deadline); err != nil {
			t.Errorf("%v", err)
		}
		w.observe(failed(refused))
		if err, _ := w.exceeded(t0.Add(time.Hour), 0); err != nil {
			t.Errorf("deadline 0: %v", err)
		}
	})
}

func TestRateLimitDimension(t *testing.T) {
	unknown := providers.Window{Limit: -1, Remaining: -1}
	none := providers.RateLimits{Requests: unknown, Tokens: unknown, InputTokens: unknown, OutputTokens: unknown}
	with := func(f func(*providers.RateLimits)) providers.RateLimits { l := none; f(&l); return l }
	for _, tc := range []struct {
		limits providers.RateLimits
		msg    string
		want   string
	}{
		{with(func(l *providers.RateLimits) { l.Requests.Remaining = 0 }), "", "requests"},
		{with(func(l *providers.RateLimits) { l.InputTokens.Remaining = 0 }), "", "input_tokens"},
		{with(func(l *providers.RateLimits) { l.OutputTokens.Remaining = 0 }), "", "output_tokens"},
		{with(func(l *providers.RateLimits) { l.Tokens.Remaining = 0 }), "", "tokens"},
		{none, "Rate limit reached for gpt-4o in organization org-x on tokens per min (TPM): Limit 30000", "tokens"},
		{none, "Rate limit reached on requests per min (RPM)", "requests"},
		{none, "This request would exceed the rate limit for your organization of 40,000 input tokens per minute", "input_tokens"},
		{none, "slow down", "unknown"},
	} {
		pe := &providers.Error{Class: providers.ClassRateLimited, Status: 429, Limits: tc.limits, Message: tc.msg}
		if got := pe.RateLimitDimension(); got != tc.want {
			t.Errorf("%q %+v: %q, want %q", tc.msg, tc.limits, got, tc.want)
		}
	}
}
