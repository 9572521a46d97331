package providers

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Class sorts a failed attempt by what the runner should do about it.
type Class uint8

const (
	// ClassUnknown is an error nobody classified; treated as transient.
	ClassUnknown Class = iota
	// ClassRateLimited is a 429 rate-limit answer: wait (retry-after) and retry.
	ClassRateLimited
	// ClassOverloaded is 529 / 503 / overloaded_error: the provider is busy.
	ClassOverloaded
	// ClassServer is any other 5xx, 408 or 409.
	ClassServer
	// ClassMidStream is an error after a 200: an error event or a stream that
	// ended before its terminator. The partial text is discarded.
	ClassMidStream
	// ClassNetwork is a connection reset, refused or otherwise broken transport.
	ClassNetwork
	// ClassTimeout is a first-byte, idle or per-attempt timeout.
	ClassTimeout
	// ClassInvalid is 400/404/413/422: this request can never succeed.
	ClassInvalid
	// ClassAuth is 401/403: no request can succeed; the run aborts.
	ClassAuth
	// ClassQuota is a spend cap or exhausted quota: the run aborts.
	ClassQuota
	// ClassRedirect is a 3xx answer. API calls never follow redirects (the
	// key and the prompt would go to a host nobody named), and every
	// request goes to the same URL, so the base URL is wrong for all of
	// them: the run aborts, resumable once the base URL is fixed.
	ClassRedirect
	// ClassTooLarge is a response larger than Config.ResponseLimit allows
	// (an endless stream, a 5 GB body). Not retried: a server that broke
	// the bound once will likely do it again, and each try is billed; a
	// legitimately large answer needs a higher limit, after which the
	// rerun retries it like any failed request.
	ClassTooLarge
)

var classNames = [...]string{"unknown", "rate_limited", "overloaded", "server_error", "mid_stream", "network", "timeout", "invalid_request", "auth", "quota", "redirect", "response_too_large"}

func (c Class) String() string {
	if int(c) < len(classNames) {
		return classNames[c]
	}
	return fmt.Sprintf("class(%d)", c)
}

// Retryable reports whether another attempt of the same request may succeed.
func (c Class) Retryable() bool {
	switch c {
	case ClassInvalid, ClassAuth, ClassQuota, ClassRedirect, ClassTooLarge:
		return false
	}
	return true
}

// AbortsRun reports whether the error stops the whole run, not just its request.
func (c Class) AbortsRun() bool { return c == ClassAuth || c == ClassQuota || c == ClassRedirect }

// Error is a failed attempt, typed. Its message never contains the API key.
type Error struct {
	Class Class
	// Status is the HTTP status; 200 for mid-stream errors, 0 without a response.
	Status int
	// Type and Code are the provider's error.type and error.code
	// (Anthropic's error.details.error_code lands in Code).
	Type, Code string
	Message    string
	RequestID  string
	// RetryAfter is the server's hint (retry-after-ms, retry-after); valid when HasRetryAfter.
	RetryAfter    time.Duration
	HasRetryAfter bool
	// ShouldRetry is the server's own verdict, x-should-retry, which the
	// official SDKs obey over the status: +1 (true), -1 (false), 0 (none).
	// It overrides Class.Retryable for this failure (see Retryable); the
	// class still says what kind of failure it was, for the limiter and
	// the breaker.
	ShouldRetry int8
	// Body is the error response body as the provider sent it (redacted), if any.
	Body []byte
	// Limits are the rate-limit headers of the failed response.
	Limits RateLimits
	// Daily marks a 429 from a per-day limit (a Gemini PerDay quota, an
	// OpenAI or Groq "per day" limit): no wait of minutes helps. RetryAfter,
	// when given, is the provider's word on when it lifts.
	Daily bool
	// Err is the underlying transport error, if any.
	Err error
	// Hint suggests the fix for a failure that betrays a setup mistake
	// (a base URL without /v1, an unknown model, a server that rejects the
	// stream flags); "" when none is known.
	Hint string
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.Class.String())
	if e.Status != 0 {
		fmt.Fprintf(&b, " (HTTP %d)", e.Status)
	}
	if e.Type != "" || e.Code != "" {
		fmt.Fprintf(&b, " [%s", e.Type)
		if e.Code != "" {
			fmt.Fprintf(&b, "/%s", e.Code)
		}
		b.WriteString("]")
	}
	if e.Message != "" {
		b.WriteString(": ")
		b.WriteString(e.Message)
	} else if e.Err != nil {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	if e.RequestID != "" {
		fmt.Fprintf(&b, " (request %s)", e.RequestID)
	}
	if e.Hint != "" {
		b.WriteString("; ")
		b.WriteString(e.Hint)
	}
	return b.String()
}

