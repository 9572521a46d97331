package cmd

import (
	"cmp"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/llmrun/llmrun/providers/mock"
)

// End-to-end runs of the Gemini provider against the mock's Gemini
// dialect: plain and streamed, Gemini's own line shape and translated
// ones, mid-stream failures, and the batch API.

// geminiEnv points the Gemini provider at the mock, as Google's SDKs are
// pointed at a proxy: a bare host (the provider adds /v1beta).
func geminiEnv(url string) map[string]string {
	return map[string]string{"GEMINI_API_KEY": "gm-test-key-0123456789", "GOOGLE_GEMINI_BASE_URL": url}
}

// geminiFile writes n lines, alternating Gemini's batch shape, OpenAI's
// batch shape and simple prompts, and returns the prompts by id.
func geminiFile(t *testing.T, n int) (string, map[string]string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "in.jsonl")
	var b strings.Builder
	prompts := map[string]string{}
	for i := range n {
		id := fmt.Sprintf("g-%03d", i)
		p := fmt.Sprintf("Tell me fact number %d about the moon, please.", i)
		prompts[id] = p
		var line any
		switch i % 3 {
		case 0:
			line = map[string]any{"key": id, "request": map[string]any{
				"contents":         []any{map[string]any{"role": "user", "parts": []any{map[string]any{"text": p}}}},
				"generationConfig": map[string]any{"maxOutputTokens": 40}}}
		case 1:
			line = map[string]any{"custom_id": id, "method": "POST", "url": "/v1/chat/completions",
				"body": map[string]any{"messages": []any{map[string]any{"role": "user", "content": p}}, "max_completion_tokens": 40}}
		default:
			line = map[string]any{"custom_id": id, "prompt": p, "max_tokens": 40}
		}
		j, _ := json.Marshal(line)
		b.Write(j)
		b.WriteByte('\n')
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path, prompts
}

// geminiText is the answer text of an output line in Gemini's shape.
func geminiText(l gjson.Result) string {
	var s strings.Builder
	l.Get("response.body.candidates.0.content.parts").ForEach(func(_, p gjson.Result) bool {
		s.WriteString(p.Get("text").Str)
		return true
	})
	return s.String()
}

// TestGeminiPlainAndStreamed: every line shape reaches Gemini (the first
// line's shape picks the provider when none is named and only Gemini's key
// is set); the answers are the mock's, with usage, and the same bodies
// streamed or not.
func TestGeminiPlainAndStreamed(t *testing.T) {
	m, url := mockServer(t, mock.Config{Seed: 3})
	in, prompts := geminiFile(t, 12)
	bodies := map[string]string{}
	for _, stream := range []bool{true, false} {
		t.Run(fmt.Sprintf("stream=%v", stream), func(t *testing.T) {
			c := &cli{env: geminiEnv(url)}
			out := filepath.Join(t.TempDir(), "out.jsonl")
			if code := c.run(t, "batch", in, "--model", "gemini-2.5-flash", "-o", out, fmt.Sprintf("--stream=%v", stream), "--quiet"); code != 0 {
				t.Fatalf("exit %d: %s", code, c.stderr.String())
			}
			lines := readLines(t, out)
			if len(lines) != len(prompts) {
				t.Fatalf("%d lines, want %d", len(lines), len(prompts))
			}
			for id, p := range prompts {
				l := lines[id]
				if got, want := geminiText(l), mock.Answer(p, 40); got != want {
					t.Errorf("%s: text %q, want %q", id, got, want)
				}
				d := l.Get("llmrun")
				if d.Get("provider").Str != "gemini" || d.Get("model").Str != "gemini-2.5-flash" || d.Get("input_tokens").Int() == 0 || d.Get("output_tokens").Int() == 0 ||
					l.Get("response.body.candidates.0.finishReason").Str == "" || d.Get("cost_usd").Float() <= 0 {
					t.Errorf("%s: %s", id, l.Raw)
				}
				if prev, ok := bodies[id]; ok && !jsonEqual(t, prev, l.Get("response.body").Raw) {
					t.Errorf("%s: streamed and plain bodies differ:\n%s\n%s", id, prev, l.Get("response.body").Raw)
				}
				bodies[id] = l.Get("response.body").Raw
			}
		})
	}
	if st := m.Stats(); st.Completed != 24 || st.BadRequests != 0 || st.Unauthorized != 0 {
		t.Errorf("mock stats %+v", st)
	}
}

