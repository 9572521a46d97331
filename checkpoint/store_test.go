package checkpoint

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

func TestParseFsyncMode(t *testing.T) {
	tests := map[string]struct {
		in   string
		want FsyncMode
		err  bool
	}{
		"empty":  {"", FsyncBatch, false},
		"batch":  {"batch", FsyncBatch, false},
		"always": {"ALWAYS", FsyncAlways, false},
		"never":  {" never ", FsyncNever, false},
		"bad":    {"sometimes", 0, true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := ParseFsyncMode(tc.in)
			if (err != nil) != tc.err || got != tc.want {
				t.Fatalf("ParseFsyncMode(%q) = %v, %v", tc.in, got, err)
			}
			if err == nil && got.String() != strings.TrimSpace(strings.ToLower(tc.in)) && tc.in != "" {
				t.Errorf("String() = %q", got.String())
			}
		})
	}
}

func TestOpenRepairsTornTail(t *testing.T) {
	good := lines(sealed(result("a")), sealed(result("b")))
	tests := map[string]string{
		"mid-line":             `{"custom_id":"c","response":{"sta`,
		"missing newline only": result("c"),
		"half a UTF-8 rune":    `{"custom_id":"c","text":"caf` + "\xc3",
		"invalid JSON at EOF":  `{"custom_id":"c","x":}` + "\n",
	}
	for name, tail := range tests {
		t.Run(name, func(t *testing.T) {
			o, w := testOpts(t)
			writeFile(t, o.Output, good+tail)
			s := mustOpen(t, o)
			if got := readFile(t, o.Output); got != good {
				t.Fatalf("after repair the output is %q, want the good prefix", got)
			}
			msgs := w.all()
			if len(msgs) != 1 || !strings.Contains(msgs[0], "dropped "+itoa(len(tail))+" bytes") || !strings.Contains(msgs[0], "line 3") {
				t.Fatalf("warnings %q, want one naming %d bytes at line 3", msgs, len(tail))
			}
			if !s.Done("a") || !s.Done("b") || s.Done("c") {
				t.Fatal("done set wrong after repair")
			}
			if err := s.AppendResult("c", []byte(result("c"))); err != nil {
				t.Fatal(err)
			}
			mustClose(t, s)
			if got := readFile(t, o.Output); got != good+lines(sealed(result("c"))) {
				t.Fatalf("output %q", got)
			}
			s = mustOpen(t, o) // clean now: no warning
			defer mustClose(t, s)
			if len(w.all()) != 1 {
				t.Fatalf("second open warned: %q", w.all())
			}
			if d, _ := s.Counts(); d != 3 {
				t.Fatalf("done %d, want 3", d)
			}
		})
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

func TestOpenCorruptMiddle(t *testing.T) {
	o, _ := testOpts(t)
	content := lines(result("a"), "", result("b"), `{"custom_id":"c","x`, result("d"))
	writeFile(t, o.Output, content)
	_, err := Open(o)
	var ce *CorruptError
	if !errors.As(err, &ce) || ce.Line != 4 || ce.Path != o.Output {
		t.Fatalf("Open: %v, want *CorruptError at line 4", err)
	}
	if !strings.Contains(err.Error(), ":4:") {
		t.Errorf("message %q does not name the line", err)
	}
	if readFile(t, o.Output) != content {
		t.Fatal("a corrupt output was modified")
	}
	// The lock is released: after fixing the file, Open works.
	writeFile(t, o.Output, lines(result("a"), result("b"), result("d")))
	s := mustOpen(t, o)
	mustClose(t, s)
}

func TestLockContention(t *testing.T) {
	o, _ := testOpts(t)
	s := mustOpen(t, o)
	_, err := Open(o)
	var le *LockedError
	if !errors.As(err, &le) || le.PID != os.Getpid() || le.Output != o.Output {
		t.Fatalf("second Open: %v, want *LockedError with pid %d", err, os.Getpid())
	}
	if !strings.Contains(err.Error(), "pid "+itoa(os.Getpid())) {
		t.Errorf("message %q does not name the pid", err)
	}
	st, err := Status(o.Output)
	if err != nil || !st.Running || st.PID != os.Getpid() {
		t.Fatalf("Status while locked: %+v, %v", st, err)
	}
	mustClose(t, s)
	if _, err := os.Stat(o.Output + ".lock"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("lock file left behind: %v", err)
	}
	st, err = Status(o.Output)
	if err != nil || st.Running || st.PID != 0 {
		t.Fatalf("Status after Close: %+v, %v", st, err)
	}
	s = mustOpen(t, o)
	mustClose(t, s)
}

func TestLockSurvivesStaleLockFile(t *testing.T) {
	o, _ := testOpts(t)
	// A crashed run leaves its lock file with its pid; nobody holds the lock.
	writeFile(t, o.Output+".lock", "999999\n")
	s := mustOpen(t, o)
	defer mustClose(t, s)
	if got := strings.TrimSpace(readFile(t, o.Output+".lock")); got != itoa(os.Getpid()) {
		t.Fatalf("lock file holds %q, want our pid", got)
	}
}

// TestErrorsFileRewrite: a failure record leaves the errors file only when
// its id is answered (before or during the run) or leaves the input; a later
// record of an id supersedes an earlier one; the rewrite happens at Close.
func TestErrorsFileRewrite(t *testing.T) {
	old := lines(
		failure("a", "stale: a succeeded later"),
		failure("b", "first"),
		`{"error":"unparsable input line 7"}`,
		failure("c", "only"),
		failure("b", "second"),
		failure("gone", "its id left the input"),
	) + `{"custom_id":"d","err` // torn
	tests := map[string]struct {
		retry   bool
		verdict Verdict // of b and c
		retried int
	}{
		"retry failed": {true, Send, 2},
		"keep failed":  {false, KeepFailed, 0},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			o, w := testOpts(t)
			o.RetryFailed = tc.retry
			writeFile(t, o.Output, lines(sealed(result("a"))))
			writeFile(t, o.Errors, old)
			s := mustOpen(t, o)
			if got := readFile(t, o.Errors); got != strings.TrimSuffix(old, `{"custom_id":"d","err`) {
				t.Fatalf("errors file after Open:\n%s", got)
			}
			for id, want := range map[string]bool{"a": false, "b": true, "c": true, "d": false, "gone": true} {
				if got := s.Failed(id); got != (want && !tc.retry) {
					t.Errorf("Failed(%q) = %v", id, got)
				}
			}
			if d, f := s.Counts(); d != 1 || f != map[bool]int{false: 3, true: 0}[tc.retry] {
				t.Errorf("Counts = %d, %d", d, f)
			}
			if st, err := Status(o.Output); err != nil || st.Failed != 3 {
				t.Errorf("Status: %+v %v", st, err)
			}
			if msgs := w.all(); len(msgs) != 1 || !strings.Contains(msgs[0], "torn") {
				t.Errorf("warnings %q", msgs)
			}
			for _, id := range []string{"b", "c"} {
				if v := s.Classify(id, 0); v != tc.verdict {
					t.Errorf("Classify(%s) = %v, want %v", id, v, tc.verdict)
				}
			}
			if v := s.Classify("a", 0); v != Skip {
				t.Errorf("Classify(a) = %v", v)
			}
			if s.Retried() != tc.retried {
				t.Errorf("Retried = %d, want %d", s.Retried(), tc.retried)
			}
			// b fails again, c is answered, e fails for the first time; a
			// failure without an id is kept too.
			for _, l := range []struct {
				id, line string
				ok       bool
			}{{"b", failure("b", "third"), false}, {"c", result("c"), true}, {"e", failure("e", "now"), false}, {"", `{"error":"unparsable input line 9"}`, false}} {
				var err error
				if l.ok {
					err = s.AppendResult(l.id, []byte(l.line))
				} else {
					err = s.AppendError(l.id, []byte(l.line))
				}
				if err != nil {
					t.Fatal(err)
				}
			}
			s.Classify("d", 0)
			s.Classify("e", 0)
			s.InputDone()
			mustClose(t, s)
			want := lines(sealed(failure("b", "third")), sealed(failure("e", "now")), sealed(`{"error":"unparsable input line 9"}`))
			if got := readFile(t, o.Errors); got != want {
				t.Fatalf("errors file after Close:\n%s\nwant:\n%s", got, want)
			}
		})
	}
}

