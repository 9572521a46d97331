package cmd

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/llmrun/llmrun/providers/mock"
)

// cli runs llmrun in-process with the given environment and arguments.
type cli struct {
	env    map[string]string
	stderr bytes.Buffer
	stdout bytes.Buffer
}

func (c *cli) run(t testing.TB, args ...string) int {
	t.Helper()
	c.stderr.Reset()
	c.stdout.Reset()
	io := &IO{In: strings.NewReader(""), Out: &c.stdout, Err: &c.stderr, Getenv: func(k string) string { return c.env[k] }}
	return Execute(context.Background(), io, args)
}

// mockServer starts the mock over loopback HTTP.
func mockServer(t testing.TB, cfg mock.Config) (*mock.Server, string) {
	t.Helper()
	m := mock.New(cfg)
	srv := httptest.NewServer(m)
	t.Cleanup(srv.Close)
	return m, srv.URL
}

// promptFile writes n simple prompt lines and returns the path and the prompts by id.
func promptFile(t *testing.T, n int) (string, map[string]string) {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "in.jsonl")
	var b strings.Builder
	prompts := make(map[string]string, n)
	for i := range n {
		id := fmt.Sprintf("req-%04d", i)
		p := fmt.Sprintf("Tell me fact number %d about the sea, please.", i)
		prompts[id] = p
		line, _ := json.Marshal(map[string]any{"custom_id": id, "prompt": p, "max_tokens": 40})
		b.Write(line)
		b.WriteByte('\n')
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path, prompts
}

// readLines reads a JSONL file into custom_id → line, failing on a repeated id.
func readLines(t testing.TB, path string) map[string]gjson.Result {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		if os.IsNotExist(err) {
			return map[string]gjson.Result{}
		}
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string]gjson.Result{}
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 64<<20)
	for n := 1; sc.Scan(); n++ {
		if !gjson.ValidBytes(sc.Bytes()) {
			t.Fatalf("%s:%d: invalid JSON line %q", path, n, sc.Text())
		}
		l := gjson.ParseBytes(append([]byte(nil), sc.Bytes()...))
		id := l.Get("custom_id").Str
		if _, dup := out[id]; dup {
			t.Fatalf("%s:%d: custom_id %q appears twice", path, n, id)
		}
		out[id] = l
	}
	return out
}

// answerText extracts the answer text from an output line of any format.
func answerText(l gjson.Result) string {
	body := l.Get("response.body")
	if c := body.Get("choices.0.message.content"); c.Exists() {
		return c.Str
	}
	if body.Get("candidates").Exists() {
		return geminiText(l)
	}
	var s strings.Builder
	body.Get("content").ForEach(func(_, b gjson.Result) bool {
		s.WriteString(b.Get("text").Str)
		return true
	})
	return s.String()
}

func mockEnv(url string) map[string]string {
	return map[string]string{
		"OPENAI_API_KEY": "sk-test-openai-0123456789", "OPENAI_BASE_URL": url + "/v1",
		"ANTHROPIC_API_KEY": "sk-ant-test-0123456789", "ANTHROPIC_BASE_URL": url,
		"GEMINI_API_KEY": "gm-test-key-0123456789", "GOOGLE_GEMINI_BASE_URL": url,
	}
}

func TestBatchBothProvidersStreamOnAndOff(t *testing.T) {
	_, url := mockServer(t, mock.Config{Seed: 1})
	in, prompts := promptFile(t, 25)
	bodies := map[string]map[string]string{} // provider → id → body
	for _, provider := range []string{"openai", "anthropic"} {
		for _, stream := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/stream=%v", provider, stream), func(t *testing.T) {
				c := &cli{env: mockEnv(url)}
				out := filepath.Join(t.TempDir(), "out.jsonl")
				code := c.run(t, "batch", in, "--provider", provider, "--model", "m1", "-o", out, "--errors", out+".err", fmt.Sprintf("--stream=%v", stream), "--quiet")
				if code != 0 {
					t.Fatalf("exit %d: %s", code, c.stderr.String())
				}
				lines := readLines(t, out)
				if len(lines) != len(prompts) {
					t.Fatalf("%d lines, want %d", len(lines), len(prompts))
				}
				if bodies[provider] == nil {
					bodies[provider] = map[string]string{}
				}
				for id, p := range prompts {
					l := lines[id]
					if want := mock.Answer(p, 40); answerText(l) != want {
						t.Errorf("%s: text %q, want %q", id, answerText(l), want)
					}
					if l.Get("response.status_code").Int() != 200 || l.Get("error").Type != gjson.Null {
						t.Errorf("%s: bad envelope %s", id, l.Raw)
					}
					if l.Get("llmrun.provider").Str != provider || l.Get("llmrun.attempts").Int() != 1 || l.Get("llmrun.output_tokens").Int() == 0 {
						t.Errorf("%s: bad llmrun object %s", id, l.Get("llmrun").Raw)
					}
					body := l.Get("response.body").Raw
					if prev, ok := bodies[provider][id]; ok && !jsonEqual(t, prev, body) {
						t.Errorf("%s: streamed and plain bodies differ:\n%s\n%s", id, prev, body)
					}
					bodies[provider][id] = body
				}
			})
		}
	}
}

