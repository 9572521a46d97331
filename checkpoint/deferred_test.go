package checkpoint

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// answerLine is the sealed output line answering id for request fp.
func answerLine(id string, fp Fingerprint) string {
	return string(seal(nil, []byte(result(id)), fp))
}

// TestRerunSkippedWholeBuildsNoIndex: a rerun of a finished run, given its
// input as Options.Expect, is skipped by SkipAll without the index ever
// being built (before: 9.4 bytes an id and a lookup per answer, each key
// match a read of a line), and the checkpoint is left as it was.
func TestRerunSkippedWholeBuildsNoIndex(t *testing.T) {
	ids := numbered(3000)
	o := answeredInOrder(t, ids)
	before := readFile(t, o.Output)
	o.Expect = sameFP(ids)
	s := mustOpen(t, o)
	if b := s.IndexBytes(); b != 0 {
		t.Errorf("Open built an index of %d bytes for a rerun it can skip whole", b)
	}
	if done, _ := s.Counts(); done != len(ids) {
		t.Errorf("Counts: done = %d, want %d", done, len(ids))
	}
	if !s.SkipAll(o.Expect) {
		t.Fatal("SkipAll refused the input the output answers")
	}
	if b := s.IndexBytes(); b != 0 {
		t.Errorf("SkipAll built an index of %d bytes", b)
	}
	mustClose(t, s)
	if readFile(t, o.Output) != before {
		t.Error("the skipped rerun changed the output")
	}
	if st, err := Status(o.Output); err != nil || st.Done != len(ids) {
		t.Errorf("after Close: %+v %v", st, err)
	}
}

// storeView is what a Store has learned of its checkpoint, to compare a
// load that deferred its answers with one that did not.
type storeView struct {
	Done, Failed, Stale, Dups, Foreign, NoFP int
	Sum                                      uint64
	Warnings                                 []string
	Verdicts                                 []string
	Output, Errors                           string
}

// view opens the checkpoint held in out (and errs) in a directory of its
// own, with expect as Options.Expect, classifies each of in's requests,
// answers those sent and closes; it returns what it saw on the way.
func view(t *testing.T, out, errs string, in map[string]Fingerprint, expect InputSet, mergeCap int) storeView {
	t.Helper()
	o, w := testOpts(t)
	writeFile(t, o.Output, out)
	if errs != "" {
		writeFile(t, o.Errors, errs)
	}
	o.Expect, o.mergeCap = expect, mergeCap
	s := mustOpen(t, o)
	var v storeView
	v.Done, v.Failed = s.Counts()
	s.setMu.RLock()
	v.Stale, v.Dups, v.Foreign, v.NoFP, v.Sum = s.x.outStale, s.x.dups.n, s.x.foreign.n, s.x.noFP, s.x.doneSum
	s.setMu.RUnlock()
	ids := slices.Sorted(func(yield func(string) bool) {
		for id := range in {
			if !yield(id) {
				return
			}
		}
	})
	for _, id := range ids {
		verdict := s.Classify(id, in[id])
		v.Verdicts = append(v.Verdicts, id+" "+verdict.String())
		if verdict == Send {
			if err := s.Answer(id, in[id], []byte(result(id))); err != nil {
				t.Fatalf("Answer(%s): %v", id, err)
			}
		}
	}
	s.InputDone()
	mustClose(t, s)
	v.Warnings = w.all()
	for i, m := range v.Warnings { // the paths differ between the two
		v.Warnings[i] = strings.ReplaceAll(m, filepath.Dir(o.Output), "DIR")
	}
	v.Output = readFile(t, o.Output)
	if b, err := os.ReadFile(o.Errors); err == nil {
		v.Errors = string(b)
	}
	return v
}

