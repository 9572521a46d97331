package cmd

import (
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"testing"
)

// initLine is a line of GODEBUG=inittrace=1 for one of llmrun's packages.
var initLine = regexp.MustCompile(`(?m)^init (github\.com/llmrun/llmrun/\S+) @.*, (\d+) bytes, (\d+) allocs$`)

// TestPackageInitsAllocateLittle: every process, `llmrun --help` included,
// runs the package initialisation of everything linked, so what a run may
// never use (Redis scripts, error-text patterns, metric descriptions, a
// time zone) is built on first use instead. It reads the initialisation
// trace of this test binary, which links the same packages; the test
// files' own variables are counted in cmd's line, so cmd is left out.
// Before, llmrun's packages made 688 allocations, 151 KB, outside cmd.
func TestPackageInitsAllocateLittle(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	c := exec.Command(exe, "-test.run=^$")
	c.Env = append(os.Environ(), "GODEBUG=inittrace=1")
	out, err := c.CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	var bytes, allocs, pkgs int
	for _, m := range initLine.FindAllStringSubmatch(string(out), -1) {
		if m[1] == "github.com/llmrun/llmrun/cmd" {
			continue
		}
		b, _ := strconv.Atoi(m[2])
		a, _ := strconv.Atoi(m[3])
		bytes, allocs, pkgs = bytes+b, allocs+a, pkgs+1
		if a > 60 {
			t.Errorf("%s: %d allocations, %d bytes at initialisation", m[1], a, b)
		}
	}
	if pkgs < 5 {
		t.Fatalf("the trace names %d of llmrun's packages: %s", pkgs, out)
	}
	if allocs > 300 || bytes > 48<<10 {
		t.Errorf("llmrun's packages make %d allocations, %d bytes at initialisation; want at most 300 and 48 KiB", allocs, bytes)
	}
	t.Logf("%d packages: %d allocations, %d bytes", pkgs, allocs, bytes)
}
