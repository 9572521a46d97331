package source

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/llmrun/llmrun/providers"
)

func TestParseShapes(t *testing.T) {
	openaiP := Parser{Format: providers.FormatOpenAI, Defaults: LineDefaults{Model: "m-default", MaxTokens: 50}}
	anthP := Parser{Format: providers.FormatAnthropic, Defaults: LineDefaults{Model: "c-default"}}
	tests := map[string]struct {
		p         Parser
		line      string
		wantID    string
		wantModel string
		wantMax   int
		check     func(t *testing.T, body []byte)
	}{
		"openai batch line passes body through": {
			p:      openaiP,
			line:   `{"custom_id":"a","method":"POST","url":"/v1/chat/completions","body":{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hi"}],"max_completion_tokens":7,"seed":3}}`,
			wantID: "a", wantModel: "gpt-4o-mini", wantMax: 7,
			check: func(t *testing.T, body []byte) {
				if gjson.GetBytes(body, "seed").Int() != 3 {
					t.Errorf("unknown field dropped: %s", body)
				}
			},
		},
		"anthropic line passes params through": {
			p:      anthP,
			line:   `{"custom_id":"b","params":{"model":"claude-x","max_tokens":9,"messages":[{"role":"user","content":"hi"}]}}`,
			wantID: "b", wantModel: "claude-x", wantMax: 9,
		},
		"simple line without id gets line number and defaults": {
			p:      openaiP,
			line:   `{"prompt":"hello","system":"be brief"}`,
			wantID: "line-4", wantModel: "m-default", wantMax: 50,
			check: func(t *testing.T, body []byte) {
				if got := gjson.GetBytes(body, "messages.0.role").Str; got != "system" {
					t.Errorf("first message role %q, want system: %s", got, body)
				}
				if got := gjson.GetBytes(body, "messages.1.content").Str; got != "hello" {
					t.Errorf("user content %q: %s", got, body)
				}
			},
		},
		"simple line for anthropic gets max_tokens default and top-level system": {
			p:      anthP,
			line:   `{"custom_id":"c","prompt":"hello","system":"s"}`,
			wantID: "c", wantModel: "c-default", wantMax: defaultAnthropicMaxTokens,
			check: func(t *testing.T, body []byte) {
				if gjson.GetBytes(body, "system").Str != "s" {
					t.Errorf("system not top-level: %s", body)
				}
			},
		},
		"openai body without model takes --model": {
			p:      openaiP,
			line:   `{"custom_id":"d","body":{"messages":[{"role":"user","content":"x"}]}}`,
			wantID: "d", wantModel: "m-default",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			req, err := tc.p.Parse([]byte(tc.line), 4)
			if err != nil {
				t.Fatal(err)
			}
			if req.ID != tc.wantID || req.Model != tc.wantModel || req.MaxTokens != tc.wantMax {
				t.Errorf("got id=%q model=%q max=%d, want %q %q %d", req.ID, req.Model, req.MaxTokens, tc.wantID, tc.wantModel, tc.wantMax)
			}
			if !gjson.ValidBytes(req.Body) {
				t.Fatalf("invalid body %s", req.Body)
			}
			if tc.check != nil {
				tc.check(t, req.Body)
			}
		})
	}
}