// TestGeminiMidStreamRetriedWithoutSplicing: error events and resets in
// the middle of Gemini streams are retried from scratch: every answer is
// whole, none a splice of two generations.
func TestGeminiMidStreamRetriedWithoutSplicing(t *testing.T) {
	m, url := mockServer(t, mock.Config{Seed: 7, MidStreamRate: 0.25, ResetRate: 0.15})
	in, prompts := geminiFile(t, 45)
	c := &cli{env: geminiEnv(url)}
	out := filepath.Join(t.TempDir(), "out.jsonl")
	code := c.run(t, "batch", in, "--provider", "gemini", "--model", "gemini-2.5-flash", "-o", out, "--quiet",
		"--backoff-base", "1ms", "--backoff-max", "5ms", "--max-attempts", "10", "--retry-budget", "1", "--breaker-threshold", "50")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, c.stderr.String())
	}
	lines := readLines(t, out)
	retried := 0
	for id, p := range prompts {
		if got, want := geminiText(lines[id]), mock.Answer(p, 40); got != want {
			t.Errorf("%s: text %q, want %q (a splice of two generations?)", id, got, want)
		}
		if lines[id].Get("llmrun.attempts").Int() > 1 {
			retried++
		}
	}
	if st := m.Stats(); st.MidStream == 0 || st.Resets == 0 || retried == 0 || st.Duplicates != 0 {
		t.Fatalf("stats %+v, retried %d", st, retried)
	}
}

// TestGeminiMockAndTranslation: --provider mock follows Gemini lines to
// the built-in mock's Gemini dialect; a Gemini line that cannot go to
// another provider is an input error naming its line, before anything is
// sent.
func TestGeminiMockAndTranslation(t *testing.T) {
	in, prompts := geminiFile(t, 6)
	c := &cli{env: map[string]string{}}
	out := filepath.Join(t.TempDir(), "out.jsonl")
	if code := c.run(t, "batch", in, "--provider", "mock", "--model", "gemini-2.5-flash", "-o", out, "--quiet"); code != 0 {
		t.Fatalf("exit %d: %s", code, c.stderr.String())
	}
	if lines := readLines(t, out); len(lines) != len(prompts) || lines["g-000"].Get("llmrun.provider").Str != "gemini" || geminiText(lines["g-000"]) == "" {
		t.Fatalf("%d lines: %v", len(lines), lines["g-000"].Raw)
	}

	m, url := mockServer(t, mock.Config{})
	bad := filepath.Join(t.TempDir(), "in.jsonl")
	os.WriteFile(bad, []byte(`{"key":"a","request":{"contents":[{"parts":[{"text":"hi"}]}]}}`+"\n"+
		`{"key":"b","request":{"contents":[{"role":"model","parts":[{"functionCall":{"name":"f","args":{}}}]}]}}`+"\n"), 0o644)
	c = &cli{env: mockEnv(url)}
	if code := c.run(t, "batch", bad, "--provider", "openai", "--model", "m", "--quiet"); code != ExitUsage {
		t.Fatalf("exit %d, want 2: %s", code, c.stderr.String())
	}
	if msg := c.stderr.String(); !strings.Contains(msg, bad+":2:") || !strings.Contains(msg, "functionCall") {
		t.Errorf("stderr %q", msg)
	}
	if m.Stats().Attempts != 0 {
		t.Errorf("%d requests sent", m.Stats().Attempts)
	}
}

// TestGeminiLearnsFromBare429s (issue 16): Gemini sends no rate-limit
// headers and its 429s may carry no RetryInfo; such 429s and its 503
// UNAVAILABLE overloads are paced by the key, not failed: every request
// ends answered.
func TestGeminiLearnsFromBare429s(t *testing.T) {
	m, url := mockServer(t, mock.Config{RPM: 600, Burst: time.Second, NoRetryAfter: true, OverloadRate: 0.1, Seed: 4})
	in, prompts := geminiFile(t, 30)
	out := filepath.Join(t.TempDir(), "out.jsonl")
	c := &cli{env: geminiEnv(url)}
	if code := c.run(t, "batch", in, "--provider", "gemini", "--model", "gemini-2.5-flash", "-o", out, "--quiet", "--concurrency", "16"); code != 0 {
		t.Fatalf("exit %d: %s", code, c.stderr.String())
	}
	if n := len(readLines(t, out)); n != len(prompts) {
		t.Fatalf("%d answers, want %d", n, len(prompts))
	}
	if st := m.Stats(); st.RateLimited == 0 || st.Overloaded == 0 || st.Completed != int64(len(prompts)) {
		t.Fatalf("the limits and overloads were not exercised: %+v", st)
	}
}

