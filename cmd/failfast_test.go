package cmd

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/llmrun/llmrun/providers/mock"
)

// TestConnectionRefusedStopsAtConnectDeadline: a server nobody listens on
// stops the run with exit 3 once --connect-deadline has passed, naming
// "connection refused", instead of holding for --max-outage; nothing is
// marked failed, and the rerun against a live server finishes.
func TestConnectionRefusedStopsAtConnectDeadline(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := ln.Addr().String()
	ln.Close()
	in, prompts := promptFile(t, 30)
	dir := t.TempDir()
	out, sum := filepath.Join(dir, "out.jsonl"), filepath.Join(dir, "sum.json")
	args := []string{"batch", in, "-o", out, "--provider", "openai", "--model", "m", "-q", "--summary", sum,
		"--connect-deadline", "300ms", "--backoff-base", "1ms", "--backoff-max", "5ms"}
	c := &cli{env: mockEnv("http://" + dead)}
	if code := c.run(t, args...); code != ExitAborted {
		t.Fatalf("exit %d, want 3: %s", code, c.stderr.String())
	}
	msg := c.stderr.String()
	for _, want := range []string{"connection refused by " + dead, "--connect-deadline", "could not reach openai at http://" + dead + "/v1", "resume with"} {
		if !strings.Contains(msg, want) {
			t.Errorf("stderr does not say %q: %s", want, msg)
		}
	}
	var s struct {
		WallSeconds float64 `json:"wall_seconds"`
		Failed      int64   `json:"failed"`
		Pending     int64   `json:"pending"`
		Aborted     string  `json:"aborted"`
	}
	b, _ := os.ReadFile(sum)
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	// The deadline is 300ms; the first hold of the breaker is 1s and the
	// default --max-outage 10m: stopping well within a few seconds shows
	// the deadline, not the outage rule, ended it.
	if s.WallSeconds > 5 {
		t.Errorf("stopped after %.1fs, want about the 300ms --connect-deadline", s.WallSeconds)
	}
	if s.Failed != 0 || s.Pending != int64(len(prompts)) || !strings.Contains(s.Aborted, "connection refused") {
		t.Errorf("summary: %d failed, %d pending, aborted %q; want 0 failed, all pending, the cause", s.Failed, s.Pending, s.Aborted)
	}
	_, url := mockServer(t, mock.Config{})
	c.env = mockEnv(url)
	if code := c.run(t, args...); code != ExitOK {
		t.Fatalf("rerun: exit %d: %s", code, c.stderr.String())
	}
	if got := readLines(t, out); len(got) != len(prompts) {
		t.Errorf("%d answers after the rerun, want %d", len(got), len(prompts))
	}
}

// TestConnectDeadlineSparesReachedServers: a server that answered once is
// reached; its later outage holds (for --max-outage), and the hold and
// abort messages name the latest failure.
func TestOutageNamesItsCause(t *testing.T) {
	m := mock.New(mock.Config{Outage: true})
	var calls atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) == 1 { // the first is answered
			mock.New(mock.Config{}).ServeHTTP(w, r)
			return
		}
		m.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	in, _ := promptFile(t, 20)
	c := &cli{env: mockEnv(srv.URL)}
	code := c.run(t, "batch", in, "--provider", "openai", "--model", "m", "--progress-interval", "20ms",
		"--concurrency", "2", "--breaker-min-attempts", "3", "--breaker-cooldown", "50ms", "--max-outage", "400ms",
		"--connect-deadline", "50ms", "--backoff-base", "1ms", "--backoff-max", "2ms")
	if code != ExitAborted {
		t.Fatalf("exit %d, want 3: %s", code, c.stderr.String())
	}
	msg := c.stderr.String()
	for _, want := range []string{"provider down (HTTP 500", "max-outage", "the latest failure: HTTP 500"} {
		if !strings.Contains(msg, want) {
			t.Errorf("stderr does not say %q: %s", want, msg)
		}
	}
	if strings.Contains(msg, "connect-deadline") {
		t.Errorf("a server that answered was judged unreachable: %s", msg)
	}
}

// strictV1 serves the mock under /v1 only, and answers anything else 404
// as OpenAI does, counting the attempts.
func strictV1(t *testing.T) (url string, attempts *atomic.Int64) {
	m := mock.New(mock.Config{Seed: 1})
	attempts = new(atomic.Int64)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		attempts.Add(1)
		if !strings.HasPrefix(r.URL.Path, "/v1/") {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(404)
			fmt.Fprintf(w, `{"error":{"message":"Invalid URL (%s %s)","type":"invalid_request_error","param":null,"code":null}}`, r.Method, r.URL.Path)
			return
		}
		m.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL, attempts
}

