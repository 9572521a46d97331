package checkpoint

import (
	"bytes"
	"fmt"
	"io"
	"runtime"
	"sync"

	"github.com/tidwall/gjson"

	"github.com/llmrun/llmrun/internal/jsonvalid"
)

// scanChunk is the read size of scan; a line longer than it grows the buffer.
// Five are in flight (two workers); at 1 MiB they were most of a rerun's
// heap, and a rerun now also reads the input beside them (idMerge).
const scanChunk = 256 << 10

// maxScanWorkers bounds the goroutines that validate lines: beyond a few the
// read is the bottleneck.
const maxScanWorkers = 4

// scanLine is one non-blank line of a checkpoint file as scan reports it.
type scanLine struct {
	No   int    // 1-based line number
	Off  int64  // byte offset of the line's start
	Line []byte // the line without its '\n'
	ID   []byte // its custom_id; nil if it has none
	Bad  string // why the line is malformed; "" if it is well-formed

	// With scanOpts.keys, for a line with an id:
	Key idKey       // the id's key in the index
	FP  Fingerprint // the fingerprint the line carries; 0 if none
	// Answer: the line is a success record llmrun sealed, the only kind
	// that answers its request (not with scanOpts.trusted).
	Answer bool
}

// scanResult describes a scanned file.
type scanResult struct {
	Lines    int   // lines passed to the callback, malformed ones included
	Bad      int   // malformed lines passed to the callback
	Size     int64 // bytes read
	Good     int64 // length of the prefix before a torn tail; Size if none
	TornLine int   // 1-based line number where the torn tail starts; 0 if none
	Newlines int   // lines (blank ones too) in the good prefix: the last one's number
}

// scanOpts configures scan.
type scanOpts struct {
	path    string
	needID  bool // a line without a "custom_id" is malformed (the output file)
	chunk   int  // read size; 0 means scanChunk
	workers int  // validating goroutines; 0 means one per CPU, at most maxScanWorkers
	keys    bool // compute Key and FP
	trusted bool // skip validation: the file was validated when it was opened
	// tailProbe is the line length past which scan looks ahead for the
	// line's end before growing its buffer further; 0 means defaultTailProbe.
	tailProbe int
}

// defaultTailProbe bounds the memory a torn last line costs: past it, scan
// reads ahead without keeping the bytes, and a line that never ends (a
// kill in the middle of a huge answer, garbage appended) is cut off as torn
// at the cost of this buffer, not of its length.
const defaultTailProbe = 8 << 20

func (o scanOpts) probeAt() int {
	if o.tailProbe > 0 {
		return o.tailProbe
	}
	return defaultTailProbe
}

// probeTail reads r ahead to the next '\n' without keeping what it reads.
// torn: the file ends first, and skipped is how much it read. Otherwise r
// is put back where it was (the line is whole and will be read whole). A
// reader that cannot seek is not probed.
func probeTail(r io.Reader) (skipped int64, torn bool, err error) {
	sk, ok := r.(io.Seeker)
	if !ok {
		return 0, false, nil
	}
	pos, err := sk.Seek(0, io.SeekCurrent)
	if err != nil {
		return 0, false, nil // not really seekable: read on
	}
	buf := make([]byte, 64<<10)
	for {
		n, rerr := r.Read(buf)
		if bytes.IndexByte(buf[:n], '\n') >= 0 {
			_, err := sk.Seek(pos, io.SeekStart)
			return 0, false, err
		}
		skipped += int64(n)
		if rerr == io.EOF {
			return skipped, true, nil
		}
		if rerr != nil {
			return skipped, true, rerr
		}
	}
}

