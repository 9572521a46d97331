package cmd

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmrun/llmrun/providers/mock"
)

// Issue 31: requests the real APIs accept. The mock answers what a model's
// family refuses with the provider's 400 (its rules are on by default), so
// each run below either answers every line exactly or stops at the check
// (exit 2, file:line) with nothing sent, never a 400 from the server.

// writeInput writes lines to a new input file.
func writeInput(t *testing.T, lines ...string) string {
	t.Helper()
	in := filepath.Join(t.TempDir(), "in.jsonl")
	if err := os.WriteFile(in, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return in
}

// runAnswered runs args against m and checks every one of n lines was
// answered with no refusal from the server; it returns the stderr.
func runAnswered(t *testing.T, m *mock.Server, url string, n int, args ...string) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "out.jsonl")
	c := &cli{env: mockEnv(url)}
	if code := c.run(t, append(args, "-o", out)...); code != ExitOK {
		t.Fatalf("exit %d: %s", code, c.stderr.String())
	}
	lines := readLines(t, out)
	if len(lines) != n {
		t.Fatalf("%d answers, want %d", len(lines), n)
	}
	for id, l := range lines {
		if l.Get("response.status_code").Int() != 200 || answerText(l) == "" {
			t.Errorf("%s: %s", id, l.Raw)
		}
	}
	if st := m.Stats(); st.BadRequests != 0 || st.NotFound != 0 || st.Completed != int64(n) {
		t.Errorf("mock saw %d bad requests, %d not found, %d completed (want 0, 0, %d)", st.BadRequests, st.NotFound, st.Completed, n)
	}
	return c.stderr.String()
}

// runRefused runs args against m and checks it stops at the check with
// exit 2 naming want and the line, having sent nothing.
func runRefused(t *testing.T, m *mock.Server, url, in string, line int, want string, args ...string) {
	t.Helper()
	c := &cli{env: mockEnv(url)}
	if code := c.run(t, append([]string{"batch", in, "-q"}, args...)...); code != ExitUsage {
		t.Fatalf("exit %d, want 2: %s", code, c.stderr.String())
	}
	msg := c.stderr.String()
	if !strings.Contains(msg, fmt.Sprintf("%s:%d:", in, line)) || !strings.Contains(msg, want) {
		t.Errorf("stderr %q, want %s:%d and %q", msg, in, line, want)
	}
	if a := m.Stats().Attempts; a != 0 {
		t.Errorf("%d requests sent", a)
	}
}

// TestReasoningModelsGetMaxCompletionTokens: simple lines for gpt-5-mini
// with --max-tokens, and OpenAI batch lines for o3-mini with max_tokens,
// are sent with max_completion_tokens (the mock refuses max_tokens for
// them, as OpenAI does), said once per run.
func TestReasoningModelsGetMaxCompletionTokens(t *testing.T) {
	var lines []string
	for i := range 4 {
		lines = append(lines, fmt.Sprintf(`{"custom_id":"s%d","prompt":"fact %d"}`, i, i),
			fmt.Sprintf(`{"custom_id":"b%d","method":"POST","url":"/v1/chat/completions","body":{"model":"o3-mini","messages":[{"role":"user","content":"q %d"}],"max_tokens":30,"temperature":1}}`, i, i))
	}
	in := writeInput(t, lines...)
	for _, stream := range []string{"true", "false"} {
		m, url := mockServer(t, mock.Config{})
		stderr := runAnswered(t, m, url, 8, "batch", in, "--provider", "openai", "--model", "gpt-5-mini", "--max-tokens", "40", "--stream="+stream)
		if n := strings.Count(stderr, "sending the cap as max_completion_tokens") + strings.Count(stderr, "sending it as max_completion_tokens"); n != 1 {
			t.Errorf("stream=%s: the rewrite said %d times, want once: %s", stream, n, stderr)
		}
	}

	// A value that is not the default has no equivalent: refused.
	m, url := mockServer(t, mock.Config{})
	bad := writeInput(t, lines[0], `{"custom_id":"t","method":"POST","url":"/v1/chat/completions","body":{"model":"o3-mini","messages":[{"role":"user","content":"q"}],"temperature":0.2}}`)
	runRefused(t, m, url, bad, 2, "takes only the default temperature (1), not 0.2", "--provider", "openai", "--model", "gpt-5-mini")
}

