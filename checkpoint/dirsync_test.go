package checkpoint

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// dirSyncs records the directories o's Store fsyncs, and whether the
// output existed at each.
func dirSyncs(o *Options) *[]string {
	var got []string
	o.dirSync = func(dir string) error {
		if _, err := os.Stat(o.Output); err != nil {
			got = append(got, dir+" (before the output exists)")
		} else {
			got = append(got, filepath.Clean(dir))
		}
		return syncDir(dir)
	}
	return &got
}

// TestOpenSyncsANewOutputsDirectoryOnce: a new output's directory entry
// is durable before Open returns (nothing is appended before), by the one
// directory fsync the state file's write makes, not by a second one of
// the same directory; when the state file is a symlink to another
// directory, the output's directory still gets its own.
func TestOpenSyncsANewOutputsDirectoryOnce(t *testing.T) {
	o, _ := testOpts(t)
	dir := filepath.Dir(o.Output)
	got := dirSyncs(&o)
	mustClose(t, mustOpen(t, o))
	// Open's state write; Close has nothing new to write (nothing was
	// appended: see TestStateWrittenOnceAtTheEnd).
	if want := []string{dir}; !slices.Equal(*got, want) {
		t.Fatalf("a new output: directory fsyncs %q, want %q (one at Open)", *got, want)
	}
	*got = nil
	mustClose(t, mustOpen(t, o))
	if want := []string{dir}; !slices.Equal(*got, want) {
		t.Fatalf("an existing output: directory fsyncs %q, want %q", *got, want)
	}

	o, _ = testOpts(t)
	dir, elsewhere := filepath.Dir(o.Output), t.TempDir()
	if err := os.Symlink(filepath.Join(elsewhere, "state.json"), o.Output+".state.json"); err != nil {
		t.Skipf("no symlinks: %v", err)
	}
	got = dirSyncs(&o)
	s := mustOpen(t, o)
	if want := []string{elsewhere, dir}; !slices.Equal(*got, want) {
		t.Fatalf("state file elsewhere: directory fsyncs at Open %q, want %q", *got, want)
	}
	mustClose(t, s)
}
