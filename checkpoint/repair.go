package checkpoint

import (
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
		sc, found, err := readSidecar(StatePath(output))
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
// the rest, appended to its rejected file. The rejected lines are durable
// before the file is replaced, so a crash loses none.
func repairFile(path string, needID bool) (Repaired, error) {
	rep := Repaired{Path: path, Rejected: RejectedPath(path)}
	in, err := openExisting(path, "repair")
	if in == nil {
		return rep, err
	}
	defer in.Close()
	rw, err := startRewrite(in, path, "repair")
	if err != nil {
		return rep, err
	}
	defer rw.abort()
	bad, err := sortLines(in, needID, rw.w, &rep)
	if err != nil {
		return rep, rw.errorf(err)
	}
	if rep.Lines == 0 {
		return rep, nil
	}
	if err := flushRejected(rep.Rejected, &bad); err != nil {
		return rep, err
	}
	if err := rw.sync(); err != nil {
		return rep, err
	}
	if err := rw.replace(); err != nil {
		return rep, err
	}
	return rep, syncDir(rw.dir)
}

// sortLines copies in's well-formed lines to good and returns the malformed
// ones, a torn last line included (given a newline), counting them in rep.
// The malformed lines are few unless the file is garbage; past 1 MiB they
// are appended to the rejected file as they come.
func sortLines(in *os.File, needID bool, good io.Writer, rep *Repaired) (bad []byte, err error) {
	var werr error
	writeL := func(b []byte) {
		if werr == nil {
			_, werr = good.Write(b)
		}
	}
	res, err := scan(in, scanOpts{path: rep.Path, needID: needID}, func(l *scanLine) error {
		if l.Bad != "" {
			rep.Lines++
			rep.Bytes += int64(len(l.Line)) + 1
			bad = append(append(bad, l.Line...), '\n')
		} else {
			writeL(l.Line)
			writeL([]byte{'\n'})
		}
		if len(bad) >= 1<<20 {
			return flushRejected(rep.Rejected, &bad)
		}
		return werr
	})
	if err == nil && res.Good < res.Size {
		// The torn tail may be as long as the file: it is copied, not held.
		if err = flushRejected(rep.Rejected, &bad); err == nil {
			var n int64
			n, err = appendRejected(rep.Rejected, io.NewSectionReader(in, res.Good, res.Size-res.Good))
			rep.Lines++
			rep.Bytes += n
		}
	}
	if err == nil {
		err = werr
	}
	return bad, err
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

// appendRejected appends r to the rejected file durably, ending it with a
// newline if r does not, and returns the bytes written.
func appendRejected(path string, r io.Reader) (int64, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, filePerm)
	if err != nil {
		return 0, fmt.Errorf("checkpoint: repair: %w", err)
	}
	lw := &lastByte{w: f}
	n, err := io.Copy(lw, r)
	if err == nil && n > 0 && lw.last != '\n' {
		_, err = f.Write([]byte{'\n'})
		n++
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return n, fmt.Errorf("checkpoint: repair: %w", err)
	}
	return n, syncDir(filepath.Dir(path))
}

// lastByte is a writer that remembers the last byte written.
type lastByte struct {
	w    io.Writer
	last byte
}

func (l *lastByte) Write(b []byte) (int, error) {
	if len(b) > 0 {
		l.last = b[len(b)-1]
	}
	return l.w.Write(b)
}
