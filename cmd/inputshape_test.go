package cmd

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmrun/llmrun/providers/mock"
)

// TestInputLineInTwoShapesExits2: a line holding both OpenAI's body and
// Anthropic's params (or Gemini's request) is in no provider's batch
// shape. A run without --provider neither picks a provider by one member
// nor sends the other: it stops at the check, exit 2, naming the file and
// line and both members, before anything is sent. A later line in two
// shapes stops it the same way, with its own line number.
func TestInputLineInTwoShapesExits2(t *testing.T) {
	const (
		body    = `"body":{"model":"gpt-4o-mini","messages":[{"role":"user","content":"from body"}]}`
		params  = `"params":{"model":"claude-sonnet-4-5","max_tokens":16,"messages":[{"role":"user","content":"from params"}]}`
		request = `"request":{"contents":[{"parts":[{"text":"from request"}]}]}`
		plain   = `{"custom_id":"ok","prompt":"hi"}`
	)
	for _, tc := range []struct {
		name, input, at string
		members         []string
		openAIKeyOnly   bool
	}{
		{"body and params first", `{"custom_id":"a",` + params + `,` + body + "}\n" + plain + "\n", ":1:", []string{"body", "params"}, false},
		// Guessing Anthropic from params would stop at its missing key
		// instead of at the line.
		{"body and params first, OpenAI's key only", `{"custom_id":"a",` + params + `,` + body + "}\n", ":1:", []string{"body", "params"}, true},
		{"body and request first", `{"key":"b",` + request + `,` + body + "}\n", ":1:", []string{"body", "request"}, false},
		{"params and request later", plain + "\n\n" + `{"custom_id":"c",` + params + `,` + request + "}\n", ":3:", []string{"params", "request"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, url := mockServer(t, mock.Config{})
			dir := t.TempDir()
			in := filepath.Join(dir, "in.jsonl")
			os.WriteFile(in, []byte(tc.input), 0o644)
			c := &cli{env: mockEnv(url)}
			if tc.openAIKeyOnly {
				c.env = map[string]string{"OPENAI_API_KEY": c.env["OPENAI_API_KEY"], "OPENAI_BASE_URL": c.env["OPENAI_BASE_URL"]}
			}
			code := c.run(t, "batch", in, "--model", "gpt-4o-mini", "--quiet")
			if code != ExitUsage {
				t.Fatalf("exit %d, want 2; stderr %q", code, c.stderr.String())
			}
			msg := c.stderr.String()
			if !strings.Contains(msg, in+tc.at) {
				t.Errorf("stderr %q does not name %s%s", msg, in, tc.at)
			}
			for _, k := range tc.members {
				if !strings.Contains(msg, k) {
					t.Errorf("stderr %q does not name %s", msg, k)
				}
			}
			if a := m.Stats().Attempts; a != 0 {
				t.Errorf("%d requests sent for an input that does not check", a)
			}
		})
	}
}

// TestTemplateRecordsHaveNoInputShape: with --template the lines are
// records whatever their fields are called (an email's body, a job's
// params): a run without --provider goes to the first provider whose key
// is set, as for simple lines, not to the provider a field's name is the
// request member of, and a record with two such fields is no error.
func TestTemplateRecordsHaveNoInputShape(t *testing.T) {
	m, url := mockServer(t, mock.Config{})
	dir := t.TempDir()
	in, tmpl, out := filepath.Join(dir, "in.jsonl"), filepath.Join(dir, "t.tmpl"), filepath.Join(dir, "out.jsonl")
	os.WriteFile(in, []byte(`{"custom_id":"r1","params":"short","body":"Dear all, the meeting moved."}`+"\n"), 0o644)
	os.WriteFile(tmpl, []byte("Summarise ({{.params}}): {{.body}}"), 0o644)
	c := &cli{env: mockEnv(url)}
	if code := c.run(t, "batch", in, "-o", out, "--model", "gpt-4o-mini", "--template", tmpl, "--quiet"); code != ExitOK {
		t.Fatalf("exit %d: %s", code, c.stderr.String())
	}
	l := readLines(t, out)["r1"]
	if !l.Get("response.body.choices.0.message.content").Exists() || m.Stats().Completed != 1 {
		t.Errorf("answer %s: want OpenAI's (its key is the first set), one request", l.Raw)
	}
}
