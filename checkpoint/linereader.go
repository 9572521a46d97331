package checkpoint

import (
	"bytes"
	"errors"
	"io"
	"os"
	"sync"
)

// Window sizes of a lineReader: it starts small and doubles while lines are
// read in file order (a rerun confirms its skips in about the order the
// run wrote them), and halves while they are not.
const (
	minWindow = 4 << 10
	maxWindow = 1 << 20
)

// errNoLine: no whole line at the offset (the index points only at lines
// that end in '\n', so the file changed under the Store).
var errNoLine = errors.New("no whole line at the offset the index holds")

// lineReader reads whole lines of a checkpoint file by offset, so that an
// index match is confirmed against the id the line holds. It reads through
// one window that follows sequential access: confirming every skip of a
// rerun costs about one more sequential read of the output, not a system
// call per id. It has its own descriptor, open for reading only, so it
// outlives the appender's and keeps the file it was opened on (a compaction
// renames a new one into place at the very end).
type lineReader struct {
	mu   sync.Mutex
	f    *os.File
	buf  []byte
	base int64 // file offset of buf[0]
	n    int   // bytes of buf read
	size int   // the next read's size
	hits int   // lines served from the window since it was read
	err  error // the first read error, kept for the Store to report
}

func openLineReader(path string) (*lineReader, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	return &lineReader{f: f, size: minWindow}, nil
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

// line returns the line at off without its '\n', valid until the next
// call. Requires r.mu.
func (r *lineReader) line(off int64) ([]byte, error) {
	if s := off - r.base; s >= 0 && s < int64(r.n) {
		if j := bytes.IndexByte(r.buf[s:r.n], '\n'); j >= 0 {
			r.hits++
			return r.buf[s : s+int64(j)], nil
		}
	}
	switch {
	case r.hits >= 4:
		r.size = min(2*r.size, maxWindow)
	case r.hits < 2:
		r.size = max(r.size/2, minWindow)
	}
	if cap(r.buf) > 2*maxWindow {
		r.buf = nil // a huge line grew it once; do not keep it
	}
	r.hits = 0
	// A quarter of the window lies before off: the run wrote its lines
	// about, not exactly, in input order.
	base := max(off-int64(r.size/4), 0)
	for size := r.size; ; size *= 2 {
		if cap(r.buf) < size {
			r.buf = make([]byte, size)
		}
		n, err := r.f.ReadAt(r.buf[:size], base)
		r.base, r.n = base, n
		s := int(off - base)
		if j := bytes.IndexByte(r.buf[min(s, n):n], '\n'); j >= 0 {
			r.hits = 1
			return r.buf[s : s+j], nil
		}
		if err == io.EOF {
			return nil, errNoLine
		}
		if err != nil {
			return nil, err
		}
	}
}
