package cmd

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/llmrun/llmrun/providers/mock"
)

// writeLines writes JSONL lines (each a value json.Marshal encodes) and
// returns the file's path.
func writeLines(t *testing.T, lines ...any) string {
	t.Helper()
	var b strings.Builder
	for _, l := range lines {
		raw, err := json.Marshal(l)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(raw)
		b.WriteByte('\n')
	}
	path := filepath.Join(t.TempDir(), "in.jsonl")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

const azureKey = "az-test-key-0123456789abcdef"

// TestE2EAzureClassic: an Azure deployment URL with its api-version in
// the query (the URL of issue 14, which was sent mangled and with a Bearer
// token) reaches the mock's classic route with the api-key header and
// the api-version, for lines that name no model (the deployment is the
// model); a prompt the content filter refuses fails at once, not retried,
// with the reason; live and batch mode alike.
func TestE2EAzureClassic(t *testing.T) {
	prompts := map[string]string{}
	var lines []any
	for i := range 6 {
		id := fmt.Sprintf("az-%d", i)
		prompts[id] = fmt.Sprintf("Say something about deployment %d.", i)
		lines = append(lines, map[string]any{"custom_id": id, "prompt": prompts[id], "max_tokens": 30})
	}
	lines = append(lines, map[string]any{"custom_id": "filtered", "prompt": "Tell me " + mock.ContentFilterTrigger})
	in := writeLines(t, lines...)
	for _, mode := range []string{"sync", "batch"} {
		t.Run(mode, func(t *testing.T) {
			m, url := mockServer(t, mock.Config{APIKey: azureKey})
			c := &cli{env: map[string]string{"AZURE_OPENAI_API_KEY": azureKey, "OPENAI_API_KEY": "sk-not-for-azure-000000"}}
			out := filepath.Join(t.TempDir(), "out.jsonl")
			args := []string{"batch", in, "--provider", "azure", "--base-url", url + "/openai/deployments/dep1?api-version=2024-10-21",
				"-o", out, "--quiet", "--mode", mode, "--poll-interval", "1ms", "--poll-max", "2ms"}
			if code := c.run(t, args...); code != 1 {
				t.Fatalf("exit %d, want 1 (one request filtered): %s", code, c.stderr.String())
			}
			got := readLines(t, out)
			if len(got) != len(prompts) {
				t.Fatalf("%d answers, want %d: %s", len(got), len(prompts), c.stderr.String())
			}
			for id, p := range prompts {
				l := got[id]
				if answerText(l) != mock.Answer(p, 30) || l.Get("llmrun.provider").Str != "azure" || l.Get("llmrun.model").Str != "dep1" ||
					!l.Get("response.body.prompt_filter_results").Exists() || l.Get("llmrun.usage_estimated").Exists() {
					t.Errorf("%s: %s", id, l.Raw)
				}
			}
			failed := readLines(t, filepath.Join(filepath.Dir(out), "out.errors.jsonl"))["filtered"]
			if failed.Get("error.code").Str != "content_filter" || (mode == "sync" && (failed.Get("llmrun.attempts").Int() != 1 ||
				!strings.Contains(failed.Get("error.message").Str, "content filter refused the prompt"))) {
				t.Errorf("filtered: %s", failed.Raw)
			}
			st := m.Stats()
			if st.Unauthorized != 0 || st.NotFound != 0 || st.Completed != int64(len(prompts)) {
				t.Errorf("stats %+v", st)
			}
			if strings.Contains(c.stderr.String(), azureKey) {
				t.Error("the key reached stderr")
			}
		})
	}
}

// TestE2EAzureEndpointAndVersion: the endpoint from AZURE_OPENAI_ENDPOINT
// and the version from OPENAI_API_VERSION make the model the deployment;
// a deployment URL without any version is refused before anything is
// sent (exit 2, naming the fix).
func TestE2EAzureEndpointAndVersion(t *testing.T) {
	m, url := mockServer(t, mock.Config{APIKey: azureKey})
	in := writeLines(t, map[string]any{"custom_id": "a", "prompt": "Hello there.", "model": "gpt-4o-dep"})
	out := filepath.Join(t.TempDir(), "out.jsonl")
	c := &cli{env: map[string]string{"AZURE_OPENAI_API_KEY": azureKey, "AZURE_OPENAI_ENDPOINT": url, "OPENAI_API_VERSION": "2024-10-21"}}
	if code := c.run(t, "batch", in, "--provider", "azure", "-o", out, "--quiet"); code != 0 {
		t.Fatalf("exit %d: %s", code, c.stderr.String())
	}
	if l := readLines(t, out)["a"]; answerText(l) != mock.Answer("Hello there.", 0) || l.Get("llmrun.model").Str != "gpt-4o-dep" {
		t.Fatalf("%s", l.Raw)
	}
	delete(c.env, "OPENAI_API_VERSION")
	before := m.Stats().Attempts
	code := c.run(t, "batch", in, "--provider", "azure", "--base-url", url+"/openai/deployments/dep1", "-o", filepath.Join(t.TempDir(), "o.jsonl"), "--quiet")
	if code != 2 || !strings.Contains(c.stderr.String(), "api-version") || m.Stats().Attempts != before {
		t.Fatalf("exit %d: %s", code, c.stderr.String())
	}
}

// TestE2ELocalServerNoKeyNoUsage: a local server (loopback) needs no key
// and gets no credential header; its answers carry no usage, so the
// tokens are estimated, non-zero, and marked usage_estimated. --no-auth
// keeps a key that is set from being sent.
func TestE2ELocalServerNoKeyNoUsage(t *testing.T) {
	m := mock.New(mock.Config{NoUsage: true})
	var mu sync.Mutex
	var auth []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		auth = append(auth, r.Header.Get("Authorization"))
		mu.Unlock()
		m.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	in, prompts := promptFile(t, 8)
	for name, env := range map[string]map[string]string{
		"no key set":          {},
		"a key and --no-auth": {"OPENAI_API_KEY": "sk-real-key-not-for-local"},
	} {
		t.Run(name, func(t *testing.T) {
			for _, stream := range []string{"--stream=true", "--stream=false"} {
				auth = nil
				c := &cli{env: env}
				out := filepath.Join(t.TempDir(), "out.jsonl")
				args := []string{"batch", in, "--base-url", srv.URL + "/v1", "--model", "llama-3-8b", "-o", out, "--quiet", stream}
				if env["OPENAI_API_KEY"] != "" {
					args = append(args, "--no-auth")
				}
				if code := c.run(t, args...); code != 0 {
					t.Fatalf("exit %d: %s", code, c.stderr.String())
				}
				got := readLines(t, out)
				for id, p := range prompts {
					l := got[id]
					if answerText(l) != mock.Answer(p, 40) || l.Get("response.body.usage").Exists() || !l.Get("llmrun.usage_estimated").Bool() ||
						l.Get("llmrun.input_tokens").Int() < 5 || l.Get("llmrun.output_tokens").Int() < 5 {
						t.Errorf("%s: %s", id, l.Raw)
					}
				}
				for _, a := range auth {
					if a != "" {
						t.Fatalf("a credential was sent: %q", a)
					}
				}
				if len(auth) != len(prompts) {
					t.Fatalf("%d requests", len(auth))
				}
			}
		})
	}
}

// responsesFile writes n Responses API batch lines and returns the path
// and the prompts by id.
func responsesFile(t *testing.T, n int) (string, map[string]string) {
	t.Helper()
	prompts := map[string]string{}
	var lines []any
	for i := range n {
		id := fmt.Sprintf("resp-%03d", i)
		prompts[id] = fmt.Sprintf("Describe tide pool number %d in a few words, please.", i)
		lines = append(lines, map[string]any{"custom_id": id, "method": "POST", "url": "/v1/responses",
			"body": map[string]any{"model": "gpt-4.1-mini", "instructions": "Be brief.", "input": prompts[id], "max_output_tokens": 64, "store": false}})
	}
	return writeLines(t, lines...), prompts
}

// TestE2EResponses: Responses API lines, plain and streamed, against a mock
// that breaks a third of the attempts mid-stream (all three failure shapes)
// or with a 500: every answer is the mock's whole response, as the plain
// call returns it, never a partial text spliced to a retry; the same in
// batch mode.
func TestE2EResponses(t *testing.T) {
	in, prompts := responsesFile(t, 24)
	var plainBodies map[string]string
	for _, mode := range []string{"--stream=false", "--stream=true", "--mode=batch"} {
		t.Run(mode, func(t *testing.T) {
			m, url := mockServer(t, mock.Config{MidStreamRate: 0.35, Seed: 3})
			c := &cli{env: mockEnv(url)}
			out := filepath.Join(t.TempDir(), "out.jsonl")
			if code := c.run(t, "batch", in, "-o", out, "--quiet", mode, "--backoff-base", "1ms", "--backoff-max", "2ms",
				"--max-attempts", "20", "--poll-interval", "1ms", "--poll-max", "2ms"); code != 0 {
				t.Fatalf("exit %d: %s", code, c.stderr.String())
			}
			got := readLines(t, out)
			retried := 0
			bodies := map[string]string{}
			for id, p := range prompts {
				l := got[id]
				body := l.Get("response.body")
				if body.Get("object").Str != "response" || body.Get("status").Str != "completed" || body.Get("output.#").Int() != 1 ||
					body.Get("output.0.content.0.text").Str != mock.Answer(p, 64) || l.Get("llmrun.input_tokens").Int() == 0 ||
					l.Get("llmrun.output_tokens").Int() != body.Get("usage.output_tokens").Int() {
					t.Errorf("%s: %s", id, l.Raw)
				}
				if l.Get("llmrun.attempts").Int() > 1 {
					retried++
				}
				bodies[id] = body.Raw
			}
			st := m.Stats()
			if mode != "--mode=batch" && (st.MidStream == 0 || retried == 0 || st.Duplicates != 0) {
				t.Errorf("no fault was retried (%d retried): %+v", retried, st)
			}
			if mode == "--mode=batch" && st.BatchesCreated != 1 {
				t.Errorf("stats %+v", st)
			}
			if plainBodies == nil {
				plainBodies = bodies
				return
			}
			for id, b := range bodies {
				if !jsonEqual(t, b, plainBodies[id]) {
					t.Errorf("%s: %s differs from the plain answer\n%s\n%s", id, mode, b, plainBodies[id])
				}
			}
		})
	}
}

// embeddingLines are embeddings batch lines: id → inputs; every third line
// sends an array of three inputs, every fourth asks for base64.
func embeddingLines(n int) (lines []any, inputs map[string][]string) {
	inputs = map[string][]string{}
	for i := range n {
		id := fmt.Sprintf("emb-%03d", i)
		body := map[string]any{"model": "text-embedding-3-small"}
		if i%3 == 0 {
			inputs[id] = []string{fmt.Sprintf("first %d", i), fmt.Sprintf("second %d", i), fmt.Sprintf("third %d", i)}
			body["input"] = inputs[id]
		} else {
			inputs[id] = []string{fmt.Sprintf("document number %d", i)}
			body["input"] = inputs[id][0]
		}
		if i%4 == 0 {
			body["encoding_format"] = "base64"
		}
		lines = append(lines, map[string]any{"custom_id": id, "method": "POST", "url": "/v1/embeddings", "body": body})
	}
	return lines, inputs
}

// checkVectors fails unless the line's answer holds the mock's vectors for
// inputs, in order.
func checkVectors(t *testing.T, id string, l gjson.Result, inputs []string) {
	t.Helper()
	data := l.Get("response.body.data").Array()
	if len(data) != len(inputs) || l.Get("llmrun.output_tokens").Int() != 0 || l.Get("llmrun.input_tokens").Int() != l.Get("response.body.usage.prompt_tokens").Int() {
		t.Errorf("%s: %s", id, l.Raw)
		return
	}
	for i, in := range inputs {
		want := mock.Embedding("text-embedding-3-small", in, mock.DefaultEmbeddingDims)
		var got []float32
		if e := data[i].Get("embedding"); e.Type == gjson.String {
			raw, _ := base64.StdEncoding.DecodeString(e.Str)
			for j := 0; j+4 <= len(raw); j += 4 {
				got = append(got, math.Float32frombits(binary.LittleEndian.Uint32(raw[j:])))
			}
		} else {
			json.Unmarshal([]byte(e.Raw), &got)
		}
		if fmt.Sprint(got) != fmt.Sprint(want) || data[i].Get("index").Int() != int64(i) {
			t.Errorf("%s input %d: %v, want %v", id, i, got, want)
		}
	}
}

// TestE2EEmbeddings: embeddings lines, one input or many per request,
// floats or base64, live and through the batch API: every vector is the
// mock's for its input; no output tokens are counted.
func TestE2EEmbeddings(t *testing.T) {
	lines, inputs := embeddingLines(20)
	in := writeLines(t, lines...)
	for _, mode := range []string{"sync", "batch"} {
		t.Run(mode, func(t *testing.T) {
			m, url := mockServer(t, mock.Config{})
			c := &cli{env: mockEnv(url)}
			out := filepath.Join(t.TempDir(), "out.jsonl")
			if code := c.run(t, "batch", in, "-o", out, "--quiet", "--mode", mode, "--poll-interval", "1ms", "--poll-max", "2ms"); code != 0 {
				t.Fatalf("exit %d: %s", code, c.stderr.String())
			}
			got := readLines(t, out)
			for id, ins := range inputs {
				checkVectors(t, id, got[id], ins)
			}
			if st := m.Stats(); st.OutputTokens != 0 || (mode == "batch" && st.BatchesCreated != 1) {
				t.Errorf("stats %+v", st)
			}
		})
	}
}

// TestE2EMixedEndpointsBatch: chat, Responses and embeddings lines in one
// input go to one batch per endpoint (OpenAI's endpoint is per batch), and
// an embeddings request counts its inputs against --batch-max-items.
func TestE2EMixedEndpointsBatch(t *testing.T) {
	emb, inputs := embeddingLines(4) // 6 inputs in all: lines 0 and 3 hold three
	resp, _ := responsesFile(t, 1)
	respLine, _ := os.ReadFile(resp)
	var r any
	json.Unmarshal(respLine, &r)
	in := writeLines(t, append(emb, r, map[string]any{"custom_id": "chat", "prompt": "Hello.", "model": "m1"})...)
	// The mock refuses a batch of more than 4 embedding inputs too.
	m, url := mockServer(t, mock.Config{BatchMaxItems: 4})
	c := &cli{env: mockEnv(url)}
	out := filepath.Join(t.TempDir(), "out.jsonl")
	if code := c.run(t, "batch", in, "-o", out, "--quiet", "--mode", "batch", "--batch-max-items", "4", "--poll-interval", "1ms", "--poll-max", "2ms"); code != 0 {
		t.Fatalf("exit %d: %s", code, c.stderr.String())
	}
	got := readLines(t, out)
	for id, ins := range inputs {
		checkVectors(t, id, got[id], ins)
	}
	if got["resp-000"].Get("response.body.object").Str != "response" || answerText(got["chat"]) != mock.Answer("Hello.", 0) {
		t.Errorf("%s\n%s", got["resp-000"].Raw, got["chat"].Raw)
	}
	// Embeddings: 3+1 inputs, then 1 more would make 5: two batches
	// (3+1, 1+3); then one Responses and one chat batch.
	if st := m.Stats(); st.BatchesCreated != 4 || st.BatchSucceeded != 6 {
		t.Errorf("stats %+v", st)
	}
}

// TestE2EFallbackAcrossEndpoints: when the primary refuses, a Responses
// request falls back to Anthropic as the Messages request asking the same;
// an embeddings request cannot, and its failure says why.
func TestE2EFallbackAcrossEndpoints(t *testing.T) {
	resp, prompts := responsesFile(t, 2)
	respLines, _ := os.ReadFile(resp)
	var lines []any
	for _, l := range strings.Split(strings.TrimSpace(string(respLines)), "\n") {
		var v any
		json.Unmarshal([]byte(l), &v)
		lines = append(lines, v)
	}
	emb, _ := embeddingLines(1)
	in := writeLines(t, append(lines, emb...)...)
	_, url := mockServer(t, mock.Config{})
	c := &cli{env: mockEnv(url)}
	out := filepath.Join(t.TempDir(), "out.jsonl")
	// The primary's base URL answers 404 to everything: not retried, the
	// requests go on to the fallback.
	code := c.run(t, "batch", in, "-o", out, "--quiet", "--provider", "openai", "--base-url", url+"/wrong/v1", "--fallback", "anthropic:claude-mock")
	if code != 1 {
		t.Fatalf("exit %d, want 1 (the embeddings request fails): %s", code, c.stderr.String())
	}
	got := readLines(t, out)
	for id, p := range prompts {
		l := got[id]
		if l.Get("llmrun.provider").Str != "anthropic" || l.Get("response.body.type").Str != "message" || answerText(l) != mock.Answer(p, 64) {
			t.Errorf("%s: %s", id, l.Raw)
		}
	}
	failed := readLines(t, filepath.Join(filepath.Dir(out), "out.errors.jsonl"))["emb-000"]
	if !strings.Contains(failed.Get("error.message").Str, "embeddings request cannot fall back") {
		t.Errorf("embeddings: %s", failed.Raw)
	}
}
