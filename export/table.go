package export

import (
	"math/bits"

	"github.com/cespare/xxhash/v2"

	"github.com/llmrun/llmrun/internal/offheap"
)

// where is a line of a file: its offset and length (without '\n').
type where struct {
	off int64
	n   int
}

// lines maps the ids of a checkpoint file to their latest line: an
// open-addressing table of two 64-bit hashes of each id outside the Go heap
// (32 bytes a slot, kept at most 80% full), never the ids themselves. Two
// ids are taken for one only if both hashes collide (about 10^-15 among
// 10^7 ids).
type lines struct {
	mem *offheap.Slice[lineSlot]
	s   []lineSlot
	n   int
}

type lineSlot struct {
	h, h2 uint64 // the id's key; h 0: the slot is free
	off   int64
	size  uint32
	seen  uint32 // 1: the row was written
}

// key is an id's two hashes; h is never 0.
type key struct{ h, h2 uint64 }

func keyOf(id string) key {
	var d xxhash.Digest
	d.ResetWithSeed(0x9e3779b97f4a7c15)
	d.WriteString(id)
	k := key{h: xxhash.Sum64String(id), h2: d.Sum64()}
	if k.h == 0 {
		k.h = 1
	}
	return k
}

func (t *lines) home(h uint64) int {
	hi, _ := bits.Mul64(h, uint64(len(t.s)))
	return int(hi)
}

// slot returns the slot of k, or the free slot where it would go.
func (t *lines) slot(k key) *lineSlot {
	i := t.home(k.h)
	for t.s[i].h != 0 && (t.s[i].h != k.h || t.s[i].h2 != k.h2) {
		if i++; i == len(t.s) {
			i = 0
		}
	}
	return &t.s[i]
}

// put records w as the latest line of the id k.
func (t *lines) put(k key, w where) {
	if (t.n+1)*5 > len(t.s)*4 {
		t.grow()
	}
	e := t.slot(k)
	if e.h == 0 {
		t.n++
	}
	*e = lineSlot{h: k.h, h2: k.h2, off: w.off, size: uint32(w.n)}
}

func (t *lines) grow() {
	old, oldMem := t.s, t.mem
	t.mem = offheap.Make[lineSlot](max(2*len(old), 1024))
	t.s = t.mem.S
	for _, e := range old {
		if e.h != 0 {
			*t.slot(key{e.h, e.h2}) = e
		}
	}
	oldMem.Free()
}

// get returns the latest line of the id k.
func (t *lines) get(k key) (*lineSlot, bool) {
	if t.n == 0 {
		return nil, false
	}
	e := t.slot(k)
	return e, e.h != 0
}

func (t *lines) free() {
	t.mem.Free()
	*t = lines{}
}
