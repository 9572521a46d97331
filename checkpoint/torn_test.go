package checkpoint

import (
	"bytes"
	"os"
	"runtime"
	"strings"
	"testing"
)

// TestLongCompleteLineIsReadWhole: a whole line longer than the look-ahead
// point is still read and validated whole; only a tail that never ends is
// cut off unread.
func TestLongCompleteLineIsReadWhole(t *testing.T) {
	long := sealed(result("long" + strings.Repeat("x", 300<<10)))
	content := lines(sealed(result("a")), long, sealed(result("b"))) + `{"custom_id":"torn","response":` + strings.Repeat("y", 200<<10)
	o, _ := testOpts(t)
	writeFile(t, o.Output, content)
	f, err := os.Open(o.Output)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var ids []string
	res, err := scan(f, scanOpts{path: o.Output, needID: true, keys: true, chunk: 4 << 10, tailProbe: 64 << 10, workers: 1}, func(l *scanLine) error {
		if l.Bad != "" {
			t.Errorf("line %d: %s", l.No, l.Bad)
		}
		ids = append(ids, string(l.ID[:min(len(l.ID), 4)]))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(ids, ",") != "a,long,b" || res.TornLine != 4 || res.Size != int64(len(content)) || res.Good != int64(strings.LastIndexByte(content, '\n')+1) {
		t.Fatalf("ids %v, result %+v (size %d)", ids, res, len(content))
	}
}

// TestTornTailCostsBoundedMemory (issue 22 item 11): a 24 MiB torn last
// line is cut off at the cost of the look-ahead buffer, not of its length
// (before, the buffer grew to the line's length, by a quarter at a time: over 100 MiB).
func TestTornTailCostsBoundedMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 24 MiB")
	}
	o, w := testOpts(t)
	f, err := os.Create(o.Output)
	if err != nil {
		t.Fatal(err)
	}
	good := lines(sealed(result("a")))
	f.WriteString(good + `{"custom_id":"b","response":"`)
	chunk := bytes.Repeat([]byte("z"), 1<<20)
	for range 24 {
		f.Write(chunk)
	}
	f.Close()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	s, err := Open(o)
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	got := after.TotalAlloc - before.TotalAlloc
	t.Logf("Open allocated %.1f MiB", float64(got)/(1<<20))
	if got > 32<<20 {
		t.Errorf("Open allocated %d MiB for a 24 MiB torn tail", got>>20)
	}
	if s.Classify("a", 0) != Skip || readFile(t, o.Output) != good {
		t.Fatal("the good line was not kept, or the tail not cut")
	}
	if ws := strings.Join(w.all(), "\n"); !strings.Contains(ws, "torn last line (line 2)") {
		t.Fatalf("warnings %s", ws)
	}
}

// TestRepairCopiesALongTornTail: Repair moves a torn tail to the rejected
// file whole, without holding it.
func TestRepairCopiesALongTornTail(t *testing.T) {
	o, _ := testOpts(t)
	good := lines(sealed(result("a")))
	tail := `{"custom_id":"b",` + strings.Repeat("q", 3<<20)
	writeFile(t, o.Output, good+tail)
	reps, err := Repair(o.Output, o.Errors)
	if err != nil {
		t.Fatal(err)
	}
	if len(reps) != 1 || reps[0].Lines != 1 || reps[0].Bytes != int64(len(tail))+1 {
		t.Fatalf("repaired %+v", reps)
	}
	if readFile(t, o.Output) != good || readFile(t, RejectedPath(o.Output)) != tail+"\n" {
		t.Fatal("output or rejected file wrong")
	}
}
