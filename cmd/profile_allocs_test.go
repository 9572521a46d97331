package cmd

import (
	"os"
	"path/filepath"
	"testing"
)

// LLMRUN_PROFILE_DIR gets the whole run's allocations (allocs.pprof)
// besides the CPU profile, when the run ends.
func TestProfileDirWritesAllocs(t *testing.T) {
	dir := t.TempDir()
	var warnings []string
	stop := startProfiles(func(k string) string {
		if k == profileEnv {
			return dir
		}
		return ""
	}, func(w string) { warnings = append(warnings, w) })
	stop()
	for _, name := range []string{"cpu.pprof", "allocs.pprof"} {
		if fi, err := os.Stat(filepath.Join(dir, name)); err != nil || fi.Size() == 0 {
			t.Errorf("%s: %v", name, err)
		}
	}
	if len(warnings) > 0 {
		t.Errorf("warnings: %q", warnings)
	}
}
