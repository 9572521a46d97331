package cmd

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmrun/llmrun/providers/mock"
)

// TestInputSimpleFieldsBesideBatchShapeExits2: a batch line that also
// holds a simple line's request fields (a top-level model beside body,
// a prompt beside params) would be sent as its request member with them
// silently ignored. The run stops at the check instead, exit 2, naming
// the file and line, the member and the fields, before anything is sent
// (the good line before it included), on the live route and the batch
// API's alike. A batch line with its own members and llmrun's (priority,
// tags) still runs.
func TestInputSimpleFieldsBesideBatchShapeExits2(t *testing.T) {
	const (
		body  = `"method":"POST","url":"/v1/chat/completions","body":{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hi"}]}`
		plain = `{"custom_id":"ok","prompt":"hi"}`
	)
	for _, tc := range []struct {
		name, input, at string
		names           []string
		args            []string
	}{
		{"model beside body", plain + "\n" + `{"custom_id":"a",` + body + `,"model":"gpt-4o"}` + "\n", ":2:", []string{"body", "model"}, nil},
		{"prompt and max_tokens beside params", `{"custom_id":"b","prompt":"hi","params":{"model":"claude-sonnet-4-5","max_tokens":16,"messages":[{"role":"user","content":"hi"}]},"max_tokens":5}` + "\n", ":1:", []string{"params", "prompt, max_tokens"}, nil},
		{"system beside request, batch API", plain + "\n\n" + `{"key":"c","system":"be brief","request":{"contents":[{"parts":[{"text":"hi"}]}]}}` + "\n", ":3:", []string{"request", "system"}, []string{"--provider", "gemini", "--mode", "batch"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, url := mockServer(t, mock.Config{})
			in := filepath.Join(t.TempDir(), "in.jsonl")
			os.WriteFile(in, []byte(tc.input), 0o644)
			c := &cli{env: mockEnv(url)}
			code := c.run(t, append([]string{"batch", in, "--model", "gpt-4o-mini", "--quiet"}, tc.args...)...)
			if code != ExitUsage {
				t.Fatalf("exit %d, want 2; stderr %q", code, c.stderr.String())
			}
			msg := c.stderr.String()
			if !strings.Contains(msg, in+tc.at) {
				t.Errorf("stderr %q does not name %s%s", msg, in, tc.at)
			}
			for _, k := range tc.names {
				if !strings.Contains(msg, k) {
					t.Errorf("stderr %q does not name %s", msg, k)
				}
			}
			if s := m.Stats(); s.Attempts != 0 {
				t.Errorf("%+v sent for an input that does not check", s)
			}
		})
	}

	m, url := mockServer(t, mock.Config{})
	dir := t.TempDir()
	in, out := filepath.Join(dir, "in.jsonl"), filepath.Join(dir, "out.jsonl")
	os.WriteFile(in, []byte(`{"custom_id":"a",`+body+`,"priority":"high","tags":{"team":"x"},"model":null,"note":"mine"}`+"\n"), 0o644)
	c := &cli{env: mockEnv(url)}
	if code := c.run(t, "batch", in, "-o", out, "--quiet"); code != ExitOK {
		t.Fatalf("exit %d: %s", code, c.stderr.String())
	}
	if l := readLines(t, out)["a"]; l.Get("response.body.model").Str != "gpt-4o-mini" || m.Stats().Completed != 1 {
		t.Errorf("answer %s: want the body's request, answered once", l.Raw)
	}
}