// scan reads a JSONL checkpoint file and calls fn for every non-blank line,
// in file order; l and its slices are valid only during the call. Each line
// is validated (valid JSON, an object, and with needID a usable "custom_id")
// and a malformed one is passed with l.Bad set: the caller decides whether
// that stops it (Open), is counted (Status) or is moved aside (Repair).
//
// The tail is different: a last line without its '\n', or a malformed last
// line (only blank lines after it), is a torn tail: a write the machine did
// not finish. It is not passed to fn but reported in the result, so that
// Open can cut it off.
//
// Validation is most of the cost, so it runs on several goroutines, chunk by
// chunk, while fn still sees the lines one at a time and in order.
func scan(r io.Reader, o scanOpts, fn func(l *scanLine) error) (scanResult, error) {
	if o.chunk <= 0 {
		o.chunk = scanChunk
	}
	if o.workers <= 0 {
		o.workers = min(runtime.GOMAXPROCS(0), maxScanWorkers)
	}
	p := newPipeline(r, o)
	defer p.stop()

	var (
		res      scanResult
		held     heldLine
		torn     *scanLine
		lineBase int // lines in the chunks before the current one
	)
	for c := range p.inOrder() {
		if c.err != nil {
			return res, fmt.Errorf("checkpoint: read %s: %w", o.path, c.err)
		}
		res.Size = c.base + int64(len(c.buf)) + c.skipped
		for i := range c.lines {
			l := &c.lines[i]
			l.No += lineBase
			if l.open && l.blank {
				// Space without a '\n' at the very end: the line before it, if
				// any, is still the last one.
				t := l.scanLine
				torn = &t
				continue
			}
			if held.ok {
				if err := held.emit(&res, fn); err != nil {
					return res, err
				}
			}
			if l.open {
				t := l.scanLine
				torn = &t
				continue
			}
			held.hold(&l.scanLine)
		}
		lineBase += c.nl
		p.recycle(c)
	}
	if held.ok {
		if held.l.Bad != "" {
			torn = &held.l // malformed, and only blank lines (or space) after it
		} else if err := held.emit(&res, fn); err != nil {
			return res, err
		}
	}
	res.Good, res.Newlines = res.Size, lineBase
	if torn != nil {
		res.Good, res.TornLine, res.Newlines = torn.Off, torn.No, torn.No-1
	}
	return res, nil
}

// heldLine is the last complete non-blank line seen, not yet passed on:
// only the line after it tells whether a malformed one is the file's
// last (a torn tail) or a bad line within it. It copies the line, whose
// chunk is recycled.
type heldLine struct {
	l        scanLine
	ok       bool
	line, id []byte
}

func (h *heldLine) hold(l *scanLine) {
	h.line = append(h.line[:0], l.Line...)
	h.l = *l
	h.l.Line = h.line
	if l.ID != nil {
		h.id = append(h.id[:0], l.ID...)
		h.l.ID = h.id
	}
	h.ok = true
}

// emit passes the held line to fn and counts it in res.
func (h *heldLine) emit(res *scanResult, fn func(l *scanLine) error) error {
	h.ok = false
	res.Lines++
	if h.l.Bad != "" {
		res.Bad++
	}
	return fn(&h.l)
}

// chunk is a run of whole lines of the file, validated by a worker.
type chunk struct {
	seq  int
	base int64  // file offset of buf[0]
	buf  []byte // whole lines, each ending in '\n'; in the last chunk the end may lack one
	last bool
	// skipped is the length of a torn tail past buf that was read but not
	// kept (see probeTail).
	skipped int64
	err     error // a read error, reported in order
	nl      int   // '\n' in buf, set by the worker
	lines   []chunkLine
}

// chunkLine is a scanLine with what the merge needs to know of the tail.
type chunkLine struct {
	scanLine
	open  bool // no '\n' after it: only the last chunk's last line
	blank bool // open and nothing but space
}

// pipeline reads chunks on one goroutine, validates them on several and hands
// them back in file order.
type pipeline struct {
	o    scanOpts
	r    io.Reader
	work chan *chunk
	done chan *chunk
	free chan *chunk // recycled chunks; also bounds how many are in flight
	quit chan struct{}
	once sync.Once
	wg   sync.WaitGroup
}

func newPipeline(r io.Reader, o scanOpts) *pipeline {
	inFlight := 2*o.workers + 1
	p := &pipeline{
		o:    o,
		r:    r,
		work: make(chan *chunk, inFlight),
		done: make(chan *chunk, inFlight),
		free: make(chan *chunk, inFlight),
		quit: make(chan struct{}),
	}
	for range inFlight {
		p.free <- &chunk{}
	}
	go p.read()
	p.wg.Add(o.workers)
	for range o.workers {
		go p.validate()
	}
	go func() { p.wg.Wait(); close(p.done) }()
	return p
}