// TestErrorsFileOnlyWhenSomethingFailed: no errors file is created when
// nothing fails, and one emptied by successes is removed.
func TestErrorsFileOnlyWhenSomethingFailed(t *testing.T) {
	o, _ := testOpts(t)
	o.Errors = ""
	s := mustOpen(t, o)
	s.AppendResult("a", []byte(result("a")))
	mustClose(t, s)
	if _, err := os.Stat(ErrorsPath(o.Output)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("errors file exists after a run without failures: %v", err)
	}
	s = mustOpen(t, o)
	s.AppendError("b", []byte(failure("b", "x")))
	mustClose(t, s)
	if got := readFile(t, ErrorsPath(o.Output)); got != lines(sealed(failure("b", "x"))) {
		t.Fatalf("errors file %q", got)
	}
	s = mustOpen(t, o)
	s.AppendResult("b", []byte(result("b")))
	mustClose(t, s)
	if _, err := os.Stat(ErrorsPath(o.Output)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("errors file left after its only failure succeeded: %v", err)
	}
}

func TestErrorsPath(t *testing.T) {
	for in, want := range map[string]string{
		"in.out.jsonl":                  "in.errors.jsonl",
		"dir/in.shard-1-of-3.out.jsonl": "dir/in.shard-1-of-3.errors.jsonl",
		"results.jsonl":                 "results.errors.jsonl",
		"results":                       "results.errors.jsonl",
	} {
		if got := ErrorsPath(in); got != want {
			t.Errorf("ErrorsPath(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestAppendRejects(t *testing.T) {
	o, _ := testOpts(t)
	writeFile(t, o.Output, lines(sealed(result("old"))))
	s := mustOpen(t, o)
	defer mustClose(t, s)
	if err := s.AppendResult("new", []byte(result("new"))); err != nil {
		t.Fatal(err)
	}
	tests := map[string]struct {
		id, line string
		isErr    bool
		want     error
	}{
		"done this run":        {"new", result("new"), false, ErrAlreadyDone},
		"done before":          {"old", result("old"), false, ErrAlreadyDone},
		"error for a done id":  {"old", failure("old", "x"), true, ErrAlreadyDone},
		"id mismatch":          {"x", result("y"), false, ErrBadLine},
		"newline inside":       {"x", `{"custom_id":"x",` + "\n" + `"a":1}`, false, ErrBadLine},
		"not an object":        {"x", `"x"`, false, ErrBadLine},
		"error id mismatch":    {"x", failure("y", "m"), true, ErrBadLine},
		"error without object": {"", `oops`, true, ErrBadLine},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			append := s.AppendResult
			if tc.isErr {
				append = s.AppendError
			}
			if err := append(tc.id, []byte(tc.line)); !errors.Is(err, tc.want) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
		})
	}
	if got := readFile(t, o.Output); got != lines(sealed(result("old")), sealed(result("new"))) {
		t.Fatalf("output %q", got)
	}
}

// TestAnswerEncodedChecks: AnswerEncoded, for lines the runner encoded
// itself, skips only the JSON scan: a newline, another custom_id, a
// repeated answer and a sealed line without its object are refused as by
// Answer, and an accepted line is read back as an answer.
func TestAnswerEncodedChecks(t *testing.T) {
	o, _ := testOpts(t)
	s := mustOpen(t, o)
	if err := s.AnswerEncoded("a", 7, []byte(result("a"))); err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		id, line string
		fp       Fingerprint
		want     error
	}{
		"done":             {"a", result("a"), 7, ErrAlreadyDone},
		"id mismatch":      {"x", result("y"), 7, ErrBadLine},
		"newline inside":   {"x", `{"custom_id":"x",` + "\n" + `"llmrun":{}}`, 7, ErrBadLine},
		"not an object":    {"x", `"x"`, 7, ErrBadLine},
		"no llmrun object": {"x", `{"custom_id":"x","n":1}`, 7, ErrBadLine},
	} {
		t.Run(name, func(t *testing.T) {
			if err := s.AnswerEncoded(tc.id, tc.fp, []byte(tc.line)); !errors.Is(err, tc.want) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
		})
	}
	mustClose(t, s)
	s = mustOpen(t, o)
	defer mustClose(t, s)
	if v := s.Classify("a", 7); v != Skip {
		t.Errorf("reopened: a is %v, want skip", v)
	}
}

