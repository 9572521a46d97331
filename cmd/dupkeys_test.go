package cmd

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmrun/llmrun/providers/mock"
)

// TestDuplicateKeysRefused (issue 22 item 7) runs llmrun as a process: a
// line naming a key twice, at the top (custom_id) or inside the body
// (model, max_tokens), is an input error naming file and line (exit 2),
// and nothing is sent. Before, llmrun read the first value (gpt-4o-mini, 1
// token) while the server used the last.
func TestDuplicateKeysRefused(t *testing.T) {
	m, url := mockServer(t, mock.Config{Seed: 1})
	dir := t.TempDir()
	ok := `{"custom_id":"a","method":"POST","url":"/v1/chat/completions","body":{"model":"m","messages":[{"role":"user","content":"hi"}],"max_tokens":5}}`
	for _, tc := range []struct{ line, key string }{
		{`{"custom_id":"b","method":"POST","url":"/v1/chat/completions","body":{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hi"}],"max_tokens":1,"model":"gpt-4o","max_tokens":150}}`, "body.model"},
		{`{"custom_id":"b","custom_id":"a","prompt":"hi"}`, "custom_id"},
		{`{"custom_id":"b","body":{"model":"m","messages":[{"role":"user","role":"system","content":"hi"}]},"url":"/v1/chat/completions","method":"POST"}`, "body.messages[].role"},
	} {
		in := filepath.Join(dir, "in.jsonl")
		if err := os.WriteFile(in, []byte(ok+"\n"+tc.line+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		code, stderr := runProcess(t, url, "batch", in, "--model", "m", "--quiet")
		if code != ExitUsage || !strings.Contains(stderr, in+":2") || !strings.Contains(stderr, tc.key) {
			t.Errorf("%s: exit %d, stderr %s", tc.key, code, stderr)
		}
	}
	if n := m.Stats().Attempts; n != 0 {
		t.Fatalf("%d requests sent", n)
	}
}
