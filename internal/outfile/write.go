package outfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// File is a file being written by Create: whole or not at all for a regular
// file (Commit renames it into place), in place for a FIFO or a device.
type File struct {
	f      *os.File
	path   string // as the caller named it, for errors
	target string // the resolved path the temp file replaces; "" in place
	perm   fs.FileMode
	done   bool
}

// Create starts writing path. A regular file or a new one gets its content
// through a temp file beside the resolved path, renamed over it by Commit,
// so a symlink keeps pointing at its target and a crash leaves the old
// content or the new; the file keeps its mode if it existed, else gets perm.
// A FIFO or a character device is opened and written in place: the node is
// never replaced. Anything else is a *NotRegularError. The caller defers
// Abort.
func Create(path string, perm fs.FileMode) (*File, error) {
	target, err := Resolve(path)
	if err != nil {
		return nil, err
	}
	fi, err := os.Stat(target)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return nil, err
	case kind(fi.Mode()) == Stream:
		f, err := os.OpenFile(target, os.O_WRONLY, 0)
		if err != nil {
			return nil, err
		}
		return &File{f: f, path: path}, nil
	case kind(fi.Mode()) == Other:
		return nil, &NotRegularError{Path: path, Mode: fi.Mode()}
	default:
		perm = fi.Mode().Perm()
	}
	dir, base := filepath.Split(target)
	if dir == "" {
		dir = "."
	}
	f, err := os.CreateTemp(dir, "."+base+".tmp*")
	if err != nil {
		return nil, err
	}
	return &File{f: f, path: path, target: target, perm: perm}, nil
}

// Write writes to the temp file (or the stream).
func (w *File) Write(b []byte) (int, error) { return w.f.Write(b) }

// Commit puts the content in place: fsync, the mode, rename over the
// target, fsync of its directory. In place, it closes the stream.
func (w *File) Commit() error {
	if w.done {
		return errors.New("outfile: commit after commit or abort")
	}
	w.done = true
	if w.target == "" {
		return w.f.Close()
	}
	err := w.f.Chmod(w.perm)
	if err == nil {
		err = w.f.Sync()
	}
	if cerr := w.f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(w.f.Name(), w.target)
	}
	if err != nil {
		os.Remove(w.f.Name())
		return fmt.Errorf("write %s: %w", w.path, err)
	}
	return syncDir(filepath.Dir(w.target))
}

// Abort drops what Commit has not put in place; after Commit it does
// nothing.
func (w *File) Abort() {
	if w.done {
		return
	}
	w.done = true
	w.f.Close()
	if w.target != "" {
		os.Remove(w.f.Name())
	}
}

// WriteFile writes data to path as Create and Commit do.
func WriteFile(path string, data []byte, perm fs.FileMode) error {
	w, err := Create(path, perm)
	if err != nil {
		return err
	}
	defer w.Abort()
	if _, err := w.Write(data); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return w.Commit()
}

// CheckWritable says, before anything is sent, whether path can be written
// as Create would: a regular file that is not read-only, a stream that opens
// for writing, or a new file in an existing directory that takes new files.
func CheckWritable(path string) error { return NewChecker().Check(path) }

// Checker is CheckWritable for the several files of one run: a directory
// is probed (a file created in it and removed) once, however many of the
// run's new files go there (the output, its errors file and the summary
// usually share one).
type Checker struct {
	probed map[string]error // by absolute directory
	// probe tries creating a file in dir; a test counts its calls.
	probe func(dir string) error
}

// NewChecker returns a Checker that has probed no directory yet.
func NewChecker() *Checker {
	return &Checker{probed: map[string]error{}, probe: probeDir}
}

// Check is CheckWritable(path), probing path's directory only if no
// earlier Check of c did.
func (c *Checker) Check(path string) error {
	target, err := Resolve(path)
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("directory %s does not exist", filepath.Dir(path))
	}
	if err != nil {
		return plain(err)
	}
	fi, err := os.Stat(target)
	switch {
	case err == nil && kind(fi.Mode()) == Other:
		return &NotRegularError{Path: path, Mode: fi.Mode()}
	case err == nil && kind(fi.Mode()) == Stream:
		return nil // opening a FIFO would block until a reader comes
	case err == nil:
		f, err := os.OpenFile(target, os.O_WRONLY, 0)
		if err != nil {
			return plain(err)
		}
		return f.Close()
	case !errors.Is(err, fs.ErrNotExist):
		return plain(err)
	}
	dir := filepath.Dir(target)
	if di, err := os.Stat(dir); err != nil {
		return fmt.Errorf("directory %s does not exist", dir)
	} else if !di.IsDir() {
		return fmt.Errorf("%s is not a directory", dir)
	}
	key, err := filepath.Abs(dir)
	if err != nil {
		key = dir
	}
	err, done := c.probed[key]
	if !done {
		err = c.probe(dir)
		c.probed[key] = err
	}
	return err
}

// probeDir creates a file in dir and removes it: whether dir takes new
// files (permissions, a read-only mount, a full inode table).
func probeDir(dir string) error {
	f, err := os.CreateTemp(dir, ".llmrun-probe-*")
	if err != nil {
		return fmt.Errorf("cannot create files in %s: %v", dir, plain(err))
	}
	name := f.Name()
	f.Close()
	return os.Remove(name)
}

// plain is err's reason without the operation and path it repeats.
func plain(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
