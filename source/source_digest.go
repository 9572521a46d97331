package source

import (
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"os"
	"time"
)

// digestChunk is the span of input one digest sum covers. The run's
// reader holds one chunk back until it has compared it, so this is also
// how far it reads ahead of what it hands on.
const digestChunk = 64 << 10

// digest is what the check pass read, kept so that later passes can prove
// they read the same bytes: one 64-bit hash per 64 KiB (8 bytes per 64 KiB
// of input, 128 KiB for 1 GB), and the file's size and modification time.
type digest struct {
	seed  maphash.Seed
	sums  []uint64
	total int64
	stamp stamp
}

// stamp is a file's size and modification time: what a cheap check of
// "has it changed" compares before any bytes are read.
type stamp struct {
	size  int64
	mtime time.Time
}

func stampOf(f *os.File) (stamp, error) {
	fi, err := f.Stat()
	if err != nil {
		return stamp{}, err
	}
	return stamp{fi.Size(), fi.ModTime()}, nil
}

func (a stamp) diff(b stamp) string {
	switch {
	case a.size != b.size:
		return fmt.Sprintf("its size went from %d to %d bytes", a.size, b.size)
	case !a.mtime.Equal(b.mtime):
		return fmt.Sprintf("it was modified at %s", b.mtime.Format(time.RFC3339))
	}
	return ""
}

// errChanged is what a verifying reader returns on the first chunk that
// differs from the check pass's.
var errChanged = errors.New("its content differs from what the check read")

// InputChangedError reports an input that changed after the check pass
// read it: what was sent so far came from lines the check saw; nothing
// after Line was sent. The run stops (exit 1) and a rerun resumes.
type InputChangedError struct {
	Path string
	// Line is the last line handed on before the change was seen (0: none).
	Line int
	// How says what changed.
	How string
}

func (e *InputChangedError) Error() string {
	after := "nothing from it was sent"
	if e.Line > 0 {
		after = fmt.Sprintf("nothing after line %d was sent", e.Line)
	}
	return fmt.Sprintf("%s changed during the run (%s): %s; rerun the same command with the input you mean to resume", e.Path, e.How, after)
}

// recorder passes a stream through, summing each digestChunk of it into d.
type recorder struct {
	r  io.Reader
	d  *digest
	h  maphash.Hash
	in int // bytes of the current chunk so far
}

func newRecorder(r io.Reader, d *digest) *recorder {
	rec := &recorder{r: r, d: d}
	rec.h.SetSeed(d.seed)
	return rec
}

func (rec *recorder) Read(p []byte) (int, error) {
	n, err := rec.r.Read(p)
	b := p[:n]
	for len(b) > 0 {
		k := min(len(b), digestChunk-rec.in)
		rec.h.Write(b[:k])
		rec.in += k
		b = b[k:]
		if rec.in == digestChunk {
			rec.d.sums = append(rec.d.sums, rec.h.Sum64())
			rec.h.Reset()
			rec.in = 0
		}
	}
	rec.d.total += int64(n)
	if err == io.EOF && rec.in > 0 {
		rec.d.sums = append(rec.d.sums, rec.h.Sum64())
		rec.h.Reset()
		rec.in = 0
	}
	return n, err
}

// verifier passes a stream through one chunk at a time, each only after
// its sum matches the digest's: no byte the check did not read is handed on.
type verifier struct {
	r   io.Reader
	d   *digest
	buf []byte
	off int // next unread byte of buf
	i   int // chunks verified so far
	err error
}

func newVerifier(r io.Reader, d *digest) *verifier {
	return &verifier{r: r, d: d, buf: make([]byte, 0, digestChunk)}
}

func (v *verifier) Read(p []byte) (int, error) {
	if v.off == len(v.buf) {
		if v.err != nil {
			return 0, v.err
		}
		v.fill()
		if v.off == len(v.buf) {
			return 0, v.err
		}
	}
	n := copy(p, v.buf[v.off:])
	v.off += n
	return n, nil
}

// fill reads and verifies the next chunk; on a mismatch or the end it
// sets v.err (errChanged or io.EOF).
func (v *verifier) fill() {
	n, err := io.ReadFull(v.r, v.buf[:digestChunk])
	v.buf, v.off = v.buf[:n], 0
	if err != nil && err != io.EOF && err != io.ErrUnexpectedEOF {
		v.buf, v.err = v.buf[:0], err
		return
	}
	want := min(v.d.total-int64(v.i)*digestChunk, digestChunk)
	switch {
	case n == 0 && want <= 0:
		v.err = io.EOF
		return
	case int64(n) != want || maphash.Bytes(v.d.seed, v.buf) != v.d.sums[v.i]:
		v.buf, v.err = v.buf[:0], errChanged
		return
	}
	v.i++
	if n < digestChunk {
		v.err = io.EOF // a short chunk ends the stream, as it did for the check
	}
}