// geminiEmbedLines are embeddings lines for Gemini, by id with their
// inputs and the vector length each asks for: OpenAI's shape with one
// input and with many, Gemini's own embedContent and batchEmbedContents
// shapes (without a model: --model names it), one with a
// dimensionality.
func geminiEmbedLines() (string, map[string][]string, map[string]int) {
	lines := `{"custom_id":"oa-one","url":"/v1/embeddings","body":{"model":"text-embedding-004","input":"the moon is made of rock"}}
{"custom_id":"oa-many","url":"/v1/embeddings","body":{"model":"text-embedding-004","input":["first text","second text","third text"],"dimensions":8}}
{"key":"gm-one","request":{"content":{"parts":[{"text":"a document about tides"}]},"taskType":"RETRIEVAL_DOCUMENT"}}
{"key":"gm-many","request":{"requests":[{"content":{"parts":[{"text":"query one"}]}},{"content":{"parts":[{"text":"query two"}]},"outputDimensionality":4}]}}
`
	inputs := map[string][]string{
		"oa-one":  {"the moon is made of rock"},
		"oa-many": {"first text", "second text", "third text"},
		"gm-one":  {"a document about tides"},
		"gm-many": {"query one", "query two"},
	}
	dims := map[string]int{"oa-many": 8}
	return lines, inputs, dims
}

// geminiVectors are the vectors of a Gemini embeddings answer, in order.
func geminiVectors(body gjson.Result) [][]float32 {
	vals := body.Get("embeddings.#.values").Array()
	if v := body.Get("embedding.values"); v.Exists() {
		vals = []gjson.Result{v}
	}
	var out [][]float32
	for _, v := range vals {
		var vec []float32
		json.Unmarshal([]byte(v.Raw), &vec)
		out = append(out, vec)
	}
	return out
}

// TestGeminiEmbeddings: OpenAI's and Gemini's embeddings lines, one input
// and many per request, go to embedContent and batchEmbedContents: every
// vector is the mock's for its input, model and dimensionality; as Gemini
// sends no usage, the input tokens are llmrun's estimate, marked so, and
// no output is counted; export writes the vectors.
func TestGeminiEmbeddings(t *testing.T) {
	m, url := mockServer(t, mock.Config{})
	lines, inputs, dims := geminiEmbedLines()
	in := filepath.Join(t.TempDir(), "in.jsonl")
	os.WriteFile(in, []byte(lines), 0o644)
	out := filepath.Join(t.TempDir(), "out.jsonl")
	c := &cli{env: geminiEnv(url)}
	if code := c.run(t, "batch", in, "--provider", "gemini", "--model", "text-embedding-004", "-o", out, "--quiet"); code != 0 {
		t.Fatalf("exit %d: %s", code, c.stderr.String())
	}
	got := readLines(t, out)
	for id, ins := range inputs {
		l := got[id]
		vecs := geminiVectors(l.Get("response.body"))
		if len(vecs) != len(ins) {
			t.Fatalf("%s: %d vectors, want %d: %s", id, len(vecs), len(ins), l.Raw)
		}
		for i, text := range ins {
			d := cmp.Or(dims[id], mock.DefaultEmbeddingDims)
			if id == "gm-many" && i == 1 {
				d = 4
			}
			if want := mock.Embedding("text-embedding-004", text, d); fmt.Sprint(vecs[i]) != fmt.Sprint(want) {
				t.Errorf("%s input %d: %v, want %v", id, i, vecs[i], want)
			}
		}
		dl := l.Get("llmrun")
		if dl.Get("provider").Str != "gemini" || dl.Get("model").Str != "text-embedding-004" || dl.Get("input_tokens").Int() <= 0 ||
			dl.Get("output_tokens").Int() != 0 || !dl.Get("usage_estimated").Bool() {
			t.Errorf("%s: %s", id, dl.Raw)
		}
	}
	if st := m.Stats(); st.Completed != 4 || st.BadRequests != 0 || st.OutputTokens != 0 {
		t.Errorf("mock stats %+v", st)
	}
	if code := c.run(t, "export", out, "--input", in, "--format", "csv", "-o", filepath.Join(t.TempDir(), "x.csv")); code != 0 {
		t.Fatalf("export exit %d: %s", code, c.stderr.String())
	}
}

