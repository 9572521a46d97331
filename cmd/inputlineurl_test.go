package cmd

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmrun/llmrun/providers/mock"
)

// TestInputLineURLItsShapeCannotHonourExits2: a simple line with
// "url":"/v1/embeddings" and an Anthropic batch line with a url naming
// embeddings or a GET method ran as chat requests. The run stops at the
// check instead, exit 2, naming the file, line and member, before
// anything is sent (the good line before it included); an Anthropic line
// with POST /v1/messages and a simple line with the chat url still run.
func TestInputLineURLItsShapeCannotHonourExits2(t *testing.T) {
	const (
		params = `"params":{"model":"claude-sonnet-4-5","max_tokens":16,"messages":[{"role":"user","content":"hi"}]}`
		plain  = `{"custom_id":"ok","prompt":"hi"}`
	)
	for _, tc := range []struct {
		name, input, at, says string
		args                  []string
	}{
		{"embeddings url on a simple line", plain + "\n" + `{"custom_id":"a","url":"/v1/embeddings","prompt":"x"}` + "\n", ":2:", `url "/v1/embeddings" on a simple line`, nil},
		{"embeddings url beside params", plain + "\n" + `{"custom_id":"b","url":"/v1/embeddings",` + params + `}` + "\n", ":2:", `url "/v1/embeddings" does not fit a request in Anthropic's shape`, []string{"--provider", "anthropic"}},
		{"GET beside params, batch API", plain + "\n\n" + `{"custom_id":"c","method":"GET",` + params + `}` + "\n", ":3:", `method "GET" is not supported`, []string{"--provider", "anthropic", "--mode", "batch"}},
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
			if msg := c.stderr.String(); !strings.Contains(msg, in+tc.at) || !strings.Contains(msg, tc.says) {
				t.Errorf("stderr %q does not name %s%s and say %q", msg, in, tc.at, tc.says)
			}
			if s := m.Stats(); s.Attempts != 0 {
				t.Errorf("%+v sent for an input that does not check", s)
			}
		})
	}

	m, url := mockServer(t, mock.Config{})
	dir := t.TempDir()
	in, out := filepath.Join(dir, "in.jsonl"), filepath.Join(dir, "out.jsonl")
	os.WriteFile(in, []byte(`{"custom_id":"a","method":"POST","url":"/v1/messages",`+params+`}`+"\n"+
		`{"custom_id":"b","method":"POST","url":"/v1/chat/completions","prompt":"hi","model":"claude-sonnet-4-5"}`+"\n"), 0o644)
	c := &cli{env: mockEnv(url)}
	if code := c.run(t, "batch", in, "-o", out, "--provider", "anthropic", "--quiet"); code != ExitOK {
		t.Fatalf("exit %d: %s", code, c.stderr.String())
	}
	if n := m.Stats().Completed; n != 2 {
		t.Errorf("%d answered, want both lines", n)
	}
}
