package cmd

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/llmrun/llmrun/providers/mock"
)

func TestVersion(t *testing.T) {
	for _, args := range [][]string{{"version"}, {"--version"}} {
		c := &cli{}
		if code := c.run(t, args...); code != ExitOK {
			t.Fatalf("%v: exit %d: %s", args, code, c.stderr.String())
		}
		if got := c.stdout.String(); !strings.HasPrefix(got, "llmrun ") || !strings.HasSuffix(got, "\n") || strings.Count(got, "\n") != 1 {
			t.Errorf("%v printed %q, want one line starting with llmrun", args, got)
		}
	}
}

// TestUserAgentAndHeaders: every request carries User-Agent llmrun/<version>
// and the --header values, and no value of theirs reaches stderr or any
// file the run writes.
func TestUserAgentAndHeaders(t *testing.T) {
	const secret = "gw-secret-7f3a9c2e1b"
	var mu sync.Mutex
	var uas, keys, referers []string
	m := mock.New(mock.Config{Seed: 1})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		uas = append(uas, r.UserAgent())
		keys = append(keys, r.Header.Get("X-Gateway-Key"))
		referers = append(referers, r.Header.Get("HTTP-Referer"))
		mu.Unlock()
		m.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	in, prompts := promptFile(t, 5)
	dir := t.TempDir()
	out := filepath.Join(dir, "out.jsonl")
	c := &cli{env: mockEnv(srv.URL)}
	code := c.run(t, "batch", in, "-o", out, "--provider", "openai", "--model", "m", "--summary", filepath.Join(dir, "s.json"),
		"-H", "X-Gateway-Key: "+secret, "--header=HTTP-Referer: https://example.com/app")
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, c.stderr.String())
	}
	if len(uas) != len(prompts) {
		t.Fatalf("%d requests, want %d", len(uas), len(prompts))
	}
	for i := range uas {
		if !strings.HasPrefix(uas[i], "llmrun/") || keys[i] != secret || referers[i] != "https://example.com/app" {
			t.Errorf("request %d: User-Agent %q, X-Gateway-Key %q, HTTP-Referer %q", i, uas[i], keys[i], referers[i])
		}
	}
	if strings.Contains(c.stderr.String(), secret) {
		t.Errorf("stderr shows the header's value: %s", c.stderr.String())
	}
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		b, _ := os.ReadFile(filepath.Join(dir, e.Name()))
		if strings.Contains(string(b), secret) {
			t.Errorf("%s holds the header's value", e.Name())
		}
	}
}

func TestBadHeader(t *testing.T) {
	in, _ := promptFile(t, 1)
	for _, h := range []string{"no colon here", "Bad Name: v", ": empty name", "X-Key: a\nb"} {
		c := &cli{}
		code := c.run(t, "batch", in, "--provider", "mock", "-H", h)
		if code != ExitUsage || !strings.Contains(c.stderr.String(), "--header") {
			t.Errorf("-H %q: exit %d, want 2 naming --header: %s", h, code, c.stderr.String())
		}
		if strings.Contains(h, "X-Key") && strings.Contains(c.stderr.String(), "a\nb") {
			t.Errorf("the error shows the header's value: %s", c.stderr.String())
		}
	}
}

func TestMaskArgs(t *testing.T) {
	got := maskArgs([]string{"batch", "in.jsonl", "-H", "Authorization: Bearer sk-1", "--header=X-Key: s2", "-HX-Other: s3",
		"--header", "X-Last: s4", "--redis", "redis://u:pw@h:6379/0", "--model", "m"})
	for _, secret := range []string{"sk-1", "s2", "s3", "s4", "pw"} {
		if strings.Contains(got, secret) {
			t.Errorf("%q shows %q", got, secret)
		}
	}
	for _, keep := range []string{"'Authorization: ***'", "--header='X-Key: ***'", "-H'X-Other: ***'", "'X-Last: ***'", "--model m", "redis://u:xxxxx@h:6379/0"} {
		if !strings.Contains(got, keep) {
			t.Errorf("%q lacks %q", got, keep)
		}
	}
}
