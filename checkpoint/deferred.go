package checkpoint

import (
	"fmt"
	"io"
	"os"
)

// Deferred answers: a rerun of a finished run reads an output that
// answers exactly its input, and Open's load meets the two id by id
// (idMerge). While the merge goes on, the load leaves the answers out of
// the index: if SkipAll then takes them all, nothing ever looks one up, so
// the index is never built (9.4 bytes an id) and no lookup meets a key
// match that costs a read of its line (at 1M ids about 60,000 of them).
//
// The load keeps their count and sums (doneSum, noFP) meanwhile. Whenever
// the index is needed after all, undefer reads the output's answers again
// into it, as the load would have: when the merge gives up in the middle
// of the load (for the lines before it), when the output does not answer
// exactly the input (Open, before it returns: a resumed run, a changed
// request, a failure record), and, for any other caller, before the first
// lookup (Store.undeferred). A rerun that is not skipped whole pays one
// more read of the output for it; the run that follows it sends requests.

// undefer indexes the answers in the output's first end bytes, which the
// load left out: every line of them is read again and indexed as
// loadOutput would have; the sums start again from zero. Lines the load
// counted otherwise (malformed, foreign) are passed over. If SkipAll took
// the answers as met, they are marked so.
func (x *loaded) undefer(end int64) error {
	if x.deferred == 0 {
		return nil
	}
	n, seen := x.deferred, x.deferSeen
	x.deferred, x.deferSeen, x.doneSum, x.noFP = 0, false, 0, 0
	x.done.reserve(max(n, x.doneCap))
	f, err := os.Open(x.output)
	if err != nil {
		return fmt.Errorf("checkpoint: index %s: %w", x.output, err)
	}
	defer f.Close()
	_, err = scan(io.LimitReader(f, end), scanOpts{path: x.output, needID: true, keys: true}, func(l *scanLine) error {
		if l.Bad == "" && l.Answer {
			x.indexAnswer(l)
		}
		return nil
	})
	if seen {
		x.done.markAllSeen()
	}
	return err
}

// canDefer reports whether SkipAll(in) would take the deferred answers as
// they are: the merge met them one to one with in's ids, and their count
// and sum are in's, with no failure record.
func (x *loaded) canDefer(in InputSet) bool {
	return x.deferred > 0 && x.deferred == in.n && x.failed.n == 0 && x.doneSum == in.sum && x.merge.confirmed(in)
}

// skipDeferred is SkipAll for deferred answers: true if it takes them as
// they are, without an index.
func (s *Store) skipDeferred(in InputSet) bool {
	s.setMu.Lock()
	defer s.setMu.Unlock()
	if !s.x.canDefer(in) {
		return false
	}
	s.x.deferSeen, s.inputDone = true, true
	return true
}

// undeferred makes sure the index holds the answers Open left out, before
// a lookup needs them. A read error stops appends (as a failed fsync
// does): a lookup that missed an answer could send its request again.
func (s *Store) undeferred() {
	if !s.lazy.Load() {
		return
	}
	s.ioMu.Lock()
	defer s.ioMu.Unlock()
	s.setMu.Lock()
	defer s.setMu.Unlock()
	if !s.lazy.Load() {
		return
	}
	if err := s.x.undefer(s.x.outRes.Good); err != nil && s.broken == nil {
		s.broken = &WriteError{Path: s.out.path, Op: "read", Err: err}
	}
	s.lazy.Store(false)
}
