package cmd

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// TestHostileServers drives the binary against servers that misbehave
// (issue 9 items 1 and 2): a redirecting base URL stops the run (exit 3)
// without reaching the other host; an answer past its bound fails its
// request once (exit 1, not retried), unless --max-response-bytes allows
// it; a 500 saying x-should-retry: false is not retried.
func TestHostileServers(t *testing.T) {
	var elsewhere atomic.Int64
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { elsewhere.Add(1) }))
	defer other.Close()
	var attempts atomic.Int64
	// A valid answer of 200 kB: past a 100 kB bound for 40 max tokens.
	big := `{"id":"c","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"` +
		strings.Repeat("a", 200<<10) + `"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		attempts.Add(1)
		if strings.HasPrefix(r.URL.Path, "/redirect") {
			http.Redirect(w, r, other.URL+"/v1/chat/completions", http.StatusPermanentRedirect)
			return
		}
		if strings.HasPrefix(r.URL.Path, "/noretry") {
			w.Header().Set("x-should-retry", "false")
			w.WriteHeader(http.StatusInternalServerError)
			io.WriteString(w, `{"error":{"message":"do not bother","type":"server_error","param":null,"code":null}}`)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, big)
	}))
	defer srv.Close()
	in, _ := promptFile(t, 3)
	c := &cli{env: map[string]string{"OPENAI_API_KEY": "sk-test-hostile-0123456789"}}
	run := func(base string, extra ...string) (int, string) {
		out := filepath.Join(t.TempDir(), "out.jsonl")
		args := append([]string{"batch", in, "--provider", "openai", "--model", "m", "--base-url", base, "-o", out, "--quiet", "--stream=false",
			"--concurrency", "1", "--backoff-base", "1ms", "--backoff-max", "1ms"}, extra...)
		code := c.run(t, args...)
		errs, _ := os.ReadFile(strings.TrimSuffix(out, ".jsonl") + ".errors.jsonl") // beside -o
		return code, string(errs)
	}

	if code, _ := run(srv.URL + "/redirect/v1"); code != ExitAborted || !strings.Contains(c.stderr.String(), other.URL) {
		t.Fatalf("redirect: exit %d, stderr %s", code, c.stderr.String())
	}
	if elsewhere.Load() != 0 || attempts.Load() != 1 {
		t.Fatalf("redirect: %d requests reached the other host, %d attempts", elsewhere.Load(), attempts.Load())
	}

	attempts.Store(0)
	code, errs := run(srv.URL+"/v1", "--max-response-bytes", "100000")
	if code != ExitFailed || strings.Count(errs, `"code":"response_too_large"`) != 3 || attempts.Load() != 3 {
		t.Fatalf("oversize: exit %d, %d attempts, errors %.300s", code, attempts.Load(), errs)
	}
	if code, errs := run(srv.URL+"/v1", "--max-response-bytes", "1000000"); code != ExitOK {
		t.Fatalf("raised bound: exit %d, errors %.300s, stderr %s", code, errs, c.stderr.String())
	}

	// A 500 would be retried, but the server says x-should-retry: false.
	attempts.Store(0)
	if code, errs := run(srv.URL + "/noretry/v1"); code != ExitFailed || attempts.Load() != 3 || strings.Count(errs, "do not bother") < 3 {
		t.Fatalf("x-should-retry false: exit %d, %d attempts, errors %.300s", code, attempts.Load(), errs)
	}
}
