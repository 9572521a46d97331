package checkpoint

import (
	"fmt"
	"testing"
)

// answered opens a checkpoint whose output answers each id of fps with its
// fingerprint (and, with failed, holds a failure record of failed), closed
// and reopened as a rerun finds it.
func answered(t *testing.T, fps map[string]Fingerprint, failed string) (*Store, Options) {
	t.Helper()
	o, _ := testOpts(t)
	s := mustOpen(t, o)
	for id, fp := range fps {
		if err := s.Answer(id, fp, []byte(result(id))); err != nil {
			t.Fatal(err)
		}
	}
	if failed != "" {
		if err := s.Fail(failed, 5, []byte(failure(failed, "no"))); err != nil {
			t.Fatal(err)
		}
	}
	mustClose(t, s)
	return mustOpen(t, o), o
}

func inputSet(pairs ...any) InputSet {
	var in InputSet
	var ids []string
	for i := 0; i < len(pairs); i += 2 {
		in.Add(pairs[i].(string), Fingerprint(pairs[i+1].(int)))
		ids = append(ids, pairs[i].(string))
	}
	return in.WithIDs(idList(ids))
}

// idList reads ids as a Source reads its input's ids again.
func idList(ids []string) func(yield func(string) bool) error {
	return func(yield func(string) bool) error {
		for _, id := range ids {
			if !yield(id) {
				break
			}
		}
		return nil
	}
}

// TestSkipAll: SkipAll says yes only when the output answers exactly the
// input's requests (in any order); then every id counts as met (nothing is
// pruned, the input is complete). Otherwise it changes nothing, and
// Classify still decides each request.
func TestSkipAll(t *testing.T) {
	out := map[string]Fingerprint{"a": 1, "b": 2, "c": 3}
	for name, tc := range map[string]struct {
		in     InputSet
		failed string
		want   bool
	}{
		"same":              {in: inputSet("a", 1, "b", 2, "c", 3), want: true},
		"other order":       {in: inputSet("c", 3, "a", 1, "b", 2), want: true},
		"changed request":   {in: inputSet("a", 1, "b", 9, "c", 3)},
		"swapped fps":       {in: inputSet("a", 2, "b", 1, "c", 3)},
		"new id":            {in: inputSet("a", 1, "b", 2, "c", 3, "d", 4)},
		"id left the input": {in: inputSet("a", 1, "b", 2)},
		"other id":          {in: inputSet("a", 1, "b", 2, "x", 3)},
		"failure record":    {in: inputSet("a", 1, "b", 2, "c", 3), failed: "z"},
		"empty":             {in: InputSet{}},
	} {
		t.Run(name, func(t *testing.T) {
			s, o := answered(t, out, tc.failed)
			if got := s.SkipAll(tc.in); got != tc.want {
				t.Fatalf("SkipAll = %v, want %v", got, tc.want)
			}
			if !tc.want {
				// Nothing recorded: the request-by-request path decides.
				if v := s.Classify("b", 9); v != Send {
					t.Errorf("after a refused SkipAll, Classify(b, 9) = %v", v)
				}
				if v := s.Classify("a", 1); v != Skip {
					t.Errorf("after a refused SkipAll, Classify(a, 1) = %v", v)
				}
			}
			mustClose(t, s)
			if st, err := Status(o.Output); err != nil || st.Done != 3 {
				t.Errorf("after Close: %+v %v", st, err)
			}
		})
	}
}

// TestSkipAllThenPrune: ids SkipAll met are not pruned at Close.
func TestSkipAllThenPrune(t *testing.T) {
	o, _ := testOpts(t)
	s := mustOpen(t, o)
	for i := range 100 {
		id := fmt.Sprint("r", i)
		if err := s.Answer(id, Fingerprint(i+1), []byte(result(id))); err != nil {
			t.Fatal(err)
		}
	}
	mustClose(t, s)
	o.Prune = true
	s = mustOpen(t, o)
	var in InputSet
	var ids []string
	for i := range 100 {
		in.Add(fmt.Sprint("r", i), Fingerprint(i+1))
		ids = append(ids, fmt.Sprint("r", i))
	}
	if s.SkipAll(in) {
		t.Fatal("SkipAll said yes without a way to confirm the ids")
	}
	in = in.WithIDs(idList(ids))
	if !s.SkipAll(in) || in.Len() != 100 {
		t.Fatal("SkipAll refused the input its output answers")
	}
	mustClose(t, s)
	if st, err := Status(o.Output); err != nil || st.Done != 100 {
		t.Fatalf("after a pruning Close: %+v %v", st, err)
	}
}

// TestKeyCollisionIsConfirmed: the index keeps a hash of each id, never the
// id; two ids whose hashes agree must still be told apart. A slot is forged
// under the key of "x" pointing at the line of "a" (what a real collision
// of the two ids' hashes looks like to the table): "x" must still count as
// not answered, be sent, be answered, and both must survive compaction.
// SkipAll, given an input whose count and sum agree with the output's,
// must still refuse when an id is not the one its line holds.
func TestKeyCollisionIsConfirmed(t *testing.T) {
	s, o := answered(t, map[string]Fingerprint{"a": 1, "b": 2}, "")
	ka, kx := keyOfString("a"), keyOfString("x")
	forge := func() {
		s.setMu.Lock()
		defer s.setMu.Unlock()
		i, _ := s.x.findDone(ka, "a")
		s.x.done.add(kx, s.x.done.offAt(i))
	}
	forge()
	if v := s.Classify("x", 1); v != Send {
		t.Fatalf("Classify of an id whose hash matches another's line = %v, want send", v)
	}
	if s.Done("x") {
		t.Fatal(`Done("x") trusted the hash`)
	}
	if err := s.Answer("x", 1, []byte(result("x"))); err != nil {
		t.Fatalf("answering x: %v", err)
	}
	for _, id := range []string{"a", "x"} {
		if v := s.Classify(id, 1); v != Skip {
			t.Fatalf("Classify(%s) after the answer = %v, want skip", id, v)
		}
	}
	mustClose(t, s)
	if st, err := Status(o.Output); err != nil || st.Done != 3 || st.Superseded != 0 {
		t.Fatalf("after Close: %+v %v", st, err)
	}

	s = mustOpen(t, o)
	defer mustClose(t, s)
	in := inputSet("a", 1, "b", 2, "x", 1)
	s.setMu.Lock()
	// The output's ids are a, b, x; an input a, b, y whose count and sum
	// agree (forged), y's key pointing at x's line.
	in2 := inputSet("a", 1, "b", 2, "y", 1)
	in2.sum = in.sum
	i, _ := s.x.findDone(kx, "x")
	s.x.done.markSeen(s.x.done.add(keyOfString("y"), s.x.done.offAt(i)))
	s.x.done.n-- // the forged slot is not an id of its own
	s.setMu.Unlock()
	if s.SkipAll(in2) {
		t.Fatal("SkipAll trusted a hash: y is not the id its line holds")
	}
	if !s.SkipAll(in) {
		t.Fatal("SkipAll refused the input the output answers")
	}
}
