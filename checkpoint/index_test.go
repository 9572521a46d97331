package checkpoint

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// TestIndexAgainstMap runs seeded random adds, moves, deletes and lookups on
// the table and on a map side by side. Few distinct keys force many entries
// to share one (the lookup's confirm tells them apart, by offset here), and
// small tables make probe runs wrap around the end and exercise
// backward-shift deletion.
func TestIndexAgainstMap(t *testing.T) {
	for seed := range uint64(20) {
		rng := rand.New(rand.NewPCG(seed, 7))
		var x index
		if seed%2 == 0 {
			x.reserve(3)
		}
		ref := map[int64]idKey{} // offset → key: offsets are unique
		var offs []int64
		next := int64(0)
		at := func(k idKey, off int64) int {
			return x.lookup(k, func(i int) bool { return x.offAt(i) == off })
		}
		for op := range 3000 {
			switch r := rng.IntN(10); {
			case r < 5 || len(offs) == 0:
				k := idKey(rng.Uint64N(8) << 60)
				next += 1 + rng.Int64N(1<<34) // offsets up to 38 bits
				next &= maxOffset
				if _, dup := ref[next]; dup {
					continue
				}
				ref[next] = k
				offs = append(offs, next)
				x.add(k, next)
			case r < 6:
				// Point an entry at another line, as a superseding answer does.
				j := rng.IntN(len(offs))
				old := offs[j]
				k := ref[old]
				i := at(k, old)
				if i < 0 {
					t.Fatalf("seed %d op %d: offset %d missing before a move", seed, op, old)
				}
				next += 1 + rng.Int64N(1<<20)
				if _, dup := ref[next]; dup {
					continue
				}
				x.setOff(i, next)
				delete(ref, old)
				ref[next], offs[j] = k, next
			case r < 8:
				j := rng.IntN(len(offs))
				off := offs[j]
				i := at(ref[off], off)
				if i < 0 {
					t.Fatalf("seed %d op %d: offset %d missing before delete", seed, op, off)
				}
				x.del(i)
				delete(ref, off)
				offs[j] = offs[len(offs)-1]
				offs = offs[:len(offs)-1]
			default:
				off := rng.Int64N(next + 1)
				k := idKey(rng.Uint64N(8) << 60)
				want := ref[off] == k
				if _, ok := ref[off]; !ok {
					want = false
				}
				if got := at(k, off) >= 0; got != want {
					t.Fatalf("seed %d op %d: lookup(%x, %d) = %v, want %v", seed, op, k, off, got, want)
				}
			}
			if x.n != len(ref) {
				t.Fatalf("seed %d op %d: n = %d, want %d", seed, op, x.n, len(ref))
			}
		}
		for off, k := range ref {
			if at(k, off) < 0 {
				t.Fatalf("seed %d: entry %x at %d lost", seed, k, off)
			}
		}
	}
}

func TestIndexSeenFlags(t *testing.T) {
	var x index
	a, b := keyOfString("a"), keyOfString("b")
	x.add(a, 1)
	i := x.add(b, 2)
	x.markSeen(i)
	find := func(k idKey) int { return x.lookup(k, func(int) bool { return true }) }
	if x.unseen() != 1 || !x.seen(find(b)) || x.seen(find(a)) {
		t.Fatal("seen flags wrong")
	}
	x.setOff(find(b), 1<<37+3) // a move keeps the flag
	x.resize(1000)             // and so does growing
	if j := find(b); j < 0 || !x.seen(j) || x.offAt(j) != 1<<37+3 {
		t.Fatal("move or resize lost the entry's flag or offset")
	}
	if keyOfString("a") != keyOf([]byte("a")) || keyOfString("a") == keyOfString("b") {
		t.Fatal("keyOf and keyOfString disagree")
	}
}

// BenchmarkIndex measures the table's work per id at 1M ids (the lookup
// alone: the Store confirms a match by reading its line).
func BenchmarkIndex(b *testing.B) {
	const n = 1 << 20
	var x index
	x.reserve(n)
	keys := make([]idKey, n)
	for i := range keys {
		keys[i] = keyOfString(fmt.Sprintf("req-%08d", i))
		x.add(keys[i], int64(i)*600)
	}
	i := 0
	for b.Loop() {
		j := i & (n - 1)
		if x.lookup(keys[j], func(s int) bool { return x.offAt(s) == int64(j)*600 }) < 0 {
			b.Fatal("missing")
		}
		i++
	}
	b.ReportMetric(float64(x.bytes())/n, "bytes/id")
}
