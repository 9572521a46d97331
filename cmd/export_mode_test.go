package cmd

import (
	"os"
	"path/filepath"
	"testing"
)

// TestExportFileOwnerOnly: an export holds the answers (and with --input
// the prompts), so a new table file is owner-only (0600) like the output
// it is made from, whether named by -o or derived from the output; one
// that exists keeps its mode, so a chmod stands.
func TestExportFileOwnerOnly(t *testing.T) {
	dir := t.TempDir()
	in, out := filepath.Join(dir, "in.jsonl"), filepath.Join(dir, "in.out.jsonl")
	if err := os.WriteFile(in, []byte(`{"custom_id":"r1","prompt":"a secret question"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c := &cli{}
	if code := c.run(t, "batch", in, "--provider", "mock-openai", "--model", "m", "-q"); code != 0 {
		t.Fatalf("batch exit %d: %s", code, c.stderr.String())
	}
	mode := func(path string) os.FileMode {
		t.Helper()
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		return fi.Mode().Perm()
	}
	named := filepath.Join(dir, "table.csv")
	if code := c.run(t, "export", out, "--input", in, "-o", named); code != 0 {
		t.Fatalf("export -o exit %d: %s", code, c.stderr.String())
	}
	if m := mode(named); m != 0o600 {
		t.Fatalf("export -o: a new file has mode %v, want 0600", m)
	}
	if code := c.run(t, "export", out, "--format", "parquet"); code != 0 {
		t.Fatalf("export exit %d: %s", code, c.stderr.String())
	}
	if m := mode(filepath.Join(dir, "in.parquet")); m != 0o600 {
		t.Fatalf("export beside the output: a new file has mode %v, want 0600", m)
	}
	if err := os.Chmod(named, 0o640); err != nil {
		t.Fatal(err)
	}
	if code := c.run(t, "export", out, "-o", named); code != 0 {
		t.Fatalf("export -o again exit %d: %s", code, c.stderr.String())
	}
	if m := mode(named); m != 0o640 {
		t.Fatalf("export -o over an existing file: mode %v, want its own 0640 kept", m)
	}
}
