package checkpoint

import (
	"fmt"
	"io"
	"strings"
)

// loaded is what reading a checkpoint's two files taught: which ids the
// output answers and for which request, which failed, and what is stale.
// Open and Status share it.
type loaded struct {
	output, errors string

	done   index // output: id → fingerprint and number of its latest line
	failed index // errors file: id → the same, for failures not answered since

	outRes, errRes scanResult
	outStale       int    // output lines a later line of their id superseded
	errStale       bool   // the errors file holds lines no longer wanted
	dups           sample // output lines repeating their id's request (made outside llmrun?)
	// foreign counts output lines that answer nothing: not sealed by
	// llmrun, or failure records (see Answered).
	foreign   sample
	malformed *CorruptError
}

// sameRequest reports whether two fingerprints may be of the same request:
// equal, or one unknown.
func sameRequest(a, b Fingerprint) bool { return a == b || a == 0 || b == 0 }

// reserveAfter is how many lines a load reads before it sizes its table from
// their average length and the file's size.
const reserveAfter = 1024

// tableSizer sizes a load's table once, from a file of size bytes, so
// that the table grows at most once.
type tableSizer struct{ n, read, size int64 }

// line counts line l; at the reserveAfter-th it reports the capacity to
// reserve: the lines the file holds at the average length so far, plus 5%.
func (s *tableSizer) line(l []byte) (capacity int, ok bool) {
	s.n++
	if s.read += int64(len(l) + 1); s.n == reserveAfter {
		return int(s.size * 105 / 100 / (s.read / s.n)), true
	}
	return 0, false
}

// loadOutput reads the output: every line's id and fingerprint into done;
// a later line of the same id supersedes the earlier one (appends are in
// time order).
func (x *loaded) loadOutput(r io.Reader, size int64) error {
	sz := tableSizer{size: size}
	res, err := scan(r, scanOpts{path: x.output, needID: true, keys: true}, func(l *scanLine) error {
		if l.Bad != "" {
			x.malformed = corrupt(x.malformed, l, x.output, x.output)
			return nil
		}
		if c, ok := sz.line(l.Line); ok {
			x.done.reserve(c)
		}
		if !l.Answer {
			x.foreign.add(l.ID, l.No)
			return nil
		}
		if i := x.done.find(l.Key); i >= 0 {
			x.outStale++
			if x.done.fpAt(i) == l.FP {
				x.dups.add(l.ID, l.No)
			}
			x.done.set(i, l.FP, uint32(l.No))
			return nil
		}
		x.done.put(l.Key, l.FP, uint32(l.No))
		return nil
	})
	x.outRes = res
	return err
}

// loadErrors reads the errors file after the output. A failure record
// counts only if no answer to the same request is in the output (an answer
// that came later: a request is not sent again once answered) and no later
// record of the id supersedes it.
func (x *loaded) loadErrors(r io.Reader, size int64) error {
	sz := tableSizer{size: size}
	res, err := scan(r, scanOpts{path: x.errors, keys: true}, func(l *scanLine) error {
		if l.Bad != "" {
			x.malformed = corrupt(x.malformed, l, x.errors, x.output)
			return nil
		}
		if c, ok := sz.line(l.Line); ok {
			x.failed.reserve(c)
		}
		if l.ID == nil {
			x.errStale = true // a failure without an id: the run meets it again
			return nil
		}
		if i := x.done.find(l.Key); i >= 0 && sameRequest(x.done.fpAt(i), l.FP) {
			x.errStale = true
			return nil
		}
		if _, existed := x.failed.put(l.Key, l.FP, uint32(l.No)); existed {
			x.errStale = true
		}
		return nil
	})
	x.errRes = res
	return err
}

// dupWarning describes repeated answers, "" if there are none.
func (x *loaded) dupWarning() string {
	if x.dups.n == 0 {
		return ""
	}
	return fmt.Sprintf("checkpoint: %s answers %d requests more than once (made outside llmrun?); the last line of each counts, the others are dropped at the end of the run: %s",
		x.output, x.dups.n, x.dups.list())
}

// foreignWarning describes output lines that answer nothing, "" if there
// are none.
func (x *loaded) foreignWarning() string {
	if x.foreign.n == 0 {
		return ""
	}
	return fmt.Sprintf("checkpoint: %s has %d lines that are not answers llmrun wrote (no seal: made by hand or by an older llmrun; or failure records); their requests are sent again: %s",
		x.output, x.foreign.n, x.foreign.list())
}

// sample counts lines of one kind and keeps the first few to name in a
// warning.
type sample struct {
	n   int
	ids []string // `"id" (line N)`, at most 5
}

func (s *sample) add(id []byte, no int) {
	if s.n++; len(s.ids) < 5 {
		s.ids = append(s.ids, fmt.Sprintf("%q (line %d)", id, no))
	}
}

// list names the lines kept, with an ellipsis for those that were not.
func (s *sample) list() string {
	if s.n > len(s.ids) {
		return strings.Join(s.ids, ", ") + ", …"
	}
	return strings.Join(s.ids, ", ")
}

// unfingerprinted counts answers without a fingerprint.
func (x *loaded) unfingerprinted() int {
	n := 0
	for _, e := range x.done.s {
		if e.bl != 0 && e.fp == 0 {
			n++
		}
	}
	return n
}
