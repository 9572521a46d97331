package checkpoint

import (
	"bytes"
	"fmt"
	"os"
	"slices"
	"testing"
)

// answeredInOrder writes an output answering ids in this order, each
// with fingerprint 1, and returns its options for a rerun's Open.
func answeredInOrder(t *testing.T, ids []string) Options {
	t.Helper()
	o, _ := testOpts(t)
	s := mustOpen(t, o)
	for _, id := range ids {
		if err := s.Answer(id, 1, []byte(result(id))); err != nil {
			t.Fatal(err)
		}
	}
	mustClose(t, s)
	return o
}

func sameFP(ids []string) InputSet {
	var in InputSet
	for _, id := range ids {
		in.Add(id, 1)
	}
	return in.WithIDs(idList(ids))
}

func numbered(n int) []string {
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("r%04d", i)
	}
	return ids
}

// TestSkipAllConfirmedAtOpen: given the input as Options.Expect, Open's read
// of the output meets the answers' ids with the input's, and SkipAll then
// says yes without reading a line of the output again; when the ids are
// not the same (whatever the counts and sums say) or the order is too far
// from the input's, it is not confirmed there, and SkipAll decides as
// without it.
func TestSkipAllConfirmedAtOpen(t *testing.T) {
	ids := numbered(300)
	near := slices.Clone(ids) // answers landed a few places from their line
	for i := 0; i+3 < len(near); i += 4 {
		near[i], near[i+3] = near[i+3], near[i]
	}
	reversed := slices.Clone(ids)
	slices.Reverse(reversed)
	forged := sameFP(append(slices.Clone(ids[:299]), "x"))
	forged.sum = sameFP(ids).sum // count and sum agree, one id does not
	for name, tc := range map[string]struct {
		written   []string
		in        InputSet
		cap       int
		confirmed bool // at Open
		skip      bool // SkipAll
	}{
		"same order":     {written: ids, in: sameFP(ids), confirmed: true, skip: true},
		"near its order": {written: near, in: sameFP(ids), cap: 8, confirmed: true, skip: true},
		"reversed":       {written: reversed, in: sameFP(ids), cap: 8, skip: true},
		"forged sum":     {written: ids, in: forged},
		"id left":        {written: ids, in: sameFP(ids[1:])},
		"new id":         {written: ids[1:], in: sameFP(ids)},
		// The same ids: confirmed; the fingerprints' sum still says no.
		"changed request": {written: ids, in: func() InputSet { in := sameFP(ids); in.sum++; return in }(), confirmed: true},
	} {
		t.Run(name, func(t *testing.T) {
			o := answeredInOrder(t, tc.written)
			o.Expect, o.mergeCap = tc.in, tc.cap
			s := mustOpen(t, o)
			defer mustClose(t, s)
			if got := s.x.merge.confirmed(tc.in); got != tc.confirmed {
				t.Fatalf("confirmed at Open = %v, want %v", got, tc.confirmed)
			}
			if got := s.SkipAll(tc.in); got != tc.skip {
				t.Fatalf("SkipAll = %v, want %v", got, tc.skip)
			}
			if tc.confirmed && s.x.outR.win.n+s.x.outR.one.n != 0 {
				t.Error("SkipAll read the output again after Open confirmed it")
			}
			if tc.skip && s.x.done.unseen() != 0 {
				t.Errorf("%d answers not marked met", s.x.done.unseen())
			}
		})
	}
}

// TestConfirmAtOpenSuperseded: an output that answers an id twice (made
// outside llmrun: Close compacts its own) holds more answers than ids:
// Open does not confirm it from the lines alone, and SkipAll still says
// yes the slow way.
func TestConfirmAtOpenSuperseded(t *testing.T) {
	o := answeredInOrder(t, []string{"a", "b", "c"})
	data, err := os.ReadFile(o.Output)
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.SplitAfter(data, []byte("\n"))
	if err := os.WriteFile(o.Output, append(data, lines[1]...), 0o600); err != nil { // b again
		t.Fatal(err)
	}
	in := sameFP([]string{"a", "b", "c"})
	o.Expect = in
	s := mustOpen(t, o)
	defer mustClose(t, s)
	if s.x.merge.confirmed(in) {
		t.Fatal("confirmed an output with a superseded line")
	}
	if !s.SkipAll(in) {
		t.Fatal("SkipAll refused the input the output answers")
	}
}

// TestConfirmAtOpenForgedCollision: as TestKeyCollisionIsConfirmed, but
// through Open's merge: the output answers a, b, x; the input is a, b, y,
// with the count and sum of the output's, and y's key forged onto x's
// line. Neither Open nor SkipAll may count y answered.
func TestConfirmAtOpenForgedCollision(t *testing.T) {
	o := answeredInOrder(t, []string{"a", "b", "x"})
	in := sameFP([]string{"a", "b", "y"})
	in.sum = sameFP([]string{"a", "b", "x"}).sum
	o.Expect = in
	s := mustOpen(t, o)
	defer mustClose(t, s)
	s.setMu.Lock()
	i, _ := s.x.findDone(keyOfString("x"), "x")
	s.x.done.markSeen(s.x.done.add(keyOfString("y"), s.x.done.offAt(i)))
	s.x.done.n-- // the forged slot is not an id of its own
	s.setMu.Unlock()
	if s.x.merge.confirmed(in) {
		t.Fatal("Open confirmed y, which no line holds")
	}
	if s.SkipAll(in) {
		t.Fatal("SkipAll trusted a hash: y is not the id its line holds")
	}
}
