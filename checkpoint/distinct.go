package checkpoint

import (
	"fmt"
	"io"
	"os"
)

// Distinct is the caller's promise that, from now on, it records each id
// at most once (an answer or a failure) and only after Classify said Send
// for it: its ids are distinct (the input check refused repeats) and it
// classifies every request once, before sending it. If the output answers nothing yet (a first
// run), the Store then leaves this run's answers out of its index: no
// Classify can meet an id answered after it and no Answer can find an
// earlier answer of its id, so the index would only be written, at 9.4
// bytes an id (94 MB at 10M) and with reads that rule out its 24-bit key
// matches. A crash leaves the answers in the output, which the next Open
// reads as always. What asks by id after all (Done, SkipAll) first reads
// this run's answers back from the output into the index, once.
//
// It reports whether it took effect: false if the output answers
// something already, in which case the Store keeps its index as before.
// Call it before the first Answer; Reserve does nothing while it holds.
func (s *Store) Distinct() bool {
	s.ioMu.Lock()
	defer s.ioMu.Unlock()
	s.setMu.Lock()
	defer s.setMu.Unlock()
	x := &s.x
	if !x.distinct && x.done.n == 0 && x.deferred == 0 {
		x.distinct = true
	}
	return x.distinct
}

// indexAnswers ends Distinct once it has left answers out: it reads them
// into the index, so that lookups by id see them. A read error stops appends (as a
// failed fsync does): a lookup that missed an answer could send its request
// again.
func (s *Store) indexAnswers() {
	s.ioMu.Lock()
	defer s.ioMu.Unlock()
	s.setMu.Lock()
	defer s.setMu.Unlock()
	x := &s.x
	if !x.distinct || x.unindexed == 0 {
		return // nothing left out
	}
	n := x.unindexed
	x.distinct, x.unindexed, x.doneSum, x.noFP = false, 0, 0, 0
	if err := x.indexOutput(s.out.off, n); err != nil && s.broken == nil {
		s.broken = &WriteError{Path: s.out.path, Op: "read", Err: err}
	}
}

// indexOutput indexes the answers in the output's first size bytes, n of
// them, all this run's: each is marked as met in the input.
func (x *loaded) indexOutput(size int64, n int) error {
	f, err := os.Open(x.output)
	if err != nil {
		return err
	}
	defer f.Close()
	x.done.reserve(n)
	_, err = scan(io.LimitReader(f, size), scanOpts{path: x.output, needID: true, keys: true}, func(l *scanLine) error {
		if l.Bad != "" {
			return fmt.Errorf("%s:%d: %s", x.output, l.No, l.Bad)
		}
		if !l.Answer {
			return nil
		}
		i, old := x.findDone(l.Key, string(l.ID))
		if i >= 0 { // two answers of one id: the promise was broken; the later counts
			x.outStale++
			x.unanswer(l.Key, old)
			x.done.setOff(i, l.Off)
		} else {
			i = x.done.add(l.Key, l.Off)
		}
		x.done.markSeen(i)
		x.answer(l.Key, l.FP)
		return nil
	})
	return err
}

// indexed makes sure the index holds every answer (see Distinct).
func (s *Store) indexed() {
	s.setMu.RLock()
	d := s.x.distinct && s.x.unindexed > 0
	s.setMu.RUnlock()
	if d {
		s.indexAnswers()
	}
}
