package checkpoint

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"runtime"

	"github.com/llmrun/llmrun/internal/outfile"
)

// filePerm is the mode of every file the checkpoint creates: owner-only. The
// state file names endpoints and open batches; the errors file quotes
// transport errors, which can carry a URL's user name (Go's HTTP client
// redacts only the password), and error bodies a proxy may fill with the
// request's headers; the output holds server responses verbatim, which a
// misconfigured server can make echo the key. Both also hold the user's
// prompts and answers. A file that exists keeps its mode, so a chmod stands.
const filePerm os.FileMode = 0o600

// writeFileAtomic replaces path with data: a temp file in the same directory,
// fsync, rename over path, fsync of the directory (by dirSync). A crash
// leaves either the old or the new content, never a mix. The file gets mode
// perm, or with keepMode the old file's mode if there is one.
func writeFileAtomic(path string, data []byte, perm os.FileMode, keepMode bool, dirSync func(dir string) error) error {
	path = outfile.MustResolve(path) // a symlink keeps pointing at the new content
	if err := outfile.RequireRegular(path); err != nil {
		return fmt.Errorf("checkpoint: write %s: %w", path, err)
	}
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	tmp, err := os.CreateTemp(dir, "."+base+".tmp*")
	if err != nil {
		return fmt.Errorf("checkpoint: write %s: %w", path, err)
	}
	ok := false
	defer func() {
		if !ok {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if fi, err := os.Stat(path); err == nil && keepMode {
		perm = fi.Mode().Perm()
	}
	if err := tmp.Chmod(perm); err != nil {
		return fmt.Errorf("checkpoint: write %s: %w", path, err)
	}
	if _, err := tmp.Write(data); err != nil {
		return fmt.Errorf("checkpoint: write %s: %w", path, err)
	}
	if err := tmp.Sync(); err != nil {
		return fmt.Errorf("checkpoint: fsync %s: %w", tmp.Name(), err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("checkpoint: write %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("checkpoint: rename to %s: %w", path, err)
	}
	ok = true
	return dirSync(dir)
}

// syncDir makes a rename or creation in dir durable. Windows cannot open or
// sync a directory; there it is a no-op.
func syncDir(dir string) error {
	if runtime.GOOS == "windows" {
		return nil
	}
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("checkpoint: fsync dir %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("checkpoint: fsync dir %s: %w", dir, err)
	}
	return nil
}

// rewriteFile is a file being replaced by a filtered copy of itself (Repair,
// compaction): a temp file beside it with the old file's mode, fsynced and
// renamed over it, so a kill leaves the old file or the new one. op names
// the operation in errors.
type rewriteFile struct {
	op, path, dir string
	mode          os.FileMode
	tmp           *os.File
	w             *bufio.Writer // the new content goes here
}

// startRewrite starts replacing path, whose current content in is open for
// reading. The caller defers abort.
func startRewrite(in *os.File, path, op string) (*rewriteFile, error) {
	fi, err := in.Stat()
	if err != nil {
		return nil, fmt.Errorf("checkpoint: %s: %w", op, err)
	}
	path = outfile.MustResolve(path) // replace a symlink's target, not the link
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	tmp, err := os.CreateTemp(dir, "."+base+".tmp*")
	if err != nil {
		return nil, fmt.Errorf("checkpoint: %s: %w", op, err)
	}
	return &rewriteFile{op: op, path: path, dir: dir, mode: fi.Mode().Perm(), tmp: tmp, w: bufio.NewWriterSize(tmp, 1<<20)}, nil
}

// abort removes the temp file unless replace has renamed it.
func (r *rewriteFile) abort() {
	if r.tmp != nil {
		r.tmp.Close()
		os.Remove(r.tmp.Name())
	}
}

// sync makes the new content durable with the old file's mode, before
// anything that must happen only once it is safe on disk.
func (r *rewriteFile) sync() error {
	for _, step := range []func() error{r.w.Flush, func() error { return r.tmp.Chmod(r.mode) }, r.tmp.Sync} {
		if err := step(); err != nil {
			return r.errorf(err)
		}
	}
	return nil
}

// replace renames the new content over the file. The rename is durable only
// once the caller has synced the directory (syncDir(r.dir)).
func (r *rewriteFile) replace() error {
	if err := r.tmp.Close(); err != nil {
		return r.errorf(err)
	}
	if err := os.Rename(r.tmp.Name(), r.path); err != nil {
		return r.errorf(err)
	}
	r.tmp = nil
	return nil
}

func (r *rewriteFile) errorf(err error) error {
	return fmt.Errorf("checkpoint: %s %s: %w", r.op, r.path, err)
}
