package checkpoint

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLineReaderLoneLine: a line far from the start, asked for alone (a
// run confirming one key match), is read into the small buffer, not a
// window's megabyte; lines asked for in file order from the start slide
// the window.
func TestLineReaderLoneLine(t *testing.T) {
	var b strings.Builder
	var offs []int64
	for i := 0; b.Len() < 3*window; i++ {
		offs = append(offs, int64(b.Len()))
		fmt.Fprintf(&b, `{"id":"x","custom_id":"r%06d","pad":"%s"}`+"\n", i, strings.Repeat("p", 200))
	}
	path := filepath.Join(t.TempDir(), "out.jsonl")
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	r, err := openLineReader(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.close()
	far := len(offs) * 3 / 4
	if !r.hasID(offs[far], fmt.Sprintf("r%06d", far)) {
		t.Fatal("the lone line's id not confirmed")
	}
	if r.win.n != 0 || cap(r.win.buf) != 0 {
		t.Fatalf("a lone line filled the window (%d bytes)", cap(r.win.buf))
	}
	for i := range offs {
		if !r.hasID(offs[i], fmt.Sprintf("r%06d", i)) {
			t.Fatalf("line %d not confirmed", i)
		}
	}
	if r.win.base == 0 {
		t.Error("reading in file order did not slide the window")
	}
}