func TestStateRoundTrip(t *testing.T) {
	o, _ := testOpts(t)
	s := mustOpen(t, o)
	batches := json.RawMessage(`[{"provider":"openai","id":"batch_1"}]`)
	if err := s.SetState("batches", batches); err != nil {
		t.Fatal(err)
	}
	if err := s.SetState("gone", json.RawMessage(`1`)); err != nil {
		t.Fatal(err)
	}
	if err := s.SetState("gone", nil); err != nil {
		t.Fatal(err)
	}
	if err := s.SetState("bad", json.RawMessage(`{`)); err == nil {
		t.Fatal("invalid JSON accepted")
	}
	// Durable before Close: a crash now must not lose the batch id.
	st, err := Status(o.Output)
	if err != nil || string(st.State["batches"]) != string(batches) {
		t.Fatalf("state file before Close: %+v %v", st.State, err)
	}
	mustClose(t, s)
	if err := s.SetState("late", json.RawMessage(`1`)); !errors.Is(err, ErrClosed) {
		t.Fatalf("SetState after Close: %v", err)
	}

	s = mustOpen(t, o)
	defer mustClose(t, s)
	got, ok := s.State("batches")
	if !ok || string(got) != string(batches) {
		t.Fatalf("State = %s, %v", got, ok)
	}
	if _, ok := s.State("gone"); ok {
		t.Fatal("deleted key came back")
	}
	if keys := s.StateKeys(); !slices.Equal(keys, []string{"batches"}) {
		t.Fatalf("StateKeys = %q", keys)
	}
}

