package offheap

import (
	"runtime"
	"testing"
)

// slot is a multi-field element; the blank field keeps its size as it was.
type slot struct {
	a uint64
	_ uint64
	c [2]uint32
}

func TestMakeZeroedWritableFree(t *testing.T) {
	s := Make[slot](1000)
	if len(s.S) != 1000 {
		t.Fatalf("len %d", len(s.S))
	}
	for i := range s.S {
		if s.S[i] != (slot{}) {
			t.Fatalf("slot %d not zero: %+v", i, s.S[i])
		}
		s.S[i] = slot{a: uint64(i), c: [2]uint32{1, 2}}
	}
	if s.S[999].a != 999 || s.S[0].c[1] != 2 {
		t.Fatal("writes lost")
	}
	s.Free()
	if s.S != nil {
		t.Fatal("S kept after Free")
	}
	s.Free() // a second Free does nothing
	var none *Slice[slot]
	none.Free()
}

func TestEmpty(t *testing.T) {
	s := Make[uint64](0)
	if len(s.S) != 0 {
		t.Fatal(len(s.S))
	}
	s.Free()
}

// TestOutsideHeap: a 64 MiB table does not count toward the Go heap (so
// it does not raise the collector's goal), where make would.
func TestOutsideHeap(t *testing.T) {
	if onHeap {
		t.Skip("no mmap on this system: the fallback is the heap")
	}
	const n = 8 << 20 // 64 MiB of uint64
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	s := Make[uint64](n)
	for i := 0; i < n; i += 512 {
		s.S[i] = 1 // touch every page
	}
	runtime.ReadMemStats(&after)
	if grew := int64(after.HeapAlloc) - int64(before.HeapAlloc); grew > 1<<20 {
		t.Errorf("heap grew by %d bytes", grew)
	}
	s.Free()
}

func TestPointersRefused(t *testing.T) {
	for name, f := range map[string]func(){
		"pointer":       func() { Make[*int](1) },
		"string":        func() { Make[string](1) },
		"struct slice":  func() { Make[struct{ a []byte }](1) },
		"array of maps": func() { Make[[2]map[int]int](1) },
		"interface":     func() { Make[any](1) },
	} {
		t.Run(name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Error("no panic")
				}
			}()
			f()
		})
	}
}
