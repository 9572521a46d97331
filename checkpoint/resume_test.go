package checkpoint

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/llmrun/llmrun/internal/jsonvalid"
)

// outputIDs reads the output: its ids in order and each one's fingerprint,
// failing on a malformed line.
func outputIDs(t *testing.T, path string) ([]string, map[string]Fingerprint) {
	t.Helper()
	var ids []string
	fps := map[string]Fingerprint{}
	for i, l := range strings.Split(strings.TrimSuffix(readFile(t, path), "\n"), "\n") {
		if l == "" {
			continue
		}
		if why := checkLine([]byte(l), true); why != "" {
			t.Fatalf("%s:%d: %s", path, i+1, why)
		}
		id := gjson.Get(l, "custom_id").Str
		ids = append(ids, id)
		fps[id] = lineFP([]byte(l))
	}
	return ids, fps
}

// TestResumeFollowsTheRequest: an id answered for the same fingerprint is
// skipped; a changed one is sent again and its answer supersedes the old
// line, which Close compacts away; an id no longer in the input keeps its
// line unless Prune.
func TestResumeFollowsTheRequest(t *testing.T) {
	for _, prune := range []bool{false, true} {
		t.Run(map[bool]string{false: "keep", true: "prune"}[prune], func(t *testing.T) {
			o, _ := testOpts(t)
			s := mustOpen(t, o)
			for i, id := range []string{"a", "b", "c", "gone"} {
				if v := s.Classify(id, Fingerprint(10+i)); v != Send {
					t.Fatalf("Classify(%s) on a new output = %v", id, v)
				}
				if err := s.Answer(id, Fingerprint(10+i), []byte(result(id))); err != nil {
					t.Fatal(err)
				}
			}
			s.InputDone()
			mustClose(t, s)

			// Night 2: b's request changed, d is new, gone left the input.
			o.Prune = prune
			s = mustOpen(t, o)
			input := []struct {
				id   string
				fp   Fingerprint
				want Verdict
			}{{"a", 10, Skip}, {"b", 99, Send}, {"c", 12, Skip}, {"d", 20, Send}}
			for _, r := range input {
				if v := s.Classify(r.id, r.fp); v != r.want {
					t.Errorf("Classify(%s, %d) = %v, want %v", r.id, r.fp, v, r.want)
				}
			}
			if err := s.Answer("a", 10, []byte(result("a"))); !errors.Is(err, ErrAlreadyDone) {
				t.Errorf("a second answer to the same request: %v", err)
			}
			for _, r := range input[1:] {
				if r.want == Send {
					if err := s.Answer(r.id, r.fp, []byte(result(r.id))); err != nil {
						t.Fatal(err)
					}
				}
			}
			// Before Close, b has two lines: the old one is superseded.
			if ids, _ := outputIDs(t, o.Output); !slices.Equal(ids, []string{"a", "b", "c", "gone", "b", "d"}) {
				t.Fatalf("output before Close: %q", ids)
			}
			if st, err := Status(o.Output); err != nil || st.Superseded != 1 || st.Done != 5 {
				t.Fatalf("Status mid-run: %+v %v", st, err)
			}
			s.InputDone()
			mustClose(t, s)
			ids, fps := outputIDs(t, o.Output)
			want := []string{"a", "c", "gone", "b", "d"}
			if prune {
				want = []string{"a", "c", "b", "d"}
			}
			if !slices.Equal(ids, want) || fps["b"] != 99 || fps["a"] != 10 || fps["d"] != 20 {
				t.Fatalf("output after Close: %q %v, want %q", ids, fps, want)
			}
			s = mustOpen(t, o)
			defer mustClose(t, s)
			for _, r := range input {
				if v := s.Classify(r.id, r.fp); v != Skip {
					t.Errorf("third run: Classify(%s) = %v", r.id, v)
				}
			}
		})
	}
}

