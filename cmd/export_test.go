package cmd

import (
	"encoding/csv"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"
	"github.com/tidwall/gjson"

	"github.com/llmrun/llmrun/export"
)

// TestExportReadBack runs a batch against the built-in mock in each answer
// shape (Chat Completions, Anthropic Messages, Gemini, the Responses API,
// OpenAI's and Gemini's embeddings), exports it to CSV and Parquet with its input, reads both
// back (the Parquet file with parquet-go, which wrote it) and compares
// every row with the output's line and the input's prompt: the answer text
// as the shape holds it, model, finish reason, tokens, cost, latency and
// attempts, and a pending row for a request the output does not answer.
func TestExportReadBack(t *testing.T) {
	shapes := map[string]struct {
		provider string
		line     func(i int) string
		text     func(body gjson.Result) string
		finish   string // the finish reason's path in the body
	}{
		"chat": {"mock-openai", func(i int) string {
			return fmt.Sprintf(`{"custom_id":"r%d","prompt":"Tell me fact %d, \"quoted\", with a comma"}`, i, i)
		}, func(b gjson.Result) string { return b.Get("choices.0.message.content").Str }, "choices.0.finish_reason"},
		"anthropic": {"mock-anthropic", func(i int) string {
			return fmt.Sprintf(`{"custom_id":"r%d","params":{"model":"claude-x","max_tokens":50,"system":"be brief","messages":[{"role":"user","content":"Fact %d\nplease"}]}}`, i, i)
		}, func(b gjson.Result) string { return b.Get(`content.#(type=="text").text`).Str }, "stop_reason"},
		"gemini": {"mock-gemini", func(i int) string {
			return fmt.Sprintf(`{"key":"r%d","request":{"contents":[{"role":"user","parts":[{"text":"Gemini fact %d"}]}]}}`, i, i)
		}, func(b gjson.Result) string { return b.Get("candidates.0.content.parts.0.text").Str }, "candidates.0.finishReason"},
		"responses": {"mock-openai", func(i int) string {
			return fmt.Sprintf(`{"custom_id":"r%d","url":"/v1/responses","body":{"model":"gpt-x","instructions":"be brief","input":"Responses fact %d"}}`, i, i)
		}, func(b gjson.Result) string {
			return b.Get(`output.#(type=="message").content.#(type=="output_text").text`).Str
		}, "status"},
		"embeddings": {"mock-openai", func(i int) string {
			return fmt.Sprintf(`{"custom_id":"r%d","url":"/v1/embeddings","body":{"model":"emb","input":["one %d","two"]}}`, i, i)
		}, nil, ""},
		"gemini embeddings": {"mock-gemini", func(i int) string {
			return fmt.Sprintf(`{"key":"r%d","request":{"requests":[{"content":{"parts":[{"text":"one %d"}]}},{"content":{"parts":[{"text":"two"}]}}]}}`, i, i)
		}, nil, ""},
	}
	for name, sh := range shapes {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			in, out := filepath.Join(dir, "in.jsonl"), filepath.Join(dir, "in.out.jsonl")
			var b strings.Builder
			for i := range 12 {
				b.WriteString(sh.line(i) + "\n")
			}
			if err := os.WriteFile(in, []byte(b.String()), 0o644); err != nil {
				t.Fatal(err)
			}
			c := &cli{}
			if code := c.run(t, "batch", in, "--provider", sh.provider, "--model", "m", "-q"); code != 0 {
				t.Fatalf("batch exit %d: %s", code, c.stderr.String())
			}
			// A 13th request the output does not answer: pending.
			b.WriteString(sh.line(12) + "\n")
			os.WriteFile(in, []byte(b.String()), 0o644)
			answers := readLines(t, out)
			prompts := map[string][]string{} // the texts the prompt holds, one a line
			for i := range 13 {
				l := gjson.Parse(sh.line(i))
				id := l.Get("custom_id").Str + l.Get("key").Str
				for _, path := range []string{"prompt", "params.system", "params.messages.0.content", "request.contents.0.parts.0.text", "body.instructions", "body.input", "request.requests.#.content.parts.0.text"} {
					v := l.Get(path)
					for _, x := range append(v.Array(), v)[:max(len(v.Array()), 1)] {
						if x.Type == gjson.String {
							prompts[id] = append(prompts[id], x.Str)
						}
					}
				}
			}

			for _, format := range []string{"csv", "parquet"} {
				if code := c.run(t, "export", out, "--input", in, "--format", format); code != 0 {
					t.Fatalf("export exit %d: %s", code, c.stderr.String())
				}
				rows := readTable(t, filepath.Join(dir, "in."+format), format)
				if len(rows) != 13 {
					t.Fatalf("%s: %d rows, want 13", format, len(rows))
				}
				for i, r := range rows {
					want := fmt.Sprint("r", i)
					if r.CustomID != want {
						t.Fatalf("%s row %d is %s: not in input order", format, i, r.CustomID)
					}
					if r.Prompt == nil || !promptMatches(*r.Prompt, prompts[want]) {
						t.Errorf("%s %s: prompt %v, input %q", format, want, deref(r.Prompt), prompts[want])
					}
					line, ok := answers[want]
					if !ok {
						if r.Status != export.Pending || r.Answer != nil || r.Model != nil {
							t.Errorf("%s %s: %+v, want a pending row", format, want, r)
						}
						continue
					}
					checkRow(t, format, r, line, sh.text, sh.finish)
				}
			}
		})
	}
}

