package report

import (
	"os"
	"path/filepath"
	"testing"
)

// TestSummaryFileOwnerOnly: a new --summary file is owner-only like the
// output, errors and state files beside it (it names models, endpoints
// and error causes); one that exists keeps its mode, so a chmod stands,
// as it does for the output.
func TestSummaryFileOwnerOnly(t *testing.T) {
	dir := t.TempDir()
	s := &Summary{Requests: 1}
	fresh := filepath.Join(dir, "new.json")
	if err := s.WriteFile(fresh); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(fresh); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("new summary: mode %v (%v), want 0600", fi.Mode().Perm(), err)
	}
	shared := filepath.Join(dir, "shared.json")
	if err := os.WriteFile(shared, []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(shared, 0o640); err != nil {
		t.Fatal(err)
	}
	if err := s.WriteFile(shared); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(shared); err != nil || fi.Mode().Perm() != 0o640 {
		t.Fatalf("rewritten summary: mode %v (%v), want its own 0640 kept", fi.Mode().Perm(), err)
	}
}