func TestParseRejects(t *testing.T) {
	p := Parser{Format: providers.FormatOpenAI, Defaults: LineDefaults{Model: "m"}}
	tests := map[string]struct{ line, want string }{
		"not json":        {`{"prompt":`, "not valid JSON"},
		"array":           {`[1,2]`, "not a JSON object"},
		"no request":      {`{"custom_id":"x"}`, "no prompt, body, params or request"},
		"numeric id":      {`{"custom_id":5,"prompt":"p"}`, "custom_id"},
		"empty prompt":    {`{"prompt":""}`, "prompt must be"},
		"bad method":      {`{"method":"GET","url":"/v1/chat/completions","body":{"messages":[]}}`, "method"},
		"legacy url":      {`{"method":"POST","url":"/v1/completions","body":{"prompt":"x"}}`, "url"},
		"body not object": {`{"body":"x"}`, "body must be"},
		"no messages":     {`{"body":{"model":"m"}}`, "messages"},
		"bad max_tokens":  {`{"prompt":"p","max_tokens":-1}`, "max_tokens"},
		"empty messages":  {`{"body":{"model":"m","messages":[]}}`, "empty messages"},
		// Translated to OpenAI, an Anthropic line with only a system prompt
		// would gain a messages array: it is checked in its own shape.
		"anthropic no messages":       {`{"params":{"model":"m","max_tokens":5}}`, "no messages"},
		"anthropic only system":       {`{"params":{"model":"m","max_tokens":5,"system":"s"}}`, "no messages"},
		"anthropic empty messages":    {`{"params":{"model":"m","max_tokens":5,"messages":[]}}`, "empty messages"},
		"anthropic messages not list": {`{"params":{"model":"m","max_tokens":5,"messages":{}}}`, "no messages"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := p.Parse([]byte(tc.line), 1)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to mention %q", err, tc.want)
			}
		})
	}
	// The same lines sent to an Anthropic provider.
	anth := Parser{Format: providers.FormatAnthropic, Defaults: LineDefaults{Model: "m"}}
	for _, line := range []string{
		`{"params":{"model":"m","max_tokens":5}}`,
		`{"params":{"model":"m","max_tokens":5,"messages":[]}}`,
		`{"body":{"model":"m","messages":[]}}`,
		`{"body":{"model":"m","messages":[{"role":"system","content":"s"}]}}`,
	} {
		if _, err := anth.Parse([]byte(line), 1); err == nil || !strings.Contains(err.Error(), "messages") {
			t.Errorf("anthropic provider, %s: err = %v", line, err)
		}
	}
	// A top-level system beside a body is not the body's: the line is
	// refused for it before the body is read.
	if _, err := anth.Parse([]byte(`{"body":{"model":"m","messages":[]}, "system":"s"}`), 1); err == nil || !strings.Contains(err.Error(), "system (simple-line fields)") {
		t.Errorf("anthropic provider, a system beside the body: err = %v", err)
	}
	noModel := Parser{Format: providers.FormatOpenAI}
	if _, err := noModel.Parse([]byte(`{"prompt":"p"}`), 1); err == nil || !strings.Contains(err.Error(), "--model") {
		t.Errorf("missing model: err = %v", err)
	}
}

func writeInput(t *testing.T, lines ...string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "in.jsonl")
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestCheckNamesFileAndLine(t *testing.T) {
	p := Parser{Format: providers.FormatOpenAI, Defaults: LineDefaults{Model: "m"}}
	t.Run("bad line", func(t *testing.T) {
		path := writeInput(t, `{"prompt":"a"}`, ``, `{"prompt":`)
		_, err := (&Source{Path: path, Parser: p}).Check()
		var ie *InputError
		if !errors.As(err, &ie) || ie.Line != 3 || !strings.Contains(err.Error(), path+":3:") {
			t.Fatalf("err = %v, want %s:3", err, path)
		}
	})
	t.Run("duplicate names both lines", func(t *testing.T) {
		path := writeInput(t, `{"custom_id":"x","prompt":"a"}`, `{"custom_id":"y","prompt":"b"}`, `{"custom_id":"x","prompt":"c"}`)
		_, err := (&Source{Path: path, Parser: p}).Check()
		if err == nil || !strings.Contains(err.Error(), path+":3:") || !strings.Contains(err.Error(), path+":1") {
			t.Fatalf("err = %v, want both lines", err)
		}
	})
	t.Run("empty messages stop the check at its line", func(t *testing.T) {
		path := writeInput(t, `{"prompt":"a"}`, `{"custom_id":"x","params":{"model":"m","max_tokens":5,"messages":[]}}`)
		_, err := (&Source{Path: path, Parser: p}).Check()
		if err == nil || !strings.Contains(err.Error(), path+":2: ") || !strings.Contains(err.Error(), "messages") {
			t.Fatalf("err = %v, want %s:2 naming messages", err, path)
		}
	})
	t.Run("blank lines skipped, count right", func(t *testing.T) {
		path := writeInput(t, ``, `{"prompt":"a"}`, `   `, `{"prompt":"b"}`)
		res, err := (&Source{Path: path, Parser: p}).Check()
		if err != nil || res.Requests != 2 {
			t.Fatalf("res=%+v err=%v", res, err)
		}
		var ids []string
		(&Source{Path: path, Parser: p}).Each(func(r *providers.Request) error { ids = append(ids, r.ID); return nil })
		if strings.Join(ids, ",") != "line-2,line-4" {
			t.Errorf("ids %v", ids)
		}
	})
	t.Run("long line over the buffer", func(t *testing.T) {
		long := `{"prompt":"` + strings.Repeat("x", 2<<20) + `"}`
		path := writeInput(t, long, `{"prompt":"b"}`)
		res, err := (&Source{Path: path, Parser: p}).Check()
		if err != nil || res.Requests != 2 {
			t.Fatalf("res=%+v err=%v", res, err)
		}
	})
}

