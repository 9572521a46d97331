//go:build linux

package cmd

import (
	"bytes"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"unsafe"

	"github.com/llmrun/llmrun/providers/mock"
)

// TestOneProbePerDirectory: a batch whose output, errors file and summary
// are new files in one directory tries creating a file there once, not
// once for each of them. The directory is watched (inotify) and the
// .llmrun-probe-* files created in it counted after the run.
func TestOneProbePerDirectory(t *testing.T) {
	_, url := mockServer(t, mock.Config{})
	in, _ := promptFile(t, 1)
	dir := t.TempDir()
	fd, err := syscall.InotifyInit1(syscall.IN_NONBLOCK | syscall.IN_CLOEXEC)
	if err != nil {
		t.Skipf("no inotify: %v", err)
	}
	defer syscall.Close(fd)
	if _, err := syscall.InotifyAddWatch(fd, dir, syscall.IN_CREATE); err != nil {
		t.Fatal(err)
	}
	c := &cli{env: mockEnv(url)}
	if code := c.run(t, "batch", in, "--provider", "openai", "--model", "m", "-q",
		"-o", filepath.Join(dir, "out.jsonl"), "--summary", filepath.Join(dir, "summary.json")); code != 0 {
		t.Fatalf("exit %d: %s", code, c.stderr.String())
	}
	created := inotifyNames(t, fd)
	probes := 0
	for _, name := range created {
		if strings.HasPrefix(name, ".llmrun-probe-") {
			probes++
		}
	}
	if probes != 1 {
		t.Errorf("%d probe files created in the run's one directory, want 1 (created: %q)", probes, created)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".llmrun-probe-*")); len(left) > 0 {
		t.Errorf("probe files left behind: %q", left)
	}
}

// inotifyNames reads the names of the events queued on fd.
func inotifyNames(t *testing.T, fd int) []string {
	t.Helper()
	var names []string
	buf := make([]byte, 64<<10)
	for {
		n, err := syscall.Read(fd, buf)
		if err == syscall.EAGAIN {
			return names
		}
		if err != nil {
			t.Fatal(err)
		}
		if n <= 0 {
			return names
		}
		for off := 0; off+syscall.SizeofInotifyEvent <= n; {
			ev := (*syscall.InotifyEvent)(unsafe.Pointer(&buf[off]))
			if ev.Mask&syscall.IN_Q_OVERFLOW != 0 {
				t.Fatal("inotify queue overflowed")
			}
			name := buf[off+syscall.SizeofInotifyEvent : off+syscall.SizeofInotifyEvent+int(ev.Len)]
			names = append(names, string(bytes.TrimRight(name, "\x00")))
			off += syscall.SizeofInotifyEvent + int(ev.Len)
		}
	}
}
