package checkpoint

import (
	"encoding/json"
	"os"
	"testing"
	"time"
)

// stateWrites counts the state file writes of o's Store: every write is a
// rename of a new file over it (then a directory fsync, through the
// dirSync hook), so a write is a directory fsync that finds a state file
// other than the one the previous write left.
type stateWrites struct {
	n    int
	last os.FileInfo
}

func countStateWrites(o *Options) *stateWrites {
	c := &stateWrites{}
	path := statePath(o.Output)
	o.dirSync = func(dir string) error {
		if fi, err := os.Stat(path); err == nil && (c.last == nil || !os.SameFile(c.last, fi)) {
			c.n++
			c.last = fi
		}
		return syncDir(dir)
	}
	return c
}

// tickingNow is a clock that moves on a minute at every reading.
func tickingNow() func() time.Time {
	t := fixedNow()
	return func() time.Time {
		t = t.Add(time.Minute)
		return t
	}
}

// TestStateWrittenOnceAtTheEnd: a run's end writes the state file once.
// The daily counts saved (SetState) after the last line are written then,
// durably, and Close does not write them again; a rerun that sends
// nothing and saves unchanged counts writes the state file only at Open.
// Each write is two fsyncs (the file, its directory).
func TestStateWrittenOnceAtTheEnd(t *testing.T) {
	o, _ := testOpts(t)
	writes := countStateWrites(&o)
	s := mustOpen(t, o)
	if writes.n != 1 {
		t.Fatalf("Open wrote the state file %d times, want 1", writes.n)
	}
	if err := s.AppendResult("a", []byte(result("a"))); err != nil {
		t.Fatal(err)
	}
	daily := json.RawMessage(`[{"key":"k","requests":1}]`)
	if err := s.SetState("daily", daily); err != nil {
		t.Fatal(err)
	}
	if writes.n != 2 {
		t.Fatalf("after SetState: %d state writes, want 2", writes.n)
	}
	// Durable before Close: a kill now keeps the counts.
	if st, err := Status(o.Output); err != nil || string(st.State["daily"]) != string(daily) {
		t.Fatalf("state on disk before Close: %s (%v), want %s", st.State["daily"], err, daily)
	}
	mustClose(t, s)
	if writes.n != 2 {
		t.Fatalf("a run's end: %d state writes, want 2 (Open, SetState; Close has nothing new)", writes.n)
	}

	// The rerun: nothing to send, the same counts saved.
	writes.n = 0
	s = mustOpen(t, o)
	if err := s.SetState("daily", json.RawMessage(`[ {"key": "k", "requests": 1} ]`)); err != nil {
		t.Fatal(err)
	}
	if err := s.SetState("absent", nil); err != nil {
		t.Fatal(err)
	}
	mustClose(t, s)
	if writes.n != 1 {
		t.Fatalf("a rerun that changes nothing: %d state writes, want 1 (Open)", writes.n)
	}
	if st, err := Status(o.Output); err != nil || string(st.State["daily"]) != string(daily) {
		t.Fatalf("state after the rerun: %s (%v), want %s", st.State["daily"], err, daily)
	}
}

// TestCloseStampsLinesAppendedAfterTheState: lines appended since the
// state file's last write make Close write it once more, so that Updated
// is still the checkpoint's last change; a changed value is always
// written, and a deleted one too.
func TestCloseStampsLinesAppendedAfterTheState(t *testing.T) {
	o, _ := testOpts(t)
	o.Now = tickingNow()
	writes := countStateWrites(&o)
	s := mustOpen(t, o)
	if err := s.SetState("daily", json.RawMessage(`1`)); err != nil {
		t.Fatal(err)
	}
	if err := s.SetState("daily", json.RawMessage(`2`)); err != nil {
		t.Fatal(err)
	}
	if err := s.SetState("daily", nil); err != nil {
		t.Fatal(err)
	}
	if writes.n != 4 {
		t.Fatalf("Open and three changes: %d state writes, want 4", writes.n)
	}
	st, err := Status(o.Output)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := st.State["daily"]; ok {
		t.Fatalf("a deleted key is still in the state file: %s", st.State["daily"])
	}
	if err := s.Fail("b", 0, []byte(failure("b", "no"))); err != nil {
		t.Fatal(err)
	}
	mustClose(t, s)
	if writes.n != 5 {
		t.Fatalf("a line after the last state write: %d state writes, want 5 (Close's)", writes.n)
	}
	end, err := Status(o.Output)
	if err != nil {
		t.Fatal(err)
	}
	if !end.Updated.After(st.Updated) {
		t.Fatalf("Close left Updated at %v, the state write before the last line", end.Updated)
	}
}
