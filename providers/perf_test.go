package providers

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"testing/iotest"
	"time"
)

// The one-walk MessagesText reads what a chat or Messages body prompts
// with: the top-level system first, wherever it stands, then each
// message's content, strings and text parts alike; the first of
// duplicate keys counts, as gjson.Get's.
func TestMessagesTextOneWalk(t *testing.T) {
	body := []byte(`{"model":"m","messages":[{"role":"user","content":"a\"b"},{"role":"user","content":[{"type":"text","text":"c"},{"type":"image"}]}],"system":"s","system":"ignored","messages":[{"content":"ignored"}]}`)
	got := string(MessagesText(body))
	if want := "s\na\"b\nc\n"; got != want {
		t.Fatalf("MessagesText = %q, want %q", got, want)
	}
	if got := MessagesText([]byte(`[1,2]`)); len(got) != 0 {
		t.Fatalf("MessagesText of an array = %q, want nothing", got)
	}
}

// ParseRateLimits looks headers up by canonical name without Get's
// canonicalization: every name it reads must be canonical, or a header a
// server sends would be missed. Set canonicalizes the lower-case names.
func TestParseRateLimitsReadsEveryHeader(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	h := http.Header{}
	for _, p := range []string{"x-ratelimit-%s-requests", "x-ratelimit-%s-tokens"} {
		for i, part := range []string{"limit", "remaining", "reset"} {
			h.Set(fmt.Sprintf(p, part), []string{"100", "7", "20s"}[i])
		}
	}
	r := ParseRateLimits(h, now)
	if r.Requests != (Window{Limit: 100, Remaining: 7, Reset: 20 * time.Second}) || r.Tokens != r.Requests {
		t.Fatalf("x-ratelimit windows = %+v %+v", r.Requests, r.Tokens)
	}
	a := http.Header{}
	for _, kind := range []string{"requests", "tokens", "input-tokens", "output-tokens"} {
		for i, part := range []string{"limit", "remaining", "reset"} {
			a.Set("anthropic-ratelimit-"+kind+"-"+part, []string{"50", "5", "2026-01-01T00:00:30Z"}[i])
		}
	}
	r = ParseRateLimits(a, now)
	want := Window{Limit: 50, Remaining: 5, Reset: 30 * time.Second}
	for name, w := range map[string]Window{"requests": r.Requests, "tokens": r.Tokens, "input": r.InputTokens, "output": r.OutputTokens} {
		if w != want {
			t.Errorf("anthropic %s window = %+v, want %+v", name, w, want)
		}
	}
}

// readAll reads the whole body whatever its Content-Length says: exact,
// short, too long, absent, and in one allocation when exact.
func TestReadAllSized(t *testing.T) {
	body := strings.Repeat("x", 813)
	for _, length := range []int64{813, 10, 2000, -1, 0, 2 << 20} {
		got, err := readAll(iotest.OneByteReader(strings.NewReader(body)), length)
		if err != nil || string(got) != body {
			t.Errorf("length %d: read %d bytes, %v", length, len(got), err)
		}
	}
	if _, err := readAll(iotest.ErrReader(io.ErrUnexpectedEOF), 10); err != io.ErrUnexpectedEOF {
		t.Errorf("a failing body: %v", err)
	}
	sr := strings.NewReader(body)
	allocs := testing.AllocsPerRun(10, func() { sr.Reset(body); readAll(sr, 813) })
	if allocs != 1 {
		t.Errorf("an exact Content-Length: %v allocations, want 1", allocs)
	}
}
