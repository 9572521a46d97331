package checkpoint

import (
	"errors"
	"strings"
	"testing"
)

// answerAll classifies and answers ids in turn, as a run does, each with
// fingerprint 1.
func answerAll(t *testing.T, s *Store, ids []string) {
	t.Helper()
	for _, id := range ids {
		if v := s.Classify(id, 1); v != Send {
			t.Fatalf("Classify(%s) = %v", id, v)
		}
		if err := s.Answer(id, 1, []byte(result(id))); err != nil {
			t.Fatal(err)
		}
	}
}

// TestDistinctFirstRunKeepsNoIndex: on an output that answers nothing, a
// run that promises distinct ids holds no index of its answers (Reserve
// included), counts them all the same, and its rerun finds every one
// answered.
func TestDistinctFirstRunKeepsNoIndex(t *testing.T) {
	o, _ := testOpts(t)
	o.Prune = true
	s := mustOpen(t, o)
	if !s.Distinct() {
		t.Fatal("Distinct refused on an empty output")
	}
	ids := numbered(2000)
	s.Reserve(len(ids))
	answerAll(t, s, ids)
	if b := s.IndexBytes(); b != 0 {
		t.Errorf("IndexBytes = %d after %d answers, want 0", b, len(ids))
	}
	if d, f := s.Counts(); d != len(ids) || f != 0 {
		t.Errorf("Counts = %d, %d", d, f)
	}
	s.InputDone()
	mustClose(t, s)
	if got := strings.Count(readFile(t, o.Output), "\n"); got != len(ids) {
		t.Fatalf("output has %d lines after Close (--prune), want %d", got, len(ids))
	}

	o.Expect = sameFP(ids)
	s = mustOpen(t, o)
	defer mustClose(t, s)
	if s.Distinct() {
		t.Error("Distinct took effect on an output that answers requests")
	}
	if !s.SkipAll(sameFP(ids)) {
		t.Error("the rerun's SkipAll refused the first run's answers")
	}
}

// TestDistinctLookupReadsAnswersBack: a lookup by id after Distinct left
// answers out of the index reads them back first, and the Store then
// refuses a second answer as before.
func TestDistinctLookupReadsAnswersBack(t *testing.T) {
	o, _ := testOpts(t)
	s := mustOpen(t, o)
	defer mustClose(t, s)
	s.Distinct()
	answerAll(t, s, []string{"a", "b"})
	if s.Done("c") || !s.Done("a") || !s.Done("b") {
		t.Fatalf("Done: a %v, b %v, c %v", s.Done("a"), s.Done("b"), s.Done("c"))
	}
	if s.IndexBytes() == 0 {
		t.Error("no index after a lookup by id")
	}
	if err := s.Answer("a", 1, []byte(result("a"))); !errors.Is(err, ErrAlreadyDone) {
		t.Errorf("second answer of a: %v, want ErrAlreadyDone", err)
	}
	if v := s.Classify("b", 1); v != Skip {
		t.Errorf("Classify(b) = %v, want skip", v)
	}
	if d, _ := s.Counts(); d != 2 {
		t.Errorf("Counts = %d, want 2", d)
	}
}

// TestDistinctSkipAllSeesThisRunsAnswers: SkipAll after the run answered
// every request counts them from the output, not from the empty index.
func TestDistinctSkipAllSeesThisRunsAnswers(t *testing.T) {
	o, _ := testOpts(t)
	s := mustOpen(t, o)
	defer mustClose(t, s)
	ids := numbered(50)
	s.Distinct()
	if s.SkipAll(sameFP(ids)) {
		t.Fatal("SkipAll before any answer")
	}
	answerAll(t, s, ids)
	if !s.SkipAll(sameFP(ids)) {
		t.Error("SkipAll refused after every request was answered")
	}
}

// TestDistinctRefusedWhenAnswered: an output that answers something keeps
// its index, so a repeated answer is still refused.
func TestDistinctRefusedWhenAnswered(t *testing.T) {
	o, _ := testOpts(t)
	writeFile(t, o.Output, lines(sealed(result("a"))))
	s := mustOpen(t, o)
	defer mustClose(t, s)
	if s.Distinct() {
		t.Fatal("Distinct took effect on an output that answers a")
	}
	answerAll(t, s, []string{"b"})
	if err := s.Answer("b", 1, []byte(result("b"))); !errors.Is(err, ErrAlreadyDone) {
		t.Errorf("second answer of b: %v, want ErrAlreadyDone", err)
	}
	if s.IndexBytes() == 0 {
		t.Error("no index")
	}
}

// TestDistinctDropsAnsweredFailures: an earlier failure answered by a
// distinct run leaves the errors file, as without Distinct.
func TestDistinctDropsAnsweredFailures(t *testing.T) {
	o, _ := testOpts(t)
	writeFile(t, o.Errors, lines(sealed(failure("a", "rate limited")), sealed(failure("b", "rate limited"))))
	s := mustOpen(t, o)
	if !s.Distinct() {
		t.Fatal("Distinct refused: the output answers nothing")
	}
	answerAll(t, s, []string{"a"})
	if d, f := s.Counts(); d != 1 || f != 0 {
		t.Errorf("Counts = %d, %d", d, f)
	}
	mustClose(t, s)
	if got, want := readFile(t, o.Errors), lines(sealed(failure("b", "rate limited"))); got != want {
		t.Errorf("errors file:\n%s\nwant:\n%s", got, want)
	}
}