// TestFailFastMissingV1: a base URL without /v1 stops the run with exit 3
// after at most --fail-fast attempts, with the /v1 hint.
func TestFailFastMissingV1(t *testing.T) {
	for _, n := range []int{10, 3} {
		t.Run(fmt.Sprintf("fail-fast %d", n), func(t *testing.T) {
			url, attempts := strictV1(t)
			in, prompts := promptFile(t, 200)
			dir := t.TempDir()
			out := filepath.Join(dir, "out.jsonl")
			c := &cli{env: map[string]string{"OPENAI_API_KEY": "sk-test-0123456789"}}
			args := []string{"batch", in, "-o", out, "--provider", "openai", "--model", "m", "-q", "--concurrency", "16"}
			if n != 10 {
				args = append(args, "--fail-fast", fmt.Sprint(n))
			}
			args = append(args, "--base-url", url)
			code := c.run(t, args...)
			if code != ExitAborted {
				t.Fatalf("exit %d, want 3: %s", code, c.stderr.String())
			}
			if got := attempts.Load(); got > int64(n) {
				t.Errorf("the server saw %d attempts, want at most --fail-fast %d", got, n)
			}
			msg := c.stderr.String()
			for _, want := range []string{fmt.Sprintf("the first %d attempts all failed the same way", n), "HTTP 404", "does the base URL need /v1?", url + "/chat/completions"} {
				if !strings.Contains(msg, want) {
					t.Errorf("stderr does not say %q: %s", want, msg)
				}
			}
			// The rerun with the fixed URL answers everything, the requests
			// that failed included.
			args[len(args)-1] = url + "/v1"
			if code := c.run(t, args...); code != ExitOK {
				t.Fatalf("rerun with /v1: exit %d: %s", code, c.stderr.String())
			}
			if got := readLines(t, out); len(got) != len(prompts) {
				t.Errorf("%d answers after the rerun, want %d", len(got), len(prompts))
			}
		})
	}
}

// TestFailFastSparesMixedFailures: requests that fail for reasons of
// their own (a few too large for the server) do not stop the run, and
// --fail-fast 0 turns the check off.
func TestFailFastSparesMixedFailures(t *testing.T) {
	url, _ := strictV1(t)
	in, prompts := promptFile(t, 30)
	c := &cli{env: map[string]string{"OPENAI_API_KEY": "sk-test-0123456789"}}
	code := c.run(t, "batch", in, "--provider", "openai", "--model", "m", "-q", "--base-url", url, "--fail-fast", "0")
	if code != ExitFailed {
		t.Fatalf("--fail-fast 0: exit %d, want 1 (every request failed): %s", code, c.stderr.String())
	}
	if errs := readLines(t, strings.TrimSuffix(in, ".jsonl")+".errors.jsonl"); len(errs) != len(prompts) {
		t.Errorf("%d failures, want %d", len(errs), len(prompts))
	} else {
		for _, l := range errs {
			if !strings.Contains(l.Get("error.message").Str, "does the base URL need /v1?") {
				t.Errorf("errors-file message lacks the hint: %s", l.Get("error.message").Str)
				break
			}
		}
	}
	if !strings.Contains(c.stderr.String(), "failed: HTTP 404: Invalid URL (POST /chat/completions) (30)") {
		t.Errorf("the summary does not name the cause of the failures: %s", c.stderr.String())
	}
}

// TestMaxFailures: --max-failures stops a run whose failures pass a count
// or a ratio, exit 3, naming the limit and the latest cause.
func TestMaxFailures(t *testing.T) {
	for _, tc := range []struct {
		flag string
		rate float64
	}{{"5", 0.5}, {"20%", 0.5}} {
		t.Run(tc.flag, func(t *testing.T) {
			m, url := mockServer(t, mock.Config{Seed: 3, ServerErrorRate: tc.rate})
			in, _ := promptFile(t, 300)
			c := &cli{env: mockEnv(url)}
			code := c.run(t, "batch", in, "--provider", "openai", "--model", "m", "-q", "--max-attempts", "1",
				"--concurrency", "4", "--max-failures", tc.flag, "--breaker-failure-rate", "1")
			if code != ExitAborted {
				t.Fatalf("exit %d, want 3: %s", code, c.stderr.String())
			}
			if !strings.Contains(c.stderr.String(), "past --max-failures "+tc.flag) || !strings.Contains(c.stderr.String(), "HTTP 500") {
				t.Errorf("stderr does not name the limit and cause: %s", c.stderr.String())
			}
			if got := m.Stats().Attempts; got >= 300 {
				t.Errorf("%d attempts: the run did not stop early", got)
			}
		})
	}
	c := &cli{}
	in, _ := promptFile(t, 1)
	for _, bad := range []string{"x", "-1", "0%", "150%"} {
		if code := c.run(t, "batch", in, "--provider", "mock", "--max-failures", bad); code != ExitUsage {
			t.Errorf("--max-failures %s: exit %d, want 2", bad, code)
		}
	}
}

var _ = time.Second
