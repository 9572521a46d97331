package checkpoint

import (
	"bytes"
	"errors"
	"io"
	"os"
	"sync"
)

// Buffer sizes of a lineReader: a window that slides along the file while
// lines are asked for in about file order (a rerun confirms its skips in
// about the order the run wrote them, each up to a few hundred lines from
// its place), and a small buffer for a line away from it.
const (
	window = 1 << 20
	stray  = 4 << 10
)

// errNoLine: no whole line at the offset (the index points only at lines
// that end in '\n', so the file changed under the Store).
var errNoLine = errors.New("no whole line at the offset the index holds")

// lineReader reads whole lines of a checkpoint file by offset, so that an
// index match is confirmed against the id the line holds. Lines asked for
// in about file order come from a window that slides forward: confirming
// every skip of a rerun costs about one more sequential read of the output,
// not a system call per id; a line away from the window is read alone. It
// has its own descriptor, open for reading only, so it outlives the
// appender's and keeps the file it was opened on (a compaction renames a
// new one into place at the very end).
type lineReader struct {
	mu  sync.Mutex
	f   *os.File
	win span  // the sliding window
	one span  // the last line read away from it
	err error // the first read error, kept for the Store to report
}

// span is a buffered stretch of the file.
type span struct {
	buf  []byte
	base int64 // file offset of buf[0]
	n    int   // bytes of buf read
}

func openLineReader(path string) (*lineReader, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	return &lineReader{f: f}, nil
}

func (r *lineReader) close() error {
	if r == nil {
		return nil
	}
	return r.f.Close()
}

// check reads the line at off and reports whether its custom_id is id,
// and if so the fingerprint it carries. A read that fails says no (and is
// kept in r.err): the request is then sent again rather than counted.
func (r *lineReader) check(off int64, id string) (same bool, fp Fingerprint) {
	if r == nil {
		return false, 0
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	line, err := r.line(off)
	if err != nil {
		if r.err == nil {
			r.err = err
		}
		return false, 0
	}
	got, ok := lineID(line)
	if !ok || string(got) != id {
		return false, 0
	}
	return true, lineFP(line)
}

// hasID reports whether the line at off has custom_id id, like check, but
// reads only the line's head when the id leads it (the runner's lines:
// {"id":"…","custom_id":"…",…), without finding the line's end: what a
// rerun's SkipAll asks of every line, which needs no fingerprint.
func (r *lineReader) hasID(off int64, id string) bool {
	if r == nil {
		return false
	}
	r.mu.Lock()
	head, ok := r.win.head(off, 128+len(id))
	if ok {
		if got, ok := leadingID(head); ok {
			r.mu.Unlock()
			return string(got) == id
		}
	}
	r.mu.Unlock()
	same, _ := r.check(off, id)
	return same
}

// head returns the n bytes at off if the span holds them and they start an
// object.
func (s *span) head(off int64, n int) ([]byte, bool) {
	i := off - s.base
	if i < 0 || i+int64(n) > int64(s.n) || s.buf[i] != '{' {
		return nil, false
	}
	return s.buf[i : i+int64(n)], true
}

// line returns the line at off without its '\n', valid until the next
// call. Requires r.mu.
func (r *lineReader) line(off int64) ([]byte, error) {
	if l, ok := r.win.at(off); ok {
		return l, nil
	}
	if end := r.win.base + int64(r.win.n); off >= end && off < end+window/2 {
		// Just past the window (or, before the first, near the file's
		// start, where a pass in file order begins): slide it on, keeping
		// a quarter before off for the lines written a little later than
		// their place. A line far from it (a run's lone confirmation of a
		// key match) is read alone, without a window's megabyte.
		return r.win.fill(r.f, max(off-window/4, 0), window, off)
	}
	if l, ok := r.one.at(off); ok {
		return l, nil
	}
	return r.one.fill(r.f, off, stray, off)
}

// at returns the whole line at off if the span holds it.
func (s *span) at(off int64) ([]byte, bool) {
	i := off - s.base
	if i < 0 || i >= int64(s.n) {
		return nil, false
	}
	j := bytes.IndexByte(s.buf[i:s.n], '\n')
	if j < 0 {
		return nil, false
	}
	return s.buf[i : i+int64(j)], true
}

// fill reads size bytes of the file from base, more if the line at off
// does not end within them, and returns that line.
func (s *span) fill(f *os.File, base int64, size int, off int64) ([]byte, error) {
	if cap(s.buf) > 2*max(size, window) {
		s.buf = nil // a huge line grew it once; do not keep that
	}
	for ; ; size *= 2 {
		if cap(s.buf) < size {
			s.buf = make([]byte, size)
		}
		n, err := f.ReadAt(s.buf[:size], base)
		s.base, s.n = base, n
		if l, ok := s.at(off); ok {
			return l, nil
		}
		if err == io.EOF {
			return nil, errNoLine
		}
		if err != nil {
			return nil, err
		}
	}
}
