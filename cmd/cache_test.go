package cmd

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/llmrun/llmrun/providers/mock"
)

// countingMock counts the requests that reach the mock.
type countingMock struct {
	h    http.Handler
	sent atomic.Int64
}

func (c *countingMock) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodPost {
		c.sent.Add(1)
	}
	c.h.ServeHTTP(w, r)
}

// cachePrompts writes the lines of prompts, ids prefixed; changed prompts
// get other text, and reorder re-encodes each line with its keys in
// another order and other spacing.
func cachePrompts(t *testing.T, path, prefix string, n int, changed map[int]bool, reorder bool) {
	t.Helper()
	var b strings.Builder
	for i := range n {
		p := fmt.Sprintf("Eval item %d: name a colour of the sea.", i)
		if changed[i] {
			p = fmt.Sprintf("Eval item %d, reworded: name a fish.", i)
		}
		q, _ := json.Marshal(p)
		if reorder {
			fmt.Fprintf(&b, "{ \"max_tokens\" : 40,  \"prompt\": %s, \"custom_id\": \"%s-%04d\" }\n", q, prefix, i)
		} else {
			fmt.Fprintf(&b, `{"custom_id":"%s-%04d","prompt":%s,"max_tokens":40}`+"\n", prefix, i, q)
		}
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestCacheAcrossOutputs is issue 29's acceptance: 300 requests into A
// fill the cache; the same into B send nothing and answer every line
// exactly as A; with 10 prompts changed (the rest re-encoded, under other
// ids) into C, exactly 10 are sent.
func TestCacheAcrossOutputs(t *testing.T) {
	cm := &countingMock{h: mock.New(mock.Config{Seed: 1})}
	srv := httptest.NewServer(cm)
	t.Cleanup(srv.Close)
	dir := t.TempDir()
	cacheDir, in := filepath.Join(dir, "cache"), filepath.Join(dir, "in.jsonl")
	prices := filepath.Join(dir, "prices.json")
	os.WriteFile(prices, []byte(`{"m1": {"input_per_mtok": 1, "output_per_mtok": 2}}`), 0o644)
	cachePrompts(t, in, "req", 300, nil, false)
	run := func(name, input string) (map[string]string, map[string]any) {
		t.Helper()
		c := &cli{env: mockEnv(srv.URL)}
		out := filepath.Join(dir, name+".jsonl")
		sum := filepath.Join(dir, name+".summary.json")
		if code := c.run(t, "batch", input, "--provider", "openai", "--model", "m1", "-o", out, "--cache", cacheDir,
			"--prices", prices, "--summary", sum, "--quiet"); code != 0 {
			t.Fatalf("%s: exit %d: %s", name, code, c.stderr.String())
		}
		lines := map[string]string{}
		for id, l := range readLines(t, out) {
			lines[id] = l.Raw
		}
		var s map[string]any
		raw, _ := os.ReadFile(sum)
		if err := json.Unmarshal(raw, &s); err != nil {
			t.Fatalf("%s: summary: %v", name, err)
		}
		return lines, s
	}
	a, _ := run("A", in)
	if n := cm.sent.Load(); n != 300 || len(a) != 300 {
		t.Fatalf("A: sent %d, %d lines; want 300, 300", n, len(a))
	}
	b, sumB := run("B", in)
	if n := cm.sent.Load() - 300; n != 0 {
		t.Fatalf("B sent %d requests, want 0", n)
	}
	if len(b) != 300 {
		t.Fatalf("B has %d lines, want 300", len(b))
	}
	for id, la := range a {
		lb := b[id]
		for _, k := range []string{"response.body", "response.status_code", "llmrun.input_tokens", "llmrun.output_tokens", "llmrun.model"} {
			if va, vb := jsonAt(la, k), jsonAt(lb, k); va != vb {
				t.Fatalf("%s: %s differs: A %s, B %s", id, k, va, vb)
			}
		}
		if jsonAt(lb, "llmrun.cached") != "true" || jsonAt(lb, "llmrun.cost_usd") != "0" || jsonAt(la, "llmrun.cached") != "" {
			t.Fatalf("%s: want B cached at cost 0, A not cached:\nA %s\nB %s", id, la, lb)
		}
	}
	if sumB["cache_hits"] != float64(300) || !(sumB["cache_saved_usd"].(float64) > 0) || sumB["cost_usd"] != float64(0) {
		t.Fatalf("B summary: hits %v saved %v cost %v", sumB["cache_hits"], sumB["cache_saved_usd"], sumB["cost_usd"])
	}
	changed := map[int]bool{}
	for i := range 10 {
		changed[i*29+3] = true
	}
	inC := filepath.Join(dir, "inC.jsonl")
	cachePrompts(t, inC, "c", 300, changed, true)
	c, sumC := run("C", inC)
	if n := cm.sent.Load() - 300; n != 10 {
		t.Fatalf("C sent %d requests, want 10", n)
	}
	if len(c) != 300 || sumC["cache_hits"] != float64(290) {
		t.Fatalf("C: %d lines, %v hits; want 300, 290", len(c), sumC["cache_hits"])
	}
	est := &cli{env: mockEnv(srv.URL)}
	if code := est.run(t, "estimate", inC, "--provider", "openai", "--model", "m1", "-o", filepath.Join(dir, "D.jsonl"), "--cache", cacheDir, "--json"); code != 0 {
		t.Fatalf("estimate: exit %d: %s", code, est.stderr.String())
	}
	if e := est.stdout.String(); jsonAt(e, "cache_hits") != "300" || jsonAt(e, "requests") != "0" {
		t.Fatalf("estimate of C after C counts cache hits as free: want 300 hits, 0 to send:\n%s", e)
	}
	for i := range 300 {
		l := c[fmt.Sprintf("c-%04d", i)]
		if cached := jsonAt(l, "llmrun.cached") == "true"; cached == changed[i] {
			t.Fatalf("c-%04d: cached=%v, changed=%v", i, cached, changed[i])
		}
	}
}

// jsonAt is the raw JSON at path in line ("" when absent).
func jsonAt(line, path string) string {
	var v map[string]any
	json.Unmarshal([]byte(line), &v)
	var cur any = v
	for _, k := range strings.Split(path, ".") {
		m, ok := cur.(map[string]any)
		if !ok {
			return ""
		}
		if cur, ok = m[k]; !ok {
			return ""
		}
	}
	b, _ := json.Marshal(cur)
	return string(b)
}

// TestCacheModesAndCommands: read mode stores nothing, write mode serves
// nothing, --cache-skip-sampled leaves sampled requests out, and the cache
// commands report and clear.
func TestCacheModesAndCommands(t *testing.T) {
	cm := &countingMock{h: mock.New(mock.Config{Seed: 1})}
	srv := httptest.NewServer(cm)
	t.Cleanup(srv.Close)
	dir := t.TempDir()
	cacheDir, in := filepath.Join(dir, "cache"), filepath.Join(dir, "in.jsonl")
	cachePrompts(t, in, "req", 20, nil, false)
	c := &cli{env: mockEnv(srv.URL)}
	entries := func() string {
		t.Helper()
		if code := c.run(t, "cache", "stats", "--cache", cacheDir); code != 0 {
			t.Fatalf("cache stats: exit %d: %s", code, c.stderr.String())
		}
		return jsonAt(c.stdout.String(), "entries")
	}
	batch := func(out string, args ...string) {
		t.Helper()
		args = append([]string{"batch", in, "--provider", "openai", "--model", "m1", "-o", filepath.Join(dir, out), "--cache", cacheDir, "--quiet"}, args...)
		if code := c.run(t, args...); code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, c.stderr.String())
		}
	}
	batch("a.jsonl", "--cache-mode", "read")
	if n := entries(); n != "0" {
		t.Fatalf("read mode stored %s entries", n)
	}
	batch("b.jsonl", "--cache-skip-sampled") // no temperature: sampled at the provider's default
	if n := entries(); n != "0" {
		t.Fatalf("--cache-skip-sampled stored %s sampled answers", n)
	}
	batch("c.jsonl", "--cache-mode", "write")
	batch("d.jsonl", "--cache-mode", "write")
	if n := entries(); n != "20" || cm.sent.Load() != 80 {
		t.Fatalf("write mode: %s entries, %d sent; want 20, 80 (write mode serves nothing)", n, cm.sent.Load())
	}
	batch("e.jsonl")
	if cm.sent.Load() != 80 {
		t.Fatalf("readwrite after write: sent %d more", cm.sent.Load()-80)
	}
	if code := c.run(t, "cache", "clear", "--cache", cacheDir); code != 0 || jsonAt(c.stdout.String(), "removed") != "20" {
		t.Fatalf("cache clear: exit %d: %s %s", code, c.stdout.String(), c.stderr.String())
	}
	if code := c.run(t, "batch", in, "-o", filepath.Join(dir, "f.jsonl"), "--cache-mode", "read"); code != 2 {
		t.Fatalf("--cache-mode without --cache: exit %d, want 2", code)
	}
	if code := c.run(t, "batch", in, "-o", filepath.Join(dir, "f.jsonl"), "--cache", cacheDir, "--cache-mode", "bogus"); code != 2 {
		t.Fatalf("bad --cache-mode: exit %d, want 2", code)
	}
}

