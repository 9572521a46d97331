package cmd

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/llmrun/llmrun/providers/mock"
)

// calibrationInput writes n Anthropic batch lines of varied length, a third
// of them with non-ASCII text (accents, CJK), and returns the path and the
// lines' params (the bodies the provider counts).
func calibrationInput(t *testing.T, n int) (string, []string) {
	t.Helper()
	rng := rand.New(rand.NewPCG(24, 3))
	words := []string{"harbor", "delta", "quartz", "the", "of", "lagoon", "summit", "river", "and", "island"}
	other := []string{"café", "numéro", "über", "日本語", "東京", "naïve", "señor", "привет"}
	var b strings.Builder
	params := make([]string, n)
	for i := range n {
		var words2 []string
		for range 5 + rng.IntN(120) {
			if i%3 == 0 && rng.IntN(3) == 0 {
				words2 = append(words2, other[rng.IntN(len(other))])
			} else {
				words2 = append(words2, words[rng.IntN(len(words))])
			}
		}
		p, _ := json.Marshal(map[string]any{"model": "claude-sonnet-4-5", "max_tokens": 100,
			"messages": []map[string]string{{"role": "user", "content": strings.Join(words2, " ")}}})
		params[i] = string(p)
		fmt.Fprintf(&b, `{"custom_id":"c-%05d","params":%s}`+"\n", i, p)
	}
	path := filepath.Join(t.TempDir(), "in.jsonl")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path, params
}

// TestEstimateCalibratedByCountTokens is issue 24's done-when: on 2,000
// Anthropic lines (a third non-ASCII) estimate --json lands within 3% of
// the server's own total while calling count_tokens at most 300 times;
// the server's total is taken by counting every line through the mock's
// counter. --offline keeps the local count (bytes/4), which is further off.
func TestEstimateCalibratedByCountTokens(t *testing.T) {
	m, url := mockServer(t, mock.Config{})
	in, params := calibrationInput(t, 2000)
	c := &cli{env: mockEnv(url)}
	if code := c.run(t, "estimate", in, "--provider", "anthropic", "--json"); code != 0 {
		t.Fatalf("exit %d: %s", code, c.stderr.String())
	}
	calls := m.Stats().CountTokens
	got := gjson.Get(c.stdout.String(), "input_tokens").Int()
	cal := gjson.Get(c.stdout.String(), "models.0.calibration")
	var server int64
	for _, p := range params {
		req, _ := http.NewRequest(http.MethodPost, url+"/v1/messages/count_tokens", strings.NewReader(p))
		req.Header.Set("x-api-key", "k")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var v struct {
			InputTokens int64 `json:"input_tokens"`
		}
		json.NewDecoder(resp.Body).Decode(&v)
		resp.Body.Close()
		server += v.InputTokens
	}
	off := math.Abs(float64(got-server)) / float64(server)
	t.Logf("estimate %d, server %d (%.2f%% off), %d count_tokens calls, calibration %s", got, server, 100*off, calls, cal.Raw)
	if calls == 0 || calls > 300 {
		t.Errorf("%d count_tokens calls, want 1..300", calls)
	}
	if off > 0.03 {
		t.Errorf("estimate %d is %.1f%% from the server's %d", got, 100*off, server)
	}
	if !cal.Exists() || cal.Get("sample").Int() != calls || cal.Get("input_tokens_low").Int() > server || cal.Get("input_tokens_high").Int() < server {
		t.Errorf("calibration %s: want the sample size and a band holding %d", cal.Raw, server)
	}

	before := m.Stats().CountTokens
	if code := c.run(t, "estimate", in, "--provider", "anthropic", "--json", "--offline"); code != 0 {
		t.Fatalf("--offline: exit %d: %s", code, c.stderr.String())
	}
	local := gjson.Get(c.stdout.String(), "input_tokens").Int()
	if m.Stats().CountTokens != before || gjson.Get(c.stdout.String(), "models.0.calibration").Exists() {
		t.Errorf("--offline asked count_tokens")
	}
	if math.Abs(float64(local-server))/float64(server) <= off {
		t.Errorf("the local count %d is as close to %d as the calibrated one", local, server)
	}
}

// TestLiveRunSeedsCalibration: a live Anthropic run of 1,000 requests has
// the provider count a small sample before it starts (at most 30 calls),
// and --offline none; both runs answer every request once.
func TestLiveRunSeedsCalibration(t *testing.T) {
	m, url := mockServer(t, mock.Config{})
	in, params := calibrationInput(t, 1000) // liveCalibrateMin
	c := &cli{env: mockEnv(url)}
	dir := t.TempDir()
	for _, offline := range []bool{false, true} {
		before := m.Stats().CountTokens
		out := filepath.Join(dir, fmt.Sprintf("out-%v.jsonl", offline))
		args := []string{"batch", in, "--provider", "anthropic", "-o", out, "--quiet", "--concurrency", "64"}
		if offline {
			args = append(args, "--offline")
		}
		if code := c.run(t, args...); code != 0 {
			t.Fatalf("offline=%v: exit %d: %s", offline, code, c.stderr.String())
		}
		calls := m.Stats().CountTokens - before
		if offline && calls != 0 || !offline && (calls < 10 || calls > 30) {
			t.Errorf("offline=%v: %d count_tokens calls", offline, calls)
		}
		if n := len(readLines(t, out)); n != len(params) {
			t.Errorf("offline=%v: %d answers, want %d", offline, n, len(params))
		}
	}
}