// FuzzParseLine: Parse never panics, and whatever it accepts is a valid
// JSON body with a non-empty conversation (messages, or Gemini's contents)
// and a non-empty id and model.
func FuzzParseLine(f *testing.F) {
	for _, s := range []string{
		`{"prompt":"hi"}`,
		`{"custom_id":"a","body":{"model":"m","messages":[{"role":"user","content":"x"}]}}`,
		`{"custom_id":"b","params":{"model":"c","max_tokens":5,"messages":[{"role":"user","content":"x"}]}}`,
		`{"custom_id":"c","prompt":"p","system":"s","max_tokens":3}`,
		`{"key":"g","request":{"contents":[{"role":"user","parts":[{"text":"x"}]}],"generationConfig":{"maxOutputTokens":4}}}`,
		`{"key":"h","request":{"systemInstruction":{"parts":[{"text":"s"}]},"contents":[{"parts":[{"inlineData":{"mimeType":"image/png","data":"AA=="}}]}]}}`,
		`[]`, `{`, `{"body":null}`, `{"request":{"contents":[]}}`,
	} {
		f.Add([]byte(s), true)
	}
	// Each line is parsed for the format anth picks and for Gemini.
	f.Fuzz(func(t *testing.T, line []byte, anth bool) {
		format := providers.FormatOpenAI
		if anth {
			format = providers.FormatAnthropic
		}
		for _, format := range []providers.Format{format, providers.FormatGemini} {
			p := Parser{Format: format, Defaults: LineDefaults{Model: "m"}}
			req, err := p.Parse(line, 1)
			if err != nil {
				continue
			}
			if req.ID == "" || req.Model == "" || !gjson.ValidBytes(req.Body) || checkBody(req.Body, req.Endpoint, format) != nil {
				t.Fatalf("accepted a bad %v request: %+v body=%s", format, req, req.Body)
			}
		}
	})
}

func TestParseShard(t *testing.T) {
	for _, bad := range []string{"0/3", "4/3", "1/0", "a/b", "1/3x", "2"} {
		if _, err := ParseShard(bad); err == nil {
			t.Errorf("ParseShard(%q) accepted", bad)
		}
	}
	sh, err := ParseShard("2/3")
	if err != nil || sh != (Shard{2, 3}) {
		t.Fatalf("ParseShard(2/3) = %v, %v", sh, err)
	}
	// Every id lands in exactly one shard.
	for i := range 1000 {
		id := fmt.Sprint("id-", i)
		n := 0
		for s := 1; s <= 3; s++ {
			if (Shard{s, 3}).Has(id) {
				n++
			}
		}
		if n != 1 {
			t.Fatalf("%s is in %d shards", id, n)
		}
	}
	if !(Shard{}).Has("x") {
		t.Error("the zero Shard must take everything")
	}
}

// TestParsePriority: a line's priority field overrides the run's, in
// every shape, by number or name; a bad one is an input error; a body's
// own "priority" (a provider parameter) is not the line's.
func TestParsePriority(t *testing.T) {
	p := Parser{Format: providers.FormatOpenAI, Defaults: LineDefaults{Model: "m", Priority: -1}}
	for line, want := range map[string]int{
		`{"prompt":"x"}`:                   -1,
		`{"prompt":"x","priority":5}`:      5,
		`{"prompt":"x","priority":"high"}`: 1,
		`{"prompt":"x","priority":null}`:   -1,
		`{"custom_id":"a","body":{"messages":[{"role":"user","content":"x"}]},"priority":-3}`:                                 -3,
		`{"custom_id":"a","body":{"messages":[{"role":"user","content":"x"}],"priority":9}}`:                                  -1,
		`{"custom_id":"b","params":{"model":"c","max_tokens":5,"messages":[{"role":"user","content":"x"}]},"priority":"low"}`: -1,
		`{"custom_id":"c","params":{"model":"c","max_tokens":5,"messages":[{"role":"user","content":"x"}]},"priority":1000}`:  1000,
	} {
		req, err := p.Parse([]byte(line), 1)
		if err != nil {
			t.Errorf("%s: %v", line, err)
			continue
		}
		if req.Priority != want {
			t.Errorf("%s: priority %d, want %d", line, req.Priority, want)
		}
	}
	for _, line := range []string{`{"prompt":"x","priority":1.5}`, `{"prompt":"x","priority":"urgent"}`, `{"prompt":"x","priority":1001}`, `{"prompt":"x","priority":true}`} {
		if _, err := p.Parse([]byte(line), 1); err == nil || !strings.Contains(err.Error(), "priority must be") {
			t.Errorf("%s: err = %v, want a priority error", line, err)
		}
	}
}