// TestClaudeTemperatureWithTopP: OpenAI lines with temperature and top_p
// sent to claude-sonnet-4-5 stop at the check; the same lines to an older
// Claude model, which takes both, are answered.
func TestClaudeTemperatureWithTopP(t *testing.T) {
	in := writeInput(t,
		`{"custom_id":"a","method":"POST","url":"/v1/chat/completions","body":{"messages":[{"role":"user","content":"hi"}],"max_tokens":20}}`,
		`{"custom_id":"b","method":"POST","url":"/v1/chat/completions","body":{"messages":[{"role":"user","content":"hi"}],"max_tokens":20,"temperature":0.5,"top_p":0.9}}`)
	m, url := mockServer(t, mock.Config{})
	runRefused(t, m, url, in, 2, "temperature and top_p cannot both be specified", "--provider", "anthropic", "--model", "claude-sonnet-4-5")

	m, url = mockServer(t, mock.Config{})
	runAnswered(t, m, url, 2, "batch", in, "--provider", "anthropic", "--model", "claude-sonnet-4", "-q")

	// What Anthropic has no equivalent for is refused, not dropped.
	for field, want := range map[string]string{
		`"seed":7`: "seed has no Anthropic equivalent",
		`"response_format":{"type":"json_object"}`: "response_format (JSON output) has no Anthropic equivalent",
		`"temperature":1.5`:                        "above Anthropic's maximum of 1",
		`"n":3`:                                    "n > 1",
		`"frequency_penalty":0.4`:                  "frequency_penalty has no Anthropic equivalent",
	} {
		m, url := mockServer(t, mock.Config{})
		bad := writeInput(t, `{"custom_id":"a","method":"POST","url":"/v1/chat/completions","body":{"messages":[{"role":"user","content":"json"}],`+field+`}}`)
		runRefused(t, m, url, bad, 1, want, "--provider", "anthropic", "--model", "claude-sonnet-4-5")
	}
}

// TestGeminiJSONModeToOpenAI: Gemini lines asking for JSON output, sent to
// OpenAI, become json_object requests that mention JSON (the mock refuses
// json_object without the word, as OpenAI does) or json_schema ones.
func TestGeminiJSONModeToOpenAI(t *testing.T) {
	in := writeInput(t,
		`{"key":"plain","request":{"contents":[{"parts":[{"text":"List three primes."}]}],"generationConfig":{"responseMimeType":"application/json"}}}`,
		`{"key":"said","request":{"contents":[{"parts":[{"text":"List three primes as JSON."}]}],"generationConfig":{"responseMimeType":"application/json","maxOutputTokens":30}}}`,
		`{"key":"schema","request":{"contents":[{"parts":[{"text":"List three primes."}]}],"generationConfig":{"responseMimeType":"application/json","responseJsonSchema":{"type":"array"}}}}`)
	m, url := mockServer(t, mock.Config{})
	runAnswered(t, m, url, 3, "batch", in, "--provider", "openai", "--model", "gpt-4o-mini", "-q")

	// A native OpenAI line in JSON mode that never says JSON is the
	// user's own body: refused at the check, not rewritten.
	m, url = mockServer(t, mock.Config{})
	bad := writeInput(t, `{"custom_id":"a","method":"POST","url":"/v1/chat/completions","body":{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hi"}],"response_format":{"type":"json_object"}}}`)
	runRefused(t, m, url, bad, 1, `needs the word "json"`, "--provider", "openai")
}

