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

	done   index // output: id → offset of its latest line
	failed index // errors file: id → the same, for failures not answered since

	// outR and errR read the lines the indexes point to, to confirm a key
	// match and learn the line's fingerprint; nil: no such file yet.
	outR, errR *lineReader
	// doneFP and failedFP hold fingerprints adopted (see ClassifyAdopting)
	// by the offset of their line, whose own fingerprint is the legacy one.
	doneFP, failedFP map[int64]Fingerprint
	doneSum          uint64 // the sum of pairHash over the latest answers (see SkipAll)
	noFP             int    // latest answers without a fingerprint

	outRes, errRes scanResult
	outStale       int    // output lines a later line of their id superseded
	errStale       bool   // the errors file holds lines no longer wanted
	dups           sample // output lines repeating their id's request (made outside llmrun?)
	// foreign counts output lines that answer nothing: not sealed by
	// llmrun, or failure records (see Answered).
	foreign   sample
	malformed *CorruptError
	// distinct: Store.Distinct holds, and unindexed answers of this run
	// are in the output but not in done.
	distinct  bool
	unindexed int
	// merge, if set, meets the answers' ids with the input's as the output
	// is read (see idMerge).
	merge *idMerge
	// deferred counts the answers Open's load left out of done while the
	// merge met them (see deferred.go); doneCap is the capacity its sizer
	// chose meanwhile, and deferSeen says SkipAll took them all as met.
	deferred  int
	doneCap   int
	deferSeen bool
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
//
// While the id merge meets the answers one to one with the input's, the
// answers stay out of done (see deferred.go): a rerun that skips them all
// never builds the index; once the merge gives up, the answers before the
// line are indexed and the load goes on as without it.
func (x *loaded) loadOutput(r io.Reader, size int64) error {
	sz := tableSizer{size: size}
	deferring := x.merge != nil
	res, err := scan(r, scanOpts{path: x.output, needID: true, keys: true}, func(l *scanLine) error {
		if l.Bad != "" {
			x.malformed = corrupt(x.malformed, l, x.output, x.output)
			return nil
		}
		if c, ok := sz.line(l.Line); ok {
			x.doneCap = c
			if !deferring {
				x.done.reserve(c)
			}
		}
		if !l.Answer {
			x.foreign.add(l.ID, l.No)
			return nil
		}
		if l.Off > maxOffset {
			return fmt.Errorf("checkpoint: %s: line %d is past 256 GiB, the most the index addresses", x.output, l.No)
		}
		if on := x.merge.answer(l.ID); deferring {
			if on {
				x.deferred++
				x.answer(l.Key, l.FP)
				return nil
			}
			deferring = false
			if err := x.undefer(l.Off); err != nil {
				return err
			}
		}
		x.indexAnswer(l)
		return nil
	})
	x.outRes = res
	return err
}

// indexAnswer records answer line l in done: a later line of an id
// supersedes the earlier one (appends are in time order).
func (x *loaded) indexAnswer(l *scanLine) {
	if i, old := x.findDone(l.Key, string(l.ID)); i >= 0 {
		x.outStale++
		if old == l.FP {
			x.dups.add(l.ID, l.No)
		}
		x.unanswer(l.Key, old)
		x.done.setOff(i, l.Off)
	} else {
		x.done.add(l.Key, l.Off)
	}
	x.answer(l.Key, l.FP)
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
		if l.Off > maxOffset {
			return fmt.Errorf("checkpoint: %s: line %d is past 256 GiB, the most the index addresses", x.errors, l.No)
		}
		id := string(l.ID)
		if i, fp := x.findDone(l.Key, id); i >= 0 && sameRequest(fp, l.FP) {
			x.errStale = true
			return nil
		}
		if j, _ := x.findFailed(l.Key, id); j >= 0 {
			x.failed.setOff(j, l.Off)
			x.errStale = true
		} else {
			x.failed.add(l.Key, l.Off)
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
func (x *loaded) unfingerprinted() int { return x.noFP }

// findDone returns the slot of id's answer (key k) and the fingerprint it
// answers, or -1: every key match is confirmed by reading its line.
func (x *loaded) findDone(k idKey, id string) (int, Fingerprint) {
	return find(&x.done, x.outR, x.doneFP, k, id)
}

// findFailed is findDone for the failure records.
func (x *loaded) findFailed(k idKey, id string) (int, Fingerprint) {
	return find(&x.failed, x.errR, x.failedFP, k, id)
}

func find(t *index, r *lineReader, adopted map[int64]Fingerprint, k idKey, id string) (int, Fingerprint) {
	var fp Fingerprint
	i := t.lookup(k, func(i int) bool {
		var same bool
		same, fp = r.check(t.offAt(i), id)
		return same
	})
	if i >= 0 {
		if a, ok := adopted[t.offAt(i)]; ok {
			fp = a
		}
	}
	return i, fp
}

// delFailed drops the failure record at slot j.
func (x *loaded) delFailed(j int) {
	delete(x.failedFP, x.failed.offAt(j))
	x.failed.del(j)
}

// answer and unanswer keep doneSum and noFP as the answer of key k with
// fingerprint fp becomes, or stops being, the latest.
func (x *loaded) answer(k idKey, fp Fingerprint) {
	x.doneSum += pairHash(k, fp)
	if fp == 0 {
		x.noFP++
	}
}

func (x *loaded) unanswer(k idKey, fp Fingerprint) {
	x.doneSum -= pairHash(k, fp)
	if fp == 0 {
		x.noFP--
	}
}
