package checkpoint

import (
	"math/bits"

	"github.com/cespare/xxhash/v2"

	"github.com/llmrun/llmrun/internal/offheap"
)

// idKey is an id's 64-bit hash. The index keeps its top 24 bits, never
// the id string, and a key is only a lead: every match is confirmed by
// reading the line it points to and comparing its custom_id with the id
// (see lineReader), so two ids that share a key are told apart, never
// merged, and no request counts as answered because of a hash collision.
type idKey uint64

func keyOf(id []byte) idKey       { return idKey(xxhash.Sum64(id)) }
func keyOfString(id string) idKey { return idKey(xxhash.Sum64String(id)) }

// A slot is one word: the key's top 24 bits, two flags and the offset of
// the id's latest line, which is all an entry needs: the line holds the id
// (to confirm a match) and the fingerprint (see lineReader.check). A probe
// compares the key bits alone: 2^-24 of them match by chance, each then
// ruled out by a read.
const (
	keyMask   = ^uint64(1<<40 - 1)
	flagUsed  = 1 << 39 // the slot holds an entry
	flagSeen  = 1 << 38 // Classify met the id in this run's input
	offMask   = 1<<38 - 1
	maxOffset = offMask // 256 GiB
)

// home is the slot where probing for k starts (Lemire's multiply-shift
// reduction of the key bits: any table size, no modulo; a resize finds it
// again from the slot word).
func (k idKey) home(size int) int {
	hi, _ := bits.Mul64(uint64(k)&keyMask, uint64(size))
	return int(hi)
}

func (k idKey) matches(w uint64) bool { return (w^uint64(k))&keyMask == 0 }

// index maps ids to the offset of their latest line in one file: an
// open-addressing table with linear probing, kept at most 85% full (the
// Store sizes it once from the file or the input when it can), so 9.4 bytes
// an id when sized, 19 right after a growth. The table lives outside the
// Go heap (it would otherwise double the collector's goal for nothing); a
// resize frees the old one at once.
type index struct {
	s     []uint64
	mem   *offheap.Slice[uint64] // owns s
	n     int                    // entries
	limit int                    // grow beyond this many entries
}

// maxLoad is the fill at which the table grows, in percent.
const maxLoad = 85

// reserve makes room for n entries without growing.
func (x *index) reserve(n int) {
	if n <= x.limit {
		return
	}
	x.resize(max(n*100/maxLoad+1, 16))
}

func (x *index) resize(size int) {
	old, oldMem := x.s, x.mem
	x.mem = offheap.Make[uint64](size)
	x.s, x.limit = x.mem.S, size*maxLoad/100
	for _, w := range old {
		if w != 0 {
			x.s[x.free(idKey(w))] = w
		}
	}
	oldMem.Free()
}

// free returns the first free slot from k's home on.
func (x *index) free(k idKey) int {
	i := k.home(len(x.s))
	for x.s[i] != 0 {
		if i++; i == len(x.s) {
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
	for i := k.home(len(x.s)); ; {
		w := x.s[i]
		if w == 0 {
			return -1
		}
		if k.matches(w) && confirm(i) {
			return i
		}
		if i++; i == len(x.s) {
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
		x.resize(max(len(x.s)*2, 16))
	}
	i := x.free(k)
	x.s[i] = uint64(k)&keyMask | flagUsed | uint64(off)
	x.n++
	return i
}

// setOff points the entry at slot i to the line at off.
func (x *index) setOff(i int, off int64) { x.s[i] = x.s[i]&^offMask | uint64(off) }

func (x *index) offAt(i int) int64 { return int64(x.s[i] & offMask) }

// del empties slot i, moving later entries of its probe run back so that no
// lookup stops early (backward-shift deletion: no tombstones).
func (x *index) del(i int) {
	x.n--
	j := i
	for {
		x.s[i] = 0
		for {
			if j++; j == len(x.s) {
				j = 0
			}
			if x.s[j] == 0 {
				return
			}
			// The entry at j may move to i only if its home is not in (i, j].
			h := idKey(x.s[j]).home(len(x.s))
			if (i <= j && (h <= i || h > j)) || (i > j && h <= i && h > j) {
				break
			}
		}
		x.s[i] = x.s[j]
		i = j
	}
}

// seen reports whether the entry at slot i was met in this run's input.
func (x *index) seen(i int) bool { return x.s[i]&flagSeen != 0 }

func (x *index) markSeen(i int) { x.s[i] |= flagSeen }

// markAllSeen marks every entry met.
func (x *index) markAllSeen() {
	for i, w := range x.s {
		if w != 0 {
			x.s[i] = w | flagSeen
		}
	}
}

// unseen counts entries not met in this run's input.
func (x *index) unseen() int {
	n := 0
	for _, w := range x.s {
		if w != 0 && w&flagSeen == 0 {
			n++
		}
	}
	return n
}

// bytes is the memory the table holds.
func (x *index) bytes() int { return len(x.s) * 8 }
