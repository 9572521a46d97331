package cmd

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmrun/llmrun/providers/mock"
)

// batchLine is one OpenAI batch line for request i, in the encoding enc
// picks: the same request whatever enc is, unless edited.
func batchLine(i int, enc string, edited bool) string {
	text := fmt.Sprintf("Tell me fact number %d about the sea, please.", i)
	if i%3 == 0 {
		text = fmt.Sprintf("Dis-moi le fait numéro %d sur la mer, café.", i)
	}
	if edited {
		text += " Answer in one word."
	}
	temp := "1"
	if enc == "float" {
		temp = "1.0"
	}
	if enc == "escaped" {
		var b strings.Builder
		for _, r := range text {
			if r > 0x7e {
				fmt.Fprintf(&b, `\u%04X`, r)
			} else {
				b.WriteRune(r)
			}
		}
		text = b.String()
	}
	id := fmt.Sprintf("req-%04d", i)
	switch enc {
	case "spaced": // Python's json.dumps
		return fmt.Sprintf(`{"custom_id": %q, "method": "POST", "url": "/v1/chat/completions", "body": {"model": "m", "messages": [{"role": "user", "content": %q}], "max_tokens": 40, "temperature": %s}}`, id, text, temp)
	case "sorted": // json.dumps(sort_keys=True), compact
		return fmt.Sprintf(`{"body":{"max_tokens":40,"messages":[{"content":%q,"role":"user"}],"model":"m","temperature":%s},"custom_id":%q,"method":"POST","url":"/v1/chat/completions"}`, text, temp, id)
	}
	return fmt.Sprintf(`{"custom_id":%q,"method":"POST","url":"/v1/chat/completions","body":{"model":"m","messages":[{"role":"user","content":"%s"}],"max_tokens":40,"temperature":%s}}`, id, text, temp)
}

func writeBatchFile(t *testing.T, path, enc string, n int, edit map[int]bool) {
	t.Helper()
	var b strings.Builder
	for i := range n {
		b.WriteString(batchLine(i, enc, edit[i]))
		b.WriteByte('\n')
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestReencodedInputSendsNothing is issue 24's nightly generator that
// changes its JSON encoder: 200 answered requests, then the same requests
// re-encoded (spacing, key order, `\u00e9` for `é`, `1.0` for `1`): no rerun
// sends anything, counted at the mock; an edited prompt is sent again.
func TestReencodedInputSendsNothing(t *testing.T) {
	m, url := mockServer(t, mock.Config{Seed: 24})
	in := filepath.Join(t.TempDir(), "in.jsonl")
	writeBatchFile(t, in, "compact", 200, nil)
	c := &cli{env: mockEnv(url)}
	args := []string{"batch", in, "--provider", "openai", "--quiet"}
	if code := c.run(t, args...); code != 0 || m.Stats().Attempts != 200 {
		t.Fatalf("first run: exit %d, %d sent: %s", code, m.Stats().Attempts, c.stderr.String())
	}
	for _, enc := range []string{"spaced", "sorted", "escaped", "float", "compact"} {
		writeBatchFile(t, in, enc, 200, nil)
		before := m.Stats().Attempts
		if code := c.run(t, args...); code != 0 {
			t.Fatalf("%s: exit %d: %s", enc, code, c.stderr.String())
		}
		if sent := m.Stats().Attempts - before; sent != 0 {
			t.Errorf("%s: the re-encoded input sent %d requests again", enc, sent)
		}
	}
	writeBatchFile(t, in, "spaced", 200, map[int]bool{7: true, 9: true})
	before := m.Stats().Attempts
	if code := c.run(t, args...); code != 0 {
		t.Fatalf("edited: exit %d: %s", code, c.stderr.String())
	}
	if sent := m.Stats().Attempts - before; sent != 2 {
		t.Errorf("2 edited prompts: %d sent, want 2", sent)
	}
	if got := answerText(readLines(t, strings.TrimSuffix(in, ".jsonl")+".out.jsonl")["req-0007"]); got != mock.Answer("Tell me fact number 7 about the sea, please. Answer in one word.", 40) {
		t.Errorf("req-0007 answers %q, not the edited prompt", got)
	}
}

// TestOldSchemeOutputAdopted: testdata/fingerprint_v1 is an output the
// previous llmrun (fingerprints of the body bytes as sent) wrote for its
// input, an input as Python's json.dumps writes it (spaces, `\u00e9`,
// `1.0`). The rerun adopts every answer instead of asking again, and
// rewrites the output with the new fingerprints, once.
func TestOldSchemeOutputAdopted(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"in.jsonl", "out.jsonl"} {
		b, err := os.ReadFile(filepath.Join("testdata", "fingerprint_v1", name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	in, out := filepath.Join(dir, "in.jsonl"), filepath.Join(dir, "out.jsonl")
	old := readLines(t, out)
	c := &cli{}
	args := []string{"batch", in, "--provider", "mock", "-o", out, "--quiet"}
	for run := 1; run <= 2; run++ {
		if code := c.run(t, args...); code != 0 {
			t.Fatalf("run %d: exit %d: %s", run, code, c.stderr.String())
		}
		if s := c.stderr.String(); !strings.Contains(s, "200 skipped") || !strings.Contains(s, " 0 attempts") {
			t.Fatalf("run %d asked again: %s", run, s)
		}
	}
	now := readLines(t, out)
	changed := 0
	for id, l := range old {
		if now[id].Get("response.body").Raw != l.Get("response.body").Raw {
			t.Fatalf("%s: the answer changed", id)
		}
		if now[id].Get("llmrun.fingerprint").Str != l.Get("llmrun.fingerprint").Str {
			changed++
		}
	}
	if changed != len(old) {
		t.Errorf("%d of %d lines re-fingerprinted; their bodies were all non-canonical", changed, len(old))
	}
}