// TestKillBeforeCompaction: a run killed after superseding lines (or while
// rewriting the file) leaves a file from which the rerun reads the later
// line of each id as current and ends compacted.
func TestKillBeforeCompaction(t *testing.T) {
	o, w := testOpts(t)
	s := mustOpen(t, o)
	s.Answer("a", 1, []byte(result("a")))
	s.Answer("b", 1, []byte(result("b")))
	mustClose(t, s)
	s = mustOpen(t, o)
	s.Classify("a", 2)
	s.Answer("a", 2, []byte(result("a")))
	// kill -9 here: no Close. A rewrite that was under way left its temp file.
	s.ioMu.Lock()
	s.out.f.Close()
	s.ioMu.Unlock()
	s.unlock()
	temp := filepath.Join(filepath.Dir(o.Output), "."+filepath.Base(o.Output)+".tmp12345")
	writeFile(t, temp, lines(sealed(result("half"))))

	s = mustOpen(t, o)
	if _, err := os.Stat(temp); !errors.Is(err, os.ErrNotExist) {
		t.Error("the killed rewrite's temp file is still there")
	}
	if v := s.Classify("a", 2); v != Skip {
		t.Fatalf("Classify(a, 2) after the kill = %v: the later line must count", v)
	}
	if v := s.Classify("a", 1); v != Send {
		t.Fatalf("Classify(a, 1) = %v: the old line must not", v)
	}
	s.Classify("b", 1)
	s.InputDone()
	mustClose(t, s)
	if ids, fps := outputIDs(t, o.Output); !slices.Equal(ids, []string{"b", "a"}) || fps["a"] != 2 {
		t.Fatalf("output %q %v", ids, fps)
	}
	if len(w.all()) != 0 {
		t.Errorf("warnings %q", w.all())
	}
}

// TestFailuresFollowTheRequest: a failure keeps its request failed (without
// RetryFailed) only while the request is the same; a failure of an older
// request of an answered id does not hide the answer.
func TestFailuresFollowTheRequest(t *testing.T) {
	o, _ := testOpts(t)
	o.RetryFailed = false
	s := mustOpen(t, o)
	s.Fail("a", 1, []byte(failure("a", "x")))
	s.Answer("b", 1, []byte(result("b")))
	mustClose(t, s)

	s = mustOpen(t, o)
	if v := s.Classify("a", 1); v != KeepFailed {
		t.Errorf("same failed request: %v", v)
	}
	if v := s.Classify("b", 2); v != Send {
		t.Errorf("changed answered request: %v", v)
	}
	// b's new request fails: its old answer stays (exit 1 says so); the next
	// run with the same request keeps it failed, one with b's old request
	// skips it.
	if err := s.Fail("b", 2, []byte(failure("b", "y"))); err != nil {
		t.Fatal(err)
	}
	mustClose(t, s)
	s = mustOpen(t, o)
	defer mustClose(t, s)
	if v := s.Classify("a", 2); v != Send {
		t.Errorf("changed failed request: %v", v)
	}
	if v := s.Classify("b", 2); v != KeepFailed {
		t.Errorf("b's failed request: %v", v)
	}
	if v := s.Classify("b", 1); v != Skip {
		t.Errorf("b's answered request: %v", v)
	}
	if d, f := s.Counts(); d != 1 || f != 1 {
		t.Errorf("Counts = %d, %d (Classify(b, 1) drops b's failure)", d, f)
	}
}

// TestUnfingerprintedLinesMatchAnyRequest: lines of an older llmrun carry no
// fingerprint; they answer their id whatever its request is now.
func TestUnfingerprintedLinesMatchAnyRequest(t *testing.T) {
	o, _ := testOpts(t)
	writeFile(t, o.Output, lines(sealed(result("a")), sealed(result("b"))))
	s := mustOpen(t, o)
	if s.Classify("a", 12345) != Skip {
		t.Error("an unfingerprinted answer must count as done")
	}
	mustClose(t, s)
	st, err := Status(o.Output)
	if err != nil || st.Unfingerprinted != 2 || st.Done != 2 {
		t.Fatalf("Status: %+v %v", st, err)
	}
}

// TestErrorsFileLockedWithTheOutput: two runs with different outputs and the
// same errors file cannot both hold it.
func TestErrorsFileLockedWithTheOutput(t *testing.T) {
	o, _ := testOpts(t)
	s := mustOpen(t, o)
	defer mustClose(t, s)
	o2 := o
	o2.Output = filepath.Join(filepath.Dir(o.Output), "other.out.jsonl")
	_, err := Open(o2)
	var le *LockedError
	if !errors.As(err, &le) || le.Output != o.Errors {
		t.Fatalf("second Open with the same errors file: %v", err)
	}
	if _, err := os.Stat(o2.Output + ".lock"); !errors.Is(err, os.ErrNotExist) {
		t.Error("the failed Open left its output's lock behind")
	}
}