// TestGeminiEmbeddingsRefused: an embeddings line Gemini cannot take
// (token ids, base64 vectors, too many inputs) is an input error naming
// its line, before anything is sent.
func TestGeminiEmbeddingsRefused(t *testing.T) {
	many := make([]string, 101)
	for i := range many {
		many[i] = fmt.Sprintf("%q", fmt.Sprint("text ", i))
	}
	for name, tc := range map[string]struct{ line, want string }{
		"token ids": {`{"custom_id":"e1","url":"/v1/embeddings","body":{"model":"e","input":[[1,2,3]]}}`, "token-id"},
		"base64":    {`{"custom_id":"e1","url":"/v1/embeddings","body":{"model":"e","input":"hi","encoding_format":"base64"}}`, "floats only"},
		"too many":  {`{"custom_id":"e1","url":"/v1/embeddings","body":{"model":"e","input":[` + strings.Join(many, ",") + `]}}`, "at most 100"},
		"no parts":  {`{"key":"e1","request":{"content":{"parts":[]}}}`, "content with parts"},
	} {
		t.Run(name, func(t *testing.T) {
			m, url := mockServer(t, mock.Config{})
			in := filepath.Join(t.TempDir(), "in.jsonl")
			os.WriteFile(in, []byte(`{"key":"ok","request":{"content":{"parts":[{"text":"fine"}]}}}`+"\n"+tc.line+"\n"), 0o644)
			c := &cli{env: geminiEnv(url)}
			if code := c.run(t, "batch", in, "--provider", "gemini", "--model", "e", "--quiet"); code != ExitUsage || !strings.Contains(c.stderr.String(), in+":2:") || !strings.Contains(c.stderr.String(), tc.want) {
				t.Fatalf("exit %d: %s", code, c.stderr.String())
			}
			if m.Stats().Attempts != 0 {
				t.Errorf("%d requests sent", m.Stats().Attempts)
			}
		})
	}
}

// TestGeminiEmbeddingsBatchRefused: --mode batch with embeddings for
// Gemini is a usage error naming the first such line and why, before any
// batch call; --mode auto runs them live instead.
func TestGeminiEmbeddingsBatchRefused(t *testing.T) {
	m, url := mockServer(t, mock.Config{})
	lines, inputs, _ := geminiEmbedLines()
	in := filepath.Join(t.TempDir(), "in.jsonl")
	os.WriteFile(in, []byte(`{"key":"chat","request":{"contents":[{"parts":[{"text":"hi"}]}]}}`+"\n"+lines), 0o644)
	c := &cli{env: geminiEnv(url)}
	out := filepath.Join(t.TempDir(), "out.jsonl")
	code := c.run(t, "batch", in, "--provider", "gemini", "--model", "text-embedding-004", "-o", out, "--quiet", "--mode", "batch")
	if msg := c.stderr.String(); code != ExitUsage || !strings.Contains(msg, in+":2:") || !strings.Contains(msg, "asyncBatchEmbedContent") || !strings.Contains(msg, "--mode sync") {
		t.Fatalf("exit %d: %s", code, msg)
	}
	if st := m.Stats(); st.BatchCalls != 0 || st.Attempts != 0 {
		t.Errorf("calls made: %+v", st)
	}
	if code := c.run(t, "batch", in, "--provider", "gemini", "--model", "text-embedding-004", "-o", out, "--quiet", "--mode", "auto", "--batch-threshold", "1"); code != 0 {
		t.Fatalf("auto: exit %d: %s", code, c.stderr.String())
	}
	if got := readLines(t, out); len(got) != len(inputs)+1 || m.Stats().BatchCalls != 0 {
		t.Errorf("%d answers, stats %+v", len(got), m.Stats())
	}
}