// TestStateFileCorrupt: an unusable state file is a *StateError (an input
// error: exit 2) naming the file and what to do, and it is left as it is.
func TestStateFileCorrupt(t *testing.T) {
	o, _ := testOpts(t)
	for content, want := range map[string][]string{
		"{not json":      {"is not valid JSON", "move it aside and rerun"},
		`{"version":99}`: {"has version 99", "newer llmrun"},
	} {
		writeFile(t, o.Output+".state.json", content)
		_, err := Open(o)
		var se *StateError
		if !errors.As(err, &se) || se.Path != o.Output+".state.json" || !strings.Contains(err.Error(), o.Output+".state.json") {
			t.Fatalf("Open: %v, want a *StateError naming the file", err)
		}
		for _, w := range want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("message %q lacks %q", err, w)
			}
		}
		if readFile(t, o.Output+".state.json") != content {
			t.Error("the state file was replaced")
		}
		if _, err := Status(o.Output); !errors.As(err, &se) {
			t.Errorf("Status: %v", err)
		}
	}
}

func TestWriteErrorRollsBack(t *testing.T) {
	for _, short := range []int{0, 1, 40} {
		t.Run("partial "+itoa(short), func(t *testing.T) {
			o, _ := testOpts(t)
			out, _ := withFaults(&o)
			s := mustOpen(t, o)
			s.AppendResult("a", []byte(result("a")))
			(*out).set(func(f *faultFile) { f.failWrite, f.short = true, short })
			err := s.AppendResult("b", []byte(result("b")))
			var we *WriteError
			if !errors.As(err, &we) || !errors.Is(err, errNoSpace) || !we.RolledBack || we.Op != "write" {
				t.Fatalf("AppendResult on a full disk: %v", err)
			}
			if s.Done("b") {
				t.Fatal("a failed append marked the id done")
			}
			if got := readFile(t, o.Output); got != lines(sealed(result("a"))) {
				t.Fatalf("output after a failed write: %q", got)
			}
			// Space is freed: the store goes on.
			(*out).set(func(f *faultFile) { f.failWrite = false })
			if err := s.AppendResult("b", []byte(result("b"))); err != nil {
				t.Fatal(err)
			}
			mustClose(t, s)
			if got := readFile(t, o.Output); got != lines(sealed(result("a")), sealed(result("b"))) {
				t.Fatalf("output %q", got)
			}
		})
	}
}

func TestWriteErrorWithoutRollbackIsRepairable(t *testing.T) {
	o, w := testOpts(t)
	out, _ := withFaults(&o)
	s := mustOpen(t, o)
	s.AppendResult("a", []byte(result("a")))
	(*out).set(func(f *faultFile) { f.failWrite, f.short, f.failTruncate = true, 30, true })
	err := s.AppendResult("b", []byte(result("b")))
	var we *WriteError
	if !errors.As(err, &we) || we.RolledBack {
		t.Fatalf("got %v, want a *WriteError not rolled back", err)
	}
	(*out).set(func(f *faultFile) { f.failWrite, f.failTruncate = false, false })
	if err := s.AppendResult("c", []byte(result("c"))); !errors.As(err, &we) {
		t.Fatalf("append after an un-rolled-back failure: %v, want the sticky error", err)
	}
	if err := s.Flush(); err == nil {
		t.Fatal("Flush hid the sticky error")
	}
	if err := s.Close(); !errors.As(err, &we) {
		t.Fatalf("Close: %v", err)
	}
	// The next run repairs the partial line.
	o.wrap = nil
	s = mustOpen(t, o)
	defer mustClose(t, s)
	if msgs := w.all(); len(msgs) != 1 || !strings.Contains(msgs[0], "dropped 30 bytes") {
		t.Fatalf("warnings %q", msgs)
	}
	if d, _ := s.Counts(); d != 1 || !s.Done("a") {
		t.Fatalf("done %d", d)
	}
}