// promptMatches: the exported prompt is the input's texts, one a line
// (a body's system and messages, instructions and input, inputs to embed).
func promptMatches(got string, want []string) bool {
	return len(want) > 0 && got == strings.Join(want, "\n")
}

func deref[T any](p *T) any {
	if p == nil {
		return nil
	}
	return *p
}

// checkRow compares an exported row with its output line.
func checkRow(t *testing.T, format string, r export.Row, line gjson.Result, text func(gjson.Result) string, finish string) {
	t.Helper()
	body, d := line.Get("response.body"), line.Get("llmrun")
	if r.Status != export.Succeeded {
		t.Errorf("%s %s: status %s", format, r.CustomID, r.Status)
	}
	if text != nil {
		if r.Answer == nil || *r.Answer != text(body) || *r.Answer == "" {
			t.Errorf("%s %s: answer %v, output %q", format, r.CustomID, deref(r.Answer), text(body))
		}
		if r.FinishReason == nil || *r.FinishReason != body.Get(finish).Str {
			t.Errorf("%s %s: finish %v, output %q", format, r.CustomID, deref(r.FinishReason), body.Get(finish).Str)
		}
	} else {
		vecs := body.Get("data.#.embedding").Array()
		if len(vecs) == 0 { // Gemini's batchEmbedContents
			vecs = body.Get("embeddings.#.values").Array()
		}
		if len(r.Embeddings) != len(vecs) || len(vecs) != 2 {
			t.Fatalf("%s %s: %d vectors, output %d", format, r.CustomID, len(r.Embeddings), len(vecs))
		}
		for i, v := range vecs {
			for j, x := range v.Array() {
				if r.Embeddings[i][j] != x.Num {
					t.Fatalf("%s %s: vector %d[%d] = %v, output %v", format, r.CustomID, i, j, r.Embeddings[i][j], x.Num)
				}
			}
		}
	}
	for col, pair := range map[string][2]any{
		"model":         {deref(r.Model), d.Get("model").Str},
		"provider":      {deref(r.Provider), d.Get("provider").Str},
		"input_tokens":  {deref(r.InputTokens), d.Get("input_tokens").Int()},
		"output_tokens": {deref(r.OutputTokens), d.Get("output_tokens").Int()},
		"latency_ms":    {deref(r.LatencyMS), d.Get("latency_ms").Int()},
		"attempts":      {deref(r.Attempts), d.Get("attempts").Int()},
	} {
		if pair[0] != pair[1] {
			t.Errorf("%s %s: %s %v, output %v", format, r.CustomID, col, pair[0], pair[1])
		}
	}
	if c := d.Get("cost_usd"); (c.Type == gjson.Number) != (r.CostUSD != nil) || r.CostUSD != nil && *r.CostUSD != c.Num {
		t.Errorf("%s %s: cost %v, output %s", format, r.CustomID, deref(r.CostUSD), c.Raw)
	}
}

// readTable reads an exported table back: CSV with encoding/csv, Parquet
// with parquet-go.
func readTable(t *testing.T, path, format string) []export.Row {
	t.Helper()
	if format == "parquet" {
		rows, err := parquet.ReadFile[export.Row](path)
		if err != nil {
			t.Fatal(err)
		}
		return rows
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(recs[0], ",") != strings.Join(export.Columns, ",") {
		t.Fatalf("header %q", recs[0])
	}
	var rows []export.Row
	for _, rec := range recs[1:] {
		v := map[string]string{}
		for i, col := range export.Columns {
			v[col] = rec[i]
		}
		r := export.Row{CustomID: v["custom_id"], Status: v["status"], Prompt: strPtr(v["prompt"]), Answer: strPtr(v["answer"]),
			Model: strPtr(v["model"]), Provider: strPtr(v["provider"]), FinishReason: strPtr(v["finish_reason"]), Error: strPtr(v["error"]),
			InputTokens: intPtr(v["input_tokens"]), OutputTokens: intPtr(v["output_tokens"]), LatencyMS: intPtr(v["latency_ms"]), Attempts: intPtr(v["attempts"])}
		if s := v["cost_usd"]; s != "" {
			c, _ := strconv.ParseFloat(s, 64)
			r.CostUSD = &c
		}
		if s := v["embeddings"]; s != "" {
			for _, vec := range gjson.Parse(s).Array() {
				var xs []float64
				for _, x := range vec.Array() {
					xs = append(xs, x.Num)
				}
				r.Embeddings = append(r.Embeddings, xs)
			}
		}
		rows = append(rows, r)
	}
	return rows
}

func strPtr(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func intPtr(s string) *int64 {
	if s == "" {
		return nil
	}
	n, _ := strconv.ParseInt(s, 10, 64)
	return &n
}
