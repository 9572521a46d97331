package checkpoint

import (
	"math/bits"

	"github.com/cespare/xxhash/v2"

	"github.com/llmrun/llmrun/internal/offheap"
)

// idKey identifies a custom_id by two independent hashes, 64 and 30 bits.
// The index keeps these, never the id strings: a 1M-line output costs about
// 30 megabytes, not the hundreds a map of strings took.
//
// Two different ids share a key only if both hashes collide; with 94 bits
// the chance that any two of 10^7 ids do is about 10^14 / 2^95 ≈ 3·10^-15
// per run, so the id is never re-read from the file to confirm a match.
type idKey struct{ a, b uint64 }

// seedB is the second hash's seed (any constant other than 0 would do).
const seedB = 0x9e3779b97f4a7c15

// A slot's bl word packs the second hash, two flags and a line number.
const (
	bMask    = uint64(1<<30-1) << 34 // the second hash's 30 bits
	flagUsed = 1 << 33               // the slot holds an entry
	flagSeen = 1 << 32               // Classify met the id in this run's input
	lineMask = 1<<32 - 1
)

func keyOf(id []byte) idKey {
	var d xxhash.Digest
	d.ResetWithSeed(seedB)
	d.Write(id)
	return idKey{a: xxhash.Sum64(id), b: d.Sum64() & bMask}
}

func keyOfString(id string) idKey {
	var d xxhash.Digest
	d.ResetWithSeed(seedB)
	d.WriteString(id)
	return idKey{a: xxhash.Sum64String(id), b: d.Sum64() & bMask}
}

// slot is one entry of the index, 24 bytes: a probe reads one cache line.
type slot struct {
	a  uint64 // idKey.a
	bl uint64 // idKey.b | flags | line number; 0: the slot is free
	fp uint64 // Fingerprint of the id's latest line
}

// index maps ids to the fingerprint of their latest line and that line's
// number: an open-addressing table with linear probing, kept between 40%
// and 80% full (reserve sizes it once from the file when it can), so about
// 30 to 60 bytes per id. The table lives outside the Go heap (it would
// otherwise double the collector's goal for nothing); a resize frees the
// old one at once.
type index struct {
	s     []slot
	mem   *offheap.Slice[slot] // owns s
	n     int                  // entries
	limit int                  // grow beyond this many entries
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
	old, oldMem := x.s, x.mem
	x.mem = offheap.Make[slot](size)
	x.s, x.limit = x.mem.S, size*maxLoad/100
	for _, e := range old {
		if e.bl != 0 {
			x.s[x.free(e.a)] = e
		}
	}
	oldMem.Free()
}

// home is the slot where probing for a starts (Lemire's multiply-shift
// reduction: any table size, no modulo).
func (x *index) home(a uint64) int {
	hi, _ := bits.Mul64(a, uint64(len(x.s)))
	return int(hi)
}

// free returns the first free slot from a's home on.
func (x *index) free(a uint64) int {
	i := x.home(a)
	for x.s[i].bl != 0 {
		if i++; i == len(x.s) {
			i = 0
		}
	}
	return i
}

// find returns the slot of k, or -1.
func (x *index) find(k idKey) int {
	if x.n == 0 {
		return -1
	}
	i := x.home(k.a)
	for {
		e := &x.s[i]
		if e.bl == 0 {
			return -1
		}
		if e.a == k.a && e.bl&bMask == k.b {
			return i
		}
		if i++; i == len(x.s) {
			i = 0
		}
	}
}

// put records fp and line for k, and returns its slot and whether k was
// already there (then with its flags kept).
func (x *index) put(k idKey, fp Fingerprint, line uint32) (at int, existed bool) {
	if i := x.find(k); i >= 0 {
		x.set(i, fp, line)
		return i, true
	}
	if x.n >= x.limit {
		x.resize(max(len(x.s)*2, 16))
	}
	i := x.free(k.a)
	x.s[i] = slot{a: k.a, bl: k.b | flagUsed | uint64(line), fp: uint64(fp)}
	x.n++
	return i, false
}

// set replaces the fingerprint and line of the entry at slot i.
func (x *index) set(i int, fp Fingerprint, line uint32) {
	e := &x.s[i]
	e.fp, e.bl = uint64(fp), e.bl&^lineMask|uint64(line)
}

func (x *index) fpAt(i int) Fingerprint { return Fingerprint(x.s[i].fp) }
func (x *index) lineAt(i int) uint32    { return uint32(x.s[i].bl & lineMask) }

// del empties slot i, moving later entries of its probe run back so that no
// lookup stops early (backward-shift deletion: no tombstones).
func (x *index) del(i int) {
	x.n--
	j := i
	for {
		x.s[i].bl = 0
		for {
			if j++; j == len(x.s) {
				j = 0
			}
			if x.s[j].bl == 0 {
				return
			}
			// The entry at j may move to i only if its home is not in (i, j].
			h := x.home(x.s[j].a)
			if (i <= j && (h <= i || h > j)) || (i > j && h <= i && h > j) {
				break
			}
		}
		x.s[i] = x.s[j]
		i = j
	}
}

// seen reports whether the entry at slot i was met in this run's input.
func (x *index) seen(i int) bool { return x.s[i].bl&flagSeen != 0 }

func (x *index) markSeen(i int) { x.s[i].bl |= flagSeen }

// unseen counts entries not met in this run's input.
func (x *index) unseen() int {
	n := 0
	for _, e := range x.s {
		if e.bl != 0 && e.bl&flagSeen == 0 {
			n++
		}
	}
	return n
}

// bytes is the memory the table holds.
func (x *index) bytes() int { return len(x.s) * 24 }
