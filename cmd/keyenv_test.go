package cmd

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestKeyInKeyEnvNeverPrinted is issue 22 item 12: a key pasted into a
// config endpoint's key_env (where its variable's name belongs) is a usage
// error that never shows the value.
func TestKeyInKeyEnvNeverPrinted(t *testing.T) {
	in, _ := promptFile(t, 1)
	for _, key := range []string{"sk-proj-AbC123def456GHI789jkl", "AIzaSyD3f4k3K3y1234567890abcdEFG"} {
		path := filepath.Join(t.TempDir(), "llmrun.yaml")
		os.WriteFile(path, []byte("endpoints:\n  x:\n    provider: openai\n    key_env: "+key+"\ndefaults:\n  provider: x\n"), 0o644)
		c := &cli{env: map[string]string{}}
		code := c.run(t, "batch", in, "--config", path, "-q")
		out := c.stderr.String() + c.stdout.String()
		if code != ExitUsage || !strings.Contains(out, "key_env must name an environment variable") {
			t.Errorf("exit %d, want 2 naming key_env: %s", code, out)
		}
		if strings.Contains(out, key) || strings.Contains(out, key[:8]) {
			t.Errorf("the key was printed: %s", out)
		}
	}
}
