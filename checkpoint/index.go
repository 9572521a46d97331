package checkpoint

import (
	"math/bits"

	"github.com/cespare/xxhash/v2"

	"github.com/llmrun/llmrun/internal/offheap"
)

// idKey is the part of an id's 64-bit hash the index keeps: its top 54
// bits, the low 10 cleared. The index keeps keys, never the id strings,
// and a key is only a lead: every match is confirmed by reading the line
// it points to and comparing its custom_id with the id (see lineReader),
// so two ids that share a key are told apart, never merged, and no
// request counts as answered because of a hash collision.
type idKey uint64

// keyMask selects a slot word's key bits.
const keyMask = ^uint64(1<<10 - 1)

func keyOf(id []byte) idKey           { return idKey(xxhash.Sum64(id) & keyMask) }
func keyOfString(id string) idKey     { return idKey(xxhash.Sum64String(id) & keyMask) }
func (k idKey) home(size int) int     { hi, _ := bits.Mul64(uint64(k), uint64(size)); return int(hi) }
func (k idKey) matches(w uint64) bool { return w&keyMask == uint64(k) }

// A slot is 12 bytes in two arrays: a word of the key, two flags and the
// top 8 bits of the line's offset, probed alone; and the offset's low 32
// bits, read on a key match. The offset of the id's latest line is all an
// entry needs: the line holds the id (to confirm a match) and the
// fingerprint (see lineReader.check).
const (
	flagUsed  = 1 << 0 // the slot holds an entry
	flagSeen  = 1 << 1 // Classify met the id in this run's input
	offShift  = 2      // the offset's bits 32..39 sit at bits 2..9
	maxOffset = 1<<40 - 1
)

// index maps ids to the offset of their latest line in one file: an
// open-addressing table with linear probing, kept at most 80% full (the
// Store sizes it once from the file or the input when it can), so 15 bytes
// an id when sized, 30 right after a growth. The table lives outside the
// Go heap (it would otherwise double the collector's goal for nothing); a
// resize frees the old one at once.
type index struct {
	keys  []uint64
	offs  []uint32
	kmem  *offheap.Slice[uint64] // owns keys
	omem  *offheap.Slice[uint32] // owns offs
	n     int                    // entries
	limit int                    // grow beyond this many entries
}

// maxLoad is the fill at which the table grows, in percent.
const maxLoad = 80

// reserve makes room for n entries without growing.
func (x *index) reserve(n int) {
	if n <= x.limit {
		return
	}
	x.resize(max(n*100/maxLoad+1, 16))
}

func (x *index) resize(size int) {
	oldK, oldO, oldKM, oldOM := x.keys, x.offs, x.kmem, x.omem
	x.kmem, x.omem = offheap.Make[uint64](size), offheap.Make[uint32](size)
	x.keys, x.offs, x.limit = x.kmem.S, x.omem.S, size*maxLoad/100
	for j, w := range oldK {
		if w != 0 {
			i := x.free(idKey(w & keyMask))
			x.keys[i], x.offs[i] = w, oldO[j]
		}
	}
	oldKM.Free()
	oldOM.Free()
}

// free returns the first free slot from k's home on.
func (x *index) free(k idKey) int {
	i := k.home(len(x.keys))
	for x.keys[i] != 0 {
		if i++; i == len(x.keys) {
			i = 0
		}
	}
	return i
}

// lookup returns the first slot holding key k for which confirm says yes
// (it reads the slot's line and compares ids), or -1.
func (x *index) lookup(k idKey, confirm func(i int) bool) int {
	if x.n == 0 {
		return -1
	}
	for i := k.home(len(x.keys)); ; {
		w := x.keys[i]
		if w == 0 {
			return -1
		}
		if k.matches(w) && confirm(i) {
			return i
		}
		if i++; i == len(x.keys) {
			i = 0
		}
	}
}

// each calls fn for every slot holding key k until fn returns false.
func (x *index) each(k idKey, fn func(i int) bool) {
	x.lookup(k, func(i int) bool { return !fn(i) })
}

// add records a new entry (the caller has found no entry of its id) and
// returns its slot.
func (x *index) add(k idKey, off int64) int {
	if x.n >= x.limit {
		x.resize(max(len(x.keys)*2, 16))
	}
	i := x.free(k)
	x.keys[i] = uint64(k) | flagUsed
	x.setOff(i, off)
	x.n++
	return i
}

// setOff points the entry at slot i to the line at off.
func (x *index) setOff(i int, off int64) {
	x.keys[i] = x.keys[i]&^(0xff<<offShift) | uint64(off>>32&0xff)<<offShift
	x.offs[i] = uint32(off)
}

func (x *index) offAt(i int) int64 {
	return int64(x.keys[i]>>offShift&0xff)<<32 | int64(x.offs[i])
}

// del empties slot i, moving later entries of its probe run back so that no
// lookup stops early (backward-shift deletion: no tombstones).
func (x *index) del(i int) {
	x.n--
	j := i
	for {
		x.keys[i] = 0
		for {
			if j++; j == len(x.keys) {
				j = 0
			}
			if x.keys[j] == 0 {
				return
			}
			// The entry at j may move to i only if its home is not in (i, j].
			h := idKey(x.keys[j] & keyMask).home(len(x.keys))
			if (i <= j && (h <= i || h > j)) || (i > j && h <= i && h > j) {
				break
			}
		}
		x.keys[i], x.offs[i] = x.keys[j], x.offs[j]
		i = j
	}
}

// seen reports whether the entry at slot i was met in this run's input.
func (x *index) seen(i int) bool { return x.keys[i]&flagSeen != 0 }

func (x *index) markSeen(i int) { x.keys[i] |= flagSeen }

// unseen counts entries not met in this run's input.
func (x *index) unseen() int {
	n := 0
	for _, w := range x.keys {
		if w != 0 && w&flagSeen == 0 {
			n++
		}
	}
	return n
}

// markAll marks every entry seen.
func (x *index) markAll() {
	for i, w := range x.keys {
		if w != 0 {
			x.keys[i] = w | flagSeen
		}
	}
}

// bytes is the memory the table holds.
func (x *index) bytes() int { return len(x.keys) * 12 }
