package checkpoint

import (
	"strings"
	"testing"
)

// TestClassifyAdopting: an answer stored under the legacy fingerprint of a
// request is adopted (Skip), rewritten under the new one at Close with a
// valid seal, and the next run matches it by the new fingerprint alone
// (legacy never called); an answer to another request is sent again.
func TestClassifyAdopting(t *testing.T) {
	o, _ := testOpts(t)
	s := mustOpen(t, o)
	for id, fp := range map[string]Fingerprint{"a": 100, "b": 200, "c": 300} {
		if err := s.Answer(id, fp, []byte(result(id))); err != nil {
			t.Fatal(err)
		}
	}
	mustClose(t, s)

	s = mustOpen(t, o)
	calls := 0
	legacyOf := map[string]Fingerprint{"a": 100, "b": 999, "c": 300}
	classify := func(id string, fp Fingerprint) Verdict {
		return s.ClassifyAdopting(id, fp, func() Fingerprint { calls++; return legacyOf[id] })
	}
	if v := classify("a", 101); v != Skip {
		t.Errorf("a (legacy fingerprint matches): %v, want Skip", v)
	}
	if v := classify("b", 201); v != Send {
		t.Errorf("b (request changed): %v, want Send", v)
	}
	if v := classify("c", 300); v != Skip || calls != 2 {
		t.Errorf("c (same fingerprint in both schemes): %v, legacy called %d times, want Skip and 2", v, calls)
	}
	if s.Adopted() != 1 {
		t.Errorf("Adopted() = %d, want 1", s.Adopted())
	}
	mustClose(t, s)
	if out := readFile(t, o.Output); !strings.Contains(out, Fingerprint(101).String()) || strings.Contains(out, Fingerprint(100).String()) {
		t.Fatalf("output not re-fingerprinted:\n%s", out)
	}

	s = mustOpen(t, o) // fails on a broken seal
	defer mustClose(t, s)
	calls = 0
	if v := classify("a", 101); v != Skip || calls != 0 {
		t.Errorf("after the rewrite: %v, legacy called %d times", v, calls)
	}
}
