package cmd

import (
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/llmrun/llmrun/ending"
)

// TestReadmeExitCodes: the README's exit-code table and --help's list
// name exactly the codes the code returns.
func TestReadmeExitCodes(t *testing.T) {
	want := []int{ExitOK, ExitFailed, ExitUsage, ExitAborted, ending.ExitSignalCode(syscall.SIGINT), ending.ExitSignalCode(syscall.SIGTERM)}
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

// readmeNotFlags are the --words the README names that are not flags of a
// command, each with why.
var readmeNotFlags = map[string]string{}

// TestReadmeFlags: every --flag the README names is a flag of some llmrun
// command (or a listed exception), and every default it states in
// "`--flag` (value)" is the flag's, so a renamed flag or a changed default
// cannot linger in the documentation.
func TestReadmeFlags(t *testing.T) {
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	flags := map[string]*pflag.Flag{}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, fs := range []*pflag.FlagSet{c.Flags(), c.PersistentFlags()} {
			fs.VisitAll(func(f *pflag.Flag) { flags[f.Name] = f })
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	root := NewRoot(&IO{})
	root.InitDefaultHelpFlag()
	root.InitDefaultVersionFlag()
	walk(root)
	if flags["concurrency"] == nil || flags["rpm"] == nil || flags["log-format"] == nil || flags["version"] == nil {
		t.Fatalf("the walk missed flags: %d found", len(flags))
	}
	seen := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?:^|[^-\w])--([a-z][a-z0-9-]*[a-z0-9])`).FindAllStringSubmatch(string(b), -1) {
		name := m[1]
		if seen[name] {
			continue
		}
		seen[name] = true
		if flags[name] == nil && readmeNotFlags[name] == "" {
			t.Errorf("README names --%s, which no command has", name)
		}
	}
	for name := range readmeNotFlags {
		if !seen[name] {
			t.Errorf("--%s is listed as an exception but the README no longer names it", name)
		}
	}
	if len(seen) < 50 {
		t.Errorf("only %d flags found in the README: is the pattern wrong?", len(seen))
	}

	// "`--flag` (value)" states the flag's default: it must be the default.
	checked := 0
	for _, m := range regexp.MustCompile("`--([a-z][a-z0-9-]*)` \\(([^)]+)\\)").FindAllStringSubmatch(string(b), -1) {
		f := flags[m[1]]
		if f == nil {
			continue
		}
		if want, err := time.ParseDuration(m[2]); err == nil {
			if got, err := time.ParseDuration(f.DefValue); err != nil || got != want {
				t.Errorf("README says --%s defaults to %s; it is %s", m[1], m[2], f.DefValue)
			}
			checked++
		} else if want, err := strconv.ParseFloat(m[2], 64); err == nil {
			if got, err := strconv.ParseFloat(f.DefValue, 64); err != nil || got != want {
				t.Errorf("README says --%s defaults to %s; it is %s", m[1], m[2], f.DefValue)
			}
			checked++
		}
	}
	if checked < 15 {
		t.Errorf("only %d defaults checked: is the pattern wrong?", checked)
	}
}