func (e *Error) Unwrap() error { return e.Err }

// Retryable reports whether another attempt of the request may succeed:
// the server's x-should-retry verdict when it gave one, else the class's.
// Classes that stop the whole run (AbortsRun) stop it whatever the verdict.
func (e *Error) Retryable() bool {
	if e.ShouldRetry != 0 && !e.Class.AbortsRun() {
		return e.ShouldRetry > 0
	}
	return e.Class.Retryable()
}

// parseShouldRetry reads an x-should-retry header: "true", "false", or
// anything else (no verdict).
func parseShouldRetry(v string) int8 {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "true":
		return 1
	case "false":
		return -1
	}
	return 0
}

// ClassOf returns the class of err: its *Error's class, or ClassUnknown.
func ClassOf(err error) Class {
	var pe *Error
	if errors.As(err, &pe) {
		return pe.Class
	}
	return ClassUnknown
}

// ClassifyStatus is the status-only classification both providers start from;
// they refine it with the error body (quota, overload types).
func ClassifyStatus(status int) Class {
	switch {
	case status == 429:
		return ClassRateLimited
	case status == 401 || status == 403:
		return ClassAuth
	case status == 529 || status == 503:
		return ClassOverloaded
	case status == 408 || status == 409 || status >= 500:
		return ClassServer
	case status >= 400:
		return ClassInvalid
	}
	return ClassUnknown
}

const redacted = "[REDACTED]"

// Redact replaces every occurrence of secret in b, and of its 8-character
// head followed by anything up to the next quote or space (providers echo
// masked keys such as "sk-abc123***wxyz"), with [REDACTED].
//
// secret may hold more than one line (Config.Secret): the first is the
// API key, as above; every later one is a credential replaced only where
// it occurs whole.
func Redact(b []byte, secret string) []byte {
	secret, rest, _ := strings.Cut(secret, "\n")
	for rest != "" && len(b) > 0 {
		var s string
		s, rest, _ = strings.Cut(rest, "\n")
		if len(s) >= 4 {
			b = bytes.ReplaceAll(b, []byte(s), []byte(redacted))
		}
	}
	if len(secret) < 4 || len(b) == 0 {
		return b
	}
	b = bytes.ReplaceAll(b, []byte(secret), []byte(redacted))
	head := secret
	if len(head) > 8 {
		head = head[:8]
	}
	for {
		i := bytes.Index(b, []byte(head))
		if i < 0 {
			return b
		}
		j := i + len(head)
		for j < len(b) && b[j] != '"' && b[j] != ' ' && b[j] != '\n' && b[j] != '\'' && b[j] != ',' {
			j++
		}
		b = append(b[:i:i], append([]byte(redacted), b[j:]...)...)
	}
}

// RedactString is Redact for strings.
func RedactString(s, secret string) string {
	return string(Redact([]byte(s), secret))
}

// RateLimitDimension is what a 429 was about, as far as it says: the
// window its headers show exhausted, else its message's words, else
// "unknown".
func (pe *Error) RateLimitDimension() string {
	l := pe.Limits
	switch {
	case l.Requests.Remaining == 0:
		return "requests"
	case l.InputTokens.Remaining == 0:
		return "input_tokens"
	case l.OutputTokens.Remaining == 0:
		return "output_tokens"
	case l.Tokens.Remaining == 0:
		return "tokens"
	}
	msg := strings.ToLower(pe.Message)
	switch {
	case strings.Contains(msg, "input tokens"):
		return "input_tokens"
	case strings.Contains(msg, "output tokens"):
		return "output_tokens"
	case strings.Contains(msg, "tokens per"):
		return "tokens"
	case strings.Contains(msg, "requests per"):
		return "requests"
	}
	return "unknown"
}
