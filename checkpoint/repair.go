package checkpoint

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// RejectedPath is where Repair moves the malformed lines of path.
func RejectedPath(path string) string { return path + ".rejected" }

// Repaired says what Repair did to one file.
type Repaired struct {
	Path     string // the output or the errors file
	Rejected string // where its malformed lines went
	Lines    int    // malformed lines moved, a torn last line included
	Bytes    int64  // bytes moved
}

// Repair moves the malformed lines of the output and of its errors file to
// "<file>.rejected", so that the next run redoes their requests instead of
// stopping with a *CorruptError. errorsPath "" means the errors file the
// state file records, if any. It holds the checkpoint's lock (a live run
// makes it fail with a *LockedError), appends the lines to the rejected file
// and fsyncs it before it replaces the file with its well-formed lines
// (temp file + rename), so a crash loses nothing: at worst a rerun of Repair
// appends the same lines to the rejected file again. It returns one Repaired
// per file that had malformed lines.
func Repair(output, errorsPath string) ([]Repaired, error) {
	lock, err := acquireLock(output)
	if err != nil {
		return nil, err
	}
	defer lock.release()
	if errorsPath == "" {
		sc, found, err := readSidecar(statePath(output))
		if err != nil {
			return nil, err
		}
		if found {
			errorsPath = sc.Errors
		}
	}
	var done []Repaired
	for _, f := range []struct {
		path   string
		needID bool
	}{{output, true}, {errorsPath, false}} {
		if f.path == "" {
			continue
		}
		r, err := repairFile(f.path, f.needID)
		if err != nil {
			return done, err
		}
		if r.Lines > 0 {
			done = append(done, r)
		}
	}
	return done, nil
}

// repairFile splits path into its well-formed lines, which replace it, and
// the rest, appended to its rejected file.
func repairFile(path string, needID bool) (Repaired, error) {
	rep := Repaired{Path: path, Rejected: RejectedPath(path)}
	in, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return rep, nil
	}
	if err != nil {
		return rep, fmt.Errorf("checkpoint: repair: %w", err)
	}
	defer in.Close()
	fi, err := in.Stat()
	if err != nil {
		return rep, fmt.Errorf("checkpoint: repair: %w", err)
	}
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	tmp, err := os.CreateTemp(dir, "."+base+".tmp*")
	if err != nil {
		return rep, fmt.Errorf("checkpoint: repair: %w", err)
	}
	defer func() {
		if tmp != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	var (
		good   = bufio.NewWriterSize(tmp, 1<<20)
		bad    []byte // malformed lines: few, unless the file is garbage
		werr   error
		writeL = func(w io.Writer, b []byte) {
			if werr == nil {
				_, werr = w.Write(b)
			}
		}
	)
	res, err := scan(in, scanOpts{path: path, needID: needID}, func(l *scanLine) error {
		if l.Bad != "" {
			rep.Lines++
			rep.Bytes += int64(len(l.Line)) + 1
			bad = append(append(bad, l.Line...), '\n')
		} else {
			writeL(good, l.Line)
			writeL(good, []byte{'\n'})
		}
		if len(bad) >= 1<<20 {
			return flushRejected(rep.Rejected, &bad)
		}
		return werr
	})
	if err == nil && res.Good < res.Size {
		tail := make([]byte, res.Size-res.Good)
		if _, err = in.ReadAt(tail, res.Good); err == nil {
			if tail[len(tail)-1] != '\n' {
				tail = append(tail, '\n')
			}
			rep.Lines++
			rep.Bytes += int64(len(tail))
			bad = append(bad, tail...)
		}
	}
	if err == nil {
		err = werr
	}
	if err != nil {
		return rep, fmt.Errorf("checkpoint: repair %s: %w", path, err)
	}
	if rep.Lines == 0 {
		return rep, nil
	}
	if err := flushRejected(rep.Rejected, &bad); err != nil {
		return rep, err
	}
	if err := good.Flush(); err != nil {
		return rep, fmt.Errorf("checkpoint: repair %s: %w", path, err)
	}
	if err := tmp.Chmod(fi.Mode().Perm()); err != nil {
		return rep, fmt.Errorf("checkpoint: repair %s: %w", path, err)
	}
	if err := tmp.Sync(); err != nil {
		return rep, fmt.Errorf("checkpoint: repair %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return rep, fmt.Errorf("checkpoint: repair %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return rep, fmt.Errorf("checkpoint: repair %s: %w", path, err)
	}
	tmp = nil
	return rep, syncDir(dir)
}

// flushRejected appends b to the rejected file durably and empties it.
func flushRejected(path string, b *[]byte) error {
	if len(*b) == 0 {
		return nil
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, filePerm)
	if err != nil {
		return fmt.Errorf("checkpoint: repair: %w", err)
	}
	_, err = f.Write(*b)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("checkpoint: repair: %w", err)
	}
	*b = (*b)[:0]
	return syncDir(filepath.Dir(path))
}
