package cmd

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/llmrun/llmrun/providers/mock"
	"github.com/llmrun/llmrun/runner"
)

// TestHugeRetryAfterPausesTheKeyForMaxPause (issue 9 item 7): one 429 with
// retry-after: 999999 must not stall the whole key for an hour; with
// --max-pause 300ms the run finishes at once, says so once, and the summary
// counts the hint.
func TestHugeRetryAfterPausesTheKeyForMaxPause(t *testing.T) {
	m := mock.New(mock.Config{})
	var calls atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) == 1 {
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("retry-after", "999999")
			w.WriteHeader(429)
			w.Write([]byte(`{"error":{"message":"slow down","type":"requests","code":"rate_limit_exceeded"}}`))
			return
		}
		m.ServeHTTP(w, r)
	}))
	defer srv.Close()
	in, prompts := promptFile(t, 4)
	dir := t.TempDir()
	sum := filepath.Join(dir, "sum.json")
	c := &cli{env: mockEnv(srv.URL)}
	start := time.Now()
	code := c.run(t, "batch", in, "--provider", "openai", "--model", "m", "-o", filepath.Join(dir, "out.jsonl"),
		"--quiet", "--concurrency", "1", "--max-pause", "300ms", "--summary", sum)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, c.stderr.String())
	}
	if took := time.Since(start); took > 20*time.Second {
		t.Errorf("took %v: the key stayed paused longer than --max-pause", took)
	}
	if n := strings.Count(c.stderr.String(), "maximum pause"); n != 1 {
		t.Errorf("%d clamp warnings, want 1: %s", n, c.stderr.String())
	}
	b, err := os.ReadFile(sum)
	if err != nil {
		t.Fatal(err)
	}
	var s runner.Summary
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	if s.Succeeded != int64(len(prompts)) || len(s.Limits) != 1 || s.Limits[0].PauseClamped != 1 {
		t.Errorf("summary: %d succeeded, limits %+v; want %d and 1 hint clamped", s.Succeeded, s.Limits, len(prompts))
	}
}
