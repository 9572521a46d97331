package outfile

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestCheckerProbesADirectoryOnce: new files in one directory, however
// spelt, probe it once; another directory gets its own probe; an existing
// file needs none; a failed probe fails every new file there.
func TestCheckerProbesADirectoryOnce(t *testing.T) {
	dir, other := t.TempDir(), t.TempDir()
	t.Chdir(dir)
	write(t, filepath.Join(dir, "old.jsonl"), "x")
	c := NewChecker()
	var probed []string
	c.probe = func(d string) error {
		probed = append(probed, d)
		return probeDir(d)
	}
	for _, p := range []string{"out.jsonl", filepath.Join(dir, "out.errors.jsonl"), "./summary.json", "old.jsonl", filepath.Join(other, "metrics.prom")} {
		if err := c.Check(p); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
	}
	if len(probed) != 2 {
		t.Fatalf("probed %q, want %s once and %s once", probed, dir, other)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".llmrun-probe-*")); len(left) > 0 {
		t.Fatalf("probe files left: %q", left)
	}

	refused := errors.New("cannot create files in " + other)
	c = NewChecker()
	calls := 0
	c.probe = func(string) error { calls++; return refused }
	for _, p := range []string{filepath.Join(other, "a"), filepath.Join(other, "b")} {
		if err := c.Check(p); !errors.Is(err, refused) {
			t.Fatalf("%s: %v, want the directory's refusal", p, err)
		}
	}
	if calls != 1 {
		t.Fatalf("%d probes of a refusing directory, want 1", calls)
	}
	if _, err := os.Stat(filepath.Join(other, "a")); !os.IsNotExist(err) {
		t.Fatalf("Check created the file it checks: %v", err)
	}
}