// TestDeferredLoadIsTheLoad: whatever the output holds, a load that left
// its answers out of the index while the id merge met them (and indexed
// them when it gave up, or when a lookup came) ends where the plain load
// does: the same counts, sums, stale lines and warnings, the same verdict
// for every request, the same files after the run.
func TestDeferredLoadIsTheLoad(t *testing.T) {
	ids := numbered(40)
	fps := map[string]Fingerprint{}
	for i, id := range ids {
		fps[id] = Fingerprint(i + 1)
	}
	all := func(ids []string) []string {
		var ls []string
		for _, id := range ids {
			ls = append(ls, answerLine(id, fps[id]))
		}
		return ls
	}
	reversed := slices.Clone(ids)
	slices.Reverse(reversed)
	changed := func(id string, fp Fingerprint) map[string]Fingerprint {
		m := map[string]Fingerprint{}
		for k, v := range fps {
			m[k] = v
		}
		m[id] = fp
		return m
	}
	for name, tc := range map[string]struct {
		out  []string
		errs string
		in   map[string]Fingerprint
		cap  int
	}{
		"finished":  {out: all(ids)},
		"resumed":   {out: all(ids[:25])},
		"reordered": {out: all(reversed), cap: 4},
		// r0003 answered twice for the same request, early; the merge gives
		// up later (the order) or at the end (the count).
		"repeat then reordered":  {out: append(append(all(ids[:5]), answerLine("r0003", 4)), all(reversed[:35])...), cap: 4},
		"repeat":                 {out: append(all(ids[:39]), answerLine("r0003", 4))},
		"superseded":             {out: append(all(ids), answerLine("r0003", 99))},
		"changed request":        {out: all(ids), in: changed("r0007", 77)},
		"id left the input":      {out: all(ids), in: func() map[string]Fingerprint { m := changed("r0000", 1); delete(m, "r0039"); return m }()},
		"failure record":         {out: all(ids[:39]), errs: lines(string(seal(nil, []byte(failure("r0039", "no")), 40)))},
		"failure since answered": {out: all(ids), errs: lines(string(seal(nil, []byte(failure("r0039", "no")), 40)))},
		"foreign line":           {out: append(all(ids[:20]), append([]string{result("x")}, all(ids[20:])...)...)},
		"no fingerprint":         {out: append(all(ids[:39]), answerLine("r0039", 0))},
	} {
		t.Run(name, func(t *testing.T) {
			in := cmpOr(tc.in, fps)
			var set InputSet
			var order []string
			for _, id := range ids {
				if fp, ok := in[id]; ok {
					set.Add(id, fp)
					order = append(order, id)
				}
			}
			set = set.WithIDs(idList(order))
			out := lines(tc.out...)
			plain := view(t, out, tc.errs, in, InputSet{}, 0)
			deferred := view(t, out, tc.errs, in, set, tc.cap)
			if fmt.Sprintf("%+v", deferred) != fmt.Sprintf("%+v", plain) {
				t.Errorf("deferred load:\n%+v\nplain load:\n%+v", deferred, plain)
			}
		})
	}
}

func cmpOr(a, b map[string]Fingerprint) map[string]Fingerprint {
	if a != nil {
		return a
	}
	return b
}

// TestDeferredAnswersLookedUpLater: a caller that looks ids up without
// SkipAll (or after it) finds every deferred answer, and a pruning Close
// after a complete pass without them drops them as it would have.
func TestDeferredAnswersLookedUpLater(t *testing.T) {
	ids := numbered(50)
	o := answeredInOrder(t, ids)
	o.Expect = sameFP(ids)
	s := mustOpen(t, o)
	if !s.Done("r0010") || s.Done("nope") {
		t.Fatal("Done does not see the deferred answers")
	}
	if v := s.Classify("r0011", 1); v != Skip {
		t.Fatalf("Classify of a deferred answer = %v, want skip", v)
	}
	if v := s.Classify("r0012", 2); v != Send {
		t.Fatalf("Classify of a changed request = %v, want send", v)
	}
	if err := s.Answer("r0011", 1, []byte(result("r0011"))); err == nil {
		t.Fatal("Answer took a request a deferred line answers")
	}
	mustClose(t, s)

	// SkipAll took them, then a lookup: they stay met, nothing is pruned.
	o.Prune = true
	s = mustOpen(t, o)
	if !s.SkipAll(o.Expect) {
		t.Fatal("SkipAll refused")
	}
	if v := s.Classify("r0001", 1); v != Skip {
		t.Fatalf("Classify after SkipAll = %v", v)
	}
	mustClose(t, s)
	if st, err := Status(o.Output); err != nil || st.Done != 50 {
		t.Fatalf("after SkipAll, a lookup and a pruning Close: %+v %v", st, err)
	}

	// The input became one request of another id, classified alone: a
	// pruning Close drops every deferred answer, as an indexed load would.
	s = mustOpen(t, o)
	if v := s.Classify("new", 1); v != Send {
		t.Fatalf("Classify(new) = %v", v)
	}
	s.InputDone()
	mustClose(t, s)
	if st, err := Status(o.Output); err != nil || st.Done != 0 {
		t.Fatalf("after a pruning Close of an input without them: %+v %v", st, err)
	}
}

// TestDeferredPruneWithoutLookup: a complete input pass that looked up
// nothing (InputDone alone) prunes the deferred answers too.
func TestDeferredPruneWithoutLookup(t *testing.T) {
	ids := numbered(20)
	o := answeredInOrder(t, ids)
	o.Expect, o.Prune = sameFP(ids), true
	s := mustOpen(t, o)
	s.InputDone()
	mustClose(t, s)
	if st, err := Status(o.Output); err != nil || st.Done != 0 {
		t.Fatalf("after a pruning Close of an empty input: %+v %v", st, err)
	}
}