// TestCacheFromConfigFile: the config's top-level cache: sets --cache and
// its companions; a bad one is a usage error naming the file and line.
func TestCacheFromConfigFile(t *testing.T) {
	cm := &countingMock{h: mock.New(mock.Config{Seed: 1})}
	srv := httptest.NewServer(cm)
	t.Cleanup(srv.Close)
	dir := t.TempDir()
	cacheDir, in, cfg := filepath.Join(dir, "cache"), filepath.Join(dir, "in.jsonl"), filepath.Join(dir, "llmrun.yaml")
	cachePrompts(t, in, "req", 5, nil, false)
	os.WriteFile(cfg, []byte("cache:\n  location: "+cacheDir+"\n  max_size: 1MB\n"), 0o644)
	c := &cli{env: mockEnv(srv.URL)}
	for _, out := range []string{"a.jsonl", "b.jsonl"} {
		if code := c.run(t, "batch", in, "--config", cfg, "--provider", "openai", "--model", "m1", "-o", filepath.Join(dir, out), "--quiet"); code != 0 {
			t.Fatalf("exit %d: %s", code, c.stderr.String())
		}
	}
	if n := cm.sent.Load(); n != 5 {
		t.Fatalf("sent %d, want 5 (the second run answered from the config's cache)", n)
	}
	os.WriteFile(cfg, []byte("cache:\n  colour: blue\n"), 0o644)
	code := c.run(t, "batch", in, "--config", cfg, "-o", filepath.Join(dir, "c.jsonl"))
	if code != 2 || !strings.Contains(c.stderr.String(), "llmrun.yaml:2") {
		t.Fatalf("bad cache: in config: exit %d: %s", code, c.stderr.String())
	}
}