func jsonEqual(t *testing.T, a, b string) bool {
	t.Helper()
	var x, y any
	if json.Unmarshal([]byte(a), &x) != nil || json.Unmarshal([]byte(b), &y) != nil {
		return false
	}
	xb, _ := json.Marshal(x)
	yb, _ := json.Marshal(y)
	return bytes.Equal(xb, yb)
}

func TestMidStreamFailuresRetriedWithoutSplicing(t *testing.T) {
	for _, provider := range []string{"openai", "anthropic"} {
		t.Run(provider, func(t *testing.T) {
			m, url := mockServer(t, mock.Config{Seed: 7, MidStreamRate: 0.25, ResetRate: 0.15})
			in, prompts := promptFile(t, 60)
			c := &cli{env: mockEnv(url)}
			out := filepath.Join(t.TempDir(), "out.jsonl")
			code := c.run(t, "batch", in, "--provider", provider, "--model", "m1", "-o", out, "--quiet", "--backoff-base", "1ms", "--backoff-max", "5ms", "--max-attempts", "10", "--retry-budget", "1", "--breaker-threshold", "50")
			if code != 0 {
				t.Fatalf("exit %d: %s", code, c.stderr.String())
			}
			lines := readLines(t, out)
			retried := 0
			for id, p := range prompts {
				if got, want := answerText(lines[id]), mock.Answer(p, 40); got != want {
					t.Errorf("%s: text %q, want %q (a splice of two generations?)", id, got, want)
				}
				if lines[id].Get("llmrun.attempts").Int() > 1 {
					retried++
				}
			}
			st := m.Stats()
			if st.MidStream == 0 || st.Resets == 0 || retried == 0 {
				t.Fatalf("faults not exercised: stats %+v, retried %d", st, retried)
			}
			if st.Duplicates != 0 {
				t.Errorf("mock completed %d requests twice", st.Duplicates)
			}
		})
	}
}

func TestFatal400NotRetried(t *testing.T) {
	var calls atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("x-request-id", "req_bad")
		w.WriteHeader(400)
		w.Write([]byte(`{"error":{"message":"This model's maximum context length is 8 tokens.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`))
	}))
	defer srv.Close()
	in, prompts := promptFile(t, 3)
	c := &cli{env: mockEnv(srv.URL)}
	out := filepath.Join(t.TempDir(), "out.jsonl")
	code := c.run(t, "batch", in, "--provider", "openai", "--model", "m", "-o", out, "--errors", out+".err", "--quiet")
	if code != ExitFailed {
		t.Fatalf("exit %d, want 1: %s", code, c.stderr.String())
	}
	if calls.Load() != int64(len(prompts)) {
		t.Errorf("%d calls for %d requests: a 400 was retried", calls.Load(), len(prompts))
	}
	errs := readLines(t, out+".err")
	for id := range prompts {
		l := errs[id]
		if l.Get("error.code").Str != "context_length_exceeded" || l.Get("response.status_code").Int() != 400 || l.Get("response.request_id").Str != "req_bad" {
			t.Errorf("%s: errors line %s", id, l.Raw)
		}
	}
}

func TestBadInputExits2WithFileAndLine(t *testing.T) {
	_, url := mockServer(t, mock.Config{})
	dir := t.TempDir()
	in := filepath.Join(dir, "in.jsonl")
	os.WriteFile(in, []byte("{\"prompt\":\"ok\"}\n\n{\"prompt\": broken\n"), 0o644)
	c := &cli{env: mockEnv(url)}
	if code := c.run(t, "batch", in, "--provider", "openai", "--model", "m", "--quiet"); code != ExitUsage {
		t.Fatalf("exit %d, want 2", code)
	}
	if !strings.Contains(c.stderr.String(), in+":3:") {
		t.Errorf("stderr %q does not name %s:3", c.stderr.String(), in)
	}
	if _, err := os.Stat(filepath.Join(dir, "in.out.jsonl")); err == nil {
		t.Errorf("an output file was created for invalid input")
	}
}

