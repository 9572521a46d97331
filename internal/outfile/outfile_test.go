package outfile

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func write(t *testing.T, path, s string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestSameByIdentity: a symlink, a hard link, a dangling symlink and a
// "./" spelling all name the file they lead to; another file does not.
func TestSameByIdentity(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "o.out.jsonl")
	write(t, out, "x\n")
	link, hard, other := filepath.Join(dir, "alias.jsonl"), filepath.Join(dir, "hard.jsonl"), filepath.Join(dir, "other.jsonl")
	os.Symlink("o.out.jsonl", link)
	if err := os.Link(out, hard); err != nil {
		t.Fatal(err)
	}
	write(t, other, "y\n")
	for _, p := range []string{link, hard, dir + "/./o.out.jsonl"} {
		if !Same(out, p) {
			t.Errorf("Same(%s, %s) = false", out, p)
		}
	}
	if Same(out, other) {
		t.Error("two files are the same")
	}
	dangling, missing := filepath.Join(dir, "d"), filepath.Join(dir, "new.jsonl")
	os.Symlink("new.jsonl", dangling)
	if !Same(dangling, missing) || Same(missing, out) {
		t.Error("a dangling link is not the file it will create")
	}
	if r, err := Resolve(dangling); err != nil || r != missing {
		t.Errorf("Resolve(dangling) = %q, %v", r, err)
	}
}

// TestDistinctNamesBothFlags: a written file that is the input or another
// written file is a *ClashError naming both flags.
func TestDistinctNamesBothFlags(t *testing.T) {
	dir := t.TempDir()
	in, out := filepath.Join(dir, "in.jsonl"), filepath.Join(dir, "in.out.jsonl")
	write(t, in, "{}\n")
	link := filepath.Join(dir, "sum.json")
	os.Symlink("in.out.jsonl", link)
	err := Distinct([]Role{{"the input", in}}, []Role{{"-o", out}, {"--summary", link}})
	var ce *ClashError
	if !errors.As(err, &ce) || ce.A.Flag != "-o" || ce.B.Flag != "--summary" || !strings.Contains(err.Error(), "--summary") {
		t.Fatalf("got %v", err)
	}
	if err := Distinct([]Role{{"the input", in}}, []Role{{"-o", in}}); !errors.As(err, &ce) {
		t.Fatalf("output = input: %v", err)
	}
	if err := Distinct([]Role{{"the input", "-"}}, []Role{{"-o", out}, {"--summary", ""}, {"--metrics-file", filepath.Join(dir, "m.prom")}}); err != nil {
		t.Fatal(err)
	}
}

// TestWriteFileKeepsNodes: a symlink stays a symlink (its target gets the
// content), a FIFO and /dev/null are written in place, a directory is
// refused, and an existing file keeps its mode.
func TestWriteFileKeepsNodes(t *testing.T) {
	dir := t.TempDir()
	target, link := filepath.Join(dir, "t.json"), filepath.Join(dir, "l.json")
	write(t, target, "old")
	os.Chmod(target, 0o640)
	os.Symlink("t.json", link)
	if err := WriteFile(link, []byte("new"), 0o600); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Lstat(link); fi.Mode()&os.ModeSymlink == 0 {
		t.Fatal("the symlink was replaced")
	}
	if b, _ := os.ReadFile(target); string(b) != "new" {
		t.Fatalf("target holds %q", b)
	}
	if fi, _ := os.Stat(target); fi.Mode().Perm() != 0o640 {
		t.Fatalf("mode %v", fi.Mode())
	}

	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	got := make(chan string)
	go func() {
		f, err := os.Open(fifo)
		if err != nil {
			got <- err.Error()
			return
		}
		b, _ := io.ReadAll(f)
		f.Close()
		got <- string(b)
	}()
	if err := WriteFile(fifo, []byte("through"), 0o600); err != nil {
		t.Fatal(err)
	}
	if s := <-got; s != "through" {
		t.Fatalf("FIFO reader got %q", s)
	}
	if fi, _ := os.Lstat(fifo); fi.Mode()&os.ModeNamedPipe == 0 {
		t.Fatal("the FIFO was replaced")
	}
	if err := WriteFile(os.DevNull, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(os.DevNull); fi.Mode()&os.ModeCharDevice == 0 {
		t.Fatal("/dev/null was replaced")
	}
	var nr *NotRegularError
	if err := WriteFile(dir, []byte("x"), 0o600); !errors.As(err, &nr) {
		t.Fatalf("directory: %v", err)
	}
	if err := RequireRegular(os.DevNull); !errors.As(err, &nr) || !strings.Contains(err.Error(), "character device") {
		t.Fatalf("RequireRegular(/dev/null) = %v", err)
	}
	if err := CheckWritable(filepath.Join(dir, "nodir", "x")); err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Fatalf("CheckWritable in a missing dir: %v", err)
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.Contains(e.Name(), ".tmp") {
			t.Fatalf("temp file left: %s", e.Name())
		}
	}
}