func TestFsyncErrorIsSticky(t *testing.T) {
	o, _ := testOpts(t)
	o.Fsync = FsyncAlways
	out, _ := withFaults(&o)
	s := mustOpen(t, o)
	(*out).set(func(f *faultFile) { f.failSync = true })
	err := s.AppendResult("a", []byte(result("a")))
	var we *WriteError
	if !errors.As(err, &we) || we.Op != "fsync" {
		t.Fatalf("got %v", err)
	}
	if !s.Done("a") {
		t.Error("the line is in the file; the id must count as done")
	}
	if err := s.AppendResult("b", []byte(result("b"))); !errors.As(err, &we) {
		t.Fatalf("append after a failed fsync: %v", err)
	}
	s.Close()
}

func TestGroupCommit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		o, _ := testOpts(t)
		o.SyncLines = 4
		out, errs := withFaults(&o)
		s := mustOpen(t, o)
		syncs := func() int { return (*out).syncCount() + (*errs).syncCount() }

		s.AppendResult("a", []byte(result("a")))
		s.AppendError("b", []byte(failure("b", "x")))
		time.Sleep(DefaultSyncInterval - time.Millisecond)
		synctest.Wait()
		if n := syncs(); n != 0 {
			t.Fatalf("%d fsyncs before the interval", n)
		}
		time.Sleep(time.Millisecond)
		synctest.Wait()
		if n := syncs(); n != 2 {
			t.Fatalf("%d fsyncs after the interval, want both files", n)
		}
		time.Sleep(time.Hour) // nothing waits: no more fsyncs
		synctest.Wait()
		if n := syncs(); n != 2 {
			t.Fatalf("%d fsyncs while idle", n)
		}

		// SyncLines lines fsync at once, without waiting for the timer.
		for _, id := range []string{"c", "d", "e", "f"} {
			s.AppendResult(id, []byte(result(id)))
		}
		if n := (*out).syncCount(); n != 2 {
			t.Fatalf("output fsyncs after %d lines: %d", o.SyncLines, n)
		}
		// Close fsyncs what waits.
		s.AppendResult("g", []byte(result("g")))
		mustClose(t, s)
		if n := (*out).syncCount(); n != 3 {
			t.Fatalf("output fsyncs after Close: %d", n)
		}
		time.Sleep(time.Hour) // a stopped timer does not fire on a closed store
		synctest.Wait()
	})
}

func TestFsyncModes(t *testing.T) {
	tests := map[string]struct {
		mode        FsyncMode
		afterAppend int // output fsyncs after 3 appends
		afterFlush  int
		afterClose  int
	}{
		"always": {FsyncAlways, 3, 3, 3},
		"never":  {FsyncNever, 0, 0, 0},
		"batch":  {FsyncBatch, 0, 1, 1},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				o, _ := testOpts(t)
				o.Fsync = tc.mode
				out, _ := withFaults(&o)
				s := mustOpen(t, o)
				for _, id := range []string{"a", "b", "c"} {
					s.AppendResult(id, []byte(result(id)))
				}
				if n := (*out).syncCount(); n != tc.afterAppend {
					t.Errorf("after appends: %d fsyncs, want %d", n, tc.afterAppend)
				}
				if err := s.Flush(); err != nil {
					t.Fatal(err)
				}
				if n := (*out).syncCount(); n != tc.afterFlush {
					t.Errorf("after Flush: %d fsyncs, want %d", n, tc.afterFlush)
				}
				mustClose(t, s)
				if n := (*out).syncCount(); n != tc.afterClose {
					t.Errorf("after Close: %d fsyncs, want %d", n, tc.afterClose)
				}
				if err := s.Flush(); !errors.Is(err, ErrClosed) {
					t.Errorf("Flush after Close: %v", err)
				}
				if err := s.Close(); err != nil {
					t.Errorf("second Close: %v", err)
				}
			})
		})
	}
}