// TestModelsAcrossProviders: a line naming another provider's model is
// refused at the check when the destination is that provider's own API
// (here the mock speaking Gemini); --override-model and the config's
// model_map send it as a model the destination serves.
func TestModelsAcrossProviders(t *testing.T) {
	in := writeInput(t,
		`{"custom_id":"a","method":"POST","url":"/v1/chat/completions","body":{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hi"}]}}`,
		`{"custom_id":"b","prompt":"hello","model":"claude-sonnet-4-5"}`)
	c := &cli{env: map[string]string{}}
	if code := c.run(t, "batch", in, "--provider", "mock-gemini", "-q"); code != ExitUsage {
		t.Fatalf("exit %d, want 2: %s", code, c.stderr.String())
	}
	if msg := c.stderr.String(); !strings.Contains(msg, in+":1:") || !strings.Contains(msg, "model gpt-4o-mini is an OpenAI model but --provider mock-gemini serves gemini models") || !strings.Contains(msg, "--override-model") {
		t.Errorf("stderr %q", msg)
	}

	out := filepath.Join(t.TempDir(), "out.jsonl")
	if code := c.run(t, "batch", in, "--provider", "mock-gemini", "--model", "gemini-2.5-flash", "--override-model", "-q", "-o", out); code != ExitOK {
		t.Fatalf("exit %d: %s", code, c.stderr.String())
	}
	for id, l := range readLines(t, out) {
		if got := l.Get("response.body.modelVersion").Str; got != "gemini-2.5-flash" {
			t.Errorf("%s sent as %q: %s", id, got, l.Raw)
		}
	}

	cfg := filepath.Join(t.TempDir(), "llmrun.yaml")
	os.WriteFile(cfg, []byte("model_map:\n  gpt-4o-mini: gemini-2.5-flash\n  claude-sonnet-4-5: gemini-2.5-pro\n"), 0o644)
	out = filepath.Join(t.TempDir(), "out.jsonl")
	if code := c.run(t, "batch", in, "--provider", "mock-gemini", "--config", cfg, "-q", "-o", out); code != ExitOK {
		t.Fatalf("exit %d: %s", code, c.stderr.String())
	}
	lines := readLines(t, out)
	if a, b := lines["a"].Get("response.body.modelVersion").Str, lines["b"].Get("response.body.modelVersion").Str; a != "gemini-2.5-flash" || b != "gemini-2.5-pro" {
		t.Errorf("sent as %q and %q", a, b)
	}

	_, url := mockServer(t, mock.Config{})
	c.env = mockEnv(url)
	if code := c.run(t, "batch", in, "--provider", "openai", "--override-model", "-q"); code != ExitUsage || !strings.Contains(c.stderr.String(), "--override-model needs --model") {
		t.Errorf("exit %d: %s", code, c.stderr.String())
	}

	// A gateway or local server at its own URL may serve any model.
	m, url2 := mockServer(t, mock.Config{})
	runAnswered(t, m, url2, 2, "batch", in, "--provider", "openai", "-q")
}

// TestFallbackHopKeepsItsFamilyRules: a fallback hop's body passes its own
// model's rules: OpenAI lines for gpt-4o-mini carrying temperature and
// top_p, falling back to claude-sonnet-4-5, fail that hop instead of
// drawing a 400; to claude-sonnet-4, which takes both, they are answered.
func TestFallbackHopKeepsItsFamilyRules(t *testing.T) {
	in := writeInput(t,
		`{"custom_id":"a","method":"POST","url":"/v1/chat/completions","body":{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hi"}],"max_tokens":20,"temperature":0.5,"top_p":0.9}}`)
	for _, tc := range []struct {
		model string
		ok    bool
	}{{"claude-sonnet-4-5", false}, {"claude-sonnet-4", true}} {
		_, downURL := mockServer(t, mock.Config{Outage: true})
		up, upURL := mockServer(t, mock.Config{})
		c := &cli{env: map[string]string{
			"OPENAI_API_KEY": "sk-test-openai-0123456789", "OPENAI_BASE_URL": downURL + "/v1",
			"ANTHROPIC_API_KEY": "sk-ant-test-0123456789", "ANTHROPIC_BASE_URL": upURL,
		}}
		out := filepath.Join(t.TempDir(), "out.jsonl")
		code := c.run(t, "batch", in, "--provider", "openai", "-o", out, "-q", "--fallback", "anthropic:"+tc.model,
			"--max-attempts", "2", "--backoff-base", "1ms", "--backoff-max", "2ms")
		st := up.Stats()
		if st.BadRequests != 0 {
			t.Errorf("%s: the fallback drew %d 400s", tc.model, st.BadRequests)
		}
		if tc.ok {
			if code != ExitOK || st.Completed != 1 {
				t.Errorf("%s: exit %d, %d answered: %s", tc.model, code, st.Completed, c.stderr.String())
			}
			continue
		}
		errs := readLines(t, strings.TrimSuffix(out, ".jsonl")+".errors.jsonl")
		if code == ExitOK || st.Attempts != 0 || !strings.Contains(errs["a"].Raw, "cannot both be specified") {
			t.Errorf("%s: exit %d, %d sent to the fallback, errors %v: %s", tc.model, code, st.Attempts, errs, c.stderr.String())
		}
	}
}
