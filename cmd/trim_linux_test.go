//go:build linux

package cmd

import (
	"bufio"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// TestTrimExecutableHandsBackPages: after the test binary's start has
// touched its code and tables, trimming takes most of the executable's
// resident pages out of the process's memory (they come back as touched),
// and the process goes on running code from them.
func TestTrimExecutableHandsBackPages(t *testing.T) {
	before := rssFileKB(t)
	trimExecutable()
	after := rssFileKB(t)
	runtime.GC() // runs code and reads tables the trim took out
	if before < 4<<10 || after > before/2 {
		t.Fatalf("file-backed RSS %d kB before the trim, %d kB after: want at most half", before, after)
	}
}

func TestExeMapping(t *testing.T) {
	for line, want := range map[string]bool{
		"00400000-014c4000 r-xp 00000000 fe:00 10248964   /bin/llmrun":  true,
		"014c4000-03135000 r--p 010c4000 fe:00 10248964   /bin/llmrun":  true,
		"03135000-032af000 rw-p 02d35000 fe:00 10248964   /bin/llmrun":  false, // writable
		"7f2254f13000-7f225563b000 r--p 00000000 fe:00 1  /lib/libc.so": false, // another file
		"Rss:               17860 kB":                                   false,
	} {
		if _, got := exeMapping([]byte(line), "/bin/llmrun"); got != want {
			t.Errorf("exeMapping(%q) = %v, want %v", line, got, want)
		}
	}
}

func rssFileKB(t *testing.T) int {
	t.Helper()
	f, err := os.Open("/proc/self/status")
	if err != nil {
		t.Skip("no /proc:", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "RssFile:"); ok {
			n, _ := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")))
			return n
		}
	}
	t.Skip("no RssFile in /proc/self/status")
	return 0
}
