package checkpoint

import (
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"
)

// writeSealed appends results for ids through a Store, as a run does, and
// returns the output's content.
func writeSealed(t *testing.T, o Options, ids ...string) string {
	t.Helper()
	s := mustOpen(t, o)
	for _, id := range ids {
		if err := s.AppendResult(id, []byte(result(id))); err != nil {
			t.Fatal(err)
		}
	}
	mustClose(t, s)
	return readFile(t, o.Output)
}

// TestCorruptionInsideTheOutput: damage in the middle of an output (bytes
// cut out, NULs written into a line) stops Open with a *CorruptError naming
// the file and line and the repair; Repair moves the damaged lines to the
// rejected file, after which the run goes on and redoes exactly those ids.
func TestCorruptionInsideTheOutput(t *testing.T) {
	ids := []string{"a", "b", "c", "d", "e", "f", "g", "h"}
	tests := map[string]struct {
		damage   func(content string) string
		line     int
		reason   string
		notDone  []string // ids the damage took out
		rejected int      // lines moved aside
	}{
		"500 bytes cut out of the middle": {
			damage:   func(c string) string { return cutMiddle(c, 250, 750) },
			line:     2,
			reason:   "checksum mismatch",
			notDone:  []string{"b", "c", "d", "e"},
			rejected: 1,
		},
		"NULs inside a line": {
			damage: func(c string) string {
				i := strings.Index(c, "answer to c")
				return c[:i] + "\x00\x00\x00\x00\x00\x00" + c[i+6:]
			},
			line:     3,
			reason:   "checksum mismatch: the line changed after it was written; it holds NUL bytes",
			notDone:  []string{"c"},
			rejected: 1,
		},
		"unsealed line not JSON": {
			damage: func(c string) string {
				i := strings.Index(c, "\n")
				return c[:i+1] + `{"custom_id":"x","response":{"st` + "\n" + c[i+1:]
			},
			line:     2,
			reason:   "not valid JSON",
			rejected: 1,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			o, _ := testOpts(t)
			content := writeSealed(t, o, ids...)
			damaged := tc.damage(content)
			writeFile(t, o.Output, damaged)

			_, err := Open(o)
			var ce *CorruptError
			if !errors.As(err, &ce) || ce.Path != o.Output || ce.Line != tc.line || !strings.HasPrefix(ce.Reason, tc.reason) {
				t.Fatalf("Open: %v, want a *CorruptError at line %d (%s)", err, tc.line, tc.reason)
			}
			for _, want := range []string{o.Output + ":" + itoa(tc.line) + ":", "llmrun repair " + o.Output, o.Output + ".rejected"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("message %q lacks %q", err, want)
				}
			}
			if readFile(t, o.Output) != damaged {
				t.Fatal("Open changed a corrupt output")
			}
			st, err := Status(o.Output)
			if err != nil || st.Malformed == nil || st.Malformed.Line != tc.line || st.Done != len(ids)-len(tc.notDone) {
				t.Errorf("Status: %+v %v", st, err)
			}

			rep, err := Repair(o.Output, "")
			if err != nil || len(rep) != 1 || rep[0].Lines != tc.rejected || rep[0].Rejected != o.Output+".rejected" {
				t.Fatalf("Repair: %+v %v", rep, err)
			}
			rejected := readFile(t, o.Output+".rejected")
			if strings.Count(rejected, "\n") != tc.rejected || int64(len(rejected)) != rep[0].Bytes {
				t.Errorf("rejected file %q, report %+v", rejected, rep[0])
			}
			if fi, _ := os.Stat(o.Output + ".rejected"); fi.Mode().Perm() != 0o600 {
				t.Errorf("rejected file mode %v", fi.Mode())
			}
			s := mustOpen(t, o)
			for _, id := range ids {
				want := !contains(tc.notDone, id)
				if s.Done(id) != want {
					t.Errorf("after repair Done(%q) = %v", id, !want)
				}
			}
			for _, id := range tc.notDone { // the rerun redoes them
				if err := s.AppendResult(id, []byte(result(id))); err != nil {
					t.Fatal(err)
				}
			}
			mustClose(t, s)
			st, err = Status(o.Output)
			if err != nil || st.Malformed != nil || st.Done != len(ids) {
				t.Errorf("Status after the rerun: %+v %v", st, err)
			}
			if rep, err := Repair(o.Output, ""); err != nil || len(rep) != 0 {
				t.Errorf("second Repair: %+v %v", rep, err)
			}
		})
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// TestCorruptionInsideTheErrorsFile: the errors file is validated the same
// way, and Repair (given only the output) finds it through the state file.
func TestCorruptionInsideTheErrorsFile(t *testing.T) {
	o, _ := testOpts(t)
	o.RetryFailed = false
	s := mustOpen(t, o)
	for _, id := range []string{"a", "b", "c"} {
		if err := s.AppendError(id, []byte(failure(id, "boom"))); err != nil {
			t.Fatal(err)
		}
	}
	mustClose(t, s)
	c := readFile(t, o.Errors)
	writeFile(t, o.Errors, strings.Replace(c, `"custom_id":"b","error":{"class`, `"custom_id":"b","error":{"cl`+"\x00\x00", 1))
	_, err := Open(o)
	var ce *CorruptError
	if !errors.As(err, &ce) || ce.Path != o.Errors || ce.Line != 2 || !strings.Contains(err.Error(), "llmrun repair "+o.Output) {
		t.Fatalf("Open: %v", err)
	}
	st, err := Status(o.Output)
	if err != nil || st.Failed != 2 || st.Malformed == nil || st.Malformed.Path != o.Errors {
		t.Fatalf("Status: %+v %v", st, err)
	}
	rep, err := Repair(o.Output, "")
	if err != nil || len(rep) != 1 || rep[0].Path != o.Errors || rep[0].Lines != 1 {
		t.Fatalf("Repair: %+v %v", rep, err)
	}
	s = mustOpen(t, o)
	defer mustClose(t, s)
	if !s.Failed("a") || s.Failed("b") || !s.Failed("c") {
		t.Error("after repair, b must be pending and a, c failed")
	}
}

