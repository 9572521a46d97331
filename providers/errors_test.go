package providers

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestClassifyStatus(t *testing.T) {
	tests := map[int]Class{
		200: ClassUnknown, 400: ClassInvalid, 401: ClassAuth, 402: ClassInvalid, 403: ClassAuth,
		404: ClassInvalid, 408: ClassServer, 409: ClassServer, 413: ClassInvalid, 422: ClassInvalid,
		429: ClassRateLimited, 500: ClassServer, 502: ClassServer, 503: ClassOverloaded,
		504: ClassServer, 529: ClassOverloaded,
	}
	for status, want := range tests {
		if got := ClassifyStatus(status); got != want {
			t.Errorf("ClassifyStatus(%d) = %v, want %v", status, got, want)
		}
	}
}

func TestClassPredicates(t *testing.T) {
	for c := ClassUnknown; c <= ClassTooLarge; c++ {
		stop := c == ClassInvalid || c == ClassAuth || c == ClassQuota || c == ClassRedirect || c == ClassTooLarge
		if c.Retryable() == stop {
			t.Errorf("%v.Retryable() = %v", c, c.Retryable())
		}
		if c.AbortsRun() != (c == ClassAuth || c == ClassQuota || c == ClassRedirect) {
			t.Errorf("%v.AbortsRun() = %v", c, c.AbortsRun())
		}
		if strings.HasPrefix(c.String(), "class(") {
			t.Errorf("%d has no name", c)
		}
	}
	if Class(200).String() != "class(200)" {
		t.Error(Class(200).String())
	}
}

func TestErrorMessageAndUnwrap(t *testing.T) {
	inner := errors.New("connection reset")
	e := &Error{Class: ClassRateLimited, Status: 429, Type: "tokens", Code: "rate_limit_exceeded", Message: "slow down", RequestID: "req_1"}
	if got, want := e.Error(), "rate_limited (HTTP 429) [tokens/rate_limit_exceeded]: slow down (request req_1)"; got != want {
		t.Errorf("got %q\nwant %q", got, want)
	}
	n := &Error{Class: ClassNetwork, Err: inner}
	wrapped := fmt.Errorf("attempt 2: %w", n)
	if !errors.Is(wrapped, inner) || ClassOf(wrapped) != ClassNetwork {
		t.Errorf("unwrap/ClassOf broken: %v", wrapped)
	}
	if ClassOf(inner) != ClassUnknown {
		t.Error("plain error should be unknown")
	}
	if got := n.Error(); got != "network: connection reset" {
		t.Errorf("got %q", got)
	}
}

func TestRedact(t *testing.T) {
	const key = "sk-abcd1234efgh5678wxyz"
	tests := map[string]struct{ in, want string }{
		"full key":       {`{"message":"Incorrect API key provided: sk-abcd1234efgh5678wxyz."}`, `{"message":"Incorrect API key provided: [REDACTED]."}`},
		"masked form":    {`{"message":"Incorrect API key provided: sk-abcd1234***wxyz"}`, `{"message":"Incorrect API key provided: [REDACTED]"}`},
		"masked + space": {`key sk-abcd12**********wxyz is bad`, `key [REDACTED] is bad`},
		"twice":          {`sk-abcd1234efgh5678wxyz sk-abcd1234efgh5678wxyz`, `[REDACTED] [REDACTED]`},
		"no key":         {`nothing here`, `nothing here`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := RedactString(tc.in, key); got != tc.want {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
		})
	}
	if got := RedactString("abc", "ab"); got != "abc" {
		t.Errorf("short secrets are not redacted (too many false hits): %q", got)
	}
}

// TestErrorRetryable: the server's x-should-retry verdict wins over the
// class, except for the classes that stop the whole run.
func TestErrorRetryable(t *testing.T) {
	tests := []struct {
		class  Class
		header string
		want   bool
	}{
		{ClassServer, "", true},
		{ClassServer, "false", false},
		{ClassRateLimited, " FALSE ", false},
		{ClassInvalid, "", false},
		{ClassInvalid, "true", true},
		{ClassInvalid, "maybe", false},
		{ClassAuth, "true", false},
		{ClassQuota, "true", false},
	}
	for _, tc := range tests {
		e := &Error{Class: tc.class, ShouldRetry: parseShouldRetry(tc.header)}
		if got := e.Retryable(); got != tc.want {
			t.Errorf("%v with x-should-retry %q: Retryable %v, want %v", tc.class, tc.header, got, tc.want)
		}
	}
}
