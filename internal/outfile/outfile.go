// Package outfile is where llmrun writes a file: every file it writes
// (the output and errors file, their state, the summary, the metrics
// textfile, an export) goes through it, so that none of them can replace the
// run's own data or a node that is not a regular file.
//
//   - Resolve follows symlinks, so that two names of one file are one file
//     (locks, comparisons) and a rewrite replaces a symlink's target, never
//     the link.
//   - Distinct refuses two roles (flags) naming the same file, compared by
//     identity (os.SameFile) when both exist, by resolved path otherwise.
//   - WriteFile and Create write a regular (or new) file through a temp
//     file renamed over it; a FIFO or a character device is written in
//     place (never replaced); anything else is refused.
package outfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
)

// maxLinks bounds the symlinks Resolve follows, as the kernel's ELOOP does.
const maxLinks = 40

// Resolve returns the file path names: symlinks followed, in its directories
// and at its end, a dangling one to where it points. A path without symlinks
// comes back cleaned, relative if it was.
func Resolve(path string) (string, error) {
	p := filepath.Clean(path)
	for range maxLinks {
		fi, err := os.Lstat(p)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			dir, err := filepath.EvalSymlinks(filepath.Dir(p))
			if err != nil {
				return "", err
			}
			return filepath.Join(dir, filepath.Base(p)), nil
		case err != nil:
			return "", err
		case fi.Mode()&fs.ModeSymlink == 0:
			return filepath.EvalSymlinks(p)
		}
		to, err := os.Readlink(p)
		if err != nil {
			return "", err
		}
		if !filepath.IsAbs(to) {
			to = filepath.Join(filepath.Dir(p), to)
		}
		p = filepath.Clean(to)
	}
	return "", fmt.Errorf("%s: too many levels of symbolic links", path)
}

// MustResolve is Resolve, or path itself when it cannot be resolved (the
// caller's open of it then says why).
func MustResolve(path string) string {
	if r, err := Resolve(path); err == nil {
		return r
	}
	return path
}

// Same reports whether a and b name the same file: the same inode when both
// exist (hard links, symlinks, bind mounts alike), else the same resolved
// absolute path.
func Same(a, b string) bool {
	fa, errA := os.Stat(a)
	fb, errB := os.Stat(b)
	if errA == nil && errB == nil {
		return os.SameFile(fa, fb)
	}
	if errA == nil || errB == nil {
		// One exists: the same only if the other's name leads to it, which
		// Stat would have found.
		return false
	}
	ra, errA := Resolve(a)
	rb, errB := Resolve(b)
	if errA != nil || errB != nil {
		return filepath.Clean(a) == filepath.Clean(b)
	}
	ra, _ = filepath.Abs(ra)
	rb, _ = filepath.Abs(rb)
	return ra == rb
}

// Role is one file a command reads or writes, named by the flag that set it
// ("-o", "--summary", "the input").
type Role struct {
	Flag, Path string
}

// ClashError is two roles naming the same file.
type ClashError struct {
	A, B Role
}

func (e *ClashError) Error() string {
	if e.A.Path == e.B.Path {
		return fmt.Sprintf("%s and %s are the same file (%s): llmrun would overwrite one with the other", e.A.Flag, e.B.Flag, e.A.Path)
	}
	return fmt.Sprintf("%s %s and %s %s are the same file: llmrun would overwrite one with the other", e.A.Flag, e.A.Path, e.B.Flag, e.B.Path)
}

// Distinct returns a *ClashError for the first of writes that is the same
// file as another of writes or as one of reads. Empty paths and "-" are
// skipped.
func Distinct(reads, writes []Role) error {
	skip := func(r Role) bool { return r.Path == "" || r.Path == "-" }
	for i, w := range writes {
		if skip(w) {
			continue
		}
		for _, r := range reads {
			if !skip(r) && Same(w.Path, r.Path) {
				return &ClashError{A: r, B: w}
			}
		}
		for _, o := range writes[:i] {
			if !skip(o) && Same(w.Path, o.Path) {
				return &ClashError{A: o, B: w}
			}
		}
	}
	return nil
}

// Kind is what is at a path, symlinks followed.
type Kind uint8

const (
	// Missing: nothing yet; writing creates a regular file.
	Missing Kind = iota
	// Regular file: replaced through a temp file.
	Regular
	// Stream: a FIFO or a character device, written in place.
	Stream
	// Other: a directory, socket or block device; never written.
	Other
)

// KindOf says what is at path.
func KindOf(path string) (Kind, error) {
	fi, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return Missing, nil
	}
	if err != nil {
		return Other, err
	}
	return kind(fi.Mode()), nil
}

func kind(m fs.FileMode) Kind {
	switch {
	case m.IsRegular():
		return Regular
	case m&fs.ModeNamedPipe != 0, m&fs.ModeCharDevice != 0:
		return Stream
	}
	return Other
}

// NotRegularError is a path that must be a regular file and is not.
type NotRegularError struct {
	Path string
	Mode fs.FileMode
}

func (e *NotRegularError) Error() string {
	what := "not a regular file"
	switch m := e.Mode; {
	case m.IsDir():
		what = "a directory"
	case m&fs.ModeNamedPipe != 0:
		what = "a FIFO, not a regular file"
	case m&fs.ModeCharDevice != 0:
		what = "a character device, not a regular file"
	case m&fs.ModeDevice != 0:
		what = "a block device, not a regular file"
	case m&fs.ModeSocket != 0:
		what = "a socket, not a regular file"
	}
	return fmt.Sprintf("%s is %s", e.Path, what)
}

// RequireRegular returns a *NotRegularError unless path is a regular file
// or nothing (yet): the checkpoint's files are read back, appended to and
// replaced, which only a regular file supports.
func RequireRegular(path string) error {
	fi, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return &NotRegularError{Path: path, Mode: fi.Mode()}
	}
	return nil
}

// syncDir makes a rename in dir durable; a no-op where directories cannot
// be synced.
func syncDir(dir string) error {
	if runtime.GOOS == "windows" {
		return nil
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