// TestRepairTornTailAndLock: Repair moves a torn last line too, and refuses
// to touch a checkpoint a live run holds.
func TestRepairTornTailAndLock(t *testing.T) {
	o, _ := testOpts(t)
	content := writeSealed(t, o, "a", "b")
	writeFile(t, o.Output, content+`{"custom_id":"c","resp`)
	s := mustOpen(t, o) // Open repairs a torn tail by itself
	if _, err := Repair(o.Output, ""); !errors.As(err, new(*LockedError)) {
		t.Fatalf("Repair of a locked checkpoint: %v", err)
	}
	mustClose(t, s)
	if readFile(t, o.Output) != content {
		t.Fatal("Open did not drop the torn tail")
	}
	writeFile(t, o.Output, content+`{"custom_id":"c","resp`)
	rep, err := Repair(o.Output, "")
	if err != nil || len(rep) != 1 || rep[0].Lines != 1 || readFile(t, o.Output) != content ||
		readFile(t, o.Output+".rejected") != `{"custom_id":"c","resp`+"\n" {
		t.Fatalf("Repair: %+v %v", rep, err)
	}
}

// TestFilesAreOwnerOnly: the state, lock, output and errors files are created
// 0600, and no URL credential reaches the state file.
func TestFilesAreOwnerOnly(t *testing.T) {
	o, _ := testOpts(t)
	o.Settings = map[string]string{"provider": "openai", "base_url": "http://user:s3cret@proxy.example:8080/v1"}
	s := mustOpen(t, o)
	if err := s.AppendResult("a", []byte(result("a"))); err != nil {
		t.Fatal(err)
	}
	if err := s.AppendError("b", []byte(failure("b", "x"))); err != nil {
		t.Fatal(err)
	}
	if err := s.SetState("batch:1", json.RawMessage(`{"id":"b1","base_url":"https://tok@api.example/v1","n":[1,2.50]}`)); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{o.Output, o.Errors, o.Output + ".state.json", o.Output + ".lock"} {
		fi, err := os.Stat(p)
		if err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %v, %v; want 0600", p, fi.Mode(), err)
		}
	}
	mustClose(t, s)
	state := readFile(t, o.Output+".state.json")
	for _, secret := range []string{"s3cret", "user", "tok@"} {
		if strings.Contains(state, secret) {
			t.Errorf("state file holds %q:\n%s", secret, state)
		}
	}
	if !strings.Contains(state, "http://proxy.example:8080/v1") || !strings.Contains(state, "https://api.example/v1") || !strings.Contains(state, "2.50") {
		t.Errorf("state file lost the URLs or numbers:\n%s", state)
	}
	// A user's chmod of the output stands.
	os.Chmod(o.Output, 0o644)
	s = mustOpen(t, o)
	s.AppendResult("c", []byte(result("c")))
	mustClose(t, s)
	if fi, _ := os.Stat(o.Output); fi.Mode().Perm() != 0o644 {
		t.Errorf("output mode changed to %v", fi.Mode())
	}
}