// TestSealCarriesTheFingerprint: the fingerprint and the checksum sit at the
// end of the line's last object, where lineFP reads them without parsing.
func TestSealCarriesTheFingerprint(t *testing.T) {
	line := seal(nil, []byte(result("a")), 0x0123456789abcdef)
	if !strings.HasSuffix(string(line), `"llmrun":{"attempts":1,"fingerprint":"0123456789abcdef","crc32c":"`+string(line[len(line)-11:len(line)-3])+`"}}`) {
		t.Fatalf("sealed line %s", line)
	}
	if lineFP(line) != 0x0123456789abcdef || verifySeal(line) != sealOK || !jsonvalid.Valid(line) {
		t.Fatal("lineFP or the seal")
	}
	if gjson.GetBytes(line, "llmrun.fingerprint").Str != "0123456789abcdef" {
		t.Fatal("not where JSON readers find it")
	}
	plain := strings.Replace(string(line), `,"crc32c":"`+string(line[len(line)-11:len(line)-3])+`"`, "", 1)
	if lineFP([]byte(plain)) != 0x0123456789abcdef || verifySeal([]byte(plain)) != unsealed {
		t.Fatalf("seal removed: %s", plain)
	}
	if fp, err := ParseFingerprint(Fingerprint(42).String()); err != nil || fp != 42 {
		t.Fatal("ParseFingerprint")
	}
	for _, bad := range []string{"", "12", "0123456789abcdeg", "0123456789abcdef0"} {
		if _, err := ParseFingerprint(bad); err == nil {
			t.Errorf("ParseFingerprint(%q) succeeded", bad)
		}
	}
}

// TestTallyOfDroppedLines: the Tally of the lines a compaction drops is kept
// in the state file, once, whether or not a kill separates the rewrite from
// its record.
func TestTallyOfDroppedLines(t *testing.T) {
	cost := func(line []byte) float64 { return gjson.GetBytes(line, "llmrun.cost").Float() }
	priced := func(id string, c float64) []byte {
		return []byte(strings.Replace(result(id), `"attempts":1`, `"attempts":1,"cost":`+strconv.FormatFloat(c, 'f', -1, 64), 1))
	}
	o, _ := testOpts(t)
	o.Tally = cost
	s := mustOpen(t, o)
	s.Answer("a", 1, priced("a", 0.25))
	s.Fail("b", 1, []byte(failure("b", "x")))
	mustClose(t, s)

	s = mustOpen(t, o)
	s.Classify("a", 2)
	s.Classify("b", 1)
	s.Answer("a", 2, priced("a", 0.5)) // supersedes a's 0.25 answer
	s.Answer("b", 1, priced("b", 1))   // b's failure record goes
	s.InputDone()
	mustClose(t, s)
	st, err := Status(o.Output)
	if err != nil || st.Dropped != 0.25 {
		t.Fatalf("Status: Dropped %v, %v; want the superseded answer's 0.25", st.Dropped, err)
	}

	// A kill between the pending record and the rename: not counted. A kill
	// after the rename: counted, once.
	size := int64(len(readFile(t, o.Output)))
	for _, tc := range []struct {
		size int64
		want float64
	}{{size + 100, 0.25}, {size, 1.25}} {
		sc, _, err := readSidecar(o.Output + ".state.json")
		if err != nil {
			t.Fatal(err)
		}
		sc.DroppedPending = &droppedPending{File: o.Output, Sum: 1, Size: tc.size}
		if err := sc.write(o.Output+".state.json", syncDir); err != nil {
			t.Fatal(err)
		}
		if st, _ := Status(o.Output); st.Dropped != tc.want {
			t.Errorf("Status with a pending drop of size %d: %v, want %v", tc.size, st.Dropped, tc.want)
		}
		s := mustOpen(t, o)
		if s.Dropped() != tc.want {
			t.Errorf("Open with a pending drop of size %d: %v, want %v", tc.size, s.Dropped(), tc.want)
		}
		mustClose(t, s)
		if st, _ := Status(o.Output); st.Dropped != tc.want {
			t.Errorf("after Close: %v, want %v", st.Dropped, tc.want)
		}
	}
}