func TestAPIKeyNeverLeaks(t *testing.T) {
	const secret = "sk-proj-SECRETabcdef0123456789xyz"
	m, url := mockServer(t, mock.Config{APIKey: "sk-the-right-key-000000000"})
	in, _ := promptFile(t, 4)
	dir := t.TempDir()
	out := filepath.Join(dir, "out.jsonl")
	c := &cli{env: map[string]string{"OPENAI_API_KEY": secret, "OPENAI_BASE_URL": url + "/v1"}}
	code := c.run(t, "batch", in, "--provider", "openai", "--model", "m", "-o", out, "--errors", out+".err", "--summary", filepath.Join(dir, "sum.json"))
	if code != ExitAborted {
		t.Fatalf("exit %d, want 3 (auth aborts): %s", code, c.stderr.String())
	}
	if m.Stats().Unauthorized == 0 {
		t.Fatal("mock saw no unauthorized request")
	}
	check := func(name, s string) {
		for _, frag := range []string{secret, secret[:12], secret[len(secret)-8:]} {
			if strings.Contains(s, frag) {
				t.Errorf("%s contains the key fragment %q:\n%s", name, frag, s)
			}
		}
	}
	check("stderr", c.stderr.String())
	check("stdout", c.stdout.String())
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		b, _ := os.ReadFile(filepath.Join(dir, e.Name()))
		check(e.Name(), string(b))
	}
}

// TestRequestLargerThanBudgetIsAnInputError: a request no minute's budget
// could admit stops the run at the input check (exit 2, file:line), before
// anything is sent, instead of hanging or failing mid-run.
func TestRequestLargerThanBudgetIsAnInputError(t *testing.T) {
	m, url := mockServer(t, mock.Config{})
	in := filepath.Join(t.TempDir(), "in.jsonl")
	os.WriteFile(in, []byte(`{"prompt":"small","max_tokens":10}`+"\n"+`{"prompt":"big","max_tokens":5000}`+"\n"), 0o644)
	c := &cli{env: mockEnv(url)}
	if code := c.run(t, "batch", in, "--provider", "anthropic", "--model", "m", "--quiet", "--otpm", "4000"); code != ExitUsage {
		t.Fatalf("exit %d, want 2: %s", code, c.stderr.String())
	}
	if !strings.Contains(c.stderr.String(), in+":2:") || !strings.Contains(c.stderr.String(), "--otpm") {
		t.Errorf("stderr %q does not name %s:2 and the limit", c.stderr.String(), in)
	}
	if m.Stats().Attempts != 0 {
		t.Errorf("%d requests sent before the input check failed", m.Stats().Attempts)
	}
}

// TestGuardRejectsAnswers: answers failing --min-chars are retried, then
// reported with the last body, never written as successes.
func TestGuardRejectsAnswers(t *testing.T) {
	m, url := mockServer(t, mock.Config{})
	in, prompts := promptFile(t, 3)
	out := filepath.Join(t.TempDir(), "out.jsonl")
	c := &cli{env: mockEnv(url)}
	code := c.run(t, "batch", in, "--provider", "openai", "--model", "m", "-o", out, "--errors", out+".err", "--quiet",
		"--min-chars", "100000", "--max-attempts", "2", "--backoff-base", "1ms", "--backoff-max", "2ms")
	if code != ExitFailed {
		t.Fatalf("exit %d, want 1: %s", code, c.stderr.String())
	}
	if got := readLines(t, out); len(got) != 0 {
		t.Errorf("%d rejected answers written as results", len(got))
	}
	errs := readLines(t, out+".err")
	for id := range prompts {
		l := errs[id]
		if l.Get("error.code").Str != "rejected_by_guard" || l.Get("llmrun.attempts").Int() != 2 || answerText(l) == "" {
			t.Errorf("%s: errors line %s", id, l.Raw)
		}
	}
	if m.Stats().Attempts != 6 {
		t.Errorf("%d attempts, want 2 per request", m.Stats().Attempts)
	}
}