// TestCacheCommandFromConfigFile: llmrun cache acts on the cache the
// config's cache: names, with its bound, as batch would (the defaults
// meant for batch do not stop it); a flag given on the command line wins;
// with neither, the error names both ways.
func TestCacheCommandFromConfigFile(t *testing.T) {
	dir := t.TempDir()
	fromFile, fromFlag, cfg := filepath.Join(dir, "file-cache"), filepath.Join(dir, "flag-cache"), filepath.Join(dir, "llmrun.yaml")
	os.WriteFile(cfg, []byte("cache:\n  location: "+fromFile+"\n  mode: read\n  max_size: 2GB\n  skip_sampled: true\n"), 0o644)
	c := &cli{}
	if code := c.run(t, "cache", "stats", "--config", cfg); code != 0 {
		t.Fatalf("cache stats with the config's cache: exit %d: %s", code, c.stderr.String())
	}
	if got := jsonAt(c.stdout.String(), "where"); got != fmt.Sprintf("%q", fromFile) {
		t.Errorf("cache stats acted on %s, want the config's %s", got, fromFile)
	}
	if got := jsonAt(c.stdout.String(), "max_bytes"); got != "2147483648" {
		t.Errorf("cache stats: max_bytes %s, want the config's 2GB (2147483648)", got)
	}
	if code := c.run(t, "cache", "stats", "--config", cfg, "--cache", fromFlag, "--cache-max-size", "1MB"); code != 0 {
		t.Fatalf("cache stats with flags: exit %d: %s", code, c.stderr.String())
	}
	if where, max := jsonAt(c.stdout.String(), "where"), jsonAt(c.stdout.String(), "max_bytes"); where != fmt.Sprintf("%q", fromFlag) || max != "1048576" {
		t.Errorf("flags did not win over the config: where %s, max_bytes %s; want %s, 1048576", where, max, fromFlag)
	}
	t.Chdir(t.TempDir()) // no ./llmrun.yaml
	code := c.run(t, "cache", "stats")
	if msg := c.stderr.String(); code != ExitUsage || !strings.Contains(msg, "--cache") || !strings.Contains(msg, "cache: in the config file") {
		t.Errorf("no cache anywhere: exit %d, want 2 and both ways named: %s", code, msg)
	}
}