// TestConcurrentShutdown runs the runner's shape under the race detector: one
// goroutine appends, others read Done/Counts and Flush, and Close comes from
// another goroutine mid-stream. Every append either lands whole or reports
// ErrClosed.
func TestConcurrentShutdown(t *testing.T) {
	o, _ := testOpts(t)
	s := mustOpen(t, o)
	var wg sync.WaitGroup
	appended := make(chan string, 10000)
	wg.Go(func() {
		defer close(appended)
		for i := range 10000 {
			id := "r" + itoa(i)
			err := s.AppendResult(id, []byte(result(id)))
			if errors.Is(err, ErrClosed) {
				return
			}
			if err != nil {
				t.Error(err)
				return
			}
			appended <- id
		}
	})
	wg.Go(func() {
		for i := range 200 {
			s.Done("r" + itoa(i))
			s.Counts()
			s.Flush()
		}
	})
	for range 50 {
		<-appended
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	var want []string
	for id := range appended {
		want = append(want, id)
	}
	s = mustOpen(t, o)
	defer mustClose(t, s)
	for _, id := range want {
		if !s.Done(id) {
			t.Fatalf("%s acknowledged but not in the output", id)
		}
	}
}

func TestStatus(t *testing.T) {
	o, _ := testOpts(t)
	if _, err := Status(o.Output); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("Status of nothing: %v", err)
	}
	o.Settings = map[string]string{"model": "m"}
	s := mustOpen(t, o)
	s.AppendResult("a", []byte(result("a")))
	s.AppendResult("b", []byte(result("b")))
	s.AppendError("c", []byte(failure("c", "x")))
	s.SetState("batches", json.RawMessage(`["b1"]`))

	st, err := Status(o.Output)
	if err != nil {
		t.Fatal(err)
	}
	if !st.Running || st.PID != os.Getpid() || st.Done != 2 || st.Failed != 1 || st.Errors != o.Errors ||
		st.Settings["model"] != "m" || string(st.State["batches"]) != `["b1"]` || !st.Updated.Equal(fixedNow()) {
		t.Fatalf("Status of a live run: %+v", st)
	}
	mustClose(t, s)

	// A torn tail (a crash of the machine) is reported, not repaired.
	f, _ := os.OpenFile(o.Output, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(`{"custom_id":"d"`)
	f.Close()
	st, err = Status(o.Output)
	if err != nil || st.Running || st.PID != 0 || st.Done != 2 || st.Failed != 1 || st.TornBytes != 16 {
		t.Fatalf("Status after Close: %+v %v", st, err)
	}
	if got := readFile(t, o.Output); !strings.HasSuffix(got, `{"custom_id":"d"`) {
		t.Fatal("Status modified the output")
	}
}

func TestOpenArguments(t *testing.T) {
	o, _ := testOpts(t)
	for name, bad := range map[string]Options{
		"no output": {Errors: o.Errors},
		"same file": {Output: o.Output, Errors: o.Output},
	} {
		if _, err := Open(bad); err == nil {
			t.Errorf("%s: Open succeeded", name)
		}
	}
	if _, err := Open(Options{Output: filepath.Join(o.Output, "sub", "x"), Errors: o.Errors}); err == nil {
		t.Error("Open in a missing directory succeeded")
	}
}

func TestOpenDuplicateIDs(t *testing.T) {
	o, w := testOpts(t)
	writeFile(t, o.Output, lines(sealed(result("a")), sealed(result("b")), sealed(result("a"))))
	s := mustOpen(t, o)
	defer mustClose(t, s)
	if d, _ := s.Counts(); d != 2 {
		t.Fatalf("done %d, want 2", d)
	}
	if msgs := w.all(); len(msgs) != 1 || !strings.Contains(msgs[0], `"a" (line 3)`) {
		t.Fatalf("warnings %q", msgs)
	}
	if s.Classify("a", 0) != Skip {
		t.Fatal("a duplicated answer is not done")
	}
	if err := s.AppendResult("a", []byte(result("a"))); !errors.Is(err, ErrAlreadyDone) {
		t.Fatalf("append of a duplicate: %v", err)
	}
}
