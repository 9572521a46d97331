package cmd

import (
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/llmrun/llmrun/runner"
)

// TestReadmeExitCodes: the README's exit-code table and --help's list
// name exactly the codes the code returns.
func TestReadmeExitCodes(t *testing.T) {
	want := []int{ExitOK, ExitFailed, ExitUsage, ExitAborted, runner.ExitSignalCode(syscall.SIGINT), runner.ExitSignalCode(syscall.SIGTERM)}
	slices.Sort(want)
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	start := strings.Index(readme, "## Exit codes")
	if start < 0 {
		t.Fatal("README has no Exit codes section")
	}
	section := readme[start:]
	if end := strings.Index(section[3:], "\n## "); end >= 0 {
		section = section[:end+3]
	}
	var got []int
	for _, m := range regexp.MustCompile(`(?m)^\| ([0-9 /]+) \|`).FindAllStringSubmatch(section, -1) {
		for _, f := range strings.Split(m[1], "/") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil {
				t.Fatalf("bad code %q in the README's table", f)
			}
			got = append(got, n)
		}
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("README's exit codes %v, the code's %v", got, want)
	}
	var help []int
	for _, m := range regexp.MustCompile(`(?m)^  ([0-9]+) `).FindAllStringSubmatch(exitCodesHelp, -1) {
		n, _ := strconv.Atoi(m[1])
		help = append(help, n)
	}
	for _, m := range regexp.MustCompile(`\(([0-9]+): SIG`).FindAllStringSubmatch(exitCodesHelp, -1) {
		n, _ := strconv.Atoi(m[1])
		help = append(help, n)
	}
	slices.Sort(help)
	if !slices.Equal(help, want) {
		t.Errorf("--help's exit codes %v, the code's %v", help, want)
	}
	// Each condition that maps to a code is named in its row.
	for code, words := range map[int][]string{
		ExitUsage:   {"usage", "nothing was sent"},
		ExitAborted: {"--max-outage", "--connect-deadline", "--fail-fast", "--max-failures", "--max-cost"},
	} {
		row := regexp.MustCompile(`(?m)^\| ` + strconv.Itoa(code) + ` \|.*$`).FindString(section)
		for _, w := range words {
			if !strings.Contains(row, w) {
				t.Errorf("README's row for %d does not mention %q: %s", code, w, row)
			}
		}
	}
}