// stop ends the goroutines early (a callback error) and waits for them.
func (p *pipeline) stop() {
	p.once.Do(func() { close(p.quit) })
	for range p.done {
	}
}

func (p *pipeline) recycle(c *chunk) { p.free <- c }

// read fills chunks with whole lines and sends them to the workers.
func (p *pipeline) read() {
	defer close(p.work)
	var (
		carry []byte // the start of a line the previous chunk cut off
		base  int64
	)
	for seq := 0; ; seq++ {
		var c *chunk
		select {
		case c = <-p.free:
		case <-p.quit:
			return
		}
		c.seq, c.base, c.err, c.last, c.skipped = seq, base, nil, false, 0
		buf := append(c.buf[:0], carry...)
		if cap(buf) < p.o.chunk {
			buf = make([]byte, len(buf), max(p.o.chunk, 2*len(buf)))
			copy(buf, carry)
		}
		cut, probed := -1, false
		for {
			n, err := p.r.Read(buf[len(buf):cap(buf)])
			buf = buf[:len(buf)+n]
			if err != nil {
				if err != io.EOF {
					c.err = err
				}
				c.last = true
				break
			}
			if len(buf) == cap(buf) {
				if cut = bytes.LastIndexByte(buf, '\n'); cut >= 0 {
					break
				}
				if !probed && len(buf) >= p.o.probeAt() {
					probed = true
					if skipped, torn, err := probeTail(p.r); err != nil || torn {
						c.err, c.skipped, c.last = err, skipped, true
						break
					}
				}
				grown := make([]byte, len(buf), 2*cap(buf)) // a line longer than the buffer
				copy(grown, buf)
				buf = grown
			}
		}
		if c.last {
			c.buf, carry = buf, nil
		} else {
			carry = append(carry[:0], buf[cut+1:]...)
			c.buf = buf[:cut+1]
		}
		base += int64(len(c.buf))
		select {
		case p.work <- c:
		case <-p.quit:
			return
		}
		if c.last {
			return
		}
	}
}

// validate splits chunks into lines and checks each.
func (p *pipeline) validate() {
	defer p.wg.Done()
	for c := range p.work {
		c.lines, c.nl = c.lines[:0], 0
		b := c.buf
		for start := 0; start < len(b); {
			end := bytes.IndexByte(b[start:], '\n')
			open := end < 0
			if open {
				end = len(b)
			} else {
				end += start
				c.nl++
			}
			line := b[start:end]
			if blank := isBlank(line); !blank || open {
				l := chunkLine{scanLine: scanLine{No: c.nl, Off: c.base + int64(start), Line: line}, open: open, blank: blank}
				if open {
					l.No = c.nl + 1
				} else {
					sealed := false
					if !p.o.trusted {
						l.Bad, sealed, l.ID = checkSealedID(line, p.o.needID)
					} else {
						l.ID, _ = lineID(line)
					}
					l.Answer = sealed && p.o.keys && l.Bad == "" && succeeded(line)
					if p.o.keys && l.Bad == "" && l.ID != nil {
						l.Key, l.FP = keyOf(l.ID), lineFP(line)
					}
				}
				c.lines = append(c.lines, l)
			}
			start = end + 1
		}
		p.done <- c
	}
}

// inOrder yields the validated chunks in file order.
func (p *pipeline) inOrder() func(yield func(*chunk) bool) {
	return func(yield func(*chunk) bool) {
		waiting := map[int]*chunk{}
		next := 0
		for c := range p.done {
			waiting[c.seq] = c
			for {
				c, ok := waiting[next]
				if !ok {
					break
				}
				delete(waiting, next)
				next++
				if !yield(c) {
					return
				}
			}
		}
	}
}

// noID is checkLine's reason for an object line without a usable custom_id.
const noID = `no "custom_id"`

