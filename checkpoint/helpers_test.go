package checkpoint

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// fixedNow is the injected clock of every test.
func fixedNow() time.Time { return time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC) }

// warnings collects Options.Warn messages.
type warnings struct {
	mu   sync.Mutex
	msgs []string
}

func (w *warnings) warn(m string) {
	w.mu.Lock()
	w.msgs = append(w.msgs, m)
	w.mu.Unlock()
}

func (w *warnings) all() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.msgs...)
}

// testOpts returns Options for a fresh checkpoint in a temp dir.
func testOpts(t *testing.T) (Options, *warnings) {
	t.Helper()
	dir := t.TempDir()
	w := &warnings{}
	return Options{
		Output:      filepath.Join(dir, "x.out.jsonl"),
		Errors:      filepath.Join(dir, "x.errors.jsonl"),
		RetryFailed: true,
		Now:         fixedNow,
		Warn:        w.warn,
	}, w
}

// result is a realistic output line for id.
func result(id string) string {
	return fmt.Sprintf(`{"custom_id":%q,"response":{"status_code":200,"body":{"model":"m","choices":[{"message":{"role":"assistant","content":"answer to %s"}}]}},"llmrun":{"attempts":1}}`, id, id)
}

// failure is a realistic errors-file line for id.
func failure(id, msg string) string {
	return fmt.Sprintf(`{"custom_id":%q,"error":{"class":"invalid_request","message":%q}}`, id, msg)
}

// sealed is line as the Store writes it: with its checksum.
func sealed(line string) string { return string(seal(nil, []byte(line), 0)) }

func lines(ls ...string) string {
	if len(ls) == 0 {
		return ""
	}
	return strings.Join(ls, "\n") + "\n"
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func mustOpen(t *testing.T, o Options) *Store {
	t.Helper()
	s, err := Open(o)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return s
}

func mustClose(t *testing.T, s *Store) {
	t.Helper()
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
}

// faultFile wraps the real file: it counts fsyncs and, when armed, fails a
// write after passing its first short bytes through (a partial write, as on a
// full disk), and can fail Truncate and Sync.
type faultFile struct {
	*os.File
	mu           sync.Mutex
	failWrite    bool
	short        int // bytes a failing write still writes
	failTruncate bool
	failSync     bool
	syncs        int
}

var errNoSpace = errors.New("no space left on device (injected)")

func (f *faultFile) Write(b []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.failWrite {
		return f.File.Write(b)
	}
	n, err := f.File.Write(b[:min(f.short, len(b))])
	if err != nil {
		return n, err
	}
	return n, errNoSpace
}

func (f *faultFile) Truncate(size int64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.failTruncate {
		return errNoSpace
	}
	return f.File.Truncate(size)
}

func (f *faultFile) Sync() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.failSync {
		return errors.New("input/output error (injected)")
	}
	f.syncs++
	return f.File.Sync()
}

func (f *faultFile) set(fn func(*faultFile)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fn(f)
}

func (f *faultFile) syncCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.syncs
}

// withFaults makes o wrap the output and errors files in faultFiles.
func withFaults(o *Options) (out, errs **faultFile) {
	out, errs = new(*faultFile), new(*faultFile)
	o.wrap = func(f *os.File) file {
		ff := &faultFile{File: f}
		if strings.HasSuffix(f.Name(), "out.jsonl") {
			*out = ff
		} else {
			*errs = ff
		}
		return ff
	}
	return out, errs
}