// checkLine validates one line: "" if it is well-formed, else the reason.
// A sealed line is checked by its checksum, any other by JSON validity.
func checkLine(line []byte, needID bool) string {
	why, _ := checkSealed(line, needID)
	return why
}

// checkSealed is checkLine that also says whether the line carries a right
// seal: whether llmrun wrote it.
func checkSealed(line []byte, needID bool) (string, bool) {
	why, sealed, _ := checkSealedID(line, needID)
	return why, sealed
}

// checkSealedID is checkSealed that also returns the line's custom_id
// (see lineID) when the line is a JSON object: scan needs it, and finding
// it twice was a tenth of a rerun's load.
func checkSealedID(line []byte, needID bool) (why string, sealed bool, id []byte) {
	nul := ""
	st := verifySeal(line)
	switch st {
	case sealBroken:
		if bytes.IndexByte(line, 0) >= 0 {
			nul = "; it holds NUL bytes"
		}
		return "checksum mismatch: the line changed after it was written" + nul, false, nil
	case unsealed:
		if !jsonvalid.Valid(line) {
			if bytes.IndexByte(line, 0) >= 0 {
				nul = " (it holds NUL bytes)"
			}
			return "not valid JSON" + nul, false, nil
		}
	}
	if !isObject(line) {
		return "not a JSON object", st == sealOK, nil
	}
	id, ok := lineID(line)
	if !ok && needID {
		return noID, st == sealOK, nil
	}
	return "", st == sealOK, id
}

// isObject reports whether line looks like one JSON object: braces at both
// ends, space aside.
func isObject(line []byte) bool {
	t := trimSpace(line)
	return len(t) >= 2 && t[0] == '{' && t[len(t)-1] == '}'
}

// lineID returns the top-level "custom_id" of a JSON object line: a string's
// content or a number's text. The fast path walks the leading "key":"value"
// pairs of a compact line (the runner's lines begin {"id":"…","custom_id":"…")
// without a parser; anything else (space, escapes, other value types before
// custom_id) goes through gjson, which skips values without decoding them.
// The id may alias line.
func lineID(line []byte) ([]byte, bool) {
	if !isObject(line) {
		return nil, false
	}
	t := trimSpace(line)
	if id, ok := leadingID(t); ok {
		return id, true
	}
	r := gjson.GetBytes(t, "custom_id")
	switch r.Type {
	case gjson.String:
		if r.Str == "" {
			return nil, false
		}
		return []byte(r.Str), true
	case gjson.Number:
		return []byte(r.Raw), true
	}
	return nil, false
}

// leadingID looks for "custom_id" among the first few top-level pairs of a
// compact object whose keys and values are strings without escapes.
func leadingID(t []byte) ([]byte, bool) {
	const maxPairs = 4
	p := t[1:] // after '{'
	for range maxPairs {
		key, rest, ok := plainString(p)
		if !ok || len(rest) < 2 || rest[0] != ':' {
			return nil, false
		}
		val, rest, ok := plainString(rest[1:])
		if !ok || len(rest) == 0 || (rest[0] != ',' && rest[0] != '}') {
			return nil, false
		}
		if string(key) == "custom_id" {
			return val, len(val) > 0
		}
		if rest[0] == '}' {
			return nil, false
		}
		p = rest[1:]
	}
	return nil, false
}

// plainString reads a JSON string without escapes at the start of b and
// returns its content and what follows it.
func plainString(b []byte) (s, rest []byte, ok bool) {
	if len(b) == 0 || b[0] != '"' {
		return nil, nil, false
	}
	i := bytes.IndexByte(b[1:], '"')
	if i < 0 || bytes.IndexByte(b[1:1+i], '\\') >= 0 {
		return nil, nil, false
	}
	return b[1 : 1+i], b[2+i:], true
}

func isBlank(b []byte) bool { return len(trimSpace(b)) == 0 }

func trimSpace(b []byte) []byte {
	for len(b) > 0 && isSpace(b[0]) {
		b = b[1:]
	}
	for len(b) > 0 && isSpace(b[len(b)-1]) {
		b = b[:len(b)-1]
	}
	return b
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\r' }
